"""The gamma distribution of shape a > 0: density y^(a-1) e^-y / Gamma(a) on y >= 0."""
from ... import numpy as fnp
from .. import special
from ._util import inside, log_complement, promote, safe, scaled_logpdf, valid, where_scale


def _standardize(x, a, loc, scale):
    x, a, loc, scale = promote(x, a, loc, scale)
    return (x - loc) / scale, a, scale


def logpdf(x, a, loc=0, scale=1):
    y, a, scale = _standardize(x, a, loc, scale)
    positive = y >= 0
    ys = safe(positive, y, 1.0)
    value = special.xlogy(a - 1, ys) - ys - special.gammaln(a)
    return valid(a > 0, scaled_logpdf(inside(positive, value, -fnp.inf, y), scale))


def pdf(x, a, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, loc, scale))


def _both(x, a, loc, scale):
    y, a, scale = _standardize(x, a, loc, scale)
    y = fnp.maximum(y, 0)
    lower, upper = special.gammainc(a, y), special.gammaincc(a, y)
    return valid(a > 0, where_scale(scale, lower)), valid(a > 0, where_scale(scale, upper))


def cdf(x, a, loc=0, scale=1):
    return _both(x, a, loc, scale)[0]


def sf(x, a, loc=0, scale=1):
    return _both(x, a, loc, scale)[1]


def logcdf(x, a, loc=0, scale=1):
    lower, upper = _both(x, a, loc, scale)
    return log_complement(upper, lower)


def logsf(x, a, loc=0, scale=1):
    lower, upper = _both(x, a, loc, scale)
    return log_complement(lower, upper)
