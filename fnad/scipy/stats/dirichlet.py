"""The Dirichlet distribution over the simplex. As in JAX, x's first axis holds the
K components (or K - 1, the last then being 1 minus their sum); alpha is (K,)."""
from ... import numpy as fnp
from ...errors import ShapeError
from .. import special
from ._util import promote


def _is_simplex(x):
    # components in [0, 1] summing to one, to rounding
    total = fnp.sum(x, axis=0)
    eps = fnp.finfo(x.dtype).eps
    return fnp.all(x >= 0, axis=0) & (fnp.abs(total - 1) <= 8 * eps * x.shape[0])


def logpdf(x, alpha):
    x, alpha = promote(x, alpha)
    if alpha.ndim != 1:
        raise ShapeError(f"dirichlet.logpdf: alpha must be one-dimensional (K,), got shape "
                         f"{tuple(alpha.shape)}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ShapeError(f"dirichlet.logpdf: x's first axis must have {k} or {k - 1} "
                         f"components for alpha of shape ({k},), got shape {tuple(x.shape)}")
    if x.shape[0] == k - 1:
        x = fnp.concatenate([x, 1 - fnp.sum(x, axis=0, keepdims=True)], axis=0)
    alpha = fnp.reshape(alpha, (k,) + (1,) * (x.ndim - 1))
    log_norm = fnp.sum(special.gammaln(alpha), axis=0) - special.gammaln(fnp.sum(alpha, axis=0))
    value = fnp.sum(special.xlogy(alpha - 1, x), axis=0) - log_norm
    return fnp.where(_is_simplex(x), value, -fnp.inf)


def pdf(x, alpha):
    return fnp.exp(logpdf(x, alpha))
