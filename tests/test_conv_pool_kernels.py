"""The cpu kernels' fast paths for convolution and pooling (fnad.nn's NHWC layout,
LeNet's shapes in miniature) against plain loops: each path is reached through
kernels.conv / select_and_scatter with the layouts and sizes that pick it, and
checked against the general paths and against direct references."""
import numpy as np
import pytest

import fnad
from fnad.lax import convolution as lc
from fnad.kernels.cpu import conv as kernels, window as pooling
from fnad.test_util import check_grads

from test_conv import ref_conv


def _args(padding, nd=2):
    return (1,) * nd, padding, (1,) * nd, (1,) * nd, 1


@pytest.mark.parametrize("padding", [((4, 4), (4, 4)), ((0, 0), (0, 0)), ((2, 3), (1, 0)),
                                     ((-1, 2), (3, -2))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_channels_last_scatter(padding, dtype, monkeypatch):
    """The input gradient of an NHWC convolution: a channels-last lhs, a small window
    padded wide; the result is a channels-last view."""
    rng = np.random.default_rng(0)
    g = rng.standard_normal((3, 5, 4, 7)).astype(dtype)          # (N, H, W, C)
    w = rng.standard_normal((3, 3, 2, 7)).astype(dtype)[::-1, ::-1]   # flipped HWIO view
    lhs, rhs = g.transpose(0, 3, 1, 2), w.transpose(2, 3, 0, 1)
    called = []
    real = kernels._conv_scatter_channels_last
    monkeypatch.setattr(kernels, "_conv_scatter_channels_last",
                        lambda *a: called.append(1) or real(*a))
    out = kernels.conv(lhs, rhs, *_args(padding))
    expected = ref_conv(lhs.astype(np.float64), rhs.astype(np.float64), (1, 1), padding)
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)
    if padding == ((4, 4), (4, 4)):
        assert called and np.moveaxis(out, 1, -1).flags.c_contiguous


@pytest.mark.parametrize("padding", [((0, 0), (0, 0)), ((1, 0), (2, 1))])
@pytest.mark.parametrize("out_w", [5, 3, 7])
@pytest.mark.parametrize("features", [4, 3])
def test_long_window_dot_products(padding, out_w, features):
    """The kernel gradient of a convolution with one input feature: 1 x N lhs, an
    O x N x 20 x 22 "kernel" (the output gradient), a few outputs; any number of
    outputs per row (blocks of five and the rest), kernels in pairs and one left."""
    rng = np.random.default_rng(1)
    lhs = rng.standard_normal((2, 3, 22 + 4 - sum(padding[0]),
                               22 + out_w - 1 - sum(padding[1])))
    rhs = rng.standard_normal((features, 3, 23, 22))
    out = kernels.conv(lhs, rhs, *_args(padding))
    assert out.shape == (2, features, 4, out_w)
    np.testing.assert_allclose(out, ref_conv(lhs, rhs, (1, 1), padding), rtol=1e-10,
                               atol=1e-10)
    # The same through the path the other sizes take.
    spatial = out.shape[2:]
    gathered = kernels._conv_gather(lhs, rhs, (1, 1), padding, (1, 1), (1, 1), 1, spatial)
    np.testing.assert_allclose(out, gathered, rtol=1e-10, atol=1e-10)
    out32 = kernels.conv(lhs.astype(np.float32), rhs.astype(np.float32), *_args(padding))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, out, rtol=1e-3, atol=1e-3)


def ref_select_and_scatter(g, x, op, window, strides):
    """Per window (no padding), g added at the first extreme (the first NaN wins)."""
    out = np.zeros_like(x)
    for idx in np.ndindex(*g.shape):
        sl = tuple(slice(i * s, i * s + k) for i, s, k in zip(idx, strides, window))
        values = x[sl].ravel()
        nan = np.flatnonzero(np.isnan(values))
        at = nan[0] if nan.size else (np.argmax(values) if op == pooling.MAX
                                      else np.argmin(values))
        pos = np.unravel_index(at, window)
        out[tuple(s.start + p for s, p in zip(sl, pos))] += g[idx]
    return out


@pytest.mark.parametrize("op", [pooling.MAX, pooling.MIN])
@pytest.mark.parametrize("shape,window,strides", [
    ((3, 6, 4, 5), (1, 2, 2, 1), (1, 2, 2, 1)),     # tiles: every position written once
    ((3, 7, 4, 5), (1, 2, 2, 1), (1, 2, 2, 1)),     # a leftover row
    ((3, 6, 5, 2), (1, 3, 2, 1), (1, 2, 1, 1)),     # overlapping windows
])
def test_select_and_scatter_paths(op, shape, window, strides):
    rng = np.random.default_rng(2)
    x = np.round(rng.standard_normal(shape), 1)          # ties included
    x.ravel()[::17] = np.nan
    padding = ((0, 0),) * len(shape)
    out_shape = tuple(kernels.out_size(n, k, s, 0, 0)
                      for n, k, s in zip(shape, window, strides))
    g = rng.standard_normal(out_shape)
    out = pooling.select_and_scatter(g, x, op, window, strides, padding)
    np.testing.assert_allclose(out, ref_select_and_scatter(g, x, op, window, strides),
                               rtol=1e-12, atol=1e-12)
    # A transposed operand (channels-first memory) gives the same.
    xt = np.ascontiguousarray(x.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(pooling.select_and_scatter(g, xt, op, window, strides, padding),
                               out, rtol=1e-12, atol=1e-12)


def test_lenet_like_grads_large_enough_for_threads(monkeypatch):
    """Threads split the rows of the windowed kernels; fnad.nn's NHWC conv + pool
    differentiates to second order with every fast path taken."""
    monkeypatch.setattr(kernels, "PARALLEL_MIN_ELEMENTS", 1)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 12, 12, 1)) * 0.5
    w = rng.standard_normal((5, 5, 1, 2)) * 0.5

    def f(x, w):
        y = lc.conv_general_dilated(x, w, (1, 1), "VALID",
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return lc.max_pool(y, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").sum()
    check_grads(f, (x, w), order=2, modes=("fwd", "rev"))
    gx, gw = fnad.grad(f, argnums=(0, 1))(x, w)
    jx, jw = fnad.jit(fnad.grad(f, argnums=(0, 1)))(x, w)
    np.testing.assert_allclose(np.asarray(jx), np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(jw), np.asarray(gw), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,window", [
    ((3, 6, 4, 5), (1, 2, 2, 1)),       # NHWC, 2x2 pooling
    ((2, 3, 4, 6, 2), (1, 1, 2, 2, 1)),   # two leading axes
    ((6, 4, 3), (2, 2, 1)),             # no leading axis
])
def test_pairs_of_rows_pooling(dtype, shape, window, monkeypatch):
    """2x2 windows tiling two adjacent axes take the unrolled kernels; they agree with
    the general kernels on every reduction and selection, NaN, infinities and ties
    included (inf - inf sends a window without NaN down the kernels' NaN branch)."""
    rng = np.random.default_rng(4)
    x = np.round(rng.standard_normal(shape), 1).astype(dtype)
    x.ravel()[::13] = np.nan
    x.ravel()[5::11] = np.inf
    x.ravel()[7::11] = -np.inf
    padding = ((0, 0),) * len(shape)
    g = rng.standard_normal(tuple(n // k for n, k in zip(shape, window))).astype(dtype)
    assert pooling._pairs_of_rows(x, window, window, padding) is not None
    fast = [pooling.reduce_window(x, op, window, window, padding)
            for op in (pooling.SUM, pooling.MAX, pooling.MIN)]
    fast += [pooling.select_and_scatter(g, x, op, window, window, padding)
             for op in (pooling.MAX, pooling.MIN)]
    monkeypatch.setattr(pooling, "_pairs_of_rows", lambda *a: None)
    general = [pooling.reduce_window(x, op, window, window, padding)
               for op in (pooling.SUM, pooling.MAX, pooling.MIN)]
    general += [pooling.select_and_scatter(g, x, op, window, window, padding)
                for op in (pooling.MAX, pooling.MIN)]
    for a, b in zip(fast, general):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(fast[3], ref_select_and_scatter(g, x, pooling.MAX, window,
                                                                  window))
