"""The Cauchy distribution: density 1 / (pi (1 + y^2))."""
import math

from ... import numpy as fnp
from ._util import promote, safe, scaled_logpdf, standardize, where_probability, where_scale


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return scaled_logpdf(-math.log(math.pi) - fnp.log1p(y * y), scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    # 1/2 + arctan(y)/pi written as the angle of (-y, 1): no cancellation in either tail
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, fnp.arctan2(fnp.ones_like(y), -y) / math.pi)


def logcdf(x, loc=0, scale=1):
    return fnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, fnp.arctan2(fnp.ones_like(y), y) / math.pi)


def logsf(x, loc=0, scale=1):
    return fnp.log(sf(x, loc, scale))


def _standard_ppf(q):
    # tan(pi (q - 1/2)) = -1 / tan(pi q), taken through whichever of q and 1 - q is the
    # smaller, so that tail quantiles keep q's digits (and q = 0, 1 give -inf, inf)
    lower = q < 0.5
    value = fnp.where(lower, -1 / fnp.tan(math.pi * safe(lower, q, 0.25)),
                      1 / fnp.tan(math.pi * (1 - safe(~lower, q, 0.75))))
    return fnp.where(q == 0.5, 0 * q, value)


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc + scale * _standard_ppf(q)))


def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc - scale * _standard_ppf(q)))
