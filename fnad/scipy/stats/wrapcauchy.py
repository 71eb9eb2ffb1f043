"""The wrapped Cauchy distribution on [0, 2 pi], shape 0 < c < 1."""
import math

from ... import numpy as fnp
from ._util import inside, promote, valid


def logpdf(x, c):
    x, c = promote(x, c)
    value = (fnp.log1p(-c * c) - math.log(2 * math.pi)
             - fnp.log(1 + c * c - 2 * c * fnp.cos(x)))
    support = (x >= 0) & (x <= 2 * math.pi)
    return valid((c > 0) & (c < 1), inside(support, value, -fnp.inf, x))


def pdf(x, c):
    return fnp.exp(logpdf(x, c))
