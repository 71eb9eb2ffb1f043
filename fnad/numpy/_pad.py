"""numpy.pad: constant and edge padding from slices and broadcasts, reflect and wrap
by gathering along each axis."""
import numpy as np

from ..primitives import shape as S
from ._core import as_operand
from ._indexing import take
from ._shapes import broadcast_along, concatenate, take_range


def pad(array, pad_width, mode="constant", constant_values=0):
    array = as_operand(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
    if mode == "constant":
        value = np.asarray(constant_values, array.dtype)
        if value.ndim == 0:
            return S.pad(array, value, [(int(lo), int(hi), 0) for lo, hi in widths])
        values = np.broadcast_to(value, (array.ndim, 2))
        for ax, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, values)):
            config = [(0, 0, 0)] * array.ndim
            config[ax] = (int(lo), 0, 0)
            array = S.pad(array, v_lo, config)
            config[ax] = (0, int(hi), 0)
            array = S.pad(array, v_hi, config)
        return array
    if mode == "edge":
        out = array
        for ax, (lo, hi) in enumerate(widths):
            n = out.shape[ax]
            parts = [broadcast_along(take_range(out, 0, 1, ax), ax, int(lo)), out,
                     broadcast_along(take_range(out, n - 1, n, ax), ax, int(hi))]
            out = concatenate([p for p in parts if p.shape[ax]], ax)
        return out
    if mode in ("reflect", "wrap"):
        out = array
        for ax, (lo, hi) in enumerate(widths):
            n = out.shape[ax]
            if mode == "reflect":
                idx = np.concatenate([np.arange(lo, 0, -1), np.arange(n),
                                      np.arange(n - 2, n - 2 - hi, -1)])
                idx = np.abs(idx)
                period = 2 * (n - 1) if n > 1 else 1
                idx = idx % period
                idx = np.where(idx >= n, period - idx, idx)
            else:
                idx = np.arange(-lo, n + hi) % n
            out = take(out, idx, axis=ax)
        return out
    raise ValueError(f"fnad.numpy.pad: mode {mode!r} is not supported (supported: "
                     f"constant, edge, reflect, wrap)")
