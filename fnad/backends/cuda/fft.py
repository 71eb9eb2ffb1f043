"""The FFT of arrays on a GPU, through the host.

numba.cuda has no FFT of its own (cuFFT is reached through other packages fnad does
not depend on), so the operand is copied to the host, transformed by the primitive's
cpu kernel (numpy's pocketfft, so both devices give the same numbers) and copied
back: correct, at the price of two transfers per call."""
from . import runtime
from .registry import implements
from ...primitives.fft import fft_p


@implements(fft_p, complex_ok=True)
def _fft(x, **params):
    return runtime.to_device(fft_p.impl(x.copy_to_host(), **params))
