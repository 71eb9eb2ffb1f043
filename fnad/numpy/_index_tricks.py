"""Index arithmetic and index-building helpers: indices, unravel_index,
ravel_multi_index, mask_indices, tril/triu_indices_from, and the bracket objects
s_, index_exp, mgrid, ogrid, r_ and c_.

Index outputs use the index dtype (docs/dtypes.md: the default int unless the size
needs int64). Out-of-range indices follow fnad's indexing rule: numpy's error when
they are concrete, clipped into range (as JAX) when traced."""
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..array import Array
from ..errors import ShapeError
from ..primitives import shape as S
from . import _elementwise as E
from ._core import as_operand, asarray, astype, promote
from ._creation import arange, linspace
from ._indexing import tril_indices, triu_indices
from ._nonzero import concrete_value, nonzero
from ._reductions import sum as _sum
from ._shapes import concatenate, reshape, transpose
from ..typing import ArrayLike, DTypeLike

__all__ = ["indices", "unravel_index", "ravel_multi_index", "mask_indices",
           "tril_indices_from", "triu_indices_from", "s_", "index_exp", "mgrid", "ogrid",
           "r_", "c_"]


def _dims(shape, name):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dims = tuple(operator.index(n) for n in shape)
    if any(n < 0 for n in dims):
        raise ValueError(f"{name}: dimensions must be non-negative, got {dims}")
    return dims


def indices(dimensions: Any, dtype: DTypeLike | None = None, sparse: bool = False) -> Any:
    """The coordinate arrays of a grid of `dimensions`: stacked into one array of shape
    (len(dimensions), *dimensions), or, with sparse, a tuple of open-mesh arrays."""
    dims = _dims(dimensions, "indices")
    dtype = dtypes.default_int() if dtype is None else dtypes.check_supported(dtype)
    grids = []
    for d, n in enumerate(dims):
        shape = tuple(n if k == d else (1 if sparse else m) for k, m in enumerate(dims))
        grids.append(S.iota(dtype, shape, d))
    if sparse:
        return tuple(grids)
    if not grids:
        return Array(np.zeros((0,), dtype))
    return concatenate([S.expand_dims(g, (0,)) for g in grids], 0)


def _strides(dims, order):
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', got {order!r}")
    axes = range(len(dims)) if order == "F" else reversed(range(len(dims)))
    strides, step = [0] * len(dims), 1
    for d in axes:
        strides[d], step = step, step * dims[d]
    return strides, step


def unravel_index(indices: ArrayLike, shape: int | Sequence[int], order: str = "C") -> Any:
    """The coordinates, one array per dimension of shape, of flat indices into an
    array of that shape."""
    dims = _dims(shape, "unravel_index")
    index = as_operand(indices)
    if index.dtype.kind not in "iu":
        raise TypeError(f"unravel_index: indices must be integers, got {index.dtype}")
    strides, size = _strides(dims, order)
    value = concrete_value(index)
    if value is not None:
        bad = value[(value < 0) | (value >= size)]
        if bad.size:
            raise ValueError(f"unravel_index: index {bad.flat[0]} is out of bounds for an "
                             f"array of shape {dims} (size {size})")
    elif size:
        # traced: negative indices count from the end, then clipped, as JAX does
        index = E.clip(E.where(E.less(index, 0), index + size, index), 0, size - 1)
    return tuple(E.remainder(E.floor_divide(index, s), n) if n else index * 0
                 for s, n in zip(strides, dims))


def ravel_multi_index(multi_index: Any, dims: Any, mode: str = "raise", order: str = "C", *,
                      dtype: DTypeLike | None = None) -> Any:
    """The flat index, into an array of shape dims, of each tuple of coordinates.
    mode "raise" (numpy's error for concrete coordinates out of range, clipped when
    traced), "wrap" or "clip" per coordinate."""
    dims = _dims(dims, "ravel_multi_index")
    coords = [as_operand(c) for c in multi_index]
    if len(coords) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(coords)} coordinate arrays for "
                         f"{len(dims)} dimensions")
    for c in coords:
        if c.dtype.kind not in "iu":
            raise TypeError(f"ravel_multi_index: coordinates must be integers, got "
                            f"{c.dtype}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    strides, size = _strides(dims, order)
    out_dtype = dtypes.index_dtype(size) if dtype is None else dtypes.check_supported(dtype)
    total = None
    for d, (c, n, m, s) in enumerate(zip(coords, dims, modes, strides)):
        value = concrete_value(c)
        if m == "wrap":
            c = E.remainder(c, n)
        elif m == "clip" or (m == "raise" and value is None):
            c = E.clip(c, 0, n - 1)
        elif m == "raise":
            bad = value[(value < 0) | (value >= n)]
            if bad.size:
                raise ValueError(f"ravel_multi_index: coordinate {bad.flat[0]} is out of "
                                 f"bounds for dimension {d} of size {n}")
        else:
            raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', "
                             f"got {m!r}")
        term = astype(c, out_dtype) * s
        total = term if total is None else total + term
    return total


def mask_indices(n: Any, mask_func: Any, k: int = 0, *, size: Any = None) -> Any:
    """The (row, column) indices where mask_func(ones((n, n)), k) is nonzero, e.g.
    mask_indices(n, triu) for the upper triangle."""
    grid = mask_func(Array(np.ones((n, n), dtypes.default_int())), k)
    return nonzero(grid, size=size)


def _square_shape(arr, name):
    shape = tuple(arr.shape) if hasattr(arr, "shape") else tuple(np.shape(arr))
    if len(shape) != 2:
        raise ShapeError(f"{name} needs a 2-d array, got shape {shape}")
    return shape


def tril_indices_from(arr: ArrayLike, k: int = 0) -> Any:
    """tril_indices for arr's (2-d) shape."""
    n, m = _square_shape(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr: ArrayLike, k: int = 0) -> Any:
    """triu_indices for arr's (2-d) shape."""
    n, m = _square_shape(arr, "triu_indices_from")
    return triu_indices(n, k, m)


# --------------------------------------------------------------------------- bracket objects

class _IndexExpression:
    """x[...]'s index as a value: s_[1:3] is slice(1, 3); index_exp always a tuple."""

    def __init__(self, always_tuple):
        self.always_tuple = always_tuple

    def __getitem__(self, item):
        return item if not self.always_tuple or isinstance(item, tuple) else (item,)


s_ = _IndexExpression(False)
index_exp = _IndexExpression(True)


def _range(item):
    """A slice of a grid: start:stop:step, or start:stop:Nj for N points including
    stop (numpy's complex-step convention)."""
    start = 0 if item.start is None else item.start
    step = 1 if item.step is None else item.step
    if isinstance(step, complex):
        return linspace(start, item.stop, int(abs(step)))
    return arange(start, item.stop, step)


def _grid_dtype(items):
    floats = any(isinstance(v, (float, complex, np.floating)) for it in items
                 for v in (it.start, it.stop, it.step))
    return dtypes.default_float() if floats else dtypes.default_int()


class _Grid:
    """mgrid (dense: one full array per axis, stacked) and ogrid (open: arrays that
    broadcast against each other)."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(it, slice) for it in items):
            raise TypeError("mgrid and ogrid take slices, e.g. mgrid[0:3, 0:1:5j]")
        dtype = _grid_dtype(items)
        axes = [astype(_range(it), dtype) for it in items]
        if not isinstance(key, tuple):
            return axes[0]
        n = len(axes)
        open_mesh = [reshape(a, tuple(a.shape[0] if d == i else 1 for d in range(n)))
                     for i, a in enumerate(axes)]
        if self.sparse:
            return open_mesh
        shape = tuple(a.shape[0] for a in axes)
        return concatenate([S.expand_dims(S.broadcast_in_dim(m, shape, tuple(range(n))), (0,))
                            for m in open_mesh], 0) if n else Array(np.zeros((0,), dtype))


mgrid = _Grid(False)
ogrid = _Grid(True)


class _Concatenator:
    """r_ and c_: concatenation by index syntax. Items are arrays, scalars, or slices
    (ranges, as in mgrid); a leading string "axis[,ndmin[,trans1d]]" sets the axis
    to join along, the least number of dimensions of each item, and where a 1-d
    item's axis goes when it is given more dimensions (-1: last)."""

    def __init__(self, axis, ndmin, trans1d):
        self.defaults = (axis, ndmin, trans1d)

    def __getitem__(self, key):
        items = list(key) if isinstance(key, tuple) else [key]
        axis, ndmin, trans1d = self.defaults
        if items and isinstance(items[0], str):
            axis, ndmin, trans1d = self._directive(items.pop(0), ndmin, trans1d)
        if not items:
            raise ValueError("r_/c_: nothing to concatenate")
        parts = []
        for item in items:
            if isinstance(item, str):
                raise ValueError(f"r_/c_: a directive string must come first, got "
                                 f"{item!r} later")
            part = _range(item) if isinstance(item, slice) else asarray(item)
            parts.append(self._lift(part, ndmin, trans1d))
        return concatenate(promote(*parts), axis)

    @staticmethod
    def _directive(text, ndmin, trans1d):
        if text in ("r", "c"):
            raise ValueError("r_/c_: the 'r' and 'c' directives build numpy matrices, "
                             "which fnad does not have; use '0,2' or '1,2' instead")
        try:
            fields = [int(f) for f in text.split(",")]
        except ValueError:
            raise ValueError(f"r_/c_: directive {text!r} is not 'axis[,ndmin[,trans1d]]' "
                             f"(integers)") from None
        if not 1 <= len(fields) <= 3:
            raise ValueError(f"r_/c_: directive {text!r} has {len(fields)} fields; "
                             f"expected 1 to 3")
        fields += [ndmin, trans1d][len(fields) - 1:]
        return fields[0], fields[1], fields[2]

    @staticmethod
    def _lift(part, ndmin, trans1d):
        """part with at least ndmin dimensions (ones in front), then, unless trans1d
        is -1, its own axes moved to start at position trans1d (numpy's rule)."""
        old = part.ndim
        if old >= max(ndmin, 1):
            return part
        lifted = reshape(part, (1,) * (max(ndmin, 1) - old) + tuple(part.shape))
        if trans1d == -1 or ndmin <= 1:
            return lifted
        k2, k1 = ndmin - old, trans1d
        if k1 < 0:
            k1 += k2 + 1
        axes = list(range(ndmin))
        return transpose(lifted, axes[:k1] + axes[k2:] + axes[k1:k2])


r_ = _Concatenator(0, 1, -1)
c_ = _Concatenator(-1, 2, 0)
