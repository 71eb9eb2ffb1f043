"""jit: staging, composition with the other transforms, fusion, caching, errors."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.backends.cpu import lowering

from test_primitives import CASES, setup, _split, TABLE


def f64(x):
    return fnp.asarray(np.asarray(x, dtype=np.float64))


@pytest.mark.parametrize("name,i", CASES)
def test_jit_matches_eager_for_every_primitive(name, i):
    prim, entry, case, args = setup(name, i)
    f = lambda *xs: prim.bind(*xs, **case.params)  # noqa: E731
    xs = [fnp.asarray(a) for a in args]
    out = fnad.jit(f)(*xs)
    expected = prim.bind(*xs, **case.params)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=1e-12, atol=1e-12)


GRAD_CASES = [c for c in CASES if (TABLE[c.values[0]].cases[c.values[1]].grad
                                   or TABLE[c.values[0]].grad) == "check"]


@pytest.mark.parametrize("name,i", GRAD_CASES[::3])
def test_jit_of_grad_and_grad_of_jit_match_eager(name, i):
    prim, entry, case, args = setup(name, i)
    argnums, fill = _split(entry, args)
    diff = [fnp.asarray(args[k]) for k in argnums]

    def loss(*xs):
        return fnp.sum(fnp.sin(prim.bind(*fill(*xs), **case.params)))

    argnums_all = tuple(range(len(diff)))
    eager = fnad.grad(loss, argnums=argnums_all)(*diff)
    for g in (fnad.jit(fnad.grad(loss, argnums=argnums_all))(*diff),
              fnad.grad(fnad.jit(loss), argnums=argnums_all)(*diff)):
        for a, b in zip(g, eager):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def mlp_loss(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return fnp.mean((h @ params["w2"] - y) ** 2)


def mlp_setup(batch=8, dtype=np.float64):
    rng = np.random.default_rng(0)
    params = {"w1": fnp.asarray(rng.standard_normal((3, 16)).astype(dtype)),
              "b1": fnp.zeros(16, dtype=dtype),
              "w2": fnp.asarray(rng.standard_normal((16, 1)).astype(dtype))}
    x = fnp.asarray(rng.standard_normal((batch, 3)).astype(dtype))
    y = fnp.asarray(rng.standard_normal((batch, 1)).astype(dtype))
    return params, x, y


def test_jitted_update_step_and_nested_compositions():
    params, x, y = mlp_setup()

    @fnad.jit
    def update(params, x, y, lr):
        loss, g = fnad.value_and_grad(mlp_loss)(params, x, y)
        return fnad.tree_util.tree_map(lambda p, d: p - lr * d, params, g), loss

    new, loss = update(params, x, y, 0.1)
    loss_ref, g_ref = fnad.value_and_grad(mlp_loss)(params, x, y)
    assert float(loss) == pytest.approx(float(loss_ref), rel=1e-12)
    for k in params:
        expected = np.asarray(params[k]) - np.float32(0.1) * np.asarray(g_ref[k])
        np.testing.assert_allclose(np.asarray(new[k]), expected, rtol=1e-6)
    # jit inside jit, jvp of jit, hessian through jit
    inner = fnad.jit(lambda w: fnp.sum(fnp.sin(w) ** 2))
    outer = fnad.jit(lambda w: inner(w) * 2 + inner(2 * w))
    w = f64([0.1, 0.7])
    expected = lambda w: 2 * np.sum(np.sin(w) ** 2) + np.sum(np.sin(2 * w) ** 2)  # noqa
    assert float(outer(w)) == pytest.approx(expected(np.asarray(w)))
    _, t = fnad.jvp(outer, (w,), (f64([1.0, 0.0]),))
    assert float(t) == pytest.approx(2 * np.sin(0.2) + 2 * np.sin(0.4), rel=1e-10)
    H = fnad.hessian(outer)(w)
    H_ref = fnad.hessian(lambda w: fnp.sum(fnp.sin(w) ** 2) * 2 + fnp.sum(fnp.sin(2 * w) ** 2))(w)
    np.testing.assert_allclose(np.asarray(H), np.asarray(H_ref), rtol=1e-10)


def test_custom_vjp_survives_jit_in_both_orders():
    @fnad.custom_vjp
    def reverse(x):
        return x
    reverse.defvjp(lambda x: (x, None), lambda _, g: (-g,))
    f = lambda x: fnp.sum(reverse(x) * 3.0)  # noqa: E731
    for g in (fnad.grad(fnad.jit(f)), fnad.jit(fnad.grad(f))):
        np.testing.assert_array_equal(np.asarray(g(fnp.ones(3))), [-3.0, -3.0, -3.0])


def test_make_jaxpr_prints_the_program():
    text = str(fnad.make_jaxpr(lambda x: fnp.sum(fnp.sin(x) * 2.0))(fnp.ones(3)))
    assert "sin" in text and "mul" in text and "reduce_sum[axes=(0,)]" in text
    assert "float32[3]" in text


def test_first_calls_run_unfused_while_the_kernel_compiles(monkeypatch, tmp_path):
    """With background compilation the first call does not wait for Numba: the group
    runs through numpy, then the compiled kernel takes over; both give the same result."""
    monkeypatch.setenv("FNAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fnad.config, "background_compile", True)
    x = fnp.asarray(np.linspace(-2, 2, 50))
    f = fnad.jit(lambda x: fnp.sum(fnp.tanh(x) * 1.7 + x ** 3 - 0.5, axis=0))
    first = f(x)
    lowering.wait_for_compiles()
    second = f(x)
    expected = np.sum(np.tanh(np.asarray(x)) * 1.7 + np.asarray(x) ** 3 - 0.5)
    np.testing.assert_allclose(np.asarray(first), expected, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(second), expected, rtol=1e-12)


def test_fusion_of_an_elementwise_chain_with_a_reduction():
    def f(x):
        y = x
        for _ in range(5):
            y = fnp.tanh(y) * 1.5 + 0.1
        return fnp.sum(y)           # 10 elementwise ops, then a sum
    x = fnp.asarray(np.linspace(-1, 1, 1000).astype(np.float32))
    lowered = fnad.jit(f).lower(x)
    exe = lowered.compile()
    assert len(exe.kernel_sources) == 1
    assert "np.empty((1000,)" not in exe.driver_source    # no intermediate the input's size
    assert "np.empty" not in exe.driver_source.replace("np.empty((),", "")
    assert float(fnad.jit(f)(x)) == pytest.approx(float(f(x)), rel=1e-5)


def test_retrace_on_new_shapes_and_dtypes_not_on_new_values():
    calls = []

    def f(x):
        calls.append(1)             # a Python side effect: runs only while tracing
        return fnp.sum(fnp.exp(x))
    jf = fnad.jit(f)
    jf(fnp.ones(3))
    jf(fnp.zeros(3))
    assert jf.trace_count == 1 and len(calls) == 1
    jf(fnp.ones(4))
    assert jf.trace_count == 2
    jf(fnp.ones(4, dtype=np.float64))
    assert jf.trace_count == 3


def test_new_batch_size_reuses_compiled_kernels(monkeypatch):
    monkeypatch.setattr(fnad.config, "background_compile", False)
    f = fnad.jit(lambda x: fnp.sum(fnp.tanh(x) * fnp.exp(-x), axis=1))
    f(fnp.ones((4, 7)))
    compiled = lowering.stats["kernels_compiled"] + lowering.stats["kernels_loaded"]
    out = f(fnp.ones((9, 7)))
    assert out.shape == (9,)
    assert lowering.stats["kernels_compiled"] + lowering.stats["kernels_loaded"] == compiled


def test_second_process_reuses_compiled_code(tmp_path):
    script = textwrap.dedent("""
        import fnad, fnad.numpy as fnp
        from fnad.backends.cpu import lowering
        fnad.config.background_compile = False
        f = fnad.jit(lambda x: fnp.sum(fnp.sin(x) * fnp.cosh(x) + 0.25))
        print(float(f(fnp.ones(5))))
        print(lowering.stats["kernels_compiled"], lowering.stats["kernels_loaded"])
    """)
    env = dict(os.environ, FNAD_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split("\n") for _ in range(2)]
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == "1 0"      # compiled in the first process
    assert runs[1][1] == "0 1"      # loaded from disk in the second


def test_concretization_error():
    @fnad.jit
    def f(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(fnad.ConcretizationError, match="lax.cond"):
        f(fnp.ones(()))
    with pytest.raises(TypeError, match="static_argnums"):
        fnad.jit(lambda x: float(x))(fnp.ones(()))


def test_static_args():
    f = fnad.jit(lambda x, n: x * n if n > 1 else x, static_argnums=1)
    assert float(f(fnp.asarray(2.0), 3)) == 6.0
    assert float(f(fnp.asarray(2.0), 1)) == 2.0
    with pytest.raises(TypeError, match="hashable"):
        f(fnp.asarray(2.0), [1, 2])
    g = fnad.jit(lambda x, mode="a": x + (1 if mode == "a" else 2), static_argnames="mode")
    assert float(g(fnp.asarray(1.0), mode="b")) == 3.0


def test_leaked_tracer_raises_when_used():
    leaked = []

    @fnad.jit
    def f(x):
        leaked.append(x)
        return x * 2
    f(fnp.ones(2))
    with pytest.raises(fnad.EscapedTracerError, match="jit"):
        fnp.sin(leaked[0])


def test_disable_jit():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1
    jf = fnad.jit(f)
    fnad.config.update("jax_disable_jit", True)
    try:
        jf(fnp.ones(1))
        jf(fnp.ones(1))
    finally:
        fnad.config.disable_jit = False
    assert len(calls) == 2 and jf.trace_count == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_blocked_execution_of_large_math_groups(monkeypatch, threads):
    """Large groups heavy in math-library calls run block by block through numpy's
    ufuncs and small Numba loops; force that path on small inputs and compare."""
    from fnad.backends.cpu import chunked
    from fnad.kernels import threads as kernel_threads
    monkeypatch.setattr(lowering, "PARALLEL_MIN_ELEMENTS", 1)
    monkeypatch.setattr(lowering, "BLOCKED_MIN_ELEMENTS", 1)
    monkeypatch.setattr(chunked, "BLOCK_ELEMENTS", 16)
    monkeypatch.setattr(kernel_threads, "thread_count", lambda: threads)
    rng = np.random.default_rng(0)
    x = fnp.asarray(rng.standard_normal((37, 5)))
    b = fnp.asarray(rng.standard_normal(5))

    def f(x, b):
        y = fnp.tanh(x * b) * fnp.exp(-x ** 2) + fnp.sin(x) / (1 + x ** 2)
        return fnp.sum(y), fnp.max(y, axis=0), fnp.sum(fnp.cos(y), axis=1), y * 2

    fj = fnad.jit(f)
    assert "work(start, stop)" in fj.lower(x, b).as_text()
    for got, want in zip(fj(x, b), f(x, b)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
    loss = lambda x, b: f(x, b)[0] + fnp.sum(f(x, b)[2])  # noqa: E731
    g = fnad.jit(fnad.grad(loss, argnums=(0, 1)))(x, b)
    g_ref = fnad.grad(loss, argnums=(0, 1))(x, b)
    for got, want in zip(g, g_ref):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def _spd(n):
    a = np.random.default_rng(3).standard_normal((n, n))
    return fnp.asarray(a @ a.T + n * np.eye(n))


COMPOSITES = {
    "softmax": (lambda x: fnad.nn.softmax(x, axis=-1), lambda: (f64(np.arange(12.).reshape(3, 4)),)),
    "log_softmax": (lambda x: fnad.nn.log_softmax(x, axis=0), lambda: (f64(np.arange(12.).reshape(3, 4)),)),
    "logsumexp": (lambda x: fnad.scipy.special.logsumexp(x, axis=1),
                  lambda: (f64(np.linspace(-3, 3, 12).reshape(3, 4)),)),
    "var_std": (lambda x: fnp.var(x, axis=0) + fnp.std(x), lambda: (f64(np.linspace(0, 1, 12).reshape(4, 3)),)),
    "einsum": (lambda a, b: fnp.einsum("ij,jk->ik", a, b), lambda: (f64(np.ones((2, 3))), f64(np.arange(12.).reshape(3, 4)))),
    "indexing": (lambda x: x[1:, ::2] * x[fnp.asarray([0, 2, 2])][:, :2].sum(), lambda: (f64(np.arange(20.).reshape(4, 5)),)),
    "at_add": (lambda x: x.at[fnp.asarray([0, 0, 3])].add(1.5), lambda: (f64(np.zeros(5)),)),
    "sort": (lambda x: fnp.sort(x) * fnp.argsort(x), lambda: (f64([3.0, 1.0, 2.0, -1.0]),)),
    "solve_det": (lambda a, b: fnp.linalg.solve(a, b) * fnp.linalg.det(a), lambda: (_spd(3), f64([1.0, 2.0, 3.0]))),
    "cholesky_inv": (lambda a: fnp.linalg.cholesky(a) + fnp.linalg.inv(a), lambda: (_spd(3),)),
    "cumsum_prod": (lambda x: fnp.cumsum(x, axis=1) + fnp.cumprod(x, axis=0), lambda: (f64(np.linspace(0.5, 1.5, 6).reshape(2, 3)),)),
    "where_clip": (lambda x: fnp.where(x > 0.5, fnp.clip(x, 0.6, 0.8), -x), lambda: (f64(np.linspace(0, 1, 7)),)),
    "concat_pad": (lambda x: fnp.pad(fnp.concatenate([x, x[::-1]]), (1, 2)), lambda: (f64([1.0, 2.0]),)),
    "gelu_softplus": (lambda x: fnad.nn.gelu(x) + fnad.nn.softplus(x) + fnad.nn.gelu(x, approximate=False),
                      lambda: (f64(np.linspace(-3, 3, 7)),)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_jit_of_composites_and_their_gradients(name):
    f, make = COMPOSITES[name]
    args = make()
    out, expected = fnad.jit(f)(*args), f(*args)
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=1e-12, atol=1e-12)
    loss = lambda *a: fnp.sum(fnp.sin(f(*a)))  # noqa: E731
    g, g_ref = fnad.jit(fnad.grad(loss))(*args), fnad.grad(loss)(*args)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-10, atol=1e-12)
