"""scipy.linalg over fnad's linear-algebra primitives, with JAX's jax.scipy.linalg
signatures: factorizations and triangular solves batched over leading axes, expm as
a composite (scaling and squaring over a [13/13] Pade approximant) and the matrix
equations built on them, all differentiable, jittable and vmappable; the special
matrices (_matrices.py); and the Schur-based functions of a general matrix (schur,
hessenberg, rsf2csf, sqrtm, funm), which have no derivatives, as in JAX.

scipy's overwrite_* and check_finite arguments are accepted for compatibility; fnad
never overwrites its inputs and checks nothing extra. As in fnad.numpy.linalg, a
matrix that is not positive definite (cholesky) or singular (solve, inv) raises
numpy.linalg.LinAlgError eagerly."""
import math

from typing import Any, Callable

import numpy as np

from ..array import Array
from ..errors import ShapeError
from ..primitives import linalg as L
from ..primitives import decompositions as D
from ..primitives import nonsymmetric as N
from ..lax import stop_gradient
from ..numpy import linalg as nla
from .. import numpy as jnp
from ..typing import ArrayLike

from ._matrices import (  # noqa: F401
    toeplitz, hankel, circulant, companion, fiedler, fiedler_companion, leslie,
    convolution_matrix, dft, hadamard, helmert, hilbert, invhilbert, pascal, invpascal)

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "lu", "lu_factor",
           "lu_solve", "expm", "expm_frechet", "det", "inv", "solve", "solve_sylvester",
           "eigh", "eigh_tridiagonal", "svd", "qr", "qr_multiply", "polar", "block_diag",
           "toeplitz", "hankel", "circulant", "companion", "fiedler", "fiedler_companion",
           "leslie", "convolution_matrix", "dft", "hadamard", "helmert", "hilbert",
           "invhilbert", "pascal", "invpascal", "schur", "rsf2csf", "hessenberg", "sqrtm",
           "funm"]


def _floats(name: str, *arrays: Any) -> list[Array]:
    values = [jnp.asarray(a) for a in arrays]
    out = np.dtype(jnp.result_type(*values))
    if out.kind != "f":
        out = np.dtype(jnp.promote_types(out, jnp.float32))
    if out == np.float16:
        raise TypeError(f"{name}: float16 is not supported in linalg; use float32 or float64")
    return [a.astype(out) for a in values]


def _matrix(name: str, a: Array, square: bool = True) -> Array:
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        what = "a square matrix (..., n, n)" if square else "a matrix (..., m, n)"
        raise ShapeError(f"{name}: expected {what}, got shape {tuple(a.shape)}")
    return a


def _rhs(name: str, a: Array, b: Array) -> tuple[Array, Array, bool]:
    """b as a stack of matrices with a's leading axes broadcast against its own, and
    whether it was a vector (of a.shape[-1] entries, or a stack of them)."""
    n = a.shape[-1]
    vector = b.ndim == a.ndim - 1
    if vector:
        b = jnp.expand_dims(b, -1)
    if b.ndim < 2 or b.shape[-2] != n:
        raise ShapeError(f"{name}: a has shape {tuple(a.shape)}, so b needs {n} rows "
                         f"(shape (..., {n}) or (..., {n}, k)); got {tuple(b.shape)}")
    lead = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    a = jnp.broadcast_to(a, lead + tuple(a.shape[-2:]))
    b = jnp.broadcast_to(b, lead + tuple(b.shape[-2:]))
    return a, b, vector


def _unvector(x: Array, vector: bool) -> Array:
    return x[..., 0] if vector else x


# --------------------------------------------------------------------------- cholesky

def cholesky(a: ArrayLike, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Array:
    """The Cholesky factor, reading only the `lower` (or upper) triangle of a:
    a = L L^H (lower) or U^H U."""
    a, = _floats("cholesky", a)
    _matrix("cholesky", a)
    if lower:
        return L.cholesky(a, symmetrize_input=False)
    # The upper triangle of a is the lower one of a^H; and U = L^H.
    factor = L.cholesky(jnp.conj(jnp.matrix_transpose(a)), symmetrize_input=False)
    return jnp.conj(jnp.matrix_transpose(factor))


def cho_factor(a: ArrayLike, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Array, bool]:
    """(c, lower) for cho_solve; c's other triangle holds zeros (scipy's, garbage)."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[ArrayLike, bool], b: ArrayLike, overwrite_b: bool = False,
              check_finite: bool = True) -> Array:
    """x with a x = b, from cho_factor's (c, lower)."""
    c, lower = c_and_lower
    c, b = _floats("cho_solve", c, b)
    c, b, vector = _rhs("cho_solve", _matrix("cho_solve", c), b)
    # a = C C^H (lower) or C^H C: one solve with each triangle, C^H as conj(C)
    # transposed.
    first = L.triangular_solve(c if lower else jnp.conj(c), b, left_side=True, lower=lower,
                               transpose_a=not lower)
    x = L.triangular_solve(jnp.conj(c) if lower else c, first, left_side=True, lower=lower,
                           transpose_a=lower)
    return _unvector(x, vector)


# --------------------------------------------------------------------------- triangular

_TRANS = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(a: ArrayLike, b: ArrayLike, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug: ArrayLike | None = None, check_finite: bool = True) -> Array:
    """x with op(a) x = b, op(a) = a (trans 0 or 'N') or a^T (1, 'T', 2, 'C'), reading
    only the lower (or upper) triangle of a, and not its diagonal if unit_diagonal."""
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got "
                         f"{trans!r}")
    a, b = _floats("solve_triangular", a, b)
    a, b, vector = _rhs("solve_triangular", _matrix("solve_triangular", a), b)
    if trans in (2, "C"):
        a = jnp.conj(a)
    x = L.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=_TRANS[trans],
                           unit_diagonal=unit_diagonal)
    return _unvector(x, vector)


# --------------------------------------------------------------------------- lu

def _permutation_matrix(permutation, dtype):
    """P with P[..., i, j] = (permutation[..., i] == j): (P a)[i] = a[permutation[i]]."""
    m = permutation.shape[-1]
    return (jnp.expand_dims(permutation, -1) == jnp.arange(m, dtype=np.int32)).astype(dtype)


def lu(a: ArrayLike, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True
      ) -> Any:
    """(p, l, u) with a = p l u, p a permutation matrix, l unit lower (m x k) and u
    upper (k x n), k = min(m, n); with permute_l, (p l, u)."""
    a, = _floats("lu", a)
    m, n = _matrix("lu", a, square=False).shape[-2:]
    k = min(m, n)
    factors, _, permutation = D.lu(a)
    lower = jnp.tril(factors[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    upper = jnp.triu(factors[..., :k, :])
    p = jnp.matrix_transpose(_permutation_matrix(permutation, a.dtype))
    if permute_l:
        return jnp.matmul(p, lower), upper
    return p, lower, upper


def lu_factor(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True
             ) -> tuple[Array, Array]:
    """(lu, piv) as LAPACK's getrf: both factors in one array, and zero-based int32
    pivots (row i was swapped with row piv[i])."""
    a, = _floats("lu_factor", a)
    factors, pivots, _ = D.lu(_matrix("lu_factor", a, square=False))
    return factors, pivots


def lu_solve(lu_and_piv: tuple[ArrayLike, ArrayLike], b: ArrayLike, trans: int | str = 0,
             overwrite_b: bool = False, check_finite: bool = True) -> Array:
    """x with a x = b (trans 0), a^T x = b (1) or a^H x = b (2), from lu_factor's
    (lu, piv)."""
    factors, pivots = lu_and_piv
    if trans not in _TRANS:
        raise ValueError(f"lu_solve: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    factors, b = _floats("lu_solve", factors, b)
    factors, b, vector = _rhs("lu_solve", _matrix("lu_solve", factors), b)
    if trans in (2, "C"):       # conj(a) has the conjugate factors, pivoted alike
        factors = jnp.conj(factors)
    m = factors.shape[-1]
    pivots = jnp.broadcast_to(jnp.asarray(pivots), tuple(factors.shape[:-2]) + (m,))
    p = _permutation_matrix(D.lu_pivots_to_permutation(pivots, m), factors.dtype)
    solve = L.triangular_solve
    if not _TRANS[trans]:
        # a = P^T L U: x = U^-1 L^-1 P b
        y = solve(factors, jnp.matmul(p, b), left_side=True, lower=True, unit_diagonal=True)
        x = solve(factors, y, left_side=True, lower=False)
    else:
        # a^T = U^T L^T P: x = P^T L^-T U^-T b
        y = solve(factors, b, left_side=True, lower=False, transpose_a=True)
        y = solve(factors, y, left_side=True, lower=True, transpose_a=True,
                  unit_diagonal=True)
        x = jnp.matmul(jnp.matrix_transpose(p), y)
    return _unvector(x, vector)


# --------------------------------------------------------------------------- expm
#
# Higham (2005), "The scaling and squaring method for the matrix exponential
# revisited": exp(A) = r(A / 2^s)^(2^s) with r the [13/13] Pade approximant, s the
# least with |A / 2^s|_1 <= theta_13. Differentiating these steps gives the Frechet
# derivative by Al-Mohy & Higham's (2009) algorithm, so no separate rule is needed.

_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
# Higham's bounds on |A|_1 for a [13/13] approximant accurate to unit roundoff; the
# float32 one is his single-precision bound for degree 7, which degree 13 meets too.
_THETA13 = {np.dtype(np.float64): 5.371920351148152, np.dtype(np.float32): 3.925724783138660}


def _pade13(a):
    b = _PADE13
    eye = jnp.eye(a.shape[-1], dtype=a.dtype)
    a2 = jnp.matmul(a, a)
    a4 = jnp.matmul(a2, a2)
    a6 = jnp.matmul(a4, a2)
    u = jnp.matmul(a, jnp.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                   + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = (jnp.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
         + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye)
    return nla.solve(v - u, v + u)


def expm(A: ArrayLike, *, upper_triangular: bool = False, max_squarings: int = 16
        ) -> Array:  # noqa: N803 (scipy's name)
    """The matrix exponential of each matrix in A's last two axes. A matrix whose norm
    needs more than max_squarings squarings gives NaN, as in JAX. upper_triangular is
    JAX's speed hint and changes no result here."""
    A, = _floats("expm", A)
    _matrix("expm", A)
    if A.shape[-1] == 0:
        return A
    norm = stop_gradient(jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1))
    theta = _THETA13[np.dtype(np.finfo(A.dtype).dtype)]     # a complex A: its parts' width
    # The number of squarings is piecewise constant in A: no derivative flows through it.
    squarings = jnp.maximum(jnp.ceil(jnp.log2(jnp.maximum(norm, theta) / theta)), 0)
    scale = jnp.exp2(-squarings)[..., None, None].astype(A.dtype)
    r = _pade13(A * scale)
    steps = squarings[..., None, None]
    loops = max_squarings
    if type(squarings) is Array:
        # Concrete (eager, untraced): loop only as often as some matrix needs. Traced,
        # the count is data and every step is staged.
        loops = min(max_squarings, int(np.max(np.asarray(squarings), initial=0)))
    for i in range(loops):
        # Each matrix squares only while it still needs to; the others square zeros, so
        # no overflow of a finished result can reach a gradient as inf * 0.
        more = steps > i
        live = jnp.where(more, r, 0)
        r = jnp.where(more, jnp.matmul(live, live), r)
    return jnp.where(steps > max_squarings, np.nan, r).astype(A.dtype)


def expm_frechet(A: ArrayLike, E: ArrayLike, *, method: str | None = None,
                 compute_expm: bool = True) -> Any:  # noqa: N803 (scipy's names)
    """The Frechet derivative L(A, E) of expm at A in direction E, with expm(A) first
    when compute_expm: the upper right block of expm([[A, E], [0, A]]) (Higham 2008,
    "Functions of Matrices", thm. 3.6), whose top left block is expm(A)."""
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"expm_frechet: method must be None, 'SPS' or 'blockEnlarge', got "
                         f"{method!r}")
    A, E = _floats("expm_frechet", A, E)
    if A.shape != E.shape:
        raise ShapeError(f"expm_frechet: A and E must have one shape, got {tuple(A.shape)} "
                         f"and {tuple(E.shape)}")
    n = _matrix("expm_frechet", A).shape[-1]
    top = jnp.concatenate([A, E], axis=-1)
    bottom = jnp.concatenate([jnp.zeros_like(A), A], axis=-1)
    big = expm(jnp.concatenate([top, bottom], axis=-2))
    frechet = big[..., :n, n:]
    return (big[..., :n, :n], frechet) if compute_expm else frechet


def polar(a: ArrayLike, side: str = 'right', *, method: str | None = 'qdwh',
          eps: float | None = None, max_iterations: int | None = None) -> tuple[Array, Array]:
    """(u, p): a = u p (side 'right') or p u ('left'), u with orthonormal columns (rows)
    and p symmetric positive semidefinite. Computed from the SVD whichever method is
    named (JAX's 'qdwh' iteration converges to the same factors)."""
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}")
    a, = _floats("polar", a)
    u, s, vh = nla.svd(_matrix("polar", a, square=False), full_matrices=False)
    unitary = jnp.matmul(u, vh)
    if side == "right":
        p = jnp.matmul(jnp.matrix_transpose(vh) * s[..., None, :], vh)
    else:
        p = jnp.matmul(u * s[..., None, :], jnp.matrix_transpose(u))
    return unitary, p


def solve_sylvester(A: ArrayLike, B: ArrayLike, C: ArrayLike, *, method: str | None = 'schur',
                    tol: float = 1e-08) -> Array:  # noqa: N803 (scipy's names)
    """X with A X + X B = C, as one linear system in X's n m entries:
    (A kron I_m + I_n kron B^T) vec(X) = vec(C) (row-major vec). Its cost grows as
    (n m)^3, fine for the small matrices this is for. Singular when A and -B share an
    eigenvalue (LinAlgError)."""
    if method not in ("schur", "eigen"):
        raise ValueError(f"solve_sylvester: method must be 'schur' or 'eigen', got "
                         f"{method!r}")
    A, B, C = _floats("solve_sylvester", A, B, C)
    n, m = _matrix("solve_sylvester", A).shape[-1], _matrix("solve_sylvester", B).shape[-1]
    if A.ndim != 2 or B.ndim != 2 or tuple(C.shape) != (n, m):
        raise ShapeError(f"solve_sylvester: A (n, n), B (m, m) and C (n, m) expected, got "
                         f"{tuple(A.shape)}, {tuple(B.shape)} and {tuple(C.shape)}")
    system = (jnp.kron(A, jnp.eye(m, dtype=A.dtype))
              + jnp.kron(jnp.eye(n, dtype=A.dtype), jnp.matrix_transpose(B)))
    return jnp.reshape(nla.solve(system, jnp.reshape(C, (n * m,))), (n, m))


def qr_multiply(a: ArrayLike, c: ArrayLike, mode: str = 'right', pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False, overwrite_c: bool = False
               ) -> tuple[Array, Array]:
    """(c Q, R) for mode 'right' or (Q c, R) for 'left', Q and R of a's economic QR."""
    if mode not in ("right", "left"):
        raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    if pivoting:
        raise ValueError("qr_multiply: pivoting=True (column-pivoted QR) is not supported")
    a, c = _floats("qr_multiply", a, c)
    q, r = nla.qr(_matrix("qr_multiply", a, square=False))
    vector = c.ndim == 1
    if mode == "right":
        out = jnp.matmul(c, q)
    else:
        out = jnp.matmul(q, c)
    return (out if not vector else jnp.reshape(out, (-1,))), r


def eigh_tridiagonal(d: ArrayLike, e: ArrayLike, *, eigvals_only: bool = False, select: str = 'a',
                     select_range: Any = None, tol: float | None = None, key: ArrayLike | None = None
                    ) -> Any:
    """The eigenvalues (and eigenvectors unless eigvals_only) of the symmetric
    tridiagonal matrix with diagonal d and off-diagonal e, ascending; select 'i' keeps
    those of indices select_range = (lo, hi), inclusive."""
    if select not in ("a", "i"):
        raise ValueError(f"eigh_tridiagonal: select must be 'a' or 'i' (by index), got "
                         f"{select!r}")
    d, e = _floats("eigh_tridiagonal", d, e)
    n = d.shape[-1]
    if d.ndim != 1 or tuple(e.shape) != (max(n - 1, 0),):
        raise ShapeError(f"eigh_tridiagonal: d (n,) and e (n - 1,) expected, got "
                         f"{tuple(d.shape)} and {tuple(e.shape)}")
    t = jnp.diag(d) + jnp.diag(e, 1) + jnp.diag(e, -1)
    v, w = D.eigh(t, symmetrize_input=False)
    if select == "i":
        lo, hi = select_range
        w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    return w if eigvals_only else (w, v)


# --------------------------------------------------------------------------- general matrices
# (no derivatives: see fnad.primitives.nonsymmetric)

def schur(a: ArrayLike, output: str = 'real') -> tuple[Array, Array]:
    """(T, Z) with a = Z T Z^T: T quasi upper triangular (output 'real', 2x2 blocks for
    complex conjugate eigenvalues) or upper triangular and complex ('complex')."""
    a, = _floats("schur", a)
    return N.schur(_matrix("schur", a), output=output)


def rsf2csf(T: ArrayLike, Z: ArrayLike, check_finite: bool = True
           ) -> tuple[Array, Array]:  # noqa: N803 (scipy's names)
    """The complex Schur form (T, Z) of a real one."""
    T, Z = _floats("rsf2csf", T, Z)
    return N.rsf2csf(T, Z)


def hessenberg(a: ArrayLike, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
    """H (and Q with calc_q) with a = Q H Q^T, H upper Hessenberg."""
    a, = _floats("hessenberg", a)
    h, q = N.hessenberg(_matrix("hessenberg", a))
    return (h, q) if calc_q else h


def sqrtm(A: ArrayLike, blocksize: int = 1) -> Array:  # noqa: N803 (scipy's name)
    """The principal square root X (X @ X = A) of a real square matrix, complex as in
    JAX, by the Schur method (Bjorck & Hammarling 1983). blocksize is scipy's tuning
    knob and changes nothing here."""
    A, = _floats("sqrtm", A)
    return N.sqrtm(_matrix("sqrtm", A))


def funm(A: ArrayLike, func: Callable[..., Any], disp: bool = True
        ) -> Any:  # noqa: N803 (scipy's name)
    """func(A) for a real square A, func applied to the eigenvalues on the diagonal of
    A's complex Schur form (an fnad function of an array), the rest by Parlett's
    recurrence; complex as in JAX. With disp False, (F, errest), errest scipy's
    estimate of the relative error: 1 where repeated eigenvalues in a nontrivial
    Jordan block make the recurrence unreliable (scipy's and JAX's result there too)."""
    A, = _floats("funm", A)
    t, z = N.schur(_matrix("funm", A), output="complex")
    diagonal = jnp.diagonal(t, axis1=-2, axis2=-1)
    f, gap = N.parlett(t, jnp.asarray(func(diagonal)).astype(t.dtype))
    f = jnp.matmul(jnp.matmul(z, f), jnp.conj(jnp.matrix_transpose(z)))
    if disp:
        return f
    eps = float(np.finfo(gap.dtype).eps)
    gap = jnp.where(gap == 0, eps, gap)
    upper = jnp.abs(jnp.triu(t, 1))
    estimate = jnp.minimum(1.0, jnp.maximum(eps, eps / gap * jnp.max(jnp.sum(upper, axis=-2),
                                                                      axis=-1)))
    blown = jnp.any(jnp.isinf(f), axis=(-2, -1))
    return f, jnp.where(blown, np.inf, estimate).astype(gap.dtype)


# --------------------------------------------------------------------------- the rest

def det(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The determinant of a square matrix, as scipy.linalg.det; `overwrite_a` and
    `check_finite` are accepted for compatibility and have no effect (arrays are immutable)."""
    return nla.det(a)


def inv(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The inverse of a square matrix, as scipy.linalg.inv; `overwrite_a` and `check_finite`
    are accepted for compatibility and have no effect."""
    return nla.inv(a)


def solve(a: ArrayLike, b: ArrayLike, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = 'gen') -> Array:
    """x with a x = b. assume_a 'gen' uses LU; 'sym'/'her' too (a is read whole);
    'pos' uses the Cholesky factor of the `lower` (or upper) triangle."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"solve: assume_a must be 'gen', 'sym', 'her' or 'pos', got "
                         f"{assume_a!r}")
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    a, b = _floats("solve", a, b)
    a, b, vector = _rhs("solve", _matrix("solve", a), b)
    return _unvector(L.solve(a, b), vector)


def eigh(a: ArrayLike, b: ArrayLike | None = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True) -> Any:
    """(w, v) of a symmetric a, reading its `lower` (or upper) triangle; w alone with
    eigvals_only. The generalized problem (b) is not supported."""
    if b is not None or eigvals is not None or type != 1:
        raise ValueError("eigh: only the standard problem is supported (b=None, "
                         "eigvals=None, type=1)")
    a, = _floats("eigh", a)
    v, w = D.eigh(_matrix("eigh", a), lower=lower, symmetrize_input=False)
    return w if eigvals_only else (w, v)


def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True,
        overwrite_a: bool = False, check_finite: bool = True, lapack_driver: str = 'gesdd') -> Any:
    """(U, s, Vh), or s alone when compute_uv is False."""
    out = nla.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def qr(a: ArrayLike, overwrite_a: bool = False, lwork: int | None = None, mode: str = 'full',
       pivoting: bool = False, check_finite: bool = True) -> tuple[Array, ...]:
    """(Q, R) with mode 'full' (Q m x m) or 'economic' (Q m x k); (R,) for mode 'r'."""
    if pivoting:
        raise ValueError("qr: pivoting=True (column-pivoted QR) is not supported")
    modes = {"full": "complete", "economic": "reduced", "r": "r"}
    if mode not in modes:
        raise ValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    out = nla.qr(a, mode=modes[mode])
    return (out,) if mode == "r" else tuple(out)


def block_diag(*arrs: ArrayLike) -> Array:
    """The matrices (1-d arrays are rows, scalars 1 x 1) laid along the diagonal of one
    matrix, zeros elsewhere."""
    if not arrs:
        return jnp.zeros((1, 0))
    matrices = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    for a in matrices:
        if a.ndim != 2:
            raise ShapeError(f"block_diag: arguments must have at most 2 dimensions, got "
                             f"shape {tuple(a.shape)}")
    dtype = jnp.result_type(*matrices)
    width = math.fsum(a.shape[1] for a in matrices)
    rows, left = [], 0
    for a in matrices:
        right = int(width) - left - a.shape[1]
        rows.append(jnp.pad(a.astype(dtype), ((0, 0), (left, right))))
        left += a.shape[1]
    return jnp.concatenate(rows, axis=0)
