"""Random bits from a counter-based hash: Threefry-2x32-20 (fnad.kernels.cpu.random).

A key is two uint32 words. The i-th value of a draw hashes the counter i (as 64 bits:
high word, low word) under the key, so a draw is a pure function of (key, shape) and
needs no state. The layout is JAX's "partitionable" threefry, so fnad's keys and bits
are bit-for-bit JAX's (jax.random.split, bits, uniform).

  threefry2x32(k0, k1, x0, x1) -> (y0, y1)  the hash itself, elementwise, broadcasting
  random_bits(keys, shape, bit_width)       uint8..uint64 [*batch, *shape]: y0 ^ y1
                                            (64 bits: y0 << 32 | y1)
  random_split(keys, shape)                 uint32 [*batch, *shape, 2]: (y0, y1)

`keys` is uint32 [*batch, 2]: the leading axes hold independent keys, which is the
batching rule -- vmap over keys moves the batch axis to the front and makes one call.
The outputs are integers, so every derivative is zero.
"""
import math

import numpy as np

from ..core import Primitive
from ..abstract import ShapedArray, broadcast_shapes
from ..errors import DTypeError, ShapeError
from ..kernels.cpu import random as kernels
from .structural import elementwise_primitive, moveaxis_to
from . import onnx_rules

# ONNX has no wrapping uint32 arithmetic in ONNX Runtime's kernels: bits drawn inside an
# exported function have no lowering; draw them outside and pass them in.
_NO_ONNX = onnx_rules.unsupported(
    "random bits have no ONNX lowering (ONNX Runtime has no wrapping uint32 "
    "arithmetic for Threefry); draw the random values outside the exported function "
    "and pass them in as an input")

UINT32 = np.dtype(np.uint32)
UINTS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: UINT32, 64: np.dtype(np.uint64)}


def _zero_jvp(prim, primals, params):
    out = prim.bind(*primals, **params)
    return out, ([None] * len(out) if prim.multiple_results else None)


def _no_vjp(g, out, *args, **params):
    return [None] * len(args)


# --------------------------------------------------------------------------- the hash

def _threefry_shape(k0, k1, x0, x1):
    avals = (k0, k1, x0, x1)
    if any(a.dtype != UINT32 for a in avals):
        raise DTypeError("threefry2x32 needs uint32 key and counter words, got "
                         + ", ".join(map(str, avals)))
    shape = broadcast_shapes("threefry2x32", *(a.shape for a in avals))
    return [ShapedArray(shape, UINT32), ShapedArray(shape, UINT32)]


def _threefry_impl(k0, k1, x0, x1):
    words = [np.asarray(w) for w in (k0, k1, x0, x1)]
    if any(w.dtype != UINT32 for w in words):
        raise TypeError("threefry2x32: operands must be uint32")
    shape = words[0].shape
    if any(w.shape != shape for w in words):
        shape = np.broadcast_shapes(*(w.shape for w in words))
        words = [np.broadcast_to(w, shape) for w in words]
    flat = [np.ravel(w) for w in words]
    y0, y1 = np.empty(flat[0].size, UINT32), np.empty(flat[0].size, UINT32)
    kernels.threefry2x32(*flat, y0, y1)
    return [y0.reshape(shape), y1.reshape(shape)]


threefry2x32_p = elementwise_primitive(
    "threefry2x32", abstract_eval=_threefry_shape, impl=_threefry_impl,
    jvp=lambda primals, tangents: _zero_jvp(threefry2x32_p, primals, {}), vjp=_no_vjp,
    multiple_results=True, onnx=_NO_ONNX)


# --------------------------------------------------------------------------- draws

def _check_keys(name, keys):
    if keys.dtype != UINT32 or not keys.shape or keys.shape[-1] != 2:
        raise DTypeError(f"{name}: keys must be uint32 arrays of shape (..., 2), got "
                         f"{keys.dtype}{list(keys.shape)}")


def _bits_shape(keys, shape, bit_width):
    _check_keys("random_bits", keys)
    if bit_width not in UINTS:
        raise ValueError(f"random_bits: bit_width must be 8, 16, 32 or 64, got {bit_width}")
    return ShapedArray(tuple(keys.shape[:-1]) + shape, UINTS[bit_width])


def _flat_keys(keys):
    keys = np.asarray(keys)
    if keys.dtype != UINT32 or not keys.shape or keys.shape[-1] != 2:
        raise TypeError("random: keys must be uint32 (..., 2)")
    return np.ascontiguousarray(keys.reshape(-1, 2))


def _bits_impl(keys, shape, bit_width):
    flat = _flat_keys(keys)
    size = int(np.prod(shape, dtype=np.int64))
    out_shape = keys.shape[:-1] + shape
    if bit_width == 64:
        out = np.empty((flat.shape[0], size), np.uint64)
        kernels.bits64(flat, out)
    else:
        out = np.empty((flat.shape[0], size), np.uint32)
        kernels.bits32(flat, out)
        if bit_width != 32:     # the low bits, as JAX converts y0 ^ y1
            out = out.astype(UINTS[bit_width])
    return out.reshape(out_shape)


def _split_shape(keys, shape):
    _check_keys("random_split", keys)
    return ShapedArray(tuple(keys.shape[:-1]) + shape + (2,), UINT32)


def _split_impl(keys, shape):
    flat = _flat_keys(keys)
    size = int(np.prod(shape, dtype=np.int64))
    out = np.empty((flat.shape[0], size, 2), np.uint32)
    kernels.split(flat, out)
    return out.reshape(keys.shape[:-1] + shape + (2,))


def _numba_bits(args, in_avals, out, shape, bit_width):
    # The loop compiler's Numba code (fnad/backends/cpu/loops.py): the same kernels.
    keys = in_avals[0]
    flat = f"np.ascontiguousarray({args[0]}).reshape(({math.prod(keys.shape[:-1])}, 2))"
    size = math.prod(shape)
    draw = f"loop_arrays.bits{64 if bit_width == 64 else 32}({flat}, {size})"
    if bit_width < 32:      # the low bits, as the eager kernel keeps
        draw += f".astype(np.{UINTS[bit_width].name})"
    return f"{draw}.reshape({tuple(out.shape)!r})"


def _numba_split(args, in_avals, out, shape):
    keys = in_avals[0]
    flat = f"np.ascontiguousarray({args[0]}).reshape(({math.prod(keys.shape[:-1])}, 2))"
    return f"loop_arrays.split({flat}, {math.prod(shape)}).reshape({tuple(out.shape)!r})"


def _draw(name, **slots):
    """A primitive of keys (..., 2). Its outputs are integers, so its JVP is zero; its
    vmap rule moves the batch axis to the front of the keys and makes one call."""
    def jvp(primals, tangents, **params):
        return _zero_jvp(prim, primals, params)

    def batch(args, batch_dims, **params):
        keys, = args
        return prim.bind(moveaxis_to(keys, batch_dims[0], 0), **params), 0

    prim = Primitive(name, jvp=jvp, vjp=_no_vjp, batch=batch, **slots)
    return prim


random_bits_p = _draw("random_bits", abstract_eval=_bits_shape, impl=_bits_impl,
                      numba_source=_numba_bits,
                      onnx=_NO_ONNX)
random_split_p = _draw("random_split", abstract_eval=_split_shape, impl=_split_impl,
                       numba_source=_numba_split,
                       onnx=_NO_ONNX)


def _static_shape(name, shape):
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in shape):
        raise ShapeError(f"{name}: negative dimension in shape {shape}")
    return shape


def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32-20 hash of counters (x0, x1) under keys (k0, k1): uint32
    arrays that broadcast together. Returns (y0, y1)."""
    return tuple(threefry2x32_p.bind(k0, k1, x0, x1))


def random_bits(keys, shape, bit_width=32):
    """uint{bit_width} bits of the given shape for each key in keys (..., 2)."""
    return random_bits_p.bind(keys, shape=_static_shape("random_bits", shape),
                              bit_width=int(bit_width))


def random_split(keys, shape):
    """New keys (..., *shape, 2) derived from each key in keys (..., 2)."""
    return random_split_p.bind(keys, shape=_static_shape("random_split", shape))
