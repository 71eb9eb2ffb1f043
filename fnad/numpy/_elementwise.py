"""numpy's elementwise functions over the elementwise primitives."""
import numpy as np
from typing import Any, Callable

from ..dtypes import finfo as _finfo, kind_of as _dtype_kind
from ..array import Array
from ..core import Tracer
from ..errors import DTypeError
from ..primitives import elementwise as E
from ._core import promote, promote_pair, promote_inexact, as_operand, astype
from ._core import unary_inexact as _unary_inexact
from ._nonzero import nonzero
from ..typing import ArrayLike


def _binary(prim: Any) -> Callable[[ArrayLike, ArrayLike], Array]:
    def op(x: ArrayLike, y: ArrayLike) -> Array:
        if type(x) is Array and type(y) is Array and x._value.dtype == y._value.dtype:
            return prim.bind(x, y)
        return prim.bind(*promote_pair(x, y))
    op.__name__ = prim.name
    return op


def _binary_inexact(prim: Any) -> Callable[[ArrayLike, ArrayLike], Array]:
    def op(x: ArrayLike, y: ArrayLike) -> Array:
        x, y = promote_pair(x, y)
        if _dtype_kind(x.dtype) not in "fc":
            x, y = promote_inexact(x, y)
        return prim.bind(x, y)
    op.__name__ = prim.name
    return op


def _unary(prim: Any) -> Callable[[ArrayLike], Array]:
    def op(x: ArrayLike) -> Array:
        return prim.bind(as_operand(x))
    op.__name__ = prim.name
    return op


add = _binary(E.add_p)
subtract = _binary(E.sub_p)
multiply = _binary(E.mul_p)
true_divide = divide = _binary_inexact(E.div_p)


# numpy orders complex numbers lexicographically (real parts first; a NaN imaginary part
# makes the real parts' comparison false). The primitives order real numbers only, so
# complex operands take these compositions of real comparisons. As numpy's maximum and
# minimum, a NaN in either part of x makes the result x.
def _lexicographic_lt(x, y, or_equal):
    xr, xi, yr, yi = E.real_p.bind(x), E.imag_p.bind(x), E.real_p.bind(y), E.imag_p.bind(y)
    no_nan = E.and_p.bind(E.eq_p.bind(xi, xi), E.eq_p.bind(yi, yi))
    ties = E.and_p.bind(E.eq_p.bind(xr, yr), (E.le_p if or_equal else E.lt_p).bind(xi, yi))
    return E.or_p.bind(E.and_p.bind(E.lt_p.bind(xr, yr), no_nan), ties)


def _nan_in(z):
    re, im = E.real_p.bind(z), E.imag_p.bind(z)
    return E.or_p.bind(E.ne_p.bind(re, re), E.ne_p.bind(im, im))


def _lexicographic_max(x, y, max_not_min):
    keep_x = _lexicographic_lt(y, x, True) if max_not_min else _lexicographic_lt(x, y, True)
    return E.select_p.bind(E.or_p.bind(_nan_in(x), keep_x), x, y)


def _ordered(prim: Any, on_complex: Callable[[Array, Array], Array]
             ) -> Callable[[ArrayLike, ArrayLike], Array]:
    """prim (a comparison, max or min) on real operands; on complex ones, on_complex.
    The complex path is found by the primitive's refusal, so real operands pay
    nothing for it."""
    real_op = _binary(prim)

    def op(x: ArrayLike, y: ArrayLike) -> Array:
        try:
            return real_op(x, y)
        except DTypeError:
            x, y = promote_pair(x, y)
            if _dtype_kind(x.dtype) != "c":
                raise
            return on_complex(x, y)
    op.__name__ = prim.name
    return op


maximum = _ordered(E.max_p, lambda x, y: _lexicographic_max(x, y, True))
minimum = _ordered(E.min_p, lambda x, y: _lexicographic_max(x, y, False))
arctan2 = _binary_inexact(E.atan2_p)
fmod = _binary(E.rem_p)
equal = _binary(E.eq_p)
not_equal = _binary(E.ne_p)
less = _ordered(E.lt_p, lambda x, y: _lexicographic_lt(x, y, False))
less_equal = _ordered(E.le_p, lambda x, y: _lexicographic_lt(x, y, True))
greater = _ordered(E.gt_p, lambda x, y: _lexicographic_lt(y, x, False))
greater_equal = _ordered(E.ge_p, lambda x, y: _lexicographic_lt(y, x, True))
bitwise_and = _binary(E.and_p)
bitwise_or = _binary(E.or_p)
bitwise_xor = _binary(E.xor_p)
negative = _unary(E.neg_p)
sign = _unary(E.sign_p)
invert = bitwise_not = _unary(E.not_p)
absolute = abs = _unary(E.abs_p)

exp = _unary_inexact(E.exp_p)
log = _unary_inexact(E.log_p)
log1p = _unary_inexact(E.log1p_p)
expm1 = _unary_inexact(E.expm1_p)
sqrt = _unary_inexact(E.sqrt_p)
sin = _unary_inexact(E.sin_p)
cos = _unary_inexact(E.cos_p)
tan = _unary_inexact(E.tan_p)
tanh = _unary_inexact(E.tanh_p)
arcsin = _unary_inexact(E.arcsin_p)
arccos = _unary_inexact(E.arccos_p)
arctan = _unary_inexact(E.arctan_p)
sinh = _unary_inexact(E.sinh_p)
cosh = _unary_inexact(E.cosh_p)
arcsinh = _unary_inexact(E.arcsinh_p)
arctanh = _unary_inexact(E.arctanh_p)
_floor = _unary_inexact(E.floor_p)
_ceil = _unary_inexact(E.ceil_p)
isfinite = _unary(E.is_finite_p)


def _keeps_integers(float_op: Callable[[ArrayLike], Array]) -> Callable[[ArrayLike], Array]:
    def op(x: ArrayLike) -> Array:
        x = as_operand(x)
        return x if _dtype_kind(x.dtype) in "biu" else float_op(x)
    op.__name__ = float_op.__name__
    return op


floor = _keeps_integers(_floor)
ceil = _keeps_integers(_ceil)


def round(x: ArrayLike, decimals: int = 0) -> Array:  # noqa: A001 (numpy's name)
    x = as_operand(x)
    if _dtype_kind(x.dtype) in "biu":
        return x
    if _dtype_kind(x.dtype) == "c":         # numpy rounds each part
        return _by_parts(lambda part: round(part, decimals), x)
    if decimals == 0:
        return E.round_p.bind(x, rounding_method=E.TO_NEAREST_EVEN)
    scale = 10.0 ** decimals
    return E.round_p.bind(x * scale, rounding_method=E.TO_NEAREST_EVEN) / scale


around = round


def trunc(x: ArrayLike) -> Array:
    x = as_operand(x)
    if _dtype_kind(x.dtype) in "biu":
        return x
    return where(x < 0, ceil(x), floor(x))


def power(x: ArrayLike, y: ArrayLike) -> Array:
    # An integer exponent known at trace time gets the exact integer_pow rule, which
    # is differentiable at x = 0 and defined for negative x.
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool) \
            and not isinstance(x, (int, float)):
        x = as_operand(x)
        if _dtype_kind(x.dtype) in "fc" or y >= 0:
            return E.integer_pow_p.bind(x, y=int(y))
    x, y = promote(x, y)
    if _dtype_kind(x.dtype) in "iu":        # exact integer arithmetic, as numpy
        _refuse_negative_powers(y)
        return E.integer_power_p.bind(x, y)
    if _dtype_kind(x.dtype) != "f":
        x, y = promote_inexact(x, y)
    return E.pow_p.bind(x, y)


def _refuse_negative_powers(y):
    """numpy's error for an integer to a negative integer power, where the exponent is
    known; a traced one (jit, vmap) gives integer_power's truncated value, as in JAX."""
    if not isinstance(y, Tracer) and np.any(np.asarray(y) < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")


def square(x: ArrayLike) -> Array:
    return E.integer_pow_p.bind(as_operand(x), y=2)


def reciprocal(x: ArrayLike) -> Array:
    return divide(1, x)


def rsqrt(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    return E.rsqrt_p.bind(x)


def cbrt(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    return E.cbrt_p.bind(x)


def exp2(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    return exp(x * np.asarray(np.log(2.0), x.dtype))


def log2(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    return log(x) / np.asarray(np.log(2.0), x.dtype)


def log10(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    return log(x) / np.asarray(np.log(10.0), x.dtype)


def logaddexp(x: ArrayLike, y: ArrayLike) -> Array:
    x, y = promote_inexact(x, y)
    # log(e^x + e^y) = m + log(e^(x-m) + e^(y-m)) for any constant m; with m the larger
    # argument held constant (stop_gradient), every derivative order is that of the
    # smooth function, ties included (a max or abs inside would zero the Hessian
    # there). The larger term's e^(x-m) is written 1 + expm1(x-m), whose expm1 is
    # exactly 0 in value, so the result is m + log1p(e^-|x-y|) to the last bit.
    # Where m is infinite or NaN it is the answer, and the differences are not formed
    # (inf - inf would be NaN, and numpy's floating-point warnings would fire).
    # A difference past the point where exp is 0 is not formed, so that a huge gap
    # (1e308 - -1e308) cannot overflow.
    m = maximum(x, y)
    finite = isfinite(m)
    zero = np.zeros((), m.dtype)
    shift = E.stop_gradient_p.bind(where(finite, m, zero))
    info = _finfo(m.dtype)
    floor = -np.log(info.smallest_subnormal) + 2
    if m.dtype == np.float64:       # -max - floor rounds back to -max: no overflow
        low = shift - np.asarray(floor, m.dtype)
    else:                           # in float16 it would: computed in float64
        low = astype(maximum(astype(shift, np.float64) - floor, -float(info.max)), m.dtype)
    # below low the difference is -inf (exp is exactly 0, with no underflow flag)
    ninf = np.asarray(-np.inf, m.dtype)
    dx = where(finite, where(x < low, ninf, maximum(x, low) - shift), zero)
    dy = where(finite, where(y < low, ninf, maximum(y, low) - shift), zero)
    inner = where(finite, where(x >= y, exp(dy) + expm1(dx), exp(dx) + expm1(dy)), zero)
    return where(finite, shift + log1p(inner), m)


def logaddexp2(x: ArrayLike, y: ArrayLike) -> Array:
    x, y = promote_inexact(x, y)
    ln2 = np.asarray(np.log(2.0), x.dtype)
    return logaddexp(x * ln2, y * ln2) / ln2


floor_divide = _binary(E.floor_divide_p)
remainder = mod = _binary(E.remainder_p)     # numpy's mod: the sign of the divisor


def divmod(x: ArrayLike, y: ArrayLike) -> Any:  # noqa: A001
    x, y = promote(x, y)
    return E.floor_divide_p.bind(x, y), E.remainder_p.bind(x, y)


def positive(x: ArrayLike) -> Array:
    return as_operand(x)


def logical_not(x: ArrayLike) -> Array:
    return E.not_p.bind(astype(x, np.bool_))


def _logical(prim: Any) -> Callable[[ArrayLike, ArrayLike], Array]:
    def op(x: ArrayLike, y: ArrayLike) -> Array:
        return prim.bind(*promote(astype(x, np.bool_), astype(y, np.bool_)))
    return op


logical_and = _logical(E.and_p)
logical_or = _logical(E.or_p)
logical_xor = _logical(E.xor_p)


def isnan(x: ArrayLike) -> Array:
    x = as_operand(x)
    return x != x


def _by_parts(f, z):
    """f applied to the real and the imaginary part of complex z."""
    return E.complex_p.bind(f(E.real_p.bind(z)), f(E.imag_p.bind(z)))


def isinf(x: ArrayLike) -> Array:
    x = as_operand(x)
    if _dtype_kind(x.dtype) == "c":
        return isinf(E.real_p.bind(x)) | isinf(E.imag_p.bind(x))
    if _dtype_kind(x.dtype) != "f":
        return x != x
    return abs(x) == np.inf


def where(condition: ArrayLike, x: ArrayLike | None = None, y: ArrayLike | None = None) -> Any:
    if x is None and y is None:
        return nonzero(condition)
    condition = astype(condition, np.bool_)
    x, y = promote(x, y)
    return E.select_p.bind(condition, x, y)


def clip(a: Any, a_min: Any = None, a_max: Any = None) -> Array:
    a = as_operand(a)
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return a


def sinc(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    pix = np.pi * x
    safe = where(x == 0, 1.0, pix)
    return where(x == 0, 1.0, sin(safe) / safe)


def deg2rad(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    return x * (np.pi / 180)


def rad2deg(x: ArrayLike) -> Array:
    x, = promote_inexact(x)
    return x * (180 / np.pi)


radians, degrees = deg2rad, rad2deg


def hypot(x: ArrayLike, y: ArrayLike) -> Array:
    x, y = promote_inexact(x, y)
    return E.hypot_p.bind(x, y)


def heaviside(x: ArrayLike, h0: Any) -> Array:
    """0 below zero, 1 above, h0 at zero, NaN at NaN; bools and integers give the float
    they compute in (JAX's rule)."""
    x, h0 = promote_inexact(x, h0)
    zero, one = np.zeros((), x.dtype), np.ones((), x.dtype)
    return where(x < 0, zero, where(x > 0, one, where(x == 0, h0, x)))


def _refuse_complex(name, x):
    """numpy's functions of the sign or the real line have no complex loop."""
    if _dtype_kind(x.dtype) == "c":
        raise DTypeError(f"{name} does not accept complex dtype {x.dtype} (operand of "
                         f"shape {tuple(x.shape)}); apply it to real() or imag()")


def signbit(x: ArrayLike) -> Array:
    x = as_operand(x)
    _refuse_complex("signbit", x)
    if _dtype_kind(x.dtype) != "f":
        return x < 0
    # x < 0 misses -0.0; atan2(x, -1) is -pi for x = -0.0 and pi for +0.0.
    return arctan2(x, -1) < 0


def copysign(x: ArrayLike, y: ArrayLike) -> Array:
    x, y = promote_inexact(x, y)
    return where(signbit(y), -abs(x), abs(x))


def nan_to_num(x: ArrayLike, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Array:
    x = as_operand(x)
    if _dtype_kind(x.dtype) == "c":
        return _by_parts(lambda part: nan_to_num(part, nan, posinf, neginf), x)
    if _dtype_kind(x.dtype) != "f":
        return x
    info = _finfo(x.dtype)
    x = where(isnan(x), nan, x)
    x = where(x == np.inf, info.max if posinf is None else posinf, x)
    return where(x == -np.inf, info.min if neginf is None else neginf, x)


# numpy 2's array-API names for the inverse functions
acos, asin, atan, asinh, atanh, atan2 = arccos, arcsin, arctan, arcsinh, arctanh, arctan2
pow = power  # noqa: A001


def fabs(x: ArrayLike) -> Array:
    """The absolute value as a float (numpy's fabs has no integer loop, nor a complex
    one)."""
    x, = promote_inexact(x)
    _refuse_complex("fabs", x)
    return abs(x)


def rint(x: ArrayLike) -> Array:
    """Round half to even, in the float integers compute in (numpy's rint of an int is
    a float)."""
    x, = promote_inexact(x)
    return E.round_p.bind(x, rounding_method=E.TO_NEAREST_EVEN)


def fmax(x1: ArrayLike, x2: ArrayLike) -> Array:
    """The larger, ignoring a NaN unless both are NaN."""
    x1, x2 = promote(x1, x2)
    if _dtype_kind(x1.dtype) not in "fc":
        return maximum(x1, x2)
    return where(isnan(x2), x1, where(isnan(x1), x2, maximum(x1, x2)))


def fmin(x1: ArrayLike, x2: ArrayLike) -> Array:
    """The smaller, ignoring a NaN unless both are NaN."""
    x1, x2 = promote(x1, x2)
    if _dtype_kind(x1.dtype) not in "fc":
        return minimum(x1, x2)
    return where(isnan(x2), x1, where(isnan(x1), x2, minimum(x1, x2)))


def float_power(x: ArrayLike, y: ArrayLike) -> Array:
    """power computed in floating point (JAX's dtype rule: the promoted inexact type)."""
    x, y = promote_inexact(x, y)
    return E.pow_p.bind(x, y)


def isposinf(x: ArrayLike) -> Array:
    x = as_operand(x)
    _refuse_complex("isposinf", x)
    return x == np.inf if _dtype_kind(x.dtype) == "f" else x != x


def isneginf(x: ArrayLike) -> Array:
    x = as_operand(x)
    _refuse_complex("isneginf", x)
    return x == -np.inf if _dtype_kind(x.dtype) == "f" else x != x
