"""Structural primitives on the GPU: reshapes are views; everything else that moves
data is one of two index-arithmetic kernels.

`move` (transpose, rev, slice, pad, broadcasting, dynamic_slice): a thread per output
element walks the output axes and maps each coordinate o to a source coordinate
p = (o * step + offset) / spacing, reading the fill value where the division is not
exact (pad's interior) or p falls outside the source (pad's edges). `put_window`
(concatenate, dynamic_update_slice): a thread per element of a block writes it at an
offset into the output. The per-axis numbers travel as a small int64 table, so one
compiled kernel per dtype serves every rank, shape and parameter.

Every kernel here writes C-contiguous arrays, as runtime.empty allocates them; the
views made by reshape stay contiguous, so later kernels may index them f."""
import functools

import numpy as np
from numba import int64

from . import runtime
from .registry import implements
from ...abstract import ShapedArray
from .runtime import launch
from ...primitives import shape as S

cuda = runtime.cuda()


@cuda.jit(cache=True)
def _move(src, out, table, fill):
    """out[o] = src[p]; table rows per output axis: (size, step, offset, spacing,
    source size, source stride)."""
    f = cuda.grid(1)
    while f < out.size:
        rest = f
        offset = 0
        inside = True
        for d in range(table.shape[0] - 1, -1, -1):
            o = rest % table[d, 0]
            rest //= table[d, 0]
            q = o * table[d, 1] + table[d, 2]
            p = q // table[d, 3]
            if p * table[d, 3] != q or p < 0 or p >= table[d, 4]:
                inside = False
            offset += p * table[d, 5]
        if inside:
            out[f] = src[offset]
        else:
            out[f] = fill[0]
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _put_window(block, out, table):
    """out[start + i] = block[i]; table rows per axis: (block size, start, out stride)."""
    f = cuda.grid(1)
    while f < block.size:
        rest = f
        offset = 0
        for d in range(table.shape[0] - 1, -1, -1):
            offset += (rest % table[d, 0] + table[d, 1]) * table[d, 2]
            rest //= table[d, 0]
        out[offset] = block[f]
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _clamp_start(table, row, column, start, n, m):
    """table[row, column] = the start of a window of m in an axis of n, as
    dynamic_slice reads it: from the end if negative, then shifted inside."""
    if cuda.grid(1) == 0:
        s = int64(start[()])
        if s < 0:
            s += n
        # (no min/max: numba's CUDA target fails to type them)
        table[row, column] = 0 if s < 0 else (n - m if s > n - m else s)


@cuda.jit(cache=True)
def _iota(out, n, inner):
    f = cuda.grid(1)
    while f < out.size:
        out[f] = (f // inner) % n
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _fill(out, value):
    f = cuda.grid(1)
    while f < out.size:
        out[f] = value
        f += cuda.gridsize(1)


# --------------------------------------------------------------------------- helpers

def size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def flat(x):
    return view(x, (size(x.shape),))


def view(x, shape):
    """x with another shape of the same size: a view of its (contiguous) buffer."""
    shape = tuple(int(n) for n in shape)
    if tuple(x.shape) == shape:
        return x
    if not size(shape):     # numba cannot reshape an empty device array; nothing to keep
        return runtime.empty(shape, x.dtype)
    return x.reshape(shape)


def element_strides(shape):
    """Row-major element strides."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= int(n)
    return out[::-1]


@functools.lru_cache(maxsize=4096)
def _uploaded(rows, context):
    return runtime.to_device(_host_table(rows))


def _host_table(rows):
    if not rows:    # a rank-0 operand: no axes to walk
        return np.zeros((0, 1), np.int64)
    return np.asarray(rows, np.int64).reshape(len(rows), -1)


def table(rows, fresh=False):
    """An int64 device table of per-axis numbers. Tables depend only on shapes and
    params, so they are uploaded once per GPU context and reused; `fresh` gives a
    private copy for a kernel to write into."""
    rows = tuple(tuple(int(v) for v in r) for r in rows)
    if fresh:
        return runtime.to_device(_host_table(rows))
    return _uploaded(rows, id(cuda.current_context()))


def copy(x):
    out = runtime.empty(x.shape, x.dtype)
    if x.size:
        out.copy_to_device(x)
    return out


def filled(shape, value, dtype):
    out = runtime.empty(shape, dtype)
    launch(_fill, out.size, flat(out), np.asarray(value, dtype)[()])
    return out


def move(x, out_shape, axes, fill=None, starts=()):
    """A new array of out_shape whose axis d reads x's axis `source` at position
    (o * step + offset) / spacing, for axes[d] = (source, step, offset, spacing);
    source None makes a broadcast axis. Positions outside x (or between its
    elements) read the 0-d device array `fill`. `starts`, pairs (axis, 0-d device
    start), replace those axes' offsets by dynamic_slice's clamped starts."""
    out = runtime.empty(out_shape, x.dtype)
    if not out.size:
        return out
    in_strides = element_strides(x.shape)
    spec = table([(n, 0, 0, 1, 1, 0) if src is None else
                  (n, step, offset, spacing, x.shape[src], in_strides[src])
                  for n, (src, step, offset, spacing) in zip(out_shape, axes)],
                 fresh=bool(starts))
    for d, start in starts:
        _clamp_start[1, 1](spec, d, 2, start, x.shape[d], out_shape[d])
    source = flat(x)
    launch(_move, out.size, source, flat(out), spec,
           source if fill is None else view(fill, (1,)))
    return out


def put_window(block, out, starts, device_starts=()):
    """Write block into out, in place, from position `starts`; `device_starts`
    lists axes whose start is instead the 0-d device array starts[axis], clamped
    as dynamic_update_slice does."""
    if not block.size:
        return
    host = [0 if d in device_starts else s for d, s in enumerate(starts)]
    spec = table([(n, s, st) for n, s, st in
                  zip(block.shape, host, element_strides(out.shape))],
                 fresh=bool(device_starts))
    for d in device_starts:
        _clamp_start[1, 1](spec, d, 1, starts[d], out.shape[d], block.shape[d])
    launch(_put_window, block.size, flat(block), flat(out), spec)


def broadcast_to(x, shape):
    """x broadcast to shape with numpy's rule (trailing axes aligned)."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    lead = len(shape) - len(x.shape)
    axes = [(None, 0, 0, 1) if d < lead or x.shape[d - lead] != n else (d - lead, 1, 0, 1)
            for d, n in enumerate(shape)]
    return move(x, shape, axes)


def iota(dtype, shape, dimension):
    out = runtime.empty(shape, dtype)
    launch(_iota, out.size, flat(out), shape[dimension], size(shape[dimension + 1:]))
    return out


# --------------------------------------------------------------------------- kernels

@implements(S.reshape_p)
def _reshape(x, new_sizes):
    return view(x, new_sizes)


@implements(S.squeeze_p)
def _squeeze(x, dimensions):
    return view(x, [n for d, n in enumerate(x.shape) if d not in dimensions])


@implements(S.expand_dims_p)
def _expand_dims(x, dimensions):
    return view(x, S.expanded_shape(tuple(x.shape), dimensions))


@implements(S.transpose_p)
def transpose(x, permutation):
    if tuple(permutation) == tuple(range(len(permutation))):
        return x
    return move(x, [x.shape[p] for p in permutation], [(p, 1, 0, 1) for p in permutation])


@implements(S.rev_p)
def _rev(x, dimensions):
    return move(x, x.shape, [(d, -1, n - 1, 1) if d in dimensions else (d, 1, 0, 1)
                             for d, n in enumerate(x.shape)])


@implements(S.slice_p)
def _slice(x, start_indices, limit_indices, strides):
    shape = S.slice_p.abstract_eval(ShapedArray(x.shape, x.dtype), start_indices,
                                    limit_indices, strides).shape
    return move(x, shape, [(d, st, s, 1) for d, (s, st) in
                           enumerate(zip(start_indices, strides))])


@implements(S.pad_p)
def _pad(x, padding_value, padding_config):
    shape = [S.padded_size(n, *c) for n, c in zip(x.shape, padding_config)]
    return move(x, shape, [(d, 1, -lo, interior + 1)
                           for d, (lo, _, interior) in enumerate(padding_config)],
                fill=padding_value)


@implements(S.concatenate_p)
def _concatenate(*xs, dimension):
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    out = runtime.empty(shape, xs[0].dtype)
    at = 0
    for x in xs:
        put_window(x, out, [at if d == dimension else 0 for d in range(len(shape))])
        at += x.shape[dimension]
    return out


@implements(S.iota_p)
def _iota_impl(dtype, shape, dimension):
    return iota(dtype, shape, dimension)
