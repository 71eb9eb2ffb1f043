"""lax's operators: each binds one primitive, with JAX's lax names and signatures."""
import builtins
import enum
from typing import Any, Callable, Sequence

import numpy as np

from ..numpy._core import as_operand
from ..primitives import elementwise as _E
from ..primitives import shape as _S
from ..primitives.reduce import argmax_p, argmin_p, reduce_max_p, reduce_min_p
from ..tree_util import tree_map
from ..typing import Array, ArrayLike, DTypeLike, PyTree, Shape


def unary_function(prim: Any) -> Callable[[ArrayLike], Array]:
    """lax's function of one operand binding `prim` (named after it; no promotion)."""
    def op(x: ArrayLike) -> Array:
        return prim.bind(_as(x))
    op.__name__ = op.__qualname__ = prim.name
    return op


def binary_function(prim: Any) -> Callable[[ArrayLike, ArrayLike], Array]:
    """lax's function of two operands binding `prim` (named after it; no promotion)."""
    def op(x: ArrayLike, y: ArrayLike) -> Array:
        return prim.bind(_as(x), _as(y))
    op.__name__ = op.__qualname__ = prim.name
    return op


def _as(x: Any) -> Array:
    return as_operand(x)


neg, exp, log, log1p, expm1 = map(unary_function, (_E.neg_p, _E.exp_p, _E.log_p, _E.log1p_p, _E.expm1_p))
sqrt, rsqrt, sin, cos, tan = map(unary_function, (_E.sqrt_p, _E.rsqrt_p, _E.sin_p, _E.cos_p, _E.tan_p))
tanh, asin, acos, atan = map(unary_function, (_E.tanh_p, _E.arcsin_p, _E.arccos_p, _E.arctan_p))
sinh, cosh, asinh, atanh = map(unary_function, (_E.sinh_p, _E.cosh_p, _E.arcsinh_p, _E.arctanh_p))
abs, sign, floor, ceil = map(unary_function, (_E.abs_p, _E.sign_p, _E.floor_p, _E.ceil_p))  # noqa: A001
logistic, erf, is_finite, bitwise_not = map(unary_function, (_E.logistic_p, _E.erf_p, _E.is_finite_p,
                                                     _E.not_p))
add, sub, mul, pow = map(binary_function, (_E.add_p, _E.sub_p, _E.mul_p, _E.pow_p))  # noqa: A001
max, min, atan2, rem = map(binary_function, (_E.max_p, _E.min_p, _E.atan2_p, _E.rem_p))  # noqa: A001
eq, ne, lt, le, gt, ge = map(binary_function, (_E.eq_p, _E.ne_p, _E.lt_p, _E.le_p, _E.gt_p, _E.ge_p))
bitwise_and, bitwise_or, bitwise_xor = map(binary_function, (_E.and_p, _E.or_p, _E.xor_p))
real, imag, conj, acosh = map(unary_function, (_E.real_p, _E.imag_p, _E.conj_p, _E.arccosh_p))
complex = binary_function(_E.complex_p)  # noqa: A001


class RoundingMethod(enum.IntEnum):
    """How lax.round treats halves (JAX's lax.RoundingMethod)."""
    AWAY_FROM_ZERO = _E.AWAY_FROM_ZERO
    TO_NEAREST_EVEN = _E.TO_NEAREST_EVEN


def round(x: ArrayLike,  # noqa: A001
          rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Array:
    """x rounded to an integral value; halves away from zero by default, as JAX's
    lax.round (fnad.numpy.round rounds them to even, as numpy)."""
    return _E.round_p.bind(_as(x), rounding_method=int(RoundingMethod(rounding_method)))


def div(x: ArrayLike, y: ArrayLike) -> Array:
    """x / y; for integers C's division, rounded toward zero (x / 0 has all bits set:
    -1, or the largest unsigned value), as in JAX."""
    x, y = _as(x), _as(y)
    if x.dtype.kind in "iu" and y.dtype.kind in "iu":
        return _E.integer_div_p.bind(x, y)
    return _E.div_p.bind(x, y)


def iota(dtype: DTypeLike, size: int) -> Array:
    """[0, 1, ..., size - 1] as `dtype` (JAX's lax.iota)."""
    return _S.iota(dtype, (int(size),), 0)


def broadcasted_iota(dtype: DTypeLike, shape: Shape, dimension: int) -> Array:
    """An array of `shape` counting along `dimension` (JAX's lax.broadcasted_iota)."""
    return _S.iota(dtype, shape, dimension)


def integer_pow(x: ArrayLike, y: int) -> Array:
    return _E.integer_pow_p.bind(x, y=int(y))


def square(x: ArrayLike) -> Array:
    return integer_pow(x, 2)


def select(pred: ArrayLike, on_true: ArrayLike, on_false: ArrayLike) -> Array:
    return _E.select_p.bind(pred, on_true, on_false)


def clamp(min: ArrayLike, x: ArrayLike, max: ArrayLike) -> Array:  # noqa: A002 (lax's names)
    return _E.clamp_p.bind(min, x, max)


def convert_element_type(x: ArrayLike, new_dtype: DTypeLike) -> Array:
    return _E.convert(_as(x), np.dtype(new_dtype))


def stop_gradient(x: PyTree) -> PyTree:
    """x, with a derivative of zero in every transform; works on pytrees."""
    return tree_map(lambda leaf: _E.stop_gradient_p.bind(as_operand(leaf)), x)


def reduce_max(x: ArrayLike, axes: Sequence[int]) -> Array:
    return reduce_max_p.bind(x, axes=tuple(axes))


def reduce_min(x: ArrayLike, axes: Sequence[int]) -> Array:
    return reduce_min_p.bind(x, axes=tuple(axes))


def argmax(x: ArrayLike, axis: int, index_dtype: DTypeLike) -> Array:
    return argmax_p.bind(x, axis=int(axis), index_dtype=np.dtype(index_dtype))


def argmin(x: ArrayLike, axis: int, index_dtype: DTypeLike) -> Array:
    return argmin_p.bind(x, axis=int(axis), index_dtype=np.dtype(index_dtype))


def pad(operand: ArrayLike, padding_value: ArrayLike,
        padding_config: Sequence[tuple[int, int, int]]) -> Array:
    """operand padded by (low, high, interior) per axis with padding_value (negative
    low/high trim). A Python number as padding_value takes the operand's dtype (it is
    weak, as in JAX)."""
    x = _as(operand)
    if isinstance(padding_value, (bool, int, float, builtins.complex)):   # (complex: lax's)
        padding_value = np.asarray(padding_value, x.dtype)
    return _S.pad(x, _as(padding_value), padding_config)
