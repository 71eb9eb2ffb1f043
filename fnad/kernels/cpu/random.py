"""Threefry-2x32 with 20 rounds: the counter-based hash behind fnad.random.

Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC11),
and the Random123 library: a key (k0, k1) and a counter (x0, x1) of 32-bit words
go through 20 add-rotate-xor rounds with the key injected every 4 rounds; the
output is two 32-bit words. numpy would need a pass over memory per operation (about
a hundred), so each element is hashed in registers here. Arithmetic is written on
uint64 values masked to 32 bits: Numba widens uint32 arithmetic to 64 bits, and a
mask is how the wrap-around of 32-bit addition is kept explicit.

Compiled lazily, on first use, and cached on disk by Numba.
"""
import numba
import numpy as np

MASK = np.uint64(0xFFFFFFFF)
# Skein's key-schedule parity constant, as in Random123's threefry.h.
PARITY = np.uint64(0x1BD11BDA)


@numba.njit(cache=True, inline="always")
def _round(x0, x1, r):
    x0 = (x0 + x1) & MASK
    x1 = ((x1 << np.uint64(r)) | (x1 >> np.uint64(32 - r))) & MASK
    return x0, x1 ^ x0


@numba.njit(cache=True, inline="always")
def _four(x0, x1, r0, r1, r2, r3):
    x0, x1 = _round(x0, x1, r0)
    x0, x1 = _round(x0, x1, r1)
    x0, x1 = _round(x0, x1, r2)
    return _round(x0, x1, r3)


@numba.njit(cache=True, inline="always")
def hash2x32(k0, k1, x0, x1):
    """Threefry-2x32-20 of counter (x0, x1) under key (k0, k1); uint64 values < 2**32.
    Rotations 13 15 26 6 / 17 29 16 24 alternate; after each group of four rounds
    key word s % 3 and (s + 1) % 3 of (k0, k1, k0 ^ k1 ^ PARITY) are added, plus s."""
    k2 = k0 ^ k1 ^ PARITY
    x0 = (x0 + k0) & MASK
    x1 = (x1 + k1) & MASK
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    x0, x1 = (x0 + k1) & MASK, (x1 + k2 + np.uint64(1)) & MASK
    x0, x1 = _four(x0, x1, 17, 29, 16, 24)
    x0, x1 = (x0 + k2) & MASK, (x1 + k0 + np.uint64(2)) & MASK
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    x0, x1 = (x0 + k0) & MASK, (x1 + k1 + np.uint64(3)) & MASK
    x0, x1 = _four(x0, x1, 17, 29, 16, 24)
    x0, x1 = (x0 + k1) & MASK, (x1 + k2 + np.uint64(4)) & MASK
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    return (x0 + k2) & MASK, (x1 + k0 + np.uint64(5)) & MASK


@numba.njit(cache=True, nogil=True)
def threefry2x32(k0, k1, x0, x1, y0, y1):
    """y[i] = hash(k[i], x[i]) over 1-d uint32 arrays of one length."""
    for i in range(x0.shape[0]):
        a, b = hash2x32(np.uint64(k0[i]), np.uint64(k1[i]),
                        np.uint64(x0[i]), np.uint64(x1[i]))
        y0[i] = a
        y1[i] = b


# The counter of element i of a draw is the 64-bit i as (high word, low word), so a
# draw of n values is n independent hashes and any slice of it can be computed alone
# (JAX's "partitionable" threefry layout).

@numba.njit(cache=True, nogil=True)
def bits32(keys, out):
    """out[b, i] = y0 ^ y1 of hash(keys[b], i): uint32 keys (B, 2), uint32 out (B, n)."""
    for b in range(keys.shape[0]):
        k0, k1 = np.uint64(keys[b, 0]), np.uint64(keys[b, 1])
        for i in range(out.shape[1]):
            c = np.uint64(i)
            y0, y1 = hash2x32(k0, k1, c >> np.uint64(32), c & MASK)
            out[b, i] = y0 ^ y1


@numba.njit(cache=True, nogil=True)
def bits64(keys, out):
    """out[b, i] = y0 << 32 | y1 of hash(keys[b], i): uint64 out (B, n)."""
    for b in range(keys.shape[0]):
        k0, k1 = np.uint64(keys[b, 0]), np.uint64(keys[b, 1])
        for i in range(out.shape[1]):
            c = np.uint64(i)
            y0, y1 = hash2x32(k0, k1, c >> np.uint64(32), c & MASK)
            out[b, i] = (y0 << np.uint64(32)) | y1


@numba.njit(cache=True, nogil=True)
def split(keys, out):
    """out[b, i, :] = hash(keys[b], i), the i-th new key: uint32 out (B, n, 2)."""
    for b in range(keys.shape[0]):
        k0, k1 = np.uint64(keys[b, 0]), np.uint64(keys[b, 1])
        for i in range(out.shape[1]):
            c = np.uint64(i)
            y0, y1 = hash2x32(k0, k1, c >> np.uint64(32), c & MASK)
            out[b, i, 0] = y0
            out[b, i, 1] = y1
