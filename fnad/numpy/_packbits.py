"""packbits and unpackbits: eight truth values to a uint8 and back, with bitwise
operations on uint8 (numpy's bit order "big": the first value is the top bit)."""
import numpy as np
from typing import Any, Sequence

from ..errors import DTypeError
from . import _elementwise as E
from ._core import as_operand, astype, normalize_axis
from ._reductions import sum as _sum
from ._shapes import moveaxis, ravel, reshape, take_range
from ._pad import pad
from ..typing import Array, ArrayLike

__all__ = ["packbits", "unpackbits"]


def _weights(bitorder, name):
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    weights = 1 << np.arange(8, dtype=np.uint8)
    return weights[::-1].copy() if bitorder == "big" else weights


def packbits(a: Any, axis: Any = None, bitorder: str = "big") -> Array:
    """The nonzero-ness of a's entries along axis (the flattened a for None) packed
    eight to a uint8, the last byte padded with zeros."""
    weights = _weights(bitorder, "packbits")
    a = as_operand(a)
    if a.dtype.kind not in "biu":
        raise DTypeError(f"packbits needs a boolean or integer array, got {a.dtype}")
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    bits = moveaxis(astype(E.not_equal(a, 0), np.uint8), axis, -1)
    n = bits.shape[-1]
    padded = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, -n % 8)])
    groups = reshape(padded, tuple(padded.shape[:-1]) + (padded.shape[-1] // 8, 8))
    packed = _sum(groups * weights, axis=-1, dtype=np.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a: Any, axis: Any = None, count: Any = None, bitorder: str = "big") -> Array:
    """The bits of the uint8 array a as uint8 zeros and ones along axis (the
    flattened a for None); count keeps the first count bits (negative: drops that
    many from the end; more than there are: pads with zeros)."""
    weights = _weights(bitorder, "unpackbits")
    a = as_operand(a)
    if a.dtype != np.uint8:
        raise DTypeError(f"unpackbits needs a uint8 array, got {a.dtype}")
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    moved = moveaxis(a, axis, -1)
    expanded = reshape(moved, tuple(moved.shape) + (1,))
    bits = astype(E.not_equal(E.bitwise_and(expanded, weights), 0), np.uint8)
    bits = reshape(bits, tuple(moved.shape[:-1]) + (moved.shape[-1] * 8,))
    if count is not None:
        n = bits.shape[-1]
        count = int(count)
        keep = count if count >= 0 else max(n + count, 0)
        if keep <= n:
            bits = take_range(bits, 0, keep, bits.ndim - 1)
        else:
            bits = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, keep - n)])
    return moveaxis(bits, -1, axis)
