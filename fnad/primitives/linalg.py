"""Linear algebra: cholesky, triangular_solve, solve, tridiagonal_solve, slogdet and det,
and the kit the decompositions (decompositions.py) share with them.

Every primitive acts on the last two axes and maps over the leading ones, which
its operands must share (broadcasting them is fnad.numpy's job). The derivative
rules are the matrix-calculus identities, written with these same primitives and
dot_general, so they differentiate again. With op(A) = A or A^T:

    solve            X = A^-1 B        dX = A^-1 (dB - dA X)      ct_B = A^-T G, ct_A = -ct_B X^T
    triangular_solve X = op(A)^-1 B    the same, masked to the triangle that is read
    cholesky         A = L L^H         dL = L Phi(L^-1 dA L^-H)   (Murray 2016, arXiv:1602.07527)
    slogdet, det     d log|det A| = tr(A^-1 dA)                   ct_A = g A^-T  (g det A A^-T)
    tridiagonal_solve                  solve's, on three diagonals

Complex matrices: solve, triangular_solve, tridiagonal_solve and det are holomorphic,
so these rules hold as written (fnad transposes without conjugating: the Re(ct * t)
pairing); cholesky (Hermitian: ^H where the real rule has ^T) and slogdet (real
log|det|, complex sign) have their own terms, stated at each rule.
inv is a composite, solve(A, I): its derivatives follow from solve's.
At an exactly singular matrix the rules' solves raise numpy.linalg.LinAlgError, even
for det, whose gradient there (the adjugate) exists: that needs an LU-based cofactor
solve fnad does not have yet.
"""
import numpy as np

from ..core import Primitive
from ..typing import Array
from ..abstract import ShapedArray, get_aval
from ..errors import ShapeError, DTypeError
from ..kernels.cpu import linalg as kernels
from ._rules import batch_size
from . import shape as S
from .dot import dot_general
from .reduce import reduce_sum
from .elementwise import add_p, sub_p, mul_p, neg_p, div_p, conj_p
from .structural import convert_element_type_p, move_batch_axes, real_p

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


# --------------------------------------------------------------------------- helpers

def checked(abstract_eval, impl):
    """impl, after the shape rule: np.linalg would broadcast or cast operands the
    rule rejects, and the triangular-solve kernel does not check bounds. The check
    costs microseconds next to the O(n^3) work."""
    def run(*args, **params):
        abstract_eval(*(get_aval(a) for a in args), **params)
        return impl(*args, **params)
    return run


def check_matrices(name, *named_avals, complex_ok=False):
    """complex_ok: the primitive is holomorphic (solve, det...), so its real rules,
    transposed without conjugation as fnad's Re(ct * t) pairing has it, hold as they
    are for complex matrices; the factorizations that conjugate (cholesky, eigh, svd,
    qr) stay real."""
    for what, a in named_avals:
        if a.dtype not in FLOATS + (COMPLEX if complex_ok else ()):
            kinds = "float32 or float64 (or complex64 or complex128)" if complex_ok \
                else "float32 or float64"
            raise DTypeError(f"{name}: {what} must be {kinds}, got {a}")
        if a.ndim < 2:
            raise ShapeError(f"{name}: {what} must be a matrix or a batch of matrices "
                             f"(at least 2-d), got shape {tuple(a.shape)}")


def check_square(name, a, complex_ok=False):
    check_matrices(name, ("a", a), complex_ok=complex_ok)
    if a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name}: a must be square in its last two axes, got shape "
                         f"{tuple(a.shape)}")


def _check_rhs(name, a, b, rows_axis):
    """b must have a's dtype and leading dimensions and m = a.shape[-1] along rows_axis."""
    check_matrices(name, ("b", b), complex_ok=True)
    if a.dtype != b.dtype:
        raise DTypeError(f"{name}: a and b must have one dtype, got {a} and {b}")
    if b.ndim != a.ndim or a.shape[:-2] != b.shape[:-2] or b.shape[rows_axis] != a.shape[-1]:
        side = "rows" if rows_axis == -2 else "columns"
        raise ShapeError(f"{name}: shapes a {tuple(a.shape)} and b {tuple(b.shape)} do not "
                         f"match: b needs a's leading dimensions {tuple(a.shape[:-2])} and "
                         f"{a.shape[-1]} {side}")


def mT(x: Array | np.ndarray) -> Array:
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return S.transpose(x, perm)


def mm(a: Array | np.ndarray, b: Array | np.ndarray) -> Array:
    """Batched matrix product over shared leading dimensions."""
    nb = a.ndim - 2
    batch = tuple(range(nb))
    return dot_general(a, b, (((nb + 1,), (nb,)), (batch, batch)))


def masked(x, mask):
    return mul_p.bind(x, mask.astype(x.dtype))


def tril(x: Array | np.ndarray, k: int = 0) -> Array:
    n = x.shape[-1]
    return masked(x, np.tri(n, n, k, dtype=bool))


def _triangle(x, lower, unit_diagonal):
    """The entries of x that a triangular solve reads."""
    n = x.shape[-1]
    k = -1 if unit_diagonal else 0
    mask = np.tri(n, n, k, dtype=bool)
    return masked(x, mask if lower else mask.T)


def _eye(a):
    n = a.shape[-1]
    return np.broadcast_to(np.eye(n, dtype=a.dtype), tuple(a.shape))


def _trace(x):
    return reduce_sum(masked(x, np.eye(x.shape[-1])), (x.ndim - 2, x.ndim - 1))


def _times_each(s, m):
    """s[..., None, None] * m: scale each matrix of a batch by its own scalar."""
    return mul_p.bind(S.broadcast_in_dim(s, tuple(m.shape), tuple(range(len(s.shape)))), m)


def _inv_transpose(a):
    return solve_p.bind(mT(a), _eye(a))


def leading(name, **slots):
    """A primitive that maps over the leading axes of its operands. Its vmap rule moves
    every batch axis to the front (broadcasting unbatched operands) and binds it once,
    with one more leading axis."""
    def batch(args, batch_dims, **params):
        moved = move_batch_axes(args, batch_dims, 0, batch_size(args, batch_dims))
        out = prim.bind(*moved, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    prim = Primitive(name, batch=batch, **slots)
    return prim


def conj(x):
    return conj_p.bind(x) if np.dtype(x.dtype).kind == "c" else x


def real_part(x):
    return real_p.bind(x) if np.dtype(x.dtype).kind == "c" else x


def as_dtype(x, dtype):
    return x if np.dtype(x.dtype) == np.dtype(dtype) else \
        convert_element_type_p.bind(x, new_dtype=np.dtype(dtype))


def real_diagonal_part(t):
    """t's diagonal, real part only, as a matrix of t's dtype."""
    return as_dtype(real_part(masked(t, np.eye(t.shape[-1], dtype=bool))), t.dtype)


def hermitian_from_triangle(t, lower):
    """The Hermitian (symmetric) matrix a kernel sees when it reads only one triangle
    of t, and of its diagonal only the real part, as LAPACK's heevd does."""
    if not lower:
        return mT(hermitian_from_triangle(mT(t), True))
    strict = tril(t, -1)
    return add_p.bind(add_p.bind(real_diagonal_part(t), strict), mT(conj(strict)))


def onto_triangle(s, lower):
    """The transpose of hermitian_from_triangle (under the Re(ct * t) pairing: X -> conj(X)^T
    transposes to itself, Re(diag X) to Re(diag G)): fold a cotangent onto the
    triangle read."""
    if not lower:
        return mT(onto_triangle(mT(s), True))
    return add_p.bind(add_p.bind(real_diagonal_part(s), tril(s, -1)),
                      tril(conj(mT(s)), -1))


# --------------------------------------------------------------------------- triangular_solve

def _triangular_solve_shape(a, b, left_side, lower, transpose_a, unit_diagonal):
    check_square("triangular_solve", a, complex_ok=True)
    _check_rhs("triangular_solve", a, b, -2 if left_side else -1)
    return ShapedArray(b.shape, b.dtype)


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    ta, tb = tangents
    x = triangular_solve_p.bind(a, b, **params)
    rhs = tb
    if ta is not None:
        # d(op(A)) X (or X d(op(A))) moves to the right-hand side.
        da = _triangle(ta, params["lower"], params["unit_diagonal"])
        da = mT(da) if params["transpose_a"] else da
        moved = mm(da, x) if params["left_side"] else mm(x, da)
        rhs = neg_p.bind(moved) if rhs is None else sub_p.bind(rhs, moved)
    return x, triangular_solve_p.bind(a, rhs, **params)


def _triangular_solve_vjp(g, x, a, b, left_side, lower, transpose_a, unit_diagonal,
                          needed=None):
    ct_b = triangular_solve_p.bind(a, g, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, unit_diagonal=unit_diagonal)
    if needed is not None and not needed[0]:
        return None, ct_b
    ct_op_a = mm(ct_b, mT(x)) if left_side else mm(mT(x), ct_b)
    ct_a = neg_p.bind(mT(ct_op_a) if transpose_a else ct_op_a)
    return _triangle(ct_a, lower, unit_diagonal), ct_b


triangular_solve_p = leading(
    "triangular_solve", abstract_eval=_triangular_solve_shape,
    impl=checked(_triangular_solve_shape, kernels.triangular_solve),
    jvp=_triangular_solve_jvp, vjp=_triangular_solve_vjp, selective_vjp=True)


def triangular_solve(a: Array | np.ndarray, b: Array | np.ndarray, *, left_side: bool = False,
                     lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False) -> Array:
    """lax.linalg.triangular_solve: solve op(a) x = b (left_side) or x op(a) = b,
    reading only the lower (or upper) triangle of a; conjugate_a is a no-op (real)."""
    return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a),
                                   unit_diagonal=bool(unit_diagonal))


# --------------------------------------------------------------------------- cholesky

def _cholesky_shape(a):
    check_square("cholesky", a, complex_ok=True)
    return ShapedArray(a.shape, a.dtype)


def _phi(x):
    """The lower triangle with the real part of the diagonal halved (the diagonal of a
    Hermitian matrix is real; its transpose under the Re(ct * t) pairing is itself)."""
    return add_p.bind(tril(x, -1), mul_p.bind(real_diagonal_part(x), np.asarray(0.5, x.dtype)))


def _cholesky_jvp(primals, tangents):
    a, = primals
    ta, = tangents
    L = cholesky_p.bind(a)
    # The kernel reads only the lower triangle of a (its diagonal's real part): the
    # Hermitian matrix it factors moves by that triangle mirrored.
    sigma_dot = hermitian_from_triangle(ta, True)
    tmp = triangular_solve_p.bind(L, sigma_dot, left_side=True, lower=True,
                                  transpose_a=False, unit_diagonal=False)
    # tmp L^-H, as a solve against conj(L) transposed
    w = triangular_solve_p.bind(conj(L), tmp, left_side=False, lower=True, transpose_a=True,
                                unit_diagonal=False)
    return L, mm(L, _phi(w))


def _cholesky_vjp(g, L, a):
    # The transpose of the JVP under the Re(ct * t) pairing:
    # S = L^-T Phi(L^T G) conj(L)^-1, folded onto the lower triangle.
    p = _phi(mm(mT(L), g))
    y = triangular_solve_p.bind(L, p, left_side=True, lower=True, transpose_a=True,
                                unit_diagonal=False)
    s = triangular_solve_p.bind(conj(L), y, left_side=False, lower=True, transpose_a=False,
                                unit_diagonal=False)
    return (onto_triangle(s, True),)


cholesky_p = leading("cholesky", abstract_eval=_cholesky_shape,
                     impl=checked(_cholesky_shape, np.linalg.cholesky),
                     jvp=_cholesky_jvp, vjp=_cholesky_vjp)


def cholesky(x: Array | np.ndarray, *, symmetrize_input: bool = True) -> Array:
    """The lower Cholesky factor of a Hermitian (symmetric) positive-definite x
    (lax.linalg's). With symmetrize_input, factors (x + x^H) / 2; otherwise reads x's
    lower triangle."""
    if symmetrize_input:
        x = div_p.bind(add_p.bind(x, mT(conj(x))), np.asarray(2, x.dtype))
    return cholesky_p.bind(x)


# --------------------------------------------------------------------------- solve

def _solve_shape(a, b):
    check_square("solve", a, complex_ok=True)
    _check_rhs("solve", a, b, -2)
    return ShapedArray(b.shape, b.dtype)


def _solve_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    x = solve_p.bind(a, b)
    rhs = tb
    if ta is not None:
        moved = mm(ta, x)
        rhs = neg_p.bind(moved) if rhs is None else sub_p.bind(rhs, moved)
    return x, solve_p.bind(a, rhs)


def _solve_vjp(g, x, a, b, needed=None):
    ct_b = solve_p.bind(mT(a), g)
    if needed is not None and not needed[0]:
        return None, ct_b
    return neg_p.bind(mm(ct_b, mT(x))), ct_b


solve_p = leading("solve", abstract_eval=_solve_shape,
                  impl=checked(_solve_shape, np.linalg.solve),
                  jvp=_solve_jvp, vjp=_solve_vjp, selective_vjp=True)


def solve(a: Array | np.ndarray, b: Array | np.ndarray) -> Array:
    """x with a x = b for square a (..., n, n) and b (..., n, k) of the same leading shape."""
    return solve_p.bind(a, b)


def inv(a: Array | np.ndarray) -> Array:
    """a^-1 as solve(a, I), so its derivatives are solve's."""
    return solve_p.bind(a, _eye(a))


# --------------------------------------------------------------------------- slogdet, det

def _det_shape(name, multiple):
    def abstract_eval(a):
        check_square(name, a, complex_ok=True)
        out = ShapedArray(a.shape[:-2], a.dtype)
        if not multiple:
            return out
        return [out, ShapedArray(a.shape[:-2], np.finfo(a.dtype).dtype)]   # log|det| real
    return abstract_eval


def _slogdet_impl(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return [np.asarray(sign, a.dtype), np.asarray(logabsdet, np.finfo(a.dtype).dtype)]


def _imaginary_part(t):
    """i Im(t), in t's complex dtype."""
    return sub_p.bind(t, as_dtype(real_part(t), t.dtype))


# With t = tr(A^-1 dA): d log|det A| = Re t and, for a complex A, d sign = sign i Im t
# (a real A's sign is piecewise constant). Transposed under the Re(ct * t) pairing:
# ct_A = (g_log + i Im(g_sign sign)) A^-T.

def _slogdet_jvp(primals, tangents):
    a, = primals
    ta, = tangents
    sign, logabsdet = slogdet_p.bind(a)
    t = _trace(solve_p.bind(a, ta))
    if np.dtype(a.dtype).kind != "c":
        return [sign, logabsdet], [None, t]
    return [sign, logabsdet], [mul_p.bind(sign, _imaginary_part(t)), real_part(t)]


def _slogdet_vjp(cts, outs, a):
    g_sign, g_log = cts
    complex_a = np.dtype(a.dtype).kind == "c"
    coefficient = None if g_log is None else as_dtype(g_log, a.dtype)
    if complex_a and g_sign is not None:
        turn = _imaginary_part(mul_p.bind(g_sign, outs[0]))
        coefficient = turn if coefficient is None else add_p.bind(coefficient, turn)
    return (None if coefficient is None else _times_each(coefficient, _inv_transpose(a)),)


slogdet_p = leading("slogdet", abstract_eval=_det_shape("slogdet", True),
                    impl=checked(_det_shape("slogdet", True), _slogdet_impl),
                    jvp=_slogdet_jvp, vjp=_slogdet_vjp, multiple_results=True)


def slogdet(a: Array | np.ndarray) -> tuple[Array, Array]:
    """(sign, log|det a|), by LU factorization."""
    sign, logabsdet = slogdet_p.bind(a)
    return sign, logabsdet


det_p = leading(
    "det", abstract_eval=_det_shape("det", False),
    impl=checked(_det_shape("det", False), lambda a: np.asarray(np.linalg.det(a), a.dtype)),
    jvp=lambda primals, tangents: (
        det_p.bind(primals[0]),
        mul_p.bind(det_p.bind(primals[0]), _trace(solve_p.bind(primals[0], tangents[0])))),
    vjp=lambda g, out, a: (_times_each(mul_p.bind(g, out), _inv_transpose(a)),))


def det(a: Array | np.ndarray) -> Array:
    return det_p.bind(a)


# --------------------------------------------------------------------------- tridiagonal_solve
#
# X = T^-1 B for the tridiagonal T of subdiagonal dl[1:], diagonal d, superdiagonal
# du[:-1] (dl[0] and du[-1] unread, as LAPACK's gtsv and JAX's). As for solve:
#     dX = T^-1 (dB - dT X)           ct_B = T^-T G,  ct_T = -ct_B X^T on T's three diagonals
# T^T is tridiagonal too: its subdiagonal is du shifted down one, its superdiagonal dl
# shifted up one.

def _tridiagonal_shape(dl, d, du, b):
    check_matrices("tridiagonal_solve", ("b", b), complex_ok=True)    # holomorphic
    for what, v in (("dl", dl), ("d", d), ("du", du)):
        if v.dtype != b.dtype:
            raise DTypeError(f"tridiagonal_solve: {what} and b must have one dtype, got "
                             f"{v} and {b}")
        if tuple(v.shape) != tuple(b.shape[:-1]):
            raise ShapeError(f"tridiagonal_solve: {what} must have shape "
                             f"{tuple(b.shape[:-1])} (b's without its last axis), got "
                             f"{tuple(v.shape)}")
    return ShapedArray(b.shape, b.dtype)


def _shift(v, down):
    """v moved one place along its last axis, a zero entering: down (v[i - 1]) or up."""
    nb = v.ndim - 1
    m = v.shape[-1]
    zero = np.asarray(0, v.dtype)
    if down:
        kept = S.slice(v, (0,) * (nb + 1), tuple(v.shape[:-1]) + (m - 1,))
        return S.pad(kept, zero, ((0, 0, 0),) * nb + ((1, 0, 0),))
    kept = S.slice(v, (0,) * nb + (1,), tuple(v.shape))
    return S.pad(kept, zero, ((0, 0, 0),) * nb + ((0, 1, 0),))


def _rows_times(v, x):
    """v[..., i] * x[..., i, :]"""
    return mul_p.bind(S.expand_dims(v, (v.ndim,)), x)


def _tridiagonal_matmul(dl, d, du, x):
    """T x, T's rows read as dl[i] x[i - 1] + d[i] x[i] + du[i] x[i + 1]."""
    nb = x.ndim - 2
    m, k = x.shape[-2:]
    zero = np.asarray(0, x.dtype)
    no_pad = ((0, 0, 0),) * nb
    above = S.pad(S.slice(x, (0,) * (nb + 2), tuple(x.shape[:-2]) + (m - 1, k)), zero,
                  no_pad + ((1, 0, 0), (0, 0, 0)))     # x[i - 1]
    below = S.pad(S.slice(x, (0,) * nb + (1, 0), tuple(x.shape)), zero,
                  no_pad + ((0, 1, 0), (0, 0, 0)))     # x[i + 1]
    first = masked(dl, np.arange(m) > 0)
    last = masked(du, np.arange(m) < m - 1)
    return add_p.bind(add_p.bind(_rows_times(first, above), _rows_times(d, x)),
                      _rows_times(last, below))


def _tridiagonal_jvp(primals, tangents):
    dl, d, du, b = primals
    x = tridiagonal_solve_p.bind(dl, d, du, b)
    t_dl, t_d, t_du, t_b = tangents
    rhs = t_b
    if any(t is not None for t in (t_dl, t_d, t_du)):
        zeros = np.zeros(tuple(d.shape), d.dtype)
        moved = _tridiagonal_matmul(*(zeros if t is None else t for t in (t_dl, t_d, t_du)),
                                    x)
        rhs = neg_p.bind(moved) if rhs is None else sub_p.bind(rhs, moved)
    return x, tridiagonal_solve_p.bind(dl, d, du, rhs)


def _tridiagonal_vjp(g, x, dl, d, du, b, needed=None):
    ct_b = tridiagonal_solve_p.bind(_shift(du, down=True), d, _shift(dl, down=False), g)
    if needed is not None and not any(needed[:3]):
        return None, None, None, ct_b
    nb = x.ndim - 2

    def pairing(shift):
        # -sum_n ct_b[i, n] x[i + shift, n]
        m, k = x.shape[-2:]
        zero = np.asarray(0, x.dtype)
        if shift == 0:
            other = x
        elif shift < 0:
            other = S.pad(S.slice(x, (0,) * (nb + 2), tuple(x.shape[:-2]) + (m - 1, k)), zero,
                          ((0, 0, 0),) * nb + ((1, 0, 0), (0, 0, 0)))
        else:
            other = S.pad(S.slice(x, (0,) * nb + (1, 0), tuple(x.shape)), zero,
                          ((0, 0, 0),) * nb + ((0, 1, 0), (0, 0, 0)))
        return neg_p.bind(reduce_sum(mul_p.bind(ct_b, other), (x.ndim - 1,)))

    return pairing(-1), pairing(0), pairing(1), ct_b


tridiagonal_solve_p = leading(
    "tridiagonal_solve", abstract_eval=_tridiagonal_shape,
    impl=checked(_tridiagonal_shape, kernels.tridiagonal_solve),
    jvp=_tridiagonal_jvp, vjp=_tridiagonal_vjp, selective_vjp=True)


def tridiagonal_solve(dl: Array | np.ndarray, d: Array | np.ndarray, du: Array | np.ndarray,
                      b: Array | np.ndarray, *, perturb_singular: bool = False) -> Array:
    """lax.linalg.tridiagonal_solve: x with T x = b, T of subdiagonal dl[..., 1:],
    diagonal d and superdiagonal du[..., :-1], b (..., m, n). A singular T raises
    numpy.linalg.LinAlgError (JAX's perturb_singular alternative is not supported)."""
    if perturb_singular:
        raise ValueError("tridiagonal_solve: perturb_singular=True is not supported")
    return tridiagonal_solve_p.bind(dl, d, du, b)
