"""Statistics of samples (rather than distributions)."""
import collections
from typing import Any

from ... import numpy as fnp
from ...lax import cummax, cummin
from ._util import promote
from ...typing import Array, ArrayLike

_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")

ModeResult = collections.namedtuple("ModeResult", ["mode", "count"])


def sem(a: ArrayLike, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Array:
    """The standard error of the mean: std(a, ddof) / sqrt(n) along axis (all of a for
    axis=None)."""
    if nan_policy != "propagate":
        raise ValueError(f"sem: nan_policy={nan_policy!r} is not supported; fnad propagates "
                         f"NaN (nan_policy='propagate')")
    a, = promote(a)
    if axis is None:
        a, axis = fnp.ravel(a), 0
    n = a.shape[axis]
    return fnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / fnp.sqrt(
        fnp.asarray(n, a.dtype))


def rankdata(a: ArrayLike, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Array:
    """Ranks from 1, ties by `method` ('average', 'min', 'max', 'dense', 'ordinal');
    along `axis`, or of the flattened array for axis=None. A NaN makes its whole slice
    NaN (nan_policy='propagate'). Ranks are floats for 'average', integers otherwise."""
    if method not in _RANK_METHODS:
        raise ValueError(f"rankdata: method must be one of {_RANK_METHODS}, got {method!r}")
    if nan_policy != "propagate":
        raise ValueError(f"rankdata: nan_policy={nan_policy!r} is not supported; fnad "
                         f"propagates NaN (nan_policy='propagate')")
    a = fnp.asarray(a)
    if axis is None:
        a, axis = fnp.ravel(a), -1
    a = fnp.moveaxis(a, axis, -1)
    # ranks in sorted order, then back through the inverse permutation
    order = fnp.argsort(a, axis=-1, stable=True)
    inverse = fnp.argsort(order, axis=-1, stable=True)
    ordered = fnp.take_along_axis(a, order, axis=-1)
    same = ordered[..., 1:] == ordered[..., :-1]
    position, new, first_of_tie, last_of_tie = _tie_bounds(ordered, same)
    ranks = {"ordinal": position, "min": first_of_tie, "max": last_of_tie,
             "dense": fnp.cumsum(new.astype(position.dtype), axis=-1),
             "average": (first_of_tie + last_of_tie) / 2}[method]
    ranks = fnp.take_along_axis(ranks, inverse, axis=-1)
    if a.dtype.kind in "fc":
        has_nan = fnp.any(a != a, axis=-1, keepdims=True)
        ranks = fnp.where(has_nan, fnp.nan, ranks.astype(fnp.result_type(ranks, float)))
    return fnp.moveaxis(ranks, -1, axis)


def _tie_bounds(ordered, same):
    """For each element of the sorted last axis, the 1-based positions of the first and
    last element of its run of equal values; same[..., i] says whether elements i and
    i + 1 are equal."""
    n = ordered.shape[-1]
    edge = fnp.ones(ordered.shape[:-1] + (min(n, 1),), bool)
    new = fnp.concatenate([edge, ~same], axis=-1)
    last = fnp.concatenate([~same, edge], axis=-1)
    position = fnp.broadcast_to(fnp.arange(1, n + 1), ordered.shape)
    first_of_tie = cummax(fnp.where(new, position, 0), axis=ordered.ndim - 1)
    last_of_tie = cummin(fnp.where(last, position, n + 1), axis=ordered.ndim - 1, reverse=True)
    return position, new, first_of_tie, last_of_tie


def mode(a: ArrayLike, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False
        ) -> Any:
    """ModeResult(mode, count): the most frequent value along axis (the smallest of
    equally frequent ones) and how often it occurs. NaNs count as one value (scipy's
    'propagate')."""
    if nan_policy != "propagate":
        raise ValueError(f"mode: nan_policy={nan_policy!r} is not supported; fnad counts NaN "
                         f"as a value (nan_policy='propagate')")
    a = fnp.asarray(a)
    kept_shape = None
    if axis is None:
        kept_shape = (1,) * max(a.ndim, 1)
        a, axis = fnp.ravel(a), 0
    if a.ndim == 0 or a.shape[axis] == 0:
        raise ValueError(f"mode: the axis {axis} of an array of shape {tuple(a.shape)} has "
                         f"no elements")
    ordered = fnp.sort(fnp.moveaxis(a, axis, -1), axis=-1)
    left, right = ordered[..., :-1], ordered[..., 1:]
    same = (left == right) | ((left != left) & (right != right))
    _, _, first_of_tie, last_of_tie = _tie_bounds(ordered, same)
    counts = last_of_tie - first_of_tie + 1
    best = fnp.argmax(counts, axis=-1)
    value = fnp.take_along_axis(ordered, best[..., None], axis=-1)[..., 0]
    count = fnp.max(counts, axis=-1)
    if keepdims:
        if kept_shape is not None:      # every axis was reduced: all kept, of length 1
            value, count = fnp.reshape(value, kept_shape), fnp.reshape(count, kept_shape)
        else:
            value, count = fnp.expand_dims(value, axis), fnp.expand_dims(count, axis)
    return ModeResult(value, count)
