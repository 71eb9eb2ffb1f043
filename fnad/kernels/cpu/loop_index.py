"""Indexing for compiled loop bodies (fnad/backends/cpu/loops.py): dynamic slices,
gathers and scatters written as Numba functions a loop body calls, so a body that
indexes (an embedding lookup, `x[i]` with a traced i, `.at[i].add(v)`) still
compiles into one loop.

The addressing is fnad.primitives.index's, restated for compiled code: an index in
[-n, 0) counts from the end; other out-of-range indices are clamped (CLIP) or make
the row missing (FILL: a gather reads zeros, a scatter drops the update); scatters
apply their updates in index order, so `set` keeps the last one and sums round as
the eager kernels' do. A dynamic slice's start counts from the end when negative and
the window is then shifted to lie inside the operand.
"""
import numba
import numpy as np

CLIP, FILL = 0, 1


@numba.njit(cache=True, nogil=True, inline="always")
def scalar(s):
    """A scalar operand as a number, whether the body holds it as a 0-d array or as
    a literal."""
    return np.asarray(s).item()


@numba.njit(cache=True, nogil=True, inline="always")
def window(start, n, m):
    """The slice of length m a dynamic start selects in an axis of length n."""
    s = np.int64(scalar(start))
    if s < 0:
        s += n
    s = min(max(s, 0), n - m)
    return slice(s, s + m)


@numba.njit(cache=True, nogil=True)
def updated(x, update, index):
    """A copy of x with x[index] = update (index: a tuple of slices)."""
    out = x.copy()
    out[index] = update
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _coordinate(i, n, mode):
    i = np.int64(i)
    if i < 0:
        i += n
    if 0 <= i < n:
        return i
    if mode == CLIP:
        return np.int64(0) if i < 0 else np.int64(n - 1)
    return np.int64(-1)


@numba.njit(cache=True, nogil=True)
def rows(indices, dims, mode):
    """The table row each index vector indices[b, :] names in an array whose leading
    axes are `dims`; -1 for a missing one."""
    count, k = indices.shape
    out = np.empty(count, np.int64)
    for b in range(count):
        row = np.int64(0)
        for j in range(k):
            i = _coordinate(indices[b, j], dims[j], mode)
            if i < 0:
                row = np.int64(-1)
                break
            row = row * dims[j] + i
        out[b] = row
    return out


@numba.njit(cache=True, nogil=True)
def gather(table, indices, dims, mode):
    """out[b, :] = table[row of indices[b], :], zeros for a missing row."""
    which = rows(indices, dims, mode)
    length = table.shape[1]
    out = np.empty((which.shape[0], length), table.dtype)
    for b in range(which.shape[0]):
        r = which[b]
        if r < 0:
            out[b, :] = 0
        else:
            out[b, :] = table[r, :]
    return out


# One function per combining rule (a rule as a runtime flag would have to type every
# rule for every dtype: a bool product, a complex comparison). Each returns a copy of
# table with table[row of indices[b], :] combined with updates[b, :], b in order,
# missing rows skipped.
@numba.njit(cache=True, nogil=True)
def scatter(table, indices, dims, mode, updates):
    which = rows(indices, dims, mode)
    out = table.copy()
    for b in range(which.shape[0]):
        r = which[b]
        if r >= 0:
            for c in range(out.shape[1]):
                out[r, c] = updates[b, c]
    return out


@numba.njit(cache=True, nogil=True)
def scatter_add(table, indices, dims, mode, updates):
    which = rows(indices, dims, mode)
    out = table.copy()
    for b in range(which.shape[0]):
        r = which[b]
        if r >= 0:
            for c in range(out.shape[1]):
                t, u = out[r, c], updates[b, c]
                out[r, c] = t + u
    return out


@numba.njit(cache=True, nogil=True)
def scatter_mul(table, indices, dims, mode, updates):
    which = rows(indices, dims, mode)
    out = table.copy()
    for b in range(which.shape[0]):
        r = which[b]
        if r >= 0:
            for c in range(out.shape[1]):
                t, u = out[r, c], updates[b, c]
                out[r, c] = t * u
    return out


@numba.njit(cache=True, nogil=True)
def scatter_min(table, indices, dims, mode, updates):
    which = rows(indices, dims, mode)
    out = table.copy()
    for b in range(which.shape[0]):
        r = which[b]
        if r >= 0:
            for c in range(out.shape[1]):
                t, u = out[r, c], updates[b, c]
                out[r, c] = t if (t < u or t != t) else u
    return out


@numba.njit(cache=True, nogil=True)
def scatter_max(table, indices, dims, mode, updates):
    which = rows(indices, dims, mode)
    out = table.copy()
    for b in range(which.shape[0]):
        r = which[b]
        if r >= 0:
            for c in range(out.shape[1]):
                t, u = out[r, c], updates[b, c]
                out[r, c] = t if (t > u or t != t) else u
    return out
