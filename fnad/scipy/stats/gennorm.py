"""The generalized normal distribution of shape beta > 0: density
beta / (2 Gamma(1/beta)) exp(-|x|^beta)."""
import math

from ... import numpy as fnp
from .. import special
from ._util import promote, valid


def logpdf(x, beta):
    x, beta = promote(x, beta)
    value = fnp.log(beta) - math.log(2) - special.gammaln(1 / beta) - fnp.abs(x) ** beta
    return valid(beta > 0, value)


def pdf(x, beta):
    return fnp.exp(logpdf(x, beta))


def cdf(x, beta):
    # 1/2 (1 + sign(x) P(1/beta, |x|^beta)), the lower tail through Q to keep its digits
    x, beta = promote(x, beta)
    tail = 0.5 * special.gammaincc(1 / beta, fnp.abs(x) ** beta)
    return valid(beta > 0, fnp.where(x < 0, tail, 1 - tail))
