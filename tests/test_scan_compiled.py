"""Loops at compiled speed (issue 14): scan / fori_loop / while_loop bodies that index
(dynamic slices, gathers, scatters) or multiply matrices compile into one Numba loop
with the same numbers as a numpy loop and as the Python loop over the compiled body;
scan's reverse mode runs two loops (residuals stacked by the forward one) and its
gradients match float64 finite differences and JAX."""

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import lax
from fnad.backends.cpu import control, loops
from fnad.kernels.cpu import loop_linalg


def _states(table):
    return [entry.ready for entries in table.values() for entry in entries.values()]


def assert_all_compiled(table):
    """Fails if any loop fell back to the Python loop, saying why."""
    entries = [entry for entries in table.values() for entry in entries.values()]
    assert entries, "no loop ran"
    assert all(e.ready for e in entries), [e.reason for e in entries]


def _python_loops(monkeypatch):
    """From here on, every loop runs as a Python loop over its compiled body."""
    monkeypatch.setattr(control, "compiled_loop", lambda *args: None)


# --------------------------------------------------------------------------- indexing

TABLE = np.random.default_rng(0).normal(size=(7, 3))
IDS = np.array([3, -1, 9, 0, 2, -8], np.int32)     # negative and out-of-range ones


def _indexing_run(table, ids, n):
    def body(i, carry):
        acc, buf = carry
        window = lax.dynamic_slice(table, (i - 2, 0), (2, 3))      # shifted inside
        row = table[ids[i % 6]]                                     # a clip gather
        filled = fnp.take(table, ids, axis=0, mode="fill", fill_value=0.0)
        buf = lax.dynamic_update_slice(buf, window[:1] * 2.0, (i - 1, 0))
        j = ids[(i + 1) % 6] % 5
        buf = buf.at[j].add(row).at[(j + 2) % 5].set(row * 0.5)
        buf = buf.at[(j + 1) % 5].max(row).at[j].mul(1.01)
        return acc + window.sum() + row.sum() + filled.sum() * i, buf
    return lax.fori_loop(0, n, body, (fnp.zeros((), np.float64), fnp.zeros((5, 3), np.float64)))


def _indexing_numpy(table, ids, n):
    def wrap(i, m):
        return i + m if i < 0 else i
    acc, buf = 0.0, np.zeros((5, 3))
    kept = [wrap(int(k), 7) for k in ids if -7 <= k < 7]
    for i in range(n):
        s = min(max(wrap(i - 2, 7), 0), 5)
        window = table[s:s + 2]
        row = table[min(max(wrap(int(ids[i % 6]), 7), 0), 6)]
        r = min(max(wrap(i - 1, 5), 0), 4)
        buf = buf.copy()
        buf[r] = window[0] * 2.0
        j = int(ids[(i + 1) % 6]) % 5
        buf[j] += row
        buf[(j + 2) % 5] = row * 0.5
        buf[(j + 1) % 5] = np.maximum(buf[(j + 1) % 5], row)
        buf[j] *= 1.01
        acc = acc + window.sum() + row.sum() + table[kept].sum() * i
    return acc, buf


def test_indexing_in_a_fori_loop_compiles_and_matches_numpy(compiled_loops, monkeypatch):
    """dynamic_slice, dynamic_update_slice, clip and fill gathers, and the scatters
    (add, set, max, mul) in a fori_loop body: one compiled loop, with the numbers of a
    numpy loop and of the Python loop over the compiled body."""
    step = fnad.jit(_indexing_run, static_argnums=2)
    table, ids = fnp.asarray(TABLE), fnp.asarray(IDS)
    acc, buf = step(table, ids, 9)
    assert_all_compiled(compiled_loops)
    ref_acc, ref_buf = _indexing_numpy(TABLE, IDS, 9)
    np.testing.assert_allclose(float(acc), ref_acc, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(buf), ref_buf, rtol=1e-15)
    _python_loops(monkeypatch)
    py_acc, py_buf = fnad.jit(_indexing_run, static_argnums=2)(table, ids, 9)
    np.testing.assert_allclose(float(py_acc), float(acc), rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(py_buf), np.asarray(buf))


def test_a_while_loop_that_indexes_compiles(compiled_loops, monkeypatch):
    """A while_loop walking a table with dynamic_slice and a gather: one compiled
    function, the numbers of a numpy loop and of the Python loop."""
    def walk(table, ids):
        def cond(state):
            return state[0] < 11

        def body(state):
            i, acc = state
            piece = lax.dynamic_slice(table, (ids[i % 6], 1), (1, 2))
            return i + 1, acc * 0.5 + piece.sum() + table[ids[(i + 3) % 6], 0]
        return lax.while_loop(cond, body, (np.int32(0), fnp.zeros((), np.float64)))[1]

    table, ids = fnp.asarray(TABLE), fnp.asarray(IDS)
    got = float(fnad.jit(walk)(table, ids))
    assert_all_compiled(compiled_loops)
    acc = 0.0
    for i in range(11):
        k = int(IDS[i % 6])
        s = min(max(k + 7 if k < 0 else k, 0), 6)
        r = int(IDS[(i + 3) % 6])
        r = min(max(r + 7 if r < 0 else r, 0), 6)
        acc = acc * 0.5 + TABLE[s, 1:3].sum() + TABLE[r, 0]
    np.testing.assert_allclose(got, acc, rtol=1e-14)
    _python_loops(monkeypatch)
    assert float(fnad.jit(walk)(table, ids)) == got


# --------------------------------------------------------------------------- reverse mode

def _rnn_loss(params, xs):
    wx, wh, b = params

    def step(h, x):
        h = fnp.tanh(x @ wx + h @ wh + b)
        return h, fnp.sum(h * h)
    h, norms = lax.scan(step, fnp.zeros((2, 4), xs.dtype), xs)
    return fnp.mean(h) + fnp.sum(norms)


def _rnn_data(dtype=np.float64):
    rng = np.random.default_rng(3)
    params = (rng.normal(size=(3, 4)) * 0.5, rng.normal(size=(4, 4)) * 0.5,
              rng.normal(size=4) * 0.1)
    xs = rng.normal(size=(6, 2, 3))
    return tuple(fnp.asarray(p.astype(dtype)) for p in params), fnp.asarray(xs.astype(dtype))


def _central_differences(f, params, eps=1e-6):
    grads = []
    for i, p in enumerate(params):
        p = np.asarray(p)
        g = np.zeros_like(p)
        for j in range(p.size):
            for sign in (1, -1):
                q = p.copy()
                q.flat[j] += sign * eps
                moved = list(params)
                moved[i] = fnp.asarray(q)
                g.flat[j] += sign * float(f(tuple(moved))) / (2 * eps)
        grads.append(g)
    return grads


def _scans(program):
    return [e for e in program.eqns if e.prim.name == "scan"]


def test_scan_gradient_runs_two_loops_and_matches_finite_differences(compiled_loops):
    """grad through scan is two loops, the forward one stacking residuals (the
    tanh outputs and the carry), and its compiled loops give the central-difference
    gradient in float64; no cotangent is computed for the undifferentiated xs."""
    params, xs = _rnn_data()
    closed = fnad.make_jaxpr(fnad.grad(_rnn_loss))(params, xs)
    program = closed.program if hasattr(closed, "program") else closed
    forward, backward = _scans(program)
    assert not forward.params["reverse"] and backward.params["reverse"]
    assert len(forward.outputs) > 2            # carry, norms, then stacked residuals
    assert len(backward.outputs) == 1 + 3      # the carry's cotangent, the 3 params'
    grads = fnad.jit(fnad.grad(_rnn_loss))(params, xs)
    assert_all_compiled(compiled_loops)
    want = _central_differences(lambda p: _rnn_loss(p, xs), params)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-7, atol=1e-9)
    eager = fnad.grad(_rnn_loss)(params, xs)
    for g, e in zip(grads, eager):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-13)


def test_scan_gradient_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    params, xs = _rnn_data(np.float32)

    def jax_loss(params, xs):
        wx, wh, b = params

        def step(h, x):
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, jnp.sum(h * h)
        h, norms = jax.lax.scan(step, jnp.zeros((2, 4), xs.dtype), xs)
        return jnp.mean(h) + jnp.sum(norms)
    want = jax.grad(jax_loss)(tuple(np.asarray(p) for p in params), np.asarray(xs))
    got = fnad.jit(fnad.grad(_rnn_loss))(params, xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


def test_higher_order_and_composed_derivatives_through_the_two_loops():
    """hessian, jvp of grad, vmap of grad and reverse=True through the two-pass rule,
    against finite differences of the first derivative and a loop of grads."""
    rng = np.random.default_rng(4)
    w = fnp.asarray(rng.normal(size=3))
    xs = fnp.asarray(rng.normal(size=(5, 3)))

    def f(w, xs, reverse=False):
        def step(carry, x):
            h, n = carry
            h = fnp.tanh(w * h + x)
            return (h, n + 1), h * h                # an integer carry rides along
        (h, n), ys = lax.scan(step, (fnp.zeros(3, np.float64), np.int32(0)), xs,
                              reverse=reverse)
        return fnp.sum(h) * n + fnp.sum(ys)

    for reverse in (False, True):
        g = lambda v: np.asarray(fnad.grad(f)(fnp.asarray(v), xs, reverse))  # noqa: E731
        hess = np.asarray(fnad.hessian(f)(w, xs, reverse))
        eps, base = 1e-6, np.asarray(w)
        cols = [(g(base + eps * e) - g(base - eps * e)) / (2 * eps) for e in np.eye(3)]
        np.testing.assert_allclose(hess, np.stack(cols, 1), rtol=1e-6, atol=1e-8)
        _, hv = fnad.jvp(lambda v: fnad.grad(f)(v, xs, reverse), (w,), (fnp.ones(3, np.float64),))
        np.testing.assert_allclose(np.asarray(hv), hess.sum(1), rtol=1e-10)
    batch = fnp.stack([xs, xs * 2])
    per_example = fnad.vmap(fnad.grad(f), in_axes=(None, 0))(w, batch)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(per_example[k]),
                                   np.asarray(fnad.grad(f)(w, batch[k])), rtol=1e-12)


def test_a_checkpointed_body_keeps_only_its_inputs_per_step():
    """checkpoint on the body trades the stacked residuals back for recomputation:
    the forward scan then stacks only what the body is given (its carry), and the
    gradient is unchanged. (The weights ride in the carry: a checkpointed function
    closing over values being differentiated is a separate matter.)"""
    params, xs = _rnn_data()

    def loss(params, xs, remat):
        def step(carry, x):
            h, (wx, wh, b) = carry
            h = fnp.tanh(fnp.tanh(x @ wx + h @ wh + b) * 1.5)
            return (h, (wx, wh, b)), fnp.sum(h * h)
        step = fnad.checkpoint(step) if remat else step
        (h, _), norms = lax.scan(step, (fnp.zeros((2, 4), xs.dtype), params), xs)
        return fnp.mean(h) + fnp.sum(norms)

    def stacked(remat):
        closed = fnad.make_jaxpr(fnad.grad(loss), static_argnums=2)(params, xs, remat)
        program = closed.program if hasattr(closed, "program") else closed
        forward = _scans(program)[0]
        return [tuple(o.aval.shape) for o in forward.outputs[5:]]   # after carry, ys
    assert sorted(stacked(True)) == sorted([(6, 2, 4), (6, 3, 4), (6, 4, 4), (6, 4)])
    # Without it: the carry h and both tanh outputs, all (2, 4) per step.
    assert stacked(False).count((6, 2, 4)) == 3
    for a, b in zip(fnad.grad(loss)(params, xs, True), fnad.grad(loss)(params, xs, False)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13)


# --------------------------------------------------------------------------- BLAS products

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loop_gemm_reads_any_layout(dtype):
    """The BLAS product loop bodies call: transposed, strided, broadcast (stride 0),
    single-row and empty operands, against numpy's matmul."""
    if np.dtype(dtype) not in loop_linalg.BLAS_DTYPES:
        pytest.skip("no BLAS symbol found in numpy's library")
    gemm = loop_linalg.gemm_f32 if dtype == np.float32 else loop_linalg.gemm_f64
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 5)).astype(dtype)
    b = rng.normal(size=(5, 4)).astype(dtype)
    big = rng.normal(size=(10, 12)).astype(dtype)
    cases = [(a, b), (a.T.copy().T, b), (b.T, a.T), (big[::2, 1:6], b), (a, big[:5, ::3]),
             (np.broadcast_to(a[:1], (6, 5)), b), (a[:1], b), (a[:, :0], b[:0]),
             (a[:0], b)]
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for x, y in cases:
        got = gemm(x, y)
        assert got.dtype == dtype and got.shape == (x.shape[0], y.shape[1])
        np.testing.assert_allclose(got, x.astype(np.float64) @ y.astype(np.float64),
                                   rtol=tol, atol=tol)


def test_a_nested_cond_compiles_into_the_loop(compiled_loops, monkeypatch):
    """lax.cond (and a three-way switch) inside a scan body: branches become functions
    the loop calls, with the Python loop's numbers."""
    xs = fnp.asarray(np.random.default_rng(2).normal(size=(6, 5)))

    def f(xs):
        def step(c, x):
            c = c + lax.cond(x[0] > 0, lambda v: v.sum(), lambda v: -v.max(), x)
            k = (x[1] * 3).astype(np.int32)
            return lax.switch(k, [lambda v: v * 2, lambda v: v - 1, lambda v: v / 4], c), c
        return lax.scan(step, fnp.zeros((), xs.dtype), xs)
    got = fnad.jit(f)(xs)
    assert_all_compiled(compiled_loops)
    c, trail = 0.0, []
    for x in np.asarray(xs):
        c = c + (x.sum() if x[0] > 0 else -x.max())
        trail.append(c)
        k = min(max(int(np.int32(x[1] * 3)), 0), 2)
        c = [c * 2, c - 1, c / 4][k]
    np.testing.assert_allclose(float(got[0]), c, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(got[1]), trail, rtol=1e-13)
    _python_loops(monkeypatch)
    py = fnad.jit(f)(xs)
    np.testing.assert_array_equal(np.asarray(py[1]), np.asarray(got[1]))


def test_an_unsupported_body_falls_back_and_says_why(compiled_loops):
    """A body with a primitive that has no compiled form (a Cholesky factorization)
    stays a Python loop over its compiled body, with the right numbers and the
    reason recorded."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=(4, 3, 3))
    spd = fnp.asarray(a @ a.transpose(0, 2, 1) + 3 * np.eye(3))

    def f(spd):
        return lax.scan(lambda c, m: (c + fnp.linalg.cholesky(m).sum(), None),
                        fnp.zeros((), spd.dtype), spd)[0]
    got = float(fnad.jit(f)(spd))
    np.testing.assert_allclose(got, np.linalg.cholesky(np.asarray(spd)).sum(), rtol=1e-13)
    entries = [e for t in compiled_loops.values() for e in t.values()]
    assert entries and not any(e.ready for e in entries)
    assert "cholesky" in entries[0].reason


def test_running_reductions_iota_and_random_draws_compile(compiled_loops, monkeypatch):
    """cumsum/cumprod/cummax/cummin (forward and reverse, NaN and -0.0 included), iota
    and random split/bits in a scan body: one compiled loop, bit for bit the Python
    loop over the compiled body (the eager kernels), and numpy's running reductions."""
    xs = np.random.default_rng(6).normal(size=(4, 3, 5)).astype(np.float32)
    xs[1, 0, 2], xs[2, 1, 0], xs[2, 1, 1] = np.nan, -0.0, 0.0

    def run(xs, key):
        def step(key, x):
            key, sub = fnad.random.split(key)
            noise = fnad.random.uniform(sub, (3, 5), np.float32)
            bits = fnad.random.bits(sub, (2,), np.uint8)
            ramp = lax.broadcasted_iota(np.int32, (3, 5), 1)
            return key, (lax.cumsum(x, axis=1), lax.cumsum(x, axis=0, reverse=True),
                         lax.cumprod(x * 0.5 + 1, axis=1), lax.cummax(x, axis=1),
                         lax.cummin(x, axis=0, reverse=True), noise, bits, ramp * x)
        return lax.scan(step, key, xs)

    key = fnad.random.key(0) if hasattr(fnad.random, "key") else fnad.random.PRNGKey(0)
    outs = fnad.jit(run)(fnp.asarray(xs), key)
    assert_all_compiled(compiled_loops)
    np.testing.assert_array_equal(np.asarray(outs[1][0]), np.cumsum(xs, axis=2))
    np.testing.assert_array_equal(np.asarray(outs[1][3]), np.maximum.accumulate(xs, axis=2))
    flipped = np.flip(np.minimum.accumulate(np.flip(xs, 1), axis=1), 1)
    np.testing.assert_array_equal(np.asarray(outs[1][4]), flipped)
    assert np.signbit(np.asarray(outs[1][4])[2, 1, 0])
    _python_loops(monkeypatch)
    py = fnad.jit(run)(fnp.asarray(xs), key)
    for a, b in zip(fnad.tree_util.tree_leaves(outs), fnad.tree_util.tree_leaves(py)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_sort_and_argsort_in_a_loop_body_compile(compiled_loops, monkeypatch):
    """sort (one operand, and argsort's two) inside a scan body: one compiled loop,
    numpy's stable order with NaN last and signed zeros kept in place, as the Python
    loop over the eager kernels gives."""
    xs = np.random.default_rng(7).normal(size=(3, 4, 6)).astype(np.float32)
    xs[0, 1, :3] = [np.nan, -0.0, 0.0]
    xs[1, :, 2] = [0.0, -0.0, 0.0, -0.0]

    def run(xs):
        def step(c, x):
            return c + fnp.sort(x, axis=1)[:, 0].sum(), (fnp.sort(x, axis=0),
                                                       fnp.argsort(x, axis=1))
        return lax.scan(step, fnp.zeros((), np.float32), xs)

    total, (columns, order) = fnad.jit(run)(fnp.asarray(xs))
    assert_all_compiled(compiled_loops)
    want = np.sort(xs, axis=1, kind="stable")
    np.testing.assert_array_equal(np.asarray(columns), want)
    np.testing.assert_array_equal(np.signbit(np.asarray(columns)), np.signbit(want))
    np.testing.assert_array_equal(np.asarray(order), np.argsort(xs, axis=2, kind="stable"))
    np.testing.assert_allclose(float(total), np.sort(xs, axis=2)[:, :, 0].sum(), rtol=1e-6)
    _python_loops(monkeypatch)
    py_total, (py_columns, py_order) = fnad.jit(run)(fnp.asarray(xs))
    assert float(py_total) == float(total)
    np.testing.assert_array_equal(np.signbit(np.asarray(py_columns)),
                                  np.signbit(np.asarray(columns)))
    np.testing.assert_array_equal(np.asarray(py_order), np.asarray(order))


def test_large_math_in_a_loop_body_runs_through_numpy(compiled_loops, monkeypatch):
    """A body's big tanh/exp groups call numpy's own ufuncs (in object mode) between
    fused arithmetic: the compiled loop gives exactly the eager kernels' numbers."""
    xs = np.random.default_rng(8).normal(size=(5, 64, 64)).astype(np.float32)

    def run(xs):
        def step(c, x):
            c = fnp.tanh(c * np.float32(0.9) + x)
            return c, fnp.exp(-c * c)
        return lax.scan(step, fnp.zeros((64, 64), np.float32), xs)

    closed = fnad.make_jaxpr(run)(fnp.asarray(xs))
    program = closed.program if hasattr(closed, "program") else closed
    assert "numba.objmode" in loops.body_source(_scans(program)[0].params["body"], "b", "k",
                                                [])[0]
    c, ys = fnad.jit(run)(fnp.asarray(xs))
    assert_all_compiled(compiled_loops)
    h, want = np.zeros((64, 64), np.float32), []
    for x in xs:
        h = np.tanh(h * np.float32(0.9) + x)
        want.append(np.exp(-h * h))
    np.testing.assert_array_equal(np.asarray(c), h)
    np.testing.assert_array_equal(np.asarray(ys), np.stack(want))
