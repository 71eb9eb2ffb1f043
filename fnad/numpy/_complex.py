"""numpy's complex-number functions over the primitives: the parts of a complex value,
its conjugate and its angle. For real inputs they are what numpy gives: the value
itself, zeros, the value, 0 or pi."""
import numpy as np
from typing import Any

from ..array import Array
from ..core import Tracer
from ..primitives import elementwise as E
from ..primitives import reduce as R
from ..primitives import shape as S
from ._core import as_operand, promote_inexact
from ..typing import ArrayLike

__all__ = ["real", "imag", "conj", "conjugate", "angle", "iscomplexobj", "isrealobj",
           "iscomplex", "isreal", "arccosh", "acosh"]


def real(val: Any) -> Array:
    x = as_operand(val)
    return E.real_p.bind(x) if x.dtype.kind == "c" else x


def imag(val: Any) -> Array:
    x = as_operand(val)
    if x.dtype.kind == "c":
        return E.imag_p.bind(x)
    # zeros that broadcast like x, with no derivative to x (the imaginary part of a
    # real value is constant)
    return E.broadcast_to(np.zeros((), x.dtype), tuple(x.shape))


def conj(x: ArrayLike) -> Array:
    x = as_operand(x)
    return E.conj_p.bind(x) if x.dtype.kind == "c" else x


conjugate = conj


def angle(z: ArrayLike, deg: bool = False) -> Array:
    """The argument of z, in (-pi, pi] (degrees with deg=True): atan2(imag, real)."""
    z = as_operand(z)
    if z.dtype.kind != "c":
        z, = promote_inexact(z)
    re, im = real(z), imag(z)
    out = E.atan2_p.bind(im, re)
    return out * np.asarray(180 / np.pi, out.dtype) if deg else out


def iscomplexobj(x: ArrayLike) -> Any:
    dtype = x.dtype if isinstance(x, (Array, Tracer, np.ndarray, np.generic)) \
        else np.asarray(x).dtype
    return dtype.kind == "c"


def isrealobj(x: ArrayLike) -> Any:
    return not iscomplexobj(x)


def iscomplex(x: ArrayLike) -> Array:
    x = as_operand(x)
    return imag(x) != 0


def isreal(x: ArrayLike) -> Array:
    x = as_operand(x)
    return imag(x) == 0


def arccosh(x: ArrayLike) -> Array:
    if not (type(x) is Array or isinstance(x, Tracer)) or x.dtype.kind not in "fc":
        x, = promote_inexact(x)
    return E.arccosh_p.bind(x)


acosh = arccosh


def lexicographic_extremum(z, axes, largest):
    """numpy's max (largest) or min of complex z over `axes`: in lexicographic order
    (real parts first, then imaginary), or, where the group holds a NaN in either part,
    its first such element in row-major order. Composed of real reductions, which the
    primitives order; z's reduced axes are flattened into a last one first."""
    kept = [d for d in range(z.ndim) if d not in axes]
    n = 1
    for d in axes:
        n *= z.shape[d]
    z = S.reshape(S.transpose(z, kept + list(axes)), tuple(z.shape[d] for d in kept) + (n,))
    last = z.ndim - 1
    re, im = E.real_p.bind(z), E.imag_p.bind(z)
    extremum = R.reduce_max_p if largest else R.reduce_min_p
    best_re = extremum.bind(re, axes=(last,))
    ties = E.eq_p.bind(re, S.expand_dims(best_re, (last,)))
    beyond = np.asarray(-np.inf if largest else np.inf, re.dtype)
    best_im = extremum.bind(E.select_p.bind(ties, im, beyond), axes=(last,))
    best = E.complex_p.bind(best_re, best_im)
    nan = E.or_p.bind(E.ne_p.bind(re, re), E.ne_p.bind(im, im))
    count = R.cumsum(E.convert_element_type_p.bind(nan, new_dtype=np.dtype(np.int32)), last)
    first = E.and_p.bind(nan, E.eq_p.bind(count, np.ones((), np.int32)))
    first_nan = R.reduce_sum(E.select_p.bind(first, z, np.zeros((), z.dtype)), (last,))
    has_nan = R.reduce_max_p.bind(nan, axes=(last,))
    return E.select_p.bind(has_nan, first_nan, best)
