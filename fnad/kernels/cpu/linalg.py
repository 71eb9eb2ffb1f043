"""Linear-algebra kernels numpy lacks: a batched triangular solve and LU.

numpy has no triangular solve; np.linalg.solve on the triangle would cost an O(n^3)
LU per matrix where substitution is O(n^2) per right-hand side; numpy's LU stays
inside solve and det, so the factors themselves need a kernel here. Compiled lazily,
once per dtype, and cached on disk by Numba."""
import numba
import numpy as np


@numba.njit(cache=True)
def _substitute(a, x, lower, transpose, unit_diagonal):
    """Solve op(a[b]) y = x[b] in place for every b, op(a) = a or a^T, reading only
    the `lower` (or upper) triangle of a, and not its diagonal if unit_diagonal."""
    nbatch, m, k = x.shape
    # op(a) is lower triangular when a is lower and not transposed, or upper and transposed.
    forward = lower != transpose
    for b in range(nbatch):
        for step in range(m):
            i = step if forward else m - 1 - step
            lo, hi = (0, i) if forward else (i + 1, m)
            for j in range(lo, hi):
                t = a[b, j, i] if transpose else a[b, i, j]
                if t != 0:
                    for c in range(k):
                        x[b, i, c] -= t * x[b, j, c]
            if not unit_diagonal:
                d = a[b, i, i]
                for c in range(k):
                    x[b, i, c] /= d


def triangular_solve(a, b, left_side, lower, transpose_a, unit_diagonal):
    """lax.linalg.triangular_solve on numpy arrays; a (..., m, m), b (..., m, n) when
    left_side else (..., n, m), with equal leading dimensions."""
    if not left_side:
        # x op(a) = b  <=>  op(a)^T x^T = b^T
        b = np.swapaxes(b, -1, -2)
        transpose_a = not transpose_a
    m = a.shape[-1]
    nbatch = int(np.prod(a.shape[:-2], dtype=np.int64))
    a3 = np.ascontiguousarray(a.reshape((nbatch, m, m)))
    x = np.array(b.reshape((nbatch,) + b.shape[-2:]), order="C", copy=True)
    if x.size:
        _substitute(a3, x, bool(lower), bool(transpose_a), bool(unit_diagonal))
    x = x.reshape(b.shape)
    return np.swapaxes(x, -1, -2) if not left_side else x


@numba.njit(cache=True)
def _getrf(a, pivots, permutation):
    """LU with partial pivoting in place, LAPACK getf2's order: for each column, the
    row with the largest |entry| (the first such) becomes the pivot row, then the
    trailing block is updated. A zero pivot column is left as is (its multipliers
    are not formed), as LAPACK does, so U carries the zero on its diagonal."""
    nbatch, m, n = a.shape
    for b in range(nbatch):
        for i in range(m):
            permutation[b, i] = i
        for j in range(min(m, n)):
            p = j
            best = abs(a[b, j, j])
            for i in range(j + 1, m):
                v = abs(a[b, i, j])
                if v > best:
                    p, best = i, v
            pivots[b, j] = p
            if p != j:
                for c in range(n):
                    a[b, j, c], a[b, p, c] = a[b, p, c], a[b, j, c]
                permutation[b, j], permutation[b, p] = permutation[b, p], permutation[b, j]
            d = a[b, j, j]
            if d != 0:
                for i in range(j + 1, m):
                    a[b, i, j] /= d
            for i in range(j + 1, m):
                f = a[b, i, j]
                for c in range(j + 1, n):
                    a[b, i, c] -= f * a[b, j, c]


def lu(a):
    """lax.linalg.lu on a numpy array (..., m, n): [lu, pivots, permutation], the
    unit lower factor below the diagonal of `lu` and the upper factor on and above
    it; pivots[i] is the row swapped with row i at step i, and a[permutation] = L U."""
    m, n = a.shape[-2:]
    lead = a.shape[:-2]
    nbatch = int(np.prod(lead, dtype=np.int64))
    work = np.array(a.reshape((nbatch, m, n)), order="C", copy=True)
    pivots = np.empty((nbatch, min(m, n)), np.int32)
    permutation = np.empty((nbatch, m), np.int32)
    if work.size or permutation.size:
        _getrf(work, pivots, permutation)
    return [work.reshape(a.shape), pivots.reshape(lead + (min(m, n),)),
            permutation.reshape(lead + (m,))]
