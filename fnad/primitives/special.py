"""Special-function primitives: a table of derivatives, as elementwise.py's.

The kernels are fnad/kernels/cpu/special.py's (float64 inside, one rounding to the
operand type); the scalar expressions call its `*_scalar` functions, which generated
kernels import as `special`. Every operand is floating point, of one dtype, with
numpy broadcasting. Derivatives that no closed form gives (with respect to a
polygamma order, a zeta exponent, the parameters of betainc) raise GradientError
instead of being dropped.
"""
import math

import numpy as np

from ..errors import GradientError
from ..kernels.cpu import special as kernels
from ._rules import add_tangents, broadcasting
from .elementwise import (
    unary, exp_p, log_p, sign_p, select_p, max_p, sin_p, cos_p, abs_p, sqrt_p, sum_to_shape,
    broadcast_to, elementwise_primitive)

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _scalar(name, arity):
    return f"special.{name}_scalar(" + ", ".join(f"{{{i}}}" for i in range(arity)) + ")"


# --------------------------------------------------------------------------- one operand

# lgamma' = digamma
lgamma_p = unary("lgamma", kernels.lgamma, lambda x, y: digamma_p.bind(x),
                 _scalar("lgamma", 1))
# Gamma' = Gamma digamma
gamma_p = unary("gamma", kernels.gamma, lambda x, y: y * digamma_p.bind(x), _scalar("gamma", 1))
# digamma' = polygamma(1, .)
digamma_p = unary("digamma", kernels.digamma,
                  lambda x, y: polygamma_p.bind(np.ones((), x.dtype), x),
                  _scalar("digamma", 1))
# erfc' = -2/sqrt(pi) exp(-x^2)
erfc_p = unary("erfc", kernels.erfc, lambda x, y: -_TWO_OVER_SQRT_PI * exp_p.bind(-x * x),
               _scalar("erfc", 1))
# The inverse's derivative is 1 / erf'(erf_inv(x)) = sqrt(pi)/2 exp(erf_inv(x)^2).
erf_inv_p = unary("erf_inv", kernels.erf_inv,
                  lambda x, y: (1 / _TWO_OVER_SQRT_PI) * exp_p.bind(y * y),
                  _scalar("erf_inv", 1))
# ndtri' = 1 / phi(ndtri) = sqrt(2 pi) exp(ndtri^2 / 2)
ndtri_p = unary("ndtri", kernels.ndtri,
                lambda x, y: math.sqrt(2 * math.pi) * exp_p.bind(0.5 * y * y),
                _scalar("ndtri", 1))
# ---- Derivatives that are a difference of nearly equal terms for large |x| (erfcx'
# = 2x erfcx - 2/sqrt(pi), i0e' = i1e - i0e, ...) lose x or x^2 ulps there; past a
# threshold they come from their asymptotic series instead.

def _horner(coefficients, u):
    total = coefficients[-1] + 0 * u
    for c in reversed(coefficients[:-1]):
        total = total * u + c
    return total


def _double_factorials(n, alternate):
    """(2k+1)!! for k < n, with alternating signs if asked."""
    out, value = [], 1.0
    for k in range(n):
        out.append(-value if alternate and k % 2 else value)
        value *= 2 * k + 3
    return out


def _bessel_ie_derivative_series(nu, n=24):
    """c_k with (d/dx) exp(-x) I_nu(x) = -(2 pi)^(-1/2) x^(-3/2) sum_k c_k x^-k, x > 0:
    the term by term derivative of the asymptotic series of exp(-x) I_nu(x)."""
    coefficients, a = [], 1.0
    for k in range(n):
        coefficients.append(a * (k + 0.5))
        a *= ((2 * k + 1) ** 2 - 4 * nu * nu) / (8 * (k + 1))
    return coefficients


_ERFCX_TAIL = _double_factorials(16, alternate=True)
_DAWSN_TAIL = _double_factorials(16, alternate=False)
_I0E_TAIL = _bessel_ie_derivative_series(0)
_I1E_TAIL = _bessel_ie_derivative_series(1)


def _far(x, threshold, direct, far, symmetric=True):
    """direct(x) below `threshold` in |x| (in x if not symmetric), far(|x|) past it; each
    branch sees only arguments it is good for, so the one select drops stays finite."""
    magnitude = abs_p.bind(x) if symmetric else x
    near = magnitude < threshold
    return select_p.bind(near, direct(select_p.bind(near, x, 0 * x)),
                         far(select_p.bind(near, threshold + 0 * x, magnitude)))


def _erfcx_deriv(x, y):
    # erfcx' = 2x erfcx - 2/sqrt(pi); for x >= 10: -(1 / (sqrt(pi) x^2)) sum_k
    # (-1)^k (2k+1)!! / (2x^2)^k
    def far(a):
        return -_horner(_ERFCX_TAIL, 1 / (2 * a * a)) / (math.sqrt(math.pi) * a * a)
    return _far(x, 10.0, lambda x: 2 * x * erfcx_p.bind(x) - _TWO_OVER_SQRT_PI, far,
                symmetric=False)


def _i0e_deriv(x, y):
    # i0e(x) = exp(-|x|) I0(x), I0' = I1: i0e' = i1e - sign(x) i0e
    def far(a):
        return -_horner(_I0E_TAIL, 1 / a) / (math.sqrt(2 * math.pi) * a * sqrt_p.bind(a))
    return sign_p.bind(x) * _far(
        x, 30.0, lambda x: sign_p.bind(x) * bessel_i1e_p.bind(x) - bessel_i0e_p.bind(x), far)


def _i1e_deriv(x, y):
    # I1' = I0 - I1 / x: i1e' = i0e - i1e (sign(x) + 1/x), whose limit at 0 is 1/2.
    def direct(x):
        zero = x == 0
        safe = select_p.bind(zero, 1 + 0 * x, x)
        general = bessel_i0e_p.bind(x) - bessel_i1e_p.bind(x) * (sign_p.bind(x) + 1 / safe)
        return select_p.bind(zero, 0.5 + 0 * x, general)

    def far(a):
        return -_horner(_I1E_TAIL, 1 / a) / (math.sqrt(2 * math.pi) * a * sqrt_p.bind(a))
    return _far(x, 30.0, direct, far)


def _dawsn_deriv(x, y):
    # F' = 1 - 2x F; for |x| >= 10: -(1 / (2x^2)) sum_k (2k+1)!! / (2x^2)^k
    def far(a):
        return -_horner(_DAWSN_TAIL, 1 / (2 * a * a)) / (2 * a * a)
    return _far(x, 10.0, lambda x: 1 - 2 * x * dawsn_p.bind(x), far)


erfcx_p = unary("erfcx", kernels.erfcx, _erfcx_deriv, _scalar("erfcx", 1))
bessel_i0e_p = unary("bessel_i0e", kernels.bessel_i0e, _i0e_deriv, _scalar("bessel_i0e", 1))
bessel_i1e_p = unary("bessel_i1e", kernels.bessel_i1e, _i1e_deriv, _scalar("bessel_i1e", 1))
dawsn_p = unary("dawsn", kernels.dawsn, _dawsn_deriv, _scalar("dawsn", 1))


def _si_deriv(x, y):
    # Si' = sin x / x, 1 at 0
    zero = x == 0
    safe = select_p.bind(zero, 1 + 0 * x, x)
    return select_p.bind(zero, 1 + 0 * x, sin_p.bind(safe) / safe)


si_p = unary("si", kernels.si, _si_deriv, _scalar("si", 1))
# Ci' = cos x / x
ci_p = unary("ci", kernels.ci, lambda x, y: cos_p.bind(x) / x, _scalar("ci", 1))
# S' = sin(pi x^2 / 2), C' = cos(pi x^2 / 2)
fresnel_s_p = unary("fresnel_s", kernels.fresnel_s,
                    lambda x, y: sin_p.bind((0.5 * math.pi) * x * x), _scalar("fresnel_s", 1))
fresnel_c_p = unary("fresnel_c", kernels.fresnel_c,
                    lambda x, y: cos_p.bind((0.5 * math.pi) * x * x), _scalar("fresnel_c", 1))
# E1' = -e^-x / x, Ei' = e^x / x
exp1_p = unary("exp1", kernels.exp1, lambda x, y: -exp_p.bind(-x) / x, _scalar("exp1", 1))
expi_p = unary("expi", kernels.expi, lambda x, y: exp_p.bind(x) / x, _scalar("expi", 1))


def _spence_deriv(x, y):
    # d/dx int_1^x log t / (1 - t) dt = log x / (1 - x), whose limit at x = 1 is -1
    one = x == 1
    safe = select_p.bind(one, 2 + 0 * x, x)
    return select_p.bind(one, -1 + 0 * x, log_p.bind(safe) / (1 - safe))


spence_p = unary("spence", kernels.spence, _spence_deriv, _scalar("spence", 1))


# --------------------------------------------------------------------------- several operands

def special_primitive(name, impl, partials, arity):
    """An elementwise primitive of `arity` float operands of one dtype. partials[i] is
    d out / d operand i as a function (*operands, out), or a string saying why that
    derivative is not available, raised as a GradientError when it is asked for."""
    def partial(i, args, out):
        rule = partials[i]
        if isinstance(rule, str):
            raise GradientError(f"{name}: no derivative with respect to operand {i}: {rule}")
        return rule(*args, out)

    def jvp(primals, tangents):
        out = prim.bind(*primals)
        t = None
        for i, tangent in enumerate(tangents):
            if tangent is not None:
                t = add_tangents(t, tangent * partial(i, primals, out))
        return out, None if t is None else broadcast_to(t, out.shape)

    def vjp(g, out, *args, needed=None):
        needed = needed or (True,) * arity
        return tuple(sum_to_shape(g * partial(i, args, out), args[i].shape) if needed[i]
                     else None for i in range(arity))

    prim = elementwise_primitive(
        name, abstract_eval=broadcasting(name, kinds="f"), impl=impl, jvp=jvp, vjp=vjp,
        scalar=_scalar(name, arity), selective_vjp=True)
    return prim


_ORDER = "the order is an integer"
# polygamma(n, x)' = polygamma(n + 1, x)
polygamma_p = special_primitive(
    "polygamma", kernels.polygamma,
    (_ORDER, lambda n, x, out: polygamma_p.bind(n + 1, x)), 2)
# d/dq zeta(s, q) = -s zeta(s + 1, q)
zeta_p = special_primitive(
    "zeta", kernels.zeta,
    ("the derivative in the exponent is not implemented (as in JAX)",
     lambda s, q, out: -s * zeta_p.bind(s + 1, q)), 2)


def _expn_deriv(n, x, out):
    # E_n' = -E_(n-1) for n >= 1; E_0 = e^-x / x has E_0' = -E_0 (1 + 1/x). The order
    # passed down is kept >= 0 so that the branch select drops stays finite.
    lower = expn_p.bind(max_p.bind(n - 1, 0 * n), x)
    return select_p.bind(n >= 1, -lower, -out * (1 + 1 / x))


expn_p = special_primitive("expn", kernels.expn, (_ORDER, _expn_deriv), 2)


# The derivatives in x are their own primitives, computed through the same prefactor
# as the functions (accurate for large a and b, where a composite of log-gammas loses
# digits), with closed-form derivatives of their own.
# d/dx x^(a-1) e^-x / Gamma(a) = density ((a-1)/x - 1); d/da = density (log x - psi(a))
igamma_dx_p = special_primitive(
    "igamma_dx", kernels.igamma_dx,
    (lambda a, x, out: out * (log_p.bind(x) - digamma_p.bind(a)),
     lambda a, x, out: out * ((a - 1) / x - 1)), 2)
# The derivative in a has no closed form: igamma_grad_a computes it by carrying d/da
# through the series and the continued fraction (kernels/cpu/special.py).
igamma_p = special_primitive(
    "igamma", kernels.igamma,
    (lambda a, x, out: igamma_grad_a_p.bind(a, x), lambda a, x, out: igamma_dx_p.bind(a, x)), 2)
igammac_p = special_primitive(
    "igammac", kernels.igammac,
    (lambda a, x, out: -igamma_grad_a_p.bind(a, x),
     lambda a, x, out: -igamma_dx_p.bind(a, x)), 2)
# d/dx dP/da = d/da (x^(a-1) e^-x / Gamma(a)) = (log x - digamma(a)) x^(a-1) e^-x / Gamma(a)
igamma_grad_a_p = special_primitive(
    "igamma_grad_a", kernels.igamma_grad_a,
    ("the second derivative in a is not implemented",
     lambda a, x, out: (log_p.bind(x) - digamma_p.bind(a)) * igamma_dx_p.bind(a, x)), 2)
# d/dx x^(a-1) (1-x)^(b-1) / B(a, b) = density ((a-1)/x - (b-1)/(1-x)); in a and b the
# log-derivative of the beta function enters
betainc_dx_p = special_primitive(
    "betainc_dx", kernels.betainc_dx,
    (lambda a, b, x, out: out * (log_p.bind(x) - digamma_p.bind(a) + digamma_p.bind(a + b)),
     lambda a, b, x, out: out * (log_p.bind(1 - x) - digamma_p.bind(b) + digamma_p.bind(a + b)),
     lambda a, b, x, out: out * ((a - 1) / x - (b - 1) / (1 - x))), 3)


# The entropy of Poisson(mu) and its derivative: sums over the counts that carry mass
poisson_entropy_grad_p = special_primitive(
    "poisson_entropy_grad", kernels.poisson_entropy_grad,
    ("the second derivative of the Poisson entropy is not implemented",), 1)
poisson_entropy_p = special_primitive(
    "poisson_entropy", kernels.poisson_entropy,
    (lambda mu, out: poisson_entropy_grad_p.bind(mu),), 1)


_BETA_PARAMETER = "only the derivative in x is implemented (as in JAX)"
betainc_p = special_primitive(
    "betainc", kernels.betainc,
    (_BETA_PARAMETER, _BETA_PARAMETER, lambda a, b, x, out: betainc_dx_p.bind(a, b, x)), 3)
