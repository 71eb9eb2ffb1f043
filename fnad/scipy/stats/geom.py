"""The geometric distribution: the trial of the first success, k in {1, 2, ...},
success probability 0 < p <= 1."""
from ... import numpy as fnp
from .. import special
from ._util import inside, is_integer, promote, safe, valid


def logpmf(k, p, loc=0):
    k, p, loc = promote(k, p, loc)
    k = k - loc
    support = (k >= 1) & is_integer(k)
    ks = safe(support, k, 1.0)
    value = special.xlog1py(ks - 1, -p) + fnp.log(p)
    return valid((p > 0) & (p <= 1), inside(support, value, -fnp.inf, k))


def pmf(k, p, loc=0):
    return fnp.exp(logpmf(k, p, loc))
