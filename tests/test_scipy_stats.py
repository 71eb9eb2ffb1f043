"""fnad.scipy.stats: densities, distribution functions and quantiles against closed
forms written here with math/numpy (run everywhere), scipy.stats (when installed),
float64 central differences for derivatives, and eager = jit = vmap."""
import math

import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad.errors import ShapeError
from fnad.scipy import stats

rng = np.random.default_rng(0)
X = np.array([-2.5, -0.3, 0.0, 0.4, 1.7, 6.0])


def close(actual, expected, rtol=1e-13, atol=0):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- closed forms

def test_norm_closed_forms():
    loc, scale = 0.5, 2.0
    y = (X - loc) / scale
    close(stats.norm.logpdf(X, loc, scale), -0.5 * y * y - math.log(scale * math.sqrt(2 * math.pi)))
    cdf = np.array([0.5 * math.erfc(-v * math.sqrt(0.5)) for v in y])
    close(stats.norm.cdf(X, loc, scale), cdf, rtol=1e-14)
    close(stats.norm.sf(X, loc, scale), 1 - cdf, rtol=1e-14)
    close(stats.norm.ppf(cdf, loc, scale), X, rtol=1e-13, atol=1e-15)
    close(stats.norm.isf(1 - cdf, loc, scale), X, rtol=1e-12, atol=1e-15)
    # far tails: log cdf of -40 standard deviations, sf of +40
    far = -40.0 * np.ones(1)
    assert float(stats.norm.logcdf(far)[0]) == pytest.approx(
        -800 - math.log(40 * math.sqrt(2 * math.pi))
        + math.log1p(-1 / 40 ** 2 + 3 / 40 ** 4 - 15 / 40 ** 6 + 105 / 40 ** 8), rel=1e-13)
    close(stats.norm.logsf(-far), stats.norm.logcdf(far), rtol=1e-15)
    # a scale that is not positive gives NaN, as in scipy
    assert np.isnan(stats.norm.logpdf(np.ones(1), 0.0, -1.0)).all()


def test_continuous_closed_forms():
    loc, scale = 0.25, 1.5
    y = (X - loc) / scale
    pos = y >= 0
    close(stats.expon.logpdf(X, loc, scale), np.where(pos, -y - math.log(scale), -np.inf))
    close(stats.expon.cdf(X, loc, scale), np.where(pos, -np.expm1(-y), 0), rtol=1e-14)
    close(stats.expon.logsf(X, loc, scale), np.where(pos, -y, 0))
    close(stats.expon.ppf(np.array([0.0, 0.5, 0.99]), loc, scale),
          loc - scale * np.log1p(-np.array([0.0, 0.5, 0.99])))
    close(stats.laplace.logpdf(X, loc, scale), -np.abs(y) - math.log(2 * scale))
    close(stats.laplace.cdf(X, loc, scale), np.where(y < 0, 0.5 * np.exp(y), 1 - 0.5 * np.exp(-y)))
    close(stats.logistic.cdf(X, loc, scale), 1 / (1 + np.exp(-y)), rtol=1e-14)
    close(stats.logistic.logpdf(X, loc, scale),
          -y - 2 * np.log1p(np.exp(-y)) - math.log(scale), rtol=1e-14)
    close(stats.cauchy.logpdf(X, loc, scale), -np.log(math.pi * scale * (1 + y * y)))
    close(stats.cauchy.cdf(X, loc, scale), 0.5 + np.arctan(y) / math.pi, rtol=1e-14)
    # the far tail keeps its digits: sf(1e10) = arctan(1e-10) / pi
    close(stats.cauchy.sf(np.array([1e10])), [1e-10 / math.pi], rtol=1e-14)
    close(stats.cauchy.ppf(np.array([0.0, 1e-12, 0.5, 1.0])),
          [-np.inf, -1 / math.tan(math.pi * 1e-12), 0, np.inf], rtol=1e-13)
    close(stats.uniform.logpdf(X, -1.0, 3.0),
          np.where((X >= -1) & (X <= 2), -math.log(3), -np.inf))
    close(stats.uniform.cdf(X, -1.0, 3.0), np.clip((X + 1) / 3, 0, 1))
    # t with df = 1 is Cauchy; df = 2 has cdf 1/2 + y / (2 sqrt(2 + y^2))
    close(stats.t.logpdf(X, 1.0), stats.cauchy.logpdf(X), rtol=1e-13)
    close(stats.t.cdf(X, 2.0), 0.5 + X / (2 * np.sqrt(2 + X * X)), rtol=1e-13)
    close(stats.t.sf(X, 2.0), 0.5 - X / (2 * np.sqrt(2 + X * X)), rtol=1e-13)


def test_gamma_beta_chi2_closed_forms():
    x = np.array([0.0, 0.3, 1.0, 2.5, 9.0])
    # gamma(a=3): x^2 e^-x / 2, cdf 1 - e^-x (1 + x + x^2/2)
    close(stats.gamma.pdf(x, 3.0), x * x * np.exp(-x) / 2, rtol=1e-14)
    q3 = np.exp(-x) * (1 + x + x * x / 2)
    close(stats.gamma.sf(x, 3.0), q3, rtol=1e-13)
    close(stats.gamma.logsf(x, 3.0), np.log(q3), rtol=1e-13, atol=1e-16)
    close(stats.gamma.logpdf(np.array([-1.0]), 3.0), [-np.inf])
    # chi2 with 2 degrees of freedom is expon(scale=2)
    close(stats.chi2.logpdf(x, 2.0), stats.expon.logpdf(x, 0, 2.0), rtol=1e-14)
    close(stats.chi2.cdf(x, 2.0), -np.expm1(-x / 2), rtol=1e-13)
    t = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.5])
    inside = (t >= 0) & (t <= 1)
    # beta(2, 3): 12 t (1 - t)^2, cdf 6t^2 - 8t^3 + 3t^4
    close(stats.beta.pdf(t, 2.0, 3.0), np.where(inside, 12 * t * (1 - t) ** 2, 0), rtol=1e-13)
    tc = np.clip(t, 0, 1)
    close(stats.beta.cdf(t, 2.0, 3.0), 6 * tc ** 2 - 8 * tc ** 3 + 3 * tc ** 4, rtol=1e-13)
    close(stats.beta.sf(t, 2.0, 3.0), 1 - (6 * tc ** 2 - 8 * tc ** 3 + 3 * tc ** 4),
          rtol=1e-12, atol=1e-16)
    assert np.isnan(stats.beta.logpdf(np.full(1, 0.5), -1.0, 2.0)).all()


def test_discrete_closed_forms():
    k = np.array([-1.0, 0.0, 1.0, 2.0, 3.5, 7.0])
    mu = 2.5
    counts = (k >= 0) & (k == np.floor(k))
    pmf = np.array([mu ** v * math.exp(-mu) / math.gamma(v + 1) if c else 0
                    for v, c in zip(k, counts)])
    close(stats.poisson.pmf(k, mu), pmf, rtol=1e-13)
    cdf = [sum(mu ** j * math.exp(-mu) / math.factorial(j) for j in range(int(v) + 1))
           if v >= 0 else 0 for v in np.floor(k)]
    close(stats.poisson.cdf(k, mu), cdf, rtol=1e-13)
    p = 0.3
    close(stats.bernoulli.pmf(np.array([0.0, 1.0, 2.0, 0.5]), p), [0.7, 0.3, 0, 0], rtol=1e-15)
    close(stats.bernoulli.cdf(np.array([-1.0, 0.0, 0.5, 1.0]), p), [0, 0.7, 0.7, 1], rtol=1e-15)
    close(stats.bernoulli.ppf(np.array([0.0, 0.5, 0.7, 0.71, 1.0]), p), [-1, 0, 0, 1, 1])
    n = 10.0
    binom = [math.comb(10, int(v)) * p ** v * (1 - p) ** (10 - v) if c and v <= 10 else 0
             for v, c in zip(k, counts)]
    close(stats.binom.pmf(k, n, p), binom, rtol=1e-13)
    # large n: C(n, k) from betaln keeps its digits
    close(stats.binom.logpmf(np.array([3.0]), 1e9, 1e-9),
          [math.log(math.comb(10 ** 9, 3)) + 3 * math.log(1e-9)
           + (1e9 - 3) * math.log1p(-1e-9)], rtol=1e-12)
    geom = [(1 - p) ** (v - 1) * p if c and v >= 1 else 0 for v, c in zip(k, counts)]
    close(stats.geom.pmf(k, p), geom, rtol=1e-14)
    assert np.isnan(stats.poisson.logpmf(np.array([np.nan]), mu)).all()


def test_poisson_entropy():
    # -sum p log p summed in 40-digit decimal arithmetic (scipy 1.16's own sum does not
    # converge past mu ~ 1e4)
    mu = np.array([0.7, 50.0, 500.0, 1000.0, 3000.0])
    expected = [1.1045971987254763, 3.3732662611702073, 4.5260757486584025,
                4.8727327976428505, 5.422094534620433]
    close(stats.poisson.entropy(mu), expected, rtol=1e-15)
    # far out: 1/2 log(2 pi e mu) - 1/(12 mu) to within 1/(24 mu^2)
    assert float(stats.poisson.entropy(np.array([1e12]))[0]) == pytest.approx(
        0.5 * math.log(2 * math.pi * math.e * 1e12) - 1 / 12e12, rel=1e-16)
    np.testing.assert_array_equal(stats.poisson.entropy(np.array([0.0, -1.0, np.inf])),
                                  [0, np.nan, np.inf])
    assert stats.poisson.entropy(np.ones(3), loc=np.zeros((2, 1))).shape == (2, 3)


def test_multivariate_normal_against_formula():
    n = 3
    a = rng.normal(size=(n, n))
    cov = a @ a.T + n * np.eye(n)
    mean = rng.normal(size=n)
    x = rng.normal(size=(4, 2, n))
    d = x - mean
    maha = np.einsum("...i,ij,...j->...", d, np.linalg.inv(cov), d)
    expected = -0.5 * (n * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1] + maha)
    close(stats.multivariate_normal.logpdf(x, mean, cov), expected, rtol=1e-12)
    close(stats.multivariate_normal.pdf(x[0, 0], mean, cov), np.exp(expected[0, 0]), rtol=1e-12)
    # a stack of covariances broadcasts against x's leading axes
    covs = np.stack([cov, 2 * cov])
    maha2 = np.einsum("...i,...ij,...j->...", d, np.linalg.inv(covs), d)
    expected2 = -0.5 * (n * math.log(2 * math.pi) + np.linalg.slogdet(covs)[1] + maha2)
    close(stats.multivariate_normal.logpdf(x, mean, covs), expected2, rtol=1e-12)
    # a vector covariance is the diagonal, a scalar a multiple of the identity
    diag = np.array([1.0, 2.0, 3.0])
    close(stats.multivariate_normal.logpdf(x, mean, diag),
          stats.multivariate_normal.logpdf(x, mean, np.diag(diag)), rtol=1e-13)
    close(stats.multivariate_normal.logpdf(x, mean, 2.0),
          stats.multivariate_normal.logpdf(x, mean, 2 * np.eye(n)), rtol=1e-13)
    with pytest.raises(ShapeError, match="multivariate_normal"):
        stats.multivariate_normal.logpdf(x, mean, np.eye(2))


def test_dirichlet_against_formula():
    alpha = np.array([0.5, 2.0, 3.0])
    x = rng.dirichlet(alpha, 5).T
    norm = sum(math.lgamma(a) for a in alpha) - math.lgamma(alpha.sum())
    expected = np.sum((alpha[:, None] - 1) * np.log(x), axis=0) - norm
    close(stats.dirichlet.logpdf(x, alpha), expected, rtol=1e-12)
    close(stats.dirichlet.logpdf(x[:2], alpha), expected, rtol=1e-10)
    off = x.copy()
    off[0] += 0.1
    assert np.all(np.asarray(stats.dirichlet.logpdf(off, alpha)) == -np.inf)
    with pytest.raises(ShapeError, match="dirichlet"):
        stats.dirichlet.logpdf(x[:1], alpha)


def test_more_distributions_closed_forms():
    loc, scale = 0.2, 1.3
    y = (X - loc) / scale
    close(stats.gumbel_r.logpdf(X, loc, scale), -y - np.exp(-y) - math.log(scale))
    close(stats.gumbel_r.cdf(X, loc, scale), np.exp(-np.exp(-y)), rtol=1e-14)
    close(stats.gumbel_l.sf(X, loc, scale), np.exp(-np.exp(y)), rtol=1e-14)
    # (the cdf at X = 6 rounds to 1)
    close(stats.gumbel_l.ppf(stats.gumbel_l.cdf(X[:-1], loc, scale), loc, scale), X[:-1],
          rtol=1e-12, atol=1e-15)
    xs = np.array([0.5, 1.0, 2.0, 10.0])
    close(stats.pareto.pdf(xs, 2.5), np.where(xs >= 1, 2.5 * xs ** -3.5, 0), rtol=1e-14)
    close(stats.pareto.sf(xs, 2.5), np.where(xs >= 1, xs ** -2.5, 1), rtol=1e-14)
    close(stats.pareto.ppf(np.array([0.0, 0.5]), 2.5), [1, 2 ** 0.4], rtol=1e-14)
    kappa = np.array([0.5, 3.0, 900.0])
    i0 = np.i0(kappa)
    close(stats.vonmises.logpdf(0.7, kappa[:2]),
          kappa[:2] * math.cos(0.7) - np.log(2 * math.pi * i0[:2]), rtol=1e-13)
    # a large kappa: the density at the mode is about sqrt(kappa / (2 pi))
    assert float(stats.vonmises.pdf(0.0, kappa[2:])[0]) == pytest.approx(
        math.sqrt(900 / (2 * math.pi)), rel=1e-3)
    c = 0.3
    close(stats.wrapcauchy.pdf(xs, c),
          np.where(xs <= 2 * math.pi,
                   (1 - c * c) / (2 * math.pi * (1 + c * c - 2 * c * np.cos(xs))), 0),
          rtol=1e-14)
    # gennorm with beta = 2 is norm(scale=1/sqrt 2), with beta = 1 laplace
    close(stats.gennorm.logpdf(X, 2.0), stats.norm.logpdf(X, 0, math.sqrt(0.5)), rtol=1e-13)
    close(stats.gennorm.cdf(X, 1.0), stats.laplace.cdf(X), rtol=1e-13)
    k = np.array([0.0, 1.0, 4.0])
    close(stats.nbinom.pmf(k, 3.0, 0.4),
          [math.comb(int(v) + 2, int(v)) * 0.4 ** 3 * 0.6 ** v for v in k], rtol=1e-13)
    # betabinom(n, 1, 1) is uniform on {0..n}
    close(stats.betabinom.pmf(k, 4.0, 1.0, 1.0), [0.2, 0.2, 0.2], rtol=1e-13)
    counts = np.array([[1.0, 2.0, 3.0], [0.0, 6.0, 0.0], [2.0, 2.0, 1.0]])
    p = np.array([0.2, 0.5, 0.3])
    close(stats.multinomial.pmf(counts, 6.0, p),
          [60 * 0.2 * 0.25 * 0.027, 0.5 ** 6, 0], rtol=1e-13)
    a = rng.normal(size=(4, 5))
    close(stats.sem(a), a.std(axis=0, ddof=1) / 2, rtol=1e-14)
    close(stats.sem(a, axis=None), a.std(ddof=1) / math.sqrt(20), rtol=1e-14)
    with pytest.raises(ValueError, match="nan_policy"):
        stats.sem(a, nan_policy="omit")


def test_rankdata():
    a = np.array([[3.0, 1.0, 2.0, 2.0, 5.0], [0.0, 0.0, 0.0, 1.0, -1.0]])
    expected = {"average": [[4, 1, 2.5, 2.5, 5], [3, 3, 3, 5, 1]],
                "min": [[4, 1, 2, 2, 5], [2, 2, 2, 5, 1]],
                "max": [[4, 1, 3, 3, 5], [4, 4, 4, 5, 1]],
                "dense": [[3, 1, 2, 2, 4], [2, 2, 2, 3, 1]],
                "ordinal": [[4, 1, 2, 3, 5], [2, 3, 4, 5, 1]]}
    for method, ranks in expected.items():
        np.testing.assert_array_equal(stats.rankdata(a, method, axis=1), ranks)
        np.testing.assert_array_equal(stats.rankdata(a.T, method, axis=0), np.transpose(ranks))
    np.testing.assert_array_equal(stats.rankdata(a[0]), [4, 1, 2.5, 2.5, 5])
    # axis=None ranks the flattened array
    np.testing.assert_array_equal(stats.rankdata(a, "min"), [9, 5, 7, 7, 10, 2, 2, 2, 5, 1])
    assert np.isnan(np.asarray(stats.rankdata(np.array([[1.0, np.nan], [2.0, 1.0]]),
                                              axis=1))[0]).all()
    with pytest.raises(ValueError, match="method"):
        stats.rankdata(a, "first")


def test_mode():
    a = np.array([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 1.0, 1.0], [5.0, 6.0, 7.0, 8.0]])
    result = stats.mode(a, axis=1)
    # ties go to the smallest value
    np.testing.assert_array_equal(result.mode, [2, 1, 5])
    np.testing.assert_array_equal(result.count, [2, 2, 1])
    kept = stats.mode(a, axis=None, keepdims=True)
    assert kept.mode.shape == (1, 1) and float(kept.mode[0, 0]) == 1.0
    assert int(kept.count[0, 0]) == 3
    np.testing.assert_array_equal(stats.mode(a, axis=0).mode, [1, 2, 1, 1])
    # NaNs count as one value (scipy's 'propagate')
    nan_mode = stats.mode(np.array([1.0, np.nan, np.nan]))
    assert np.isnan(float(nan_mode.mode)) and int(nan_mode.count) == 2
    with pytest.raises(ValueError, match="no elements"):
        stats.mode(np.zeros((2, 0)), axis=1)


def test_truncnorm_far_tail():
    # [30, 32] standard deviations out: the mass there is about phi(30) / 30
    x = np.array([29.0, 30.0, 30.5, 31.0, 33.0])
    logpdf = np.asarray(stats.truncnorm.logpdf(x, 30.0, 32.0))
    assert logpdf[0] == -np.inf and logpdf[-1] == -np.inf
    # the density ratio between two points is exp(-(x1^2 - x2^2) / 2)
    close(logpdf[2] - logpdf[1], -(30.5 ** 2 - 30.0 ** 2) / 2, rtol=1e-12)
    # integrates to one (trapezoid on a fine grid)
    grid = np.linspace(30.0, 32.0, 20001)
    density = np.exp(np.asarray(stats.truncnorm.logpdf(grid, 30.0, 32.0)))
    assert np.sum((density[1:] + density[:-1]) / 2 * np.diff(grid)) == pytest.approx(1, rel=1e-6)
    close(stats.truncnorm.cdf(x, 30.0, 32.0) + stats.truncnorm.sf(x, 30.0, 32.0), np.ones(5),
          rtol=1e-14)


# --------------------------------------------------------------------------- scipy

CONTINUOUS = {
    "norm": (), "expon": (), "laplace": (), "logistic": (), "cauchy": (), "uniform": (),
    "gamma": (2.5,), "chi2": (3.0,), "beta": (2.5, 0.7), "t": (4.5,), "truncnorm": (-1.0, 1.5),
    "gumbel_r": (), "gumbel_l": (), "pareto": (2.5,),
}
FUNCTIONS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_against_scipy(name):
    ss = pytest.importorskip("scipy.stats")
    shape = CONTINUOUS[name]
    x = np.concatenate([rng.uniform(-5, 8, 40), [-np.inf, np.inf, np.nan, 0.0]])
    q = np.concatenate([rng.uniform(0, 1, 20), [0.0, 1.0, -0.1, np.nan]])
    mine, theirs = getattr(stats, name), getattr(ss, name)
    for fn in FUNCTIONS:
        if not hasattr(mine, fn):
            continue
        arg = q if fn in ("ppf", "isf") else x
        expected = getattr(theirs, fn)(arg, *shape, 0.3, 1.7)
        out = getattr(mine, fn)(arg, *shape, 0.3, 1.7)
        close(out, expected, rtol=1e-11, atol=1e-300)


DISCRETE = {"poisson": (3.5,), "bernoulli": (0.3,), "binom": (12.0, 0.35), "geom": (0.3,),
            "nbinom": (3.5, 0.4), "betabinom": (12.0, 2.5, 0.7)}


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_against_scipy(name):
    ss = pytest.importorskip("scipy.stats")
    k = np.concatenate([np.arange(-2.0, 16.0), [0.5, np.nan]])
    mine, theirs = getattr(stats, name), getattr(ss, name)
    for fn in ("logpmf", "pmf", "cdf"):
        if hasattr(mine, fn):
            close(getattr(mine, fn)(k, *DISCRETE[name]),
                  getattr(theirs, fn)(k, *DISCRETE[name]), rtol=1e-12, atol=1e-300)
    if name == "poisson":
        # (past mu ~ 300 scipy's own sum drifts by 1e-12; the 40-digit references of
        # test_poisson_entropy check that range)
        mu = 10 ** rng.uniform(-3, 2.5, 30)
        close(mine.entropy(mu), theirs.entropy(mu), rtol=1e-13)


def test_rankdata_and_mode_against_scipy():
    ss = pytest.importorskip("scipy.stats")
    a = rng.integers(0, 4, (3, 7)).astype(float)
    for method in ("average", "min", "max", "dense", "ordinal"):
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(stats.rankdata(a, method, axis=axis),
                                          ss.rankdata(a, method, axis=axis))
    for axis in (None, 0, -1):
        for keepdims in (False, True):
            mine, theirs = stats.mode(a, axis, keepdims=keepdims), ss.mode(a, axis,
                                                                           keepdims=keepdims)
            np.testing.assert_array_equal(mine.mode, theirs.mode)
            np.testing.assert_array_equal(mine.count, theirs.count)


def test_multivariate_against_scipy():
    ss = pytest.importorskip("scipy.stats")
    a = rng.normal(size=(4, 4))
    cov = a @ a.T + np.eye(4)
    mean, x = rng.normal(size=4), rng.normal(size=(5, 4))
    close(stats.multivariate_normal.logpdf(x, mean, cov),
          ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-12)
    alpha = np.array([1.5, 0.7, 4.0])
    xs = rng.dirichlet(alpha, 6).T
    close(stats.dirichlet.logpdf(xs, alpha), ss.dirichlet.logpdf(xs, alpha), rtol=1e-12)


# --------------------------------------------------------------------------- modes

def _many(x):
    """A sweep of the library in one function: one jit compile for all of it."""
    p = 1 / (1 + jnp.exp(-x))
    return [stats.norm.logpdf(x, 0.3, 1.2), stats.norm.logcdf(x), stats.norm.ppf(p),
            stats.expon.logcdf(x + 3), stats.laplace.cdf(x), stats.logistic.logpdf(x),
            stats.cauchy.cdf(x), stats.uniform.logpdf(x, -1.0, 4.0),
            stats.gamma.logpdf(x + 3, 2.5), stats.gamma.cdf(x + 3, 2.5),
            stats.beta.logpdf(p, 2.0, 3.0), stats.beta.cdf(p, 2.0, 3.0),
            stats.t.logpdf(x, 3.5), stats.t.cdf(x, 3.5), stats.chi2.logsf(x + 3, 2.0),
            stats.truncnorm.logpdf(x, -1.0, 2.0), stats.truncnorm.logcdf(x, -1.0, 2.0),
            stats.poisson.logpmf(jnp.floor(x + 3), 2.0), stats.binom.logpmf(jnp.floor(x + 3),
                                                                            6.0, p),
            stats.bernoulli.logpmf(jnp.floor(p + 0.5), 0.4), stats.geom.logpmf(x + 3, p)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jit_and_vmap_match_eager(dtype, monkeypatch):
    x = np.array([-0.7, 0.0, 0.4, 1.9], dtype)
    eager = _many(jnp.asarray(x))
    # compiled in the foreground, so the fused kernels (the scalar expressions) run,
    # not the primitives' own kernels a first call uses while Numba compiles
    monkeypatch.setattr(fnad.config, "background_compile", False)
    jitted = fnad.jit(_many)(x)
    mapped = fnad.vmap(_many)(x)
    for e, j, m in zip(eager, jitted, mapped):
        assert e.dtype == dtype and j.dtype == dtype
        # jit fuses the composites: for float32 that may reassociate a rounding
        rtol = 0 if dtype == np.float64 else 2e-6
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=rtol, atol=1e-300)
        np.testing.assert_allclose(np.asarray(m), np.asarray(e), rtol=rtol, atol=1e-300)


def _central_difference(f, x, h=1e-6):
    f = fnad.vmap(f)
    return (np.asarray(f(x + h)) - np.asarray(f(x - h))) / (2 * h)


POINTS = np.array([0.35, 0.8, 1.6])
GRADIENTS = {
    "norm.logcdf_x": lambda v: stats.norm.logcdf(3 * v - 5),
    "norm.logpdf_scale": lambda v: stats.norm.logpdf(1.3, 0.2, v),
    "norm.ppf": lambda v: stats.norm.ppf(v / 2),
    "expon.logcdf": lambda v: stats.expon.logcdf(v, 0.1, 0.5),
    "logistic.logpdf": lambda v: stats.logistic.logpdf(v, 0.5, v),
    "cauchy.sf": lambda v: stats.cauchy.sf(4 * v, 0.2),
    "gamma.logpdf_a": lambda v: stats.gamma.logpdf(1.5, v + 0.5),
    "gamma.cdf_a": lambda v: stats.gamma.cdf(1.5, v + 0.5),
    "gamma.logsf_x": lambda v: stats.gamma.logsf(3 * v, 2.5, 0.0, 0.8),
    "beta.logpdf_ab": lambda v: stats.beta.logpdf(0.4, v + 1, 2 * v),
    "beta.cdf_x": lambda v: stats.beta.cdf(v / 2, 2.5, 1.5),
    "t.logpdf_df": lambda v: stats.t.logpdf(0.7, 3 * v),
    "t.cdf_x": lambda v: stats.t.cdf(2 * v - 1, 3.0),
    "truncnorm.logpdf_ab": lambda v: stats.truncnorm.logpdf(0.2, -v, 2 * v),
    "poisson.logpmf_mu": lambda v: stats.poisson.logpmf(3.0, 4 * v),
    "binom.logpmf_p": lambda v: stats.binom.logpmf(4.0, 9.0, v / 2),
    "poisson.entropy": lambda v: stats.poisson.entropy(v ** 4 * 900),
    "mvn.logpdf": lambda v: stats.multivariate_normal.logpdf(
        jnp.stack([v, 1 - v]), jnp.zeros(2, jnp.float64),
        jnp.stack([jnp.stack([1 + v, 0.3 + 0 * v]), jnp.stack([0.3 + 0 * v, 2.0 + 0 * v])])),
    "dirichlet.logpdf_alpha": lambda v: stats.dirichlet.logpdf(
        np.array([0.2, 0.3, 0.5]), jnp.stack([v, 2 * v, 1 + 0 * v])),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_grad_matches_central_differences(name):
    f = GRADIENTS[name]
    g = fnad.vmap(fnad.grad(f))(POINTS)
    np.testing.assert_allclose(g, _central_difference(f, POINTS), rtol=1e-6, atol=1e-8)


def test_grad_under_jit_of_a_log_likelihood():
    data = rng.normal(1.0, 2.0, 50)

    def nll(params):
        return -jnp.sum(stats.norm.logpdf(data, params[0], jnp.exp(params[1])))
    params = np.array([0.3, 0.2])
    g = fnad.jit(fnad.grad(nll))(params)
    # d/dmu = -sum(x - mu) / s^2, d/dlog s = n - sum((x - mu)^2) / s^2
    s2 = math.exp(2 * 0.2)
    close(g, [-np.sum(data - 0.3) / s2, 50 - np.sum((data - 0.3) ** 2) / s2], rtol=1e-12)
