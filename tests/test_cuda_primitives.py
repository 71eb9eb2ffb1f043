"""The cuda kernels of the structural, indexing, sorting, random and linear-algebra
primitives against the cpu's, case by case, on numba's CUDA simulator (so shapes
stay tiny). Small integer values keep clear of overflow: the simulator runs kernels
as Python, whose integers do not wrap the way the device's do."""
import numpy as np
import pytest

import fnad
from fnad.core import PRIMITIVES
from fnad.backends.cuda.registry import impl_for
from fnad.primitives import index as I, linalg as L, random_bits as R, shape as S
from fnad.primitives.reduce import argmax_p, argmin_p
from fnad.primitives.sort import sort_p
from fnad.errors import ShapeError
from cuda_util import check_primitive, host, needs_cuda, to_gpu

pytestmark = needs_cuda

rng = np.random.default_rng(0)
DTYPES = [np.bool_, np.int8, np.uint32, np.int64, np.float16, np.float32, np.float64]


def values(shape, dtype):
    """Small values of any dtype, with repeats (ties for the sorts)."""
    return (rng.integers(0, 3, shape) - (np.dtype(dtype).kind == "i")).astype(dtype)


def scalar(value, dtype):
    return np.asarray(value, dtype)


def case(prim, *args, **params):
    return pytest.param(prim, args, params, id=prim.name)


X = values((2, 3, 4), np.float32)


def movement_cases():
    for dt in DTYPES:
        x = values((2, 3, 4), dt)
        yield case(S.transpose_p, x, permutation=(2, 0, 1))
        yield case(S.rev_p, x, dimensions=(0, 2))
        yield case(S.slice_p, x, start_indices=(1, 0, 1), limit_indices=(2, 3, 4),
                   strides=(1, 2, 2))
        yield case(S.pad_p, x, scalar(1, dt), padding_config=((1, -1, 1), (0, 2, 0),
                                                              (-2, 1, 2)))
        yield case(S.concatenate_p, x, x[:, :1], x[:, :0], dimension=1)
    yield case(S.reshape_p, X, new_sizes=(4, 6))
    yield case(S.reshape_p, X[:1, :1, :1], new_sizes=())
    yield case(S.reshape_p, X[:, :0], new_sizes=(0, 5))
    yield case(S.squeeze_p, X[:, :1], dimensions=(1,))
    yield case(S.expand_dims_p, X, dimensions=(0, 4))
    yield case(S.expand_dims_p, scalar(3, np.float32), dimensions=(0,))
    yield case(S.transpose_p, X, permutation=(0, 1, 2))
    yield case(S.transpose_p, X[:, :0], permutation=(1, 2, 0))
    yield case(S.slice_p, X, start_indices=(0, 3, 0), limit_indices=(2, 3, 4),
               strides=(1, 1, 3))
    yield case(S.pad_p, X[:, :0], scalar(7, np.float32),
               padding_config=((0, 0, 0), (1, 1, 3), (0, 0, 0)))
    yield case(S.pad_p, X, scalar(7, np.float32),
               padding_config=((-1, 0, 0), (-3, 0, 0), (0, 0, 0)))
    yield case(S.pad_p, scalar(2, np.float32), scalar(7, np.float32), padding_config=())
    yield case(S.concatenate_p, X, dimension=2)
    yield case(S.concatenate_p, X, 2 * X, X[:, :, :1], dimension=2)


INDICES = np.array([[0], [3], [-1], [5], [-7], [1], [1]], np.int32)  # repeats, out of range
PAIRS = np.array([[[0, 1], [3, -1]], [[9, 0], [1, -4]], [[1, 2], [1, 2]]], np.int64)


def index_cases():
    operand = values((4, 3, 2), np.float32)
    for mode in ("clip", "fill"):
        yield case(I.gather_p, operand, INDICES, mode=mode)
        yield case(I.gather_p, operand, PAIRS, mode=mode)
        yield case(I.gather_p, operand, PAIRS.astype(np.uint8), mode=mode)
        yield case(I.gather_p, operand, np.zeros((2, 0), np.int64), mode=mode)
        yield case(I.gather_p, operand, np.zeros((0, 1), np.int64), mode=mode)
        for prim, kinds in ((I.scatter_p, "biuf"), (I.scatter_add_p, "iuf"),
                            (I.scatter_mul_p, "iuf"), (I.scatter_min_p, "biuf"),
                            (I.scatter_max_p, "biuf")):
            for dt in (np.bool_, np.int8, np.int32, np.uint64, np.float16, np.float32,
                       np.float64):
                if np.dtype(dt).kind in kinds:
                    yield case(prim, values((4, 3, 2), dt), INDICES,
                               values((7, 3, 2), dt), mode=mode, unique_indices=False)
            yield case(prim, operand, PAIRS, values((3, 2, 2), np.float32), mode=mode,
                       unique_indices=False)
    nans = operand.copy()
    nans[1, 0, 0] = np.nan
    updates = values((7, 3, 2), np.float32)
    updates[5, 1, 1] = np.nan
    for prim in (I.scatter_min_p, I.scatter_max_p):
        yield case(prim, nans, INDICES, updates, mode="clip", unique_indices=False)
    yield case(I.scatter_p, operand, np.array([[2], [0]]), values((2, 3, 2), np.float32),
               mode="fill", unique_indices=True)
    for starts in ((0, 0, 0), (-1, 1, 5), (3, -9, -1)):
        typed = [np.int32(starts[0]), np.int64(starts[1]), np.int8(starts[2])]
        yield case(I.dynamic_slice_p, operand, *typed, slice_sizes=(2, 3, 1))
        yield case(I.dynamic_slice_p, operand, *typed, slice_sizes=(0, 3, 1))
        yield case(I.dynamic_update_slice_p, operand, values((2, 1, 2), np.float32), *typed)
    yield case(I.dynamic_update_slice_p, values((3, 2), np.bool_), values((3, 1), np.bool_),
               np.int64(0), np.int64(7))


def sort_cases():
    for dt in DTYPES:
        x = values((3, 5, 2), dt)
        for d in range(3):
            yield case(sort_p, x, dimension=d, num_keys=1)
            yield case(argmax_p, x, axis=d, index_dtype=np.dtype(np.int32))
            yield case(argmin_p, x, axis=d, index_dtype=np.dtype(np.int64))
    keys = values((2, 13), np.int32)
    nans = rng.standard_normal((2, 13))
    nans[0, [1, 4, 9]] = np.nan
    nans[1, 2], nans[1, 7] = 0.0, -0.0
    iota = np.broadcast_to(np.arange(13), (2, 13))
    yield case(sort_p, nans, iota, dimension=1, num_keys=1)
    yield case(sort_p, keys, nans, iota, dimension=1, num_keys=2)
    yield case(sort_p, values((2, 13), np.bool_), keys, nans, iota, dimension=1, num_keys=3)
    yield case(sort_p, rng.standard_normal(37), dimension=0, num_keys=1)
    yield case(sort_p, X[:, :0], dimension=1, num_keys=1)
    yield case(sort_p, X[:, :1], X[:, :1], dimension=1, num_keys=1)
    for prim in (argmax_p, argmin_p):
        yield case(prim, nans, axis=1, index_dtype=np.dtype(np.int64))
        long = values((2, 100), np.float32)     # a block per line
        long[1, [30, 70]] = np.nan
        yield case(prim, long, axis=1, index_dtype=np.dtype(np.int64))
        yield case(prim, values((100, 2), np.int8), axis=0, index_dtype=np.dtype(np.int32))


KEYS = np.array([[0, 42], [0xFFFFFFFF, 7], [123, 0x80000000]], np.uint32)


def words(*shape):
    return rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32)


def random_cases():
    for width in (8, 16, 32, 64):
        yield case(R.random_bits_p, KEYS, shape=(2, 3), bit_width=width)
    yield case(R.random_bits_p, KEYS[0], shape=(5,), bit_width=32)
    yield case(R.random_bits_p, KEYS[:, None], shape=(0,), bit_width=32)
    yield case(R.random_split_p, KEYS, shape=(3,))
    yield case(R.random_split_p, KEYS[1], shape=())
    yield case(R.threefry2x32_p, words(4), words(1), words(3, 4), words(4))
    yield case(R.threefry2x32_p, words(), words(), words(5), words(5))


# Elimination is exact here (factors are powers of two), so both backends see the
# zero pivot; a matrix singular only up to rounding could go either way.
SINGULAR = np.array([[[1, 2, 3], [2, 4, 6], [1, 0, 1]], [[1, 0, 0], [0, 1, 0], [0, 0, 0]]],
                    np.float64)


def linalg_cases():
    for dt in (np.float32, np.float64):
        a = rng.standard_normal((2, 4, 4)).astype(dt)
        spd = (a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)).astype(dt)
        b = rng.standard_normal((2, 4, 3)).astype(dt)
        lopsided = spd + np.triu(np.full((4, 4), 5, dt), 1)    # upper triangle unread
        yield case(L.cholesky_p, spd)
        yield case(L.cholesky_p, lopsided)
        for left in (True, False):
            rhs = b if left else np.swapaxes(b, -1, -2)
            for lower, transpose_a, unit in ((True, False, False), (False, True, False),
                                             (True, True, True), (False, False, True)):
                yield case(L.triangular_solve_p, lopsided, rhs, left_side=left, lower=lower,
                           transpose_a=transpose_a, unit_diagonal=unit)
        yield case(L.solve_p, a, b)
        yield case(L.solve_p, a[0], b[0, :, :1])
        for prim in (L.det_p, L.slogdet_p):
            yield case(prim, a)
            yield case(prim, SINGULAR.astype(dt))
            yield case(prim, np.zeros((3, 3), dt))
            yield case(prim, np.zeros((2, 0, 0), dt))
            yield case(prim, np.zeros((0, 3, 3), dt))
    yield case(L.solve_p, np.zeros((0, 2, 2)), np.zeros((0, 2, 1)))


@pytest.mark.parametrize("prim, args, params", [*movement_cases(), *index_cases(),
                                                *sort_cases(), *random_cases(),
                                                *linalg_cases()])
def test_matches_cpu(prim, args, params):
    rtol = 1e-4 if prim in (L.solve_p, L.triangular_solve_p, L.det_p, L.slogdet_p) else None
    check_primitive(prim, *args, rtol=rtol, **params)


@pytest.mark.parametrize("dtype", [np.int32, np.float16, np.float64])
def test_iota(dtype):
    # iota has no operands to place it, so its kernel is called directly.
    kernel = impl_for(S.iota_p)
    for shape, dimension in (((2, 3, 4), 1), ((5,), 0), ((0, 3), 1)):
        got = kernel(dtype=np.dtype(dtype), shape=shape, dimension=dimension)
        np.testing.assert_array_equal(got.copy_to_host(),
                                      S.iota_p.impl(np.dtype(dtype), shape, dimension))


def _raises_like_cpu(prim, *args, **params):
    with pytest.raises(Exception) as on_cpu:
        prim.bind(*[fnad.numpy.asarray(a) for a in args], **params)
    with pytest.raises(on_cpu.type):
        prim.bind(*[to_gpu(a) for a in args], **params)
    return on_cpu.type


def test_errors_match_cpu():
    assert _raises_like_cpu(L.cholesky_p, -np.eye(3)) is np.linalg.LinAlgError
    assert _raises_like_cpu(L.solve_p, SINGULAR, SINGULAR) is np.linalg.LinAlgError
    assert _raises_like_cpu(I.gather_p, np.zeros((0, 2)), INDICES, mode="clip") is IndexError
    assert _raises_like_cpu(S.concatenate_p, X, X[:1, :1], dimension=2) is ShapeError
    _raises_like_cpu(sort_p, X, dimension=0, num_keys=2)
    _raises_like_cpu(I.scatter_add_p, X, INDICES, X, mode="clip", unique_indices=False)


def test_reshape_is_a_device_array():
    out = S.reshape_p.bind(to_gpu(X), new_sizes=(24,))
    assert host(out).shape == (24,)


def test_every_primitive_has_a_cuda_kernel():
    # (control flow and staged calls included: they run their programs' GPU executables)
    missing = []
    for name, prim in PRIMITIVES.items():
        try:
            impl_for(prim)
        except NotImplementedError:
            missing.append(name)
    assert not missing, f"no cuda kernel for {missing}"
