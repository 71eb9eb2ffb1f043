"""Set operations: unique (and the array API's unique_all/_counts/_inverse/_values),
intersect1d, union1d, setdiff1d, setxor1d, isin.

One sort-based pipeline serves concrete and traced inputs alike: sort (rows
lexicographically when an axis is given), mark the first entry of each run of equal
values, and number the runs with a cumulative sum. How many runs there are depends
on the values, so a traced input needs `size=` (JAX's contract): the first `size`
unique values, padded with fill_value (default: the smallest value, as in JAX);
padded indices point at the smallest value and padded counts are 0. Values are
gathered from the input, so derivatives flow to the entries they came from."""
import collections
from typing import Any, Sequence

import numpy as np

from ..dtypes import kind_of as dtype_kind
from .. import dtypes
from ..array import Array
from ..errors import ShapeError
from . import _elementwise as E
from ._core import as_operand, normalize_axis, promote
from ._indexing import IndexUpdateRef, take
from ._nonzero import concrete_or_raise, operator_index, sized_positions
from ._reductions import any as _any, cumsum
from ._shapes import broadcast_to, concatenate, moveaxis, ravel, reshape, take_range
from ._sorting import argsort, lexsort, searchsorted
from ..typing import ArrayLike

__all__ = ["unique", "unique_all", "unique_counts", "unique_inverse", "unique_values",
           "intersect1d", "union1d", "setdiff1d", "setxor1d", "isin"]

UniqueAllResult = collections.namedtuple("UniqueAllResult",
                                         "values indices inverse_indices counts")
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", "values inverse_indices")


def _differs(x, y, equal_nan):
    out = E.not_equal(x, y)
    if equal_nan and dtype_kind(x.dtype) in "fc":
        out = E.logical_and(out, E.logical_not(E.logical_and(E.isnan(x), E.isnan(y))))
    return out


def _need_concrete(name, size, *arrays):
    """Without size=, the inputs themselves must be concrete: say so about them (not
    about a mask computed from them)."""
    if size is None:
        for a in arrays:
            concrete_or_raise(as_operand(a), name, sized=True)


def _unique(ar, axis, equal_nan, size, fill_value, name):
    """The unique pipeline: (values, index, inverse, counts) as fnad values."""
    a = as_operand(ar)
    _need_concrete(name, size, a)
    shape = tuple(a.shape)
    flat = ravel(a) if axis is None or a.ndim == 0 else a
    along = 0 if axis is None else normalize_axis(axis, flat.ndim)
    moved = moveaxis(flat, along, 0)        # the slices to compare are rows
    n = moved.shape[0]
    m = int(np.prod(moved.shape[1:], dtype=np.int64))
    index_dtype = dtypes.index_dtype(n)
    k = None if size is None else operator_index(size, name)
    if n == 0 or m == 0:
        if m == 0 and n:
            raise ShapeError(f"{name}: cannot take unique slices of length 0 along axis "
                             f"{along} of an array of shape {shape}")
        # nothing to take the default padding from: fill_value, else 0
        values = Array(np.full(((k or 0),) + tuple(moved.shape[1:]),
                               0 if fill_value is None else fill_value, moved.dtype))
        zeros = Array(np.zeros(k or 0, index_dtype))
        return (moveaxis(values, 0, along), zeros,
                Array(np.zeros(shape if axis is None else (0,), index_dtype)), zeros)
    rows = reshape(moved, (n, m))
    if m == 1:
        perm = argsort(rows[:, 0])
    else:
        perm = lexsort([rows[:, j] for j in reversed(range(m))])    # first column first
    ordered = take(rows, perm, axis=0)
    changes = _any(_differs(take_range(ordered, 1, n, 0), take_range(ordered, 0, n - 1, 0),
                            equal_nan), axis=1)
    first = concatenate([np.ones(1, bool), changes])       # where each run starts
    if k is None:
        k = int(np.count_nonzero(concrete_or_raise(first, name, sized=True)))
    starts, = sized_positions(first, k, [n], [np.arange(n, dtype=dtypes.index_dtype(n + 1))])
    group = cumsum(first, dtype=index_dtype) - 1            # each sorted row's run
    values = take(ordered, starts, axis=0, mode="clip")
    index = take(perm, starts, mode="clip")
    inverse = IndexUpdateRef(Array(np.zeros(n, index_dtype)), perm).set(group)
    counts = IndexUpdateRef(Array(np.zeros(k, index_dtype)), group).add(
        np.ones(n, index_dtype))
    if size is not None and k:
        # padding: fill_value, or the smallest value (the first sorted row), whose
        # index the padded indices repeat, as JAX
        valid = E.less(starts, n)
        fill = take_range(ordered, 0, 1, 0) if fill_value is None else \
            np.asarray(fill_value, values.dtype)
        values = E.where(reshape(valid, (-1, 1)), values, fill)
        index = E.where(valid, index, take_range(index, 0, 1, 0))
    values = moveaxis(reshape(values, (k,) + tuple(moved.shape[1:])), 0, along)
    return values, index, reshape(inverse, shape) if axis is None else inverse, counts


def unique(ar: ArrayLike, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, axis: int | Sequence[int] | None = None,
           *, equal_nan: bool = True, size: Any = None, fill_value: ArrayLike | None = None, sorted: bool = True) -> Any:  # noqa: A002
    """The sorted unique values of ar (flattened, or the unique slices along axis),
    and optionally the index of each one's first occurrence, the index of each entry's
    value among them (shaped like ar for axis=None), and how often each occurs.
    sorted=False allows any order; fnad's is always sorted."""
    values, index, inverse, counts = _unique(ar, axis, equal_nan, size, fill_value, "unique")
    extra = [x for flag, x in ((return_index, index), (return_inverse, inverse),
                               (return_counts, counts)) if flag]
    return (values, *extra) if extra else values


def unique_values(x: ArrayLike, /, *, size: Any = None,
                  fill_value: ArrayLike | None = None) -> Array:
    return _unique(x, None, True, size, fill_value, "unique_values")[0]


def unique_counts(x: ArrayLike, /, *, size: Any = None, fill_value: ArrayLike | None = None) -> Any:
    values, _, _, counts = _unique(x, None, True, size, fill_value, "unique_counts")
    return UniqueCountsResult(values, counts)


def unique_inverse(x: ArrayLike, /, *, size: Any = None,
                   fill_value: ArrayLike | None = None) -> Any:
    values, _, inverse, _ = _unique(x, None, True, size, fill_value, "unique_inverse")
    return UniqueInverseResult(values, inverse)


def unique_all(x: ArrayLike, /, *, size: Any = None, fill_value: ArrayLike | None = None) -> Any:
    return UniqueAllResult(*_unique(x, None, True, size, fill_value, "unique_all"))


# --------------------------------------------------------------------------- membership

def isin(element: ArrayLike, test_elements: ArrayLike, assume_unique: bool = False,
         invert: bool = False, *, method: str = "auto") -> Array:
    """Whether each entry of element equals some entry of test_elements (NaN never
    does). method "compare_all" compares every pair; "sort" and "binary_search"
    look each entry up in the sorted test_elements; "auto" picks by size."""
    element, test = promote(element, test_elements)
    test = ravel(test)
    if method == "auto":
        method = "compare_all" if test.size <= 64 else "sort"
    if not test.size:
        found = broadcast_to(np.zeros((), bool), tuple(element.shape))
    elif method == "compare_all":
        found = _any(E.equal(reshape(element, tuple(element.shape) + (1,)), test), axis=-1)
    elif method in ("sort", "binary_search"):
        ordered = take(test, argsort(test))
        at = E.clip(searchsorted(ordered, element), 0, test.size - 1)
        found = E.equal(take(ordered, at), element)
    else:
        raise ValueError(f"isin: method must be 'auto', 'compare_all', 'sort' or "
                         f"'binary_search', got {method!r}")
    return E.logical_not(found) if invert else found


# --------------------------------------------------------------------------- 1-d set algebra
# numpy's algorithms on sorted unique values, written with padded arrays so they also
# run traced: each array's unique values fill the front of an array as long as the
# input, a validity mask marks them, and sorting with the mask as the primary key
# keeps the padding at the back.

def _set_result(values, keep, size, fill_value, name):
    """The entries of the 1-d `values` where `keep`: all of them (concrete keep), or
    the first `size`, padded with fill_value (default: the first kept value, the
    smallest where values are sorted, as JAX; 0 when none is kept)."""
    n = values.shape[0]
    if size is None:
        positions = np.flatnonzero(concrete_or_raise(keep, name, sized=True))
        return take(values, positions)
    k = operator_index(size, name)
    if n == 0:
        return Array(np.full(k, 0 if fill_value is None else fill_value, values.dtype))
    starts, = sized_positions(keep, k, [n], [np.arange(n, dtype=dtypes.index_dtype(n + 1))])
    picked = take(values, starts, mode="fill", fill_value=0)
    if fill_value is None:
        fill = take(values, E.clip(take_range(starts, 0, 1, 0), 0, n - 1))
    else:
        fill = np.asarray(fill_value, values.dtype)
    return E.where(E.less(starts, n), picked, fill)


def _padded_unique(ar, assume_unique):
    """(sorted unique values padded to len(ar), validity mask, index of each value's
    first occurrence in ar) for the flattened ar."""
    ar = ravel(ar)
    n = ar.shape[0]
    perm = argsort(ar)
    ordered = take(ar, perm)
    if assume_unique or n == 0:
        return ordered, broadcast_to(np.ones((), bool), (n,)), perm
    first = concatenate([np.ones(1, bool), _differs(take_range(ordered, 1, n, 0),
                                                    take_range(ordered, 0, n - 1, 0), True)])
    starts, = sized_positions(first, n, [n], [np.arange(n, dtype=dtypes.index_dtype(n + 1))])
    valid = E.less(starts, n)
    return take(ordered, starts, mode="clip"), valid, take(perm, starts, mode="clip")


def _merged(u1, valid1, u2, valid2):
    """Both padded unique arrays sorted together, valid entries first, u1's before
    u2's among equals: (values, validity, positions in the concatenation)."""
    values = concatenate([u1, u2])
    valid = concatenate([valid1, valid2])
    order = lexsort([values, E.logical_not(valid)])
    return take(values, order), take(valid, order), order


def _neighbours(values, valid):
    """Per adjacent pair of the merged array: whether both are valid and equal."""
    n = values.shape[0]
    return E.logical_and(
        E.logical_and(take_range(valid, 0, n - 1, 0), take_range(valid, 1, n, 0)),
        E.equal(take_range(values, 0, n - 1, 0), take_range(values, 1, n, 0)))


def union1d(ar1: ArrayLike, ar2: ArrayLike, *, size: Any = None,
            fill_value: ArrayLike | None = None) -> Array:
    """The sorted unique values of both arrays together."""
    ar1, ar2 = promote(ar1, ar2)
    _need_concrete("union1d", size, ar1, ar2)
    return unique(concatenate([ravel(ar1), ravel(ar2)]), size=size, fill_value=fill_value)


def intersect1d(ar1: ArrayLike, ar2: ArrayLike, assume_unique: bool = False,
                return_indices: bool = False, *, size: Any = None,
                fill_value: ArrayLike | None = None) -> Any:
    """The sorted values found in both arrays (NaN never matches); with
    return_indices, also the index of each one's first occurrence in the flattened
    ar1 and ar2."""
    ar1, ar2 = promote(ar1, ar2)
    _need_concrete("intersect1d", size, ar1, ar2)
    u1, valid1, first1 = _padded_unique(ar1, assume_unique)
    u2, valid2, first2 = _padded_unique(ar2, assume_unique)
    values, valid, order = _merged(u1, valid1, u2, valid2)
    if values.shape[0] < 2:
        keep = broadcast_to(np.zeros((), bool), (values.shape[0],))
        pairs = keep
    else:
        pairs = _neighbours(values, valid)     # pair i: entries i (from u1), i + 1 (u2)
        keep = concatenate([pairs, np.zeros(1, bool)])
    result = _set_result(values, keep, size, fill_value, "intersect1d")
    if not return_indices:
        return result
    n1 = u1.shape[0]
    at1 = _set_result(order, keep, size, None, "intersect1d")
    at2 = _set_result(concatenate([take_range(order, 1, order.shape[0], 0),
                                   np.zeros(1, order.dtype)]) if order.shape[0] else order,
                      keep, size, None, "intersect1d")
    from1 = take(first1, E.clip(at1, 0, max(n1 - 1, 0))) if n1 else at1
    n2 = u2.shape[0]
    from2 = take(first2, E.clip(E.subtract(at2, n1), 0, max(n2 - 1, 0))) if n2 else at2
    return result, from1, from2


def setdiff1d(ar1: ArrayLike, ar2: ArrayLike, assume_unique: bool = False, *, size: Any = None,
              fill_value: ArrayLike | None = None) -> Array:
    """The sorted unique values of ar1 not in ar2."""
    ar1, ar2 = promote(ar1, ar2)
    _need_concrete("setdiff1d", size, ar1, ar2)
    u1, valid1, _ = _padded_unique(ar1, assume_unique)
    keep = E.logical_and(valid1, isin(u1, ar2, invert=True))
    return _set_result(u1, keep, size, fill_value, "setdiff1d")


def setxor1d(ar1: ArrayLike, ar2: ArrayLike, assume_unique: bool = False, *, size: Any = None,
             fill_value: ArrayLike | None = None) -> Array:
    """The sorted values in exactly one of the arrays. As in numpy, NaN equals
    nothing here: each array holding a NaN contributes one."""
    ar1, ar2 = promote(ar1, ar2)
    _need_concrete("setxor1d", size, ar1, ar2)
    u1, valid1, _ = _padded_unique(ar1, assume_unique)
    u2, valid2, _ = _padded_unique(ar2, assume_unique)
    values, valid, _ = _merged(u1, valid1, u2, valid2)
    if values.shape[0] < 2:
        return _set_result(values, valid, size, fill_value, "setxor1d")
    pairs = _neighbours(values, valid)
    no = np.zeros(1, bool)
    # kept: valid and equal to neither neighbour
    keep = E.logical_and(valid, E.logical_not(E.logical_or(concatenate([pairs, no]),
                                                          concatenate([no, pairs]))))
    return _set_result(values, keep, size, fill_value, "setxor1d")
