"""numpy.pad, one axis at a time as numpy does (so corners see the earlier axes'
padding): constant and empty padding by the pad primitive, edge, statistic and
linear-ramp padding from slices and broadcasts, reflect/symmetric/wrap by gathering
along the axis, and a callable mode on each 1-d slice (through apply_along_axis)."""
import numpy as np
from typing import Any

from . import _elementwise as E
from . import _reductions as R
from ..dtypes import kind_of as dtype_kind
from ..primitives import shape as S
from ._core import as_operand, astype
from ._functional import apply_along_axis
from ._indexing import take
from ._shapes import broadcast_along, concatenate, flip, take_range
from ._sorting import median
from ..typing import Array

_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum",
          "reflect", "symmetric", "wrap", "empty")
_STATS = {"maximum": R.max, "minimum": R.min, "mean": R.mean, "median": median}
_OPTIONS = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
            "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
            **{name: {"stat_length"} for name in _STATS}}


def _pairs(value, ndim, name, dtype=np.int64):
    """numpy's per-axis (before, after) broadcast of a pad argument."""
    try:
        return np.broadcast_to(np.asarray(value, dtype=dtype), (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: {name}={value!r} cannot be broadcast to one (before, "
                         f"after) pair per axis of {ndim}") from None


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Array:
    """numpy.pad with all of numpy's modes (and a callable one, called on each 1-d
    slice as func(vector, (before, after), axis, kwargs) returning the padded
    vector)."""
    array = as_operand(array)
    widths = _pairs(pad_width, array.ndim, "pad_width")
    if (widths < 0).any():
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}")
    if callable(mode):
        return _pad_with_function(array, widths, mode, kwargs)
    if mode not in _MODES:
        raise ValueError(f"pad: unknown mode {mode!r}; expected one of {', '.join(_MODES)}"
                         f" or a function")
    unknown = set(kwargs) - _OPTIONS.get(mode, set())
    if unknown:
        raise ValueError(f"pad: mode {mode!r} takes no argument(s) {sorted(unknown)}")
    if mode in ("constant", "empty"):
        return _constant(array, widths, kwargs.get("constant_values", 0))
    if array.size == 0 and widths.any():
        empty_axes = [ax for ax, n in enumerate(array.shape) if n == 0 and widths[ax].any()]
        if empty_axes:
            raise ValueError(f"pad: cannot extend the empty axis {empty_axes[0]} with mode "
                             f"{mode!r}; only 'constant' and 'empty' can")
    out = array
    for ax, (lo, hi) in enumerate(widths):
        lo, hi = int(lo), int(hi)
        if not lo and not hi:
            continue
        if mode == "edge":
            out = _extend(out, ax, take_range(out, 0, 1, ax), lo,
                          take_range(out, out.shape[ax] - 1, out.shape[ax], ax), hi)
        elif mode in _STATS:
            out = _statistic(out, ax, lo, hi, mode, kwargs.get("stat_length"))
        elif mode == "linear_ramp":
            ends = _pairs(kwargs.get("end_values", 0), array.ndim, "end_values",
                          np.complex128 if dtype_kind(out.dtype) == "c" else np.float64)[ax]
            out = _linear_ramp(out, ax, lo, hi, ends)
        else:
            out = _mirror(out, ax, lo, hi, mode, kwargs.get("reflect_type", "even"))
    return out


def _constant(array, widths, constant_values):
    values = np.asarray(constant_values)
    if values.ndim == 0:
        return S.pad(array, values.astype(array.dtype), [(int(lo), int(hi), 0)
                                                        for lo, hi in widths])
    values = _pairs(values, array.ndim, "constant_values", values.dtype)
    for ax, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, values)):
        config = [(0, 0, 0)] * array.ndim
        config[ax] = (int(lo), 0, 0)
        array = S.pad(array, np.asarray(v_lo).astype(array.dtype), config)
        config[ax] = (0, int(hi), 0)
        array = S.pad(array, np.asarray(v_hi).astype(array.dtype), config)
    return array


def _extend(out, ax, before, lo, after, hi):
    """out with `before` (length 1 along ax) repeated lo times in front and `after` hi
    times behind."""
    parts = [broadcast_along(before, ax, lo), out, broadcast_along(after, ax, hi)]
    return concatenate([p for p in parts if p.shape[ax]], ax)


def _statistic(out, ax, lo, hi, mode, stat_length):
    n = out.shape[ax]
    lengths = [n, n] if stat_length is None else \
        [int(v) for v in _pairs(stat_length, out.ndim, "stat_length")[ax]]
    if min(lengths) <= 0:
        raise ValueError(f"pad: stat_length {stat_length!r} yields no value to pad with")
    lengths = [min(v, n) for v in lengths]
    stat = _STATS[mode]

    def of(chunk):
        value = stat(chunk, axis=ax, keepdims=True)
        if dtype_kind(out.dtype) not in "fc" and mode in ("mean", "median"):
            value = E.round(value)      # numpy rounds a mean of integers half to even
        return astype(value, out.dtype)
    return _extend(out, ax, of(take_range(out, 0, lengths[0], ax)), lo,
                   of(take_range(out, n - lengths[1], n, ax)), hi)


def _linear_ramp(out, ax, lo, hi, ends):
    """Ramps from each end value to the edge (the edge itself excluded), computed in
    floating point; integers round towards -inf, as numpy's linspace does."""
    n = out.shape[ax]
    work = out.dtype if dtype_kind(out.dtype) in "fc" else np.dtype(np.float64)
    edges = [astype(take_range(out, i, i + 1, ax), work) for i in (0, n - 1)]
    parts = []
    for edge, end, width, front in ((edges[0], ends[0], lo, True),
                                    (edges[1], ends[1], hi, False)):
        if not width:
            continue
        shape = [1] * out.ndim
        shape[ax] = width
        fraction = (np.arange(width, dtype=work) / width).reshape(shape)
        end = np.asarray(end, work)
        ramp = end + (edge - end) * fraction
        if not front:
            ramp = flip(ramp, ax)
        if dtype_kind(out.dtype) not in "fc":
            ramp = E.floor(ramp)
        parts.append((front, astype(ramp, out.dtype)))
    before = [p for front, p in parts if front]
    after = [p for front, p in parts if not front]
    return concatenate(before + [out] + after, ax)


def _mirror_index(lo, n, hi, mode):
    """For reflect, symmetric and wrap: the source position of each output position."""
    positions = np.arange(-lo, n + hi)
    if mode == "wrap":
        return positions % n
    if mode == "reflect":
        if n == 1:
            return np.zeros_like(positions)
        period = 2 * (n - 1)
        folded = positions % period
        return np.where(folded >= n, period - folded, folded)
    period = 2 * n                       # symmetric: the edge is repeated
    folded = positions % period
    return np.where(folded >= n, period - 1 - folded, folded)


def _mirror(out, ax, lo, hi, mode, reflect_type):
    n = out.shape[ax]
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    if reflect_type == "odd" and mode != "wrap":
        # odd reflection is mirrored through the edge value: 2 * edge - mirror image
        span = n - 1 if mode == "reflect" else n
        if max(lo, hi) > span:
            raise ValueError(f"pad: reflect_type='odd' with a pad wider than the axis "
                             f"({max(lo, hi)} > {span} along axis {ax}) is not supported")
        even = take(out, _mirror_index(lo, n, hi, mode), axis=ax)
        first, last = take_range(out, 0, 1, ax), take_range(out, n - 1, n, ax)
        before = take_range(even, 0, lo, ax)
        after = take_range(even, lo + n, lo + n + hi, ax)
        parts = [2 * first - before, out, 2 * last - after]
        return concatenate([astype(p, out.dtype) for p in parts if p.shape[ax]], ax)
    return take(out, _mirror_index(lo, n, hi, mode), axis=ax)


def _pad_with_function(array, widths, func, kwargs):
    """numpy's callable mode: zero-pad, then let func fill each 1-d slice along each
    axis in turn (func returns the new vector; fnad arrays cannot be written)."""
    out = _constant(array, widths, 0)
    for ax, (lo, hi) in enumerate(widths):
        out = apply_along_axis(lambda v: func(v, (int(lo), int(hi)), ax, kwargs), ax, out)
    return out
