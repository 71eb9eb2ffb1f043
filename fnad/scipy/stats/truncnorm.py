"""The normal distribution truncated to [a, b] (in standard units: the support is
[loc + a scale, loc + b scale]). The normalizer Phi(b) - Phi(a) is taken in log space
from the tail of smaller mass, so that far tails (a = 30) keep their precision."""
import math

from ... import numpy as fnp
from .. import special
from ._util import inside, log1mexp, promote, scaled_logpdf, valid, where_scale

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _standardize(x, a, b, loc, scale):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def _log_mass(lo, hi):
    """log(Phi(hi) - Phi(lo)) for lo <= hi, from the side of the median away from both."""
    right = lo > 0
    # mirrored: Phi(hi) - Phi(lo) = Phi(-lo) - Phi(-hi)
    upper = fnp.where(right, -lo, hi)
    lower = fnp.where(right, -hi, lo)
    log_upper = special.log_ndtr(upper)
    return log_upper + log1mexp(special.log_ndtr(lower) - log_upper)


def logpdf(x, a, b, loc=0, scale=1):
    y, a, b, scale = _standardize(x, a, b, loc, scale)
    value = -0.5 * y * y - _LOG_SQRT_2PI - _log_mass(a, b)
    return valid(a < b, scaled_logpdf(inside((y >= a) & (y <= b), value, -fnp.inf, y), scale))


def pdf(x, a, b, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, b, loc, scale))


def _log_cdf_and_sf(x, a, b, loc, scale):
    """log cdf and log sf, each the log1mexp of the other where the other is the smaller
    (a probability near 1 keeps the digits of its complement)."""
    y, a, b, scale = _standardize(x, a, b, loc, scale)
    clipped = fnp.clip(y, a, b)
    log_norm = _log_mass(a, b)
    lower = _log_mass(a, clipped) - log_norm
    upper = _log_mass(clipped, b) - log_norm
    half = -0.6931471805599453
    log_cdf = fnp.where(upper < half, log1mexp(fnp.minimum(upper, half)), lower)
    log_sf = fnp.where(lower < half, log1mexp(fnp.minimum(lower, half)), upper)
    log_cdf = fnp.where(y <= a, -fnp.inf, fnp.where(y >= b, fnp.zeros_like(y), log_cdf))
    log_sf = fnp.where(y >= b, -fnp.inf, fnp.where(y <= a, fnp.zeros_like(y), log_sf))

    def finish(value):
        return valid(a < b, where_scale(scale, fnp.where(y != y, y, value)))
    return finish(log_cdf), finish(log_sf)


def logcdf(x, a, b, loc=0, scale=1):
    return _log_cdf_and_sf(x, a, b, loc, scale)[0]


def cdf(x, a, b, loc=0, scale=1):
    return fnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    return _log_cdf_and_sf(x, a, b, loc, scale)[1]


def sf(x, a, b, loc=0, scale=1):
    return fnp.exp(logsf(x, a, b, loc, scale))
