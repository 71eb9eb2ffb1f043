"""gather, the scatter family, dynamic_slice and dynamic_update_slice on the GPU.

As on the cpu (fnad/kernels/cpu/index.py), the operand is a table: its k indexed
axes flatten into a row number, the rest into the row, and a first kernel turns each
index vector into a row (-1 where "fill" drops it). Wrapping, clamping and the
combine rules (NaN in min/max) follow the cpu's `_row` and `_combine`.

Scatters run in parallel over the updates, which may hit one row many times:
  scatter      the last update in index order wins: each row first claims the
               largest update number aimed at it (atomic max), then only that one
               writes;
  scatter_add  atomic adds, for the dtypes with hardware atomics;
  the rest     (mul, min, max, add on small types) group the updates by row with a
               counting sort, then a thread per output element combines its row's
               updates in turn. The order within a row is unspecified, which only
               changes rounding."""
import numpy as np
from numba import int64

from . import runtime
from .registry import implements
from .runtime import launch
from .shape import copy, filled, flat, move, put_window, size, table, view
from ...kernels.cpu import index as cpu
from ...primitives import index as I

cuda = runtime.cuda()
THREADS = runtime.THREADS
CLIP, FILL = cpu.CLIP, cpu.FILL
SET, ADD, MUL, MIN, MAX = cpu.SET, cpu.ADD, cpu.MUL, cpu.MIN, cpu.MAX


# The index rules and update combinations are the cpu kernels' Numba functions, which
# numba.cuda compiles for the device too: one definition serves both backends. The
# simulator runs kernels as Python, so there they are the Python functions (the cpu
# target has no float16).
_row, _combine = ((cpu._row.py_func, cpu._combine.py_func) if runtime.simulated()
                  else (cpu._row, cpu._combine))


@cuda.jit(cache=True)
def _rows(indices, dims, mode, rows):
    """rows[b]: the row that index vector indices[b, :] names in a table whose
    leading axes are dims, or -1 if one of its coordinates is dropped."""
    b = cuda.grid(1)
    while b < rows.size:
        row = 0
        for j in range(indices.shape[1]):
            i = _row(indices[b, j], dims[j], mode)
            if i < 0 or row < 0:
                row = -1
            else:
                row = row * dims[j] + i
        rows[b] = row
        b += cuda.gridsize(1)


@cuda.jit(cache=True)
def _gather(operand, rows, length, out):
    f = cuda.grid(1)
    while f < out.size:
        i = rows[f // length]
        if i < 0:
            out[f] = 0
        else:
            out[f] = operand[i * length + f % length]
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _claim(rows, winner):
    b = cuda.grid(1)
    while b < rows.size:
        if rows[b] >= 0:
            cuda.atomic.max(winner, rows[b], b)
        b += cuda.gridsize(1)


@cuda.jit(cache=True)
def _write_winners(out, rows, winner, updates, length):
    f = cuda.grid(1)
    while f < updates.size:
        b = f // length
        i = rows[b]
        if i >= 0 and winner[i] == b:
            out[i * length + f % length] = updates[f]
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _atomic_add(out, rows, updates, length):
    f = cuda.grid(1)
    while f < updates.size:
        i = rows[f // length]
        if i >= 0:
            cuda.atomic.add(out, i * length + f % length, updates[f])
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _count(rows, counts):
    b = cuda.grid(1)
    while b < rows.size:
        if rows[b] >= 0:
            cuda.atomic.add(counts, rows[b], 1)
        b += cuda.gridsize(1)


@cuda.jit(cache=True)
def _exclusive_scan(counts, starts):
    """starts[i] = counts[0] + ... + counts[i - 1] (starts has one more entry), by one
    block: each thread sums a contiguous chunk, then thread 0 scans the chunk sums."""
    sums = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    n = counts.size
    chunk = (n + THREADS - 1) // THREADS
    lo = tid * chunk if tid * chunk < n else n
    hi = lo + chunk if lo + chunk < n else n
    total = 0
    for i in range(lo, hi):
        total += counts[i]
    sums[tid] = total
    cuda.syncthreads()
    if tid == 0:
        running = 0
        for t in range(THREADS):
            c = sums[t]
            sums[t] = running
            running += c
        starts[n] = running
    cuda.syncthreads()
    running = sums[tid]
    for i in range(lo, hi):
        starts[i] = running
        running += counts[i]


@cuda.jit(cache=True)
def _place(rows, cursor, order):
    b = cuda.grid(1)
    while b < rows.size:
        if rows[b] >= 0:
            order[cuda.atomic.add(cursor, rows[b], 1)] = b
        b += cuda.gridsize(1)


@cuda.jit(cache=True)
def _combine_rows(out, starts, order, updates, length, op):
    f = cuda.grid(1)
    while f < out.size:
        i = f // length
        r = f % length
        acc = out[f]
        for p in range(starts[i], starts[i + 1]):
            acc = _combine(acc, updates[order[p] * length + r], op)
        out[f] = acc
        f += cuda.gridsize(1)


# --------------------------------------------------------------------------- addressing

def _row_numbers(operand_shape, indices, mode):
    """The device array of row numbers of the index vectors (see _rows)."""
    k = tuple(indices.shape)[-1]
    count = size(tuple(indices.shape)[:-1])
    if mode == "clip" and count and not all(operand_shape[:k]):
        raise IndexError(f"cannot index into an axis of size 0 (operand shape "
                         f"{tuple(operand_shape)})")
    rows = runtime.empty((count,), np.int64)
    if count:
        dims = table([operand_shape[:k] or (1,)])
        launch(_rows, count, view(indices, (count, k)), flat(dims),
               CLIP if mode == "clip" else FILL, rows)
    return rows


@implements(I.gather_p)
def _gather_impl(operand, indices, mode):
    k = tuple(indices.shape)[-1]
    shape = tuple(operand.shape)
    out = runtime.empty(tuple(indices.shape)[:-1] + shape[k:], operand.dtype)
    rows = _row_numbers(shape, indices, mode)
    launch(_gather, out.size, flat(operand), rows, size(shape[k:]), flat(out))
    return out


# Dtypes numba.cuda has an atomic add for.
_ATOMIC_ADD = {np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64, np.float32,
                                     np.float64)}


def _scatter_impl(op):
    # unique_indices is a promise the cpu does not check either; relying on it would
    # turn a broken promise into a race, so every path here handles repeats.
    def impl(operand, indices, updates, mode, unique_indices):
        k = tuple(indices.shape)[-1]
        shape = tuple(operand.shape)
        out = copy(operand)
        rows = _row_numbers(shape, indices, mode)
        length, nrows = size(shape[k:]), size(shape[:k])
        if not updates.size or not out.size:
            return out
        if op == SET:
            winner = filled((nrows,), -1, np.int64)
            launch(_claim, rows.size, rows, winner)
            launch(_write_winners, updates.size, flat(out), rows, winner, flat(updates),
                   length)
        elif op == ADD and np.dtype(operand.dtype) in _ATOMIC_ADD:
            launch(_atomic_add, updates.size, flat(out), rows, flat(updates), length)
        else:
            _grouped(out, rows, updates, length, op, nrows)
        return out
    return impl


def _grouped(out, rows, updates, length, op, nrows):
    """out[row] op= each update aimed at row, a thread per output element."""
    counts = filled((nrows,), 0, np.int64)
    launch(_count, rows.size, rows, counts)
    starts = runtime.empty((nrows + 1,), np.int64)
    _exclusive_scan[1, THREADS](counts, starts)
    order = runtime.empty((rows.size,), np.int64)
    launch(_place, rows.size, rows, copy(starts), order)
    launch(_combine_rows, out.size, flat(out), starts, order, flat(updates), length, op)


for _prim, _op in ((I.scatter_p, SET), (I.scatter_add_p, ADD), (I.scatter_mul_p, MUL),
                   (I.scatter_min_p, MIN), (I.scatter_max_p, MAX)):
    implements(_prim)(_scatter_impl(_op))


# --------------------------------------------------------------------------- dynamic slices

@implements(I.dynamic_slice_p)
def _dynamic_slice(operand, *starts, slice_sizes):
    return move(operand, slice_sizes, [(d, 1, 0, 1) for d in range(len(slice_sizes))],
                starts=list(enumerate(starts)))


@implements(I.dynamic_update_slice_p)
def _dynamic_update_slice(operand, update, *starts):
    out = copy(operand)
    put_window(update, out, starts, device_starts=range(len(starts)))
    return out
