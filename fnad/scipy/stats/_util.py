"""What the distributions share: dtype promotion, loc/scale standardization with
scipy's rule for bad scales (NaN), and the masks and logs the densities need."""
import numpy as np

from ... import numpy as fnp
from ...numpy._core import promote_inexact

promote = promote_inexact


def standardize(x, loc, scale):
    """(x - loc) / scale, and the scale, promoted together."""
    x, loc, scale = promote_inexact(x, loc, scale)
    return (x - loc) / scale, scale


def scaled_logpdf(logpdf_y, scale):
    """The log density of x = loc + scale * y: log f(y) - log scale; NaN where the scale
    is not positive (scipy's)."""
    return fnp.where(scale > 0, logpdf_y - fnp.log(scale), np.nan)


def where_scale(scale, value):
    """value, NaN where the scale is not positive."""
    return fnp.where(scale > 0, value, np.nan)


def where_probability(q, value):
    """value, NaN where q is not a probability (a quantile function's domain)."""
    return fnp.where((q >= 0) & (q <= 1), value, np.nan)


def inside(cond, value, outside, *operands):
    """value where cond holds, else the constant `outside` (in value's dtype); NaN where
    any of `operands` is NaN, which cond alone would send outside."""
    out = fnp.where(cond, value, fnp.asarray(outside, value.dtype))
    for x in operands:
        out = fnp.where(x != x, x, out)
    return out


def valid(cond, value):
    """value where the distribution's parameters are valid (cond), else NaN (scipy's)."""
    return fnp.where(cond, value, np.nan)


def log_complement(p, q):
    """log q for q = 1 - p given both: log1p(-p) where p is the smaller, log q otherwise,
    so that a probability near 1 keeps the digits of its complement."""
    small = p < 0.5
    return fnp.where(small, fnp.log1p(-safe(small, p, 0.0)), fnp.log(safe(~small, q, 1.0)))


def safe(cond, x, fill):
    """x where cond holds, else `fill`: the argument a branch sees, so that the branch
    fnp.where discards is finite and so is its derivative."""
    return fnp.where(cond, x, fnp.asarray(fill, x.dtype))


def is_integer(k):
    return k == fnp.floor(k)


def log1mexp(x):
    """log(1 - exp(x)) for x <= 0: through log(-expm1(x)) near 0 and log1p(-exp(x)) far
    from it, each where the other loses digits."""
    near = x > -0.6931471805599453
    return fnp.where(near, fnp.log(-fnp.expm1(safe(near, x, -1.0))),
                     fnp.log1p(-fnp.exp(safe(~near, x, -1.0))))
