"""The left-skewed Gumbel distribution, the mirror image of gumbel_r: sf exp(-exp(y))."""
from ... import numpy as fnp
from ._util import log1mexp, promote, scaled_logpdf, standardize, where_probability, where_scale


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return scaled_logpdf(y - fnp.exp(y), scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, -fnp.exp(y))


def sf(x, loc=0, scale=1):
    return fnp.exp(logsf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, -fnp.expm1(-fnp.exp(y)))


def logcdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, log1mexp(-fnp.exp(y)))


def ppf(p, loc=0, scale=1):
    p, loc, scale = promote(p, loc, scale)
    return where_scale(scale, where_probability(p, loc + scale * fnp.log(-fnp.log1p(-p))))
