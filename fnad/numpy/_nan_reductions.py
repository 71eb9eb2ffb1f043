"""numpy's NaN-ignoring reductions and scans: each is its plain counterpart applied to
the values with the NaNs replaced by the reduction's identity (a select, so the
derivative of every non-NaN value is the plain one's and the NaNs get zero), and, for
means and variances, divided by the count of non-NaN values. A slice of NaNs only
gives NaN (numpy's value, without its warning); nanargmax/nanargmin give -1 there,
as JAX does (numpy raises)."""
import numpy as np
from typing import Any, Sequence

from ._arguments import refuse_out as _no_out
from ._core import as_operand, astype, normalize_axes, promote_inexact
from ._elementwise import isnan, sqrt, where
from ._complex import conj, real
from ..dtypes import moment_dtype, real_dtype
from . import _reductions as R
from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["nansum", "nanprod", "nanmax", "nanmin", "nanargmax", "nanargmin", "nanmean",
           "nanvar", "nanstd", "nancumsum", "nancumprod"]


def _replaced(a, value):
    """a with its NaNs replaced by value (integers have none)."""
    a = as_operand(a)
    if a.dtype.kind not in "fc":
        return a, None
    nan = isnan(a)
    return where(nan, np.asarray(value, a.dtype), a), nan


def nansum(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
           out: None = None, keepdims: bool = False) -> Array:
    _no_out("nansum", out)
    return R.sum(_replaced(a, 0)[0], axis, dtype, keepdims)


def nanprod(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
            out: None = None, keepdims: bool = False) -> Array:
    _no_out("nanprod", out)
    return R.prod(_replaced(a, 1)[0], axis, dtype, keepdims)


def _nan_extremum(reduction, fill, a, axis, keepdims):
    filled, nan = _replaced(a, fill)
    out = reduction(filled, axis, keepdims)
    if nan is None:
        return out
    all_nan = R.all(nan, axis, keepdims)
    return where(all_nan, np.asarray(np.nan, out.dtype), out)


def nanmax(a: ArrayLike, axis: int | Sequence[int] | None = None, out: None = None,
           keepdims: bool = False) -> Array:
    _no_out("nanmax", out)
    return _nan_extremum(R.max, -np.inf, a, axis, keepdims)


def nanmin(a: ArrayLike, axis: int | Sequence[int] | None = None, out: None = None,
           keepdims: bool = False) -> Array:
    _no_out("nanmin", out)
    return _nan_extremum(R.min, np.inf, a, axis, keepdims)


def _nan_arg(reduction, fill, a, axis, keepdims):
    filled, nan = _replaced(a, fill)
    index = reduction(filled, axis, keepdims=bool(keepdims))
    if nan is None:
        return index
    all_nan = R.all(nan, axis, keepdims=bool(keepdims))
    return where(all_nan, np.asarray(-1, index.dtype), index)


def nanargmax(a: ArrayLike, axis: int | Sequence[int] | None = None, out: None = None,
              keepdims: Any = None) -> Array:
    _no_out("nanargmax", out)
    return _nan_arg(R.argmax, -np.inf, a, axis, keepdims)


def nanargmin(a: ArrayLike, axis: int | Sequence[int] | None = None, out: None = None,
              keepdims: Any = None) -> Array:
    _no_out("nanargmin", out)
    return _nan_arg(R.argmin, np.inf, a, axis, keepdims)


def _count(a, nan, axis, keepdims, dtype):
    """The number of non-NaN values, in the float the moments are computed in."""
    if nan is None:
        n = np.prod([a.shape[i] for i in normalize_axes(axis, a.ndim)], dtype=np.int64)
        return np.asarray(n, dtype)
    return R.sum(astype(~nan, dtype), axis, keepdims=keepdims)


def nanmean(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
            out: None = None, keepdims: bool = False) -> Array:
    _no_out("nanmean", out)
    a = as_operand(a)
    if dtype is not None:
        a = astype(a, dtype)
    a, = promote_inexact(a)
    out_dtype = a.dtype
    a = astype(a, moment_dtype(out_dtype))
    filled, nan = _replaced(a, 0)
    total = R.sum(filled, axis, keepdims=keepdims)
    return astype(total / _count(a, nan, axis, keepdims, a.dtype), out_dtype)


def nanvar(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
           out: None = None, ddof: int = 0, keepdims: bool = False) -> Array:
    _no_out("nanvar", out)
    a = as_operand(a)
    if dtype is not None:
        a = astype(a, dtype)
    a, = promote_inexact(a)
    out_dtype = a.dtype
    a = astype(a, moment_dtype(out_dtype))
    filled, nan = _replaced(a, 0)
    centered = a - nanmean(a, axis, keepdims=True)
    if nan is not None:     # the NaNs of a alone: inf - inf stays NaN, as in numpy
        centered = where(nan, np.zeros((), a.dtype), centered)
    if a.dtype.kind == "c":     # numpy's: the mean of |x - mean|^2, a real
        squared = real(centered * conj(centered))
        out_dtype = real_dtype(out_dtype)
    else:
        squared = centered * centered
    n = _count(a, nan, axis, keepdims, squared.dtype) - np.asarray(ddof, squared.dtype)
    var = R.sum(squared, axis, keepdims=keepdims) / n
    # no degrees of freedom left: NaN, as numpy's (not 0 / -1)
    return astype(where(n > 0, var, np.asarray(np.nan, var.dtype)), out_dtype)


def nanstd(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
           out: None = None, ddof: int = 0, keepdims: bool = False) -> Array:
    return sqrt(nanvar(a, axis, dtype, out, ddof, keepdims))


def nancumsum(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
              out: None = None) -> Array:
    _no_out("nancumsum", out)
    return R.cumsum(_replaced(a, 0)[0], axis, dtype)


def nancumprod(a: ArrayLike, axis: int | Sequence[int] | None = None,
               dtype: DTypeLike | None = None, out: None = None) -> Array:
    _no_out("nancumprod", out)
    return R.cumprod(_replaced(a, 1)[0], axis, dtype)
