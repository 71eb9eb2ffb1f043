"""fnad.scipy.stats: distributions as modules of functions (logpdf, pdf, cdf, ...) with
JAX's signatures and scipy's values, composites of fnad.numpy and fnad.scipy.special
(so differentiable, jittable and batchable)."""
from . import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,
    gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
    pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy)
from ._descriptive import ModeResult, mode, rankdata, sem  # noqa: F401

from ._docstrings import document as _document  # noqa: E402
_document([bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm,
           geom, gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal,
           nbinom, norm, pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy])
