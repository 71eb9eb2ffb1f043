"""The Poisson distribution of mean mu >= 0, on k = x - loc in {0, 1, 2, ...}."""
from ... import numpy as fnp
from ...primitives.special import poisson_entropy_p
from .. import special
from ._util import inside, is_integer, promote, safe, valid


def logpmf(k, mu, loc=0):
    k, mu, loc = promote(k, mu, loc)
    k = k - loc
    support = (k >= 0) & is_integer(k)
    ks = safe(support, k, 0.0)
    value = special.xlogy(ks, mu) - mu - special.gammaln(ks + 1)
    return valid(mu >= 0, inside(support, value, -fnp.inf, k))


def pmf(k, mu, loc=0):
    return fnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    # P(K <= k) = Q(floor(k) + 1, mu)
    k, mu, loc = promote(k, mu, loc)
    k = k - loc
    nonnegative = k >= 0
    value = special.gammaincc(fnp.floor(safe(nonnegative, k, 0.0)) + 1, mu)
    return valid(mu >= 0, inside(nonnegative, value, 0.0, k))


def entropy(mu, loc=0):
    """The Shannon entropy -sum_k p_k log p_k (nats); loc moves the support and leaves
    the entropy unchanged, but broadcasts with mu."""
    mu, loc = promote(mu, loc)
    return poisson_entropy_p.bind(mu + 0 * loc)
