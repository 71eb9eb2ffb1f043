"""Matrix decompositions: eigh, svd, qr, lu (with lu_pivots_to_permutation).

Like the rest of linear algebra (linalg.py, whose kit they use), each acts on the last
two axes and maps over the leading ones, and its derivative rules are written with
primitives, so they differentiate again. Each section states its JVP and the
transpose the VJP implements, with a reference. (eig and the Schur form of a general
matrix, which have none, are in nonsymmetric.py.)
"""
from typing import Any

import numpy as np

from .. import dtypes
from ..abstract import ShapedArray
from ..errors import ShapeError, DTypeError, GradientError
from ..kernels.cpu import linalg as kernels
from ..typing import Array
from . import shape as S
from .reduce import reduce_sum
from .elementwise import add_p, sub_p, mul_p, div_p, eq_p
from .structural import convert_element_type_p
from .linalg import (as_dtype, checked, check_matrices, check_square, conj,
                     hermitian_from_triangle, leading, masked, mm, mT, onto_triangle,
                     real_diagonal_part, real_part, tril, triangular_solve_p)


# --------------------------------------------------------------------------- helpers for the
# decompositions: diagonals, row and column scalings, the reciprocal-gap matrix

def _diagonal(x):
    """(..., k, k) -> (..., k)"""
    return reduce_sum(masked(x, np.eye(x.shape[-1], dtype=bool)), (x.ndim - 1,))


def _diag_embed(v):
    """(..., k) -> (..., k, k) with v on the diagonal."""
    k = v.shape[-1]
    full = S.broadcast_in_dim(v, tuple(v.shape) + (k,), tuple(range(v.ndim - 1)) + (v.ndim,))
    return masked(full, np.eye(k, dtype=bool))


def _scale_columns(x, s):
    """x[..., i, j] * s[..., j]"""
    return mul_p.bind(x, S.expand_dims(s, (s.ndim - 1,)))


def _scale_rows(x, s):
    """x[..., i, j] * s[..., i]"""
    return mul_p.bind(x, S.expand_dims(s, (s.ndim,)))


def _gaps(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it. Equal values give
    inf (and NaN downstream), as JAX's rules do: the derivative does not exist there."""
    k = w.shape[-1]
    eye = np.eye(k, dtype=w.dtype)
    diff = sub_p.bind(S.expand_dims(w, (w.ndim - 1,)), S.expand_dims(w, (w.ndim,)))
    return sub_p.bind(div_p.bind(np.asarray(1, w.dtype), add_p.bind(diff, eye)), eye)


def _zero_or(x, like):
    return x if x is not None else np.zeros(tuple(like.shape), like.dtype)


def _sum_terms(*terms):
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else add_p.bind(out, t)
    return out


# --------------------------------------------------------------------------- eigh
#
# A = V diag(w) V^H for Hermitian A (only the `lower` or upper triangle read), w real
# and ascending. With C = V^H dA V and F the reciprocal gaps 1/(w_j - w_i):
#     dw = Re diag(C)         dV = V (F o C)
# and the transpose under the Re(ct * t) pairing, for cotangents (gV, gw):
#     ct_A = conj(V) (diag(gw) + F o (V^T gV)) V^T, folded onto the triangle read.
# (Magnus 1985; Giles 2008, "An extended collection of matrix derivative results".) dV
# keeps each eigenvector's phase where V^H dV has a zero diagonal, as JAX's does; a
# complex V's own phase is LAPACK's choice, so only phase-free functions of V (w,
# projectors V_i V_i^H) match finite differences.

def _eigh_shape(a, lower):
    check_square("eigh", a, complex_ok=True)
    return [ShapedArray(a.shape, a.dtype),
            ShapedArray(a.shape[:-1], dtypes.real_dtype(a.dtype))]


def _eigh_impl(a, lower):
    w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    return [v, w]


def _eigh_jvp(primals, tangents, lower):
    a, = primals
    ta, = tangents
    v, w = eigh_p.bind(a, lower=lower)
    c = mm(mT(conj(v)), mm(hermitian_from_triangle(ta, lower), v))
    return [v, w], [mm(v, mul_p.bind(as_dtype(_gaps(w), v.dtype), c)), real_part(_diagonal(c))]


def _eigh_vjp(cts, outs, a, lower):
    g_v, g_w = cts
    v, w = outs
    inner = _sum_terms(
        None if g_w is None else _diag_embed(as_dtype(g_w, v.dtype)),
        None if g_v is None else mul_p.bind(as_dtype(_gaps(w), v.dtype), mm(mT(v), g_v)))
    if inner is None:
        return (None,)
    return (onto_triangle(mm(conj(v), mm(inner, mT(v))), lower),)


eigh_p = leading("eigh", abstract_eval=_eigh_shape,
                 impl=checked(_eigh_shape, _eigh_impl),
                 jvp=_eigh_jvp, vjp=_eigh_vjp, multiple_results=True)


def _subset(name, subset_by_index, k):
    """(start, stop) of subset_by_index, checked, or None for all k."""
    if subset_by_index is None:
        return None
    start, stop = (int(i) for i in subset_by_index)
    if not 0 <= start <= stop <= k:
        raise ValueError(f"{name}: subset_by_index must be (start, end) with "
                         f"0 <= start <= end <= {k}, got {tuple(subset_by_index)}")
    return start, stop


def _take_last(x, start, stop):
    """x[..., start:stop]"""
    return S.slice(x, (0,) * (x.ndim - 1) + (start,), tuple(x.shape[:-1]) + (stop,))


def eigh(x: Array | np.ndarray, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: Any = None) -> tuple[Array, Array]:
    """lax.linalg.eigh: (v, w) with x = v diag(w) v^H, w real and ascending (always
    sorted, which sort_eigenvalues=False permits). With symmetrize_input, decomposes
    (x + x^H) / 2;
    otherwise reads only the lower (or upper) triangle of x. subset_by_index (start,
    end): only the eigenvalues of those (ascending) indices and their vectors.
    implementation picks among JAX's GPU algorithms; the cpu has LAPACK's alone."""
    if symmetrize_input:
        x = div_p.bind(add_p.bind(x, mT(conj(x))), np.asarray(2, x.dtype))
    v, w = eigh_p.bind(x, lower=bool(lower))
    subset = _subset("eigh", subset_by_index, x.shape[-1])
    if subset is not None:
        v, w = _columns(v, *subset), _take_last(w, *subset)
    return v, w


# --------------------------------------------------------------------------- svd
#
# A = U diag(s) V^T (m x n, k = min(m, n), thin factors). With C = U^T dA V,
# F[i, j] = 1 / (s_j^2 - s_i^2) and D = diag(s) (Townsend 2016, "Differentiating the
# singular value decomposition"; the rule JAX implements):
#     ds = diag(C)
#     dU = U (F o (C D + D C^T)) + (I - U U^T) dA V D^-1        (the last term when m > n)
#     dV = V (F o (D C + C^T D)) + (I - V V^T) dA^T U D^-1      (the last term when n > m)
# Its transpose, for cotangents (gs, gU, gV = gVt^T), with Gu = U^T gU, Gv = V^T gV:
#     ct_C = diag(gs) + (F o (Gu - Gu^T)) D + D (F o (Gv - Gv^T))
#     ct_A = U ct_C V^T + ((gU - U Gu) D^-1) V^T [m > n] + U D^-1 (gV - V Gv)^T [n > m]
# Repeated singular values make F infinite and zero ones make D^-1 infinite: the
# derivatives of U and V are then NaN or inf, as in JAX; s's own derivative stays finite.
# A complex A: C = U^H dA V, ds = Re diag(C), transposes conjugate (U^T -> U^H), and U
# takes JAX's phase term i Im diag(C) D^-1; the VJP is the JVP transposed under the
# Re(ct * t) pairing (X -> conj(X)^T is its own transpose).

def _svd_shape(a, full_matrices, compute_uv):
    check_matrices("svd", ("a", a), complex_ok=True)
    m, n = a.shape[-2:]
    lead = tuple(a.shape[:-2])
    s = ShapedArray(lead + (min(m, n),), dtypes.real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    k = min(m, n)
    u_cols, vt_rows = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(lead + (m, u_cols), a.dtype), ShapedArray(lead + (vt_rows, n), a.dtype)]


def _svd_impl(a, full_matrices, compute_uv):
    if not compute_uv:
        return [np.linalg.svd(a, compute_uv=False)]
    u, s, vt = np.linalg.svd(a, full_matrices=full_matrices)
    return [s, u, vt]


def _svd_derivable(a, full_matrices, compute_uv):
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        # The extra columns of a full U (or rows of Vt) are any orthonormal completion:
        # JAX defines no derivative for them either.
        raise GradientError(
            f"svd: U and Vt with full_matrices=True are differentiable only for square "
            f"matrices (got shape {tuple(a.shape)}), as in JAX: use full_matrices=False")


def _H(x):
    return mT(conj(x))


def _svd_scalars(s, dtype):
    """(F, s, 1/s, 1/s with 0 where s is 0) in the factors' dtype."""
    one = np.asarray(1, s.dtype)
    zero = convert_element_type_p.bind(eq_p.bind(s, np.asarray(0, s.dtype)),
                                       new_dtype=s.dtype)
    safe = sub_p.bind(div_p.bind(one, add_p.bind(s, zero)), zero)
    return tuple(as_dtype(x, dtype) for x in (_gaps(mul_p.bind(s, s)), s,
                                              div_p.bind(one, s), safe))


def _svd_jvp(primals, tangents, full_matrices, compute_uv):
    a, = primals
    ta, = tangents
    _svd_derivable(a, full_matrices, compute_uv)
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    v = _H(vt)
    c = mm(_H(u), mm(ta, v))
    ds = real_part(_diagonal(c))
    if not compute_uv:
        return [s], [ds]
    m, n = a.shape[-2:]
    f, sc, inv_s, safe_inv_s = _svd_scalars(s, c.dtype)
    cd = _scale_columns(c, sc)
    dc = _scale_rows(c, sc)
    # A complex U's phases: i Im diag(C) / s keeps U^H dU + dV^H V consistent, as JAX's.
    phases = _imaginary_diagonal(c)
    du = mm(u, _sum_terms(mul_p.bind(f, add_p.bind(cd, _H(cd))),
                          None if phases is None else _scale_columns(phases, safe_inv_s)))
    dv = mm(v, mul_p.bind(f, add_p.bind(dc, _H(dc))))
    if m > n:
        av = mm(ta, v)
        du = add_p.bind(du, _scale_columns(sub_p.bind(av, mm(u, mm(_H(u), av))), inv_s))
    if n > m:
        au = mm(_H(ta), u)
        dv = add_p.bind(dv, _scale_columns(sub_p.bind(au, mm(v, mm(vt, au))), inv_s))
    return [s, u, vt], [ds, du, _H(dv)]


def _svd_vjp(cts, outs, a, full_matrices, compute_uv):
    g_s = cts[0]
    g_u, g_vt = (cts[1], cts[2]) if compute_uv else (None, None)
    m, n = a.shape[-2:]
    if g_u is not None or g_vt is not None:
        _svd_derivable(a, full_matrices, compute_uv)
    if compute_uv and (not full_matrices or m == n):
        s, u, vt = outs
    else:   # only s is differentiated: its rule needs the thin factors
        s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    v = _H(vt)
    f, sc, inv_s, safe_inv_s = _svd_scalars(s, u.dtype)
    ct_c, extra = [None if g_s is None else _diag_embed(as_dtype(g_s, u.dtype))], []
    if g_u is not None:
        gu = mm(mT(u), g_u)
        ct_c.append(_scale_columns(mul_p.bind(f, sub_p.bind(gu, _H(gu))), sc))
        phases = _imaginary_diagonal(gu)
        if phases is not None:
            ct_c.append(_scale_columns(phases, safe_inv_s))
        if m > n:
            extra.append(mm(_scale_columns(sub_p.bind(g_u, mm(conj(u), gu)), inv_s), mT(v)))
    if g_vt is not None:
        g_v = _H(g_vt)
        gv = mm(mT(v), g_v)
        ct_c.append(_scale_rows(mul_p.bind(f, sub_p.bind(gv, _H(gv))), sc))
        if n > m:
            extra.append(mm(_scale_columns(conj(u), inv_s),
                            mT(conj(sub_p.bind(g_v, mm(conj(v), gv))))))
    inner = _sum_terms(*ct_c)
    core = None if inner is None else mm(conj(u), mm(inner, mT(v)))
    return (_sum_terms(core, *extra),)


svd_p = leading("svd", abstract_eval=_svd_shape, impl=checked(_svd_shape, _svd_impl),
                jvp=_svd_jvp, vjp=_svd_vjp, multiple_results=True)


def svd(x: Array | np.ndarray, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None, algorithm: Any = None) -> Any:
    """lax.linalg.svd: (u, s, vh) with x = u diag(s) vh, s descending, or s alone when
    compute_uv is False. subset_by_index (start, end): only the singular values of
    those (descending) indices and their vectors; needs full_matrices=False. algorithm
    picks among JAX's GPU algorithms; the cpu has LAPACK's alone."""
    subset = _subset("svd", subset_by_index, min(x.shape[-2:]))
    if subset is not None and full_matrices and compute_uv:
        raise ValueError("svd: subset_by_index needs full_matrices=False")
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if subset is not None:
        out = [_take_last(out[0], *subset)] + (
            [_columns(out[1], *subset), mT(_columns(mT(out[2]), *subset))] if compute_uv
            else [])
    if not compute_uv:
        return out[0]
    s, u, vt = out
    return u, s, vt


# --------------------------------------------------------------------------- qr
#
# A = Q R, Q with orthonormal columns, R upper triangular. For m >= n (thin factors),
# with B = dA R^-1, C = Q^T B and the skew part O = tril(C, -1) - tril(C, -1)^T
# (Walter & Lehmann 2012; J. Townsend's note "Differentiating the QR decomposition"):
#     dQ = Q (O - C) + B          dR = (C - O) R
# Its transpose, for cotangents (gQ, gR), with M = Q^T gQ - gR R^T:
#     ct_C = tril(M - M^T, -1) - M      ct_A = (gQ + Q ct_C) R^-T
# For m < n, A = [A1 A2] and R = [R1 R2] with A1 = Q R1 square and R2 = Q^T A2, so
#     dR2 = dQ^T A2 + Q^T dA2,
# and the transpose adds A2 gR2^T to gQ and Q gR2 to ct_A2.
# The complete Q of a tall matrix has columns beyond A's span with no derivative
# (JAX's does, by a longer rule fnad lacks): that case raises.

def _qr_shape(a, full_matrices):
    check_matrices("qr", ("a", a), complex_ok=True)
    m, n = a.shape[-2:]
    lead = tuple(a.shape[:-2])
    k = m if full_matrices else min(m, n)
    return [ShapedArray(lead + (m, k), a.dtype), ShapedArray(lead + (k, n), a.dtype)]


def _qr_impl(a, full_matrices):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q, r]


def _columns(x, start, stop):
    nb = x.ndim - 2
    return S.slice(x, (0,) * (nb + 1) + (start,), tuple(x.shape[:-1]) + (stop,))


def _qr_derivable(a, full_matrices):
    m, n = a.shape[-2:]
    if full_matrices and m > n:
        raise GradientError(
            f"qr: the complete Q of a tall matrix (shape {tuple(a.shape)}) has columns "
            f"outside a's span with no derivative fnad computes; use mode='reduced' "
            f"(full_matrices=False)")


def _imaginary_diagonal(x):
    """i Im(diag x) as a matrix (zero for a real x)."""
    if np.dtype(x.dtype).kind != "c":
        return None
    return sub_p.bind(masked(x, np.eye(x.shape[-1], dtype=bool)), real_diagonal_part(x))


def _thin_qr_tangents(q, r, da):
    b = triangular_solve_p.bind(r, da, left_side=False, lower=False, transpose_a=False,
                                unit_diagonal=False)
    c = mm(mT(conj(q)), b)
    low = tril(c, -1)
    # skew-Hermitian: R's diagonal stays real (LAPACK's), so Q^H dQ takes i Im diag(C)
    skew = _sum_terms(sub_p.bind(low, mT(conj(low))), _imaginary_diagonal(c))
    return add_p.bind(mm(q, sub_p.bind(skew, c)), b), mm(sub_p.bind(c, skew), r)


def _qr_jvp(primals, tangents, full_matrices):
    a, = primals
    ta, = tangents
    _qr_derivable(a, full_matrices)
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    m, n = a.shape[-2:]
    if m >= n:
        return [q, r], list(_thin_qr_tangents(q, r, ta))
    dq, dr1 = _thin_qr_tangents(q, _columns(r, 0, m), _columns(ta, 0, m))
    dr2 = add_p.bind(mm(mT(conj(dq)), _columns(a, m, n)), mm(mT(conj(q)), _columns(ta, m, n)))
    return [q, r], [dq, S.concatenate([dr1, dr2], a.ndim - 1)]


def _thin_qr_transpose(q, r, g_q, g_r):
    # Under the Re(ct * t) pairing X -> conj(X)^T transposes to itself and
    # X -> i Im diag(X) to G -> i Im diag(G); C = Q^H B transposes to conj(Q) ct_C.
    m_ = sub_p.bind(mm(mT(q), g_q), mm(g_r, mT(r)))
    ct_c = sub_p.bind(_sum_terms(tril(sub_p.bind(m_, mT(conj(m_))), -1),
                                 _imaginary_diagonal(m_)), m_)
    ct_b = add_p.bind(g_q, mm(conj(q), ct_c))
    return triangular_solve_p.bind(r, ct_b, left_side=False, lower=False, transpose_a=True,
                                   unit_diagonal=False)


def _qr_vjp(cts, outs, a, full_matrices):
    q, r = outs
    m, n = a.shape[-2:]
    if full_matrices and m > n:
        if cts[0] is not None:
            _qr_derivable(a, full_matrices)
        # Only R is differentiated: its rows below n are zero, the rest is thin QR's
        # (factored again, so that this rule's own derivative is thin QR's too).
        nb = a.ndim - 2
        q, r = qr_p.bind(a, full_matrices=False)
        g_r = S.slice(cts[1], (0,) * (nb + 2), tuple(r.shape[:-2]) + (n, n))
        return (_thin_qr_transpose(q, r, np.zeros(tuple(q.shape), q.dtype), g_r),)
    g_q, g_r = _zero_or(cts[0], q), _zero_or(cts[1], r)
    if m >= n:
        return (_thin_qr_transpose(q, r, g_q, g_r),)
    g_r2 = _columns(g_r, m, n)
    g_q = add_p.bind(g_q, conj(mm(_columns(a, m, n), mT(g_r2))))
    ct_a1 = _thin_qr_transpose(q, _columns(r, 0, m), g_q, _columns(g_r, 0, m))
    return (S.concatenate([ct_a1, mm(conj(q), g_r2)], a.ndim - 1),)


qr_p = leading("qr", abstract_eval=_qr_shape, impl=checked(_qr_shape, _qr_impl),
               jvp=_qr_jvp, vjp=_qr_vjp, multiple_results=True)


def qr(x: Array | np.ndarray, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> tuple[Array, Array]:
    """lax.linalg.qr: (q, r) with x = q r; full_matrices gives the complete (m x m) q.
    use_magma is JAX's GPU library choice; the cpu has LAPACK's alone."""
    if pivoting:
        raise ValueError("qr: pivoting=True (column-pivoted QR) is not supported")
    q, r = qr_p.bind(x, full_matrices=bool(full_matrices))
    return q, r


# --------------------------------------------------------------------------- lu
#
# P A = L U with partial pivoting; L (m x k) unit lower, U (k x n) upper, k = min(m, n),
# stored together in `lu`. With L and U padded by the identity to m x m and n x n and
# W = L^-1 P dA U^-1 (De Hoog, Anderssen & Lukas 2011, the rule JAX implements):
#     dLU = L tril(W, -1) + triu(W) U
# Its transpose, for a cotangent G of lu:
#     ct_W = tril(L^T G, -1) + triu(G U^T)      ct_A = P^T L^-T ct_W U^-T
# The pivots and the permutation are integers: piecewise constant, no derivative.

def _lu_shape(a):
    check_matrices("lu", ("a", a), complex_ok=True)     # LU is holomorphic
    m, n = a.shape[-2:]
    lead = tuple(a.shape[:-2])
    return [ShapedArray(a.shape, a.dtype), ShapedArray(lead + (min(m, n),), np.dtype(np.int32)),
            ShapedArray(lead + (m,), np.dtype(np.int32))]


def _lu_factors(lu):
    """The padded square factors (L: m x m unit lower, U: n x n upper)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    nb = lu.ndim - 2
    no_pad = ((0, 0, 0),) * nb
    zero = np.asarray(0, lu.dtype)
    low = S.pad(_columns(lu, 0, k), zero, no_pad + ((0, 0, 0), (0, m - k, 0)))
    low = add_p.bind(masked(low, np.tri(m, m, -1, dtype=bool)), np.eye(m, dtype=lu.dtype))
    rows = S.slice(lu, (0,) * (nb + 2), tuple(lu.shape[:-2]) + (k, n))
    up = S.pad(rows, zero, no_pad + ((0, n - k, 0), (0, 0, 0)))
    extra = np.zeros((n, n), lu.dtype)
    extra[k:, k:] = np.eye(n - k, dtype=lu.dtype)
    up = add_p.bind(masked(up, np.triu(np.ones((n, n), bool))), extra)
    return low, up


def _permutation_matrix(permutation, dtype):
    """P[..., i, j] = (permutation[..., i] == j), so (P A)[i] = A[permutation[i]]."""
    m = permutation.shape[-1]
    shape = tuple(permutation.shape) + (m,)
    rows = S.broadcast_in_dim(permutation, shape, tuple(range(permutation.ndim)))
    hit = eq_p.bind(rows, np.broadcast_to(np.arange(m, dtype=np.int32), shape))
    return convert_element_type_p.bind(hit, new_dtype=np.dtype(dtype))


def _lu_jvp(primals, tangents):
    a, = primals
    ta, = tangents
    lu, pivots, permutation = lu_p.bind(a)
    low, up = _lu_factors(lu)
    x = mm(_permutation_matrix(permutation, a.dtype), ta)
    la = triangular_solve_p.bind(low, x, left_side=True, lower=True, transpose_a=False,
                                 unit_diagonal=True)
    w = triangular_solve_p.bind(up, la, left_side=False, lower=False, transpose_a=False,
                                unit_diagonal=False)
    n = a.shape[-1]
    m = a.shape[-2]
    d_lu = add_p.bind(mm(low, masked(w, np.tri(m, n, -1, dtype=bool))),
                      mm(masked(w, np.triu(np.ones((m, n), bool))), up))
    return [lu, pivots, permutation], [d_lu, None, None]


def _lu_vjp(cts, outs, a):
    g = cts[0]
    if g is None:
        return (None,)
    lu, _, permutation = outs
    low, up = _lu_factors(lu)
    m, n = a.shape[-2:]
    ct_w = add_p.bind(masked(mm(mT(low), g), np.tri(m, n, -1, dtype=bool)),
                      masked(mm(g, mT(up)), np.triu(np.ones((m, n), bool))))
    y = triangular_solve_p.bind(low, ct_w, left_side=True, lower=True, transpose_a=True,
                                unit_diagonal=True)
    ct_x = triangular_solve_p.bind(up, y, left_side=False, lower=False, transpose_a=True,
                                   unit_diagonal=False)
    return (mm(mT(_permutation_matrix(permutation, a.dtype)), ct_x),)


lu_p = leading("lu", abstract_eval=_lu_shape, impl=checked(_lu_shape, kernels.lu),
               jvp=_lu_jvp, vjp=_lu_vjp, multiple_results=True)


def lu(x: Array | np.ndarray) -> tuple[Array, Array, Array]:
    """lax.linalg.lu: (lu, pivots, permutation) with x[permutation] = L U, L unit lower
    (below lu's diagonal) and U upper (on and above it); int32 pivots as LAPACK's getrf
    gives them, zero-based."""
    lu_, pivots, permutation = lu_p.bind(x)
    return lu_, pivots, permutation


def _permutation_shape(pivots, permutation_size):
    if pivots.dtype != np.dtype(np.int32) or pivots.ndim < 1:
        raise DTypeError(f"lu_pivots_to_permutation: pivots must be int32 with at least one "
                         f"axis, got {pivots}")
    if pivots.shape[-1] > permutation_size:
        raise ShapeError(f"lu_pivots_to_permutation: {pivots.shape[-1]} pivots do not fit "
                         f"a permutation of size {permutation_size}")
    return ShapedArray(tuple(pivots.shape[:-1]) + (permutation_size,), pivots.dtype)


def _permutation_impl(pivots, permutation_size):
    """Apply the row swaps in order to the identity permutation. Out-of-range pivots
    raise (numpy's IndexError) rather than permute garbage."""
    perm = np.broadcast_to(np.arange(permutation_size, dtype=np.int32),
                           pivots.shape[:-1] + (permutation_size,)).copy()
    flat, piv = perm.reshape(-1, permutation_size), pivots.reshape(-1, pivots.shape[-1])
    rows = np.arange(flat.shape[0])
    for i in range(piv.shape[1]):
        p = piv[:, i]
        flat[rows, i], flat[rows, p] = flat[rows, p], flat[rows, i].copy()
    return perm


lu_pivots_to_permutation_p = leading(
    "lu_pivots_to_permutation", abstract_eval=_permutation_shape,
    impl=checked(_permutation_shape, _permutation_impl),
    jvp=lambda primals, tangents, permutation_size: (
        lu_pivots_to_permutation_p.bind(primals[0], permutation_size=permutation_size), None),
    vjp=lambda g, out, pivots, permutation_size: (None,))


def lu_pivots_to_permutation(pivots: Array | np.ndarray, permutation_size: int) -> Array:
    """The permutation the row swaps `pivots` (as lu gives them) make of
    range(permutation_size): integers, with no derivative."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))
