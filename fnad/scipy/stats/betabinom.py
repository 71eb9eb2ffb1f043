"""The beta-binomial distribution: binomial with a beta(a, b) success probability."""
from ... import numpy as fnp
from .. import special
from ._util import inside, is_integer, promote, safe, valid


def logpmf(k, n, a, b, loc=0):
    # C(n, k) B(k + a, n - k + b) / B(a, b), log C(n, k) through betaln
    k, n, a, b, loc = promote(k, n, a, b, loc)
    k = k - loc
    support = (k >= 0) & (k <= n) & is_integer(k)
    ks = safe(support, k, 0.0)
    value = (-fnp.log1p(n) - special.betaln(n - ks + 1, ks + 1)
             + special.betaln(ks + a, n - ks + b) - special.betaln(a, b))
    ok = (n >= 0) & is_integer(n) & (a > 0) & (b > 0)
    return valid(ok, inside(support, value, -fnp.inf, k))


def pmf(k, n, a, b, loc=0):
    return fnp.exp(logpmf(k, n, a, b, loc))
