"""The multivariate normal distribution, through the Cholesky factor of the
covariance: log det = 2 sum log diag(L), and the Mahalanobis term |L^-1 (x - mean)|^2
from one triangular solve. x is (..., n); mean (n,) or broadcastable; cov a scalar
(times the identity), a vector (the diagonal) or an (n, n) matrix, possibly stacked."""
import math

from ... import numpy as fnp
from ...errors import ShapeError
from ...lax.linalg import triangular_solve
from ._util import promote


def _factor(cov, n):
    if cov.ndim == 0:
        return fnp.sqrt(cov) * fnp.eye(n, dtype=cov.dtype)
    if cov.ndim == 1:
        return fnp.diag(fnp.sqrt(cov))
    return fnp.linalg.cholesky(cov)


def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular:
        raise ValueError("multivariate_normal.logpdf: allow_singular=True is not supported "
                         "(as in JAX): the covariance must be positive definite")
    x, mean, cov = promote(x, mean, cov)
    if mean.ndim == 0:
        mean = fnp.broadcast_to(mean, x.shape[-1:])
    n = mean.shape[-1]
    if x.ndim == 0 or x.shape[-1] != n or (cov.ndim >= 1 and cov.shape[-1] != n) \
            or (cov.ndim >= 2 and cov.shape[-2] != n):
        raise ShapeError(f"multivariate_normal.logpdf: x {tuple(x.shape)}, mean "
                         f"{tuple(mean.shape)} and cov {tuple(cov.shape)} do not share a "
                         f"dimension n (x (..., n), mean (..., n), cov (n, n))")
    factor = _factor(cov, n)
    d = x - mean
    batch = fnp.broadcast_shapes(d.shape[:-1], factor.shape[:-2])
    d = fnp.broadcast_to(d, batch + (n,))
    if factor.ndim == 2:
        # one solve for every row: L z = d^T
        rows = fnp.reshape(d, (-1, n))
        z = triangular_solve(factor, fnp.transpose(rows), left_side=True, lower=True)
        mahalanobis = fnp.reshape(fnp.sum(z * z, axis=0), batch)
    else:
        factor = fnp.broadcast_to(factor, batch + (n, n))
        z = triangular_solve(factor, d[..., None], left_side=True, lower=True)
        mahalanobis = fnp.sum(z[..., 0] * z[..., 0], axis=-1)
    log_det = 2 * fnp.sum(fnp.log(fnp.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * (n * math.log(2 * math.pi) + log_det + mahalanobis)


def pdf(x, mean, cov):
    return fnp.exp(logpdf(x, mean, cov))
