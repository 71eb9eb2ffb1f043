"""The uniform distribution on [loc, loc + scale]."""
from ... import numpy as fnp
from ._util import inside, promote, scaled_logpdf, standardize, where_probability, where_scale


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return scaled_logpdf(inside((y >= 0) & (y <= 1), 0 * y, -fnp.inf, y), scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, fnp.clip(y, 0, 1))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc + scale * q))
