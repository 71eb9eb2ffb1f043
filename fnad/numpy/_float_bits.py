"""Functions of a float's representation (frexp, ldexp, nextafter, spacing, modf),
composed of exact arithmetic: multiplying by a power of two is exact while the result
stays normal, and 2**k for an integral k is exact in pow. No bit casts are needed."""
import numpy as np
from typing import Any

from ..dtypes import finfo, kind_of as dtype_kind
from ..errors import DTypeError
from ..primitives import elementwise as E
from ._core import as_operand, astype, promote_inexact
from ._elementwise import (abs, clip, copysign, floor, isfinite, isinf, isnan, log2,
                           trunc, where)
from ..typing import Array, ArrayLike

__all__ = ["frexp", "ldexp", "nextafter", "spacing", "modf"]


def _pow2(k, dtype):
    """2**k for integral k (an integer array) in the float dtype: exact wherever the
    power is representable, normal or subnormal."""
    return E.pow_p.bind(np.asarray(2, dtype), astype(k, dtype))


def _float(name, *args):
    args = promote_inexact(*args)
    if dtype_kind(args[0].dtype) != "f":
        raise DTypeError(f"{name}: needs real arguments, got {args[0].dtype}")
    return args


def frexp(x: Any) -> Any:
    """(mantissa, exponent) with x = mantissa * 2**exponent, |mantissa| in [0.5, 1)
    (and x itself with exponent 0 for zeros, infinities and NaN); exponent is int32."""
    x, = _float("frexp", x)
    regular = isfinite(x) & (x != 0)
    a = where(regular, abs(x), np.ones((), x.dtype))
    # log2 estimates the exponent to within one; the scaling by powers of two is exact,
    # and a last comparison moves the mantissa into [0.5, 1).
    e = astype(floor(log2(astype(a, np.float64))), np.int32) + 1
    # 2**-e in two halves: one power would overflow for subnormal a
    half = -e // 2
    m = a * _pow2(half, x.dtype) * _pow2(-e - half, x.dtype)
    high, low = m >= 1, m < 0.5
    m = where(high, m * np.asarray(0.5, x.dtype), where(low, m * np.asarray(2, x.dtype), m))
    e = where(high, e + 1, where(low, e - 1, e))
    mantissa = where(regular, copysign(m, x), x)
    return mantissa, where(regular, e, np.zeros((), np.int32))


def _scale(m, k, info):
    """m * 2**k for m in [0.5, 2) and integral k, rounded once: the first factor keeps
    the product normal (exact), the second takes it into the subnormal or overflow
    range."""
    k = astype(k, np.int32)
    first = clip(k, np.int32(info.minexp + 1), np.int32(info.maxexp - 2))
    rest = clip(k - first, np.int32(-info.nmant - 3), np.int32(3))
    return m * _pow2(first, m.dtype) * _pow2(rest, m.dtype)


def ldexp(x1: Any, x2: ArrayLike) -> Array:
    """x1 * 2**x2, rounded once (x2 an integer array)."""
    x2 = as_operand(x2)
    if dtype_kind(x2.dtype) not in "iub":
        raise DTypeError(f"ldexp: the exponent must be an integer, got {x2.dtype}")
    x1, = _float("ldexp", x1)
    info = finfo(x1.dtype)
    m, e = frexp(x1)
    # beyond +-3 * the exponent range every result is 0 or inf: clipping keeps the
    # int32 sum below from wrapping
    span = 3 * (info.maxexp - info.minexp + info.nmant)
    k = clip(astype(x2, np.int64), -span, span)
    return where(isfinite(x1) & (x1 != 0), _scale(m, astype(e, np.int64) + k, info), x1)


def nextafter(x1: Any, x2: Any) -> Array:
    """The float next to x1 in the direction of x2 (x2 itself where they are equal)."""
    x1, x2 = _float("nextafter", x1, x2)
    dtype = x1.dtype
    info = finfo(dtype)
    p = info.nmant + 1                      # bits of precision
    m, e = frexp(x1)
    # one unit in the last place: 2**(e - p), never below the smallest subnormal
    ulp = np.int32(info.minexp - info.nmant)
    step = where(e - p > ulp, e - p, ulp)
    up = x2 > x1
    toward_zero = up != (x1 > 0)
    # below a power of two the floats are twice as dense
    denser = toward_zero & (abs(m) == 0.5) & (step > ulp)
    step = where(denser, step - 1, step)
    delta = _pow2(step, dtype)
    out = x1 + where(up, delta, -delta)
    tiny = np.asarray(info.smallest_subnormal, dtype)
    out = where(x1 == 0, where(up, tiny, -tiny), out)
    big = np.asarray(info.max, dtype)
    out = where(isinf(x1), where(x1 > 0, big, -big), out)
    out = where(x1 == x2, x2, out)
    return where(isnan(x1) | isnan(x2), np.asarray(np.nan, dtype), out)


def spacing(x: Any) -> Array:
    """The distance from x to the next float away from zero (negative for negative x);
    NaN for infinities and NaN."""
    x, = _float("spacing", x)
    inf = np.asarray(np.inf, x.dtype)
    away = where(x == 0, inf, copysign(inf, x))     # numpy: spacing(-0.0) > 0
    return where(isfinite(x), nextafter(x, away) - x, np.asarray(np.nan, x.dtype))


def modf(x: ArrayLike) -> Any:
    """(fractional part, integral part), both with x's sign (-0.0 included)."""
    x, = promote_inexact(x)
    whole = trunc(x)
    frac = where(isinf(x), np.zeros((), x.dtype), x - where(isinf(x), x * 0, whole))
    return copysign(frac, x), whole
