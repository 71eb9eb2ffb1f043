"""Threefry-2x32 random bits on the GPU: a thread per value, each hashing its own
counter. The hash is the cpu kernels' `hash2x32` (fnad/kernels/cpu/random.py),
compiled for the device, so both backends draw the same bits by construction."""
import numpy as np

from . import runtime
from .registry import implements
from .runtime import launch
from .shape import broadcast_to, flat, size, view
from ...kernels.cpu.random import MASK, hash2x32
from ...primitives import random_bits as R

cuda = runtime.cuda()


@cuda.jit(cache=True)
def _threefry(k0, k1, x0, x1, y0, y1):
    i = cuda.grid(1)
    while i < y0.size:
        a, b = hash2x32(np.uint64(k0[i]), np.uint64(k1[i]), np.uint64(x0[i]),
                        np.uint64(x1[i]))
        y0[i] = a
        y1[i] = b
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _bits(keys, out, count, wide, low):
    """out[b * count + i] from hash(keys[b], i): y0 << 32 | y1 if wide, else the
    `low` bits of y0 ^ y1 (the cpu's truncation, written as a mask)."""
    f = cuda.grid(1)
    while f < out.size:
        b = f // count
        c = np.uint64(f % count)
        y0, y1 = hash2x32(np.uint64(keys[b, 0]), np.uint64(keys[b, 1]),
                          c >> np.uint64(32), c & MASK)
        if wide:
            out[f] = (y0 << np.uint64(32)) | y1
        else:
            out[f] = (y0 ^ y1) & low
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _split(keys, out, count):
    """out[b * count + i, :] = hash(keys[b], i)."""
    f = cuda.grid(1)
    while f < out.shape[0]:
        b = f // count
        c = np.uint64(f % count)
        y0, y1 = hash2x32(np.uint64(keys[b, 0]), np.uint64(keys[b, 1]),
                          c >> np.uint64(32), c & MASK)
        out[f, 0] = y0
        out[f, 1] = y1
        f += cuda.gridsize(1)


@implements(R.threefry2x32_p)
def _threefry_impl(k0, k1, x0, x1):
    shape = np.broadcast_shapes(*(tuple(w.shape) for w in (k0, k1, x0, x1)))
    words = [flat(broadcast_to(w, shape)) for w in (k0, k1, x0, x1)]
    y0, y1 = runtime.empty(shape, np.uint32), runtime.empty(shape, np.uint32)
    launch(_threefry, size(shape), *words, flat(y0), flat(y1))
    return [y0, y1]


def _key_table(keys):
    return view(keys, (size(tuple(keys.shape)[:-1]), 2))


@implements(R.random_bits_p)
def _bits_impl(keys, shape, bit_width):
    dtype = R.UINTS[bit_width]
    out = runtime.empty(tuple(keys.shape)[:-1] + tuple(shape), dtype)
    low = np.uint64((1 << min(bit_width, 32)) - 1)
    launch(_bits, out.size, _key_table(keys), flat(out), size(shape), bit_width == 64, low)
    return out


@implements(R.random_split_p)
def _split_impl(keys, shape):
    out = runtime.empty(tuple(keys.shape)[:-1] + tuple(shape) + (2,), np.uint32)
    launch(_split, out.size // 2, _key_table(keys), view(out, (out.size // 2, 2)),
           size(shape))
    return out
