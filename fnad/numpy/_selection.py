"""Choosing entries by masks and index lists: select, choose, compress, extract, and
the functional versions of numpy's in-place writers (place, put, fill_diagonal).

numpy's place, put and fill_diagonal write into their argument. fnad arrays are
immutable, so, as in JAX, these return the updated array and take `inplace=False`
as the caller's acknowledgement; the default (True) raises and says so."""
import numpy as np
from typing import Any, Sequence

from .. import dtypes
from ..core import Tracer
from ..errors import ShapeError
from . import _elementwise as E
from ._core import as_operand, asarray, astype, normalize_axis, promote
from ._indexing import IndexUpdateRef, take
from ._nonzero import concrete_or_raise, concrete_value, sized_positions
from ._reductions import cumsum
from ._shapes import broadcast_arrays, ravel, reshape, resize, unstack
from ..typing import Array, ArrayLike

__all__ = ["choose", "compress", "extract", "fill_diagonal", "place", "put", "select"]


def _not_inplace(name, inplace):
    if inplace:
        raise ValueError(f"{name}: fnad arrays are immutable, so {name} cannot modify its "
                         f"argument; pass inplace=False and use the returned array")


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Array:
    """Where the first true condition of condlist holds, the matching entry of
    choicelist; default where none holds."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist and choicelist must have the same length, got "
                         f"{len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise ValueError("select: condlist must not be empty")
    conds = [as_operand(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"select: condlist[{i}] must be boolean, got {c.dtype}")
    *choices, default = promote(*choicelist, default)
    out = default
    for cond, choice in zip(reversed(conds), reversed(choices)):   # the first one wins
        out = E.where(cond, choice, out)
    shape = np.broadcast_shapes(*(tuple(x.shape) for x in conds + choices + [default]))
    return broadcast_arrays(out, np.empty(shape, bool))[0]


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Array:
    """choices[a[i]][i] for every i (a and the choices broadcast together). mode
    "raise" checks a concrete a (a traced one is clipped), "wrap" and "clip" map
    out-of-range entries into range."""
    if out is not None:
        raise ValueError("choose: out= is not supported; fnad arrays are immutable")
    a = as_operand(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"choose: the index array must be integers, got {a.dtype}")
    if isinstance(choices, (Tracer, np.ndarray)) or hasattr(choices, "shape"):
        choices = unstack(as_operand(choices))      # an array lists them on axis 0
    choices = promote(*choices)
    n = len(choices)
    if n == 0:
        raise ValueError("choose: choices must not be empty")
    if mode == "wrap":
        a = E.remainder(a, n)
    elif mode == "clip" or (mode == "raise" and concrete_value(a) is None):
        a = E.clip(a, 0, n - 1)
    elif mode == "raise":
        value = concrete_value(a)
        if value.size and (value.min() < 0 or value.max() >= n):
            raise ValueError(f"choose: invalid entry in the index array: entries must lie "
                             f"in [0, {n}) for {n} choices, got "
                             f"{value[(value < 0) | (value >= n)].flat[0]}")
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    result = choices[0]
    for k in range(1, n):
        result = E.where(E.equal(a, k), choices[k], result)
    shape = np.broadcast_shapes(tuple(a.shape), *(tuple(c.shape) for c in choices))
    return broadcast_arrays(result, np.empty(shape, bool))[0]


def compress(condition: ArrayLike, a: Any, axis: Any = None, *, size: Any = None,
             fill_value: ArrayLike = 0, out: None = None) -> Array:
    """The slices of a along axis (of the flattened a for None) where the 1-d
    condition is true. A traced condition needs size=: the first `size` slices,
    padded with fill_value."""
    if out is not None:
        raise ValueError("compress: out= is not supported; fnad arrays are immutable")
    a = as_operand(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    cond = as_operand(condition)
    if cond.ndim != 1:
        raise ShapeError(f"compress: condition must be 1-d, got shape {tuple(cond.shape)}")
    value = concrete_value(cond)
    if value is not None:
        positions = np.flatnonzero(value)
        if positions.size and positions[-1] >= n:
            raise IndexError(f"compress: condition selects index {positions[-1]}, out of "
                             f"bounds for axis {axis} with size {n}")
        if size is None:
            return take(a, positions, axis=axis)
        positions = np.concatenate([positions[:size],
                                    np.full(max(0, size - positions.size), n, np.int64)])
        return take(a, positions, axis=axis, mode="fill", fill_value=fill_value)
    if size is None:
        concrete_or_raise(cond, "compress", sized=True)
    if cond.shape[0] > n:
        raise IndexError(f"compress: a traced condition of length {cond.shape[0]} is "
                         f"longer than axis {axis} of size {n}")
    mask = cond if cond.dtype == np.bool_ else E.not_equal(cond, 0)
    table = np.arange(cond.shape[0], dtype=dtypes.index_dtype(n + 1))
    positions, = sized_positions(mask, int(size), [n], [table])
    return take(a, positions, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition: ArrayLike, arr: ArrayLike, *, size: Any = None,
            fill_value: ArrayLike = 0) -> Array:
    """The entries of the flattened arr where the flattened condition is nonzero."""
    return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def place(arr: ArrayLike, mask: ArrayLike, vals: Any, *, inplace: bool = True) -> Array:
    """arr with its entries where mask is true replaced, in order, by vals (repeated
    when there are more such entries than values)."""
    _not_inplace("place", inplace)
    arr, mask = as_operand(arr), as_operand(mask)
    if mask.size != arr.size:
        raise ShapeError(f"place: mask of shape {tuple(mask.shape)} and array of shape "
                         f"{tuple(arr.shape)} must have the same size")
    vals = ravel(asarray(vals, arr.dtype))
    flat_mask = ravel(mask) if mask.dtype == np.bool_ else E.not_equal(ravel(mask), 0)
    if vals.size == 0:
        value = concrete_value(flat_mask)
        if value is not None and not value.any():
            return arr
        raise ValueError("place: cannot place values from an empty vals where the mask "
                         "is true")
    # the k-th true entry takes vals[k % len(vals)]
    rank = cumsum(astype(flat_mask, dtypes.index_dtype(mask.size + 1))) - 1
    picked = take(vals, E.remainder(rank, vals.size))
    return reshape(E.where(flat_mask, picked, ravel(arr)), arr.shape)


def put(a: ArrayLike, ind: Any, v: ArrayLike, mode: Any = None, *, inplace: bool = True) -> Array:
    """a with its flattened entries at ind set to v (repeated to the length of ind;
    of repeated indices the last wins). mode None or "raise": numpy's IndexError for
    a concrete ind out of range (a traced one is clipped, as JAX does); "wrap": taken
    modulo the size; "clip": clipped into range."""
    _not_inplace("put", inplace)
    a = as_operand(a)
    n = a.size
    index = concrete_value(ind)
    if index is None:
        index = as_operand(ind)
        if index.dtype.kind not in "iu":
            raise TypeError(f"put: indices must be integers, got {index.dtype}")
        index = ravel(index)
        index = E.remainder(index, n) if mode == "wrap" else E.clip(
            E.where(E.less(index, 0), index + n, index) if mode != "clip" else index,
            0, n - 1)
        count = index.shape[0]
    else:
        index = np.ravel(index)
        if index.size and index.dtype.kind not in "iu":
            raise TypeError(f"put: indices must be integers, got {index.dtype}")
        index = index.astype(np.int64)
        if mode == "wrap":
            index = np.mod(index, n) if n else index
        elif mode == "clip":
            index = np.clip(index, 0, n - 1)
        elif mode in (None, "raise"):
            bad = index[(index < -n) | (index >= n)]
            if bad.size:
                raise IndexError(f"put: index {bad[0]} is out of bounds for an array of "
                                 f"size {n}")
            index = np.where(index < 0, index + n, index)
        else:
            raise ValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
        count = index.size
        # the last write wins, as in numpy: keep only each index's last occurrence
        last = count - 1 - np.unique(index[::-1], return_index=True)[1]
        keep = np.zeros(count, bool)
        keep[last] = True
    if count == 0:
        return a
    v = ravel(asarray(v, a.dtype))
    if v.size == 0:
        raise ValueError("put: v must not be empty when there are indices to write")
    values = resize(v, (count,))
    if isinstance(index, np.ndarray):
        index, values = index[keep], take(values, np.flatnonzero(keep))
    return reshape(IndexUpdateRef(ravel(a), index).set(values), a.shape)


def fill_diagonal(a: ArrayLike, val: Any, wrap: bool = False, *, inplace: bool = True) -> Array:
    """a with its main diagonal set to val (repeated along the diagonal). A 2-d a may
    be tall; with wrap the diagonal restarts every columns + 1 rows, as in numpy.
    More dimensions need equal lengths."""
    _not_inplace("fill_diagonal", inplace)
    a = as_operand(a)
    if a.ndim < 2:
        raise ShapeError(f"fill_diagonal needs an array of at least 2 dimensions, got "
                         f"shape {tuple(a.shape)}")
    shape = tuple(a.shape)
    if a.ndim == 2:
        step = shape[1] + 1
        end = a.size if wrap else min(a.size, shape[1] * shape[1])
    else:
        if len(set(shape)) != 1:
            raise ShapeError(f"fill_diagonal: all dimensions of a {a.ndim}-d array must "
                             f"have equal length, got shape {shape}")
        step = 1 + int(np.sum(np.cumprod(shape[:-1])))
        end = a.size
    positions = np.arange(0, end, step)
    if positions.size == 0:
        return a
    values = resize(ravel(asarray(val, a.dtype)), (positions.size,))
    return reshape(IndexUpdateRef(ravel(a), positions).set(values), shape)
