"""Statistics of samples (rather than distributions)."""
from ... import numpy as fnp
from ._util import promote


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
