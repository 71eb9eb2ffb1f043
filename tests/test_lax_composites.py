"""fnad/lax/composites.py: lax's helpers over the primitives, against numpy and hand
values (in CI) and against jax.lax itself when JAX is installed."""
import numpy as np
import pytest

import fnad
import fnad.lax as L
from fnad.errors import DTypeError, ShapeError

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5)).astype(np.float32)
INTS = (np.int8, np.int32, np.uint8, np.uint32, np.int64)


def same(a, b, tol=0):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_shapes_and_slices_match_numpy():
    same(L.full((2, 3), 1.5, np.float32), np.full((2, 3), 1.5, np.float32))
    same(L.full_like(X, 2), np.full_like(X, 2))
    same(L.broadcast(X, (2,)), np.broadcast_to(X, (2, 3, 5)))
    same(L.broadcast_to_rank(X, 4), X[None, None])
    assert L.broadcast_shapes((3, 1), (4,)) == (3, 4)
    same(L.index_in_dim(X, -1, 1, False), X[:, -1])
    same(L.index_in_dim(X, 1, 0), X[1:2])
    same(L.slice_in_dim(X, 1, 4, 2, 1), X[:, 1:4:2])
    for got, want in zip(L.split(X, (2, 3), 1), np.split(X, [2], 1)):
        same(got, want)
    same(L.collapse(np.ones((2, 3, 4)), 1), np.ones((2, 12)))
    same(L.collapse(np.ones((2, 3, 4)), 0, 2), np.ones((6, 4)))
    same(L.index_take(X, (np.array([0, 2]), np.array([1, 4])), (0, 1)), X[[0, 2], [1, 4]])
    same(L.tile(X, (2, 1)), np.tile(X, (2, 1)))
    with pytest.raises(ShapeError, match=r"\[2, 2\]"):
        L.split(X, (2, 2), 1)
    with pytest.raises(IndexError, match="out of range"):
        L.index_in_dim(X, 5, 1)


def test_select_n_and_top_k():
    which = RNG.integers(0, 3, (3, 5)).astype(np.int32)
    same(L.select_n(which, X, 2 * X, 3 * X), np.choose(which, [X, 2 * X, 3 * X]))
    same(L.select_n(X > 0, X, -X), -np.abs(X))     # cases[True] is the second
    values, index = L.top_k(np.array([[3, 1, 3, 2], [0, 5, 5, 1]], np.float32), 3)
    same(values, np.array([[3, 3, 2], [5, 5, 1]], np.float32))
    same(index, np.array([[0, 2, 3], [1, 2, 3]], np.int32))     # ties: the lower index
    g = fnad.grad(lambda x: L.top_k(x, 2)[0].sum())(np.array([1., 4, 2, 3]))
    same(g, np.array([0., 1, 0, 1]))


def test_bits_by_hand():
    x = np.array([1, -1, 96, -128], np.int8)
    same(L.shift_left(x, np.array([1, 8, -1, 1], np.int8)), np.array([2, 0, 0, 0], np.int8))
    same(L.shift_right_logical(x, np.array([0, 4, 5, 9], np.int8)),
         np.array([1, 15, 3, 0], np.int8))
    same(L.shift_right_arithmetic(x, np.array([0, 4, 5, 9], np.int8)),
         np.array([1, -1, 3, -1], np.int8))
    same(L.population_count(x), np.array([1, 8, 2, 1], np.int8))
    same(L.clz(x), np.array([7, 0, 1, 0], np.int8))
    same(L.clz(np.array([0, 1, 2 ** 31 - 1], np.int32)), np.array([32, 31, 1], np.int32))
    m = np.array([[6, 3, 5], [12, 10, 9]], np.uint8)
    same(L.reduce_and(m, (1,)), np.bitwise_and.reduce(m, 1))
    same(L.reduce_or(m, (0, 1)), np.bitwise_or.reduce(m.ravel()))
    same(L.reduce_xor(m, (1,)), np.bitwise_xor.reduce(m, 1))
    b = np.array([[True, False], [True, True]])
    same(L.reduce_and(b, (1,)), b.all(1))
    same(fnad.jit(L.clz)(np.arange(5, dtype=np.int32)), np.array([32, 31, 30, 30, 29], np.int32))
    with pytest.raises(DTypeError, match="float32"):
        L.clz(X)


def test_arithmetic_and_cumlogsumexp():
    same(L.reciprocal(np.float32(4)), np.float32(0.25))
    same(L.exp2(np.float64(10)), np.float64(1024))
    same(L.cbrt(np.float64(-27)), np.float64(-3))
    same(L.nextafter(np.float32(1), np.float32(2)), np.nextafter(np.float32(1), np.float32(2)))
    big = np.array([-50., 1, 80, 3])
    same(L.cumlogsumexp(big), np.logaddexp.accumulate(big), 1e-12)
    same(L.cumlogsumexp(big, reverse=True), np.logaddexp.accumulate(big[::-1])[::-1], 1e-12)
    # d/dx_j sum_i log sum_{k<=i} exp x_k = sum_{i>=j} softmax_i(x[:i+1])_j
    g = fnad.grad(lambda v: L.cumlogsumexp(v).sum())(big)
    want = [sum(np.exp(big[j] - np.logaddexp.reduce(big[:i + 1])) for i in range(j, 4))
            for j in range(4)]
    same(g, np.array(want), 1e-12)
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4, 5))
    same(L.batch_matmul(a, b), a @ b, 1e-12)
    with pytest.raises(ShapeError):
        L.batch_matmul(a, b[0])
    with pytest.raises(DTypeError):
        L.reciprocal(np.int32(2))


def test_against_jax():
    jax = pytest.importorskip("jax")
    JL = jax.lax
    for f, args in [("full_like", (X, 2)), ("broadcast", (X, (2,))), ("collapse", (X, 0)),
                    ("slice_in_dim", (X, 1, 4, 2, 1)), ("cumlogsumexp", (X, 1, True))]:
        same(getattr(L, f)(*args), getattr(JL, f)(*args), 2e-6)
    for dt in INTS:
        with jax.enable_x64(True):
            info = np.iinfo(dt)
            v = RNG.integers(info.min, info.max, 20, dtype=dt, endpoint=True)
            s = RNG.integers(-2 if info.min else 0, 8 * np.dtype(dt).itemsize + 3, 20).astype(dt)
            for f in ["shift_left", "shift_right_logical", "shift_right_arithmetic"]:
                same(getattr(L, f)(v, s), getattr(JL, f)(v, s))
            same(L.population_count(v), JL.population_count(v))
            same(L.clz(v), JL.clz(v))
            m = RNG.integers(0, 100, (3, 6), dtype=dt)
            for f in ["reduce_and", "reduce_or", "reduce_xor"]:
                same(getattr(L, f)(m, (1,)), getattr(JL, f)(m, (1,)))
                same(getattr(L, f)(m, (0, 1)), getattr(JL, f)(m, (0, 1)))


def test_cumlogsumexp_float16_rounds_once():
    # float16 runs in float32: each entry is the float64 answer rounded once
    h = np.ones(5, np.float16)
    same(L.cumlogsumexp(h), np.logaddexp.accumulate(h.astype(np.float64)).astype(np.float16))
