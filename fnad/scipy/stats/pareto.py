"""The Pareto distribution of shape b > 0: sf y^-b on y >= 1."""
from ... import numpy as fnp
from ._util import (inside, log1mexp, promote, safe, scaled_logpdf, valid, where_probability,
                    where_scale)


def _standardize(x, b, loc, scale):
    x, b, loc, scale = promote(x, b, loc, scale)
    y = (x - loc) / scale
    return y, b, scale, y >= 1, fnp.log(safe(y >= 1, y, 1.0))


def logpdf(x, b, loc=0, scale=1):
    y, b, scale, support, log_y = _standardize(x, b, loc, scale)
    value = fnp.log(b) - (b + 1) * log_y
    return valid(b > 0, scaled_logpdf(inside(support, value, -fnp.inf, y), scale))


def pdf(x, b, loc=0, scale=1):
    return fnp.exp(logpdf(x, b, loc, scale))


def logsf(x, b, loc=0, scale=1):
    y, b, scale, support, log_y = _standardize(x, b, loc, scale)
    return valid(b > 0, where_scale(scale, inside(support, -b * log_y, 0.0, y)))


def sf(x, b, loc=0, scale=1):
    return fnp.exp(logsf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    y, b, scale, support, log_y = _standardize(x, b, loc, scale)
    return valid(b > 0, where_scale(scale, inside(support, -fnp.expm1(-b * log_y), 0.0, y)))


def logcdf(x, b, loc=0, scale=1):
    y, b, scale, support, log_y = _standardize(x, b, loc, scale)
    value = log1mexp(-b * safe(support, log_y, 1.0))
    return valid(b > 0, where_scale(scale, inside(support & (y > 1), value, -fnp.inf, y)))


def ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = promote(q, b, loc, scale)
    y = fnp.exp(-fnp.log1p(-q) / b)
    return valid(b > 0, where_scale(scale, where_probability(q, loc + scale * y)))
