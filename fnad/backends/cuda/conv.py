"""Convolution and windowed reductions (pooling) on the GPU: one thread per output
element, reading its window directly (no patch matrix).

Every kernel sees its operands flat (a convolution's as (batch, features, spatial))
and the geometry as per-axis tuples: sizes, strides and paddings are kernel
arguments, so a kernel compiles once per dtype and rank. Output position y along an
axis reads window position k from the padded, dilated input at y * stride +
k * rhs_dilation; `_source` maps that back to the operand, or to nothing (padding,
or a hole between dilated elements).

Windows of max/min select their first extreme (the first NaN wins), as the cpu
kernels do. select_and_scatter_add gathers instead of scattering: a thread per
operand element sums the cotangents of the windows that selected it, in window
order, so overlapping windows need no atomics, every dtype works, and the sums are
deterministic and added in the cpu's order."""
import numpy as np

from ...primitives import conv as C
from ...kernels.cpu.conv import out_size
from ...kernels.cpu.window import MAX, MIN, SUM, identity
from . import runtime
from .registry import implements
from .dot import accumulator
from .scalar_functions import maximum, minimum
from .shape import filled

cuda = runtime.cuda()


@cuda.jit(device=True)
def _source(y, q, in_shape, window, out_shape, strides, pad_lo, lhs_dilation,
            rhs_dilation):
    """The flat operand offset that flat output position y reads at flat window
    position q, or -1 where that is padding or a dilation hole."""
    offset = 0
    scale = 1
    for d in range(len(in_shape) - 1, -1, -1):
        p = (y % out_shape[d]) * strides[d] + (q % window[d]) * rhs_dilation[d] - pad_lo[d]
        y //= out_shape[d]
        q //= window[d]
        if p < 0 or p % lhs_dilation[d] != 0:
            return -1
        p //= lhs_dilation[d]
        if p >= in_shape[d]:
            return -1
        offset += p * scale
        scale *= in_shape[d]
    return offset


# --------------------------------------------------------------------------- convolution

@cuda.jit(cache=True)
def _conv_kernel(lhs, rhs, out, zero, in_shape, window, out_shape, strides, pad_lo,
                 lhs_dilation, rhs_dilation):
    """lhs (N, C, S), rhs (O, C / groups, K), out (N, O, P): S, K and P flat spatial."""
    batch, features, _ = lhs.shape
    outs, group_features, window_size = rhs.shape
    positions = out.shape[2]
    outs_per_group = outs // (features // group_features)
    i = cuda.grid(1)
    while i < batch * outs * positions:
        y = i % positions
        o = (i // positions) % outs
        n = i // (positions * outs)
        first = (o // outs_per_group) * group_features
        acc = zero
        for q in range(window_size):
            src = _source(y, q, in_shape, window, out_shape, strides, pad_lo, lhs_dilation,
                          rhs_dilation)
            if src >= 0:
                for c in range(group_features):
                    acc += (zero + lhs[n, first + c, src]) * rhs[o, c, q]
        out[n, o, y] = acc
        i += cuda.gridsize(1)


@implements(C.conv_general_dilated_p)
def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                         feature_group_count):
    in_shape, window = tuple(lhs.shape[2:]), tuple(rhs.shape[2:])
    out_shape = tuple(out_size(n, k, s, lo, hi, a, b) for n, k, s, (lo, hi), a, b in zip(
        in_shape, window, window_strides, padding, lhs_dilation, rhs_dilation))
    n, o = lhs.shape[0], rhs.shape[0]
    out = runtime.empty((n, o) + out_shape, lhs.dtype)
    if out.size == 0:
        return out
    if lhs.size == 0 or rhs.size == 0:      # nothing to sum (no features, or padding)
        return filled(out.shape, 0, out.dtype)
    positions = int(np.prod(out_shape, dtype=np.int64))
    runtime.launch(
        _conv_kernel, out.size, lhs.reshape(n, lhs.shape[1], lhs.size // (n * lhs.shape[1])),
        rhs.reshape(o, rhs.shape[1], rhs.size // (o * rhs.shape[1])),
        out.reshape(n, o, positions),
        accumulator(lhs.dtype), in_shape, window, out_shape, tuple(window_strides),
        tuple(lo for lo, _ in padding), tuple(lhs_dilation), tuple(rhs_dilation))
    return out


# --------------------------------------------------------------------------- windows

class _Windows:
    """A windowed primitive's operand shape and params as the trailing kernel
    arguments: shape, window, out_shape, strides, pad_lo, and ones (the unit
    dilations `_source` takes). The operands go flat; a 0-d operand is a vector of
    one element."""

    def __init__(self, shape, window_dimensions, window_strides, padding):
        self.out_shape = tuple(out_size(n, k, s, lo, hi) for n, k, s, (lo, hi) in zip(
            shape, window_dimensions, window_strides, padding))
        self.size = int(np.prod(self.out_shape, dtype=np.int64))
        shape = tuple(shape) or (1,)
        self.args = (shape, tuple(window_dimensions) or (1,), self.out_shape or (1,),
                     tuple(window_strides) or (1,), tuple(lo for lo, _ in padding) or (0,),
                     (1,) * len(shape))

    def launch(self, kernel, count, *operands):
        runtime.launch(kernel, count, *operands, *self.args)


def _flat(x):
    """x as a vector. An empty operand is never read (every window position is
    padding) and numba cannot reshape an empty device array: one element stands in."""
    return x.reshape(x.size) if x.size else runtime.empty((1,), x.dtype)


@cuda.jit(device=True)
def _size(shape):
    size = 1
    for d in range(len(shape)):
        size *= shape[d]
    return size


@cuda.jit(cache=True)
def _reduce_window_kernel(x, out, op, init, zero, shape, window, out_shape, strides,
                          pad_lo, ones):
    """Padding holds the reduction's identity `init` (so a window entirely in the
    padding gives it); max and min propagate NaN, as np.maximum does."""
    i = cuda.grid(1)
    while i < out.size:
        acc = init
        for q in range(_size(window)):
            src = _source(i, q, shape, window, out_shape, strides, pad_lo, ones, ones)
            if src >= 0:
                v = zero + x[src]
                if op == SUM:
                    acc += v
                elif op == MAX:
                    acc = maximum(v, acc)
                else:
                    acc = minimum(v, acc)
        out[i] = acc
        i += cuda.gridsize(1)


def _reduce_window(op):
    def impl(x, window_dimensions, window_strides, padding):
        w = _Windows(x.shape, window_dimensions, window_strides, padding)
        out = runtime.empty(w.out_shape, x.dtype)
        if w.size == 0:
            return out
        zero = accumulator(x.dtype)
        init = type(zero)(identity(op, x.dtype))
        w.launch(_reduce_window_kernel, w.size, _flat(x), _flat(out), op, init, zero)
        return out
    return impl


@cuda.jit(device=True)
def _select(x, i, is_max, init, zero, shape, window, out_shape, strides, pad_lo, ones):
    """The flat offset in x of window i's first maximum (or minimum), -1 when it is
    in the padding (which holds `init`); the first NaN wins."""
    best = init
    best_src = -1
    for q in range(_size(window)):
        src = _source(i, q, shape, window, out_shape, strides, pad_lo, ones, ones)
        v = init if src < 0 else zero + x[src]
        better = v > best if is_max else v < best
        if q == 0 or better or (v != v and best == best):
            best, best_src = v, src
    return best_src


@cuda.jit(cache=True)
def _gather_kernel(t, x, out, is_max, init, zero, shape, window, out_shape, strides,
                   pad_lo, ones):
    i = cuda.grid(1)
    while i < out.size:
        src = _select(x, i, is_max, init, zero, shape, window, out_shape, strides, pad_lo,
                      ones)
        value = zero
        if src >= 0:
            value = zero + t[src]
        out[i] = value
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _choose_kernel(x, chosen, is_max, init, zero, shape, window, out_shape, strides,
                   pad_lo, ones):
    i = cuda.grid(1)
    while i < chosen.size:
        src = _select(x, i, is_max, init, zero, shape, window, out_shape, strides, pad_lo,
                      ones)
        chosen[i] = src
        i += cuda.gridsize(1)


@cuda.jit(device=True)
def _windows_over(p, k, stride, count):
    """The first and last of `count` windows (size k, `stride` apart) holding padded
    position p; last < first when none does."""
    # (numba.cuda does not type the two-argument builtins max and min)
    first = -((k - 1 - p) // stride)
    last = p // stride
    return (first if first > 0 else 0), (last if last < count - 1 else count - 1)


@cuda.jit(cache=True)
def _scatter_kernel(g, chosen, out, zero, shape, window, out_shape, strides, pad_lo, ones):
    """out[j] = the sum of g over the windows that chose operand element j, visited
    in row-major window order."""
    j = cuda.grid(1)
    while j < out.size:
        windows = 1
        rest = j
        for d in range(len(shape)):
            e = len(shape) - 1 - d
            first, last = _windows_over(rest % shape[e] + pad_lo[e], window[e], strides[e],
                                        out_shape[e])
            rest //= shape[e]
            if last < first:
                windows = 0
            windows *= last - first + 1
        acc = zero
        for k in range(windows):
            w = 0
            scale = 1
            rest = j
            t = k
            for d in range(len(shape)):
                e = len(shape) - 1 - d
                first, last = _windows_over(rest % shape[e] + pad_lo[e], window[e],
                                            strides[e], out_shape[e])
                rest //= shape[e]
                w += (first + t % (last - first + 1)) * scale
                t //= last - first + 1
                scale *= out_shape[e]
            if chosen[w] == j:
                acc += g[w]
        out[j] = acc
        j += cuda.gridsize(1)


def _selections(op):
    def gather(t, x, window_dimensions, window_strides, padding):
        w = _Windows(x.shape, window_dimensions, window_strides, padding)
        out = runtime.empty(w.out_shape, t.dtype)
        if w.size == 0:
            return out
        zero = accumulator(x.dtype)
        w.launch(_gather_kernel, w.size, _flat(t), _flat(x), _flat(out), op == MAX,
                 type(zero)(identity(op, x.dtype)), zero)
        return out

    def scatter(g, x, window_dimensions, window_strides, padding):
        w = _Windows(x.shape, window_dimensions, window_strides, padding)
        if w.size == 0 or x.size == 0:     # nothing to select
            return filled(x.shape, 0, g.dtype)
        out = runtime.empty(x.shape, g.dtype)
        zero = accumulator(x.dtype)
        chosen = runtime.empty((w.size,), np.int64)
        w.launch(_choose_kernel, w.size, _flat(x), chosen, op == MAX,
                 type(zero)(identity(op, x.dtype)), zero)
        w.launch(_scatter_kernel, out.size, _flat(g), chosen, _flat(out), zero)
        return out
    return gather, scatter


implements(C.reduce_window_sum_p)(_reduce_window(SUM))
implements(C.reduce_window_max_p)(_reduce_window(MAX))
implements(C.reduce_window_min_p)(_reduce_window(MIN))
for _op, _gather_p, _scatter_p in [
        (MAX, C.select_and_gather_add_max_p, C.select_and_scatter_add_max_p),
        (MIN, C.select_and_gather_add_min_p, C.select_and_scatter_add_min_p)]:
    _gather, _scatter = _selections(_op)
    implements(_gather_p)(_gather)
    implements(_scatter_p)(_scatter)
