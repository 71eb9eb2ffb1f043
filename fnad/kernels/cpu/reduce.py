"""Sums of float16/float32 arrays accumulated in float64, at about numpy's float32 speed.

numpy's `add.reduce(x, dtype=float64)` on float32 converts through small buffers and
runs 3-6 times slower than its float32 sum. Where the reduced axes are the leading or
the trailing axes of a C-contiguous float32 array (every sum fnad.numpy makes of a
dense array over `axis=None`, `axis=0` or `axis=-1`), these loops do the same float64
accumulation in one vectorized pass; anything else goes through numpy.
"""
import numba
import numpy as np

_FLOAT32 = np.dtype(np.float32)


# Summing one row, the float64 adds may be reordered (fastmath's reassoc alone) so
# that LLVM keeps several vector accumulators: the order changes the float64 result by
# about 1e-16 of the magnitudes, far below the rounding to float32 that follows.
@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def _sum_rows(x, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += np.float64(x[i, j])
        out[i] = acc


# Over the leading axis, the columns are independent accumulators: vectorized as is.
@numba.njit(cache=True, nogil=True)
def _sum_columns(x, out):
    out[:] = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[j] += np.float64(x[i, j])


# Below this many elements numpy's call costs less than the checks and the dispatch.
MIN_ELEMENTS = 2048


def wide_sum(x, axes, acc_dtype):
    """x summed over `axes` in acc_dtype, rounded to x's dtype."""
    if x.size < MIN_ELEMENTS:
        if len(axes) == x.ndim:
            # A whole small array (a loss in eager code): numpy's reduce is cheapest
            # called without an axis tuple.
            return np.asarray(np.add.reduce(x, axis=None, dtype=acc_dtype), x.dtype)
    elif x.dtype == _FLOAT32 and acc_dtype == np.float64 and axes and x.flags.c_contiguous:
        axes = tuple(sorted(axes))
        shape = x.shape
        kept = tuple(n for d, n in enumerate(shape) if d not in axes)
        cells = int(np.prod(kept, dtype=np.int64))
        rank = len(shape)
        out = np.empty(cells, np.float64)
        if axes == tuple(range(rank - len(axes), rank)):
            _sum_rows(x.reshape(cells, x.size // cells), out)
            return out.astype(x.dtype).reshape(kept)
        if axes == tuple(range(len(axes))):
            _sum_columns(x.reshape(x.size // cells, cells), out)
            return out.astype(x.dtype).reshape(kept)
    return np.add.reduce(x, axis=axes, dtype=acc_dtype).astype(x.dtype, copy=False)
