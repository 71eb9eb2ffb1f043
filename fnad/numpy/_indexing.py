"""numpy's indexing over fnad's primitives: x[idx], x.at[idx], take, take_along_axis...

An index expression is parsed once into *terms*, one per operand axis or new axis
(ints, slices, integer arrays, boolean masks as their nonzero arrays, None), in
numpy's order. Reading lowers basic terms to slice / rev / reshape and the advanced
ones to one `gather`; `.at` updates lower the whole expression to one scatter.
Both use the same layout (`_plan`): the operand's indexed axes are moved first,
its untouched ("whole") axes follow as the rows the primitives copy, and the
result's axes are put in numpy's order, advanced axes together where numpy puts
them.

Out-of-range indices in reads: where the index is concrete (eager, under grad and
jvp, a Python or numpy index inside jit) numpy's IndexError; where it is traced (by
jit or vmap) there is no value to check, so the gather clamps it into range, as JAX
does, after counting [-n, 0) from the end. `.at` updates drop out-of-range indices,
as in JAX. The README's "Differences from JAX" states the same rule.
"""
import collections
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..array import Array
from ..core import Tracer
from ..errors import ConcretizationError, DTypeError, ShapeError
from ..primitives import index as I
from ..primitives import shape as S
from ._core import as_operand, asarray, astype, normalize_axis
from ._elementwise import clip, remainder, where
from ._reductions import cumsum
from ._nonzero import (argwhere, concrete_or_raise, concrete_value, flatnonzero,  # noqa: F401
                       index_arrays, nonzero)
from ._shapes import broadcast_to, ravel, reshape, stack
from ..typing import ArrayLike

__all__ = ["take", "take_along_axis", "put_along_axis", "nonzero", "argwhere", "repeat",
           "flatnonzero", "diag_indices", "diag_indices_from", "tril_indices",
           "triu_indices", "tril", "triu", "ix_"]

Term = collections.namedtuple("Term", "kind axis value pos unique")
# kind: "new" (None), "slice" (value = (start, stop, step)), "int", "array" (an integer
# array, numpy if concrete), "bool" (a scalar bool: an advanced index of no axis).
# pos: the item of the user's index it came from; numpy places the advanced axes by
# whether their items are adjacent. unique: the term cannot address a position twice.

_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
          "integer or boolean arrays are valid indices")


# --------------------------------------------------------------------------- parsing

def _classify(item):
    """(kind, value) of one item of an index tuple."""
    if item is None:
        return "new", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", slice(*(None if v is None else operator.index(v)
                                for v in (item.start, item.stop, item.step)))
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", _int_index(item)
    if isinstance(item, Tracer) and item.dtype.kind in "iu":
        return "array", item             # traced: gathered with clamping
    if isinstance(item, (list, tuple)) and any(isinstance(v, (Array, Tracer)) for v in item):
        return _classify(asarray(item))
    value = concrete_value(item)
    if value is None:
        raise ConcretizationError(
            f"indexing with a boolean mask needs a concrete mask, but the mask "
            f"{item.aval} is traced by {item._trace.name}: the result's shape would depend "
            f"on its values. Use fnad.numpy.where(mask, x, 0), or pass the mask as a "
            f"static value.")
    if value.dtype == object or (value.dtype.kind not in "biu" and value.size):
        raise IndexError(_VALID + f"; got {type(item).__name__} of dtype {value.dtype}")
    if value.dtype.kind not in "biu":
        value = value.astype(np.int64)   # [] is an empty integer index, as in numpy
    if value.dtype == np.bool_:
        return ("bool", bool(value)) if value.ndim == 0 else ("mask", value)
    return ("int", int(value)) if value.ndim == 0 else ("array", value)


_INDEX_RANGE = range(-2 ** 63, 2 ** 63)


def _int_index(item):
    """A Python int index, refused unless int64 can hold it: every index array fnad
    builds is int64, so a larger one would otherwise fail later as an object array."""
    value = int(item)
    if value not in _INDEX_RANGE:
        raise IndexError(f"index {value} does not fit in int64, so it is out of bounds "
                         f"for any array")
    return value


def _parse(shape, idx):
    items = [_classify(i) for i in (idx if isinstance(idx, tuple) else (idx,))]
    ndim = len(shape)
    used = sum(v.ndim if k == "mask" else 1 for k, v in items
               if k in ("slice", "int", "array", "mask"))
    if sum(k == "ellipsis" for k, _ in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{used} were indexed")
    terms, axis = [], 0

    def whole(pos):
        nonlocal axis
        terms.append(Term("slice", axis, (0, shape[axis], 1), pos, True))
        axis += 1

    for pos, (kind, value) in enumerate(items):
        if kind == "ellipsis":
            for _ in range(ndim - used):
                whole(pos)
        elif kind == "new":
            terms.append(Term("new", None, None, pos, True))
        elif kind == "bool":
            terms.append(Term("bool", None, np.zeros(int(value), np.int64), pos, True))
        elif kind == "mask":
            if value.shape != tuple(shape[axis:axis + value.ndim]):
                raise IndexError(f"boolean index of shape {value.shape} did not match the "
                                 f"indexed array of shape {tuple(shape)} at axis {axis}")
            for coordinate in np.nonzero(value):
                terms.append(Term("array", axis, coordinate, pos, True))
                axis += 1
        else:
            if kind == "slice":
                value = value.indices(shape[axis])
            terms.append(Term(kind, axis, value, pos, kind != "array"))
            axis += 1
    while axis < ndim:
        whole(len(items))
    return terms


def _ints_as_arrays(terms):
    return [t._replace(kind="array", value=np.asarray(t.value, np.int64))
            if t.kind == "int" else t for t in terms]


def _check_bounds(term, n, shape):
    """numpy's IndexError for a concrete out-of-range index."""
    if term.kind == "int":
        bad = None if -n <= term.value < n else term.value
    elif isinstance(term.value, np.ndarray) and term.value.size:
        a = term.value
        bad = None if a.min() >= -n and a.max() < n else a[(a < -n) | (a >= n)].flat[0]
    else:
        return
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for axis {term.axis} with size {n} "
                         f"(indexing an array of shape {tuple(shape)})")


# --------------------------------------------------------------------------- layout

def _reshape(a, shape):
    return a.reshape(shape) if isinstance(a, np.ndarray) else S.reshape(a, shape)


def _plan(terms, shape):
    """Where everything goes when the terms index an operand of `shape`.

    Returns (result_shape, whole, indexed): whole lists (operand axis, result axis)
    of the axes taken entire; indexed lists (operand axis, coordinates), the
    coordinates an array over the result's axes (size 1 where they do not vary)."""
    advanced = [t for t in terms if t.kind in ("array", "bool")]
    try:
        block = np.broadcast_shapes(*(tuple(t.value.shape) for t in advanced))
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                         "with shapes " + " ".join(str(tuple(t.value.shape))
                                                   for t in advanced)) from None
    positions = sorted({t.pos for t in advanced})
    rest = [t for t in terms if t.kind in ("new", "slice")]
    # numpy: advanced axes whose items are adjacent stay in place; otherwise they go first.
    adjacent = positions and positions == list(range(positions[0], positions[-1] + 1))
    at = sum(t.pos < positions[0] for t in rest) if adjacent else 0
    sizes = [1 if t.kind == "new" else len(range(*t.value)) for t in rest]
    result_shape = tuple(sizes[:at]) + block + tuple(sizes[at:])
    ndim, nb = len(result_shape), len(block)
    whole, indexed = [], []
    for j, (t, m) in enumerate(zip(rest, sizes)):
        d = j if j < at else j + nb
        if t.kind == "new":
            continue
        if t.value == (0, shape[t.axis], 1):
            whole.append((t.axis, d))
        else:
            view = [1] * ndim
            view[d] = m
            indexed.append((t.axis, np.arange(*t.value, dtype=np.int64).reshape(view)))
    for t in advanced:
        if t.kind == "array":
            v = t.value
            view = (1,) * (at + nb - len(v.shape)) + tuple(v.shape) + (1,) * (ndim - at - nb)
            indexed.append((t.axis, _reshape(v, view)))
    return result_shape, whole, indexed


def _index_array(result_shape, whole, indexed):
    """The index vectors of the plan: shape (result axes not whole) + (k,)."""
    whole_dims = {d for _, d in whole}
    batch = tuple(n for d, n in enumerate(result_shape) if d not in whole_dims)
    columns = [_reshape(c, tuple(n for d, n in enumerate(c.shape) if d not in whole_dims))
               for _, c in indexed]
    if all(isinstance(c, np.ndarray) for c in columns):
        if len(columns) == 1 and columns[0].shape == batch \
                and columns[0].dtype.kind == "i" and columns[0].itemsize >= 4:
            return Array(columns[0].reshape(batch + (1,)))
        out = np.empty(batch + (len(columns),), np.int64)
        for j, c in enumerate(columns):
            out[..., j] = c
        return Array(out)
    dtype = np.result_type(*(c.dtype for c in columns))
    return stack([astype(broadcast_to(c, batch), dtype) for c in columns], -1)


def _orders(result_shape, whole, indexed):
    """(operand permutation, order of the primitive's output axes in the result)."""
    whole_dims = [d for _, d in whole]
    batch_dims = [d for d in range(len(result_shape)) if d not in whole_dims]
    return [a for a, _ in indexed] + [a for a, _ in whole], batch_dims + whole_dims


def _transpose(x, perm):
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else S.transpose(x, perm)


def _gather(x, plan, mode, indices=None):
    perm, order = _orders(*plan)
    indices = _index_array(*plan) if indices is None else indices
    out = I.gather_p.bind(_transpose(x, perm), indices, mode=mode)
    return _transpose(out, np.argsort(order))


def _scatter(prim, x, plan, values, mode, unique):
    perm, order = _orders(*plan)
    values = _transpose(_fit(values, plan[0], x.dtype), order)
    out = prim.bind(_transpose(x, perm), _index_array(*plan), values, mode=mode,
                    unique_indices=unique)
    return _transpose(out, np.argsort(perm))


def _fit(values, shape, dtype):
    """values cast to dtype and broadcast to shape (numpy also drops leading 1s)."""
    if type(values) is np.ndarray and values.dtype == dtype:
        values = Array(values)      # only read by the scatter: no need to copy
    else:
        values = asarray(values, dtype)
    while values.ndim > len(shape) and values.shape[0] == 1:
        values = S.reshape(values, values.shape[1:])
    if tuple(values.shape) != tuple(shape):
        try:
            values = broadcast_to(values, shape)
        except ShapeError:
            raise ShapeError(f"cannot broadcast values of shape {tuple(values.shape)} to "
                             f"the indexed shape {tuple(shape)}") from None
    return values


# --------------------------------------------------------------------------- reading

def getitem(x, idx):
    """x[idx] with numpy's semantics (basic and advanced indexing, masks)."""
    x = as_operand(x)
    shape = tuple(x.shape)
    if type(idx) is int and shape:    # the common x[i]: skip the parser
        n = shape[0]
        if not -n <= idx < n:
            _check_bounds(Term("int", 0, idx, 0, True), n, shape)
        i = idx + n if idx < 0 else idx
        return S.reshape(S.slice(x, (i,) + (0,) * (len(shape) - 1), (i + 1,) + shape[1:]),
                         shape[1:])
    if (type(idx) is Array or type(idx) is np.ndarray) and shape:   # x[int_array]
        v = idx._value if type(idx) is Array else idx
        if v.ndim and v.dtype.kind in "iu":
            _check_bounds(Term("array", 0, v, 0, False), shape[0], shape)
            return I.gather_p.bind(x, Array(v.reshape(v.shape + (1,))), mode="clip")
    terms = _parse(shape, idx)
    if any(t.kind in ("array", "bool") for t in terms):
        terms = _ints_as_arrays(terms)
    for t in terms:
        if t.kind in ("int", "array"):
            _check_bounds(t, shape[t.axis], shape)
    y, y_terms = _basic(x, terms)
    if not any(t.kind in ("array", "bool") for t in y_terms):
        return y
    return _gather(y, _plan(y_terms, tuple(y.shape)), "clip")


def _basic(x, terms):
    """Apply the ints, slices and new axes with structural primitives. Returns the
    result and its terms: advanced terms renumbered to its axes, the rest whole."""
    shape = tuple(x.shape)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    flipped, out_shape, out_terms = [], [], []
    for t in terms:
        if t.kind == "bool":
            out_terms.append(t)
            continue
        a, n = t.axis, len(out_shape)
        if t.kind == "int":
            i = t.value + shape[a] if t.value < 0 else t.value
            starts[a], limits[a] = i, i + 1
            continue
        if t.kind == "slice":
            start, stop, step = t.value
            m = len(range(start, stop, step))
            if m == 0:
                starts[a] = limits[a] = 0
            elif step > 0:
                starts[a], limits[a], strides[a] = start, start + (m - 1) * step + 1, step
            else:
                starts[a], limits[a], strides[a] = start + (m - 1) * step, start + 1, -step
                if m > 1:
                    flipped.append(a)
        else:
            m = 1 if t.kind == "new" else shape[a]
        out_shape.append(m)
        out_terms.append(t._replace(axis=n) if t.kind == "array"
                         else t._replace(kind="slice", axis=n, value=(0, m, 1)))
    y = x
    if starts != [0] * len(shape) or limits != list(shape) or strides != [1] * len(shape):
        y = S.slice(y, starts, limits, strides)
    if flipped:
        y = S.rev(y, tuple(flipped))
    if tuple(out_shape) != tuple(y.shape):
        y = S.reshape(y, out_shape)
    return y, out_terms


# --------------------------------------------------------------------------- .at

class IndexUpdateHelper:
    """`x.at`: ``x.at[idx].set(v)`` (and .add, .multiply, .divide, .min, .max, .get)
    return an updated copy of x, as in JAX. Values are cast to x's dtype and
    broadcast to x[idx]'s shape; out-of-range indices are dropped."""
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return IndexUpdateRef(self.array, idx)

    def __repr__(self):
        return f"IndexUpdateHelper({self.array!r})"


_UPDATE_MODES = {None: "fill", "drop": "fill", "fill": "fill", "clip": "clip",
                 "promise_in_bounds": "clip"}


class IndexUpdateRef:
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = as_operand(array)
        self.index = index

    def __repr__(self):
        return f"IndexUpdateRef({self.array!r}, {self.index!r})"

    def _update(self, prim, values, mode, unique_indices):
        if mode not in _UPDATE_MODES:
            raise ValueError(f"unknown mode {mode!r} for an .at update; expected 'drop', "
                             f"'clip' or 'promise_in_bounds'")
        x = self.array
        idx = self.index
        if type(idx) is Array:
            idx = idx._value
        if type(idx) is int or type(idx) is np.ndarray and idx.dtype.kind in "iu":
            if x.ndim:      # x.at[i] / x.at[int_array]: rows of the leading axis
                idx = np.asarray(_int_index(idx) if type(idx) is int else idx)
                rows = Array(idx.reshape(idx.shape + (1,)))
                values = _fit(values, idx.shape + tuple(x.shape[1:]), x.dtype)
                return prim.bind(x, rows, values, mode=_UPDATE_MODES[mode],
                                 unique_indices=unique_indices or idx.ndim == 0)
        terms = _ints_as_arrays(_parse(tuple(x.shape), idx))
        unique = unique_indices or all(t.unique for t in terms)
        return _scatter(prim, x, _plan(terms, tuple(x.shape)), values, _UPDATE_MODES[mode],
                        unique)

    def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return self._update(I.scatter_p, values, mode, unique_indices)

    def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return self._update(I.scatter_add_p, values, mode, unique_indices)

    def multiply(self, values, *, mode=None, indices_are_sorted=False,
                 unique_indices=False):
        return self._update(I.scatter_mul_p, values, mode, unique_indices)

    mul = multiply

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        if self.array.dtype.kind not in "fc":
            raise DTypeError(f".at[].divide needs a floating-point array, got "
                             f"{self.array.dtype}")
        return self.multiply(1 / asarray(values, self.array.dtype), mode=mode,
                             unique_indices=unique_indices)

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return self._update(I.scatter_min_p, values, mode, unique_indices)

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return self._update(I.scatter_max_p, values, mode, unique_indices)

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
        """x[idx]; mode "clip" clamps out-of-range indices and "fill" reads fill_value
        there (default: NaN for floats, the extreme value for integers, True for bool)."""
        if mode in (None, "raise"):
            return getitem(self.array, self.index)
        if mode not in ("clip", "fill", "promise_in_bounds"):
            raise ValueError(f"unknown mode {mode!r} for .at[].get; expected 'clip', "
                             f"'fill' or 'promise_in_bounds'")
        x = self.array
        shape = tuple(x.shape)
        plan = _plan(_ints_as_arrays(_parse(shape, self.index)), shape)
        if mode != "fill":
            return _gather(x, plan, "clip")
        indices = _index_array(*plan)
        out = _gather(x, plan, "fill", indices)
        fill = _fill_value(x.dtype, fill_value)
        if fill == 0:
            return out
        # Which reads were in range: gather ones over the indexed axes.
        result_shape, whole, indexed = plan
        probe = Array(np.broadcast_to(np.True_, tuple(shape[a] for a, _ in indexed)))
        inside = I.gather_p.bind(probe, indices, mode="fill")
        whole_dims = {d for _, d in whole}
        inside = _reshape(inside, tuple(1 if d in whole_dims else n
                                        for d, n in enumerate(result_shape)))
        return where(inside, out, np.asarray(fill, x.dtype))


def _fill_value(dtype, fill_value):
    if fill_value is not None:
        return fill_value
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return True


# --------------------------------------------------------------------------- numpy functions

def _index_like(indices):
    """An index operand as numpy when concrete, else the traced value."""
    if isinstance(indices, Tracer):
        return indices
    return concrete_value(indices)


def take(a: Any, indices: ArrayLike, axis: Any = None, out: None = None, mode: Any = None,
         unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: ArrayLike | None = None) -> Array:
    """numpy's take. mode: "raise" (default; numpy's IndexError when concrete,
    clamped when traced), "wrap", "clip" (numpy's: negative indices become 0), or
    "fill" (JAX's: out-of-range reads give fill_value). unique_indices and
    indices_are_sorted are JAX's hints; fnad's gather needs neither."""
    if out is not None:
        raise ValueError("take: out= is not supported; fnad arrays are immutable")
    a = as_operand(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    indices = _index_like(indices)
    if mode in ("wrap", "clip"):
        if isinstance(indices, np.ndarray):
            indices = np.mod(indices, n) if mode == "wrap" else np.clip(indices, 0, n - 1)
        else:
            indices = remainder(indices, n) if mode == "wrap" else clip(indices, 0, n - 1)
    elif mode not in (None, "raise", "fill"):
        raise ValueError(f"take: unknown mode {mode!r}; expected 'raise', 'wrap', 'clip' "
                         f"or 'fill'")
    idx = (slice(None),) * axis + (indices,)
    if mode == "fill":
        return IndexUpdateRef(a, idx).get(mode="fill", fill_value=fill_value)
    return getitem(a, idx)


def _along_axis_index(shape, indices, axis):
    """The index tuple that makes arr[tuple] numpy's take_along_axis."""
    if len(indices.shape) != len(shape):
        raise ShapeError(f"take_along_axis: indices of shape {tuple(indices.shape)} and an "
                         f"array of shape {tuple(shape)} must have the same number of "
                         f"dimensions")
    idx = []
    for d, n in enumerate(shape):
        if d == axis:
            idx.append(indices)
        else:
            view = [1] * len(shape)
            view[d] = n
            idx.append(np.arange(n, dtype=np.int64).reshape(view))
    return tuple(idx)


def take_along_axis(arr: ArrayLike, indices: Any, axis: int, mode: Any = None,
                    fill_value: ArrayLike | None = None, *,
                    wrap_negative_indices: bool = True) -> Array:
    """arr's entries at `indices` along axis (numpy's take_along_axis). mode None or
    "raise": numpy's IndexError for concrete out-of-range indices (traced ones are
    clamped); "clip": clamped; "fill": fill_value there. With
    wrap_negative_indices=False (JAX's) a negative index is out of range rather than
    counted from the end."""
    arr = as_operand(arr)
    indices = _index_like(indices)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis(axis, arr.ndim)
    if indices.dtype.kind not in "iu":
        raise IndexError(f"take_along_axis: indices must be integers, got {indices.dtype}")
    if mode not in (None, "raise", "clip", "fill", "promise_in_bounds"):
        raise ValueError(f"take_along_axis: unknown mode {mode!r}; expected 'raise', "
                         f"'clip', 'fill' or 'promise_in_bounds'")
    if not wrap_negative_indices and indices.dtype.kind == "i":
        n = arr.shape[axis]
        # out of range at the low end: clamped to 0 ("clip"), else past the end
        below = 0 if mode == "clip" else n
        indices = np.where(indices < 0, below, indices) if isinstance(indices, np.ndarray) \
            else where(indices < 0, np.asarray(below, indices.dtype), indices)
    idx = _along_axis_index(arr.shape, indices, axis)
    if mode in ("fill", "clip"):
        return IndexUpdateRef(arr, idx).get(mode=mode, fill_value=fill_value)
    return getitem(arr, idx)


def put_along_axis(arr: ArrayLike, indices: ArrayLike, values: ArrayLike, axis: int,
                   inplace: bool = False, mode: Any = None) -> Array:
    """A copy of arr with values put at indices along axis (JAX: inplace must be False)."""
    if inplace:
        raise ValueError("fnad arrays are immutable: put_along_axis needs inplace=False "
                         "and returns the updated array")
    arr = as_operand(arr)
    axis = normalize_axis(axis, arr.ndim)
    idx = _along_axis_index(arr.shape, _index_like(indices), axis)
    return IndexUpdateRef(arr, idx).set(values, mode=mode)


def diag_indices(n: Any, ndim: int = 2) -> Any:
    return (Array(np.arange(n, dtype=dtypes.index_dtype(n))),) * ndim


def diag_indices_from(arr: ArrayLike) -> Any:
    shape = tuple(as_operand(arr).shape)
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ShapeError(f"diag_indices_from needs an array with at least 2 dimensions of "
                         f"equal length, got shape {shape}")
    return diag_indices(shape[0], len(shape))


def tril_indices(n: Any, k: int = 0, m: Any = None) -> Any:
    return tuple(Array(c) for c in index_arrays(np.tril_indices(n, k, m), max(n, m or 0)))


def triu_indices(n: Any, k: int = 0, m: Any = None) -> Any:
    return tuple(Array(c) for c in index_arrays(np.triu_indices(n, k, m), max(n, m or 0)))


def _triangle(m, keep, name):
    m = as_operand(m)
    if m.ndim < 2:
        raise ShapeError(f"{name} needs an array of at least 2 dimensions, got shape "
                         f"{tuple(m.shape)}")
    return where(keep(*m.shape[-2:]), m, np.zeros((), m.dtype))


def tril(m: ArrayLike, k: int = 0) -> Array:
    """m with the entries above the k-th diagonal zeroed."""
    return _triangle(m, lambda n, c: np.tri(n, c, k, dtype=bool), "tril")


def triu(m: ArrayLike, k: int = 0) -> Array:
    """m with the entries below the k-th diagonal zeroed."""
    return _triangle(m, lambda n, c: ~np.tri(n, c, k - 1, dtype=bool), "triu")


def ix_(*args: Any) -> Any:
    """An open mesh of the 1-d index arrays in args. Integer arrays keep their dtype (as
    in numpy and JAX); boolean masks become the positions of their True entries, and
    empty arrays empty index arrays, in the index dtype."""
    values = [concrete_or_raise(x, "ix_") if isinstance(x, Tracer) else np.asarray(x)
              for x in args]
    values = [index_arrays(np.nonzero(v), v.size)[0] if v.dtype == np.bool_ and v.ndim == 1 else
              v.astype(dtypes.index_dtype(0)) if v.size == 0 else v for v in values]
    return tuple(Array(a) for a in np.ix_(*values))


def repeat(a: Any, repeats: Any, axis: Any = None, *, total_repeat_length: Any = None) -> Array:
    """Each entry of a along axis (of the flattened a for None) repeated `repeats`
    times (an int, or one count per entry). total_repeat_length (JAX's) fixes the
    result's length: longer results are cut, shorter ones repeat the last entry; it
    is required when the counts are traced, as the length depends on them."""
    a = as_operand(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(repeats, (int, np.integer)) and total_repeat_length is None:
        if repeats < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
        # Broadcast a new axis after `axis` to `repeats` and merge the two.
        shape = list(a.shape)
        expanded_shape = shape[:axis + 1] + [int(repeats)] + shape[axis + 1:]
        dims = tuple(range(axis + 1)) + tuple(range(axis + 2, a.ndim + 1))
        expanded = S.broadcast_in_dim(a, tuple(expanded_shape), dims)
        shape[axis] *= int(repeats)
        return reshape(expanded, shape)
    counts = concrete_value(repeats)
    if counts is not None:
        counts = np.broadcast_to(counts, (n,)) if counts.ndim == 0 else counts
        if counts.shape != (n,):
            raise ShapeError(f"repeat: {counts.size} repeat counts for an axis of length {n}")
        if counts.size and counts.min() < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {counts.min()}")
        source = np.repeat(np.arange(n), counts)
        if total_repeat_length is not None:
            total = operator.index(total_repeat_length)
            source = np.concatenate([source[:total], np.full(max(total - source.size, 0),
                                                               max(n - 1, 0))])
        return take(a, source, axis=axis)
    if total_repeat_length is None:
        raise ConcretizationError(
            f"repeat: the counts {repeats.aval} are traced by {repeats._trace.name}, so the "
            f"result's length is unknown; pass total_repeat_length=")
    return take(a, _traced_repeat_source(repeats, n, operator.index(total_repeat_length)),
                axis=axis)


def _traced_repeat_source(counts, n, total):
    """For traced counts: which entry each of the `total` output positions copies. A
    one is added at each entry's starting position (its running total), and the
    running sum of those marks numbers the entries."""
    index_dtype = dtypes.index_dtype(max(n, total) + 1)
    counts = astype(broadcast_to(counts, (n,)), index_dtype)
    starts = cumsum(counts)
    marks = IndexUpdateRef(Array(np.zeros(total, index_dtype)), starts[:n - 1]).add(
        np.ones(max(n - 1, 0), index_dtype))
    return clip(cumsum(marks), 0, max(n - 1, 0))
