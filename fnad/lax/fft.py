"""lax.fft: the fft primitive with JAX's signature. fft_type is an FftType or its
name ("fft", "ifft", "rfft", "irfft", any case); fft_lengths are the lengths of the
trailing axes transformed."""
from typing import Sequence

from ..primitives.fft import FftType, fft as _fft_primitive

from ..typing import Array, ArrayLike

__all__ = ["fft", "FftType"]


def fft(x: ArrayLike, fft_type: FftType | str, fft_lengths: Sequence[int]) -> Array:
    if isinstance(fft_type, str):
        try:
            fft_type = FftType[fft_type.upper()]
        except KeyError:
            raise ValueError(f"lax.fft: unknown fft_type {fft_type!r}; expected one of "
                             f"{', '.join(t.name.lower() for t in FftType)}") from None
    elif not isinstance(fft_type, FftType):
        raise TypeError(f"lax.fft: fft_type must be an FftType or its name, got "
                        f"{fft_type!r}")
    return _fft_primitive(x, fft_type, tuple(fft_lengths))
