"""The normal distribution (loc = mean, scale = standard deviation)."""
import math

from ... import numpy as fnp
from .. import special
from ._util import promote, scaled_logpdf, standardize, where_probability, where_scale

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return scaled_logpdf(-0.5 * y * y - _LOG_SQRT_2PI, scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, special.ndtr(y))


def logcdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, special.log_ndtr(y))


def sf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, special.ndtr(-y))


def logsf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, special.log_ndtr(-y))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc + scale * special.ndtri(q)))


def isf(q, loc=0, scale=1):
    # by symmetry; ndtri(q) keeps the precision of a small q, ndtri(1 - q) would not
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc - scale * special.ndtri(q)))
