"""The Laplace distribution: density exp(-|y|) / 2."""
import math

from ... import numpy as fnp
from ._util import promote, safe, scaled_logpdf, standardize, where_probability, where_scale


def logpdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return scaled_logpdf(-fnp.abs(y) - math.log(2), scale)


def pdf(x, loc=0, scale=1):
    return fnp.exp(logpdf(x, loc, scale))


def _standard_cdf(y):
    # the tail below 1/2 through exp, so that neither side loses digits
    left = y < 0
    return fnp.where(left, 0.5 * fnp.exp(safe(left, y, 0.0)),
                     1 - 0.5 * fnp.exp(-safe(~left, y, 0.0)))


def cdf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, _standard_cdf(y))


def sf(x, loc=0, scale=1):
    y, scale = standardize(x, loc, scale)
    return where_scale(scale, _standard_cdf(-y))


def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    lower = q < 0.5
    y = fnp.where(lower, fnp.log(2 * safe(lower, q, 0.25)),
                  -fnp.log(2 - 2 * safe(~lower, q, 0.75)))
    return where_scale(scale, where_probability(q, loc + scale * y))
