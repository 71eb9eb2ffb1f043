"""Discrete convolution and correlation (the convolution primitive in one spatial
dimension; complex values by windows of the padded signal dotted with the kernel), and
the classic tapering windows, built from fnad's elementwise functions."""
import operator
from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array
from ..errors import ShapeError
from ..primitives import shape as S
from ..primitives.conv import conv
from ..primitives.dot import dot_general
from ._complex import conj
from ._core import promote_inexact
from ._elementwise import cos, sqrt, where
from ._indexing import take
from ._shapes import reshape, take_range
from ._special import i0
from ..typing import ArrayLike

__all__ = ["convolve", "correlate", "bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _full_convolution(a, v):
    """sum_j a[k - j] v[j] for every k of the full overlap (length n + m - 1): the
    convolution primitive (a cross-correlation, so with v reversed) for real values,
    windows gathered and dotted with v for complex ones."""
    n, m = a.shape[0], v.shape[0]
    if a.dtype.kind != "c":
        out = conv(reshape(a, (1, 1, n)), reshape(S.rev(v, (0,)), (1, 1, m)), (1,),
                   ((m - 1, m - 1),), (1,), (1,), 1)
        return reshape(out, (n + m - 1,))
    zero = np.zeros((), a.dtype)
    padded = S.pad(a, zero, [(m - 1, m - 1, 0)])
    windows = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    gathered = take(padded, Array(windows.astype(dtypes.index_dtype(n + 2 * m))))
    return dot_general(gathered, S.rev(v, (0,)), (((1,), (0,)), ((), ())))


def _mode_slice(full, n, m, mode, name):
    if mode == "full":
        return full
    if mode == "same":
        length = max(n, m)
        start = (min(n, m) - 1) // 2
    elif mode == "valid":
        length = max(n, m) - min(n, m) + 1
        start = min(n, m) - 1
    else:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    return take_range(full, start, start + length, 0)


def _operands(name, a, v):
    # JAX's rule: the inexact promotion (integers convolve in float32)
    a, v = promote_inexact(a, v)
    if a.ndim != 1 or v.ndim != 1:
        raise ShapeError(f"{name}: a and v must be 1-d, got shapes {tuple(a.shape)} and "
                         f"{tuple(v.shape)}")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{name}: a and v must not be empty")
    return a, v


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Array:
    """The discrete linear convolution of two 1-d sequences."""
    a, v = _operands("convolve", a, v)
    n, m = a.shape[0], v.shape[0]
    # convolution commutes: the longer operand is the one windowed, as numpy does
    full = _full_convolution(a, v) if n >= m else _full_convolution(v, a)
    return _mode_slice(full, n, m, mode, "convolve")


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Array:
    """sum_n a[n + k] conj(v[n]) (numpy's correlate: convolution with v reversed and
    conjugated)."""
    a, v = _operands("correlate", a, v)
    n, m = a.shape[0], v.shape[0]
    v = conj(S.rev(v, (0,)))
    full = _full_convolution(a, v) if n >= m else _full_convolution(v, a)
    if n < m:
        # numpy correlates the longer with the shorter and reverses: its 'same' window
        # is then counted from the other end of the full result
        return S.rev(_mode_slice(S.rev(full, (0,)), n, m, mode, "correlate"), (0,))
    return _mode_slice(full, n, m, mode, "correlate")


def _window_points(name, M):
    M = operator.index(M)
    if M < 1:
        return M, None
    return M, Array(np.arange(1 - M, M, 2, dtype=dtypes.default_float()))


def _cosine_window(name, M, coefficients):
    M, n = _window_points(name, M)
    if n is None:
        return Array(np.zeros(0, dtypes.default_float()))
    if M == 1:
        return Array(np.ones(1, dtypes.default_float()))
    out = coefficients[0]
    for k, c in enumerate(coefficients[1:], 1):
        out = out + c * cos(np.pi * k * n / (M - 1))
    return out


def bartlett(M: Any) -> Array:
    """The triangular window of M points (numpy's: zero at both ends)."""
    M, n = _window_points("bartlett", M)
    if n is None:
        return Array(np.zeros(0, dtypes.default_float()))
    if M == 1:
        return Array(np.ones(1, dtypes.default_float()))
    return where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1))


def blackman(M: Any) -> Array:
    return _cosine_window("blackman", M, (0.42, 0.5, 0.08))


def hamming(M: Any) -> Array:
    return _cosine_window("hamming", M, (0.54, 0.46))


def hanning(M: Any) -> Array:
    return _cosine_window("hanning", M, (0.5, 0.5))


def kaiser(M: Any, beta: Any) -> Array:
    """The Kaiser window: i0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / i0(beta), n = 0..M-1
    (differentiable in beta)."""
    M = operator.index(M)
    if M < 1:
        return Array(np.zeros(0, dtypes.default_float()))
    beta, = promote_inexact(beta)
    if M == 1:
        return Array(np.ones(1, beta.dtype))
    n = Array(np.arange(M, dtype=beta.dtype))
    alpha = (M - 1) / 2.0
    ratio = (n - alpha) / alpha
    return i0(beta * sqrt(1 - ratio * ratio)) / i0(beta)
