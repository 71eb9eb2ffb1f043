"""numpy.linalg over fnad's linear-algebra primitives: dtype promotion, broadcasting
of leading dimensions and numpy's argument conventions; no math of its own.

Singular matrices (solve, inv) and matrices that are not positive definite
(cholesky) raise numpy.linalg.LinAlgError, as numpy does."""
import collections
import math

import numpy as np

from ..errors import ShapeError, DTypeError
from ..primitives import linalg as L
from ..primitives import shape as S
from ._core import as_operand, promote_inexact, normalize_axis
from ._shapes import broadcast_to, reshape, matrix_transpose, expand_dims
from ._products import matmul, outer, tensordot
from . import _elementwise as E, _reductions as R

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "norm", "vector_norm",
           "matrix_norm", "matrix_power", "multi_dot", "matmul", "outer", "tensordot",
           "matrix_transpose", "LinAlgError", "SlogdetResult"]

LinAlgError = np.linalg.LinAlgError
SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _as_matrices(name, *arrays):
    """Operands promoted to one floating dtype that np.linalg supports."""
    arrays = promote_inexact(*[as_operand(a) for a in arrays])
    if arrays[0].dtype == np.float16:
        raise DTypeError(f"{name}: float16 is not supported in linalg; use float32 or "
                         f"float64 (got operands of shapes "
                         + ", ".join(str(tuple(a.shape)) for a in arrays) + ")")
    return arrays


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name}: expected a square matrix or a stack of square matrices "
                         f"(shape (..., n, n)), got shape {tuple(a.shape)}")
    return a


def solve(a, b):
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


def inv(a):
    a, = _as_matrices("inv", a)
    return L.inv(_square("inv", a))


def det(a):
    a, = _as_matrices("det", a)
    return L.det(_square("det", a))


def slogdet(a):
    """SlogdetResult(sign, logabsdet), by LU factorization."""
    a, = _as_matrices("slogdet", a)
    return SlogdetResult(*L.slogdet(_square("slogdet", a)))


def cholesky(a, *, upper=False, symmetrize_input=True):
    """The lower (or upper) Cholesky factor. As in JAX, the input is symmetrized,
    (a + a^T) / 2, so its gradient is symmetric too."""
    a, = _as_matrices("cholesky", a)
    factor = L.cholesky(_square("cholesky", a), symmetrize_input=symmetrize_input)
    return matrix_transpose(factor) if upper else factor


# --------------------------------------------------------------------------- norms

def _sqrt_sum_squares(x, axis, keepdims):
    return E.sqrt(R.sum(x * x, axis=axis, keepdims=keepdims))


def vector_norm(x, axis=None, keepdims=False, ord=2):  # noqa: A002 (numpy's name)
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


def matrix_norm(x, ord="fro", keepdims=False, axis=(-2, -1)):  # noqa: A002
    """Matrix norms over the two axes `axis`: 'fro', 1, -1, inf, -inf. The spectral
    norms (2, -2) and 'nuc' need singular values, which fnad does not compute yet."""
    x, = promote_inexact(as_operand(x))
    if x.ndim < 2:
        raise ShapeError(f"norm: a matrix norm needs at least 2 dimensions, got shape "
                         f"{tuple(x.shape)}")
    row, col = (normalize_axis(a, x.ndim) for a in axis)
    if row == col:
        raise ValueError(f"norm: duplicate axes {tuple(axis)}")
    if ord in (2, -2, "nuc"):
        raise NotImplementedError(
            f"norm: ord={ord!r} for matrices needs the singular values, and fnad has no "
            f"svd yet; use ord='fro', 1 or inf")
    if ord is None or ord == "fro":
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


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
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

def matrix_power(a, n):
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
    return result


def multi_dot(arrays):
    """The chained product, left to right; a 1-d first (last) array is a row
    (column) vector, as in numpy."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: needs at least two arrays")
    out = arrays[0]
    for b in arrays[1:]:
        out = matmul(out, b)
    return out
