"""The chi-squared distribution with df degrees of freedom: gamma(df / 2, scale 2)."""
from . import gamma


def logpdf(x, df, loc=0, scale=1):
    return gamma.logpdf(x, df / 2, loc, 2 * scale)


def pdf(x, df, loc=0, scale=1):
    return gamma.pdf(x, df / 2, loc, 2 * scale)


def cdf(x, df, loc=0, scale=1):
    return gamma.cdf(x, df / 2, loc, 2 * scale)


def logcdf(x, df, loc=0, scale=1):
    return gamma.logcdf(x, df / 2, loc, 2 * scale)


def sf(x, df, loc=0, scale=1):
    return gamma.sf(x, df / 2, loc, 2 * scale)


def logsf(x, df, loc=0, scale=1):
    return gamma.logsf(x, df / 2, loc, 2 * scale)
