"""The discrete Fourier transform: one primitive, `fft`, over the trailing axes.

Its params are the transform's kind (`fft_type`, an FftType), `fft_lengths`, the
lengths of the trailing axes it transforms, as lax.fft has them, and numpy's `norm`.
Moving the axes to the end and cropping or zero-padding them to n is
fnad.numpy.fft's job. With N the product of the lengths, k.j the sum over the
transformed axes of k_a j_a / n_a, and norm "backward" (lax.fft's):

    FFT    complex -> complex   y_k = sum_j x_j exp(-2 pi i k.j)
    IFFT   complex -> complex   y_j = 1/N sum_k x_k exp(+2 pi i k.j)
    RFFT   real    -> complex   FFT of x, keeping the last axis' first n//2 + 1 entries
    IRFFT  complex -> real      the real signal whose RFFT is x (the imaginary parts of
                                the zero and Nyquist frequencies are not read)

"ortho" scales both directions by 1/sqrt(N) instead, "forward" puts 1/N on FFT and
RFFT and none on the inverses. The scale is a param, not a multiplication by fnad,
so pocketfft applies the real factor itself: a complex multiply by (c + 0j) would
turn inf into nan (inf * 0) and lose the sign of -0.0 parts, where numpy does not.

Every kind is linear over the reals, so a JVP applies the same transform to the
tangent. A VJP is the transpose under the bilinear pairing <ct, t> = Re(ct t), with
no conjugation (JAX's convention, stated in fnad.primitives.elementwise):

    FFT, IFFT   the DFT matrices are symmetric: the transpose is the same transform,
                with the same norm.
    RFFT        y = slice(FFT(x + 0i)): ct_x = Re(FFT(zero-pad(ct))) on the last axis.
    IRFFT       y_j = c Re(sum_k w_k x_k exp(+2 pi i k.j)), where c is the norm's scale
                (1/N for "backward") and w_k = 2 for the frequencies that stand for a
                conjugate pair and 1 for the zero (and the Nyquist, n even) frequency of
                the last axis; pairing with a real ct gives ct_x_k = w_k c conj(RFFT(ct))_k,
                c being RFFT's scale under the swapped norm.

The cpu kernel is numpy's pocketfft (np.fft), which keeps complex64 single-precision;
under jit the compiled program calls it between its fused kernels.
"""
import enum
import functools

import numpy as np

from ..abstract import ShapedArray
from ..dtypes import complex_dtype, real_dtype
from ..errors import DTypeError, ShapeError
from ._rules import linear
from .elementwise import mul_p, real_p, conj_p
from .shape import pad
from .structural import moveaxis_to


class FftType(enum.IntEnum):
    """The kind of transform (lax.FftType)."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3

    def __repr__(self):     # as printed programs show it
        return f"FftType.{self.name}"


# The norm whose forward scale is another's inverse scale (numpy's hfft uses it too).
SWAPPED_NORM = {"backward": "forward", "ortho": "ortho", "forward": "backward"}

_REAL_INPUTS = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX_INPUTS = (np.dtype(np.complex64), np.dtype(np.complex128))


def _fft_shape(x, fft_type, fft_lengths, norm):
    shape, dtype = _out_type(tuple(x.shape), x.dtype, fft_type, fft_lengths, norm)
    return ShapedArray(shape, dtype)


@functools.lru_cache(maxsize=1024)
def _out_type(shape, dtype, fft_type, fft_lengths, norm):
    """(shape, dtype) of the result; remembered, as eager calls repeat the same few."""
    k = len(fft_lengths)
    operand = f"an operand {dtype}{list(shape)}"
    if not isinstance(fft_type, FftType):
        raise TypeError(f"fft: fft_type must be an FftType, got {fft_type!r}")
    if norm not in SWAPPED_NORM:
        raise ValueError(f"fft: norm must be 'backward', 'ortho' or 'forward', got "
                         f"{norm!r}")
    if k == 0 or any(not isinstance(n, int) or n < 1 for n in fft_lengths):
        raise ShapeError(f"fft: fft_lengths must be one or more positive ints, got "
                         f"{fft_lengths!r}")
    if len(shape) < k:
        raise ShapeError(f"fft: {k} fft_lengths {tuple(fft_lengths)} for an operand of "
                         f"rank {len(shape)} ({operand})")
    wanted = _REAL_INPUTS if fft_type is FftType.RFFT else _COMPLEX_INPUTS
    if dtype not in wanted:
        raise DTypeError(f"fft: {fft_type.name} takes {' or '.join(map(str, wanted))} "
                         f"operands, got {operand}")
    lead, trailing = shape[:-k], shape[-k:]
    expected = tuple(fft_lengths)
    if fft_type is FftType.IRFFT:
        expected = expected[:-1] + (fft_lengths[-1] // 2 + 1,)
    if trailing != expected:
        raise ShapeError(f"fft: {fft_type.name} with fft_lengths {tuple(fft_lengths)} "
                         f"needs trailing axes {expected}, got {operand}")
    if fft_type is FftType.RFFT:
        return lead + expected[:-1] + (fft_lengths[-1] // 2 + 1,), complex_dtype(dtype)
    if fft_type is FftType.IRFFT:
        return lead + tuple(fft_lengths), real_dtype(dtype)
    return shape, dtype


_NUMPY = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn,
          FftType.RFFT: np.fft.rfftn, FftType.IRFFT: np.fft.irfftn}
# One axis: numpy's 1-d functions skip the n-d bookkeeping (a few microseconds).
_NUMPY_1D = {FftType.FFT: np.fft.fft, FftType.IFFT: np.fft.ifft,
             FftType.RFFT: np.fft.rfft, FftType.IRFFT: np.fft.irfft}


def _fft_impl(x, fft_type, fft_lengths, norm):
    # The shape rule first: given s, numpy would crop or pad a mismatched operand
    # without a word.
    shape, dtype = _out_type(x.shape, x.dtype, fft_type, fft_lengths, norm)
    if x.size == 0:     # an empty batch: nothing to transform
        return np.zeros(shape, dtype)
    # The lengths only matter for IRFFT (the last axis' output length is not its
    # input's).
    if len(fft_lengths) == 1:
        y = _NUMPY_1D[fft_type](x, n=fft_lengths[0], norm=norm)
    else:
        y = _NUMPY[fft_type](x, s=fft_lengths, norm=norm,
                             axes=tuple(range(x.ndim - len(fft_lengths), x.ndim)))
    return y if y.dtype == dtype else y.astype(dtype)


def _fft_transpose(g, x, fft_type, fft_lengths, norm):
    if fft_type in (FftType.FFT, FftType.IFFT):
        return fft(g, fft_type, fft_lengths, norm)
    if fft_type is FftType.RFFT:
        n, m = fft_lengths[-1], g.shape[-1]
        config = ((0, 0, 0),) * (g.ndim - 1) + ((0, n - m, 0),)
        full = pad(g, np.zeros((), g.dtype), config)
        return real_p.bind(fft(full, FftType.FFT, fft_lengths, norm))
    # IRFFT: g is real.
    n = fft_lengths[-1]
    weights = np.full(n // 2 + 1, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    spectrum = fft(g, FftType.RFFT, fft_lengths, SWAPPED_NORM[norm])
    return conj_p.bind(mul_p.bind(spectrum, weights.astype(spectrum.dtype)))


def _fft_batch(args, batch_dims, **params):
    (x,), (d,) = args, batch_dims
    # A batch axis among the transformed trailing ones moves to the front.
    if d >= x.ndim - len(params["fft_lengths"]):
        x, d = moveaxis_to(x, d, 0), 0
    return fft_p.bind(x, **params), d


fft_p = linear("fft", _fft_impl, _fft_shape, _fft_transpose, batch=_fft_batch)


def fft(x, fft_type, fft_lengths, norm="backward"):
    """The `fft_type` transform of x's trailing len(fft_lengths) axes; lax.fft is the
    "backward" norm."""
    return fft_p.bind(x, fft_type=FftType(fft_type),
                      fft_lengths=tuple(int(n) for n in fft_lengths), norm=norm)
