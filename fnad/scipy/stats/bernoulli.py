"""The Bernoulli distribution: k = 1 with probability p, k = 0 with 1 - p."""
from ... import numpy as fnp
from .. import special
from ._util import inside, promote, safe, valid


def _valid(p, value):
    return valid((p >= 0) & (p <= 1), value)


def logpmf(k, p, loc=0):
    k, p, loc = promote(k, p, loc)
    k = k - loc
    support = (k == 0) | (k == 1)
    ks = safe(support, k, 0.0)
    value = special.xlogy(ks, p) + special.xlog1py(1 - ks, -p)
    return _valid(p, inside(support, value, -fnp.inf, k))


def pmf(k, p, loc=0):
    return fnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = promote(k, p)
    value = fnp.where(k < 0, 0 * p, fnp.where(k < 1, 1 - p, 1 + 0 * p))
    return _valid(p, fnp.where(k != k, k, value))


def ppf(q, p):
    """The smallest k with cdf(k) >= q: -1 at q = 0 (scipy's), NaN outside [0, 1]."""
    q, p = promote(q, p)
    k = fnp.where(q == 0, -1.0, fnp.where(q <= 1 - p, 0.0, 1.0)).astype(q.dtype)
    return _valid(p, fnp.where((q >= 0) & (q <= 1), k, fnp.nan))
