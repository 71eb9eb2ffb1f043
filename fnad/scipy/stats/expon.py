"""The exponential distribution: density exp(-y) on y = (x - loc) / scale >= 0."""
from ... import numpy as fnp
from ._util import (inside, log1mexp, promote, safe, scaled_logpdf, standardize,
                    where_probability, where_scale)


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return scaled_logpdf(inside(y >= 0, -y, -fnp.inf, y), scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, inside(y >= 0, -fnp.expm1(-safe(y >= 0, y, 0.0)), 0.0, y))


def logcdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, inside(y >= 0, log1mexp(-safe(y >= 0, y, 1.0)), -fnp.inf, y))


def sf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, inside(y >= 0, fnp.exp(-y), 1.0, y))


def logsf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, inside(y >= 0, -y, 0.0, y))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc - scale * fnp.log1p(-q)))
