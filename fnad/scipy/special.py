"""scipy.special functions as composites of fnad primitives (JAX's signatures, scipy's
values: poles, NaN and domain edges included). The special functions themselves are
primitives of fnad/primitives/special.py; what is here is the algebra around them."""
import math
from typing import Any, Sequence, cast
from fractions import Fraction

import numpy as np

from .. import numpy as fnp
from ..lax import stop_gradient
from ..primitives import special as S
from ..primitives.elementwise import erf_p, logistic_p
from ..numpy._core import promote_inexact
from ..numpy._core import unary_inexact as _unary_inexact
from ..numpy._special import i0
from ..typing import Array, ArrayLike

_SQRT_HALF = math.sqrt(0.5)


# --------------------------------------------------------------------------- gamma family

gammaln = _unary_inexact(S.lgamma_p, "gammaln", doc="""log |Gamma(x)|.""")


def gammasgn(x: ArrayLike) -> Array:
    """The sign of Gamma(x): +1 for x > 0 and +0, -1 for -0, (-1)^ceil(-x) between the
    poles, NaN at the poles and -inf."""
    x, = promote_inexact(x)
    floor = fnp.floor(x)
    between = 1 - 2 * fnp.remainder(floor, 2)
    negative = fnp.where(floor == x, np.nan, between)
    return fnp.where(x > 0, 1.0, fnp.where(x == 0, fnp.copysign(1.0, x), negative)).astype(
        x.dtype)


gamma = _unary_inexact(S.gamma_p, "gamma", doc="The gamma function (scipy.special.gamma).")


def loggamma(x: ArrayLike) -> Array:
    """log Gamma(x) of a real x: NaN where Gamma is negative or undefined (x < 0), as
    scipy's for real input."""
    x, = promote_inexact(x)
    return fnp.where(x < 0, np.nan, gammaln(x)).astype(x.dtype)


digamma = _unary_inexact(S.digamma_p, "digamma", doc="""The digamma function d/dx log
Gamma(x) (scipy.special.digamma; psi is the same function).""")


psi = digamma


def polygamma(n: ArrayLike, x: ArrayLike) -> Array:
    """The n-th derivative of digamma; n a nonnegative integer (NaN otherwise)."""
    n, x = promote_inexact(n, x)
    return S.polygamma_p.bind(n, x)


def multigammaln(a: ArrayLike, d: int) -> Array:
    """The log of the multivariate gamma function of dimension d (a static int)."""
    d = _static_int(d, "multigammaln", "d")
    a, = promote_inexact(a)
    total: Any = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(d):
        total = total + gammaln(a - j / 2)
    return total


def _static_int(value, name, arg):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {arg} must be a Python int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name}: {arg} must be at least 1, got {value}")
    return int(value)


def betaln(a: ArrayLike, b: ArrayLike) -> Array:
    """log |B(a, b)|: lgamma of the smaller argument plus _log_gamma_ratio of the larger,
    so that two huge log-gammas never cancel (betaln(1e10, 1) keeps all its digits)."""
    a, b = promote_inexact(a, b)
    big, small = fnp.maximum(a, b), fnp.minimum(a, b)
    return gammaln(small) + _log_gamma_ratio(big, small)


def _log_gamma_ratio(a, b):
    """lgamma(a) - lgamma(a + b). Where a and a + b pass 15 it comes from Stirling's
    series, the log of a / (a + b) taken as log1p: (a - 1/2) log(a / (a + b))
    - b log(a + b) + b + c(a) - c(a + b), c the series' correction."""
    direct = gammaln(a) - gammaln(a + b)
    large = (a >= 15) & (a + b >= 15)
    # each branch sees only arguments it is good for, so the other's derivative is finite
    a_safe = fnp.where(large, a, 15.0).astype(a.dtype)
    b_safe = fnp.where(large, b, 1.0).astype(b.dtype)
    total = a_safe + b_safe
    stirling = ((a_safe - 0.5) * -fnp.log1p(b_safe / a_safe) - b_safe * fnp.log(total)
                + b_safe + _stirling_correction(a_safe) - _stirling_correction(total))
    return fnp.where(large, stirling, direct)


def _stirling_correction(x):
    # lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2): its asymptotic series, the
    # first omitted term below 3e-16 for x >= 15.
    inv = 1 / x
    inv2 = inv * inv
    return inv * (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680
                                                                         - inv2 / 1188))))


def beta(a: ArrayLike, b: ArrayLike) -> Array:
    """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), as scipy.special.beta
    (computed from betaln, so large arguments do not overflow in between)."""
    a, b = promote_inexact(a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * fnp.exp(betaln(a, b))


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Array:
    """The regularized incomplete beta function I_x(a, b)."""
    a, b, x = promote_inexact(a, b, x)
    return S.betainc_p.bind(a, b, x)


def gammainc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = promote_inexact(a, x)
    return S.igamma_p.bind(a, x)


def gammaincc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = promote_inexact(a, x)
    return S.igammac_p.bind(a, x)


def factorial(n: ArrayLike, exact: bool = False) -> Array:
    """Gamma(n + 1), 0 for n < 0 (scipy's, for real n)."""
    if exact:
        raise ValueError("factorial: exact=True is not supported (as in JAX); the result "
                         "is a float")
    n, = promote_inexact(n)
    return fnp.where(n < 0, 0.0, gamma(n + 1)).astype(n.dtype)


def comb(N: ArrayLike, k: ArrayLike, *, exact: bool = False, repetition: bool = False) -> Array:
    """The number of combinations of N things taken k at a time, through log-gammas; 0
    outside 0 <= k <= N."""
    if exact:
        raise ValueError("comb: exact=True is not supported (as in JAX); the result is a "
                         "float")
    N, k = promote_inexact(N, k)
    if repetition:
        N = N + k - 1
    inside = (k >= 0) & (N >= 0) & (k <= N)
    value = fnp.exp(gammaln(N + 1) - gammaln(k + 1) - gammaln(N - k + 1))
    return fnp.where(inside, value, 0.0).astype(N.dtype)


def poch(z: ArrayLike, m: ArrayLike) -> Array:
    """The rising factorial Gamma(z + m) / Gamma(z)."""
    z, m = promote_inexact(z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    value = sign * fnp.exp(-_log_gamma_ratio(z, m))
    return fnp.where(m == 0, 1.0, value).astype(z.dtype)


def zeta(x: ArrayLike, q: ArrayLike | None = None) -> Array:
    """The Hurwitz zeta function sum_k (q + k)^-x; Riemann's when q is None."""
    if q is None:
        x, = promote_inexact(x)
        q = fnp.ones((), x.dtype)
    x, q = promote_inexact(x, q)
    return S.zeta_p.bind(x, q)


# --------------------------------------------------------------------------- error function

erf = _unary_inexact(erf_p, "erf", doc="The error function (scipy.special.erf).")


erfc = _unary_inexact(S.erfc_p, "erfc", doc="""The complementary error function 1 - erf(x),
accurate where erf(x) is near 1 (scipy.special.erfc).""")


erfinv = _unary_inexact(S.erf_inv_p, "erfinv", doc="""The inverse error function on (-1, 1)
(scipy.special.erfinv).""")


erfcx = _unary_inexact(S.erfcx_p, "erfcx",
                       doc="""exp(x^2) erfc(x), finite where erfc underflows.""")


dawsn = _unary_inexact(S.dawsn_p, "dawsn",
                       doc="""Dawson's integral exp(-x^2) int_0^x exp(t^2) dt.""")


def sici(x: ArrayLike) -> tuple[Array, Array]:
    """(Si(x), Ci(x)): the sine integral int_0^x sin t / t dt and the cosine integral
    gamma + log|x| + int_0^|x| (cos t - 1) / t dt."""
    x, = promote_inexact(x)
    return S.si_p.bind(x), S.ci_p.bind(x)


def fresnel(x: ArrayLike) -> tuple[Array, Array]:
    """(S(x), C(x)) = int_0^x (sin, cos)(pi t^2 / 2) dt."""
    x, = promote_inexact(x)
    return S.fresnel_s_p.bind(x), S.fresnel_c_p.bind(x)


def ndtr(x: ArrayLike) -> Array:
    """The standard normal CDF, 0.5 erfc(-x / sqrt 2): accurate in the left tail."""
    x, = promote_inexact(x)
    return 0.5 * erfc(-_SQRT_HALF * x)


def ndtri(p: ArrayLike) -> Array:
    """The standard normal quantile, inverse of ndtr."""
    p, = promote_inexact(p)
    return S.ndtri_p.bind(p)


def log_ndtr(x: ArrayLike, series_order: int = 3) -> Array:
    """log ndtr(x): log1p(-ndtr(-x)) on the right, log(erfcx(-x/sqrt 2) / 2) - x^2/2 on
    the left, so that neither tail underflows. series_order is checked as JAX checks it
    (an int in [0, 30]), but no asymptotic series is used: erfcx is exact to an ulp or
    two, more accurate than any order."""
    if isinstance(series_order, bool) or not isinstance(series_order, (int, np.integer)) \
            or not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be an int in [0, 30], got "
                         f"{series_order!r}")
    x, = promote_inexact(x)
    left = x < -1
    # each branch sees only arguments it is good for, so the other's derivative is finite
    xl = fnp.where(left, x, -1.0).astype(x.dtype)
    xr = fnp.where(left, 0.0, x).astype(x.dtype)
    left_value = fnp.log(0.5 * erfcx(-_SQRT_HALF * xl)) - 0.5 * xl * xl
    right_value = fnp.log1p(-0.5 * erfc(_SQRT_HALF * xr))
    return fnp.where(left, left_value, right_value)


# --------------------------------------------------------------------------- logs and entropies

def xlogy(x: ArrayLike, y: ArrayLike) -> Array:
    """x log y, +0 where x = 0 (JAX's: also for a NaN y, where scipy gives NaN). Its
    derivative in x is log y also at x = 0."""
    x, y = promote_inexact(x, y)
    return _times_log(x, y, fnp.log, (y > 0) & (y < np.inf), 1.0)


def xlog1py(x: ArrayLike, y: ArrayLike) -> Array:
    """x log1p(y), +0 where x = 0."""
    x, y = promote_inexact(x, y)
    return _times_log(x, y, fnp.log1p, (y > -1) & (y < np.inf), 0.0)


def _times_log(x, y, log, finite, neutral):
    # Where x = 0 the value is (x + 1) L - L with L the log: +0 for either zero, and
    # derivative L in x. Where the log would be infinite or NaN there, y is replaced by
    # the argument whose log is 0.
    zero = x == 0
    y_safe = fnp.where(zero & ~finite, neutral, y).astype(y.dtype)
    logs = log(y_safe)
    return fnp.where(zero, (x + 1) * logs - logs, x * logs)


def entr(x: ArrayLike) -> Array:
    """-x log x; 0 at 0, -inf for x < 0."""
    x, = promote_inexact(x)
    positive = x > 0
    safe = fnp.where(positive, x, 1.0).astype(x.dtype)
    edge = fnp.where(x == 0, 0.0, -np.inf).astype(x.dtype)
    return fnp.where(positive | (x != x), -x * fnp.log(safe), edge)


def rel_entr(p: ArrayLike, q: ArrayLike) -> Array:
    """p log(p / q) for p, q > 0; 0 where p = 0 <= q; inf otherwise."""
    p, q = promote_inexact(p, q)
    both = (p > 0) & (q > 0)
    safe_p = fnp.where(both, p, 1.0).astype(p.dtype)
    safe_q = fnp.where(both, q, 1.0).astype(q.dtype)
    value = safe_p * fnp.log(safe_p / safe_q)
    edge = fnp.where((p == 0) & (q >= 0), 0.0, np.inf).astype(p.dtype)
    nan = (p != p) | (q != q)
    return fnp.where(nan, p + q, fnp.where(both, value, edge))


def kl_div(p: ArrayLike, q: ArrayLike) -> Array:
    """p log(p / q) - p + q for p, q > 0; q where p = 0 <= q; inf otherwise."""
    p, q = promote_inexact(p, q)
    both = (p > 0) & (q > 0)
    return fnp.where(both | (p != p) | (q != q), rel_entr(p, q) - p + q,
                     fnp.where((p == 0) & (q >= 0), q, np.inf).astype(q.dtype))


def boxcox(x: ArrayLike, lmbda: ArrayLike) -> Array:
    """(x^lmbda - 1) / lmbda, log x at lmbda = 0."""
    x, lmbda = promote_inexact(x, lmbda)
    return _boxcox(fnp.log(x), lmbda)


def boxcox1p(x: ArrayLike, lmbda: ArrayLike) -> Array:
    """((1 + x)^lmbda - 1) / lmbda, log1p x at lmbda = 0."""
    x, lmbda = promote_inexact(x, lmbda)
    return _boxcox(fnp.log1p(x), lmbda)


def _boxcox(log_x, lmbda):
    zero = lmbda == 0
    safe = fnp.where(zero, 1.0, lmbda).astype(lmbda.dtype)
    # At lmbda = 0 the value is log x and the derivative in lmbda (log x)^2 / 2.
    return fnp.where(zero, log_x + 0.5 * lmbda * log_x * log_x, fnp.expm1(safe * log_x) / safe)


# --------------------------------------------------------------------------- exponential integrals

exp1 = _unary_inexact(S.exp1_p, "exp1",
                      doc="""E_1(x) = int_1^inf e^(-x t) / t dt (NaN for x < 0).""")


expi = _unary_inexact(S.expi_p, "expi",
                      doc="""The exponential integral Ei(x) (principal value).""")


def expn(n: ArrayLike, x: ArrayLike) -> Array:
    """E_n(x) = int_1^inf e^(-x t) / t^n dt, n a nonnegative integer (truncated)."""
    n, x = promote_inexact(n, x)
    return S.expn_p.bind(n, x)


spence = _unary_inexact(S.spence_p, "spence", doc="""The dilogarithm as scipy defines it:
int_1^x log t / (1 - t) dt (x >= 0).""")


def bernoulli(n: int) -> Array:
    """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2), as float64 computed exactly with
    fractions (n a static int)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"bernoulli: n must be a nonnegative Python int, got {n!r}")
    numbers: list[Any] = [Fraction(1)]
    for m in range(1, int(n) + 1):
        # sum_{k<m} C(m + 1, k) B_k + (m + 1) B_m = 0
        numbers.append(-sum(math.comb(m + 1, k) * b for k, b in enumerate(numbers)) / (m + 1))
    return fnp.asarray(np.array([float(b) for b in numbers]))


# --------------------------------------------------------------------------- Bessel

i0e = _unary_inexact(S.bessel_i0e_p, "i0e", doc="""exp(-|x|) I0(x), the exponentially scaled
modified Bessel function of order 0 (scipy.special.i0e).""")


i1e = _unary_inexact(S.bessel_i1e_p, "i1e", doc="""exp(-|x|) I1(x), the exponentially scaled
modified Bessel function of order 1 (scipy.special.i1e).""")


def i1(x: ArrayLike) -> Array:
    """The modified Bessel function of the first kind of order 1, as scipy.special.i1."""
    x, = promote_inexact(x)
    return S.bessel_i1e_p.bind(x) * fnp.exp(fnp.abs(x))


# --------------------------------------------------------------------------- softmax family

def logsumexp(a: ArrayLike, axis: int | Sequence[int] | None = None, b: ArrayLike | None = None,
              keepdims: bool = False, return_sign: bool = False, where: ArrayLike | None = None
             ) -> Any:
    """log |sum(b * exp(a))|, shifted by the maximum so large inputs do not overflow;
    with return_sign, also the sign of the sum (which may then be negative)."""
    a, = promote_inexact(a)
    if b is not None:
        a, b = promote_inexact(a, b)
    if where is not None:
        a = cast(Array, fnp.where(where, a, -np.inf).astype(a.dtype))
    # The shift cancels mathematically, so it needs no derivative; a non-finite max
    # (all -inf) is replaced by 0 so the shift itself never makes NaNs.
    m = stop_gradient(fnp.max(a, axis=axis, keepdims=True))
    m = fnp.where(fnp.isfinite(m), m, 0.0).astype(a.dtype)
    e = fnp.exp(a - m)
    if b is not None:
        e = e * b
    total = fnp.sum(e, axis=axis, keepdims=True)
    if return_sign:
        sign = fnp.sign(total)
        out = fnp.log(fnp.abs(total)) + m
    else:
        out = fnp.log(total) + m
    if not keepdims:
        axes = axis if axis is not None else tuple(range(a.ndim))
        out = fnp.squeeze(out, axis=axes)
        if return_sign:
            sign = fnp.squeeze(sign, axis=axes)
    return (out, sign) if return_sign else out


expit = _unary_inexact(logistic_p, "expit", doc="""The logistic sigmoid 1 / (1 + exp(-x))
(scipy.special.expit).""")


def logit(x: ArrayLike) -> Array:
    """log(x / (1 - x)), the inverse of expit, as scipy.special.logit."""
    x, = promote_inexact(x)
    return fnp.log(x) - fnp.log1p(-x)


def softmax(x: ArrayLike, axis: int | Sequence[int] | None = -1) -> Array:
    """exp(x) / sum(exp(x)) along `axis`, as scipy.special.softmax (and JAX's).

    The maximum is subtracted first, so large inputs do not overflow.

    >>> fnad.scipy.special.softmax(fnp.asarray([0.0, 0.0]))
    Array([0.5, 0.5], dtype=float32)
    """
    x, = promote_inexact(x)
    # Shifting by the max leaves softmax unchanged and keeps exp from overflowing.
    shifted = x - stop_gradient(fnp.max(x, axis=axis, keepdims=True))
    e = fnp.exp(shifted)
    return e / fnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x: ArrayLike, axis: int | Sequence[int] | None = -1) -> Array:
    """x - logsumexp(x) along `axis`, as scipy.special.log_softmax, without overflow."""
    x, = promote_inexact(x)
    shifted = x - stop_gradient(fnp.max(x, axis=axis, keepdims=True))
    return shifted - fnp.log(fnp.sum(fnp.exp(shifted), axis=axis, keepdims=True))


__all__ = ["gammaln", "gammasgn", "gamma", "loggamma", "digamma", "psi", "polygamma",
           "multigammaln", "betaln", "beta", "betainc", "gammainc", "gammaincc", "factorial",
           "comb", "poch", "zeta", "erf", "erfc", "erfinv", "erfcx", "ndtr", "ndtri",
           "log_ndtr", "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "boxcox",
           "boxcox1p", "i0", "i0e", "i1", "i1e", "exp1", "expi", "expn", "bernoulli", "spence",
           "dawsn", "sici", "fresnel", "logsumexp", "expit", "logit", "softmax", "log_softmax"]
