"""Linear-algebra kernels numpy lacks: a batched triangular solve.

numpy has no triangular solve; np.linalg.solve on the triangle would cost an O(n^3)
LU per matrix where substitution is O(n^2) per right-hand side. Compiled lazily,
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
