"""The array API's batched vector products: vecdot, matvec, vecmat (the first
argument conjugated where numpy conjugates it, for complex values)."""
from typing import Any

from ..errors import ShapeError
from ._complex import conj
from ._core import normalize_axis, promote
from ._products import matmul
from ._reductions import sum as _sum
from ._shapes import expand_dims, moveaxis, squeeze
from ..typing import Array, ArrayLike


def _check(name, a, b, axis_a, axis_b):
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"{name}: operands must not be scalars, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[axis_a] != b.shape[axis_b]:
        raise ShapeError(f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} do not "
                         f"match in the contracted axis ({a.shape[axis_a]} != "
                         f"{b.shape[axis_b]})")


def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Array:
    """sum(conj(x1) * x2) over axis, the other axes broadcast."""
    x1, x2 = promote(x1, x2)
    _check("vecdot", x1, x2, axis, axis)
    a = moveaxis(x1, normalize_axis(axis, x1.ndim), -1)
    b = moveaxis(x2, normalize_axis(axis, x2.ndim), -1)
    product = conj(a) * b
    return _sum(product, -1, dtype=product.dtype)     # JAX's: no widening of integers


def matvec(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 (..., m, n) times the vectors x2 (..., n): (..., m)."""
    x1, x2 = promote(x1, x2)
    if x1.ndim < 2:
        raise ShapeError(f"matvec: x1 must be at least 2-d, got shape {tuple(x1.shape)}")
    _check("matvec", x1, x2, -1, -1)
    return squeeze(matmul(x1, expand_dims(x2, -1)), -1)


def vecmat(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The vectors conj(x1) (..., n) times x2 (..., n, m): (..., m)."""
    x1, x2 = promote(x1, x2)
    if x2.ndim < 2:
        raise ShapeError(f"vecmat: x2 must be at least 2-d, got shape {tuple(x2.shape)}")
    _check("vecmat", x1, x2, -1, -2)
    return squeeze(matmul(expand_dims(conj(x1), -2), x2), -2)


__all__ = ["vecdot", "matvec", "vecmat"]
