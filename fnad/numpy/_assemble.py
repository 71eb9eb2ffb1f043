"""Arrays assembled from pieces, or with pieces taken out: block, append, insert,
delete, trim_zeros, diagflat.

Where the pieces go is always decided from static information (shapes, and index
arguments that must be concrete), then the data moves with concatenate and one
gather, so derivatives reach every input that contributes values."""
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..array import Array
from ..errors import ConcretizationError, ShapeError
from ._core import as_operand, asarray, astype, normalize_axis, promote
from ._indexing import IndexUpdateRef, take
from ._sorting import argsort
from ._nonzero import concrete_or_raise, concrete_value, sized_positions
from . import _elementwise as E
from ._products import diag
from ._shapes import (broadcast_to, concatenate, moveaxis, ravel, reshape, take_range)
from ..typing import Array, ArrayLike

__all__ = ["append", "block", "delete", "diagflat", "insert", "trim_zeros"]


def append(arr: Any, values: Any, axis: Any = None) -> Array:
    """arr with values added at the end of axis (of the flattened arrays for None)."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def diagflat(v: ArrayLike, k: int = 0) -> Array:
    """A 2-d array with the flattened v on its k-th diagonal."""
    return diag(ravel(v), k)


# --------------------------------------------------------------------------- block

def _depth(x, where="arrays"):
    """The nesting depth of block's lists; numpy requires it to be uniform."""
    if isinstance(x, tuple):
        raise TypeError(f"block: {where} is a tuple; only lists may nest in block's "
                        f"argument")
    if not isinstance(x, list):
        return 0
    if not x:
        raise ValueError(f"block: {where} is an empty list")
    depths = {_depth(item, f"{where}[{i}]") for i, item in enumerate(x)}
    if len(depths) != 1:
        raise ValueError(f"block: the lists in {where} are nested to different depths "
                         f"{sorted(depths)}")
    return depths.pop() + 1


def _leaves(x):
    return [leaf for item in x for leaf in _leaves(item)] if isinstance(x, list) else [x]


def block(arrays: Any) -> Array:
    """An array assembled from nested lists of blocks: the innermost lists are joined
    along the last axis, the next ones out along the one before it, and so on. Every
    block is first given the result's number of dimensions, with ones in front."""
    depth = _depth(arrays)
    leaves = promote(*_leaves(arrays))
    ndim = max([depth] + [leaf.ndim for leaf in leaves])
    blocks = iter(reshape(leaf, (1,) * (ndim - leaf.ndim) + tuple(leaf.shape))
                  for leaf in leaves)

    def assemble(x, level):
        if not isinstance(x, list):
            return next(blocks)
        parts = [assemble(item, level + 1) for item in x]
        return concatenate(parts, ndim - depth + level) if len(parts) > 1 else parts[0]
    return assemble(arrays, 0)


# --------------------------------------------------------------------------- insert, delete

def _static_positions(obj, name, n):
    """obj (an int, slice, integer or boolean array) as concrete numpy positions along
    an axis of length n, or a Python int for a scalar."""
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n))
    value = concrete_value(obj)
    if value is None:
        raise ConcretizationError(
            f"{name}: the positions must be concrete (they fix the result's shape), but "
            f"they are traced by {obj._trace.name}; pass them as a Python int, list or "
            f"numpy array, or as a static argument")
    if value.dtype == np.bool_:
        if value.shape != (n,):
            raise ShapeError(f"{name}: a boolean mask must have the axis's length {n}, "
                             f"got shape {value.shape}")
        return np.flatnonzero(value)
    if value.size and value.dtype.kind not in "iu":
        raise IndexError(f"{name}: positions must be integers, got dtype {value.dtype}")
    return int(value) if value.ndim == 0 else value.astype(np.int64).ravel()


def delete(arr: Any, obj: Any, axis: Any = None, *, assume_unique_indices: bool = False) -> Array:
    """arr without the entries at obj along axis (of the flattened arr for None)."""
    arr = as_operand(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis(axis, arr.ndim)
    n = arr.shape[axis]
    if not isinstance(obj, slice) and concrete_value(obj) is None:
        if assume_unique_indices:
            return _delete_traced(arr, as_operand(obj), axis)
        raise ConcretizationError(
            f"delete: the positions are traced by {obj._trace.name}, so the result's length "
            f"is unknown; pass concrete positions, or assume_unique_indices=True for "
            f"distinct integer positions (the length is then n - len(positions))")
    positions = _static_positions(obj, "delete", n)
    positions = np.atleast_1d(positions)
    bad = positions[(positions < -n) | (positions >= n)]
    if bad.size:
        raise IndexError(f"delete: index {bad[0]} is out of bounds for axis {axis} with "
                         f"size {n}")
    keep = np.ones(n, bool)
    keep[positions] = False
    kept = np.flatnonzero(keep)
    if kept.size == n:
        return arr
    if kept.size and kept[-1] - kept[0] + 1 == kept.size:   # one run: a slice
        return take_range(arr, int(kept[0]), int(kept[-1]) + 1, axis)
    return take(arr, kept, axis=axis)


def _delete_traced(arr, obj, axis):
    """delete with traced, distinct integer positions (JAX's assume_unique_indices):
    the result's length is known, the kept positions are found by a mask."""
    if obj.dtype.kind not in "iu":
        raise IndexError(f"delete: traced positions must be integers, got {obj.dtype}")
    n = arr.shape[axis]
    obj = ravel(obj)
    kept_count = n - obj.shape[0]
    if kept_count < 0:
        raise IndexError(f"delete: {obj.shape[0]} distinct positions cannot be deleted from "
                         f"an axis of length {n}")
    wrapped = E.where(E.less(obj, 0), obj + n, obj)
    keep = IndexUpdateRef(Array(np.ones(n, bool)), wrapped).set(np.zeros(obj.shape[0], bool))
    index_dtype = dtypes.index_dtype(n + 1)
    kept, = sized_positions(keep, kept_count, [n], [np.arange(n, dtype=index_dtype)])
    return take(arr, kept, axis=axis, mode="clip")


def insert(arr: Any, obj: Any, values: ArrayLike, axis: Any = None) -> Array:
    """arr with values inserted before the positions obj along axis (of the
    flattened arr for None), as numpy.insert: a scalar obj inserts the whole of
    values there; a sequence inserts one slice of values before each position.
    Traced positions (jit, vmap) work too, clipped into [0, n] as JAX does; the
    result's shape depends only on how many there are."""
    arr = as_operand(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis(axis, arr.ndim)
    n = arr.shape[axis]
    traced = not isinstance(obj, slice) and concrete_value(obj) is None
    if traced:
        positions = as_operand(obj)
        if positions.dtype.kind not in "iu":
            raise IndexError(f"insert: positions must be integers, got {positions.dtype}")
        scalar = positions.ndim == 0
    else:
        positions = _static_positions(obj, "insert", n)
        scalar = isinstance(positions, int)
    values = asarray(values)
    values = astype(values, arr.dtype) if values.dtype != arr.dtype else values
    shape = list(arr.shape)
    if scalar:
        # numpy reads values as a block whose first axis runs along `axis`
        values = reshape(values, (1,) * (arr.ndim - values.ndim) + tuple(values.shape))
        values = moveaxis(values, 0, axis) if values.ndim else values
        count = shape[axis] = values.shape[axis] if values.ndim else 1
    else:
        count = shape[axis] = int(np.prod(tuple(positions.shape), dtype=np.int64))
    try:
        block_values = broadcast_to(values, tuple(shape))
    except ShapeError:
        raise ShapeError(f"insert: values of shape {tuple(values.shape)} cannot be "
                         f"broadcast to the inserted block's shape {tuple(shape)}") from None
    if traced:
        source = _traced_insert_source(positions, n, count)
    else:
        source = _insert_source(positions, n, count, axis)
    return take(concatenate([arr, block_values], axis), source, axis=axis)


def _insert_source(positions, n, count, axis):
    """Where each output slot reads from in the concatenation [arr, block] along
    axis. Inserted slices go before the original entry at their position, in the
    order given among equal positions (a stable sort, as numpy)."""
    positions = np.atleast_1d(positions)
    if positions.size and (positions.min() < -n or positions.max() > n):
        bad = positions[(positions < -n) | (positions > n)][0]
        raise IndexError(f"insert: index {bad} is out of bounds for axis {axis} with "
                         f"size {n}")
    starts = np.broadcast_to(np.where(positions < 0, positions + n, positions), (count,))
    order = np.argsort(starts, kind="stable")
    out_pos = np.empty(count, np.int64)
    out_pos[order] = starts[order] + np.arange(count)
    source = np.empty(n + count, np.int64)
    is_new = np.zeros(n + count, bool)
    is_new[out_pos] = True
    source[out_pos] = n + np.arange(count)
    source[~is_new] = np.arange(n)
    return source


def _traced_insert_source(positions, n, count):
    """_insert_source for traced positions, with fnad operations."""
    index_dtype = dtypes.index_dtype(n + count + 1)
    starts = astype(broadcast_to(ravel(positions), (count,)) if positions.ndim else
                    broadcast_to(positions, (count,)), index_dtype)
    starts = E.clip(E.where(E.less(starts, 0), starts + n, starts), 0, n)
    order = argsort(starts)                       # stable: equal positions keep order
    placed = take(starts, order) + np.arange(count, dtype=index_dtype)
    out_pos = IndexUpdateRef(Array(np.zeros(count, index_dtype)), order).set(placed)
    new_slots = np.arange(n, n + count, dtype=index_dtype)
    source = IndexUpdateRef(Array(np.zeros(n + count, index_dtype)), out_pos).set(new_slots)
    is_new = IndexUpdateRef(Array(np.zeros(n + count, bool)), out_pos).set(
        np.ones(count, bool))
    old_slots, = sized_positions(E.logical_not(is_new), n, [n + count],
                                 [np.arange(n + count, dtype=index_dtype)])
    return IndexUpdateRef(source, old_slots).set(np.arange(n, dtype=index_dtype))


# --------------------------------------------------------------------------- trim_zeros

def trim_zeros(filt: Any, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Array:
    """filt without its leading ("f") and/or trailing ("b") zeros along axis (every
    axis for None), where a position is zero when all entries across the other axes
    are. The result's shape depends on the values, so filt must be concrete."""
    trim = trim.lower()
    if not set(trim) <= {"f", "b"} or not trim:
        raise ValueError(f"trim_zeros: trim must combine 'f' and 'b', got {trim!r}")
    filt = as_operand(filt)
    value = concrete_or_raise(filt, "trim_zeros")
    if filt.ndim == 0:
        raise ShapeError("trim_zeros needs an array of at least 1 dimension")
    axes = range(filt.ndim) if axis is None else \
        [normalize_axis(operator.index(ax), filt.ndim)
         for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    nonzero = value != 0
    out = filt
    for ax in axes:
        along = np.any(nonzero, axis=tuple(d for d in range(filt.ndim) if d != ax))
        hits = np.flatnonzero(along)
        if hits.size == 0:
            out = take_range(out, 0, 0, ax)
            continue
        lo = int(hits[0]) if "f" in trim else 0
        hi = int(hits[-1]) + 1 if "b" in trim else filt.shape[ax]
        out = take_range(out, lo, hi, ax)
    return out
