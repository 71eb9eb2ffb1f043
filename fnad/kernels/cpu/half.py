"""float16 and bfloat16 inside generated kernels.

Numba's cpu target has no float16 type at all: it can neither read nor write a
float16 array; neither target knows bfloat16. Generated kernels therefore see these
arrays as their uint16 bit
patterns, decode each element to float32 when they load it, compute in float32, and
encode with round-to-nearest-even when they store. A float16 intermediate is
rounded to float16 precision where it is computed, so a fused loop gives what
numpy's float16 ufuncs give one operation at a time (they too compute each
operation in float32 and round its result).

The encodings follow IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15),
10 fraction bits; subnormals are multiples of 2**-24; 65520 and above round to inf.
bfloat16 is the upper half of a float32 (8 exponent bits, 7 fraction bits), the way
ml_dtypes' ufuncs compute it too: in float32, one rounding per operation.
"""
import math

import ml_dtypes
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

_SUBNORMAL_UNIT = 2.0 ** -24
_SMALLEST_NORMAL = 2.0 ** -14


@intrinsic
def _float32_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def _bits_from_float32(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@numba.njit(cache=True, nogil=True)
def to_float(bits):
    """The float32 value of a float16 bit pattern (exact: float32 holds every float16)."""
    b = np.uint32(bits)
    sign = (b & np.uint32(0x8000)) << np.uint32(16)
    exponent = b & np.uint32(0x7c00)
    if exponent == 0:           # zero or subnormal: fraction * 2**-24, exactly
        v = np.float32(b & np.uint32(0x3ff)) * np.float32(_SUBNORMAL_UNIT)
        return -v if sign else v
    if exponent == 0x7c00:      # inf or NaN, payload kept
        return _float32_from_bits(sign | np.uint32(0x7f800000) |
                                  ((b & np.uint32(0x3ff)) << np.uint32(13)))
    # rebias the exponent from 15 to 127: (127 - 15) << 23 == 0x38000000
    return _float32_from_bits(sign | (((b & np.uint32(0x7fff)) << np.uint32(13)) +
                                      np.uint32(0x38000000)))


@numba.njit(cache=True, nogil=True)
def _bits_of_float32(x):
    f = _bits_from_float32(np.float32(x))
    sign = (f >> np.uint32(16)) & np.uint32(0x8000)
    f &= np.uint32(0x7fffffff)
    if f >= 0x7f800000:                         # inf, or NaN (kept quiet)
        if f == 0x7f800000:
            return np.uint16(sign | np.uint32(0x7c00))
        return np.uint16(sign | np.uint32(0x7e00) | ((f >> np.uint32(13)) & np.uint32(0x3ff)))
    if f >= 0x477ff000:                         # 65520 and above: overflow to inf
        return np.uint16(sign | np.uint32(0x7c00))
    if f < 0x38800000:                          # below 2**-14: a float16 subnormal or 0
        if f <= 0x33000000:                     # at most 2**-25 (a tie): rounds to 0
            return np.uint16(sign)
        e = f >> np.uint32(23)
        m = (f & np.uint32(0x7fffff)) | np.uint32(0x800000)
        shift = np.uint32(126) - e              # value / 2**-24 = m / 2**shift
        q = m >> shift
        rest = m & ((np.uint32(1) << shift) - np.uint32(1))
        tie = np.uint32(1) << (shift - np.uint32(1))
        if rest > tie or (rest == tie and (q & np.uint32(1))):
            q += np.uint32(1)
        return np.uint16(sign | q)
    h = (f - np.uint32(0x38000000)) >> np.uint32(13)
    rest = f & np.uint32(0x1fff)
    if rest > 0x1000 or (rest == 0x1000 and (h & np.uint32(1))):
        h += np.uint32(1)                       # a carry into the exponent is right too
    return np.uint16(sign | h)


@numba.njit(cache=True, nogil=True)
def _round_wide(x):
    """x (float64, or an integer) rounded once to float16 precision, as a float64.
    Going through float32 first would round twice."""
    v = np.float64(x)
    a = abs(v)
    if not a < 65520.0:
        return v if v != v else math.copysign(math.inf, v)
    if a < _SMALLEST_NORMAL:
        unit = _SUBNORMAL_UNIT
    else:
        unit = math.ldexp(1.0, math.frexp(a)[1] - 11)
    return math.copysign(np.rint(a / unit) * unit, v)


def _narrow(x):
    """x as a float32 that rounds to float16 as x itself would."""


def _exact_in_float32(t):
    """Numba types whose every value float32 holds exactly (no rounding to fear)."""
    return t == types.float32 or isinstance(t, types.Boolean) or (
        isinstance(t, types.Integer) and t.bitwidth <= 16)


@overload(_narrow)
def _narrow_overload(x):
    if x == types.float32:
        return lambda x: x
    if _exact_in_float32(x):        # a bool or small int (a comparison, a mask)
        return lambda x: np.float32(x)
    # One rounding, in float64; the result is a float16 value, exact in float32.
    return lambda x: np.float32(_round_wide(x))


@numba.njit(cache=True, nogil=True)
def to_bits(x):
    """The float16 bit pattern nearest to x (ties to even), for x of any real type."""
    return _bits_of_float32(_narrow(x))


@numba.njit(cache=True, nogil=True)
def round(x):  # noqa: A001  (float16's round-to-nearest, as np.float16(x) does)
    """x rounded to float16 precision, as a float32."""
    return to_float(to_bits(x))


# bfloat16: the upper 16 bits of a float32 (8 exponent bits, 7 fraction bits), so
# decoding is a shift, and encoding rounds the lower 16 bits away, to nearest even.

_BF16_SUBNORMAL_UNIT = 2.0 ** -133      # the spacing of bfloat16's subnormals
_BF16_SMALLEST_NORMAL = 2.0 ** -126
_BF16_OVERFLOW = (2.0 - 2.0 ** -8) * 2.0 ** 127    # halfway past the largest finite
_TWO_52 = 2.0 ** 52


@numba.njit(cache=True, nogil=True)
def bfloat16_to_float(bits):
    """The float32 value of a bfloat16 bit pattern (exact)."""
    return _float32_from_bits(np.uint32(bits) << np.uint32(16))


@numba.njit(cache=True, nogil=True)
def _bfloat16_bits_of_float32(x):
    f = _bits_from_float32(np.float32(x))
    if (f & np.uint32(0x7fffffff)) > 0x7f800000:    # NaN: keep it a (quiet) NaN
        return np.uint16((f >> np.uint32(16)) | np.uint32(0x40))
    # Adding 0x7fff plus the kept part's lowest bit rounds ties to even; a carry
    # into the exponent (up to inf) is the right result too.
    f += np.uint32(0x7fff) + ((f >> np.uint32(16)) & np.uint32(1))
    return np.uint16(f >> np.uint32(16))


@numba.njit(cache=True, nogil=True)
def _bfloat16_round_wide(x):
    """x (float64, or an integer) rounded once to bfloat16 precision, as a float64."""
    v = np.float64(x)
    a = abs(v)
    if not a < _BF16_OVERFLOW:
        return v if v != v else math.copysign(math.inf, v)
    if a < _BF16_SMALLEST_NORMAL:
        unit = _BF16_SUBNORMAL_UNIT
    else:
        unit = math.ldexp(1.0, math.frexp(a)[1] - 8)
    # a / unit < 2**8: adding and removing 2**52 rounds it to an integer, half to even
    # (np.rint, which numba.cuda does not type on scalars)
    return math.copysign(((a / unit + _TWO_52) - _TWO_52) * unit, v)


def _bfloat16_narrow(x):
    """x as a float32 that rounds to bfloat16 as x itself would."""


@overload(_bfloat16_narrow)
def _bfloat16_narrow_overload(x):
    if x == types.float32:
        return lambda x: x
    if _exact_in_float32(x):
        return lambda x: np.float32(x)
    return lambda x: np.float32(_bfloat16_round_wide(x))


@numba.njit(cache=True, nogil=True)
def bfloat16_to_bits(x):
    """The bfloat16 bit pattern nearest to x (ties to even), for x of any real type."""
    return _bfloat16_bits_of_float32(_bfloat16_narrow(x))


@numba.njit(cache=True, nogil=True)
def bfloat16_round(x):
    """x rounded to bfloat16 precision, as a float32."""
    return bfloat16_to_float(bfloat16_to_bits(x))


def to_bfloat16(x):
    """The numpy array x (any real dtype) rounded once to bfloat16. ml_dtypes converts
    float64 and wide integers through float32, rounding twice (1 + 2**-8 + 2**-30
    becomes 1.0, not 1 + 2**-7); this rounds in float64 to bfloat16's 8 significant
    bits first, after which the two conversions are exact."""
    x = np.asarray(x)
    if x.dtype.itemsize <= 2 or x.dtype == np.float32:
        return x.astype(ml_dtypes.bfloat16)
    v = x.astype(np.float64)
    a = np.abs(v)
    with np.errstate(invalid="ignore", over="ignore"):
        unit = np.ldexp(1.0, np.maximum(np.frexp(a)[1] - 8, -133))
        rounded = np.copysign(np.rint(a / unit) * unit, v)
        return rounded.astype(np.float32).astype(ml_dtypes.bfloat16)
