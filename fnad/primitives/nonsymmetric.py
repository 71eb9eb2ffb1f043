"""The spectral decompositions of a general (nonsymmetric) matrix: eig, the
Hessenberg and Schur forms, rsf2csf, and on the complex Schur form sqrtm and the
Parlett recurrence scipy's funm uses.

None has a derivative rule, as in JAX: eigenvectors and Schur vectors are not unique
(any phase, any order of the eigenvalues on T's diagonal), and the eigenvalues of a
real matrix would need complex cotangents for a real input. Differentiating them
raises GradientError. They map over leading axes like the rest of linear algebra.
"""
from typing import Any, Callable

import numpy as np

from ..abstract import ShapedArray
from ..errors import ShapeError, DTypeError, GradientError
from ..kernels.cpu import linalg as kernels
from ..typing import Array
from .linalg import COMPLEX, FLOATS, checked, check_square, leading


def _complex_of(dtype):
    """float32, complex64 -> complex64; float64, complex128 -> complex128"""
    wide = np.dtype(dtype) in (np.dtype(np.float64), np.dtype(np.complex128))
    return np.dtype(np.complex128 if wide else np.complex64)


def _forward_only(name, abstract_eval, impl):
    def refuse(*args, **params):
        raise GradientError(f"{name}: fnad differentiates no decomposition of a general "
                            f"matrix (neither does JAX); for a symmetric one use eigh, "
                            f"whose derivatives exist")
    return leading(name, abstract_eval=abstract_eval, impl=checked(abstract_eval, impl),
                   jvp=refuse, vjp=refuse, multiple_results=True)


# --------------------------------------------------------------------------- eig
#
# Complex eigenvalues w and right eigenvectors (columns of vr, A vr = vr diag(w)), left
# ones (columns of vl, vl^H A = diag(w) vl^H) on request; always complex, as in JAX.
# vr is numpy's (LAPACK geev's); each column of vl has unit norm and its largest entry
# real and positive (eigenvectors are unique only up to such a phase, which LAPACK
# fixes its own way).

def _eig_shape(a, compute_left_eigenvectors, compute_right_eigenvectors):
    if a.dtype not in FLOATS + COMPLEX:
        raise DTypeError(f"eig: a must be float32, float64, complex64 or complex128, got {a}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"eig: a must be square in its last two axes, got shape "
                         f"{tuple(a.shape)}")
    out = _complex_of(a.dtype)
    shapes = [a.shape[:-1]] + [a.shape] * (compute_left_eigenvectors +
                                          compute_right_eigenvectors)
    return [ShapedArray(tuple(s), out) for s in shapes]


def _unit_columns(v):
    """Each column scaled to norm 1 and rotated so that its largest entry is real."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    return v * (np.conj(big) / np.abs(big))


def _eig_impl(a, compute_left_eigenvectors, compute_right_eigenvectors):
    out = _complex_of(a.dtype)
    w, vr = np.linalg.eig(a)
    results = [w.astype(out)]
    if compute_left_eigenvectors:
        # The rows of vr^-1 are the left eigenvectors (conjugated), for each w in order.
        vl = np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2))
        results.append(_unit_columns(vl).astype(out))
    if compute_right_eigenvectors:
        results.append(vr.astype(out))
    return results


eig_p = _forward_only("eig", _eig_shape, _eig_impl)


def eig(x: Array | np.ndarray, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: Any = None, use_magma: bool | None = None) -> list[Array]:
    """lax.linalg.eig: [w, vl, vr] (the requested ones) of a general square x, complex.
    implementation and use_magma are JAX's GPU choices (the cpu has LAPACK's alone);
    eigenvector derivatives (enable_eigvec_derivs) are not available."""
    if enable_eigvec_derivs:
        raise ValueError("eig: enable_eigvec_derivs=True is not supported: fnad "
                         "differentiates no eigendecomposition of a general matrix")
    return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors))


# --------------------------------------------------------------------------- Hessenberg, Schur
#
# a = q h q^T with h upper Hessenberg (Householder reflectors, LAPACK gehrd's signs), and
# a = z t z^T with t quasi upper triangular: the real Schur form, by Francis's implicit
# double-shift QR iteration on h (Golub & Van Loan, "Matrix Computations", sec. 7.5),
# its 2x2 blocks (complex conjugate eigenvalues) with equal diagonal entries as LAPACK
# leaves them. The complex Schur form (t upper triangular, a = z t z^H) splits those
# blocks by complex rotations (rsf2csf). A QR iteration that does not converge raises
# numpy.linalg.LinAlgError.

def _real_square(name, a):
    check_square(name, a)
    return [ShapedArray(a.shape, a.dtype)] * 2


def _schur_shape(a, output):
    check_square("schur", a)
    dtype = a.dtype if output == "real" else _complex_of(a.dtype)
    return [ShapedArray(a.shape, dtype)] * 2


def _schur_impl(a, output):
    t, z = kernels.real_schur(a)
    return [t, z] if output == "real" else kernels.rsf2csf(t, z)


def _rsf2csf_shape(t, z):
    check_square("rsf2csf", t)
    check_square("rsf2csf", z)
    if t.shape != z.shape or t.dtype != z.dtype:
        raise ShapeError(f"rsf2csf: T and Z must have one shape and dtype, got {t} and {z}")
    return [ShapedArray(t.shape, _complex_of(t.dtype))] * 2


def _sqrtm_shape(a):
    check_square("sqrtm", a)
    return [ShapedArray(a.shape, _complex_of(a.dtype))]


def _parlett_shape(t, f_diagonal):
    if t.dtype not in COMPLEX or t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise DTypeError(f"parlett: t must be a complex square upper triangular matrix, "
                         f"got {t}")
    if f_diagonal.shape != t.shape[:-1]:
        raise ShapeError(f"parlett: func of t's diagonal must keep its shape "
                         f"{tuple(t.shape[:-1])}, got {tuple(f_diagonal.shape)}")
    out = np.result_type(t.dtype, f_diagonal.dtype)
    return [ShapedArray(t.shape, out),
            ShapedArray(t.shape[:-2], np.finfo(out).dtype)]


hessenberg_p = _forward_only("hessenberg", lambda a: _real_square("hessenberg", a),
                             kernels.hessenberg)
schur_p = _forward_only("schur", _schur_shape, _schur_impl)
rsf2csf_p = _forward_only("rsf2csf", _rsf2csf_shape, kernels.rsf2csf)
sqrtm_p = _forward_only("sqrtm", _sqrtm_shape, lambda a: [kernels.sqrtm(a)])
parlett_p = _forward_only("parlett", _parlett_shape, kernels.parlett)


def hessenberg(x):
    """(h, q) with x = q h q^T, h upper Hessenberg."""
    h, q = hessenberg_p.bind(x)
    return h, q


def schur(x: Array | np.ndarray, *, compute_schur_vectors: bool = True,
          sort_eig_vals: bool = False, select_callable: Callable[..., Any] | None = None,
          output: str = "real") -> Any:
    """(t, z) with x = z t z^T: t quasi upper triangular ('real') or upper triangular
    and complex ('complex'); t alone without compute_schur_vectors. Reordering the
    eigenvalues (sort_eig_vals, select_callable) is not supported."""
    if sort_eig_vals or select_callable is not None:
        raise ValueError("schur: sort_eig_vals and select_callable (eigenvalue "
                         "reordering) are not supported")
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    t, z = schur_p.bind(x, output=output)
    return (t, z) if compute_schur_vectors else t


def rsf2csf(t, z):
    """The complex Schur form (t, z) of a real one."""
    t, z = rsf2csf_p.bind(t, z)
    return t, z


def parlett(t, f_diagonal):
    """(f(t), the smallest eigenvalue gap divided by) for an upper triangular t, from f
    on t's diagonal (Parlett's recurrence)."""
    f, gap = parlett_p.bind(t, f_diagonal)
    return f, gap


def sqrtm(x):
    """The principal square root of a real square matrix, complex (JAX's convention)."""
    return sqrtm_p.bind(x)[0]
