"""Kernels for windowed reductions (pooling) and their derivatives' selections.

A windowed reduction sees its operand, padded with the reduction's identity, as a
table of rows (the leading axes the window does not touch) and describes the windows
by offsets into a row: one Numba loop serves every rank and layout. 2x2 pooling
windows over channels-last operands get unrolled kernels. The kernels are compiled
lazily, once per dtype, and cached on disk by Numba.
"""
import functools

import numba
import numpy as np

from ...dtypes import bfloat16
from .conv import by_rows, via_float32, dilate_pad, out_size


MAX, MIN, SUM = 0, 1, 2


def identity(op, dtype):
    dtype = np.dtype(dtype)
    if op == SUM:
        return dtype.type(0)
    if dtype.kind == "f" or dtype == bfloat16:
        return dtype.type(-np.inf if op == MAX else np.inf)
    if dtype.kind == "b":
        return op == MIN
    info = np.iinfo(dtype)
    return dtype.type(info.min if op == MAX else info.max)


@functools.lru_cache(maxsize=512)
def _window_tables(shape, window, strides):
    """For a C-contiguous padded operand of `shape`, seen as a table of rows (the
    leading axes the window leaves alone): the start of each output row in a table
    row (all output axes but the last), the offset of each window element from a
    start, the step between neighbours along the last output axis, and the shapes."""
    lead = 0
    while lead < len(shape) - 1 and window[lead] == 1 and strides[lead] == 1:
        lead += 1
    row_shape = shape[lead:]
    elem = np.ones(len(row_shape), np.int64)
    for i in range(len(row_shape) - 2, -1, -1):
        elem[i] = elem[i + 1] * row_shape[i + 1]
    out_shape = tuple(out_size(n, k, s, 0, 0) for n, k, s in zip(shape, window, strides))
    starts = np.zeros(out_shape[lead:-1], np.int64)
    offsets = np.zeros(window[lead:], np.int64)
    for i, (n, k, s, e) in enumerate(zip(out_shape[lead:], window[lead:], strides[lead:],
                                         elem)):
        if i < len(row_shape) - 1:
            view = [1] * (len(row_shape) - 1)
            view[i] = -1
            starts = starts + (np.arange(n) * s * e).reshape(view)
        view = [1] * len(row_shape)
        view[i] = -1
        offsets = offsets + (np.arange(k) * e).reshape(view)
    starts, offsets = starts.ravel(), offsets.ravel()
    starts.flags.writeable = offsets.flags.writeable = False
    rows = int(np.prod(shape[:lead], dtype=np.int64))
    table_shape = (rows, int(np.prod(row_shape, dtype=np.int64)))
    return table_shape, starts, offsets, strides[-1], (rows, starts.size, out_shape[-1]), \
        out_shape


def _in_memory_order(x, *per_axis):
    """A C-contiguous view of x with its axes in memory order (x itself, or a copy
    when no order of its axes is contiguous), the per-axis parameters permuted to
    match, and the permutation."""
    perm = tuple(range(x.ndim))
    if not x.flags.c_contiguous and x.ndim > 1:
        order = tuple(int(i) for i in np.argsort([-abs(s) for s in x.strides], kind="stable"))
        if x.transpose(order).flags.c_contiguous:
            perm = order
        else:
            x = np.ascontiguousarray(x)
    if perm != tuple(range(x.ndim)):
        x = x.transpose(perm)
        per_axis = [tuple(p[i] for i in perm) for p in per_axis]
    return x, per_axis, perm


class _Windows:
    """The padded operand as a table, with the window tables, for the kernels."""

    def __init__(self, x, window, strides, padding, fill):
        x, (self.window, self.strides, self.padding), self.perm = _in_memory_order(
            x, window, strides, padding)
        window, strides = self.window, self.strides
        xp = np.ascontiguousarray(dilate_pad(x, self.padding, fill=fill))
        (table_shape, self.starts, self.offsets, self.step, self.out3,
         self.out_shape) = _window_tables(xp.shape, window, strides)
        self.shape = xp.shape
        self.table = xp.reshape(table_shape)

    def restore(self, out):
        out = out.reshape(self.out_shape)
        perm = self.perm
        return out if perm == tuple(range(out.ndim)) else out.transpose(np.argsort(perm))

    def select(self, op):
        chosen = np.zeros(self.out3, np.int64)
        if chosen.size:
            by_rows(_select_rows, self.table, self.starts, self.offsets, self.step,
                     op == MAX, chosen)
        return chosen.reshape(self.out3[0], -1) if chosen.size else chosen.reshape(
            self.out3[0], 0)


def _scalar_safe(kernel):
    """Windowed kernels on 0-d operands run on a 1-element vector."""
    @functools.wraps(kernel)
    def run(*args):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        if arrays and arrays[0].ndim == 0:
            *head, op, _, _, _ = args
            return kernel(*[a.reshape(1) for a in head], op, (1,), (1,), ((0, 0),)).reshape(())
        return kernel(*args)
    return run


@via_float32
@_scalar_safe
def reduce_window(x, op, window, strides, padding):
    pairs = _pairs_of_rows(x, window, strides, padding)
    if pairs is not None:
        x4, shape, perm = pairs
        out = np.empty((x4.shape[0], x4.shape[1] // 2, x4.shape[2] // 2, x4.shape[3]), x.dtype)
        by_rows(_pool_pairs, x4, op, out)
        return _restored(out.reshape(shape), perm)
    w = _Windows(x, window, strides, padding, identity(op, x.dtype))
    out = np.empty(w.out3, x.dtype)
    if out.size:
        by_rows(_reduce_rows, w.table, w.starts, w.offsets, w.step, op, out)
    return w.restore(out)


@via_float32
@_scalar_safe
def select_and_gather(t, x, op, window, strides, padding):
    """Per window, t at the position of x's first maximum (op MAX) or minimum."""
    w = _Windows(x, window, strides, padding, identity(op, x.dtype))
    chosen = w.select(op)
    tp = np.ascontiguousarray(dilate_pad(t.transpose(w.perm), w.padding, fill=0))
    return w.restore(np.take_along_axis(tp.reshape(w.table.shape), chosen, axis=1))


@via_float32
@_scalar_safe
def select_and_scatter(g, x, op, window, strides, padding):
    """The transpose of select_and_gather: each window's g added at its chosen position."""
    pairs = _pairs_of_rows(x, window, strides, padding)
    if pairs is not None:
        x4, shape, perm = pairs
        values = np.ascontiguousarray(g.transpose(perm)).reshape(
            x4.shape[0], x4.shape[1] // 2, x4.shape[2] // 2, x4.shape[3])
        out = np.empty(x4.shape, g.dtype)
        by_rows(_select_scatter_pairs, x4, op == MAX, values, out)
        return _restored(out.reshape(x.transpose(perm).shape), perm)
    w = _Windows(x, window, strides, padding, identity(op, x.dtype))
    # Windows that tile the padded operand (LeNet's 2x2 pools) write every position
    # once, zeros included: no cleared buffer, no read-modify-write.
    tiled = all(k == s and n == m * k for n, k, s, m in zip(
        w.shape, w.window, w.strides, w.out_shape))
    acc = (np.empty if tiled else np.zeros)(w.shape, g.dtype)
    if w.starts.size and w.out3[2]:
        values = np.ascontiguousarray(g.transpose(w.perm)).reshape(w.out3)
        by_rows(_select_scatter_rows, w.table, w.starts, w.offsets, w.step, op == MAX,
                 values, acc.reshape(w.table.shape), tiled)
    elif tiled:
        acc[...] = 0
    # Back from padded coordinates: crop the padding, re-insert cropped positions.
    inner = tuple(slice(max(lo, 0), n - max(hi, 0)) for n, (lo, hi) in zip(w.shape, w.padding))
    out = dilate_pad(acc[inner], [(-min(lo, 0), -min(hi, 0)) for lo, hi in w.padding])
    perm = w.perm
    out = np.ascontiguousarray(out)
    return out if perm == tuple(range(out.ndim)) else out.transpose(np.argsort(perm))


# 2x2 windows that tile two adjacent axes (stride 2, no padding: the pooling of
# LeNet and most CNNs) get kernels of their own, with the four positions unrolled.
# In LeNet's jitted step (128x24x24x6) the forward takes 0.26 instead of 0.44 ms and
# the selection 0.59 instead of 0.90 ms (measured, against the general row kernels
# below). Loops over the window, even of two, were 2.5-6x slower than unrolled.
# With the window axes innermost (NCHW) the general kernels vectorize and stay.

def _pairs_of_rows(x, window, strides, padding):
    """For 2x2 windows with stride 2 tiling two adjacent axes of x (in memory order):
    x as (outer, H, W, inner) with the window axes H and W, the output's shape in
    memory order and the permutation; None when this does not apply."""
    if x.dtype.kind != "f" or x.ndim < 2 or x.size == 0:
        return None
    x, (window, strides, padding), perm = _in_memory_order(x, window, strides, padding)
    axes = [d for d, (k, s) in enumerate(zip(window, strides)) if k != 1 or s != 1]
    if (len(axes) != 2 or axes[1] != axes[0] + 1
            or any(window[d] != 2 or strides[d] != 2 or x.shape[d] % 2 for d in axes)
            or any(lo or hi for lo, hi in padding)):
        return None
    d = axes[0]
    h, w = x.shape[d:d + 2]
    inner = int(np.prod(x.shape[d + 2:]))
    if inner == 1:
        return None
    x4 = x.reshape(int(np.prod(x.shape[:d])), h, w, inner)
    return x4, x.shape[:d] + (h // 2, w // 2) + x.shape[d + 2:], perm


def _restored(out, perm):
    return out if perm == tuple(range(out.ndim)) else out.transpose(np.argsort(perm))


@numba.njit(cache=True, nogil=True)
def _pool_pairs(x, op, out, n0, n1):
    """out[n, i, j, c] = the reduction of x[n, 2i:2i+2, 2j:2j+2, c] in window order;
    NaN propagates, as in np.maximum."""
    # A constant op in each inlined loop (a choice per element costs ~25%, measured).
    if op == SUM:
        _pool_pairs_loop(x, SUM, out, n0, n1)
    elif op == MAX:
        _pool_pairs_loop(x, MAX, out, n0, n1)
    else:
        _pool_pairs_loop(x, MIN, out, n0, n1)


@numba.njit(inline="always")
def _pool_pairs_loop(x, op, out, n0, n1):
    h, w, c_size = x.shape[1:]
    for n in range(n0, n1):
        for i in range(h // 2):
            top, bottom = x[n, 2 * i].ravel(), x[n, 2 * i + 1].ravel()
            dst = out[n, i].ravel()
            for j in range(w // 2):
                base = 2 * j * c_size
                for c in range(c_size):
                    a, b = top[base + c], top[base + c_size + c]
                    e, f = bottom[base + c], bottom[base + c_size + c]
                    if op == SUM:
                        v = ((a + b) + e) + f
                    elif op == MAX:
                        ab = b if (b > a) | (b != b) else a
                        ef = f if (f > e) | (f != f) else e
                        v = ef if (ef > ab) | (ef != ef) else ab
                    else:
                        ab = b if (b < a) | (b != b) else a
                        ef = f if (f < e) | (f != f) else e
                        v = ef if (ef < ab) | (ef != ef) else ab
                    dst[j * c_size + c] = v


@numba.njit(cache=True, nogil=True)
def _first_extreme(a, b, e, f, is_max):
    """The position of the first extreme of (a, b, e, f), or of their first NaN."""
    best, at = a, 0
    if best == best and not ((b <= best) if is_max else (b >= best)):
        best, at = b, 1
    if best == best and not ((e <= best) if is_max else (e >= best)):
        best, at = e, 2
    if best == best and not ((f <= best) if is_max else (f >= best)):
        at = 3
    return at


@numba.njit(cache=True, nogil=True)
def _select_scatter_pairs(x, is_max, g, out, n0, n1):
    """out (x's shape) holds g[n, i, j, c] at the first extreme (or first NaN) of
    x[n, 2i:2i+2, 2j:2j+2, c], zeros elsewhere."""
    # A constant is_max in the inlined loop (a choice per element costs ~25%).
    if is_max:
        _select_scatter_pairs_loop(x, True, g, out, n0, n1)
    else:
        _select_scatter_pairs_loop(x, False, g, out, n0, n1)


@numba.njit(inline="always")
def _select_scatter_pairs_loop(x, is_max, g, out, n0, n1):
    h, w, c_size = x.shape[1:]
    zero = np.zeros(1, out.dtype)[0]
    for n in range(n0, n1):
        for i in range(h // 2):
            top, bottom = x[n, 2 * i].ravel(), x[n, 2 * i + 1].ravel()
            up, down = out[n, 2 * i].ravel(), out[n, 2 * i + 1].ravel()
            src = g[n, i].ravel()
            for j in range(w // 2):
                base = 2 * j * c_size
                for c in range(c_size):
                    k, l = base + c, base + c_size + c
                    a, b, e, f = top[k], top[l], bottom[k], bottom[l]
                    s = (a + b) + (e + f)
                    if s != s:      # a NaN (or inf - inf): the general rule, in order
                        at = _first_extreme(a, b, e, f, is_max)
                        t0, t1, t2 = at == 0, at == 1, at == 2
                    else:
                        m = max(max(a, b), max(e, f)) if is_max else min(min(a, b), min(e, f))
                        t0 = a == m
                        t1 = (b == m) & ~t0
                        t2 = (e == m) & ~(t0 | t1)
                    t3 = ~(t0 | t1 | t2)
                    v = src[j * c_size + c]
                    up[k] = v if t0 else zero
                    up[l] = v if t1 else zero
                    down[k] = v if t2 else zero
                    down[l] = v if t3 else zero


# _reduce_rows walks the last output axis innermost, `step` elements apart, so each
# window element is one strided pass, and stores unconditionally (a select, not a
# branch on random data): 4-7x faster than one window at a time with branches on
# LeNet's pooling (measured). Selection goes the other way (below).

@numba.njit(cache=True, nogil=True)
def _reduce_rows(table, starts, offsets, step, op, out, r0, r1):
    """out[r, p, j] = the reduction over q of table[r, starts[p] + j * step + offsets[q]]."""
    width = out.shape[2]
    for r in range(r0, r1):
        row = table[r]
        for p in range(starts.shape[0]):
            acc = out[r, p]
            base = starts[p] + offsets[0]
            for j in range(width):
                acc[j] = row[base + j * step]
            for q in range(1, offsets.shape[0]):
                base = starts[p] + offsets[q]
                if op == SUM:
                    for j in range(width):
                        acc[j] += row[base + j * step]
                elif op == MAX:     # NaN propagates, as in np.maximum
                    for j in range(width):
                        v, a = row[base + j * step], acc[j]
                        acc[j] = v if (v > a) | (v != v) else a
                else:
                    for j in range(width):
                        v, a = row[base + j * step], acc[j]
                        acc[j] = v if (v < a) | (v != v) else a


# Selection keeps the window innermost with scalar accumulators: 3x faster than the
# strided passes with per-lane arrays of extremes and positions (measured). A value
# replaces the running extreme `b` when b is not NaN and v is not on b's side of it
# (v beyond b, or v NaN): the first extreme wins, and the first NaN.

@numba.njit(cache=True, nogil=True)
def _select_rows(table, starts, offsets, step, is_max, chosen, r0, r1):
    """The offset in its table row of each window's first maximum (or minimum)."""
    for r in range(r0, r1):
        row = table[r]
        for p in range(starts.shape[0]):
            at = chosen[r, p]
            for j in range(at.shape[0]):
                base = starts[p] + j * step
                best_at = base + offsets[0]
                best = row[best_at]
                for q in range(1, offsets.shape[0]):
                    i = base + offsets[q]
                    v = row[i]
                    take = (best == best) and not ((v <= best) if is_max else (v >= best))
                    best = v if take else best
                    best_at = i if take else best_at
                at[j] = best_at


@numba.njit(cache=True, nogil=True)
def _select_scatter_rows(table, starts, offsets, step, is_max, values, out, tiled, r0, r1):
    """out[r, offset of the first extreme of window (p, j)] += values[r, p, j]. When
    the windows tile the table, out is written whole instead: each window's other
    positions get zeros (stored unconditionally, no branch on the data)."""
    zero = np.zeros(1, out.dtype)[0]
    for r in range(r0, r1):
        row, dst, src = table[r], out[r], values[r]
        for p in range(starts.shape[0]):
            g = src[p]
            for j in range(g.shape[0]):
                base = starts[p] + j * step
                best_at = base + offsets[0]
                best = row[best_at]
                if tiled:
                    dst[best_at] = zero
                for q in range(1, offsets.shape[0]):
                    i = base + offsets[q]
                    v = row[i]
                    take = (best == best) and not ((v <= best) if is_max else (v >= best))
                    best = v if take else best
                    best_at = i if take else best_at
                    if tiled:
                        dst[i] = zero
                if tiled:
                    dst[best_at] = g[j]
                else:
                    dst[best_at] += g[j]
