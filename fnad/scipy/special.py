"""scipy.special functions as composites of fnad primitives."""
import numpy as np

from .. import numpy as fnp
from ..lax import stop_gradient
from ..primitives.elementwise import erf_p, logistic_p
from ..numpy._core import promote_inexact


def logsumexp(a, axis=None, keepdims=False, b=None):
    """log(sum(b * exp(a))), shifted by the maximum so large inputs do not overflow."""
    a, = promote_inexact(a)
    # The shift cancels mathematically, so it needs no derivative; a non-finite max
    # (all -inf) is replaced by 0 so the shift itself never makes NaNs.
    m = stop_gradient(fnp.max(a, axis=axis, keepdims=True))
    m = fnp.where(fnp.isfinite(m), m, 0)
    e = fnp.exp(a - m)
    if b is not None:
        e = e * b
    out = fnp.log(fnp.sum(e, axis=axis, keepdims=True)) + m
    if not keepdims:
        out = fnp.squeeze(out, axis=axis if axis is not None else tuple(range(a.ndim)))
    return out


def expit(x):
    x, = promote_inexact(x)
    return logistic_p.bind(x)


def logit(x):
    x, = promote_inexact(x)
    return fnp.log(x) - fnp.log1p(-x)


def erf(x):
    x, = promote_inexact(x)
    return erf_p.bind(x)


def erfc(x):
    return 1 - erf(x)


def xlogy(x, y):
    x, y = promote_inexact(x, y)
    safe_y = fnp.where(x == 0, 1, y)
    return fnp.where(x == 0, 0, x * fnp.log(safe_y))


def xlog1py(x, y):
    x, y = promote_inexact(x, y)
    safe_y = fnp.where(x == 0, 0, y)
    return fnp.where(x == 0, 0, x * fnp.log1p(safe_y))


def softmax(x, axis=-1):
    x, = promote_inexact(x)
    # Shifting by the max leaves softmax unchanged and keeps exp from overflowing.
    shifted = x - stop_gradient(fnp.max(x, axis=axis, keepdims=True))
    e = fnp.exp(shifted)
    return e / fnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x, = promote_inexact(x)
    shifted = x - stop_gradient(fnp.max(x, axis=axis, keepdims=True))
    return shifted - fnp.log(fnp.sum(fnp.exp(shifted), axis=axis, keepdims=True))


__all__ = ["logsumexp", "expit", "logit", "erf", "erfc", "xlogy", "xlog1py", "softmax",
           "log_softmax"]
del np
