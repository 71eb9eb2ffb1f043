"""Kernels for gather and scatter.

Both see the operand as a table: the k indexed axes flatten into one row number,
the remaining axes into the row. With k = 1 the user's indices are the row numbers;
otherwise `flat_rows` combines the k coordinates first. Compiled lazily on first
use, once per dtype, and cached on disk by Numba. As fast as numpy's fancy indexing
and `take`, and several times faster than `np.add.at` / `np.maximum.at` on rows."""
import numba
import numpy as np

CLIP, FILL = 0, 1
SET, ADD, MUL, MIN, MAX = 0, 1, 2, 3, 4


@numba.njit(cache=True, inline="always")
def _row(i, n, mode):
    """An index in [-n, 0) counts from the end; other out-of-range indices are clamped
    (CLIP) or give -1 (FILL: read as zero, write dropped)."""
    i = np.int64(i)
    if i < 0:
        i += n
    if i < 0 or i >= n:
        if mode == CLIP:
            return 0 if i < 0 else n - 1
        return -1
    return i


@numba.njit(cache=True, inline="always")
def _combine(current, update, op):
    # op is the same on every call of a kernel; LLVM hoists the branch out of the loop.
    if op == SET:
        return update
    if op == ADD:
        return current + update
    if op == MUL:
        return current * update
    if op == MIN:   # NaN propagates, as in np.minimum
        return current if (current < update or current != current) else update
    return current if (current > update or current != current) else update


@numba.njit(cache=True)
def _flat_rows(indices, dims, mode):
    """Row numbers of the index vectors indices[b, :] into an array of shape dims;
    a vector with a dropped (FILL) coordinate gets the out-of-range row prod(dims)."""
    count, k = indices.shape
    total = 1
    for j in range(k):
        total *= dims[j]
    rows = np.empty(count, np.int64)
    for b in range(count):
        row = 0
        for j in range(k):
            i = _row(indices[b, j], dims[j], mode)
            if i < 0:
                row = total
                break
            row = row * dims[j] + i
        rows[b] = row
    return rows


@numba.njit(cache=True)
def _gather_rows(table, rows, mode, out):
    """out[b, :] = table[rows[b], :]; zeros where the row is missing."""
    n, length = table.shape
    if length == 1:
        column, result = table[:, 0], out[:, 0]
        for b in range(rows.shape[0]):
            i = _row(rows[b], n, mode)
            result[b] = column[i] if i >= 0 else 0
    else:
        for b in range(rows.shape[0]):
            i = _row(rows[b], n, mode)
            if i < 0:
                out[b, :] = 0
            else:
                for r in range(length):
                    out[b, r] = table[i, r]


@numba.njit(cache=True)
def _scatter_rows(out, rows, mode, updates, op):
    """out[rows[b], :] op= updates[b, :] for b = 0, 1, ... in order; missing rows are
    skipped. The order makes SET deterministic: the last update to a row wins."""
    n, length = out.shape
    if length == 1:
        column, values = out[:, 0], updates[:, 0]
        for b in range(rows.shape[0]):
            i = _row(rows[b], n, mode)
            if i >= 0:
                column[i] = _combine(column[i], values[b], op)
    else:
        for b in range(rows.shape[0]):
            i = _row(rows[b], n, mode)
            if i >= 0:
                for r in range(length):
                    out[i, r] = _combine(out[i, r], updates[b, r], op)


# --------------------------------------------------------------------------- small inputs
# Below this many elements numpy's fancy indexing is as fast as the loops above, and
# it needs no compiler: a small gather in a program's first call (say, picking each
# example's label from its log-probabilities) then does not wait for Numba to start.
SMALL = 1 << 12


def _rows_numpy(rows, n, mode):
    """_row for a whole array: wrapped, then clamped (CLIP) or -1 (FILL)."""
    i = rows.astype(np.int64)
    i = np.where(i < 0, i + n, i)
    if mode == CLIP:
        return np.clip(i, 0, max(n - 1, 0))
    return np.where((i < 0) | (i >= n), -1, i)


def flat_rows(indices, dims, mode):
    if indices.size > SMALL:
        return _flat_rows(indices, dims, mode)
    total = int(np.prod(dims))
    rows = np.zeros(indices.shape[0], np.int64)
    dropped = np.zeros(indices.shape[0], bool)
    for j in range(indices.shape[1]):
        i = _rows_numpy(indices[:, j], int(dims[j]), mode)
        dropped |= i < 0
        rows = rows * int(dims[j]) + np.maximum(i, 0)
    rows[dropped] = total
    return rows


def gather_rows(table, rows, mode, out):
    if out.size > SMALL:
        return _gather_rows(table, rows, mode, out)
    i = _rows_numpy(rows, table.shape[0], mode)
    out[...] = table[np.maximum(i, 0)] if table.shape[0] else 0
    out[i < 0] = 0


_UFUNCS = {ADD: np.add, MUL: np.multiply, MIN: np.minimum, MAX: np.maximum}


def scatter_rows(out, rows, mode, updates, op):
    # complex: the compiled loop's min/max branches cannot be typed; numpy's ufunc.at
    if updates.size > SMALL and updates.dtype.kind != "c":
        return _scatter_rows(out, rows, mode, updates, op)
    i = _rows_numpy(rows, out.shape[0], mode)
    keep = i >= 0
    i, u = i[keep], updates[keep]
    if op == SET:   # the last update to a row wins, as in the loop
        last = len(i) - 1 - np.unique(i[::-1], return_index=True)[1]
        out[i[last]] = u[last]
    else:
        _UFUNCS[op].at(out, i, u)
