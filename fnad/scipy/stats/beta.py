"""The beta distribution (a, b > 0): density y^(a-1) (1-y)^(b-1) / B(a, b) on [0, 1]."""
from ... import numpy as fnp
from .. import special
from ._util import inside, log_complement, promote, safe, scaled_logpdf, valid, where_scale


def _standardize(x, a, b, loc, scale):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def logpdf(x, a, b, loc=0, scale=1):
    y, a, b, scale = _standardize(x, a, b, loc, scale)
    support = (y >= 0) & (y <= 1)
    ys = safe(support, y, 0.5)
    value = special.xlogy(a - 1, ys) + special.xlog1py(b - 1, -ys) - special.betaln(a, b)
    return valid((a > 0) & (b > 0),
                 scaled_logpdf(inside(support, value, -fnp.inf, y), scale))


def pdf(x, a, b, loc=0, scale=1):
    return fnp.exp(logpdf(x, a, b, loc, scale))


def _both(x, a, b, loc, scale):
    # the upper tail as I_{1-y}(b, a), without the cancellation of 1 - cdf
    y, a, b, scale = _standardize(x, a, b, loc, scale)
    ok = (a > 0) & (b > 0)
    lower = special.betainc(a, b, fnp.clip(y, 0, 1))
    upper = special.betainc(b, a, fnp.clip(1 - y, 0, 1))
    return valid(ok, where_scale(scale, lower)), valid(ok, where_scale(scale, upper))


def cdf(x, a, b, loc=0, scale=1):
    return _both(x, a, b, loc, scale)[0]


def sf(x, a, b, loc=0, scale=1):
    return _both(x, a, b, loc, scale)[1]


def logcdf(x, a, b, loc=0, scale=1):
    lower, upper = _both(x, a, b, loc, scale)
    return log_complement(upper, lower)


def logsf(x, a, b, loc=0, scale=1):
    lower, upper = _both(x, a, b, loc, scale)
    return log_complement(lower, upper)
