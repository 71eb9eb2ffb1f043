"""Order statistics (quantile, percentile and their NaN-ignoring forms), covariance and
correlation: composites of sort, gather and reductions, so they differentiate and
batch like any fnad function."""
import numpy as np
from typing import Any, Sequence

from .. import dtypes
from ..array import Array
from ..core import Tracer
from ..primitives import sort as P
from ._core import as_operand, asarray, astype, normalize_axes, promote_inexact
from ._elementwise import around, ceil, clip, floor, isnan, sqrt, where
from ._indexing import take_along_axis
from ._products import diagonal, dot
from ._arguments import refuse_out as _no_out
from ._reductions import any as _any, cumsum, mean, sum as _sum
from ._complex import conj, real, imag
from ._shapes import (atleast_2d, broadcast_to, concatenate, expand_dims, reshape,
                      squeeze, transpose)
from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["quantile", "percentile", "nanquantile", "nanpercentile", "nanmedian", "cov",
           "corrcoef"]

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _lerp(a, b, t):
    """a + (b - a) t, written from the nearer end (numpy's form: exact at t = 0 and 1,
    and monotonic)."""
    d = b - a
    return where(t >= 0.5, b - d * (1 - t), a + d * t)


def _last_axis(a, axis):
    """a with the reduced axes merged into one last axis, and the reduced axes."""
    axes = normalize_axes(axis, a.ndim)
    kept = [d for d in range(a.ndim) if d not in axes]
    moved = transpose(a, kept + list(axes))
    shape = tuple(a.shape[d] for d in kept)
    merged = int(np.prod([a.shape[d] for d in axes], dtype=np.int64))
    return reshape(moved, shape + (merged,)), axes


def _quantile(name, a, q, axis, out, overwrite_input, method, keepdims, interpolation,
              ignore_nan, weights=None):
    _no_out(name, out)
    if interpolation is not None:
        method = interpolation
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"{name}: weights= needs method='inverted_cdf' (as in numpy and "
                         f"JAX), got method={method!r}")
    # q exactly as given (a Python 0.4 is not rounded to float32 first: the position
    # q * (n - 1) decides which neighbours are used); a's float is the result's
    q_wide = astype(q, np.float64) if isinstance(q, (Array, Tracer)) \
        else asarray(np.asarray(q, np.float64))
    a, q = promote_inexact(a, q)
    flat, axes = _last_axis(a, axis)
    n = flat.shape[-1]
    dtype = a.dtype
    batch = tuple(flat.shape[:-1])
    if n == 0:
        if not ignore_nan:
            raise ValueError(f"{name}: cannot take a quantile of an empty array "
                             f"(shape {tuple(a.shape)})")
        # the NaN-ignoring forms find no values: NaN (numpy warns and gives NaN)
        empty = _sum(flat, -1) + np.asarray(np.nan, dtype)
        return _shaped(broadcast_to(empty, tuple(q.shape) + batch), q, a, axes, keepdims)
    nan = isnan(flat)
    if method == "inverted_cdf":
        result = _inverted_cdf(name, flat, nan, q_wide, q, a, axes, weights, ignore_nan)
        return _shaped(result, q, a, axes, keepdims)
    ordered = P.sort_multi([flat], flat.ndim - 1)[0]      # NaNs sort last
    # positions in float64, as numpy's: in float32 q * (n - 1) is off by up to
    # n ulp, which the interpolation multiplies by the gap between neighbours
    wide = np.dtype(np.float64)
    if ignore_nan:
        count = _sum(astype(~nan, wide), -1)               # per slice
    else:
        count = np.asarray(n, wide)
    qb = reshape(q_wide, tuple(q.shape) + (1,) * len(batch))
    position = qb * (count - 1)
    low = clip(floor(position), 0, n - 1)
    high = clip(ceil(position), 0, n - 1)
    if method == "lower":
        high = low
    elif method == "higher":
        low = high
    elif method == "nearest":
        low = high = clip(around(position), 0, n - 1)
    grid = broadcast_to(ordered, tuple(q.shape) + batch + (n,))

    def at(index):
        index = expand_dims(astype(broadcast_to(index, tuple(q.shape) + batch),
                                   dtypes.index_dtype(n)), -1)
        return squeeze(take_along_axis(grid, index, axis=-1), -1)
    lo, hi = at(low), at(high)
    if method == "midpoint":
        result = where(low == high, lo, _lerp(lo, hi, np.asarray(0.5, dtype)))
    elif method == "linear":
        result = _lerp(lo, hi, astype(position - low, dtype))
    else:
        result = lo
    nan_value = np.asarray(np.nan, dtype)
    if ignore_nan:
        result = where(count == 0, nan_value, result)
    else:
        result = where(_any(nan, -1), nan_value, result)
    return _shaped(result, q, a, axes, keepdims)


def _inverted_cdf(name, flat, nan, q_wide, q, a, axes, weights, ignore_nan):
    """numpy's inverted_cdf: the smallest value whose cumulative weight reaches q of
    the slice's total (every weight 1 without `weights`); NaNs weigh nothing when
    ignored."""
    n = flat.shape[-1]
    batch = tuple(flat.shape[:-1])
    if weights is None:
        w = broadcast_to(np.ones((), np.float64), tuple(flat.shape))
    else:
        w = as_operand(weights)
        if w.ndim == 1 and a.ndim > 1 and len(axes) == 1 and w.shape[0] == a.shape[axes[0]]:
            w = reshape(w, tuple(w.shape[0] if d == axes[0] else 1 for d in range(a.ndim)))
        if tuple(w.shape) != tuple(a.shape) and not (w.ndim == a.ndim and all(
                ws in (1, s) for ws, s in zip(w.shape, a.shape))):
            raise ValueError(f"{name}: weights of shape {tuple(w.shape)} do not match a's "
                             f"{tuple(a.shape)} (or its axis {axes})")
        w, _ = _last_axis(broadcast_to(astype(w, np.float64), tuple(a.shape)), axes)
    if ignore_nan:
        w = where(nan, np.zeros((), w.dtype), w)
    ordered, w = P.sort_multi([flat, w], flat.ndim - 1)   # NaNs sort last
    reached = cumsum(w, axis=-1)
    target = reshape(q_wide, tuple(q.shape) + (1,) * len(batch)) * reached[..., -1]
    # the first position whose cumulative weight reaches the target
    below = reached < expand_dims(target, -1)
    index = clip(_sum(astype(below, dtypes.index_dtype(n)), -1), 0, n - 1)
    grid = broadcast_to(ordered, tuple(q.shape) + batch + (n,))
    result = squeeze(take_along_axis(grid, expand_dims(
        astype(broadcast_to(index, tuple(q.shape) + batch), dtypes.index_dtype(n)), -1),
        axis=-1), -1)
    nan_value = np.asarray(np.nan, flat.dtype)
    if ignore_nan:
        return where(_sum(astype(~nan, np.int32), -1) == 0, nan_value, result)
    return where(_any(nan, -1), nan_value, result)


def _shaped(result, q, a, axes, keepdims):
    if keepdims:
        kept = tuple(1 if d in axes else s for d, s in enumerate(a.shape))
        result = reshape(result, tuple(q.shape) + kept)
    return result


def quantile(a: ArrayLike, q: ArrayLike, axis: int | Sequence[int] | None = None, out: None = None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False, *,
             weights: ArrayLike | None = None, interpolation: Any = None) -> Array:
    """The q-th quantiles (q in [0, 1], any shape: the result's leading axes) over axis;
    NaN where a slice holds a NaN."""
    return _quantile("quantile", a, q, axis, out, overwrite_input, method, keepdims,
                     interpolation, False, weights)


def nanquantile(a: ArrayLike, q: ArrayLike, axis: int | Sequence[int] | None = None,
                out: None = None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: ArrayLike | None = None,
                interpolation: Any = None) -> Array:
    """quantile of the non-NaN values of each slice (NaN where there are none)."""
    return _quantile("nanquantile", a, q, axis, out, overwrite_input, method, keepdims,
                     interpolation, True, weights)


def percentile(a: ArrayLike, q: ArrayLike, axis: int | Sequence[int] | None = None,
               out: None = None, overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False, *, weights: ArrayLike | None = None,
               interpolation: Any = None) -> Array:
    return _quantile("percentile", a, _percent_of(a, q), axis, out, overwrite_input, method,
                     keepdims, interpolation, False, weights)


def nanpercentile(a: ArrayLike, q: ArrayLike, axis: int | Sequence[int] | None = None,
                  out: None = None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: ArrayLike | None = None,
                  interpolation: Any = None) -> Array:
    return _quantile("nanpercentile", a, _percent_of(a, q), axis, out, overwrite_input,
                     method, keepdims, interpolation, True, weights)


def _percent_of(a, q):
    """q / 100 (a Python or numpy q divided exactly as numpy does, in float64)."""
    if isinstance(q, (int, float)) and not isinstance(q, bool):
        return q / 100
    if not isinstance(q, (Array, Tracer)):
        return np.asarray(q, np.float64) / 100
    a, q = promote_inexact(a, q)
    return q / np.asarray(100, q.dtype)


def nanmedian(a: ArrayLike, axis: int | Sequence[int] | None = None, out: None = None,
              overwrite_input: bool = False, keepdims: bool = False) -> Array:
    return _quantile("nanmedian", a, 0.5, axis, out, overwrite_input, "linear", keepdims,
                     None, True)


def cov(m: ArrayLike, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: ArrayLike | None = None,
        aweights: ArrayLike | None = None, dtype: DTypeLike | None = None) -> Array:
    """The covariance matrix of the variables in the rows (columns with rowvar=False)
    of m (and y), numpy's weighting by fweights (frequencies) and aweights."""
    m = as_operand(m)
    if m.ndim > 2:
        raise ValueError(f"cov: m must have at most 2 dimensions, got shape {tuple(m.shape)}")
    if dtype is not None:
        m = astype(m, dtype)
    x = atleast_2d(promote_inexact(m)[0])
    if not rowvar and x.shape[0] != 1:
        x = transpose(x)
    if y is not None:
        y = atleast_2d(as_operand(y))
        if not rowvar and y.shape[0] != 1:
            y = transpose(y)
        x, y = promote_inexact(x, y)
        x = concatenate([x, y], 0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = astype(fweights, x.dtype)
    if aweights is not None:
        aw = astype(aweights, x.dtype)
        w = aw if w is None else w * aw
    if w is None:
        avg = mean(x, 1)
        fact: Any = np.asarray(max(n - ddof, 0), x.dtype)
    else:
        w_sum = _sum(w)
        avg = _sum(x * w, 1) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * _sum(w * aw) / w_sum
        fact = where(fact > 0, fact, np.zeros((), x.dtype))
    centered = x - expand_dims(avg, 1)
    weighted = centered if w is None else centered * w
    return squeeze(dot(centered, conj(transpose(weighted))) / fact)   # numpy conjugates


def corrcoef(x: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True,
             dtype: DTypeLike | None = None) -> Array:
    """Pearson correlation coefficients: cov normalized by the standard deviations,
    clipped to [-1, 1] as numpy does."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = sqrt(real(diagonal(c)))
    c = c / expand_dims(d, 1) / expand_dims(d, 0)
    if c.dtype.kind == "c":     # numpy clips each part
        from_parts = np.asarray(1j, c.dtype)
        return clip(real(c), -1, 1) + clip(imag(c), -1, 1) * from_parts
    return clip(c, -1, 1)
