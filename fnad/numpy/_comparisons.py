"""Whole-array comparisons: isclose, allclose, array_equal, array_equiv."""
import numpy as np
from typing import Any

from ._core import as_operand, promote, promote_inexact
from ._elementwise import isfinite, isnan, where, abs
from ._reductions import all as _all
from ._shapes import broadcast_shapes
from ..typing import Array, ArrayLike

__all__ = ["isclose", "allclose", "array_equal", "array_equiv"]


def isclose(a: ArrayLike, b: ArrayLike, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False) -> Array:
    """|a - b| <= atol + rtol |b|; infinities are close to themselves, NaN to NaN only
    with equal_nan. Integers compare in the float they promote to (JAX's rule)."""
    a, b = promote(a, b)
    if a.dtype.kind == "b":
        return a == b
    a, b = promote_inexact(a, b)
    dtype = a.dtype
    rtol, atol = np.asarray(rtol, dtype), np.asarray(atol, dtype)
    zero = np.zeros((), dtype)
    finite = isfinite(a) & isfinite(b)
    # the difference is formed only where both are finite (no inf - inf warning)
    diff = abs(where(finite, a, zero) - where(finite, b, zero))
    close = where(finite, diff <= atol + rtol * abs(where(finite, b, zero)), a == b)
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close


def allclose(a: ArrayLike, b: ArrayLike, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Array:
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Array:
    """Same shape and equal elements (a boolean Array, as JAX gives)."""
    a1, a2 = as_operand(a1), as_operand(a2)
    if tuple(a1.shape) != tuple(a2.shape):
        return as_operand(False)
    a1, a2 = promote(a1, a2)
    equal = a1 == a2
    if equal_nan and a1.dtype.kind in "fc":
        equal = equal | (isnan(a1) & isnan(a2))
    return _all(equal)


def array_equiv(a1: Any, a2: Any) -> Array:
    """Equal after broadcasting against each other; False where they do not broadcast."""
    a1, a2 = as_operand(a1), as_operand(a2)
    try:
        broadcast_shapes(tuple(a1.shape), tuple(a2.shape))
    except ValueError:
        return as_operand(False)
    a1, a2 = promote(a1, a2)
    return _all(a1 == a2)
