"""Linear algebra on the GPU for batches of small matrices: a thread factors one
matrix (Cholesky, or LU with partial pivoting as LAPACK's getrf does it), and
substitution runs a thread per right-hand-side column.

Where the cpu raises numpy.linalg.LinAlgError (a matrix that is not positive
definite, a singular system) the kernels flag the matrix and the call raises the
same error: the flags are read back once per call, the price of not returning a
silent NaN."""
import math

import numpy as np

from . import runtime
from .registry import implements
from .runtime import launch
from .shape import copy, flat, size
from ...primitives import linalg as L
from ...primitives import decompositions as D
from ...primitives import nonsymmetric as N

cuda = runtime.cuda()


@cuda.jit(cache=True)
def _cholesky(a, out, m, failed):
    """out[t] = the lower factor of a[t], reading a's lower triangle (LAPACK's potf2
    order: each diagonal entry, then the column below it)."""
    t = cuda.grid(1)
    while t < failed.size:
        base = t * m * m
        failed[t] = 0
        for j in range(m):
            s = a[base + j * m + j]
            for k in range(j):
                s -= out[base + j * m + k] * out[base + j * m + k]
            if not s > 0:   # NaN fails too, as in LAPACK
                failed[t] = 1
                break
            d = math.sqrt(s)
            out[base + j * m + j] = d
            for i in range(j + 1, m):
                s = a[base + i * m + j]
                for k in range(j):
                    s -= out[base + i * m + k] * out[base + j * m + k]
                out[base + i * m + j] = s / d
                out[base + j * m + i] = 0
        t += cuda.gridsize(1)


@cuda.jit(device=True)
def _substitute_column(a, abase, x, xbase, m, row_step, lower, transpose, unit_diagonal):
    """Solve op(A) y = x in place for one column, op(A) = A or A^T, reading only the
    lower (or upper) triangle of A, as the cpu's substitution does; the column's
    entry i is x[xbase + i * row_step]."""
    forward = lower != transpose
    for step in range(m):
        i = step if forward else m - 1 - step
        lo = 0 if forward else i + 1
        hi = i if forward else m
        xi = x[xbase + i * row_step]
        for j in range(lo, hi):
            coefficient = a[abase + j * m + i] if transpose else a[abase + i * m + j]
            if coefficient != 0:
                xi -= coefficient * x[xbase + j * row_step]
        if not unit_diagonal:
            xi /= a[abase + i * m + i]
        x[xbase + i * row_step] = xi


@cuda.jit(cache=True)
def _triangular(a, x, m, k, row_step, column_step, lower, transpose, unit_diagonal):
    """A thread per column c of each x[t] (m by k, entry (i, c) at i * row_step +
    c * column_step: that also describes a transposed right-side problem)."""
    f = cuda.grid(1)
    while f < x.size // m:
        t = f // k
        _substitute_column(a, t * m * m, x, t * m * k + (f % k) * column_step, m, row_step,
                           lower, transpose, unit_diagonal)
        f += cuda.gridsize(1)


@cuda.jit(device=True)
def _lu(lu, base, m, pivots, pbase):
    """Factor the matrix at lu[base:] in place as P A = L U (unit L below the
    diagonal, U on and above), pivoting on the first largest magnitude and recording
    the row swapped into place j at pivots[pbase + j]. Returns (det P, whether a
    pivot is exactly zero): getrf's info. Its column is then all zero below the
    diagonal, so skipping the elimination matches getrf going on."""
    sign = 1
    singular = False
    for j in range(m):
        p = j
        for i in range(j + 1, m):
            if abs(lu[base + i * m + j]) > abs(lu[base + p * m + j]):
                p = i
        pivots[pbase + j] = p
        if p != j:
            sign = -sign
            for c in range(m):
                upper = lu[base + j * m + c]
                lu[base + j * m + c] = lu[base + p * m + c]
                lu[base + p * m + c] = upper
        pivot = lu[base + j * m + j]
        if pivot == 0:
            singular = True
        else:
            for i in range(j + 1, m):
                factor = lu[base + i * m + j] / pivot
                lu[base + i * m + j] = factor
                for c in range(j + 1, m):
                    lu[base + i * m + c] -= factor * lu[base + j * m + c]
    return sign, singular


@cuda.jit(cache=True)
def _factor(lu, m, pivots, failed):
    t = cuda.grid(1)
    while t < failed.size:
        sign, singular = _lu(lu, t * m * m, m, pivots, t * m)
        failed[t] = 1 if singular else 0
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _lu_solve(lu, pivots, x, m, k):
    """x[t] = A[t]^-1 x[t] from the factors: a thread per column."""
    f = cuda.grid(1)
    while f < x.size // m:
        t = f // k
        xbase = t * m * k + f % k
        for j in range(m):
            p = pivots[t * m + j]
            if p != j:
                swapped = x[xbase + j * k]
                x[xbase + j * k] = x[xbase + p * k]
                x[xbase + p * k] = swapped
        _substitute_column(lu, t * m * m, x, xbase, m, k, True, False, True)
        _substitute_column(lu, t * m * m, x, xbase, m, k, False, False, False)
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _determinants(lu, m, pivots, first, log_out, want_log):
    """Factor each matrix in place, then write det into `first`, or (want_log) the
    sign into `first` and log|det| into log_out, as numpy's slogdet: (0, -inf) for
    a singular matrix."""
    t = cuda.grid(1)
    while t < first.size:
        base = t * m * m
        sign, singular = _lu(lu, base, m, pivots, t * m)
        if singular:
            first[t] = 0
            if want_log:
                log_out[t] = -math.inf
        elif want_log:
            log = 0.0
            for j in range(m):
                u = lu[base + j * m + j]
                if u < 0:
                    sign = -sign
                log += math.log(abs(u))
            first[t] = sign
            log_out[t] = log
        else:
            det = 1.0 * sign
            for j in range(m):
                det *= lu[base + j * m + j]
            first[t] = det
        t += cuda.gridsize(1)


# --------------------------------------------------------------------------- helpers

def _batch(a):
    """(number of matrices, their order)."""
    shape = tuple(a.shape)
    return size(shape[:-2]), shape[-1]


def _raise_if(failed, message):
    if failed.size and failed.copy_to_host().any():
        raise np.linalg.LinAlgError(message)


def _determinant_impl(a, want_log):
    nbatch, m = _batch(a)
    shape = tuple(a.shape)[:-2]
    first, log = runtime.empty(shape, a.dtype), runtime.empty(shape, a.dtype)
    launch(_determinants, nbatch, flat(copy(a)), m, runtime.empty((nbatch * m,), np.int64),
           flat(first), flat(log), want_log)
    return [first, log] if want_log else first


# --------------------------------------------------------------------------- kernels

@implements(L.cholesky_p)
def _cholesky_impl(a):
    nbatch, m = _batch(a)
    out = runtime.empty(a.shape, a.dtype)
    failed = runtime.empty((nbatch,), np.int32)
    launch(_cholesky, nbatch, flat(a), flat(out), m, failed)
    _raise_if(failed, "Matrix is not positive definite")
    return out


@implements(L.triangular_solve_p)
def _triangular_solve(a, b, left_side, lower, transpose_a, unit_diagonal):
    nbatch, m = _batch(a)
    x = copy(b)
    if left_side:       # b[t] is m by k
        k, row_step, column_step = tuple(b.shape)[-1], tuple(b.shape)[-1], 1
    else:               # x op(a) = b is op(a)^T x^T = b^T, and b[t] is k by m
        k, row_step, column_step = tuple(b.shape)[-2], 1, m
        transpose_a = not transpose_a
    launch(_triangular, nbatch * k * (m > 0), flat(a), flat(x), m, k, row_step,
           column_step, lower, transpose_a, unit_diagonal)
    return x


@implements(L.solve_p)
def _solve(a, b):
    nbatch, m = _batch(a)
    lu = copy(a)
    pivots = runtime.empty((nbatch * m,), np.int64)
    failed = runtime.empty((nbatch,), np.int32)
    launch(_factor, nbatch, flat(lu), m, pivots, failed)
    _raise_if(failed, "Singular matrix")
    x = copy(b)
    k = tuple(b.shape)[-1]
    launch(_lu_solve, nbatch * k * (m > 0), flat(lu), pivots, flat(x), m, k)
    return x


@implements(L.det_p)
def _det(a):
    return _determinant_impl(a, want_log=False)


@implements(L.slogdet_p)
def _slogdet(a):
    return _determinant_impl(a, want_log=True)


# --------------------------------------------------------------------------- decompositions
#
# The decompositions (decompositions.py, nonsymmetric.py) and tridiagonal_solve run on
# the host: a one-thread-per-matrix Jacobi or Householder kernel would be slower than
# LAPACK on the host for all but huge batches of tiny matrices, and its rounding (signs
# of singular vectors, pivot choices on ties) would differ from the cpu's, so cpu and
# GPU results could disagree beyond rounding. The copies are explicit, per call, and
# the results come back to the operands' device.

def _on_host(prim):
    def run(*values, **params):
        out = prim.impl(*(v.copy_to_host() for v in values), **params)
        if not prim.multiple_results:
            return runtime.to_device(out)
        return [runtime.to_device(o) for o in out]
    return run


for _prim in (D.eigh_p, D.svd_p, D.qr_p, D.lu_p, D.lu_pivots_to_permutation_p, N.eig_p,
              N.hessenberg_p, N.schur_p, N.rsf2csf_p, N.sqrtm_p, N.parlett_p,
              L.tridiagonal_solve_p):
    implements(_prim, complex_ok=True)(_on_host(_prim))      # numpy's kernels
