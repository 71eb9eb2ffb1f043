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


# PyTorch's layout: channels-first (NCHW) operands are copied channels-last by the
# kernels where that layout's paths are faster (forward, kernel and input gradients).
NCHW_CASES = [
    # (lhs NCHW, rhs OIHW, strides, padding, lhs_dilation, rhs_dilation)
    ((3, 4, 9, 8), (5, 4, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((3, 4, 9, 8), (5, 4, 3, 2), (2, 1), ((1, 2), (0, -1)), (1, 1), (1, 1)),
    ((2, 5, 7, 9), (3, 5, 2, 3), (1, 2), ((2, 1), (1, 1)), (1, 1), (2, 1)),
    ((2, 6, 5, 6), (4, 6, 3, 3), (2, 1), ((1, 1), (2, 2)), (2, 1), (1, 1)),
    ((3, 5, 4, 4), (2, 5, 3, 3), (1, 1), ((2, 2), (2, 2)), (1, 1), (1, 1)),  # scatter
]


@pytest.mark.parametrize("xs,ws,strides,padding,lhs_dil,rhs_dil", NCHW_CASES)
def test_channels_first_operands_take_channels_last_paths(xs, ws, strides, padding, lhs_dil,
                                                          rhs_dil, monkeypatch):
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    taken = []
    for name in ("_conv_gather_channels_last", "_conv_scatter_channels_last"):
        real = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *a, _f=real, _n=name: taken.append(_n)
                            or _f(*a))
    out = kernels.conv(x, w, strides, padding, lhs_dil, rhs_dil, 1)
    expected = ref_conv(x, w, strides, padding, lhs_dil, rhs_dil)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert taken, "a channels-first operand with long channel runs stays channels-first"
    # The kernel gradient's view of a channels-first input: (C, N, H, W), features = N.
    g = rng.standard_normal(out.shape)
    taken.clear()
    gw = kernels.conv(x.transpose(1, 0, 2, 3), g.transpose(1, 0, 2, 3), rhs_dil, padding,
                      lhs_dil, strides, 1) if strides == (1, 1) and lhs_dil == (1, 1) else None
    if gw is not None:
        np.testing.assert_allclose(gw.transpose(1, 0, 2, 3)[:, :, :ws[2], :ws[3]],
                                   _kernel_grad_ref(x, g, ws, padding, rhs_dil),
                                   rtol=1e-10, atol=1e-10)
    # float32 gives the same to float32 precision
    out32 = kernels.conv(x.astype(np.float32), w.astype(np.float32), strides, padding,
                         lhs_dil, rhs_dil, 1)
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, expected, rtol=1e-4, atol=1e-4)


def _kernel_grad_ref(x, g, ws, padding, rhs_dil):
    """d/dw sum(g * conv(x, w)) for unit strides, by direct loops."""
    xp = np.pad(x, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding])
    xp = xp[:, :, -min(padding[0][0], 0):xp.shape[2] + min(padding[0][1], 0),
            -min(padding[1][0], 0):xp.shape[3] + min(padding[1][1], 0)]
    out = np.zeros(ws)
    oh, ow = g.shape[2:]
    for a in range(ws[2]):
        for b in range(ws[3]):
            patch = xp[:, :, a * rhs_dil[0]:a * rhs_dil[0] + oh,
                       b * rhs_dil[1]:b * rhs_dil[1] + ow]
            out[:, :, a, b] = np.einsum("nohw,nchw->oc", g, patch)
    return out


@pytest.mark.parametrize("groups", [1, 2])
def test_lenet_like_step_in_both_layouts(groups):
    """conv, bias, relu and 2x2 max pool, then a dense layer, on NCHW/OIHW operands
    and on the same values in NHWC/HWIO: one loss and the same gradients (each layout
    checked against float64 central differences), eager and jitted."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4, 10, 10))                    # NCHW
    w = rng.standard_normal((6, 4 // groups, 3, 3)) * 0.4      # OIHW
    b = rng.standard_normal(6) * 0.1
    d = rng.standard_normal((6 * 4 * 4,)) * 0.2                # dense over (C, H, W)

    def loss_nchw(x, w, b):
        h = lc.conv_general_dilated(x, w, (1, 1), ((0, 0), (0, 0)),
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                    feature_group_count=groups)
        h = fnad.numpy.maximum(h + b[:, None, None], 0.0)
        h = lc.reduce_window(h, -np.inf, "max", (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return fnad.numpy.tanh(h.reshape(2, -1) @ d).sum()

    def loss_nhwc(x, w, b):
        h = lc.conv_general_dilated(x, w, (1, 1), ((0, 0), (0, 0)),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups)
        h = fnad.numpy.maximum(h + b, 0.0)
        h = lc.max_pool(h, (2, 2), (2, 2), "VALID")
        return fnad.numpy.tanh(h.transpose(0, 3, 1, 2).reshape(2, -1) @ d).sum()

    args_nchw = (x, w, b)
    args_nhwc = (x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), b)
    check_grads(loss_nchw, args_nchw, order=1, modes=("rev",))
    check_grads(loss_nhwc, args_nhwc, order=1, modes=("rev",))
    v1, g1 = fnad.value_and_grad(loss_nchw, argnums=(0, 1, 2))(*args_nchw)
    v2, g2 = fnad.value_and_grad(loss_nhwc, argnums=(0, 1, 2))(*args_nhwc)
    v3, g3 = fnad.jit(fnad.value_and_grad(loss_nchw, argnums=(0, 1, 2)))(*args_nchw)
    np.testing.assert_allclose(float(v1), float(v2), rtol=1e-12)
    np.testing.assert_allclose(float(v3), float(v1), rtol=1e-12)
    back = (lambda a: a.transpose(0, 3, 1, 2), lambda a: a.transpose(3, 2, 0, 1), lambda a: a)
    for a, c, j, to_nchw_ in zip(g1, g2, g3, back):
        np.testing.assert_allclose(np.asarray(a), to_nchw_(np.asarray(c)), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(np.asarray(j), np.asarray(a), rtol=1e-10, atol=1e-12)
