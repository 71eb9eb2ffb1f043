"""Array builders for compiled loop bodies (fnad/backends/cpu/loops.py): iota, the
running reductions (cumsum, cumprod, cummax, cummin) and random bits, so a body
using them still compiles into one loop.

Each matches its eager kernel exactly: the running reductions accumulate each lane
in order (reverse ones from the end), in the operand's dtype, with numpy's
maximum/minimum rules (NaN wins; of two equal values the newer one); random bits are
the eager draw's own threefry kernels.
"""
import numba
import numpy as np

from . import random as threefry
from .elementwise import maximum_scalar, minimum_scalar


@numba.njit(cache=True, nogil=True)
def iota(out, dimension):
    """Fill out (C-contiguous, any rank) with each element's index along dimension."""
    flat = out.reshape(out.size)
    inner = 1
    for d in range(dimension + 1, out.ndim):
        inner *= out.shape[d]
    n = out.shape[dimension]
    for i in range(out.size):
        flat[i] = (i // inner) % n
    return out


# One function per rule (as a flag, every rule would be typed for every dtype). Each
# takes the operand viewed as (before, n, after), the running axis in the middle, and
# returns out[:, i, :] = rule(out[:, i - 1, :], x[:, i, :]) in running order.


@numba.njit(cache=True, nogil=True)
def cumsum(x, reverse):
    out = np.empty_like(x)
    n = x.shape[1]
    for p in range(x.shape[0]):
        for k in range(n):
            i = n - 1 - k if reverse else k
            j = i + 1 if reverse else i - 1
            for q in range(x.shape[2]):
                b = x[p, i, q]
                if k == 0:
                    out[p, i, q] = b
                else:
                    a = out[p, j, q]
                    out[p, i, q] = a + b
    return out


@numba.njit(cache=True, nogil=True)
def cumprod(x, reverse):
    out = np.empty_like(x)
    n = x.shape[1]
    for p in range(x.shape[0]):
        for k in range(n):
            i = n - 1 - k if reverse else k
            j = i + 1 if reverse else i - 1
            for q in range(x.shape[2]):
                b = x[p, i, q]
                if k == 0:
                    out[p, i, q] = b
                else:
                    a = out[p, j, q]
                    out[p, i, q] = a * b
    return out


@numba.njit(cache=True, nogil=True)
def cummax(x, reverse):
    out = np.empty_like(x)
    n = x.shape[1]
    for p in range(x.shape[0]):
        for k in range(n):
            i = n - 1 - k if reverse else k
            j = i + 1 if reverse else i - 1
            for q in range(x.shape[2]):
                b = x[p, i, q]
                if k == 0:
                    out[p, i, q] = b
                else:
                    a = out[p, j, q]
                    out[p, i, q] = maximum_scalar(a, b)
    return out


@numba.njit(cache=True, nogil=True)
def cummin(x, reverse):
    out = np.empty_like(x)
    n = x.shape[1]
    for p in range(x.shape[0]):
        for k in range(n):
            i = n - 1 - k if reverse else k
            j = i + 1 if reverse else i - 1
            for q in range(x.shape[2]):
                b = x[p, i, q]
                if k == 0:
                    out[p, i, q] = b
                else:
                    a = out[p, j, q]
                    out[p, i, q] = minimum_scalar(a, b)
    return out


@numba.njit(cache=True, nogil=True)
def bits32(keys, size):
    """The eager random_bits kernel's uint32 draw: keys (B, 2) -> (B, size)."""
    out = np.empty((keys.shape[0], size), np.uint32)
    threefry.bits32(keys, out)
    return out


@numba.njit(cache=True, nogil=True)
def bits64(keys, size):
    out = np.empty((keys.shape[0], size), np.uint64)
    threefry.bits64(keys, out)
    return out


@numba.njit(cache=True, nogil=True)
def split(keys, size):
    """The eager random_split kernel: keys (B, 2) -> (B, size, 2)."""
    out = np.empty((keys.shape[0], size, 2), np.uint32)
    threefry.split(keys, out)
    return out


@numba.njit(cache=True, nogil=True)
def _stable_order(keys):
    """For keys (before, n, after): each lane's stable sorting permutation (numpy's
    order: NaN last, equal keys as they came)."""
    order = np.empty(keys.shape, np.int64)
    for p in range(keys.shape[0]):
        for q in range(keys.shape[2]):
            order[p, :, q] = np.argsort(keys[p, :, q].copy(), kind="mergesort")
    return order


@numba.njit(cache=True, nogil=True)
def _take(x, order):
    out = np.empty_like(x)
    for p in range(x.shape[0]):
        for i in range(x.shape[1]):
            for q in range(x.shape[2]):
                out[p, i, q] = x[p, order[p, i, q], q]
    return out


@numba.njit(cache=True, nogil=True)
def sort1(keys, shape):
    """sort's one operand, viewed as (before, n, after), sorted along the middle axis
    and returned in `shape`."""
    return (_take(keys, _stable_order(keys)).reshape(shape),)


@numba.njit(cache=True, nogil=True)
def sort2(keys, values, shape):
    """sort's keys and one operand carried along (argsort's positions, say)."""
    order = _stable_order(keys)
    return _take(keys, order).reshape(shape), _take(values, order).reshape(shape)
