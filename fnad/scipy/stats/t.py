"""Student's t distribution with df degrees of freedom."""
import math

from ... import numpy as fnp
from .. import special
from ._util import promote, scaled_logpdf, valid, where_scale


def _standardize(x, df, loc, scale):
    x, df, loc, scale = promote(x, df, loc, scale)
    return (x - loc) / scale, df, scale


def logpdf(x, df, loc=0, scale=1):
    y, df, scale = _standardize(x, df, loc, scale)
    half = 0.5 * (df + 1)
    value = (special.gammaln(half) - special.gammaln(0.5 * df)
             - 0.5 * fnp.log(df * math.pi) - half * fnp.log1p(y * y / df))
    return valid(df > 0, scaled_logpdf(value, scale))


def pdf(x, df, loc=0, scale=1):
    return fnp.exp(logpdf(x, df, loc, scale))


def _tail(y, df):
    """P(T > |y|) = I_{df / (df + y^2)}(df / 2, 1/2) / 2."""
    return 0.5 * special.betainc(0.5 * df, 0.5 + 0 * df, df / (df + y * y))


def cdf(x, df, loc=0, scale=1):
    y, df, scale = _standardize(x, df, loc, scale)
    tail = _tail(y, df)
    return valid(df > 0, where_scale(scale, fnp.where(y < 0, tail, 1 - tail)))


def sf(x, df, loc=0, scale=1):
    y, df, scale = _standardize(x, df, loc, scale)
    tail = _tail(y, df)
    return valid(df > 0, where_scale(scale, fnp.where(y > 0, tail, 1 - tail)))
