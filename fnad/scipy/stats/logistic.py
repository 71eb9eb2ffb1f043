"""The logistic distribution: cdf expit(y), density expit(y) expit(-y)."""
from ... import numpy as fnp
from .. import special
from ._util import promote, scaled_logpdf, standardize, where_probability, where_scale


def logpdf(x, loc=0, scale=1):
    # symmetric in y: -|y| - 2 log(1 + exp(-|y|)) never overflows
    y, scale = standardize(x, loc, scale)
    a = fnp.abs(y)
    return scaled_logpdf(-a - 2 * fnp.log1p(fnp.exp(-a)), scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, special.expit(y))


def sf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, special.expit(-y))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc + scale * special.logit(q)))


def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return where_scale(scale, where_probability(q, loc - scale * special.logit(q)))
