"""The cuda kernels of dot_general, convolution, windowed reductions and their
selections, cumulative ops and reduce_prod, against the cpu kernels; and the
gradient of a small conv + pool + dense loss computed on the GPU."""
import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad import lax
from fnad.errors import ShapeError
from fnad.primitives import conv as C, reduce as R
from fnad.primitives.dot import dot_general_p
from cuda_util import check_primitive, host, needs_cuda, to_gpu

pytestmark = needs_cuda

rng = np.random.default_rng(0)


def sample(shape, dtype, low=-4, high=4):
    """Small values, exact in every dtype (so integer products agree exactly)."""
    if np.dtype(dtype) == bool:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "u":
        low = 0
    x = rng.integers(low, high, shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x = (x + rng.uniform(0, 1, shape)).astype(dtype)
    return x


# --------------------------------------------------------------------------- dot_general

DOTS = [    # lhs shape, rhs shape, ((lhs contract, rhs contract), (lhs batch, rhs batch))
    ((5, 7), (7, 6), (((1,), (0,)), ((), ()))),           # matrix product, partial tiles
    ((7, 5), (6, 7), (((0,), (1,)), ((), ()))),           # both transposed
    ((2, 5, 9), (2, 9, 3), (((2,), (1,)), ((0,), (0,)))),  # batched
    ((3, 4, 2), (2, 3, 5), (((0, 2), (1, 0)), ((), ()))),  # two contracted axes
    ((4, 2, 3), (3, 5, 2), (((2,), (0,)), ((1,), (2,)))),  # batch axes in the middle
    ((6,), (6,), (((0,), (0,)), ((), ()))),               # inner product: 0-d result
    ((3,), (4, 2), (((), ()), ((), ()))),                 # outer product
    ((3, 0), (0, 4), (((1,), (0,)), ((), ()))),           # empty contraction: zeros
    ((0, 3), (3, 4), (((1,), (0,)), ((), ()))),           # empty result
]


@pytest.mark.parametrize("lhs, rhs, dimension_numbers", DOTS)
def test_dot_general(lhs, rhs, dimension_numbers):
    check_primitive(dot_general_p, sample(lhs, "float32"), sample(rhs, "float32"),
                    dimension_numbers=dimension_numbers)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int8", "uint8", "bool"])
def test_dot_general_dtypes(dtype):
    check_primitive(dot_general_p, sample((2, 5, 6), dtype), sample((2, 6, 3), dtype),
                    dimension_numbers=(((2,), (1,)), ((0,), (0,))))


def test_dot_general_shape_error():
    with pytest.raises(ShapeError, match="dot_general"):
        dot_general_p.bind(to_gpu(np.ones((2, 3))), to_gpu(np.ones((4, 2))),
                           dimension_numbers=(((1,), (0,)), ((), ())))


# --------------------------------------------------------------------------- convolution

CONVS = [   # lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, feature groups
    ((2, 3, 6), (4, 3, 2), (1,), ((0, 0),), (1,), (1,), 1),
    ((1, 2, 5, 4), (3, 2, 2, 3), (2, 1), ((1, 2), (0, 0)), (1, 1), (1, 1), 1),
    ((1, 4, 5, 4), (4, 2, 2, 3), (2, 1), ((1, 2), (0, -1)), (1, 2), (2, 1), 2),
    ((2, 2, 4, 4), (2, 1, 3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), (1, 1), 2),  # input grad
    ((1, 2, 3, 3, 3), (2, 1, 2, 2, 2), (1, 2, 1), ((1, 0), (0, 0), (1, 1)), (1, 1, 2),
     (1, 1, 1), 2),
    ((1, 2, 3), (2, 2, 5), (1,), ((0, 0),), (1,), (1,), 1),   # window past the input
    ((1, 0, 3), (2, 0, 2), (1,), ((0, 0),), (1,), (1,), 1),   # no features: zeros
]


@pytest.mark.parametrize("lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups",
                         CONVS)
def test_conv(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups):
    check_primitive(C.conv_general_dilated_p, sample(lhs, "float32"), sample(rhs, "float32"),
                    window_strides=strides, padding=padding, lhs_dilation=lhs_dilation,
                    rhs_dilation=rhs_dilation, feature_group_count=groups)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int8"])
def test_conv_dtypes(dtype):
    check_primitive(C.conv_general_dilated_p, sample((1, 2, 4, 3), dtype),
                    sample((2, 2, 2, 2), dtype), window_strides=(1, 1),
                    padding=((1, 0), (0, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                    feature_group_count=1)


@pytest.mark.parametrize("lhs, rhs, dimension_numbers", [
    ((1, 5, 4, 2), (2, 3, 2, 3), ("NHWC", "HWIO", "NHWC")),
    ((1, 2, 5, 4), (3, 2, 2, 2), ("NCHW", "OIHW", "NHWC")),
    ((2, 6, 3), (2, 3, 4), ("NWC", "WIO", "NCW")),
])
def test_conv_layouts(lhs, rhs, dimension_numbers):
    lhs, rhs = sample(lhs, "float32"), sample(rhs, "float32")

    def conv(a, b):
        return lax.conv_general_dilated(a, b, (1,) * (a.ndim - 2), "SAME",
                                        dimension_numbers=dimension_numbers)
    np.testing.assert_allclose(host(conv(to_gpu(lhs), to_gpu(rhs))),
                               np.asarray(conv(jnp.asarray(lhs), jnp.asarray(rhs))),
                               rtol=1e-5, atol=1e-5)


def test_conv_shape_error():
    with pytest.raises(ShapeError, match="feature_group_count"):
        C.conv_general_dilated_p.bind(
            to_gpu(np.ones((1, 3, 4))), to_gpu(np.ones((2, 2, 2))), window_strides=(1,),
            padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,), feature_group_count=1)


# --------------------------------------------------------------------------- windows

WINDOWS = [     # shape, window, strides, padding
    ((4, 6), (2, 2), (2, 2), ((0, 0), (0, 0))),                # tiling pool
    ((4, 5), (3, 2), (1, 2), ((1, 1), (0, 1))),                # overlapping, padded
    ((2, 5, 4), (1, 3, 3), (1, 1, 2), ((0, 0), (2, 1), (-1, 2))),  # cropped; padded windows
    ((5,), (2,), (3,), ((0, 0),)),                             # windows that skip elements
    ((), (), (), ()),
    ((0, 3), (1, 2), (1, 1), ((0, 0), (0, 0))),
    ((0,), (2,), (1,), ((1, 2),)),                             # windows of padding only
]
REDUCE_WINDOWS = [C.reduce_window_max_p, C.reduce_window_min_p, C.reduce_window_sum_p]
SELECTIONS = [(C.select_and_gather_add_max_p, C.select_and_scatter_add_max_p),
              (C.select_and_gather_add_min_p, C.select_and_scatter_add_min_p)]


def with_ties(shape, dtype):
    """Few distinct values, and a NaN for float dtypes: ties and NaN pick the first."""
    x = rng.integers(-2, 2, shape).astype(dtype)
    if x.size > 3 and x.dtype.kind == "f":
        x.flat[3] = np.nan
    return x


@pytest.mark.parametrize("shape, window, strides, padding", WINDOWS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_windows(shape, window, strides, padding, dtype):
    params = dict(window_dimensions=window, window_strides=strides, padding=padding)
    x = with_ties(shape, dtype)
    for prim in REDUCE_WINDOWS:
        check_primitive(prim, x, **params)
    out_shape = C.reduce_window_max_p.abstract_eval(fnad.abstract.ShapedArray(shape, dtype),
                                                    **params).shape
    for gather, scatter in SELECTIONS:
        check_primitive(gather, sample(shape, dtype), x, **params)
        check_primitive(scatter, sample(out_shape, dtype), x, **params)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "uint8"])
def test_window_dtypes(dtype):
    params = dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (1, 1)))
    x = with_ties((3, 5), dtype)
    for prim in REDUCE_WINDOWS:
        check_primitive(prim, x, **params)
    for gather, scatter in SELECTIONS:
        check_primitive(gather, sample((3, 5), dtype), x, **params)
        check_primitive(scatter, sample((3, 3), dtype), x, **params)


def test_window_shape_error():
    with pytest.raises(ShapeError, match="select_and_scatter_add_max"):
        C.select_and_scatter_add_max_p.bind(
            to_gpu(np.ones((3, 3), np.float32)), to_gpu(np.ones((4, 4), np.float32)),
            window_dimensions=(3, 3), window_strides=(1, 1), padding=((0, 0), (0, 0)))


# --------------------------------------------------------------------------- cumulative

SCANS = [R.cumsum_p, R.cumprod_p, R.cummax_p, R.cummin_p]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_scans(dtype):
    x = sample((3, 4, 2), dtype, -2, 3)
    if x.dtype.kind == "f":
        x.flat[5] = np.nan
    for prim in SCANS:
        for axis in range(3):
            for reverse in (False, True):
                check_primitive(prim, x, axis=axis, reverse=reverse)
    check_primitive(R.cumsum_p, np.zeros((2, 0)), axis=1, reverse=False)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint8"])
def test_scans_keep_small_dtypes(dtype):
    """The declared result dtype is the operand's. The cpu kernel (np.cumsum,
    np.cumprod) widens small integers to 64 bits; the values agree once narrowed."""
    x = sample((3, 5), dtype, 0, 3)
    for prim in SCANS:
        got = host(prim.bind(to_gpu(x), axis=1, reverse=True))
        expected = np.asarray(prim.bind(jnp.asarray(x), axis=1, reverse=True))
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, expected.astype(dtype), err_msg=str(prim))


def test_scan_axis_error():
    with pytest.raises(ShapeError, match="cumsum"):
        R.cumsum_p.bind(to_gpu(np.ones(3)), axis=1, reverse=False)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float16"])
@pytest.mark.parametrize("axes", [(0,), (1, 2), (0, 1, 2), ()])
def test_reduce_prod(dtype, axes):
    check_primitive(R.reduce_prod_p, sample((3, 4, 2), dtype, -2, 3), axes=axes)


def test_reduce_prod_empty():
    check_primitive(R.reduce_prod_p, np.zeros((2, 0), np.float32), axes=(1,))


# --------------------------------------------------------------------------- a gradient

def test_grad_conv_pool_dense():
    def loss(params, x):
        w, v = params
        y = jnp.tanh(lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                              dimension_numbers=("NHWC", "HWIO", "NHWC")))
        y = lax.reduce_window(y, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.sum(jnp.tanh(jnp.reshape(y, (y.shape[0], -1)) @ v) ** 2)

    params = (rng.standard_normal((3, 3, 2, 3)).astype(np.float32),
              rng.standard_normal((12, 2)).astype(np.float32))
    x = rng.standard_normal((2, 4, 4, 2)).astype(np.float32)
    expected = fnad.grad(loss)(params, x)
    got = fnad.grad(loss)(tuple(to_gpu(p) for p in params), to_gpu(x))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(host(g), np.asarray(e), rtol=1e-4, atol=1e-5)
