"""numpy.linalg over fnad's linear-algebra primitives: dtype promotion, broadcasting
of leading dimensions and numpy's argument conventions; no math of its own.

Singular matrices (solve, inv) and matrices that are not positive definite
(cholesky) raise numpy.linalg.LinAlgError, as numpy does.

Derivatives follow JAX's: those of eigenvectors and singular vectors are NaN or inf
where eigenvalues (singular values) repeat, since no derivative exists there. pinv
has its own JVP (Golub & Pereyra 1973), finite wherever the rank does not change.
eig and eigvals (general matrices) have no derivatives, as in JAX.

Complex matrices work throughout (Hermitian for eigh and cholesky; singular values
and eigh's eigenvalues real), with derivatives under fnad's Re(ct * t) pairing; a
complex eigenvector's phase is LAPACK's choice, so differentiate phase-free
functions of it."""
import collections
import functools
import math
from typing import Any, Callable, Sequence, cast

import numpy as np

from ..errors import ShapeError, DTypeError
from ..primitives import linalg as L
from ..primitives import decompositions as D
from ..primitives import nonsymmetric as N
from ..transforms.custom import custom_jvp
from ..primitives import shape as S
from ._core import as_operand, promote, promote_inexact, normalize_axis
from ._shapes import broadcast_to, reshape, matrix_transpose, expand_dims, moveaxis, flip
from ._products import matmul, outer, tensordot
from ._products import diagonal as _diagonal_of
from ._products import preferred_operands as _preferred_operands
from ._indexing import take_along_axis
from ._sorting import argsort
from ._core import stack
from . import _elementwise as E, _reductions as R
from ._complex import conj, real
from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "norm", "vector_norm",
           "matrix_norm", "matrix_power", "multi_dot", "matmul", "outer", "tensordot",
           "matrix_transpose", "svd", "svdvals", "eigh", "eigvalsh", "qr", "pinv", "lstsq",
           "matrix_rank", "cond", "cross", "diagonal", "trace", "vecdot", "tensorinv",
           "tensorsolve", "eig", "eigvals", "LinAlgError", "SlogdetResult", "SVDResult",
           "EighResult", "QRResult", "EigResult"]

LinAlgError = np.linalg.LinAlgError
SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])
EigResult = collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _as_matrices(name: str, *arrays: Any) -> list[Array]:
    """Operands promoted to one floating dtype that np.linalg supports."""
    operands = promote_inexact(*[as_operand(a) for a in arrays])
    if operands[0].dtype == np.float16:
        raise DTypeError(f"{name}: float16 is not supported in linalg; use float32 or "
                         f"float64 (got operands of shapes "
                         + ", ".join(str(tuple(a.shape)) for a in operands) + ")")
    return operands


def _matrix(name: str, a: Array) -> Array:
    if a.ndim < 2:
        raise ShapeError(f"{name}: expected a matrix or a stack of matrices (at least "
                         f"2-d), got shape {tuple(a.shape)}")
    return a


def _square(name: str, a: Array) -> Array:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name}: expected a square matrix or a stack of square matrices "
                         f"(shape (..., n, n)), got shape {tuple(a.shape)}")
    return a


def solve(a: ArrayLike, b: ArrayLike) -> Array:
    """x with a @ x = b. As in numpy 2, b is a vector (n,) only when it is 1-d;
    otherwise it is a stack of matrices (..., n, k). Leading axes broadcast."""
    a, b = _as_matrices("solve", a, b)
    _square("solve", a)
    n = a.shape[-1]
    vector = b.ndim == 1
    if vector:
        b = S.reshape(b, (b.shape[0], 1))
    if b.ndim < 2 or b.shape[-2] != n:
        raise ShapeError(f"solve: a has shape {tuple(a.shape)} but b has shape "
                         f"{tuple(b.shape) if not vector else (b.shape[0],)}: b needs "
                         f"{n} rows (shape ({n},) or (..., {n}, k))")
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    x = L.solve(broadcast_to(a, batch + (n, n)), broadcast_to(b, batch + tuple(b.shape[-2:])))
    return S.reshape(x, batch + (n,)) if vector else x


def inv(a: ArrayLike) -> Array:
    """The inverse of each square matrix in a stack (..., n, n), as numpy.linalg.inv.

    Computed as solve(a, I), so its derivatives are solve's.
    """
    a, = _as_matrices("inv", a)
    return L.inv(_square("inv", a))


def det(a: ArrayLike) -> Array:
    """The determinant of each square matrix in a stack (..., n, n), as numpy.linalg.det."""
    a, = _as_matrices("det", a)
    return L.det(_square("det", a))


def slogdet(a: ArrayLike, *, method: str | None = None) -> Any:
    """SlogdetResult(sign, logabsdet), by LU factorization (method None or 'lu') or by
    QR ('qr', JAX's: |det| is the product of |diag R|, the sign that of diag R times
    det Q = +-1); the QR route's gradient is that of the QR factors."""
    a, = _as_matrices("slogdet", a)
    _square("slogdet", a)
    if method in (None, "lu"):
        return SlogdetResult(*L.slogdet(a))
    if method != "qr":
        raise ValueError(f"slogdet: method must be None, 'lu' or 'qr', got {method!r}")
    q, r = D.qr(a, full_matrices=False)
    diag = _diagonal_of(r, 0, -2, -1)
    sign = R.prod(E.sign(diag), axis=-1) * L.det(q)
    return SlogdetResult(E.sign(sign), R.sum(E.log(abs(diag)), axis=-1))


def cholesky(a: ArrayLike, *, upper: bool = False, symmetrize_input: bool = True) -> Array:
    """The lower (or upper) Cholesky factor. As in JAX, the input is symmetrized,
    (a + a^T) / 2, so its gradient is symmetric too."""
    a, = _as_matrices("cholesky", a)
    factor = L.cholesky(_square("cholesky", a), symmetrize_input=symmetrize_input)
    return conj(matrix_transpose(factor)) if upper else factor


# --------------------------------------------------------------------------- norms

def _sqrt_sum_squares(x, axis, keepdims):
    squares = real(x * conj(x)) if x.dtype.kind == "c" else x * x     # |x|^2
    return E.sqrt(R.sum(squares, axis=axis, keepdims=keepdims))


def vector_norm(x: ArrayLike, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: Any = 2) -> Array:  # noqa: A002 (numpy's name)
    """The p-norm over `axis` (all axes when None, as one flat vector)."""
    x, = promote_inexact(as_operand(x))
    if axis is None:
        flat = reshape(x, (x.size,))
        out = vector_norm(flat, 0, False, ord)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    ax = abs(x)
    if ord is None or ord == 2:
        return _sqrt_sum_squares(x, axis, keepdims)
    if ord == math.inf:
        return R.max(ax, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return R.min(ax, axis=axis, keepdims=keepdims)
    if ord == 0:
        return R.sum((x != 0).astype(x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return R.sum(ax, axis=axis, keepdims=keepdims)
    return R.sum(ax ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def matrix_norm(x: ArrayLike, ord: Any = "fro", keepdims: bool = False,
                axis: tuple[int, int] = (-2, -1)) -> Array:  # noqa: A002
    """Matrix norms over the two axes `axis`: 'fro', 1, -1, inf, -inf, and from the
    singular values 2 (the largest), -2 (the smallest) and 'nuc' (their sum)."""
    x, = promote_inexact(as_operand(x))
    if x.ndim < 2:
        raise ShapeError(f"norm: a matrix norm needs at least 2 dimensions, got shape "
                         f"{tuple(x.shape)}")
    row, col = (normalize_axis(a, x.ndim) for a in axis)
    if row == col:
        raise ValueError(f"norm: duplicate axes {tuple(axis)}")
    if ord in (2, -2, "nuc"):
        s = svdvals(moveaxis(x, (row, col), (-2, -1)))
        reduction: dict[Any, Callable[..., Array]] = {2: R.max, -2: R.min, "nuc": R.sum}
        out = reduction[ord](s, axis=-1)
    elif ord is None or ord == "fro":
        out = _sqrt_sum_squares(x, (row, col), False)
    elif ord in (1, -1, math.inf, -math.inf):
        # 1: the largest column sum; inf: the largest row sum.
        summed, kept = (row, col) if ord in (1, -1) else (col, row)
        sums = R.sum(abs(x), axis=summed)
        kept = kept - 1 if kept > summed else kept
        out = (R.max if ord > 0 else R.min)(sums, axis=kept)
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        out = expand_dims(out, tuple(sorted((row, col))))
    return out


def norm(x: ArrayLike, ord: Any = None, axis: int | tuple[int, ...] | None = None,
         keepdims: bool = False) -> Array:  # noqa: A002
    """numpy.linalg.norm: a vector norm for one axis (or a 1-d x), a matrix norm for
    two axes (or a 2-d x); with ord and axis both None, the 2-norm of x flattened."""
    x, = promote_inexact(as_operand(x))
    if axis is None:
        if ord is None:
            return vector_norm(x, None, keepdims)
        if x.ndim not in (1, 2):
            raise ShapeError(f"norm: with ord={ord!r} and axis=None, x must be 1-d or 2-d, "
                             f"got shape {tuple(x.shape)}")
        axis = tuple(range(x.ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    axis = tuple(axis)
    if len(axis) == 1:
        return vector_norm(x, normalize_axis(axis[0], x.ndim), keepdims, ord)
    if len(axis) == 2:
        return matrix_norm(x, ord, keepdims, axis)
    raise ValueError(f"norm: axis must name one or two axes, got {axis}")


# --------------------------------------------------------------------------- products

def matrix_power(a: ArrayLike, n: int) -> Array:
    """a @ a @ ... (n times), by repeated squaring; n < 0 powers the inverse."""
    a = _square("matrix_power", as_operand(a))
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}")
    if n == 0:
        return broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), tuple(a.shape))
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else matmul(result, a)
        n >>= 1
        if n:
            a = matmul(a, a)
    return cast(Array, result)      # (n > 0 here: the loop set it)


def multi_dot(arrays: Sequence[ArrayLike], *, precision: Any = None) -> Array:
    """The chained product, left to right; a 1-d first (last) array is a row
    (column) vector, as in numpy."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: needs at least two arrays")
    out = matmul(arrays[0], arrays[1], precision=precision)
    for b in arrays[2:]:
        out = matmul(out, b, precision=precision)
    return out


# --------------------------------------------------------------------------- decompositions

def svd(a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None) -> Any:
    """SVDResult(U, S, Vh) with a = U diag(S) Vh, S descending; S alone when compute_uv
    is False. hermitian: a is symmetric, and its eigendecomposition gives the factors
    (S = |eigenvalues|), as numpy does. subset_by_index (start, end), JAX's: only those
    singular values (descending order) and their vectors (needs full_matrices=False)."""
    a, = _as_matrices("svd", a)
    _matrix("svd", a)
    if not hermitian:
        out = D.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                    subset_by_index=subset_by_index)
        return SVDResult(*out) if compute_uv else out
    v, w = D.eigh(a)
    s = abs(w)
    order = flip(argsort(s, axis=-1), axis=-1)
    if subset_by_index is not None:
        start, stop = subset_by_index
        order = order[..., start:stop]
    s = take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return s
    u = take_along_axis(v, expand_dims(order, -2), axis=-1)
    signs = take_along_axis(E.sign(w), order, axis=-1)
    return SVDResult(u, s, conj(matrix_transpose(u * expand_dims(signs, -2))))


def svdvals(x: ArrayLike) -> Array:
    """The singular values, descending."""
    return svd(x, compute_uv=False)


def _uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "L"


def eigh(a: ArrayLike, UPLO: str | None = None, symmetrize_input: bool = True
        ) -> Any:  # noqa: N803 (numpy's name)
    """EighResult(eigenvalues ascending, eigenvectors as columns) of a symmetric a.
    With symmetrize_input (JAX's default) a is replaced by (a + a^T) / 2, so its
    gradient is symmetric; otherwise only the UPLO triangle is read, as numpy does."""
    lower = _uplo("eigh", "L" if UPLO is None else UPLO)
    a, = _as_matrices("eigh", a)
    v, w = D.eigh(_square("eigh", a), lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: ArrayLike, UPLO: str = "L", symmetrize_input: bool = True) -> Array:  # noqa: N803
    """The eigenvalues, ascending, of each Hermitian matrix in a stack, as numpy.linalg.eigvalsh.

    `symmetrize_input` (JAX's argument) averages a with its conjugate transpose first, so
    the derivative is that of a symmetric function of a.
    """
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def qr(a: ArrayLike, mode: str = "reduced") -> Any:
    """QRResult(Q, R) with a = Q R. mode 'reduced': Q (..., m, k), R (..., k, n) with
    k = min(m, n); 'complete': Q (..., m, m), R (..., m, n); 'r': R alone (reduced)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r} "
                         f"(numpy's 'raw' Householder form is not supported)")
    a, = _as_matrices("qr", a)
    q, r = D.qr(_matrix("qr", a), full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eig(a: ArrayLike) -> Any:
    """EigResult(eigenvalues, eigenvectors as columns) of a general square a, complex
    always (as JAX; numpy returns real arrays when every eigenvalue is real). Not
    differentiable: use eigh for symmetric matrices."""
    a = _square("eig", as_operand(a))
    if a.dtype.kind != "c":
        a, = _as_matrices("eig", a)
    w, v = N.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a: ArrayLike) -> Array:
    """The eigenvalues of a general square a, complex."""
    a = _square("eigvals", as_operand(a))
    if a.dtype.kind != "c":
        a, = _as_matrices("eigvals", a)
    w, = N.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    return w


# --------------------------------------------------------------------------- from the svd

def _mH(x):
    """The conjugate transpose of the matrices in the last two axes."""
    return conj(matrix_transpose(x))


def _eps(dtype):
    return float(np.finfo(dtype).eps)


def _pinv_rtol(a, rtol):
    if rtol is None:
        return 10 * max(a.shape[-2:]) * _eps(a.dtype)
    return rtol


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _pinv(a, rtol, hermitian):
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    rtol = as_operand(rtol).astype(s.dtype)
    cutoff = expand_dims(rtol, -1) * R.max(s, axis=-1, keepdims=True)
    # The reciprocal of a dropped value is never formed, so no inf reaches the product.
    kept = s > cutoff
    s_inv = E.where(kept, 1 / E.where(kept, s, 1), 0).astype(s.dtype)
    return matmul(_mH(vh) * expand_dims(s_inv, -2), _mH(u))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    # Golub & Pereyra (1973), eq. 4.12, for a change that keeps the rank:
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
    a, = primals
    da, = tangents
    p = _pinv(a, rtol, hermitian)
    pT, daT = _mH(p), _mH(da)
    ap, pa = matmul(a, p), matmul(p, a)
    eye_m = np.eye(a.shape[-2], dtype=a.dtype)
    eye_n = np.eye(a.shape[-1], dtype=a.dtype)
    dp = (-matmul(matmul(p, da), p)
          + matmul(matmul(p, pT), matmul(daT, eye_m - ap))
          + matmul(eye_n - pa, matmul(daT, matmul(pT, p))))
    return p, dp


def pinv(a: ArrayLike, rtol: Any = None, hermitian: bool = False, *,
         rcond: ArrayLike | None = None) -> Array:
    """The Moore-Penrose pseudo-inverse from the SVD, dropping singular values at or
    below rtol * the largest (JAX's default rtol: 10 * max(m, n) * eps). rcond is the
    older name of rtol."""
    a, = _as_matrices("pinv", a)
    _matrix("pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: pass rtol or rcond, not both")
        rtol = rcond
    if a.size == 0:     # no singular values to scale by: the (n, m) zero matrix
        return broadcast_to(np.zeros((), a.dtype), tuple(a.shape[:-2]) + tuple(a.shape[:-3:-1]))
    rtol = _pinv_rtol(a, rtol)
    if not np.ndim(rtol) and not hasattr(rtol, "shape"):
        rtol = float(rtol)
    return _pinv(a, rtol, bool(hermitian))


def lstsq(a: ArrayLike, b: ArrayLike, rcond: float | None = None, *, numpy_resid: bool = False
         ) -> tuple[Array, Array, Array, Array]:
    """(x, residuals, rank, s): x minimizes |b - a x|_2, from the SVD, singular values
    below rcond * the largest counted as zero (default eps * max(m, n)). residuals are
    the squared column norms of b - a x; with numpy_resid, as numpy gives them: empty
    unless a has full column rank and more rows than columns (needs a concrete rank)."""
    a, b = _as_matrices("lstsq", a, b)
    if a.ndim != 2:
        raise ShapeError(f"lstsq: a must be 2-d, got shape {tuple(a.shape)}")
    vector = b.ndim == 1
    if b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ShapeError(f"lstsq: a has shape {tuple(a.shape)}, so b must have shape "
                         f"({a.shape[0]},) or ({a.shape[0]}, k); got {tuple(b.shape)}")
    if vector:
        b = expand_dims(b, -1)
    m, n = a.shape
    if rcond is None:
        rcond = _eps(a.dtype) * max(m, n)
    u, s, vh = svd(a, full_matrices=False)
    if s.shape[0]:
        kept = s >= (as_operand(rcond).astype(s.dtype) * s[0])
    else:
        kept = s > 0
    rank = R.sum(kept.astype(np.int32))
    s_inv = E.where(kept, 1 / E.where(kept, s, 1), 0).astype(s.dtype)
    x = matmul(_mH(vh), expand_dims(s_inv, -1) * matmul(_mH(u), b))
    residual = b - matmul(a, x)
    resid = R.sum(abs(residual) ** 2, axis=0)
    if numpy_resid and not (int(rank) == n and m > n):
        resid = resid[:0]
    if vector:
        x = reshape(x, (n,))
    return x, resid, rank, s


def matrix_rank(M: ArrayLike, rtol: ArrayLike | None = None, *, hermitian: bool = False,
                tol: ArrayLike | None = None) -> Array:  # noqa: N803 (numpy's name)
    """The number of singular values above tol (absolute) or rtol * the largest
    (default max(m, n) * eps); hermitian: M is symmetric, its singular values the
    |eigenvalues|. A 1-d or 0-d M has rank 1 unless all zero."""
    M, = promote_inexact(as_operand(M))
    if M.ndim < 2:
        return R.any(M != 0).astype(np.int32)
    s = svd(M, compute_uv=False, hermitian=hermitian)
    if tol is None:
        rtol = max(M.shape[-2:]) * _eps(s.dtype) if rtol is None else rtol
        tol = R.max(s, axis=-1) * as_operand(rtol).astype(s.dtype)
    else:
        tol = as_operand(tol).astype(s.dtype)
    return R.sum((s > expand_dims(tol, -1)).astype(np.int32), axis=-1)


def cond(x: ArrayLike, p: Any = None) -> Array:
    """The condition number in the p-norm: for p None or 2 the ratio of the extreme
    singular values (-2: its reciprocal), otherwise norm(x, p) * norm(inv(x), p)."""
    x, = _as_matrices("cond", x)
    _matrix("cond", x)
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    _square("cond", x)
    return (matrix_norm(x, ord=p) * matrix_norm(inv(x), ord=p))


# --------------------------------------------------------------------------- vectors, diagonals, tensors

def cross(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1) -> Array:
    """The cross product of 3-vectors along `axis`; other axes broadcast."""
    x1, x2 = promote(as_operand(x1), as_operand(x2))
    for what, x in (("x1", x1), ("x2", x2)):
        if x.ndim == 0 or x.shape[axis] != 3:
            raise ShapeError(f"cross: {what} must have size 3 along axis {axis}, got shape "
                             f"{tuple(x.shape)}")
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(out, -1, axis)


def diagonal(x: ArrayLike, /, *, offset: int = 0) -> Array:
    """The diagonals of the matrices in the last two axes."""
    return _diagonal_of(x, offset, -2, -1)


def trace(x: ArrayLike, /, *, offset: int = 0, dtype: DTypeLike | None = None) -> Array:
    """The sums of the diagonals of the matrices in the last two axes."""
    return R.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: DTypeLike | None = None) -> Array:
    """The dot product of the vectors along `axis`; other axes broadcast."""
    x1, x2 = promote(as_operand(x1), as_operand(x2))
    x1, x2 = _preferred_operands(x1, x2, precision, preferred_element_type, "vecdot")
    return R.sum(conj(x1) * x2, axis=axis)     # numpy's vecdot conjugates x1


def tensorinv(a: ArrayLike, ind: int = 2) -> Array:
    """The inverse of a seen as a matrix from its first `ind` axes to the others:
    tensordot(tensorinv(a, ind), a, ind) is the identity of a.shape[ind:]."""
    a, = _as_matrices("tensorinv", a)
    if not isinstance(ind, (int, np.integer)) or ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind!r}")
    rows, cols = tuple(a.shape[:ind]), tuple(a.shape[ind:])
    if math.prod(rows) != math.prod(cols):
        raise ShapeError(f"tensorinv: a.shape[:ind] {rows} and a.shape[ind:] {cols} must "
                         f"have equal products to be inverted")
    n = math.prod(rows)
    return reshape(inv(reshape(a, (n, n))), cols + rows)


def tensorsolve(a: ArrayLike, b: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """x with tensordot(a, x, x.ndim) = b: x has shape a.shape[b.ndim:]. axes: the
    axes of a moved to the end first."""
    a, b = _as_matrices("tensorsolve", a, b)
    if axes is not None:
        axes = [normalize_axis(x, a.ndim) for x in axes]
        a = moveaxis(a, axes, list(range(a.ndim - len(axes), a.ndim)))
    x_shape = tuple(a.shape[b.ndim:])
    if tuple(a.shape[:b.ndim]) != tuple(b.shape) or math.prod(x_shape) != b.size:
        raise ShapeError(f"tensorsolve: a of shape {tuple(a.shape)} must begin with b's "
                         f"shape {tuple(b.shape)} and its other axes have b.size "
                         f"({b.size}) entries")
    n = b.size
    return reshape(solve(reshape(a, (n, n)), reshape(b, (n,))), x_shape)
