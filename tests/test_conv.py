"""Convolution and pooling: values against plain loops (and jax.lax when jax imports),
derivatives to second order, vmap against a loop, jit against eager, float32, errors."""
import numpy as np
import pytest

import fnad
from fnad.lax import convolution as lc
from fnad.errors import ShapeError, DTypeError
from fnad.kernels.cpu import conv as kernels
from fnad.test_util import check_grads

try:
    import jax
    import jax.numpy as jnp
except ImportError:     # pragma: no cover
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed")


# --------------------------------------------------------------------------- references

def ref_conv(x, w, strides, padding, lhs_dilation=None, rhs_dilation=None, groups=1):
    """Direct loops over output and window positions; x (N, C, ...), w (O, I, ...)."""
    nd = x.ndim - 2
    lhs_dilation = lhs_dilation or (1,) * nd
    rhs_dilation = rhs_dilation or (1,) * nd
    # Dilate, then pad (negative padding crops).
    dilated = np.zeros(x.shape[:2] + tuple((n - 1) * d + 1 for n, d in
                                            zip(x.shape[2:], lhs_dilation)), x.dtype)
    dilated[(slice(None),) * 2 + tuple(slice(None, None, d) for d in lhs_dilation)] = x
    xp = np.pad(dilated, [(0, 0)] * 2 + [(max(lo, 0), max(hi, 0)) for lo, hi in padding])
    xp = xp[(slice(None),) * 2 + tuple(slice(-min(lo, 0), n - max(hi, 0) + hi)
                                       for n, (lo, hi) in zip(xp.shape[2:], padding))]
    window = w.shape[2:]
    out_shape = tuple(max(0, (n - ((k - 1) * d + 1)) // s + 1) for n, k, d, s in
                      zip(xp.shape[2:], window, rhs_dilation, strides))
    o, cg = w.shape[:2]
    og = o // groups
    out = np.zeros(x.shape[:1] + (o,) + out_shape, np.result_type(x, w))
    for pos in np.ndindex(*out_shape):
        for k in np.ndindex(*window):
            src = tuple(p * s + kk * d for p, s, kk, d in zip(pos, strides, k, rhs_dilation))
            column = xp[(slice(None), slice(None)) + src]
            for g in range(groups):
                kernel = w[(slice(g * og, (g + 1) * og), slice(None)) + k]
                out[(slice(None), slice(g * og, (g + 1) * og)) + pos] += \
                    column[:, g * cg:(g + 1) * cg] @ kernel.T
    return out


def ref_reduce_window(x, op, window, strides, padding):
    fill = {"max": -np.inf, "min": np.inf, "add": 0.0}[op]
    reduce = {"max": np.max, "min": np.min, "add": np.sum}[op]
    xp = np.pad(x.astype(np.float64), [(max(lo, 0), max(hi, 0)) for lo, hi in padding],
                constant_values=fill)
    xp = xp[tuple(slice(-min(lo, 0), n - max(hi, 0) + hi)
                  for n, (lo, hi) in zip(xp.shape, padding))]
    out_shape = tuple(max(0, (n - k) // s + 1) for n, k, s in zip(xp.shape, window, strides))
    out = np.empty(out_shape)
    for pos in np.ndindex(*out_shape):
        out[pos] = reduce(xp[tuple(slice(p * s, p * s + k)
                                   for p, s, k in zip(pos, strides, window))])
    return out.astype(x.dtype)


def to_nchw(spec):
    return lambda a: np.moveaxis(a, [spec.index(c) for c in "NC"], [0, 1]) if spec else a


def normal(rng, *shape):
    return rng.standard_normal(shape)


# --------------------------------------------------------------------------- conv values

CONV_CASES = [
    # (lhs shape NC..., rhs shape OI..., kwargs)
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(2, 3), padding="SAME")),
    ((2, 3, 9, 8), (4, 3, 3, 3), dict(window_strides=(1, 2), padding=((1, 2), (0, -1)))),
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(window_strides=(2, 1), padding=((1, 0), (2, 1)),
                                      lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    ((2, 4, 9, 8), (6, 2, 3, 2), dict(window_strides=(1, 1), padding="SAME",
                                      feature_group_count=2)),
    ((2, 6, 7, 7), (6, 1, 3, 3), dict(window_strides=(2, 2), padding="SAME",
                                      feature_group_count=6)),          # depthwise
    ((3, 5, 4, 4), (2, 5, 3, 3), dict(window_strides=(1, 1), padding=((2, 2), (2, 2)))),
    ((2, 4, 5, 4), (3, 4, 3, 3), dict(window_strides=(1, 1), padding=((2, 1), (3, 2)),
                                      lhs_dilation=(2, 3), rhs_dilation=(2, 1))),
    ((2, 3, 11), (4, 3, 3), dict(window_strides=(2,), padding="SAME", rhs_dilation=(2,))),
    ((2, 2, 5, 6, 4), (3, 2, 3, 2, 2), dict(window_strides=(1, 2, 1), padding="SAME")),
    ((1, 2, 3, 3), (2, 2, 5, 5), dict(window_strides=(1, 1), padding="VALID")),  # empty
]


def _explicit_padding(x_shape, w_shape, kw):
    padding = kw["padding"]
    if isinstance(padding, str):
        nd = len(x_shape) - 2
        rd = kw.get("rhs_dilation") or (1,) * nd
        window = [(k - 1) * d + 1 for k, d in zip(w_shape[2:], rd)]
        padding = lc.padtype_to_pads(x_shape[2:], window, kw["window_strides"], padding)
    return padding


def _ref(x, w, kw):
    return ref_conv(x, w, kw["window_strides"], _explicit_padding(x.shape, w.shape, kw),
                    kw.get("lhs_dilation"), kw.get("rhs_dilation"),
                    kw.get("feature_group_count", 1))


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv_matches_loops(xs, ws, kw):
    rng = np.random.default_rng(0)
    x, w = normal(rng, *xs), normal(rng, *ws)
    out = lc.conv_general_dilated(x, w, **kw)
    expected = _ref(x, w, kw)
    assert out.shape == expected.shape and out.dtype == np.float64
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-10, atol=1e-10)


@needs_jax
@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv_matches_jax(xs, ws, kw):
    rng = np.random.default_rng(1)
    x, w = normal(rng, *xs).astype(np.float32), normal(rng, *ws).astype(np.float32)
    out = lc.conv_general_dilated(x, w, **kw)
    expected = jax.lax.conv_general_dilated(x, w, **kw)
    assert out.dtype == np.float32 and out.shape == expected.shape
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), rtol=1e-4, atol=1e-4)


LAYOUTS = [
    ("NHWC", "HWIO", "NHWC"),
    ("NCHW", "OIHW", "NHWC"),
    ("NHWC", "OIHW", "NCHW"),
    ("CHWN", "IOWH", "NWHC"),       # spatial order follows the rhs spec
]


@pytest.mark.parametrize("dn", LAYOUTS)
def test_conv_layouts(dn):
    rng = np.random.default_rng(2)
    lhs_spec, rhs_spec, out_spec = dn
    sizes = dict(N=2, C=4, H=7, W=6)
    kernel = dict(O=6, I=2, H=3, W=2)
    x = normal(rng, *[sizes[c] for c in lhs_spec])
    w = normal(rng, *[kernel[c] for c in rhs_spec])
    kw = dict(window_strides=(2, 1), padding="SAME", feature_group_count=2)
    out = lc.conv_general_dilated(x, w, dimension_numbers=dn, **kw)
    # The same convolution in the default layout, spatial axes in the rhs spec's order.
    spatial = [c for c in rhs_spec if c in "HW"]
    x0 = np.transpose(x, [lhs_spec.index(c) for c in "NC" + "".join(spatial)])
    w0 = np.transpose(w, [rhs_spec.index(c) for c in "OI" + "".join(spatial)])
    expected = lc.conv_general_dilated(x0, w0, **kw)
    back = np.transpose(np.asarray(expected), ["NC".index(c) if c in "NC" else
                                               2 + spatial.index(c) for c in out_spec])
    np.testing.assert_allclose(np.asarray(out), back, rtol=1e-12)
    # ConvDimensionNumbers-style tuples give the same result.
    numbers = lc.conv_dimension_numbers(x.shape, w.shape, dn)
    again = lc.conv_general_dilated(x, w, dimension_numbers=tuple(map(tuple, numbers)), **kw)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(out))
    if jax is not None:
        ref = jax.lax.conv_general_dilated(x.astype(np.float32), w.astype(np.float32),
                                           dimension_numbers=dn, **kw)
        np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-4, atol=1e-4)


def test_kernel_strategies_and_chunks(monkeypatch):
    """Tiny chunks exercise the per-feature chunking; both kernel strategies agree."""
    rng = np.random.default_rng(3)
    monkeypatch.setattr(kernels, "CHUNK_BYTES", 64)
    monkeypatch.setattr(kernels, "EXAMPLE_CHUNK_BYTES", 64)
    for xs, ws, kw in CONV_CASES[:8]:
        x, w = normal(rng, *xs), normal(rng, *ws)
        np.testing.assert_allclose(np.asarray(lc.conv_general_dilated(x, w, **kw)),
                                   _ref(x, w, kw), rtol=1e-10, atol=1e-10)
        if kw.get("feature_group_count", 1) == 1 and 0 not in _ref(x, w, kw).shape:
            nd = x.ndim - 2
            expected = _ref(x, w, kw)
            for path, axis in ((kernels._conv_gather_channels_last, 1),
                               (kernels._conv_gather_batch_last, 0)):
                out = path(np.ascontiguousarray(np.moveaxis(x, axis, -1)), w,
                           kw["window_strides"], _explicit_padding(x.shape, w.shape, kw),
                           kw.get("lhs_dilation") or (1,) * nd,
                           kw.get("rhs_dilation") or (1,) * nd, expected.shape[2:])
                np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)
    x, w = normal(rng, 3, 4, 5, 4), normal(rng, 2, 4, 3, 3)
    args = ((1, 1), ((2, 2), (2, 1)), (2, 1), (1, 2), 1)
    spatial = tuple(kernels.out_size(*a) for a in zip(x.shape[2:], w.shape[2:], args[0],
                                                      *zip(*args[1]), args[2], args[3]))
    gathered = kernels._conv_gather(x, w, args[0], args[1], args[2], args[3], 1, spatial)
    scattered = kernels._conv_scatter(x, w, args[1], args[2], args[3], 1, spatial, x.dtype)
    np.testing.assert_allclose(gathered, scattered, rtol=1e-12, atol=1e-12)


def test_conv_and_conv_with_general_padding():
    rng = np.random.default_rng(4)
    x, w = normal(rng, 2, 3, 6, 6), normal(rng, 4, 3, 3, 3)
    np.testing.assert_allclose(np.asarray(lc.conv(x, w, (1, 2), "SAME")),
                               _ref(x, w, dict(window_strides=(1, 2), padding="SAME")),
                               rtol=1e-12)
    kw = dict(window_strides=(1, 1), padding=((1, 1), (0, 2)), lhs_dilation=(2, 1),
              rhs_dilation=(1, 2))
    np.testing.assert_allclose(
        np.asarray(lc.conv_with_general_padding(x, w, kw["window_strides"], kw["padding"],
                                                kw["lhs_dilation"], kw["rhs_dilation"])),
        _ref(x, w, kw), rtol=1e-12)


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 2), (2, 0))])
@pytest.mark.parametrize("strides", [(1, 1), (2, 2), (3, 2)])
def test_conv_transpose(padding, strides):
    rng = np.random.default_rng(5)
    x, w = normal(rng, 2, 5, 4, 3), normal(rng, 3, 2, 3, 4)      # NHWC, HWIO
    out = lc.conv_transpose(x, w, strides, padding)
    if jax is not None:
        ref = jax.lax.conv_transpose(x.astype(np.float32), w.astype(np.float32), strides,
                                     padding)
        np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-4, atol=1e-4)
    # With transpose_kernel, conv_transpose is the input gradient of the conv by w.
    dn = ("NHWC", "HWIO", "NHWC")
    g = normal(rng, 2, 5, 4, 4)                          # w's 4 output features
    out = lc.conv_transpose(g, w, strides, padding, transpose_kernel=True)
    def fwd(y):
        return lc.conv_general_dilated(y, w, strides, padding, dimension_numbers=dn)
    if tuple(fwd(np.zeros(out.shape)).shape) == g.shape:   # shapes round-trip
        _, pullback = fnad.vjp(fwd, np.zeros(out.shape))
        np.testing.assert_allclose(np.asarray(out), np.asarray(pullback(g)[0]),
                                   rtol=1e-10, atol=1e-10)
    if jax is not None:
        ref = jax.lax.conv_transpose(g.astype(np.float32), w.astype(np.float32), strides,
                                     padding, transpose_kernel=True)
        np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- conv derivatives

GRAD_CASES = [CONV_CASES[i] for i in (1, 2, 3, 4, 7, 8)]


def _small(xs, ws):
    """Fewer batch entries and features keep second-order checks fast."""
    return (1,) + xs[1:], ws


@pytest.mark.parametrize("xs,ws,kw", GRAD_CASES)
def test_conv_grads(xs, ws, kw):
    rng = np.random.default_rng(6)
    xs, ws = _small(xs, ws)
    x, w = normal(rng, *xs), normal(rng, *ws)
    check_grads(lambda x, w: lc.conv_general_dilated(x, w, **kw), (x, w), order=2,
                modes=("fwd", "rev"))


def test_conv_grads_nhwc_and_transpose():
    rng = np.random.default_rng(7)
    x, w = normal(rng, 1, 5, 4, 4), normal(rng, 3, 2, 2, 4)
    dn = ("NHWC", "HWIO", "NHWC")
    check_grads(lambda x, w: lc.conv_general_dilated(x, w, (2, 1), "SAME",
                                                     dimension_numbers=dn,
                                                     feature_group_count=2),
                (x, w), order=2, modes=("fwd", "rev"))
    x, w = normal(rng, 2, 5, 4, 3), normal(rng, 3, 2, 3, 2)
    check_grads(lambda x, w: lc.conv_general_dilated(x, w, (1, 2), ((1, 2), (0, 1)),
                                                     rhs_dilation=(1, 2),
                                                     dimension_numbers=dn),
                (x, w), order=2, modes=("fwd", "rev"))
    y, v = normal(rng, 1, 3, 3, 2), normal(rng, 2, 3, 2, 3)
    check_grads(lambda y, v: lc.conv_transpose(y, v, (2, 2), "SAME"), (y, v), order=2,
                modes=("fwd", "rev"))


def test_conv_grad_needs_only_one_operand():
    rng = np.random.default_rng(8)
    x, w = normal(rng, 2, 3, 6, 6), normal(rng, 4, 3, 3, 3)
    loss = lambda w: (lc.conv(x, w, (1, 1), "SAME") ** 2).sum()  # noqa: E731
    g = fnad.grad(loss)(w)
    if jax is not None:
        ref = jax.grad(lambda w: (jax.lax.conv(jnp.asarray(x, jnp.float32), w, (1, 1),
                                               "SAME") ** 2).sum())(w.astype(np.float32))
        np.testing.assert_allclose(np.asarray(g), np.asarray(ref), rtol=1e-3, atol=1e-3)
    check_grads(loss, (w,), order=1)


# --------------------------------------------------------------------------- pooling

POOL_CASES = [
    ((2, 3, 6, 6), (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
    ((2, 3, 7, 6), (1, 1, 3, 2), (1, 1, 2, 1), "SAME"),
    ((2, 5, 5, 3), (1, 2, 2, 1), (1, 1, 2, 1), ((0, 0), (1, 0), (0, 1), (0, 0))),
    ((3, 4, 7, 6), (2, 1, 3, 2), (1, 2, 2, 1), ((0, 1), (0, 0), (1, 2), (0, -1))),
    ((4, 9), (1, 3), (1, 2), "SAME"),
]


def spaced(rng, shape):
    """Distinct values at least 0.1 apart: finite differences never cross a tie."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1
            + rng.uniform(0, 0.01, shape))


@pytest.mark.parametrize("op", ["max", "min", "add"])
@pytest.mark.parametrize("shape,window,strides,padding", POOL_CASES)
def test_reduce_window_values(op, shape, window, strides, padding):
    rng = np.random.default_rng(9)
    x = normal(rng, *shape)
    init = {"max": -np.inf, "min": np.inf, "add": 0.0}[op]
    out = lc.reduce_window(x, init, op, window, strides, padding)
    pads = lc.padtype_to_pads(shape, window, strides, padding) \
        if isinstance(padding, str) else padding
    np.testing.assert_allclose(np.asarray(out), ref_reduce_window(x, op, window, strides, pads),
                               rtol=1e-12)
    # An init value that is not the identity is combined once per window.
    out = lc.reduce_window(x, 0.25, op, window, strides, padding)
    combine = {"max": np.maximum, "min": np.minimum, "add": np.add}[op]
    np.testing.assert_allclose(
        np.asarray(out), combine(ref_reduce_window(x, op, window, strides, pads), 0.25),
        rtol=1e-12)
    if jax is not None:
        fn = {"max": jax.lax.max, "min": jax.lax.min, "add": jax.lax.add}[op]
        for iv in (init, 0.25):
            ref = jax.lax.reduce_window(x.astype(np.float32), np.float32(iv), fn, window,
                                        strides, padding)
            np.testing.assert_allclose(
                np.asarray(lc.reduce_window(x.astype(np.float32), iv, op, window, strides,
                                            padding)), np.asarray(ref), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,window,strides,padding", POOL_CASES[:4])
def test_pooling_grads(shape, window, strides, padding):
    rng = np.random.default_rng(10)
    x = spaced(rng, (1,) + shape[1:])
    for pool in (lc.max_pool, lc.avg_pool):
        check_grads(lambda x: pool(x, window, strides, padding), (x,), order=2,
                    modes=("fwd", "rev"))
    check_grads(lambda x: lc.reduce_window(x, np.inf, "min", window, strides, padding), (x,),
                order=2, modes=("fwd", "rev"))


def test_max_pool_ties_pick_the_first_and_match_jax():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [3.0, 0.0, 1.0, 2.0]])
    g = fnad.grad(lambda x: lc.max_pool(x, (2, 2), (2, 2), "VALID").sum())(x)
    np.testing.assert_array_equal(np.asarray(g), [[0, 1, 1, 0], [0, 0, 0, 0]])
    if jax is not None:
        ref = jax.grad(lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (2, 2),
                                                       (2, 2), "VALID").sum())(x)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(ref))


def test_pool_helpers():
    rng = np.random.default_rng(11)
    x = normal(rng, 2, 6, 5, 3)                                  # NHWC
    full = lc.max_pool(x, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
    spatial = lc.max_pool(x, (2, 2), (2, 2), "SAME")             # flax-style window
    np.testing.assert_array_equal(np.asarray(full), np.asarray(spatial))
    avg = lc.avg_pool(x, (2, 2), None, "VALID")
    expected = ref_reduce_window(x, "add", (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4) / 4
    np.testing.assert_allclose(np.asarray(avg), expected, rtol=1e-12)
    xi = rng.integers(-50, 50, (2, 6, 5, 3)).astype(np.int32)
    pooled = lc.max_pool(xi, (2, 2))
    assert pooled.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(pooled),
                                  ref_reduce_window(xi, "max", (1, 2, 2, 1), (1, 2, 2, 1),
                                                    [(0, 0)] * 4))
    xt = np.ascontiguousarray(x.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)  # strided view
    np.testing.assert_array_equal(np.asarray(lc.max_pool(xt, (2, 2), (2, 1), "SAME")),
                                  np.asarray(lc.max_pool(x, (2, 2), (2, 1), "SAME")))


# --------------------------------------------------------------------------- vmap, jit, float32

@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (2, 1)])
def test_conv_vmap_matches_loop(in_axes):
    rng = np.random.default_rng(12)
    kw = dict(window_strides=(2, 1), padding=((1, 0), (2, 1)), lhs_dilation=(1, 2),
              rhs_dilation=(2, 1), feature_group_count=2)
    f = lambda x, w: lc.conv_general_dilated(x, w, **kw)  # noqa: E731
    xs, ws = normal(rng, 3, 2, 4, 6, 5), normal(rng, 3, 6, 2, 3, 2)
    a = xs[0] if in_axes[0] is None else np.moveaxis(xs, 0, in_axes[0])
    b = ws[0] if in_axes[1] is None else np.moveaxis(ws, 0, in_axes[1])
    out = fnad.vmap(f, in_axes=in_axes)(a, b)
    pick = lambda v, ax, i: v if ax is None else np.take(v, i, ax)  # noqa: E731
    loop = np.stack([np.asarray(f(pick(a, in_axes[0], i), pick(b, in_axes[1], i)))
                     for i in range(3)])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-12, atol=1e-12)


def test_vmap_of_grad_gives_per_example_gradients():
    rng = np.random.default_rng(13)
    w, xs = normal(rng, 4, 2, 3, 3), normal(rng, 5, 2, 6, 6)
    dn = None

    def loss(w, x):
        y = lc.conv_general_dilated(x[None], w, (1, 1), "SAME", dimension_numbers=dn)
        return (lc.max_pool(y, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") ** 2).sum()
    per_example = fnad.vmap(fnad.grad(loss), in_axes=(None, 0))(w, xs)
    loop = np.stack([np.asarray(fnad.grad(loss)(w, x)) for x in xs])
    np.testing.assert_allclose(np.asarray(per_example), loop, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("pool", ["max", "avg", "min"])
def test_pool_vmap_matches_loop(pool):
    rng = np.random.default_rng(14)
    xs = spaced(rng, (3, 2, 5, 4))
    if pool == "min":
        f = lambda x: lc.reduce_window(x, np.inf, "min", (1, 2, 2), (1, 2, 1), "SAME")  # noqa: E731
    else:
        f = lambda x: getattr(lc, pool + "_pool")(x, (1, 2, 2), (1, 2, 1), "SAME")  # noqa: E731
    np.testing.assert_allclose(np.asarray(fnad.vmap(f, in_axes=1)(xs)),
                               np.stack([np.asarray(f(xs[:, i])) for i in range(xs.shape[1])]))
    # Derivatives under vmap: both operands of the selection primitives batched.
    for fwd in (True, False):
        if fwd:
            d = lambda x: fnad.jvp(f, (x,), (x * 0.5,))[1]  # noqa: E731
        else:
            d = lambda x: fnad.grad(lambda y: (f(y) ** 3).sum())(x)  # noqa: E731
        np.testing.assert_allclose(np.asarray(fnad.vmap(d)(xs)),
                                   np.stack([np.asarray(d(x)) for x in xs]), rtol=1e-12)


def test_jit_matches_eager():
    rng = np.random.default_rng(15)
    x, w = normal(rng, 2, 7, 6, 4), normal(rng, 3, 3, 2, 6)
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(x, w):
        y = lc.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn,
                                    feature_group_count=2)
        return (lc.max_pool(y, (2, 2), None, "SAME") ** 2).sum() \
            + lc.avg_pool(y, (3, 2), (1, 1), "VALID").sum()
    np.testing.assert_allclose(np.asarray(fnad.jit(loss)(x, w)), np.asarray(loss(x, w)),
                               rtol=1e-12)
    grads = fnad.jit(fnad.grad(loss, argnums=(0, 1)))(x, w)
    for a, b in zip(grads, fnad.grad(loss, argnums=(0, 1))(x, w)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def test_float32_in_float32_out():
    rng = np.random.default_rng(16)
    x = normal(rng, 2, 3, 8, 8).astype(np.float32)
    w = normal(rng, 4, 3, 3, 3).astype(np.float32)

    def loss(x, w):
        y = lc.conv(x, w, (1, 1), "SAME")
        return lc.avg_pool(lc.max_pool(y, (1, 1, 2, 2)), (1, 1, 2, 2)).sum()
    out = lc.conv(x, w, (1, 1), "SAME")
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), _ref(x.astype(np.float64), w.astype(np.float64),
                                                     dict(window_strides=(1, 1),
                                                          padding="SAME")),
                               rtol=1e-4, atol=1e-4)
    gx, gw = fnad.grad(loss, argnums=(0, 1))(x, w)
    assert gx.dtype == gw.dtype == np.float32
    gx64, gw64 = fnad.grad(loss, argnums=(0, 1))(x.astype(np.float64), w.astype(np.float64))
    np.testing.assert_allclose(np.asarray(gw), np.asarray(gw64), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(gx64), rtol=1e-4, atol=1e-4)
    assert lc.conv(x, w, (1, 1), "SAME", preferred_element_type=np.float64).dtype == np.float64


# --------------------------------------------------------------------------- errors

def test_errors_name_the_problem():
    x, w = np.zeros((2, 3, 8, 8)), np.zeros((4, 5, 3, 3))
    with pytest.raises(ShapeError, match=r"\(2, 3, 8, 8\).*\(4, 5, 3, 3\)"):
        lc.conv(x, w, (1, 1), "SAME")
    with pytest.raises(ShapeError, match="feature_group_count=2"):
        lc.conv_general_dilated(np.zeros((2, 4, 8, 8)), np.zeros((3, 2, 3, 3)), (1, 1),
                                "SAME", feature_group_count=2)
    with pytest.raises(ShapeError, match="dimension_numbers.*'NHWX'"):
        lc.conv_general_dilated(x, np.zeros((3, 3, 3, 4)), (1, 1), "SAME",
                                dimension_numbers=("NHWX", "HWIO", "NHWC"))
    with pytest.raises(ShapeError, match="same spatial axes"):
        lc.conv_general_dilated(x, np.zeros((3, 3, 3, 4)), (1, 1), "SAME",
                                dimension_numbers=("NHWC", "HDIO", "NHWC"))
    with pytest.raises(ShapeError, match="permutation"):
        lc.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=((0, 1, 2, 2),) * 3)
    with pytest.raises(ShapeError, match="same rank"):
        lc.conv(np.zeros((2, 3, 8)), w, (1,), "SAME")
    with pytest.raises(ShapeError, match="window_strides"):
        lc.conv(x, np.zeros((4, 3, 3, 3)), (1, 1, 1), "SAME")
    with pytest.raises(ValueError, match="padding"):
        lc.conv(x, np.zeros((4, 3, 3, 3)), (1, 1), "FULL")
    with pytest.raises(DTypeError, match="float32.*float64"):
        lc.conv(x.astype(np.float32), np.zeros((4, 3, 3, 3)), (1, 1), "SAME")
    with pytest.raises(NotImplementedError, match="batch_group_count"):
        lc.conv_general_dilated(x, np.zeros((4, 3, 3, 3)), (1, 1), "SAME", batch_group_count=2)
    with pytest.raises(NotImplementedError, match="computation"):
        lc.reduce_window(x, 1.0, np.multiply, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    with pytest.raises(ShapeError, match="window_dimensions"):
        lc.reduce_window(x, 0.0, "add", (2, 2), (1, 1), "VALID")
