"""Kernels for gather and scatter.

Both work on the operand seen as rows: the k indexed axes are flattened into one
row number (`flat_rows`), the remaining axes into the row's length. Compiled
lazily on first use, once per dtype, and cached on disk by Numba."""
import numba
import numpy as np

CLIP, FILL = 0, 1
SET, ADD, MUL, MIN, MAX = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def flat_rows(indices, dims, mode):
    """Row number of each index vector indices[b, :] into an array of shape dims.

    An index i in [-n, 0) counts from the end. Any other out-of-range index is
    clamped (mode CLIP) or makes the row -1 (mode FILL: read as zero, write dropped)."""
    count, k = indices.shape
    rows = np.empty(count, np.int64)
    for b in range(count):
        row = 0
        inside = True
        for j in range(k):
            n = dims[j]
            i = np.int64(indices[b, j])
            if i < 0:
                i += n
            if i < 0 or i >= n:
                if mode == CLIP:
                    i = 0 if i < 0 else n - 1
                else:
                    inside = False
            row = row * n + i
        rows[b] = row if inside else -1
    return rows


@numba.njit(cache=True)
def scatter_rows(out, rows, updates, op):
    """out[rows[b], :] op= updates[b, :] in order b = 0, 1, ...; rows[b] = -1 is skipped.

    Sequential order makes SET deterministic: the last update to a row wins.
    MIN and MAX propagate NaN, like np.minimum and np.maximum."""
    count, length = updates.shape
    for b in range(count):
        i = rows[b]
        if i < 0:
            continue
        if op == SET:
            for r in range(length):
                out[i, r] = updates[b, r]
        elif op == ADD:
            for r in range(length):
                out[i, r] += updates[b, r]
        elif op == MUL:
            for r in range(length):
                out[i, r] *= updates[b, r]
        elif op == MIN:
            for r in range(length):
                a, u = out[i, r], updates[b, r]
                out[i, r] = a if (a < u or a != a) else u
        else:
            for r in range(length):
                a, u = out[i, r], updates[b, r]
                out[i, r] = a if (a > u or a != a) else u
