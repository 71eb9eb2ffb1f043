"""The negative binomial distribution: k failures before the n-th success, success
probability p."""
from ... import numpy as fnp
from .. import special
from ._util import inside, is_integer, promote, safe, valid


def logpmf(k, n, p, loc=0):
    # log C(k + n - 1, k) = -log k - betaln(k, n) for k >= 1 (0 for k = 0)
    k, n, p, loc = promote(k, n, p, loc)
    k = k - loc
    support = (k >= 0) & is_integer(k)
    ks = safe(support & (k > 0), k, 1.0)
    log_comb = fnp.where(k == 0, 0 * ks, -fnp.log(ks) - special.betaln(ks, n))
    value = log_comb + special.xlogy(n, p) + special.xlog1py(safe(support, k, 0.0), -p)
    return valid((n > 0) & (p > 0) & (p <= 1), inside(support, value, -fnp.inf, k))


def pmf(k, n, p, loc=0):
    return fnp.exp(logpmf(k, n, p, loc))
