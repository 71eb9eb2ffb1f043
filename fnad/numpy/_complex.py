"""numpy's complex-number functions over the primitives: the parts of a complex value,
its conjugate and its angle. For real inputs they are what numpy gives: the value
itself, zeros, the value, 0 or pi."""
import numpy as np

from ..array import Array
from ..core import Tracer
from ..primitives import elementwise as E
from ._core import as_operand, promote_inexact

__all__ = ["real", "imag", "conj", "conjugate", "angle", "iscomplexobj", "isrealobj",
           "iscomplex", "isreal", "arccosh", "acosh"]


def real(val):
    x = as_operand(val)
    return E.real_p.bind(x) if x.dtype.kind == "c" else x


def imag(val):
    x = as_operand(val)
    if x.dtype.kind == "c":
        return E.imag_p.bind(x)
    # zeros that broadcast like x, with no derivative to x (the imaginary part of a
    # real value is constant)
    return E.broadcast_to(np.zeros((), x.dtype), tuple(x.shape))


def conj(x):
    x = as_operand(x)
    return E.conj_p.bind(x) if x.dtype.kind == "c" else x


conjugate = conj


def angle(z, deg=False):
    """The argument of z, in (-pi, pi] (degrees with deg=True): atan2(imag, real)."""
    z = as_operand(z)
    if z.dtype.kind != "c":
        z, = promote_inexact(z)
    re, im = real(z), imag(z)
    out = E.atan2_p.bind(im, re)
    return out * np.asarray(180 / np.pi, out.dtype) if deg else out


def iscomplexobj(x):
    dtype = x.dtype if isinstance(x, (Array, Tracer, np.ndarray, np.generic)) \
        else np.asarray(x).dtype
    return dtype.kind == "c"


def isrealobj(x):
    return not iscomplexobj(x)


def iscomplex(x):
    x = as_operand(x)
    return imag(x) != 0


def isreal(x):
    x = as_operand(x)
    return imag(x) == 0


def arccosh(x):
    if not (type(x) is Array or isinstance(x, Tracer)) or x.dtype.kind not in "fc":
        x, = promote_inexact(x)
    return E.arccosh_p.bind(x)


acosh = arccosh
