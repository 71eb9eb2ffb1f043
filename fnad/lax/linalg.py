"""fnad.lax.linalg: the linear-algebra primitives, with JAX's lax.linalg names, and the
few lax.linalg functions that are compositions of them."""
import numpy as np
from typing import Any

from ..errors import ShapeError
from ..primitives import shape as S
from ..primitives.elementwise import add_p, sub_p, mul_p
from ..primitives import decompositions as _D, linalg as _L, nonsymmetric as _N
from ..typing import Array
from ._results import returning_arrays

# Declared beside their primitives; Arrays for users (see _results).
cholesky = returning_arrays(_L.cholesky)
triangular_solve = returning_arrays(_L.triangular_solve)
tridiagonal_solve = returning_arrays(_L.tridiagonal_solve)
solve = returning_arrays(_L.solve)
slogdet = returning_arrays(_L.slogdet)
det = returning_arrays(_L.det)
inv = returning_arrays(_L.inv)
mm = returning_arrays(_L.mm)
mT = returning_arrays(_L.mT)
tril = returning_arrays(_L.tril)
eigh = returning_arrays(_D.eigh)
svd = returning_arrays(_D.svd)
qr = returning_arrays(_D.qr)
lu = returning_arrays(_D.lu)
lu_pivots_to_permutation = returning_arrays(_D.lu_pivots_to_permutation)
eig = returning_arrays(_N.eig)
schur = returning_arrays(_N.schur)

__all__ = ["ShapeError", "cholesky", "cholesky_update", "det", "eig", "eigh",
           "householder_product", "inv", "lu", "lu_pivots_to_permutation", "mT", "mm", "qr",
           "schur", "slogdet", "solve", "svd", "symmetric_product", "triangular_solve",
           "tridiagonal_solve", "tril"]


def symmetric_product(a_matrix: Array, c_matrix: Array, *, alpha: Any = 1.0, beta: Any = 0.0,
                      symmetrize_output: bool = False) -> Array:
    """alpha a a^T + beta c; with symmetrize_output, the lower triangle mirrored onto
    the upper one (LAPACK's syrk computes only one triangle)."""
    out = mm(a_matrix, mT(a_matrix))
    dtype = out.dtype
    out = add_p.bind(mul_p.bind(out, np.asarray(alpha, dtype)),
                     mul_p.bind(c_matrix, np.asarray(beta, dtype)))
    if symmetrize_output:
        out = add_p.bind(tril(out), mT(tril(out, -1)))
    return out


def cholesky_update(r_matrix: Array, w_vector: Array) -> Array:
    """The upper Cholesky factor of r^T r + w w^T, given the upper factor r of r^T r.
    (Refactored in O(n^3), not by rotations in O(n^2): the same factor, unique for a
    positive diagonal.)"""
    if tuple(w_vector.shape) != tuple(r_matrix.shape[:-1]):
        raise ShapeError(f"cholesky_update: w must have shape {tuple(r_matrix.shape[:-1])}, "
                         f"got {tuple(w_vector.shape)}")
    column = S.reshape(w_vector, tuple(w_vector.shape) + (1,))
    updated = add_p.bind(mm(mT(r_matrix), r_matrix), mm(column, mT(column)))
    return mT(cholesky(updated, symmetrize_input=False))


def householder_product(a: Array, taus: Array) -> Array:
    """The first n columns of H_0 H_1 ... H_{k-1}, H_i = I - taus[i] v_i v_i^T with v_i
    zero above i, 1 at i and a[i + 1:, i] below (the reflectors LAPACK's geqrf leaves
    in a); LAPACK's orgqr."""
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    if k > min(m, n) or tuple(taus.shape[:-1]) != tuple(a.shape[:-2]):
        raise ShapeError(f"householder_product: taus must have shape (..., k) with a's "
                         f"leading axes and k <= min(m, n); got a {tuple(a.shape)} and taus "
                         f"{tuple(taus.shape)}")
    lead = tuple(a.shape[:-2])
    nb = len(lead)
    vectors = add_p.bind(mul_p.bind(a, np.tri(m, n, -1, dtype=a.dtype)),
                         np.eye(m, n, dtype=a.dtype))
    q = S.broadcast_in_dim(np.eye(m, n, dtype=a.dtype), lead + (m, n), (nb, nb + 1))
    for i in reversed(range(k)):
        v = S.slice(vectors, (0,) * (nb + 1) + (i,), lead + (m, i + 1))      # (..., m, 1)
        tau = S.slice(taus, (0,) * nb + (i,), lead + (i + 1,))               # (..., 1)
        tau = S.reshape(tau, lead + (1, 1))
        q = sub_p.bind(q, mul_p.bind(tau, mm(v, mm(mT(v), q))))
    return q
