"""float16 and bfloat16 loop bodies compile into one Numba loop (issue 17): the loop
holds 16-bit values as their uint16 bits, as the fused kernels' drivers pass them, and
gives the eager numbers and the Python loop's over the compiled body bit for bit
(NaN, inf and -0.0 included)."""

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import lax
from fnad.backends.cpu import control, loops
from fnad.dtypes import bfloat16
from test_scan_compiled import assert_all_compiled

DTYPES = [np.dtype(np.float16), bfloat16]


def _assert_same_bits(got, want):
    for g, w in zip(fnad.tree_util.tree_leaves(got), fnad.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.itemsize == 2:
            g, w = g.view(np.uint16), w.view(np.uint16)
        np.testing.assert_array_equal(g, w)


def _compare(f, args, table, monkeypatch):
    """f jitted, its loops compiled (three calls), against f eager and f jitted over
    Python loops, bit for bit."""
    jitted = fnad.jit(f)
    for _ in range(3):
        got = jitted(*args)
    assert_all_compiled(table)
    monkeypatch.setattr(control, "compiled_loop", lambda *a: None)
    _assert_same_bits(got, f(*args))
    _assert_same_bits(got, fnad.jit(f)(*args))
    return got


def _specials(x):
    """x with a NaN, infinities and a -0.0 in it."""
    x = np.array(x)
    flat = x.reshape(-1)
    flat[[1, 5, 9, 13]] = [np.nan, np.inf, -np.inf, -0.0]
    return x


def _rnn_inputs(dtype):
    rng = np.random.default_rng(0)
    W = (rng.normal(size=(8, 8)) * 0.4).astype(dtype)
    U = (rng.normal(size=(4, 8)) * 0.4).astype(dtype)
    xs = _specials(rng.normal(size=(6, 3, 4)).astype(dtype))
    xs[:, 2] = rng.normal(size=(6, 4)).astype(dtype)    # one row stays finite
    return W, U, np.zeros((3, 8), dtype), xs


def _rnn(W, U, h0, xs):
    def step(h, x):
        h = fnp.tanh(h @ W + x @ U)
        return h, h.sum(axis=1)
    return lax.scan(step, h0, xs)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_16_bit_rnn_scan_compiles_and_matches_eager(dtype, compiled_loops, monkeypatch):
    h, ys = _compare(_rnn, _rnn_inputs(dtype), compiled_loops, monkeypatch)
    assert h.dtype == dtype and ys.dtype == dtype and ys.shape == (6, 3)
    assert np.isfinite(np.asarray(h, np.float32)[2]).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_16_bit_fori_loop_compiles_and_matches_eager(dtype, compiled_loops, monkeypatch):
    x = _specials(np.linspace(-3, 3, 24).reshape(4, 6).astype(dtype))

    def f(x):
        def body(i, c):
            y = c * 0.75 + fnp.sin(c) - c.max(axis=1, keepdims=True) * 0.125
            return y.astype(np.float32).astype(dtype) + i.astype(dtype)
        return lax.fori_loop(0, 5, body, x)
    _compare(f, (x,), compiled_loops, monkeypatch)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_16_bit_while_loop_compiles_and_matches_eager(dtype, compiled_loops, monkeypatch):
    x = np.linspace(-2, 2, 16).astype(dtype)
    x[3] = -0.0     # (a NaN or inf would spread through the sum to every element)
    W = (np.arange(16 * 16).reshape(16, 16) % 7 / 23).astype(dtype)

    def f(x, W):
        def cond(carry):
            k, _ = carry
            return k < 7

        def body(carry):
            k, v = carry
            return k + 1, fnp.tanh(v * 0.5) @ W - v.sum() * 0.01
        return lax.while_loop(cond, body, (0, x))
    k, v = _compare(f, (x, W), compiled_loops, monkeypatch)
    assert int(k) == 7 and v.dtype == dtype
    assert np.isfinite(np.asarray(v, np.float32)).all()


def test_grad_of_a_bfloat16_rnn_scan_compiles_and_matches_eager(compiled_loops, monkeypatch):
    W, U, h0, xs = _rnn_inputs(bfloat16)
    xs = np.nan_to_num(np.asarray(xs, np.float32)).astype(bfloat16)

    def loss(W, U):
        h, ys = _rnn(W, U, h0, xs)
        return (h * h).sum() + ys.sum()
    gW, gU = _compare(fnad.grad(loss, argnums=(0, 1)), (W, U), compiled_loops, monkeypatch)
    assert gW.dtype == bfloat16 and np.isfinite(np.asarray(gW, np.float32)).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_large_16_bit_math_runs_through_numpy_in_the_loop(dtype, compiled_loops,
                                                         monkeypatch):
    """A group over 64x64 elements calls tanh through numpy's kernel, on the bits seen
    as their dtype."""
    x = _specials(np.random.default_rng(1).normal(size=(64, 64)).astype(dtype))

    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: fnp.tanh(c * 1.5) + 0.25, x)
    assert loops.NUMPY_MATH_MIN_ELEMENTS <= x.size
    _compare(f, (x,), compiled_loops, monkeypatch)


def test_a_16_bit_library_call_without_a_loop_form_falls_back_and_says_why(compiled_loops):
    x = np.linspace(-1, 1, 8).astype(bfloat16)

    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: fnp.cumsum(c) * 0.5, x)
    got = [fnad.jit(f)(x) for _ in range(3)][-1]
    _assert_same_bits(got, f(x))
    entries = [e for t in compiled_loops.values() for e in t.values()]
    assert entries and not entries[0].ready
    assert "cumsum of bfloat16" in entries[0].reason
