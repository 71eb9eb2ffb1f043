"""lax.dot and lax.dot_general with JAX's precision= and preferred_element_type=.

`precision` is checked and has no effect: fnad's kernels multiply in the operands' own
dtype, i.e. always at Precision.HIGHEST (see fnad.numpy's Precision).
`preferred_element_type` converts the operands first, so the product accumulates in,
and returns, that dtype.
"""
from typing import Any

from ..errors import ShapeError
from ..numpy._products import Precision, dot_general
from ..numpy._core import as_operand
from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["Precision", "dot", "dot_general"]


def dot(lhs: ArrayLike, rhs: ArrayLike, precision: Any = None,
        preferred_element_type: DTypeLike | None = None) -> Array:
    """Vector-vector, matrix-vector and matrix-matrix products (lax.dot: the last axis
    of lhs against the first of rhs; operands of rank 1 or 2)."""
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    if not (1 <= lhs.ndim <= 2 and 1 <= rhs.ndim <= 2) or lhs.shape[-1] != rhs.shape[0]:
        raise ShapeError(f"lax.dot: operands of shapes {tuple(lhs.shape)} and "
                         f"{tuple(rhs.shape)}: they must have rank 1 or 2 and the last "
                         f"axis of lhs must match the first of rhs")
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (0,)), ((), ())), precision,
                       preferred_element_type)
