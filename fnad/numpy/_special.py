"""numpy's special functions: composites of fnad/primitives/special.py's primitives."""
from ..primitives.special import bessel_i0e_p
from ._core import promote_inexact
from ._elementwise import abs, exp  # noqa: A004
from ..typing import Array, ArrayLike

__all__ = ["i0"]


def i0(x: ArrayLike) -> Array:
    """The modified Bessel function of the first kind, order 0: exp(|x|) i0e(x), so
    that the series never overflows before the exponential does."""
    x, = promote_inexact(x)
    return bessel_i0e_p.bind(x) * exp(abs(x))
