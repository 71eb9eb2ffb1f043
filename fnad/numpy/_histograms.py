"""Counting: bincount, digitize and histograms.

A value's bin is found by binary search among the edges (searchsorted), so a value on
an inner edge belongs to the bin on its right and one on the last edge to the last
bin, the rule numpy's results obey; counts are scatter-adds into the bins, so memory
grows with the data, not with data times bins. fnad ops throughout: they run under jit
and vmap. A result whose length depends on the data (bincount without length=) needs
concrete values, as in JAX."""
import builtins
import operator
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ConcretizationError, DTypeError
from ._core import as_operand, astype, promote, promote_inexact
from ._creation import linspace, zeros
from ._elementwise import maximum, where
from ._nonzero import concrete_value
from ._reductions import max as _max, min as _min, sum as _sum
from ._shapes import broadcast_to, flip, reshape, stack, take_range
from ._sorting import searchsorted
from ..typing import Array, ArrayLike

__all__ = ["bincount", "digitize", "histogram_bin_edges", "histogram", "histogram2d",
           "histogramdd"]


def bincount(x: ArrayLike, weights: ArrayLike | None = None, minlength: int = 0, *,
             length: Any = None) -> Array:
    """The number of times each value 0, 1, ... occurs in x (the sum of their weights
    with weights=); length= fixes the result's length (needed under jit: values at or
    past it are dropped), else it is max(x) + 1 or minlength, whichever is larger."""
    x = as_operand(x)
    if x.ndim != 1:
        raise ValueError(f"bincount: x must be 1-d, got shape {tuple(x.shape)}")
    if x.dtype.kind not in "iub":
        raise DTypeError(f"bincount: x must hold non-negative integers, got {x.dtype}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    value = concrete_value(x)
    if value is not None and value.size and value.min() < 0:
        raise ValueError("bincount: x must be non-negative, got a value of "
                         f"{value.min()}")
    if length is None:
        if value is None:
            raise ConcretizationError(
                f"bincount: the length of the result depends on the values of x (traced, "
                f"shape {tuple(x.shape)}); pass length= for a result of static shape")
        length = max(int(value.max()) + 1 if value.size else 0, minlength)
    length = operator.index(length)
    # out-of-range values are dropped; a traced negative one (unchecked) counts at 0,
    # as in JAX
    index = _clip_low(x)
    if weights is None:
        ones = broadcast_to(np.ones((), dtypes.default_int()), tuple(x.shape))
        return _scatter_counts(index, ones, length)
    weights = as_operand(weights)
    if tuple(weights.shape) != tuple(x.shape):
        raise ValueError(f"bincount: weights (shape {tuple(weights.shape)}) must have "
                         f"x's shape {tuple(x.shape)}")
    weights, = promote(weights)
    return _scatter_counts(index, weights, length)


def _clip_low(x):
    if x.dtype.kind == "b":
        return astype(x, np.int32)
    return maximum(x, np.zeros((), x.dtype)) if x.dtype.kind == "i" else x


def _scatter_counts(index, values, length):
    """sum of values per index 0..length-1; indices at or past length dropped."""
    return zeros(length, values.dtype).at[index].add(values, mode="drop")


def digitize(x: ArrayLike, bins: Any, right: bool = False, *, method: Any = None) -> Array:
    """The index of the bin each x falls in (numpy's digitize): bins increasing or
    decreasing; right=True closes the bins on the right instead of the left."""
    x, bins = as_operand(x), as_operand(bins)
    if bins.ndim != 1:
        raise ValueError(f"digitize: bins must be 1-d, got shape {tuple(bins.shape)}")
    x, bins = promote(x, bins)
    n = bins.shape[0]
    index = dtypes.index_dtype(n + 1)
    if n == 0:
        return astype(x * 0, index)
    increasing = reshape(take_range(bins, 0, 1, 0) <= take_range(bins, n - 1, n, 0), ())
    # numpy's rule through searchsorted (NaN sorts last: past every increasing bin,
    # before every decreasing one)
    side = "left" if right else "right"
    up = searchsorted(bins, x, side=side)
    down = n - searchsorted(flip(bins, 0), x, side=side)
    return astype(where(increasing, up, down), index)


def _edges(name, a, bins, range_, concrete_check=True):
    """The bin edges for the values a: bins edges as given, or bins equal bins over
    range (default: a's min to max, widened by 0.5 each way when they are equal),
    computed as numpy does (float64 linspace, then a's float type)."""
    if isinstance(bins, str):
        raise ValueError(f"{name}: bin rules by name ({bins!r}) are not supported; pass "
                         f"a number of bins or the edges")
    if np.ndim(bins) == 0 and not hasattr(bins, "shape") or (
            hasattr(bins, "shape") and bins.ndim == 0 and concrete_value(bins) is not None):
        count = operator.index(np.asarray(concrete_value(bins)).item()
                               if hasattr(bins, "shape") else bins)
        if count < 1:
            raise ValueError(f"{name}: the number of bins must be positive, got {count}")
        floats, = promote_inexact(a)
        if range_ is None:
            low, high = _min(a), _max(a)
            if concrete_check:
                values = concrete_value(low), concrete_value(high)
                if None not in values and not np.all(np.isfinite(values)):
                    raise ValueError(f"{name}: the range of the values, [{values[0]}, "
                                     f"{values[1]}], is not finite")
        else:
            low, high = range_
            if concrete_value(as_operand(low)) is not None and \
                    concrete_value(as_operand(high)) is not None and \
                    np.asarray(concrete_value(as_operand(low))) > \
                    np.asarray(concrete_value(as_operand(high))):
                raise ValueError(f"{name}: max must be larger than min in range {range_}")
        # numpy's linspace computes in the data's float for a range from the data,
        # in float64 for one from integers or given as Python numbers
        work = a.dtype if range_ is None and as_operand(low).dtype.kind == "f" \
            else np.dtype(np.float64)
        low, high = (np.asarray(v, work) if isinstance(v, (int, float, np.generic))
                     else astype(v, work) for v in (low, high))
        same = low == high
        low = where(same, low - 0.5, low)
        high = where(same, high + 0.5, high)
        return astype(linspace(low, high, count + 1), floats.dtype)
    edges = as_operand(bins)
    if edges.ndim != 1:
        raise ValueError(f"{name}: bins must be a number or 1-d edges, got shape "
                         f"{tuple(edges.shape)}")
    value = concrete_value(edges)
    if value is not None and np.any(np.diff(value) < 0):
        raise ValueError(f"{name}: bins must increase monotonically")
    return edges


def _bin_index(a, edges):
    """The bin of each value (edges increasing): edge_k <= a < edge_k+1, the last bin
    closed on the right; values outside (and NaN) get the index nbins (dropped)."""
    nb = edges.shape[0] - 1
    last = reshape(take_range(edges, nb, nb + 1, 0), ())
    first = reshape(take_range(edges, 0, 1, 0), ())
    index = searchsorted(edges, a, side="right") - 1
    index = where(a == last, np.asarray(nb - 1, index.dtype), index)
    outside = (index < 0) | (index >= nb) | ~(a >= first) | ~(a <= last)
    return where(outside, np.asarray(nb, index.dtype), index)


def histogram_bin_edges(a: ArrayLike, bins: int = 10, range: Any = None, weights: ArrayLike | None = None) -> Array:  # noqa: A002
    return _edges("histogram_bin_edges", reshape(as_operand(a), (-1,)), bins, range)


def histogram(a: ArrayLike, bins: int = 10, range: Any = None, weights: ArrayLike | None = None, density: Any = None) -> Any:  # noqa: A002
    """(counts, edges). Counts are the default int (the weights' sums with weights=,
    densities with density=True)."""
    a = reshape(as_operand(a), (-1,))
    edges = _edges("histogram", a, bins, range)
    a, edges_c = promote(a, edges)
    index = _bin_index(a, edges_c)
    nb = edges.shape[0] - 1
    if weights is None:
        ones = broadcast_to(np.ones((), dtypes.default_int()), tuple(a.shape))
        counts = _scatter_counts(index, ones, nb)
        if not density:
            return counts, edges
        counts = astype(counts, edges.dtype)
    else:
        w = reshape(as_operand(weights), (-1,))
        if w.shape[0] != a.shape[0]:
            raise ValueError(f"histogram: weights (shape {tuple(as_operand(weights).shape)}) "
                             f"must have a's shape")
        w, = promote(w)
        counts = _scatter_counts(index, w, nb)
    if density:
        counts, widths = promote_inexact(counts, _widths(edges))
        counts = counts / _sum(counts) / widths
    return counts, edges


def _widths(edges):
    n = edges.shape[0]
    return take_range(edges, 1, n, 0) - take_range(edges, 0, n - 1, 0)


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: ArrayLike | None = None, density: Any = None) -> Any:  # noqa: A002
    """(counts, [edges per dimension]) of the points sample (n, d) or a sequence of d
    coordinate arrays; counts are floats, as numpy's."""
    if isinstance(sample, (list, tuple)):
        sample = stack([reshape(as_operand(s), (-1,)) for s in sample], 1)
    sample = as_operand(sample)
    if sample.ndim == 1:
        sample = reshape(sample, (-1, 1))
    if sample.ndim != 2:
        raise ValueError(f"histogramdd: sample must be (n, d), got shape "
                         f"{tuple(sample.shape)}")
    d = sample.shape[1]
    bins = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    ranges = list(range) if range is not None else [None] * d
    if len(bins) != d or len(ranges) != d:
        raise ValueError(f"histogramdd: bins and range need one entry per dimension ({d})")
    sample, = promote_inexact(sample)
    edges, flat, nbins = [], None, []
    for k in builtins.range(d):
        column = reshape(take_range(sample, k, k + 1, 1), (-1,))
        e = _edges("histogramdd", column, bins[k], ranges[k])
        edges.append(e)
        nb = e.shape[0] - 1
        index = astype(_bin_index(column, promote(e, column)[0]), np.int64)
        # one flat bin index, row-major; a point outside any dimension is dropped
        flat = index if flat is None else where((flat >= _prod(nbins)) | (index >= nb),
                                                np.asarray(_prod(nbins) * nb, np.int64),
                                                flat * nb + index)
        nbins.append(nb)
    total = _prod(nbins)
    flat = where(flat >= total, np.asarray(total, np.int64), flat)
    w = broadcast_to(np.ones((), sample.dtype), (sample.shape[0],)) if weights is None \
        else astype(reshape(as_operand(weights), (-1,)), sample.dtype)
    counts = reshape(_scatter_counts(flat, w, total), tuple(nbins))
    if density:
        volume = None
        for k, e in enumerate(edges):
            shape = [1] * d
            shape[k] = e.shape[0] - 1
            w = reshape(astype(_widths(e), counts.dtype), shape)
            volume = w if volume is None else volume * w
        counts = counts / _sum(counts) / volume
    return counts, edges


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


def histogram2d(x: ArrayLike, y: ArrayLike, bins: int = 10, range: Any = None, weights: ArrayLike | None = None, density: Any = None) -> Any:  # noqa: A002
    """(counts, x edges, y edges)."""
    if isinstance(bins, (list, tuple)) and len(bins) == 2:
        bins = list(bins)
    elif not isinstance(bins, (int, np.integer)) and np.ndim(bins) == 1:
        bins = [bins, bins]
    counts, (ex, ey) = histogramdd([x, y], bins, range, weights, density)
    return counts, ex, ey
