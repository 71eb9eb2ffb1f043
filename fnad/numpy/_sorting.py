"""Sorting over the sort primitive. Every sort is stable; `kind` is accepted for
numpy compatibility and ignored. partition and argpartition sort fully, which
satisfies their contract."""
import numpy as np
from typing import Any, Sequence

from .. import dtypes
from ..primitives import sort as P
from ..primitives import shape as S
from ._core import as_operand, astype, normalize_axis, promote, promote_inexact
from ._shapes import broadcast_to, transpose, reshape, take_range
from . import _elementwise as E, _reductions as R
from ._indexing import take
from ..typing import Array, ArrayLike

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "median",
           "searchsorted", "sort_complex"]


def _prepared(name, a, axis, order):
    if order is not None:
        raise TypeError(f"{name}: order= (structured arrays) is not supported")
    a = as_operand(a)
    if axis is None:
        return reshape(a, (a.size,)), 0
    if a.ndim == 0:
        raise ValueError(f"{name}: cannot sort a 0-d array along axis {axis}")
    return a, normalize_axis(axis, a.ndim)


def sort(a: ArrayLike, axis: int = -1, kind: Any = None, order: Any = None, *, stable: bool = True,
         descending: bool = False) -> Array:
    """A sorted copy; axis=None sorts the flattened array."""
    a, axis = _prepared("sort", a, axis, order)
    out = P.sort_multi([a], axis)[0]
    return S.rev(out, (axis,)) if descending else out


def argsort(a: Any, axis: int = -1, kind: Any = None, order: Any = None, *, stable: bool = True,
            descending: bool = False) -> Array:
    """The indices (the index dtype: docs/dtypes.md) that sort a along axis; ties keep
    their order, also when descending."""
    a, axis = _prepared("argsort", a, axis, order)
    n = a.shape[axis]
    index_dtype = dtypes.index_dtype(n)
    if not descending:
        return P.argsort(a, axis, index_dtype)
    # Stable descending: ascending sort of the reversed array, read backwards, with
    # positions mapped back through the reversal.
    flipped = P.argsort(S.rev(a, (axis,)), axis, index_dtype)
    return (n - 1) - S.rev(flipped, (axis,))


def lexsort(keys: Any, axis: int = -1) -> Array:
    """Indices sorting by the last key first, then the one before it, ...; keys is a
    sequence of same-shaped arrays or a 2-d+ array whose first axis lists them."""
    keys = [as_operand(k) for k in keys]
    if not keys:
        raise ValueError("lexsort: needs at least one key")
    ndim = keys[0].ndim
    if ndim == 0:
        raise ValueError("lexsort: keys must be at least 1-d")
    axis = normalize_axis(axis, ndim)
    iota = S.iota(dtypes.index_dtype(keys[0].shape[axis]), keys[0].shape, axis)
    return P.sort_multi(keys[::-1] + [iota], axis, num_keys=len(keys))[-1]


def partition(a: ArrayLike, kth: Any, axis: int = -1) -> Array:
    return sort(a, axis)


def argpartition(a: ArrayLike, kth: Any, axis: int = -1) -> Array:
    return argsort(a, axis)


def median(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """The middle of the sorted values (the mean of the two middle ones for an even
    count); NaN where the values include a NaN, or where there are none, as in numpy.
    Bools and integers give the float they compute in, as mean does."""
    a, = promote_inexact(a)
    if axis is None:
        out = median(reshape(a, (a.size,)), 0)
        return reshape(out, (1,) * a.ndim) if keepdims else out
    if isinstance(axis, (tuple, list)):
        # Gather the axes at the end, merge them into one, and take the median there.
        axes = [normalize_axis(ax, a.ndim) for ax in axis]
        kept = [d for d in range(a.ndim) if d not in axes]
        moved = transpose(a, kept + axes)
        merged = reshape(moved, tuple(a.shape[d] for d in kept) + (-1,))
        out = median(merged, len(kept))
        if keepdims:
            out = reshape(out, tuple(1 if d in axes else n for d, n in enumerate(a.shape)))
        return out
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if n == 0:
        # the sum of nothing is 0 (right shape and dtype, no warning); plus NaN is NaN
        return R.sum(a, axis, keepdims=keepdims) + np.asarray(np.nan, a.dtype)
    ordered = P.sort_multi([a], axis)[0]
    middle = take_range(ordered, (n - 1) // 2, n // 2 + 1, axis)
    out = R.mean(middle, axis=axis, keepdims=keepdims)
    has_nan = R.any(E.isnan(a), axis=axis, keepdims=keepdims)
    return E.where(has_nan, np.asarray(np.nan, a.dtype), out)


def _before(x, y):
    """x < y in sort order: NaN after every number, as numpy sorts."""
    if x.dtype.kind != "f":
        return E.less(x, y)
    return E.logical_or(E.less(x, y), E.logical_and(E.isnan(y), E.logical_not(E.isnan(x))))


def searchsorted(a: ArrayLike, v: ArrayLike, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Array:
    """Where each v would go in the sorted 1-d a to keep it sorted: the number of
    entries of a before v (side "left") or not after it ("right"), NaN sorting last.
    method "scan" and "scan_unrolled" search by halving (log2(len(a)) gathers);
    "compare_all" and "sort" compare every pair (faster for a short a)."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a, v = promote(a, v)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-d, got shape {tuple(a.shape)}")
    if sorter is not None:
        a = take(a, sorter)
    n = a.shape[0]
    index_dtype = dtypes.index_dtype(n + 1)

    def goes_before(entry, value):
        return _before(entry, value) if side == "left" else \
            E.logical_not(_before(value, entry))
    if method in ("compare_all", "sort") or n == 0:
        pairs = goes_before(a, reshape(v, tuple(v.shape) + (1,)))
        return R.sum(pairs, axis=-1, dtype=index_dtype)
    if method not in ("scan", "scan_unrolled"):
        raise ValueError(f"searchsorted: method must be 'scan', 'scan_unrolled', "
                         f"'compare_all' or 'sort', got {method!r}")
    # binary lifting: the count grows by each power of two, largest first, while the
    # entry it would pass still goes before v
    count = broadcast_to(np.zeros((), index_dtype), tuple(v.shape))
    step = 1 << (n.bit_length() - 1)
    while step:
        candidate = E.add(count, np.asarray(step, index_dtype))
        probe = take(a, E.subtract(E.minimum(candidate, n), np.asarray(1, index_dtype)))
        move = E.logical_and(E.less_equal(candidate, n), goes_before(probe, v))
        count = E.where(move, candidate, count)
        step >>= 1
    return count


def sort_complex(a: ArrayLike) -> Array:
    """a sorted along its last axis (by real part, then imaginary part), as complex
    (float32 and narrower give complex64, 64-bit types complex128, as JAX)."""
    out = sort(a, axis=-1)
    return astype(out, dtypes.complex_dtype(out.dtype))
