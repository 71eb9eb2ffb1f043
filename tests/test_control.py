"""Structured control flow: cond/switch, while_loop, fori_loop, scan, map.

Each construct against the Python loop or branch it stands for, eagerly and under
jit, grad (to second order for cond and scan), jvp and vmap, plus the errors.
"""
import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
import fnad.numpy as fnp
from fnad.lax import control_flow as lax
from fnad.test_util import check_grads


def rng(seed=0):
    return np.random.default_rng(seed)


def f64(x):
    return jnp.asarray(np.asarray(x, np.float64))


# --------------------------------------------------------------------------- an RNN

STEPS, HIDDEN, INPUT = 20, 4, 3


def rnn_params(seed=0):
    r = rng(seed)
    return (jnp.asarray(0.5 * r.standard_normal((HIDDEN, HIDDEN))),
            jnp.asarray(0.5 * r.standard_normal((HIDDEN, INPUT))),
            jnp.asarray(r.standard_normal((STEPS, INPUT))),
            jnp.asarray(r.standard_normal(HIDDEN)))


def rnn_scan(W, U, xs, h0):
    def step(h, x):
        h = jnp.tanh(W @ h + U @ x)
        return h, h.sum()
    h, ys = lax.scan(step, h0, xs)
    return (h ** 2).sum() + (ys * jnp.arange(STEPS)).sum()


def rnn_unrolled(W, U, xs, h0):
    h, total = h0, 0.0
    for t in range(STEPS):
        h = jnp.tanh(W @ h + U @ xs[t])
        total = total + t * h.sum()
    return (h ** 2).sum() + total


def test_scan_rnn_values_and_grads_match_the_unrolled_loop():
    args = rnn_params()
    np.testing.assert_allclose(rnn_scan(*args), rnn_unrolled(*args), rtol=1e-12)
    g_scan = fnad.grad(rnn_scan, argnums=(0, 1, 2, 3))(*args)
    g_loop = fnad.grad(rnn_unrolled, argnums=(0, 1, 2, 3))(*args)
    for a, b in zip(g_scan, g_loop):
        assert a.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    g_jit = fnad.jit(fnad.grad(rnn_scan, argnums=(0, 1, 2, 3)))(*args)
    for a, b in zip(g_jit, g_loop):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_scan_rnn_check_grads_order_2():
    W, U, xs, h0 = rnn_params(1)
    check_grads(lambda W, U, h0: rnn_scan(W, U, xs, h0), (W, U, h0), order=2)


def test_scan_reverse_pytrees_and_none_ys():
    xs = {"a": jnp.asarray(np.arange(6.0)), "b": jnp.asarray(np.ones((6, 2)))}

    def step(carry, x):
        s, n = carry
        return (s * 0.5 + x["a"] + x["b"].sum(), n + 1), None
    (s, n), ys = lax.scan(step, (0.0, 0), xs, reverse=True)
    expected = 0.0
    for t in reversed(range(6)):
        expected = expected * 0.5 + t + 2.0
    assert ys is None and int(n) == 6
    np.testing.assert_allclose(s, expected)
    assert s.dtype == np.float64     # the Python float carry took the body's dtype
    c, ys = lax.scan(lambda c, _: (c, c * 2), 3, None, length=4)
    assert int(c) == 3 and ys.dtype == np.int32
    np.testing.assert_array_equal(ys, [6, 6, 6, 6])


def test_scan_grad_of_grad_and_jit_of_grad():
    x = f64(0.7)

    def f(x):
        c, ys = lax.scan(lambda c, t: (jnp.sin(c * t), c * t), x, jnp.asarray([1.0, 2.0, 3.0]))
        return c + ys.sum()

    def f_loop(x):
        c, total = x, 0.0
        for t in (1.0, 2.0, 3.0):
            c, total = jnp.sin(c * t), total + c * t
        return c + total
    for fun in (fnad.grad, lambda g: fnad.grad(fnad.grad(g)), lambda g: fnad.jit(fnad.grad(g))):
        np.testing.assert_allclose(fun(f)(x), fun(f_loop)(x), rtol=1e-6)
    check_grads(f, (x,), order=2)


def test_map():
    xs = jnp.asarray(rng().standard_normal((5, 3)))
    np.testing.assert_allclose(lax.map(lambda x: (x ** 2).sum(), xs), (np.asarray(xs) ** 2).sum(1))


# --------------------------------------------------------------------------- cond, switch

def test_cond_takes_one_branch_and_its_gradient():
    x = jnp.asarray(np.array([1.0, 2.0, 3.0]))
    f = lambda p, x: lax.cond(p, lambda v: (v ** 2).sum(), lambda v: jnp.sin(v).sum(), x)  # noqa
    np.testing.assert_allclose(f(True, x), 14.0)
    np.testing.assert_allclose(fnad.grad(f, argnums=1)(True, x), 2 * np.asarray(x))
    np.testing.assert_allclose(fnad.grad(f, argnums=1)(False, x), np.cos(x))
    np.testing.assert_allclose(fnad.jit(fnad.grad(f, argnums=1))(jnp.asarray(False), x),
                               np.cos(x))
    check_grads(lambda x: f(True, x), (x,), order=2)
    check_grads(lambda x: f(jnp.asarray(0.0), x), (x,), order=2)


def test_switch_clamps_and_differentiates_the_taken_branch():
    branches = [lambda x, w: x * w, lambda x, w: x ** 3, lambda x, w: jnp.exp(x) + w]
    x, w = f64(0.5), f64(2.0)
    for i, (value, dx) in {-3: (1.0, 2.0), 1: (0.125, 0.75), 7: (np.exp(0.5) + 2, np.exp(0.5))
                           }.items():
        np.testing.assert_allclose(lax.switch(i, branches, x, w), value)
        np.testing.assert_allclose(fnad.grad(lambda x: lax.switch(i, branches, x, w))(x), dx)
    jitted = fnad.jit(lambda i, x: lax.switch(i, branches, x, w))
    np.testing.assert_allclose(jitted(jnp.asarray(2), x), np.exp(0.5) + 2)


def test_cond_captures_traced_values_and_jvp():
    def f(x, y):
        return lax.cond(x.sum() > 0, lambda: x * y, lambda: x - y)
    x, y = f64([1.0, 2.0]), f64([3.0, 4.0])
    out, t = fnad.jvp(f, (x, y), (f64([1, 1]), f64([0, 0])))
    np.testing.assert_allclose(out, [3.0, 8.0])
    np.testing.assert_allclose(t, [3.0, 4.0])
    np.testing.assert_allclose(fnad.jit(f)(-x, y), -np.asarray(x) - y)


def test_vmap_of_cond_with_a_batched_predicate_equals_a_loop():
    xs = jnp.asarray(rng().standard_normal((6, 3)))

    def f(x):
        return lax.cond(x[0] > 0, lambda v: jnp.sin(v) * 2, lambda v: v ** 2 - 1, x)
    expected = np.stack([np.asarray(f(x)) for x in xs])
    np.testing.assert_allclose(fnad.vmap(f)(xs), expected)
    np.testing.assert_allclose(fnad.jit(fnad.vmap(f))(xs), expected)
    # per-example gradients through a batched cond
    g = fnad.vmap(fnad.grad(lambda x: f(x).sum()))(xs)
    expected = np.stack([np.asarray(fnad.grad(lambda x: f(x).sum())(x)) for x in xs])
    np.testing.assert_allclose(g, expected)


def test_vmap_of_switch_with_unbatched_index():
    xs = jnp.asarray(rng().standard_normal((4, 2)))
    f = lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x)  # noqa
    out = fnad.vmap(f, in_axes=(None, 0))(1, xs)
    np.testing.assert_allclose(out, np.cos(xs))
    out = fnad.vmap(f)(jnp.asarray([0, 1, 2, 5]), xs)
    np.testing.assert_allclose(out, np.stack([np.sin(xs[0]), np.cos(xs[1]), np.tanh(xs[2]),
                                              np.tanh(xs[3])]))


# --------------------------------------------------------------------------- while, fori

def collatz_steps(n):
    return lax.while_loop(lambda c: c[0] != 1,
                          lambda c: (jnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1),
                                     c[1] + 1), (n, 0))[1]


def test_while_loop_eager_and_jitted():
    n = jnp.asarray(27)
    assert int(collatz_steps(n)) == 111
    assert int(fnad.jit(collatz_steps)(n)) == 111


def test_fori_loop_eager_jitted_and_with_traced_bounds():
    x = jnp.asarray(rng().standard_normal(3))
    body = lambda i, acc: acc * 0.9 + i * x  # noqa
    expected = jnp.zeros(3, dtype=np.float64)
    for i in range(2, 9):
        expected = body(i, expected)
    f = lambda lo, hi: lax.fori_loop(lo, hi, body, jnp.zeros(3, dtype=np.float64))  # noqa
    np.testing.assert_allclose(f(2, 9), expected)
    np.testing.assert_allclose(fnad.jit(f, static_argnums=(0, 1))(2, 9), expected)
    np.testing.assert_allclose(fnad.jit(f)(2, 9), expected)           # traced bounds: while
    np.testing.assert_allclose(f(9, 2), np.zeros(3))


def test_fori_loop_with_static_bounds_is_reverse_differentiable():
    W = jnp.asarray(0.4 * rng(2).standard_normal((3, 3)))
    h0 = jnp.asarray(rng(3).standard_normal(3))

    def f(W, h):
        return lax.fori_loop(0, 6, lambda i, h: jnp.tanh(W @ h) + 0.1 * i, h).sum()

    def f_loop(W, h):
        for i in range(6):
            # the loop index is the default int (int32): 0.1 * i is float32, as in fori
            h = jnp.tanh(W @ h) + 0.1 * jnp.asarray(i, jnp.int32)
        return h.sum()
    for a, b in zip(fnad.grad(f, argnums=(0, 1))(W, h0), fnad.grad(f_loop, argnums=(0, 1))(W, h0)):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    check_grads(f, (W, h0), order=1)


def test_jvp_of_while_loop():
    def f(x):
        return lax.while_loop(lambda c: c[1] < 5, lambda c: (jnp.sin(c[0]) * 1.5, c[1] + 1),
                              (x, 0))[0]

    def f_loop(x):
        for _ in range(5):
            x = jnp.sin(x) * 1.5
        return x
    x, t = f64([0.3, -1.2]), f64([1.0, 0.5])
    out, t_out = fnad.jvp(f, (x,), (t,))
    out_ref, t_ref = fnad.jvp(f_loop, (x,), (t,))
    np.testing.assert_allclose(out, out_ref)
    np.testing.assert_allclose(t_out, t_ref)
    np.testing.assert_allclose(fnad.jacfwd(f)(x), fnad.jacfwd(f_loop)(x), rtol=1e-12)
    np.testing.assert_allclose(fnad.jit(lambda x, t: fnad.jvp(f, (x,), (t,))[1])(x, t), t_ref)


def test_vmap_of_scan_and_while_loop_equal_loops():
    xs = jnp.asarray(rng(4).standard_normal((5, 7, 2)))     # batch, time, features
    W = jnp.asarray(rng(5).standard_normal((2, 2)))

    def run(xs):
        return lax.scan(lambda h, x: (jnp.tanh(W @ h + x), h.sum()), jnp.zeros(2, np.float64), xs)
    h, ys = fnad.vmap(run)(xs)
    for b in range(5):
        hb, yb = run(xs[b])
        np.testing.assert_allclose(h[b], hb)
        np.testing.assert_allclose(ys[b], yb)

    def halve_until_small(x):        # a data-dependent trip count per example
        return lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[0] / 2, c[1] + 1), (x, 0))
    starts = f64([0.5, 3.0, 100.0, 17.0])
    v, n = fnad.vmap(halve_until_small)(starts)
    for i, s in enumerate(np.asarray(starts)):
        vi, ni = halve_until_small(jnp.asarray(s))
        assert int(n[i]) == int(ni)
        np.testing.assert_allclose(v[i], vi)
    v2, n2 = fnad.jit(fnad.vmap(halve_until_small))(starts)
    np.testing.assert_array_equal(n2, n)
    # a batched carry with an unbatched predicate, and per-example gradients of a scan
    f = lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, jnp.ones_like(x))  # noqa
    np.testing.assert_allclose(fnad.vmap(f)(starts), np.asarray(starts) ** 3)
    g = fnad.vmap(fnad.grad(lambda x: run(x)[1].sum()))(xs)
    for b in range(5):
        np.testing.assert_allclose(g[b], fnad.grad(lambda x: run(x)[1].sum())(xs[b]))


# --------------------------------------------------------------------------- errors

def test_mismatched_branch_outputs_are_named():
    x = jnp.asarray(np.ones(3))
    with pytest.raises(TypeError, match=r"float64\[3\].*float64\[2\]|true_fun returns"):
        lax.cond(True, lambda v: v, lambda v: v[:2], x)
    with pytest.raises(TypeError, match="structure"):
        lax.cond(True, lambda v: (v, v), lambda v: v, x)
    with pytest.raises(fnad.ShapeError, match="scalar"):
        lax.cond(jnp.asarray([True, False]), lambda v: v, lambda v: v, x)


def test_carry_type_change_is_named():
    x = jnp.asarray(np.ones(3))
    with pytest.raises(TypeError, match=r"float64\[3\].*float32\[3\]"):
        lax.scan(lambda c, _: (c.astype(np.float32), None), x, None, length=2)
    with pytest.raises(TypeError, match=r"int32\[\].*float64\[\]|carry leaf"):
        lax.while_loop(lambda c: c < 3, lambda c: c * 1.5, jnp.asarray(1, jnp.int32))
    with pytest.raises(TypeError, match="pair"):
        lax.scan(lambda c, x: c, x, x)
    with pytest.raises(fnad.ShapeError, match="lengths"):
        lax.scan(lambda c, x: (c, x), 0.0, (x, jnp.ones(4)))


def test_grad_of_while_loop_raises_and_points_to_scan():
    def f(x):
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 2, c[1] + 1), (x, 0))[0]
    with pytest.raises(fnad.GradientError, match="scan"):
        fnad.grad(f)(f64(1.0))
    with pytest.raises(fnad.GradientError, match="fori_loop"):
        fnad.grad(fnad.jit(f))(f64(1.0))


@pytest.mark.parametrize("own_matmul", [False, True])
def test_scan_runs_as_one_compiled_loop(monkeypatch, own_matmul):
    """A scan whose body the loop compiler supports runs as one Numba loop (here
    compiled synchronously), forwards and backwards, with the unrolled loop's values;
    with numpy's BLAS where it is found, and with fnad's own matmul loops."""
    import weakref
    from fnad.backends.cpu import loops
    from fnad.kernels.cpu import loop_linalg
    if own_matmul:
        monkeypatch.setattr(loop_linalg, "BLAS_DTYPES", frozenset())
    monkeypatch.setattr(fnad.config, "background_compile", False)
    monkeypatch.setattr(loops, "_loops", weakref.WeakKeyDictionary())   # this test's loops only
    rng = np.random.default_rng(5)
    W = fnp.asarray(rng.standard_normal((6, 6)) * 0.4)
    U = fnp.asarray(rng.standard_normal((6, 3)))
    xs = fnp.asarray(rng.standard_normal((9, 3)))

    def rnn(params, reverse):
        W, U = params

        def step(carry, x):
            h, total = carry
            h = fnp.tanh(W @ h + U @ x)
            return (h, total + fnp.sum(h)), fnp.sum(h * h)
        (h, total), ys = fnad.lax.scan(step, (fnp.zeros(6, np.float64), np.float64(0.0)), xs,
                                       reverse=reverse)
        return fnp.sum(h) + total + fnp.sum(ys)

    def unrolled(params, reverse):
        W, U = params
        h, total, ys = fnp.zeros(6), 0.0, 0.0
        for x in (list(xs)[::-1] if reverse else list(xs)):
            h = fnp.tanh(W @ h + U @ x)
            total = total + fnp.sum(h)
            ys = ys + fnp.sum(h * h)
        return fnp.sum(h) + total + ys

    step = fnad.jit(fnad.value_and_grad(rnn), static_argnums=1)   # alive to the end, so its
    for reverse in (False, True):                                   # loops stay cached
        value, grads = step((W, U), reverse)
        ref_value, ref_grads = fnad.value_and_grad(unrolled)((W, U), reverse)
        np.testing.assert_allclose(float(value), float(ref_value), rtol=1e-12)
        for g, r in zip(grads, ref_grads):
            np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-10, atol=1e-12)
    compiled = [entry.ready for table in loops._loops.values() for entry in table.values()]
    assert compiled and all(compiled), compiled
    del step


def test_while_and_switch_run_as_compiled_functions(monkeypatch):
    """while_loop and switch bodies compile into one Numba function each (loop or
    branch included) and agree with the Python-level evaluation."""
    import weakref
    from fnad.backends.cpu import loops
    monkeypatch.setattr(fnad.config, "background_compile", False)
    monkeypatch.setattr(loops, "_loops", weakref.WeakKeyDictionary())
    x = fnp.asarray(np.linspace(0.1, 0.9, 3))

    def body(c):
        return c[0] + 1, c[1] * 1.5 + fnp.sin(c[1])

    # f stays referenced to the end: a loop is cached only while its body Program lives,
    # and a dropped jitted function frees its programs.
    f = fnad.jit(lambda x: fnad.lax.while_loop(lambda c: c[0] < 7, body, (0, x)))
    got = f(x)
    c = (0, np.asarray(x))
    while c[0] < 7:
        c = (c[0] + 1, c[1] * 1.5 + np.sin(c[1]))
    assert int(got[0]) == 7
    np.testing.assert_allclose(np.asarray(got[1]), c[1], rtol=1e-12)
    branches = [lambda y: y * 2, lambda y: fnp.sin(y), lambda y: y @ fnp.ones((3, 3))]
    g = fnad.jit(lambda i, y: fnad.lax.switch(i, branches, y))
    for i, expected in ((0, 2 * np.asarray(x)), (1, np.sin(np.asarray(x))),
                        (7, np.full(3, np.sum(np.asarray(x)))), (-2, 2 * np.asarray(x))):
        np.testing.assert_allclose(np.asarray(g(i, x)), expected, rtol=1e-12)
    compiled = [entry.ready for table in loops._loops.values() for entry in table.values()]
    assert len(compiled) == 2 and all(compiled), compiled
    del f


def test_reverse_mode_skips_a_while_loop_fed_only_a_stop_gradient_value():
    # stop_gradient's (and floor's) outputs carry no derivative, so reverse mode does
    # not record them and the while_loop after them needs no rule: d/da (loop + a floor a)
    def f(a):
        x = fnad.lax.while_loop(lambda c: c < 10., lambda c: c * 2., fnad.lax.stop_gradient(a))
        return x + a * fnad.numpy.floor(a)
    for grad in (fnad.grad(f), fnad.jit(fnad.grad(f)), fnad.grad(fnad.jit(f))):
        assert float(grad(1.5)) == 1.0
    h = fnad.hessian(lambda x: fnad.numpy.sum(fnad.lax.stop_gradient(x) * x ** 2))(
        np.array([1., 2.]))
    np.testing.assert_array_equal(np.asarray(h), np.diag([2., 4.]))
