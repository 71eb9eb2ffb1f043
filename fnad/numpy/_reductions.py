"""numpy's reductions and scans over the reduction primitives."""
import numpy as np
from typing import Sequence

from .. import dtypes
from ..array import Array
from ..primitives import reduce as R
from ..primitives import shape as S
from ._core import as_operand, astype, normalize_axes, normalize_axis, promote_inexact
from ._arguments import refuse_out as _no_out
from ._elementwise import sqrt
from ._complex import real, conj
from ._complex import lexicographic_extremum as _lexicographic_extremum
from ..typing import ArrayLike, DTypeLike


def _sum_dtype(dtype):
    """Bools and small integers accumulate in 64 bits, as in numpy (and JAX with x64):
    a sum or product never wraps around silently (docs/dtypes.md)."""
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    if dtype.kind == "u" and dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return dtype


def _reduction(prim_fn, x, axis, keepdims, dtype=None):
    x = as_operand(x)
    if dtype is not None:
        x = astype(x, dtype)
    axes = normalize_axes(axis, x.ndim)
    out = prim_fn(x, axes) if axes else x
    if keepdims:
        out = S.reshape(out, R.keepdims_shape(x.shape, axes))
    return out


def sum(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None, keepdims: bool = False) -> Array:  # noqa: A001
    a = as_operand(a)
    return _reduction(R.reduce_sum, a, axis, keepdims, dtype or _sum_dtype(a.dtype))


def prod(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
         keepdims: bool = False) -> Array:
    a = as_operand(a)
    return _reduction(R.reduce_prod, a, axis, keepdims, dtype or _sum_dtype(a.dtype))


def max(a: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Array:  # noqa: A001
    return _reduction(lambda x, axes: R.reduce_max_p.bind(x, axes=axes) if x.dtype.kind != "c"
                      else _lexicographic_extremum(x, axes, True), a, axis, keepdims)


def min(a: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Array:  # noqa: A001
    return _reduction(lambda x, axes: R.reduce_min_p.bind(x, axes=axes) if x.dtype.kind != "c"
                      else _lexicographic_extremum(x, axes, False), a, axis, keepdims)


amax, amin = max, min


def all(a: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Array:  # noqa: A001
    return _logical(min, True, a, axis, keepdims)


def any(a: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Array:  # noqa: A001
    return _logical(max, False, a, axis, keepdims)


def _logical(reduction, empty_value, a, axis, keepdims):
    a = astype(a, np.bool_)
    axes = normalize_axes(axis, a.ndim)
    if 0 in [a.shape[i] for i in axes]:
        # min and max of nothing are undefined, but all and any have an identity.
        kept = R.keepdims_shape(a.shape, axes) if keepdims else tuple(
            n for i, n in enumerate(a.shape) if i not in axes)
        return Array(np.full(kept, empty_value))
    return reduction(a, axis, keepdims)


def _count(shape, axes):
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


def mean(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
         keepdims: bool = False) -> Array:
    a = as_operand(a)
    if dtype is not None:
        a = astype(a, dtype)
    a, = promote_inexact(a)
    out_dtype = a.dtype
    a = astype(a, dtypes.moment_dtype(out_dtype))
    n = _count(a.shape, normalize_axes(axis, a.ndim))
    return astype(sum(a, axis, keepdims=keepdims) / np.asarray(n, a.dtype), out_dtype)


def var(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
        ddof: int = 0, keepdims: bool = False) -> Array:
    a = as_operand(a)
    if dtype is not None:
        a = astype(a, dtype)
    a, = promote_inexact(a)
    out_dtype = a.dtype
    a = astype(a, dtypes.moment_dtype(out_dtype))
    centered = a - mean(a, axis, keepdims=True)
    n = _count(a.shape, normalize_axes(axis, a.ndim)) - ddof
    if centered.dtype.kind == "c":      # numpy's: the mean of |x - mean|^2, a real
        squared = real(centered * conj(centered))
        out_dtype = dtypes.real_dtype(out_dtype)
    else:
        squared = centered * centered
    return astype(sum(squared, axis, keepdims=keepdims) / np.asarray(n, squared.dtype),
                  out_dtype)


def std(a: ArrayLike, axis: int | Sequence[int] | None = None, dtype: DTypeLike | None = None,
        ddof: int = 0, keepdims: bool = False) -> Array:
    return sqrt(var(a, axis, dtype, ddof, keepdims))


def _arg_reduction(prim, a, axis, keepdims):
    a = as_operand(a)
    if axis is None:
        flat = S.reshape(a, (a.size,))
        out = prim.bind(flat, axis=0, index_dtype=dtypes.index_dtype(a.size))
        return S.reshape(out, (1,) * a.ndim) if keepdims else out
    axis = normalize_axis(axis, a.ndim)
    out = prim.bind(a, axis=axis, index_dtype=dtypes.index_dtype(a.shape[axis]))
    return S.reshape(out, R.keepdims_shape(a.shape, (axis,))) if keepdims else out


def argmax(a: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Array:
    return _arg_reduction(R.argmax_p, a, axis, keepdims)


def argmin(a: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Array:
    return _arg_reduction(R.argmin_p, a, axis, keepdims)


def _scan(fn, a, axis, dtype):
    a = as_operand(a)
    if dtype is not None:
        a = astype(a, dtype)
    if axis is None:
        a, axis = S.reshape(a, (a.size,)), 0
    return fn(a, normalize_axis(axis, a.ndim))


def cumsum(a: ArrayLike, axis: int | Sequence[int] | None = None,
           dtype: DTypeLike | None = None) -> Array:
    a = as_operand(a)
    return _scan(R.cumsum, a, axis, dtype or _sum_dtype(a.dtype))


def cumprod(a: ArrayLike, axis: int | Sequence[int] | None = None,
            dtype: DTypeLike | None = None) -> Array:
    a = as_operand(a)
    return _scan(R.cumprod, a, axis, dtype or _sum_dtype(a.dtype))


def _cumulative(name, fn, identity, x, axis, dtype, include_initial):
    """The array API's cumulative_sum/prod: axis may be left out only for 1-d input,
    and include_initial puts the identity first (one more element along axis)."""
    x = as_operand(x)
    if x.ndim == 0:
        raise ValueError(f"{name}: needs an array of at least one dimension, got a 0-d one")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis must be given for a {x.ndim}-d array "
                             f"(shape {tuple(x.shape)})")
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    out = fn(x, axis, dtype)
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        first = Array(np.full(shape, identity, out.dtype))
        out = S.concatenate([first, out], axis)
    return out


def cumulative_sum(x: ArrayLike, /, *, axis: int | Sequence[int] | None = None,
                   dtype: DTypeLike | None = None, include_initial: bool = False) -> Array:
    return _cumulative("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: ArrayLike, /, *, axis: int | Sequence[int] | None = None,
                    dtype: DTypeLike | None = None, include_initial: bool = False) -> Array:
    return _cumulative("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial)


def ptp(a: ArrayLike, axis: int | Sequence[int] | None = None, out: None = None,
        keepdims: bool = False) -> Array:
    """max - min (the range of the values)."""
    _no_out("ptp", out)
    return max(a, axis, keepdims) - min(a, axis, keepdims)


def average(a: ArrayLike, axis: int | Sequence[int] | None = None,
            weights: ArrayLike | None = None) -> Array:
    if weights is None:
        return mean(a, axis)
    a, weights = promote_inexact(a, weights)
    return sum(a * weights, axis) / sum(weights, axis)


def count_nonzero(a: ArrayLike, axis: int | Sequence[int] | None = None,
                  keepdims: bool = False) -> Array:
    a = as_operand(a)
    n = _count(a.shape, normalize_axes(axis, a.ndim))
    return sum(a != 0, axis, dtype=dtypes.index_dtype(n), keepdims=keepdims)
