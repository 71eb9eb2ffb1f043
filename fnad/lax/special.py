"""lax's special functions: each binds one primitive of fnad/primitives/special.py,
with JAX's lax names and signatures (no dtype promotion: operands share one float
dtype)."""
from ..numpy._core import as_operand
from ..primitives import special as _S
from ..typing import Array, ArrayLike
from .operators import binary_function as _binary, unary_function as _unary


lgamma, digamma, erf_inv, erfc = map(_unary, (_S.lgamma_p, _S.digamma_p, _S.erf_inv_p,
                                              _S.erfc_p))
bessel_i0e, bessel_i1e = map(_unary, (_S.bessel_i0e_p, _S.bessel_i1e_p))
polygamma, zeta = map(_binary, (_S.polygamma_p, _S.zeta_p))
igamma, igammac, igamma_grad_a = map(_binary, (_S.igamma_p, _S.igammac_p, _S.igamma_grad_a_p))


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Array:
    """The regularized incomplete beta function I_x(a, b)."""
    return _S.betainc_p.bind(as_operand(a), as_operand(b), as_operand(x))


__all__ = ["lgamma", "digamma", "erf_inv", "erfc", "bessel_i0e", "bessel_i1e", "polygamma",
           "zeta", "igamma", "igammac", "igamma_grad_a", "betainc"]
