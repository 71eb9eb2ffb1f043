"""The multinomial distribution: counts x (..., K) of n draws over K categories of
probabilities p (..., K)."""
from ... import numpy as fnp
from .. import special
from ._util import promote


def logpmf(x, n, p):
    x, n, p = promote(x, n, p)
    value = (special.gammaln(n + 1)
             + fnp.sum(special.xlogy(x, p) - special.gammaln(x + 1), axis=-1))
    return fnp.where(fnp.sum(x, axis=-1) == n, value, -fnp.inf)


def pmf(x, n, p):
    return fnp.exp(logpmf(x, n, p))
