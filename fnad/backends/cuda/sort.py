"""sort, argmax and argmin on the GPU.

An operand is seen as lines (outer, length, inner): `dimension` is the middle axis.

sort is a bottom-up merge sort of a permutation of each line, merge sort because it
is stable: pass w merges neighbouring sorted runs of w positions, every element
finding its place by a binary search in the other run, so a pass is a thread per
element whatever the line lengths (log2(length) passes). Several keys sort least
significant first, each sort stable, which orders lexicographically; then every
operand is permuted by the result. NaN sorts last, as in numpy.

argmax and argmin keep the first extremum of each line, NaN counting as the extremum
(as in numpy): a thread per line for short lines, else a block per line whose
threads stride along it, then a tree reduction in shared memory."""
import numpy as np
from numba import int64

from . import runtime
from .registry import implements
from .runtime import launch
from .shape import flat, iota, size
from ...primitives.sort import sort_p
from ...primitives.reduce import argmax_p, argmin_p

cuda = runtime.cuda()
THREADS = runtime.THREADS
SHORT = 64      # lines up to this long take one thread each in argmax and argmin


@cuda.jit(device=True, inline=True)
def _less(a, b):
    """a < b with NaN after every number (and equal to NaN)."""
    return a < b or (b != b and a == a)


@cuda.jit(cache=True)
def _merge_pass(key, src, dst, length, inner, width):
    f = cuda.grid(1)
    while f < src.size:
        p = (f // inner) % length
        base = f - p * inner            # position 0 of this element's line
        pair = p - p % (2 * width)      # the first position of the two runs
        if p - pair < width:            # from the left run: the right one is the other
            own, other = pair, pair + width if pair + width < length else length
            left = True
        else:
            own, other = pair + width, pair
            left = False
        end = other + width if other + width < length else length
        v = key[base + src[f] * inner]
        lo, hi = other, end
        while lo < hi:      # how many of the other run come before v
            mid = (lo + hi) // 2
            w = key[base + src[base + mid * inner] * inner]
            if (left and _less(w, v)) or (not left and not _less(v, w)):
                lo = mid + 1
            else:
                hi = mid
        dst[base + (pair + (p - own) + (lo - other)) * inner] = src[f]
        f += cuda.gridsize(1)


@cuda.jit(cache=True)
def _take(src, perm, out, length, inner):
    f = cuda.grid(1)
    while f < out.size:
        p = (f // inner) % length
        out[f] = src[f + (perm[f] - p) * inner]
        f += cuda.gridsize(1)


def _lines(shape, dimension):
    return size(shape[dimension + 1:]), shape[dimension]


@implements(sort_p)
def _sort(*operands, dimension, num_keys):
    shape = tuple(operands[0].shape)
    inner, length = _lines(shape, dimension)
    n = size(shape)
    if length <= 1 or not n:
        return list(operands)   # already sorted (and immutable: no copy needed)
    perm = flat(iota(np.int64, (n // (length * inner), length, inner), 1))
    spare = runtime.empty((n,), np.int64)
    for key in reversed(operands[:num_keys]):
        width = 1
        while width < length:
            launch(_merge_pass, n, flat(key), perm, spare, length, inner, width)
            perm, spare = spare, perm
            width *= 2
    outs = []
    for x in operands:
        out = runtime.empty(shape, x.dtype)
        launch(_take, n, flat(x), perm, flat(out), length, inner)
        outs.append(out)
    return outs


# --------------------------------------------------------------------------- argmax, argmin

@cuda.jit(device=True, inline=True)
def _beats(a, i, b, j, largest):
    """Does element (a, index i) win over (b, j)? NaN wins, then the extremum, then
    the first index."""
    if (a != a) != (b != b):
        return a != a
    if a == a and a != b:
        return a > b if largest else a < b
    return i < j


@cuda.jit(cache=True)
def _arg_extremum_short(x, out, length, inner, largest):
    cell = cuda.grid(1)
    while cell < out.size:
        base = (cell // inner) * length * inner + cell % inner
        b = 0
        for j in range(1, length):
            if _beats(x[base + j * inner], j, x[base + b * inner], b, largest):
                b = j
        out[cell] = b
        cell += cuda.gridsize(1)


@cuda.jit(cache=True)
def _arg_extremum(x, out, length, inner, largest):
    best = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    cell = cuda.blockIdx.x
    while cell < out.size:
        base = (cell // inner) * length * inner + cell % inner
        b = -1
        j = tid
        while j < length:
            if b < 0 or _beats(x[base + j * inner], j, x[base + b * inner], b, largest):
                b = j
            j += THREADS
        best[tid] = b
        cuda.syncthreads()
        step = THREADS // 2
        while step > 0:
            if tid < step:
                o = best[tid + step]
                m = best[tid]
                if o >= 0 and (m < 0 or _beats(x[base + o * inner], o, x[base + m * inner],
                                               m, largest)):
                    best[tid] = o
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            out[cell] = best[0]
        cuda.syncthreads()
        cell += cuda.gridDim.x


def _arg_impl(largest):
    def impl(x, axis, index_dtype):
        shape = tuple(x.shape)
        inner, length = _lines(shape, axis)
        out = runtime.empty(shape[:axis] + shape[axis + 1:], index_dtype)
        args = flat(x), flat(out), length, inner, largest
        if length <= SHORT:
            launch(_arg_extremum_short, out.size, *args)
        elif out.size:
            _arg_extremum[min(out.size, runtime.MAX_BLOCKS), THREADS](*args)
        return out
    return impl


implements(argmax_p)(_arg_impl(True))
implements(argmin_p)(_arg_impl(False))
