"""Elementwise kernels numpy lacks or needs several passes for.

Compiled lazily, once per dtype, and cached on disk by Numba, so importing fnad
costs no compile and a second process loads the machine code."""
import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ...dtypes import bfloat16 as _BFLOAT16


@numba.njit(cache=True)
def logistic_scalar(x):
    # Branch so that exp never overflows: for x < 0 use e^x / (1 + e^x).
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


# The helpers here that call the math library (exp, ...): on many elements numpy's SIMD
# ufuncs beat a fused loop calling them (kernels/cpu/chunked.py). The others are a few
# comparisons or arithmetic operations, cheaper inline than a pass through memory.
MATH_LIBRARY = frozenset({"logistic_scalar", "cbrt_scalar"})


# ---- numpy's rules on one element, where Numba's operators or functions differ.
# The fusing compiler inlines these through the primitives' scalar expressions; the
# cuda backend compiles the same Python functions as device functions
# (kernels/cuda/scalar_functions.py), and its simulator runs them as Python.

@numba.njit(cache=True)
def maximum_scalar(a, b):
    # NaN wins, as in numpy (a != a only for NaN); Python's max(1.0, nan) is 1.0. Equal
    # operands give b, as numpy's maximum(0.0, -0.0) is -0.0.
    if a != a or a > b:
        return a
    return b


@numba.njit(cache=True)
def relu_scalar(x):
    # where(x <= 0, 0, x): -0.0 and the negatives (-inf too) give +0.0, NaN passes.
    # x ** 0 is a 1 of x's own type, so the zero is of that type too.
    if x <= 0:
        return x ** 0 - x ** 0
    return x


@numba.njit(cache=True)
def minimum_scalar(a, b):
    if a != a or a < b:
        return a
    return b


@numba.njit(cache=True)
def floor_divide_scalar(x, y):
    # Numba's // is numpy's floor_divide on integers (x // 0 is 0) and floats (inf,
    # nan, -0.0 included), but for iinfo(int64).min // -1 it gives 0 where numpy wraps
    # around to the minimum: the one negative integer equal to its negation.
    if y == -1 and x < 0 and x == -x:
        return x
    return x // y


# Numba computes integers in int64 or uint64, and a Python int literal mixed with a
# uint64 turns the arithmetic into float64: the integer helpers below make their zeros
# and ones from their operands instead (x ^ x is 0, ~0 // ~0 is 1, in x's type).

@numba.njit(cache=True)
def truncate_divide_scalar(x, y):
    # lax.div of integers, C's division: the quotient rounded toward zero. x / 0 has all
    # bits set (-1, or the largest unsigned value), and iinfo.min / -1 wraps around to
    # iinfo.min, as in XLA and JAX.
    zero = x ^ x
    if y == zero:
        return ~zero
    if y == ~zero and x < zero and x == -x:
        return x
    q = x // y                  # Numba's // floors, as Python's
    if x % y != zero and (x < zero) != (y < zero):
        q = q + y // y
    return q


@numba.njit(cache=True)
def integer_power_scalar(x, y):
    # x ** y by squaring, in integer arithmetic: wraps around as numpy's does. A
    # negative exponent gives the true power truncated toward zero (1 for x = 1, +-1
    # for x = -1, else 0), what jit gives in JAX; fnad.numpy.power raises for a
    # concrete one, as numpy does.
    zero = x ^ x
    one = ~zero // ~zero
    if y < zero:
        if x == one:
            return one
        if x == ~zero:
            return ~zero if y & one else one
        return zero
    result, base = one, x
    while y > zero:
        if y & one:
            result = result * base
        base = base * base
        y = y >> one
    return result


def integer_fmod(x, y):
    """C's remainder on integers (the sign of x; x fmod 0 is 0, as in numpy), in
    integer arithmetic. Numba's np.fmod gets negative integers wrong."""
    if y == 0:
        return x - x
    r = x % y                   # Python's remainder: the sign of y
    if r != 0 and (r < 0) != (x < 0):
        r = r - y
    return r


def fmod_scalar(x, y):
    """numpy's fmod of one element: exact for integers of any width and floats."""
    if isinstance(x, (int, np.integer)):
        return integer_fmod(x, y)
    return np.fmod(x, y)


@overload(fmod_scalar)
def _fmod_scalar(x, y):
    if isinstance(x, types.Integer) and isinstance(y, types.Integer):
        return integer_fmod
    return lambda x, y: np.fmod(x, y)


@numba.njit(cache=True)
def sign_real(x):
    # numpy's sign: NaN stays NaN and both zeros give +0 (x - x); Numba's np.sign keeps
    # -0.0. x ** 0 is a 1 of x's own type, also for infinities.
    if x > 0:
        return x ** 0
    if x < 0:
        return -(x ** 0)
    return x if x != x else x - x


@numba.njit(cache=True)
def sign_complex(z):
    # numpy's complex sign: z / |z|, 0 at 0; an infinite part gives its direction (NaN
    # in the other part notwithstanding), two infinite parts give NaN.
    re, im = z.real, z.imag
    re_inf, im_inf = abs(re) == np.inf, abs(im) == np.inf
    if re_inf and im_inf:
        return z - z
    if re_inf:
        return z * 0 + (1 if re > 0 else -1)
    if im_inf:
        return z * 0 + (1j if im > 0 else -1j)
    a = abs(z)
    if a == 0:
        return z - z
    return z / a


def sign_scalar(x):
    """numpy's sign of one number, real or complex. Compiled code takes the overload
    below; this runs on the cuda simulator."""
    if isinstance(x, (complex, np.complexfloating)):
        return sign_complex.py_func(x)
    return sign_real.py_func(x)


@overload(sign_scalar)
def _sign_scalar(x):
    if isinstance(x, types.Complex):
        return lambda x: sign_complex(x)
    return lambda x: sign_real(x)


@numba.njit(cache=True)
def round_scalar(x, rounding_method):
    """lax.round of one element: rounding_method 0 rounds halves away from zero (C's
    round, JAX's default), 1 to even (numpy's round)."""
    if rounding_method == 1:
        return np.rint(x)
    if x == 0 or x != x:        # zeros keep their sign, NaN stays
        return x
    a = abs(x)
    t = np.floor(a)
    if a - t >= 0.5:            # exact: a and its floor share their exponent
        t = t + a ** 0
    return -t if x < 0 else t


# ---- cbrt: numpy's is within an ulp or two of the true cube root, Numba's np.cbrt
# (a power of 1/3) is several ulps off near the largest floats and drops the sign of
# -0.0. Here: the cube root of the mantissa by pow, then one Newton step whose residual
# y**3 - a is computed exactly (Dekker's products), which leaves about half an ulp.
@numba.njit(cache=True)
def _split(a):
    c = 134217729.0 * a         # 2**27 + 1: Veltkamp's split into two 26-bit halves
    high = c - (c - a)
    return high, a - high

@numba.njit(cache=True)
def _two_product(a, b):
    """p, e with p + e == a * b exactly (no fused multiply-add needed)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl

@numba.njit(cache=True)
def cbrt64(x):
    """The cube root of a float64 to about half an ulp; -0.0, infinities and NaN as
    numpy."""
    if x == 0 or x != x or x - x != 0:
        return x + x if x != x else x
    m, e = math.frexp(abs(x))
    r = e % 3                               # |x| = (m * 2**r) * 2**(e - r), e - r = 3q
    a = math.ldexp(m, r)                    # in [0.5, 4): no overflow below
    y = a ** (1.0 / 3.0)
    square, square_error = _two_product(y, y)
    cube, cube_error = _two_product(square, y)
    residual = (cube - a) + cube_error + square_error * y
    y = y - residual / (3.0 * y * y)
    return math.copysign(math.ldexp(y, (e - r) // 3), x)


def cbrt_scalar(x):
    """numpy's cbrt of one float: float16 and float32 through float64 (one rounding at
    the end). Compiled code takes the overload below; this runs on the cuda simulator."""
    if isinstance(x, (np.float16, np.float32)):
        return type(x)(cbrt64(float(x)))
    return cbrt64(x)


@overload(cbrt_scalar)
def _cbrt_scalar(x):
    if x == types.float32:
        return lambda x: np.float32(cbrt64(np.float64(x)))
    return lambda x: cbrt64(x)


@numba.vectorize(cache=True)
def _logistic(x):
    return logistic_scalar(x)


@numba.vectorize(cache=True)
def _erf(x):
    return math.erf(x)


def cbrt(x):
    """numpy's cbrt, float16 and float32 through float64: numpy's own float32 cbrt can
    be an ulp or two off (cbrt(-27) = -2.9999998 with SIMD), and cbrt_scalar is within
    half an ulp, so every mode rounds the same cube root."""
    real_operands(x)
    if x.dtype == np.float64:
        return np.cbrt(x)
    return np.cbrt(x.astype(np.float64)).astype(x.dtype)


def round_away(x):
    """Halves away from zero (see round_scalar), in numpy."""
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):     # inf - inf: NaN, not a half
        return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def truncate_divide(x, y):
    """lax.div of integer arrays (see truncate_divide_scalar), in numpy."""
    x, y = np.broadcast_arrays(x, y)
    zero = y == 0
    safe = np.where(zero, 1, y)
    with np.errstate(over="ignore"):
        q = np.floor_divide(x, safe)
        q = q + ((np.remainder(x, safe) != 0) & ((x < 0) != (safe < 0)))
        return np.where(zero, ~np.zeros((), x.dtype), q).astype(x.dtype, copy=False)


def integer_power(x, y):
    """x ** y of integer arrays (see integer_power_scalar), in numpy."""
    negative = y < 0
    if not np.any(negative):
        return np.power(x, y)
    one = np.ones((), np.result_type(x, y))
    powers = np.power(x, np.where(negative, 0, y))
    truncated = np.where(x == one, one, np.where((x == -one) & (y % 2 == 1), -one,
                                                 np.where(x == -one, one, one - one)))
    return np.where(negative, truncated, powers).astype(powers.dtype, copy=False)


def real_operands(*xs):
    """Refuse complex operands with a TypeError (the primitive then raises its
    DTypeError naming them): kernels that numpy would run on complex numbers with
    another meaning (a lexicographic order) or after dropping the imaginary part."""
    for x in xs:
        if x.dtype.kind == "c":
            raise TypeError(f"complex operand of dtype {x.dtype}")


def _widened(x):
    # Numba has no float16 or bfloat16 arithmetic: compute in float32 and round back.
    real_operands(x)
    return x.astype(np.float32) if x.dtype == np.float16 or x.dtype == _BFLOAT16 else x


def sign(x):
    # ml_dtypes' bfloat16 sign keeps -0.0's sign bit; numpy's (every other float) gives 0.0
    return np.sign(x.astype(np.float32)).astype(x.dtype) if x.dtype == _BFLOAT16 \
        else np.sign(x)


def relu(x):
    with np.errstate(invalid="ignore"):     # NaN <= 0 is False, quietly
        return np.where(x <= 0, np.zeros((), x.dtype), x)


def logistic(x):
    return _logistic(_widened(x)).astype(x.dtype, copy=False)


def erf(x):
    return _erf(_widened(x)).astype(x.dtype, copy=False)


def make_complex(re, im):
    """re + i im of two float arrays (float32 -> complex64), exactly: the parts are
    stored, never multiplied by i (inf * 1j would put NaN in the real part)."""
    if re.dtype != im.dtype or re.dtype not in (np.float32, np.float64):
        raise TypeError(f"complex parts of dtypes {re.dtype} and {im.dtype}")
    dtype = np.complex64 if re.dtype == np.float32 else np.complex128
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtype)
    out.real = re
    out.imag = im
    return out


def complex_only(impl):
    """impl for complex operands only (lax.real, imag, conj); a real one is a TypeError,
    which the primitive turns into its DTypeError."""
    def run(x):
        if x.dtype.kind != "c":
            raise TypeError(f"real operand of dtype {x.dtype}")
        return impl(x)
    return run
