"""The binomial distribution: k successes in n trials of probability p."""
from ... import numpy as fnp
from .. import special
from ._util import inside, is_integer, promote, safe, valid


def logpmf(k, n, p, loc=0):
    # log C(n, k) = -log(n + 1) - betaln(n - k + 1, k + 1): no cancellation of large
    # log-gammas for large n
    k, n, p, loc = promote(k, n, p, loc)
    k = k - loc
    support = (k >= 0) & (k <= n) & is_integer(k)
    ks = safe(support, k, 0.0)
    log_comb = -fnp.log1p(n) - special.betaln(n - ks + 1, ks + 1)
    value = log_comb + special.xlogy(ks, p) + special.xlog1py(n - ks, -p)
    ok = (n >= 0) & is_integer(n) & (p >= 0) & (p <= 1)
    return valid(ok, inside(support, value, -fnp.inf, k))


def pmf(k, n, p, loc=0):
    return fnp.exp(logpmf(k, n, p, loc))
