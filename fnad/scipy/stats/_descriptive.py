"""Statistics of samples (rather than distributions)."""
from ... import numpy as fnp
from ...lax import cummax, cummin
from ._util import promote

_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
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


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
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
    n = a.shape[-1]
    # ranks in sorted order, then back through the inverse permutation
    order = fnp.argsort(a, axis=-1, stable=True)
    inverse = fnp.argsort(order, axis=-1, stable=True)
    ordered = fnp.take_along_axis(a, order, axis=-1)
    position = fnp.broadcast_to(fnp.arange(1, n + 1), a.shape)
    if method == "ordinal":
        ranks = position
    else:
        new = fnp.concatenate([fnp.ones(a.shape[:-1] + (min(n, 1),), bool),
                               ordered[..., 1:] != ordered[..., :-1]], axis=-1)
        last = fnp.concatenate([ordered[..., 1:] != ordered[..., :-1],
                                fnp.ones(a.shape[:-1] + (min(n, 1),), bool)], axis=-1)
        first_of_tie = cummax(fnp.where(new, position, 0), axis=a.ndim - 1)
        last_of_tie = cummin(fnp.where(last, position, n + 1), axis=a.ndim - 1, reverse=True)
        ranks = {"min": first_of_tie, "max": last_of_tie,
                 "dense": fnp.cumsum(new.astype(position.dtype), axis=-1),
                 "average": (first_of_tie + last_of_tie) / 2}[method]
    ranks = fnp.take_along_axis(ranks, inverse, axis=-1)
    if a.dtype.kind in "fc":
        has_nan = fnp.any(a != a, axis=-1, keepdims=True)
        ranks = fnp.where(has_nan, fnp.nan, ranks.astype(fnp.result_type(ranks, float)))
    return fnp.moveaxis(ranks, -1, axis)
