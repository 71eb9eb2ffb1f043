"""Integer functions composed of integer arithmetic: shifts as multiplication and
floor division by powers of two (exact, wrapping as numpy's shifts do), the bit count
as a branch-free tree of masked sums, gcd and lcm by Euclid's algorithm."""
import numpy as np
from typing import Any

from ..errors import DTypeError
from ..lax.control_flow import while_loop
from ..primitives import elementwise as E
from ._core import astype, promote
from ._elementwise import (abs, bitwise_and, floor_divide, invert, minimum, multiply,
                           remainder, where)
from ._reductions import any as _any
from ._shapes import broadcast_arrays
from ..typing import Array, ArrayLike

__all__ = ["left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift",
           "bitwise_invert", "bitwise_count", "gcd", "lcm"]


def _integers(name, *args):
    args = promote(*args)
    if args[0].dtype.kind not in "iu":
        raise DTypeError(f"{name}: needs integer arguments, got "
                         f"{', '.join(str(a.dtype) for a in args)}")
    return args


def _power_of_two(k, dtype):
    """2**k in dtype, wrapping to 0 from 2**bits on (and to the minimum at 2**(bits-1)
    for signed types), as the shifted bit would fall off."""
    k = astype(k, dtype)
    return E.integer_power_p.bind(np.asarray(2, dtype), k)


def left_shift(x1: Any, x2: Any) -> Array:
    """x1 * 2**x2 with the bits past the width dropped; 0 for x2 >= the width."""
    x1, x2 = _integers("left_shift", x1, x2)
    return multiply(x1, _power_of_two(x2, x1.dtype))


def right_shift(x1: Any, x2: Any) -> Array:
    """floor(x1 / 2**x2): the sign fills in from the left (arithmetic shift), so a
    shift by the width or more gives 0 or -1, as numpy's."""
    x1, x2 = _integers("right_shift", x1, x2)
    bits = 8 * x1.dtype.itemsize
    # 2**(bits-1) does not fit a signed type: shift in two halves (floor of a floor is
    # the floor of the whole quotient for positive divisors)
    k = minimum(x2, np.asarray(bits - 1, x1.dtype))
    half = floor_divide(k, np.asarray(2, x1.dtype))
    out = floor_divide(floor_divide(x1, _power_of_two(half, x1.dtype)),
                       _power_of_two(k - half, x1.dtype))
    if x1.dtype.kind == "u":
        out = where(x2 >= bits, np.zeros((), x1.dtype), out)
    return out


bitwise_left_shift, bitwise_right_shift, bitwise_invert = left_shift, right_shift, invert


def _repeated_byte(byte, dtype):
    return np.asarray(int.from_bytes(bytes([byte]) * dtype.itemsize, "little"), dtype)


def bitwise_count(x: ArrayLike) -> Array:
    """The number of 1 bits of |x| (numpy's definition), as uint8."""
    x, = promote(x)
    if x.dtype.kind == "b":
        return astype(x, np.uint8)
    if x.dtype.kind not in "iu":
        raise DTypeError(f"bitwise_count: needs integer or bool arguments, got {x.dtype}")
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    # |int min| wraps to int min, whose bit pattern is 2**(bits-1) unsigned: one bit
    v = astype(abs(x), unsigned)
    two, four, sixteen = (np.asarray(n, unsigned) for n in (2, 4, 16))
    v = v - bitwise_and(floor_divide(v, two), _repeated_byte(0x55, unsigned))
    v = (bitwise_and(v, _repeated_byte(0x33, unsigned))
         + bitwise_and(floor_divide(v, four), _repeated_byte(0x33, unsigned)))
    v = bitwise_and(v + floor_divide(v, sixteen), _repeated_byte(0x0F, unsigned))
    # the byte counts summed into the top byte by one multiplication
    top = np.asarray(2 ** (8 * (unsigned.itemsize - 1)), unsigned)
    return astype(floor_divide(v * _repeated_byte(0x01, unsigned), top), np.uint8)


def gcd(x1: Any, x2: ArrayLike) -> Array:
    """The greatest common divisor of |x1| and |x2| (0 for two zeros)."""
    x1, x2 = _integers("gcd", x1, x2)
    # Euclid runs on the magnitudes as unsigned integers: |int min| does not fit the
    # signed type (it wraps back to int min, as numpy's result does)
    unsigned = np.dtype(f"u{x1.dtype.itemsize}")
    a, b = broadcast_arrays(astype(abs(x1), unsigned), astype(abs(x2), unsigned))
    zero, one = np.zeros((), unsigned), np.ones((), unsigned)

    def step(state):
        a, b = state
        nonzero = b != 0
        return where(nonzero, b, a), where(nonzero, remainder(a, where(nonzero, b, one)), zero)
    out = while_loop(lambda state: _any(state[1] != 0), step, (a, b))[0]
    return astype(out, x1.dtype)


def lcm(x1: ArrayLike, x2: ArrayLike) -> Array:
    """|x1| / gcd(x1, x2) * |x2| (wrapping where it does not fit, as numpy's), 0 where
    either is 0."""
    x1, x2 = _integers("lcm", x1, x2)
    g = gcd(x1, x2)
    zero = np.zeros((), g.dtype)
    safe = where(g == 0, np.ones((), g.dtype), g)
    return where(g == 0, zero, floor_divide(abs(x1), safe) * abs(x2))
