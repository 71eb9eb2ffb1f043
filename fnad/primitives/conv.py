"""Convolution and windowed reductions (pooling).

conv_general_dilated works in one layout, lhs (N, C, *spatial), rhs (O, C / groups,
*window), out (N, O, *spatial); fnad.lax.convolution transposes other layouts into it. It
is linear in each operand. Its transposes are convolutions too (the standard
formulas, as in JAX's convolution.py): the input cotangent convolves the output
cotangent, dilated by the strides and padded, with the flipped kernel; the kernel
cotangent convolves the input with the output cotangent, batch and feature axes
exchanged. Written with the primitive itself, they differentiate again.

Windowed max/min pass a tangent through the position each window selects (its
first extreme, the same choice in both modes): select_and_gather_add reads it,
select_and_scatter_add, its transpose, writes to it. A windowed sum is transposed
by padding (with the strides as interior padding) and summing again.
"""
import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..core import Primitive
from ..abstract import ShapedArray, check_same_dtype
from ..errors import ShapeError, DTypeError
from ..kernels.cpu import conv as K, window as W
from . import shape as S
from ._rules import add_tangents, batch_size, zeros
from .structural import moveaxis_to, move_batch_axes
from . import onnx_rules as onnx


# --------------------------------------------------------------------------- convolution

def _conv_shape(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                feature_group_count):
    dtype = check_same_dtype("conv_general_dilated", [lhs, rhs])
    if dtype_kind(dtype) not in "iuf":
        raise DTypeError(f"conv_general_dilated needs numeric operands, got {lhs} and {rhs}")
    nd = lhs.ndim - 2
    groups = feature_group_count
    problem = None
    if lhs.ndim != rhs.ndim or lhs.ndim < 3:
        problem = "operands need the same rank, at least 3 (batch, feature, spatial...)"
    elif not all(len(p) == nd for p in (window_strides, padding, lhs_dilation, rhs_dilation)):
        problem = f"strides, padding and dilations need one entry per spatial axis ({nd})"
    elif min(window_strides + lhs_dilation + rhs_dilation, default=1) < 1 or groups < 1:
        problem = "strides, dilations and feature_group_count must be positive"
    elif lhs.shape[1] != rhs.shape[1] * groups or rhs.shape[0] % groups:
        problem = (f"lhs features ({lhs.shape[1]}) must equal rhs input features "
                   f"({rhs.shape[1]}) times feature_group_count ({groups}), and rhs output "
                   f"features ({rhs.shape[0]}) must be a multiple of it")
    if problem:
        raise ShapeError(f"conv_general_dilated: {problem}; lhs {lhs} (N, C, spatial...), "
                         f"rhs {rhs} (O, I, spatial...), window_strides={window_strides}, "
                         f"padding={padding}, lhs_dilation={lhs_dilation}, "
                         f"rhs_dilation={rhs_dilation}, feature_group_count={groups}")
    spatial = tuple(K.out_size(*a) for a in zip(lhs.shape[2:], rhs.shape[2:], window_strides,
                                                *zip(*padding), lhs_dilation, rhs_dilation))
    return ShapedArray((lhs.shape[0], rhs.shape[0]) + spatial, dtype)


def conv(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, feature_group_count):
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=tuple(window_strides), padding=tuple(padding),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(rhs_dilation),
        feature_group_count=feature_group_count)


def _conv_jvp(primals, tangents, **params):
    lhs, rhs = primals
    t_lhs, t_rhs = tangents
    bind = conv_general_dilated_p.bind
    return bind(lhs, rhs, **params), add_tangents(
        None if t_lhs is None else bind(t_lhs, rhs, **params),
        None if t_rhs is None else bind(lhs, t_rhs, **params))


def _split_groups(x, groups, swap):
    """(A, B, *rest) -> (B/groups, groups * A, *rest) when `swap` is "features-first"
    for the lhs, or (groups * B/groups, A, *rest) for a kernel built from g."""
    a, b, rest = x.shape[0], x.shape[1], tuple(x.shape[2:])
    x = S.reshape(x, (a, groups, b // groups) + rest)
    tail = tuple(range(3, x.ndim))
    if swap == "lhs":       # (N, G, Cg, ...) -> (Cg, G, N, ...) -> (Cg, G * N, ...)
        return S.reshape(S.transpose(x, (2, 1, 0) + tail), (b // groups, groups * a) + rest)
    # (N, G, Og, ...) -> (G, Og, N, ...) -> (G * Og, N, ...)
    return S.reshape(S.transpose(x, (1, 2, 0) + tail), (b, a) + rest)


def _lhs_cotangent(g, rhs, lhs_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                   feature_group_count):
    """Each input element reached output y through window position k where
    y * stride + k * rhs_dilation = lo + i * lhs_dilation: a convolution of g, dilated
    by the strides, with the flipped kernel, strided by lhs_dilation."""
    groups = feature_group_count
    o, cg = rhs.shape[:2]
    window, nd = tuple(rhs.shape[2:]), rhs.ndim - 2
    w = S.reshape(rhs, (groups, o // groups, cg) + window)
    w = S.transpose(w, (0, 2, 1) + tuple(range(3, nd + 3)))
    w = S.rev(S.reshape(w, (groups * cg, o // groups) + window), tuple(range(2, nd + 2)))
    pads = []
    for n, k, n_out, (lo, _), s, a, b in zip(lhs_shape[2:], window, g.shape[2:], padding,
                                             window_strides, lhs_dilation, rhs_dilation):
        span = (k - 1) * b + 1
        pads.append((span - 1 - lo, (n - 1) * a + lo - (n_out - 1) * s))
    return conv(g, w, lhs_dilation, pads, window_strides, rhs_dilation, groups)


def _rhs_cotangent(g, lhs, rhs_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                   feature_group_count):
    """Kernel element k meets input i and output y when y * stride + k * rhs_dilation
    = lo + i * lhs_dilation: a convolution of the input (features as batch, batch as
    features) with g as the kernel, dilated by the strides, strided by rhs_dilation,
    padded at the end to exactly the kernel's extent."""
    groups = feature_group_count
    window = tuple(rhs_shape[2:])
    pads = []
    for n, k, n_out, (lo, _), s, a, b in zip(lhs.shape[2:], window, g.shape[2:], padding,
                                             window_strides, lhs_dilation, rhs_dilation):
        pads.append((lo, (k - 1) * b + (n_out - 1) * s + 1 - ((n - 1) * a + 1) - lo))
    out = conv(_split_groups(lhs, groups, "lhs"), _split_groups(g, groups, "kernel"),
               rhs_dilation, pads, lhs_dilation, window_strides, groups)
    return S.transpose(out, (1, 0) + tuple(range(2, out.ndim)))


def _conv_vjp(g, out, lhs, rhs, *, needed=(True, True), **params):
    empty = 0 in lhs.shape or 0 in rhs.shape or 0 in g.shape
    ct_lhs = ct_rhs = None
    if needed[0]:
        ct_lhs = zeros(lhs.shape, g.dtype) if empty else \
            _lhs_cotangent(g, rhs, lhs.shape, **params)
    if needed[1]:
        ct_rhs = zeros(rhs.shape, g.dtype) if empty else \
            _rhs_cotangent(g, lhs, rhs.shape, **params)
    return ct_lhs, ct_rhs


def _conv_batch(args, batch_dims, **params):
    """Fold the vmapped axis into the batch (lhs only), the output features (rhs
    only), or the feature groups (both)."""
    lhs, rhs = args
    lhs_dim, rhs_dim = batch_dims
    groups = params["feature_group_count"]
    bind = conv_general_dilated_p.bind
    if rhs_dim is None:
        lhs = moveaxis_to(lhs, lhs_dim, 0)
        b, n = lhs.shape[:2]
        out = bind(S.reshape(lhs, (b * n,) + tuple(lhs.shape[2:])), rhs, **params)
        return S.reshape(out, (b, n) + tuple(out.shape[1:])), 0
    rhs = moveaxis_to(rhs, rhs_dim, 0)
    b, o = rhs.shape[:2]
    window = tuple(rhs.shape[2:])      # (C / groups, *window)
    if lhs_dim is None:
        # Output features ordered (group, vmapped, feature in group) keep the groups.
        w = S.reshape(rhs, (b, groups, o // groups) + window)
        w = S.transpose(w, (1, 0) + tuple(range(2, w.ndim)))
        out = bind(lhs, S.reshape(w, (groups * b * (o // groups),) + window), **params)
        n, spatial = out.shape[0], tuple(out.shape[2:])
        out = S.reshape(out, (n, groups, b, o // groups) + spatial)
        out = S.transpose(out, (0, 2, 1) + tuple(range(3, out.ndim)))
        return S.reshape(out, (n, b, o) + spatial), 1
    lhs = moveaxis_to(lhs, lhs_dim, 1)
    n, c = lhs.shape[0], lhs.shape[2]
    params = dict(params, feature_group_count=b * groups)
    out = bind(S.reshape(lhs, (n, b * c) + tuple(lhs.shape[3:])),
               S.reshape(rhs, (b * o,) + window), **params)
    return S.reshape(out, (n, b, o) + tuple(out.shape[2:])), 1


# ONNX lowerings (see fnad/primitives/onnx_rules.py for the builder convention)

def _onnx_conv(b, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                         feature_group_count, **params):
    if any(d != 1 for d in lhs_dilation):
        b.fail("a convolution with lhs_dilation (a transposed convolution) has no lowering")
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        b.fail(f"negative convolution padding {padding} has no ONNX Conv form")
    return b.op("Conv", lhs, rhs, strides=list(window_strides),
                pads=[lo for lo, _ in padding] + [hi for _, hi in padding],
                dilations=list(rhs_dilation), group=int(feature_group_count))


def _onnx_pool_layout(b, window_dimensions, window_strides, padding):
    """ONNX pools take (N, C, spatial...). The axes without a window (size 1, stride 1,
    no padding) move in front by a transpose and become N and C: one or none get
    unit axes added, more than two are merged into N by a reshape (its sizes read at
    run time). Returns (the windowed axes, to_pool(v) -> (pooled layout, v
    transposed), from_pool(z, transposed) -> z in the operand's layout)."""
    n = len(window_dimensions)
    plain = [k for k in range(n) if window_dimensions[k] == 1 and window_strides[k] == 1
             and tuple(padding[k]) == (0, 0)]
    spatial = [k for k in range(n) if k not in plain]
    perm = plain + spatial
    moved = perm != list(range(n))
    m = len(plain)

    def to_pool(v):
        t = b.op("Transpose", v, perm=perm) if moved else v
        if m < 2:
            return b.op("Unsqueeze", t, b.ints(list(range(2 - m)))), t
        if m > 2:
            shape = b.op("Concat", b.ints([-1, 1]), b.op("Shape", t, start=m), axis=0)
            return b.op("Reshape", t, shape), t
        return t, t

    def from_pool(z, t):
        if m < 2:
            z = b.op("Squeeze", z, b.ints(list(range(2 - m))))
        elif m > 2:
            shape = b.op("Concat", b.op("Shape", t, start=0, end=m),
                         b.op("Shape", z, start=2), axis=0)
            z = b.op("Reshape", z, shape)
        return b.op("Transpose", z, perm=[int(k) for k in np.argsort(perm)]) if moved else z

    return spatial, to_pool, from_pool


def _onnx_pool(b, x, window_dimensions, window_strides, padding, pool):
    spatial, to_pool, from_pool = _onnx_pool_layout(b, window_dimensions, window_strides,
                                                    padding)
    if not spatial:
        return b.op("Identity", x)
    y, t = to_pool(x)
    y = pool(y, kernel_shape=[window_dimensions[k] for k in spatial],
             strides=[window_strides[k] for k in spatial],
             pads=[padding[k][0] for k in spatial] + [padding[k][1] for k in spatial])
    return from_pool(y, t)


def _onnx_window_max(b, x, window_dimensions, window_strides, padding):
    if not onnx.is_float(b, x):
        b.fail("MaxPool takes floating-point values only")
    return _onnx_pool(b, x, window_dimensions, window_strides, padding,
                 lambda y, **a: b.op("MaxPool", y, **a))


def _onnx_window_min(b, x, window_dimensions, window_strides, padding):
    if not onnx.is_float(b, x):
        b.fail("MaxPool takes floating-point values only")
    return b.op("Neg", _onnx_pool(b, b.op("Neg", x), window_dimensions, window_strides, padding,
                             lambda y, **a: b.op("MaxPool", y, **a)))


def _onnx_window_sum(b, x, window_dimensions, window_strides, padding):
    if not onnx.is_float(b, x):
        b.fail("AveragePool takes floating-point values only")
    size = int(np.prod([d for d in window_dimensions]))
    avg = _onnx_pool(b, x, window_dimensions, window_strides, padding,
                lambda y, **a: b.op("AveragePool", y, count_include_pad=1, **a))
    return b.op("Mul", avg, b.scalar_like(size, x))




def _onnx_select_and_scatter_add(b, source, x, window_dimensions, window_strides, padding,
                           largest=True):
    """The max pool's transpose: each window's value of `source` is added where the
    window's extremum sits. MaxPool's second output gives those places as flat indices
    into its (N, C, spatial) input, so ScatterElements adds `source` there."""
    if not onnx.is_float(b, x):
        b.fail("MaxPool takes floating-point values only")
    spatial, to_pool, from_pool = _onnx_pool_layout(b, window_dimensions, window_strides,
                                                    padding)
    if not spatial:
        return b.op("Identity", source)
    y, t = to_pool(x if largest else b.op("Neg", x))
    _, where = b.op("MaxPool", y, kernel_shape=[window_dimensions[k] for k in spatial],
                    strides=[window_strides[k] for k in spatial],
                    pads=[padding[k][0] for k in spatial] + [padding[k][1] for k in spatial],
                    outputs=2)
    g, _ = to_pool(source)
    flat = b.ints([-1])
    zeros = b.op("Reshape", b.op("ConstantOfShape", b.op("Shape", y),
                                 value=b.tensor(np.zeros(1, b.dtype(x)))), flat)
    summed = b.op("ScatterElements", zeros, b.op("Reshape", where, flat),
                  b.op("Reshape", g, flat), axis=0, reduction="add")
    return from_pool(b.op("Reshape", summed, b.op("Shape", y)), t)


def _onnx_select_and_gather_add(b, t, x, window_dimensions, window_strides, padding,
                                largest=True):
    """The max pool's tangent: each window takes `t` where the window's extremum of x
    sits (MaxPool's indices, read with Gather from the flattened tangent)."""
    if not onnx.is_float(b, x):
        b.fail("MaxPool takes floating-point values only")
    spatial, to_pool, from_pool = _onnx_pool_layout(b, window_dimensions, window_strides,
                                                    padding)
    if not spatial:
        return b.op("Identity", t)
    y, _ = to_pool(x if largest else b.op("Neg", x))
    _, where = b.op("MaxPool", y, kernel_shape=[window_dimensions[k] for k in spatial],
                    strides=[window_strides[k] for k in spatial],
                    pads=[padding[k][0] for k in spatial] + [padding[k][1] for k in spatial],
                    outputs=2)
    tangent, moved = to_pool(t)
    picked = b.op("Gather", b.op("Reshape", tangent, b.ints([-1])), where, axis=0)
    return from_pool(picked, moved)


def _onnx_select_and_gather_add_min(b, t, x, **params):
    return _onnx_select_and_gather_add(b, t, x, largest=False, **params)


def _onnx_select_and_scatter_add_min(b, source, x, **params):
    return _onnx_select_and_scatter_add(b, source, x, largest=False, **params)


conv_general_dilated_p = Primitive(
    "conv_general_dilated", abstract_eval=_conv_shape, impl=K.conv, jvp=_conv_jvp,
    vjp=_conv_vjp, batch=_conv_batch, selective_vjp=True, onnx=_onnx_conv,
    precision="low")


# --------------------------------------------------------------------------- windows

def _window_shape(name):
    def abstract_eval(x, *more, window_dimensions, window_strides, padding, **_):
        if more:
            check_same_dtype(name, [x] + list(more))
            if any(m.shape != x.shape for m in more):
                raise ShapeError(f"{name}: operands {x} and {more[0]} must have one shape")
        if dtype_kind(x.dtype) not in "iuf":
            raise DTypeError(f"{name} needs a numeric operand, got {x}")
        if not len(window_dimensions) == len(window_strides) == len(padding) == x.ndim or \
                min(window_dimensions + window_strides, default=1) < 1:
            raise ShapeError(f"{name}: window_dimensions {window_dimensions}, window_strides "
                             f"{window_strides} and padding {padding} need one positive "
                             f"entry per axis of the operand {x}")
        if any(n + lo + hi < 0 for n, (lo, hi) in zip(x.shape, padding)):
            raise ShapeError(f"{name}: padding {padding} crops more than the operand {x}")
        return ShapedArray(tuple(K.out_size(n, k, s, lo, hi) for n, k, s, (lo, hi) in zip(
            x.shape, window_dimensions, window_strides, padding)), x.dtype)
    return abstract_eval


def _add_window_axis(params, axis):
    """The params with a window of 1 inserted for a vmapped axis."""
    def ins(t, v):
        return t[:axis] + (v,) + t[axis:]
    return dict(params, window_dimensions=ins(params["window_dimensions"], 1),
                window_strides=ins(params["window_strides"], 1),
                padding=ins(params["padding"], (0, 0)))


def _windowed(name, **slots):
    """A primitive over windows of its operands (one, or two of one shape). Its vmap
    rule gives the batch axis a window of 1: where it is for one operand; at the
    front for two, an unbatched one broadcast."""
    def batch(args, batch_dims, **params):
        if len(args) == 1:
            (x,), (d,) = args, batch_dims
            return prim.bind(x, **_add_window_axis(params, d)), d
        moved = move_batch_axes(args, batch_dims, 0, batch_size(args, batch_dims))
        return prim.bind(*moved, **_add_window_axis(params, 0)), 0

    prim = Primitive(name, batch=batch, **slots)
    return prim


def _sum_vjp(g, out, x, *, window_dimensions, window_strides, padding):
    """x[i] (padded position lo + i) is in the windows y with y * s <= lo + i < y * s + k:
    pad g by k - 1 - lo below, interior s - 1, to length n + k - 1, and sum windows."""
    config = []
    for n, k, s, (lo, _), m in zip(x.shape, window_dimensions, window_strides, padding,
                                   g.shape):
        if m == 0:
            return (zeros(x.shape, g.dtype),)
        config.append((k - 1 - lo, n + lo - (m - 1) * s - 1, s - 1))
    padded = S.pad(g, np.zeros((), g.dtype), config)
    return (reduce_window_sum(padded, window_dimensions, (1,) * x.ndim,
                              ((0, 0),) * x.ndim),)


reduce_window_sum_p = _windowed(
    "reduce_window_sum", abstract_eval=_window_shape("reduce_window_sum"),
    impl=lambda x, window_dimensions, window_strides, padding: W.reduce_window(
        x, W.SUM, window_dimensions, window_strides, padding),
    jvp=lambda primals, tangents, **p: (reduce_window_sum_p.bind(primals[0], **p),
                                        reduce_window_sum_p.bind(tangents[0], **p)),
    vjp=_sum_vjp, onnx=_onnx_window_sum)


def _window_params(window_dimensions, window_strides, padding):
    return dict(window_dimensions=tuple(int(k) for k in window_dimensions),
                window_strides=tuple(int(s) for s in window_strides),
                padding=tuple((int(lo), int(hi)) for lo, hi in padding))


def reduce_window_sum(x, window_dimensions, window_strides, padding):
    return reduce_window_sum_p.bind(x, **_window_params(window_dimensions, window_strides,
                                                        padding))


def _extremum(name, op, onnx=None, onnx_gather=None, onnx_scatter=None):
    """reduce_window_max / _min and the two selection primitives their rules use."""
    def impl(x, window_dimensions, window_strides, padding):
        return W.reduce_window(x, op, window_dimensions, window_strides, padding)

    def gather(t, x, **p):
        return gather_p.bind(t, x, **p)

    def scatter(g, x, **p):
        return scatter_p.bind(g, x, **p)

    reduce_p = _windowed(
        f"reduce_window_{name}", abstract_eval=_window_shape(f"reduce_window_{name}"),
        impl=impl,
        jvp=lambda primals, tangents, **p: (reduce_p.bind(primals[0], **p),
                                            gather(tangents[0], primals[0], **p)),
        vjp=lambda g, out, x, **p: (scatter(g, x, **p),), onnx=onnx)

    def scatter_shape(g, x, **p):
        expected = _window_shape(f"select_and_scatter_add_{name}")(x, **p)
        if g.shape != expected.shape or g.dtype != x.dtype:
            raise ShapeError(f"select_and_scatter_add_{name}: source {g} must match the "
                             f"windows of the operand {x}: {expected}")
        return ShapedArray(x.shape, x.dtype)

    # Linear in the first operand; the second only chooses positions (no derivative).
    gather_p = _windowed(
        f"select_and_gather_add_{name}", abstract_eval=_window_shape(
            f"select_and_gather_add_{name}"),
        impl=lambda t, x, window_dimensions, window_strides, padding: W.select_and_gather(
            t, x, op, window_dimensions, window_strides, padding),
        jvp=lambda primals, tangents, **p: (
            gather(*primals, **p), None if tangents[0] is None else gather(
                tangents[0], primals[1], **p)),
        vjp=lambda g, out, t, x, **p: (scatter(g, x, **p), None), onnx=onnx_gather)
    scatter_p = _windowed(
        f"select_and_scatter_add_{name}", abstract_eval=scatter_shape,
        impl=lambda g, x, window_dimensions, window_strides, padding: W.select_and_scatter(
            g, x, op, window_dimensions, window_strides, padding),
        jvp=lambda primals, tangents, **p: (
            scatter(*primals, **p), None if tangents[0] is None else scatter(
                tangents[0], primals[1], **p)),
        vjp=lambda ct, out, g, x, **p: (gather(ct, x, **p), None), onnx=onnx_scatter)
    return reduce_p, gather_p, scatter_p


reduce_window_max_p, select_and_gather_add_max_p, select_and_scatter_add_max_p = \
    _extremum("max", W.MAX, onnx=_onnx_window_max, onnx_gather=_onnx_select_and_gather_add,
              onnx_scatter=_onnx_select_and_scatter_add)
reduce_window_min_p, select_and_gather_add_min_p, select_and_scatter_add_min_p = \
    _extremum("min", W.MIN, onnx=_onnx_window_min,
              onnx_gather=_onnx_select_and_gather_add_min,
              onnx_scatter=_onnx_select_and_scatter_add_min)


def reduce_window_max(x, window_dimensions, window_strides, padding):
    return reduce_window_max_p.bind(x, **_window_params(window_dimensions, window_strides,
                                                        padding))


def reduce_window_min(x, window_dimensions, window_strides, padding):
    return reduce_window_min_p.bind(x, **_window_params(window_dimensions, window_strides,
                                                        padding))
