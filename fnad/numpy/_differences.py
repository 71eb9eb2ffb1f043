"""Finite differences and their inverses: diff, ediff1d, gradient, trapezoid, unwrap,
and linear interpolation (interp). Slices and elementwise arithmetic throughout, in
numpy's order of operations, so values agree with numpy's to the rounding."""
import numpy as np
from typing import Any, Sequence

from ..core import Tracer
from ..array import Array
from ._core import as_operand, astype, normalize_axis, promote, promote_inexact
from ._elementwise import abs, clip, isnan, remainder, where
from ._indexing import take
from ._nonzero import concrete_value
from ._reductions import cumsum, sum as _sum
from ._shapes import broadcast_to, concatenate, ravel, reshape, take_range
from ._sorting import argsort, searchsorted
from ..typing import Array, ArrayLike

__all__ = ["diff", "ediff1d", "gradient", "trapezoid", "unwrap", "interp"]


def _slice(a, start, stop, axis):
    """a[start:stop] along axis, Python's negative indices included."""
    start, stop, _ = slice(start, stop).indices(a.shape[axis])
    return take_range(a, start, max(stop, start), axis)


def _along(a, n, axis, value):
    """value broadcast to a's shape with n along axis (diff's prepend/append)."""
    value = as_operand(value)
    shape = list(a.shape)
    shape[axis] = n
    if value.ndim == 0:
        return broadcast_to(value, shape)
    return value


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Array:
    """The n-th difference along axis (booleans: a != neighbour, as numpy's)."""
    a = as_operand(a)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    if a.ndim == 0:
        raise ValueError("diff: needs an array of at least one dimension, got a 0-d one")
    axis = normalize_axis(axis, a.ndim)
    parts = []
    if prepend is not None:
        parts.append(_along(a, 1, axis, prepend))
    parts.append(a)
    if append is not None:
        parts.append(_along(a, 1, axis, append))
    if len(parts) > 1:
        a = concatenate(parts, axis)
    for _ in range(n):
        later, earlier = _slice(a, 1, a.shape[axis], axis), _slice(a, 0, -1, axis)
        a = later != earlier if a.dtype.kind == "b" else later - earlier
    return a


def ediff1d(ary: ArrayLike, to_end: Any = None, to_begin: Any = None) -> Array:
    """Differences of the flattened array, with to_begin and to_end (in its dtype)."""
    ary = ravel(as_operand(ary))
    parts = []
    if to_begin is not None:
        parts.append(astype(ravel(as_operand(to_begin)), ary.dtype))
    parts.append(diff(ary) if ary.shape[0] else ary)
    if to_end is not None:
        parts.append(astype(ravel(as_operand(to_end)), ary.dtype))
    return concatenate(parts, 0) if len(parts) > 1 else parts[0]


def _spacing(f, axis, spacing):
    """A scalar step, or per-sample coordinates along axis (uniform ones, when known,
    become their step, as numpy does)."""
    h = spacing if isinstance(spacing, (Array, Tracer)) else np.asarray(spacing)
    if h.ndim == 0:
        return h, None
    if h.ndim != 1 or h.shape[0] != f.shape[axis]:
        raise ValueError(f"gradient: coordinates along axis {axis} must be 1-d with "
                         f"{f.shape[axis]} entries, got shape {tuple(h.shape)}")
    value = concrete_value(h)
    if value is not None:
        steps = np.diff(value)
        if steps.size and np.all(steps == steps[0]):
            return steps[0], None
    return None, diff(as_operand(h))


def _gradient_1(f, axis, spacing, edge_order):
    n = f.shape[axis]
    if n < edge_order + 1:
        raise ValueError(f"gradient: the shape along axis {axis} ({n}) must be at least "
                         f"edge_order + 1 = {edge_order + 1}")
    h, dx = _spacing(f, axis, spacing)

    def s(i, j=None):
        return _slice(f, i, n if j is None else j, axis)
    if dx is None:
        h = astype(h, f.dtype) if isinstance(h, (Array, Tracer)) else np.asarray(h, f.dtype)
        inner = (s(2) - s(0, -2)) / (2.0 * h)
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) / h
            last = (s(n - 1) - s(n - 2, n - 1)) / h
        else:
            first = -(1.5 * s(0, 1) - 2.0 * s(1, 2) + 0.5 * s(2, 3)) / h
            last = (1.5 * s(n - 1) - 2.0 * s(n - 2, n - 1) + 0.5 * s(n - 3, n - 2)) / h
        return concatenate([first, inner, last], axis)
    dx = astype(dx, f.dtype)
    view = [1] * f.ndim
    view[axis] = -1

    def d(i, j):
        return reshape(take_range(dx, i, j, 0), view)
    dx1, dx2 = d(0, n - 2), d(1, n - 1)
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    inner = a * s(0, -2) + b * s(1, -1) + c * s(2)
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / d(0, 1)
        last = (s(n - 1) - s(n - 2, n - 1)) / d(n - 2, n - 1)
    else:
        p, q = d(0, 1), d(1, 2)
        first = (-(2.0 * p + q) / (p * (p + q)) * s(0, 1) + (p + q) / (p * q) * s(1, 2)
                 - p / (q * (p + q)) * s(2, 3))
        p, q = d(n - 3, n - 2), d(n - 2, n - 1)
        last = (q / (p * (p + q)) * s(n - 3, n - 2) - (q + p) / (p * q) * s(n - 2, n - 1)
                + (2.0 * q + p) / (q * (p + q)) * s(n - 1))
    return concatenate([first, inner, last], axis)


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: Any = None) -> Any:
    """Second-order central differences inside, first- or second-order one-sided ones
    at the ends (edge_order 1 or 2); varargs: one step or coordinate array for every
    axis, or one for all. One array for one axis, else a list."""
    f, = promote_inexact(f)
    edge_order = 1 if edge_order is None else edge_order
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    axes = list(range(f.ndim)) if axis is None else (
        [axis] if isinstance(axis, (int, np.integer)) else list(axis))
    axes = [normalize_axis(a, f.ndim) for a in axes]
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"gradient: expected 0, 1 or {len(axes)} spacings, got "
                        f"{len(varargs)}")
    out = [_gradient_1(f, a, h, edge_order) for a, h in zip(axes, spacings)]
    return out[0] if len(out) == 1 else out


def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: ArrayLike = 1.0, axis: int = -1
             ) -> Array:
    """The integral of y by the trapezoidal rule, over coordinates x or step dx."""
    y, = promote_inexact(y)
    axis = normalize_axis(axis, y.ndim)
    n = y.shape[axis]
    if x is None:
        d = dx
    else:
        x = as_operand(x)
        d = diff(x, axis=-1 if x.ndim == 1 else axis)
        if x.ndim == 1:
            view = [1] * y.ndim
            view[axis] = -1
            d = reshape(d, view)
        y, d = promote_inexact(y, d)
    later, earlier = _slice(y, 1, n, axis), _slice(y, 0, -1, axis)
    return _sum(d * (later + earlier) / 2.0, axis)


def unwrap(p: ArrayLike, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Array:
    """p with jumps larger than discont (default period / 2) along axis replaced by
    their equivalents modulo period, numpy's rule (a jump of exactly period / 2 up
    stays up)."""
    p, = promote_inexact(p)
    axis = normalize_axis(axis, p.ndim)
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    high = np.asarray(period / 2, p.dtype)
    low = -high
    per = np.asarray(period, p.dtype)
    ddmod = remainder(dd - low, per) + low
    ddmod = where((ddmod == low) & (dd > 0), high, ddmod)
    correction = ddmod - dd
    correction = where(abs(dd) < discont, np.zeros((), p.dtype), correction)
    head = _slice(p, 0, 1, axis)
    return concatenate([head, _slice(p, 1, p.shape[axis], axis)
                        + cumsum(correction, axis=axis)], axis)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Array:
    """Piecewise-linear interpolation of the points (xp, fp), xp increasing; left/right
    (default fp's ends) outside them; with period, x and xp are taken modulo period."""
    # x stays as given until promoted: a Python float made a float32 Array first
    # would lose its digits before meeting a float64 xp
    xp, fp = as_operand(xp), as_operand(fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape[0] != fp.shape[0]:
        raise ValueError(f"interp: xp and fp must be 1-d of one length, got shapes "
                         f"{tuple(xp.shape)} and {tuple(fp.shape)}")
    if xp.shape[0] == 0:
        raise ValueError("interp: xp and fp are empty")
    fp, = promote_inexact(fp)
    x, xp, fp = promote(x, xp, fp)
    if x.dtype.kind != "f":
        x, xp, fp = promote_inexact(x, xp, fp)
    if period is not None:
        if period == 0:
            raise ValueError("interp: period must be non-zero")
        per = astype(abs(as_operand(period)), x.dtype)
        x, xp = remainder(x, per), remainder(xp, per)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        n = xp.shape[0]
        xp = concatenate([take_range(xp, n - 1, n, 0) - per, xp,
                          take_range(xp, 0, 1, 0) + per], 0)
        fp = concatenate([take_range(fp, n - 1, n, 0), fp, take_range(fp, 0, 1, 0)], 0)
        left = right = None
    n = xp.shape[0]
    def at(a, i):
        return reshape(take_range(a, i, i + 1, 0), ())
    first, last, f_first, f_last = at(xp, 0), at(xp, n - 1), at(fp, 0), at(fp, n - 1)
    if n == 1:
        inside = broadcast_to(f_first, x.shape)
    else:
        j = clip(searchsorted(xp, x, side="right") - 1, 0, n - 2)
        x0, x1, f0, f1 = take(xp, j), take(xp, j + 1), take(fp, j), take(fp, j + 1)
        slope = (f1 - f0) / (x1 - x0)
        inside = slope * (x - x0) + f0
        # a non-finite slope (repeated xp): numpy tries from the right end, then
        # takes f0 where both ends agree
        retry = slope * (x - x1) + f1
        inside = where(isnan(inside), retry, inside)
        inside = where(isnan(inside) & (f0 == f1), f0, inside)
        inside = where(x == last, f_last, inside)
    low = f_first if left is None else astype(left, fp.dtype)
    high = f_last if right is None else astype(right, fp.dtype)
    out = where(x < first, low, where(x > last, high, inside))
    return out
