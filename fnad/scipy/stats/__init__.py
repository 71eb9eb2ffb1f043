"""fnad.scipy.stats: distributions as modules of functions (logpdf, pdf, cdf, ...) with
JAX's signatures and scipy's values, composites of fnad.numpy and fnad.scipy.special
(so differentiable, jittable and batchable)."""
from . import (  # noqa: F401
    bernoulli, beta, binom, cauchy, chi2, dirichlet, expon, gamma, geom, laplace, logistic,
    multivariate_normal, norm, poisson, t, truncnorm, uniform)
