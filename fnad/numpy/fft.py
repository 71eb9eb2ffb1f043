"""numpy.fft over fnad's one fft primitive (fnad.primitives.fft), with JAX's
signatures and numpy's values; no math of its own.

Each transform converts its operand (integers and float16 compute in the complex
dtype of the float they promote to, as in JAX; nothing narrows), crops or zero-pads
each transformed axis to the length the transform reads, moves those axes to the end
for the primitive and back. The norm (None is "backward") is the primitive's param,
so numpy's scaling is applied as numpy applies it. hfft and ihfft are irfft and rfft
of the conjugate with the norm's direction swapped, as numpy defines them. Unlike
numpy, an axis named twice is an error (as in JAX) rather than transformed twice.
"""
import functools
from typing import Sequence

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from ..primitives import shape as S
from ..primitives.elementwise import conj_p
from ..primitives.fft import SWAPPED_NORM, FftType, fft_p
from ._core import as_operand, astype, normalize_axis
from ._creation import arange
from ._shapes import concatenate, roll
from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
           "ifftn", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]


# --------------------------------------------------------------------------- operands

def _float_dtype(dtype):
    """The float a real operand's transform computes in."""
    return dtypes.float32 if dtype == dtypes.float16 else dtypes.to_inexact(dtype)


def _operand(name, a, fft_type):
    a = as_operand(a)
    if fft_type is FftType.RFFT:
        if a.dtype.kind == "c":
            raise DTypeError(f"{name} takes a real operand, got {a.dtype} of shape "
                             f"{tuple(a.shape)}: use fft for complex input, or pass its "
                             f"real part")
        return astype(a, _float_dtype(a.dtype))
    if a.dtype.kind == "c":
        return a
    return astype(a, dtypes.complex_dtype(_float_dtype(a.dtype)))


@functools.lru_cache(maxsize=1024)
def _plan(name, shape, s, axes, fft_type):
    """What a transform of an operand of this shape does, remembered (eager calls
    repeat the same few): (fft_lengths, the pad config cropping or zero-padding each
    axis to the length the transform reads or None, the permutation moving the axes
    to the end or None, its inverse), or None when there is no axis to transform.
    numpy's rules: without s the axes' own lengths (for irfft the last one's
    2 (m - 1)); without axes the last len(s) axes, or all of them."""
    ndim = len(shape)
    if axes is None:
        axes = range(ndim) if s is None else range(-len(s), 0)
    axes = tuple(normalize_axis(int(ax), ndim, "axes") for ax in axes)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{name}: axes {axes} name an axis twice (for an operand of "
                         f"shape {shape})")
    if s is not None and len(s) != len(axes):
        raise ShapeError(f"{name}: s {s} and axes {axes} have different lengths")
    if not axes:
        return None
    defaults = [shape[ax] for ax in axes]
    if fft_type is FftType.IRFFT:
        defaults[-1] = 2 * (defaults[-1] - 1)
    # numpy 2: an entry -1 takes the axis' own length, None the 1-d transform's n.
    lengths = tuple(d if s is None or s[i] is None else
                    shape[ax] if int(s[i]) == -1 else int(s[i])
                    for i, (ax, d) in enumerate(zip(axes, defaults)))
    bad = [n for n in lengths if n < 1]
    if bad:
        what = "s" if s is not None else f"operand shape {shape}"
        raise ShapeError(f"{name}: invalid number of FFT data points {bad[0]} (from "
                         f"{what} along axes {axes}); each must be at least 1")
    read = lengths
    if fft_type is FftType.IRFFT:
        read = lengths[:-1] + (lengths[-1] // 2 + 1,)
    config = None
    if any(shape[ax] != n for ax, n in zip(axes, read)):
        config = [(0, 0, 0)] * ndim
        for ax, n in zip(axes, read):
            config[ax] = (0, n - shape[ax], 0)
        config = tuple(config)
    perm = inverse = None
    if axes != tuple(range(ndim - len(axes), ndim)):
        perm = tuple(d for d in range(ndim) if d not in axes) + axes
        inverse = tuple(int(i) for i in np.argsort(perm))
    return lengths, config, perm, inverse


def _norm(name, norm):
    if norm is None:
        return "backward"
    if norm not in SWAPPED_NORM:
        raise ValueError(f"{name}: norm must be None, 'backward', 'ortho' or 'forward', "
                         f"got {norm!r}")
    return norm


# --------------------------------------------------------------------------- the core

def _fftn(name, a, s, axes, norm, fft_type):
    norm = _norm(name, norm)
    a = _operand(name, a, fft_type)
    plan = _plan(name, tuple(a.shape), None if s is None else tuple(s),
                 None if axes is None else tuple(axes), fft_type)
    if plan is None:
        if fft_type in (FftType.RFFT, FftType.IRFFT):
            raise ShapeError(f"{name}: at least one axis to transform is needed")
        return a
    lengths, config, perm, inverse = plan
    if config is not None:
        a = S.pad(a, np.zeros((), a.dtype), config)
    if perm is not None:
        a = S.transpose(a, perm)
    y = fft_p.bind(a, fft_type=fft_type, fft_lengths=lengths, norm=norm)
    return y if inverse is None else S.transpose(y, inverse)


def _one_axis(n: int | None, axis: int) -> tuple[tuple[int] | None, tuple[int]]:
    return None if n is None else (n,), (axis,)


def fft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The discrete Fourier transform along `axis`, of length n (cropped or
    zero-padded; by default the axis' length)."""
    return _fftn("fft", a, *_one_axis(n, axis), norm, FftType.FFT)


def ifft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse of fft along `axis`."""
    return _fftn("ifft", a, *_one_axis(n, axis), norm, FftType.IFFT)


def rfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """fft of a real signal, keeping the n // 2 + 1 frequencies that are not the
    conjugates of others."""
    return _fftn("rfft", a, *_one_axis(n, axis), norm, FftType.RFFT)


def irfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The real signal of length n (by default 2 (m - 1)) whose rfft is `a`."""
    return _fftn("irfft", a, *_one_axis(n, axis), norm, FftType.IRFFT)


def fftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Array:
    """fft over several axes (all by default, or the last len(s)), of lengths s."""
    return _fftn("fftn", a, s, axes, norm, FftType.FFT)


def ifftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:
    """The inverse of fftn."""
    return _fftn("ifftn", a, s, axes, norm, FftType.IFFT)


def rfftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:
    """rfft along the last of `axes`, then fft along the others."""
    return _fftn("rfftn", a, s, axes, norm, FftType.RFFT)


def irfftn(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Array:
    """The inverse of rfftn (the last axis' length 2 (m - 1) unless s says)."""
    return _fftn("irfftn", a, s, axes, norm, FftType.IRFFT)


def fft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Array:
    """fftn over the last two axes."""
    return _fftn("fft2", a, s, axes, norm, FftType.FFT)


def ifft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Array:
    """ifftn over the last two axes."""
    return _fftn("ifft2", a, s, axes, norm, FftType.IFFT)


def rfft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Array:
    """rfftn over the last two axes."""
    return _fftn("rfft2", a, s, axes, norm, FftType.RFFT)


def irfft2(a: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Array:
    """irfftn over the last two axes."""
    return _fftn("irfft2", a, s, axes, norm, FftType.IRFFT)


def hfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The real spectrum of a signal with Hermitian symmetry, given its first half."""
    a = _operand("hfft", a, FftType.IRFFT)
    return _fftn("hfft", conj_p.bind(a), *_one_axis(n, axis),
                 SWAPPED_NORM[_norm("hfft", norm)], FftType.IRFFT)


def ihfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse of hfft: the first half of the Hermitian spectrum of a real signal."""
    return conj_p.bind(_fftn("ihfft", a, *_one_axis(n, axis),
                             SWAPPED_NORM[_norm("ihfft", norm)], FftType.RFFT))


# --------------------------------------------------------------------------- frequencies

def _frequencies(k, n, d, dtype):
    dtype = dtypes.default_float() if dtype is None else dtypes.check_supported(dtype)
    k = astype(k, dtype)
    if isinstance(d, (int, float)):
        return k * (1.0 / (n * d))      # numpy's own order of operations
    return k / (as_operand(d) * n)


def fftfreq(n: int, d: float = 1.0, *, dtype: DTypeLike | None = None) -> Array:
    """The sample frequencies of fft(x, n): [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    n = int(n)
    k = concatenate([arange(0, (n - 1) // 2 + 1), arange(-(n // 2), 0)])
    return _frequencies(k, n, d, dtype)


def rfftfreq(n: int, d: float = 1.0, *, dtype: DTypeLike | None = None) -> Array:
    """The sample frequencies of rfft(x, n): [0, 1, ..., n // 2] / (d n)."""
    n = int(n)
    return _frequencies(arange(0, n // 2 + 1), n, d, dtype)


def _shift(x, axes, sign):
    x = as_operand(x)
    axes = range(x.ndim) if axes is None else (axes,) if isinstance(axes, int) else axes
    for ax in axes:
        ax = normalize_axis(ax, x.ndim, "axes")
        x = roll(x, sign * (x.shape[ax] // 2), ax)
    return x


def fftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """The zero frequency moved to the middle of each axis (all axes by default)."""
    return _shift(x, axes, 1)


def ifftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """fftshift undone (they differ for odd lengths)."""
    return _shift(x, axes, -1)
