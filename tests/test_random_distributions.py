"""fnad.random's continuous and discrete distributions beyond uniform/normal: each
sample (fixed keys, 20,000 draws) is held against its exact CDF by the
Kolmogorov-Smirnov distance, or against exact pmfs and moments where the CDF has no
closed form. The bounds are wide enough for a fixed key to fail by chance only with
a small probability (sqrt(n) D < 1.95: p = 0.001), and narrow enough that a
scale error of ten percent fails."""
import math

import numpy as np
import pytest

import fnad
from fnad import random

N = 20000
KEY = random.key(42)


def _erf(x):
    return np.vectorize(math.erf)(x)


def _ks(sample, cdf):
    """sqrt(n) times the largest gap between the empirical CDF and `cdf`."""
    x = np.sort(np.asarray(sample, np.float64).ravel())
    n = len(x)
    c = cdf(x)
    gap = max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))
    return math.sqrt(n) * gap


CONTINUOUS = {   # name -> (draw(key, n), exact CDF)
    "laplace": (lambda k: random.laplace(k, (N,)),
                lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))),
    "logistic": (lambda k: random.logistic(k, (N,)), lambda x: 1 / (1 + np.exp(-x))),
    "cauchy": (lambda k: random.cauchy(k, (N,)), lambda x: 0.5 + np.arctan(x) / np.pi),
    "rayleigh": (lambda k: random.rayleigh(k, 2.0, (N,)),
                 lambda x: 1 - np.exp(-x ** 2 / 8)),
    "maxwell": (lambda k: random.maxwell(k, (N,)),
                lambda x: _erf(x / math.sqrt(2)) - math.sqrt(2 / math.pi) * x *
                np.exp(-x ** 2 / 2)),
    "weibull_min": (lambda k: random.weibull_min(k, 2.0, 1.5, (N,)),
                    lambda x: 1 - np.exp(-(x / 2) ** 1.5)),
    "lognormal": (lambda k: random.lognormal(k, 0.5, (N,)),
                  lambda x: 0.5 * (1 + _erf(np.log(x) / (0.5 * math.sqrt(2))))),
    "pareto": (lambda k: random.pareto(k, 3.0, (N,)), lambda x: 1 - x ** -3.0),
    "triangular": (lambda k: random.triangular(k, 0.0, 1.0, 3.0, (N,)),
                   lambda x: np.where(x < 1, x ** 2 / 3, 1 - (3 - x) ** 2 / 6)),
    "double_sided_maxwell": (
        lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (N,)),
        lambda x: 0.5 + np.sign(x - 1) * 0.5 * (
            _erf(np.abs(x - 1) / (2 * math.sqrt(2))) - math.sqrt(2 / math.pi) *
            np.abs(x - 1) / 2 * np.exp(-(x - 1) ** 2 / 8))),
    # gamma family where the CDF is elementary
    "gamma_3": (lambda k: random.gamma(k, 3.0, (N,)),
                lambda x: 1 - np.exp(-x) * (1 + x + x ** 2 / 2)),
    "gamma_1": (lambda k: random.gamma(k, 1.0, (N,)), lambda x: 1 - np.exp(-x)),
    "beta_2_3": (lambda k: random.beta(k, 2.0, 3.0, (N,)),
                 lambda x: 6 * x ** 2 - 8 * x ** 3 + 3 * x ** 4),
    "chisquare_2": (lambda k: random.chisquare(k, 2.0, (N,)), lambda x: 1 - np.exp(-x / 2)),
    "t_2": (lambda k: random.t(k, 2.0, (N,)), lambda x: 0.5 + x / (2 * np.sqrt(2 + x ** 2))),
    "t_1": (lambda k: random.t(k, 1.0, (N,)), lambda x: 0.5 + np.arctan(x) / np.pi),
    # |x|^1 generalized normal is Laplace; F(2, 2) has CDF x / (1 + x)
    "generalized_normal_1": (lambda k: random.generalized_normal(k, 1.0, (N,)),
                             lambda x: np.where(x < 0, 0.5 * np.exp(x),
                                                1 - 0.5 * np.exp(-x))),
    "f_2_2": (lambda k: random.f(k, 2.0, 2.0, (N,)), lambda x: x / (1 + x)),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_distribution_matches_cdf(name):
    draw, cdf = CONTINUOUS[name]
    x = draw(KEY)
    assert x.shape == (N,) and x.dtype == np.float32
    assert _ks(x, cdf) < 1.95
    # a sample scaled by 10% is caught: the test can fail
    assert _ks(np.asarray(x, np.float64) * 1.1 + 0.05, cdf) > 1.95


@pytest.mark.parametrize("a", [0.25, 4.5])
def test_gamma_moments_and_small_shape(a):
    x = np.asarray(random.gamma(KEY, a, (N,), np.float64))
    # mean a, variance a, third central moment 2a (standard errors well inside)
    assert abs(x.mean() - a) < 4 * math.sqrt(a / N)
    np.testing.assert_allclose(x.var(), a, rtol=0.06)
    np.testing.assert_allclose(((x - a) ** 3).mean(), 2 * a, rtol=0.25)
    lg = np.asarray(random.loggamma(KEY, a, (N,), np.float64))
    np.testing.assert_allclose(np.exp(lg), x, rtol=1e-12)


def test_gamma_edges_loggamma_tiny_and_jit_vmap():
    out = np.asarray(random.gamma(KEY, np.array([-1.0, np.nan, 0.0, 2.0])))
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == 0 and out[3] > 0
    # Gamma(1e-3) values underflow float32, their logs do not: E[log X] = digamma(a)
    # ~ -1/a - euler_gamma for small a
    lg = np.asarray(random.loggamma(KEY, 1e-3, (N,)))
    assert np.all(np.isfinite(lg))
    np.testing.assert_allclose(lg.mean(), -1 / 1e-3 - 0.5772, rtol=0.05)
    eager = np.asarray(random.gamma(KEY, np.array([0.5, 3.0]), (4, 2)))
    jitted = np.asarray(fnad.jit(lambda k, a: random.gamma(k, a, (4, 2)))(
        KEY, np.array([0.5, 3.0], np.float32)))
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    keys = random.split(KEY, 3)
    batched = np.asarray(fnad.vmap(lambda k: random.gamma(k, 2.0, (5,)))(keys))
    np.testing.assert_allclose(batched[1], np.asarray(random.gamma(keys[1], 2.0, (5,))),
                               rtol=1e-6)
    with pytest.raises(fnad.ShapeError):
        random.gamma(KEY, np.ones(3), (2, 2))
    with pytest.raises(fnad.DTypeError):
        random.gamma(KEY, 1.0, (2,), np.int32)


def test_wald_dirichlet_ball_multivariate_normal():
    w = np.asarray(random.wald(KEY, 2.0, (N,), np.float64))
    assert abs(w.mean() - 2.0) < 4 * math.sqrt(8 / N)           # mean mu, variance mu^3
    np.testing.assert_allclose(w.var(), 8.0, rtol=0.15)
    alpha = np.array([1.0, 2.0, 3.0])
    d = np.asarray(random.dirichlet(KEY, alpha, (N,), np.float64))
    assert d.shape == (N, 3)
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-12)
    np.testing.assert_allclose(d.mean(0), alpha / 6, atol=0.006)
    np.testing.assert_allclose(d.var(0), alpha * (6 - alpha) / (36 * 7), rtol=0.06)
    b = np.asarray(random.ball(KEY, 3, 2, (N,), np.float64))
    r = np.linalg.norm(b, axis=-1)
    assert r.max() <= 1 and _ks(r, lambda x: x ** 3) < 1.95    # P(|x| < r) = r^3
    b1 = np.abs(np.asarray(random.ball(KEY, 2, 1, (N,), np.float64))).sum(-1)
    assert b1.max() <= 1 and _ks(b1, lambda x: x ** 2) < 1.95
    mean, cov = np.array([1.0, -2.0]), np.array([[2.0, 0.6], [0.6, 1.0]])
    x = np.asarray(random.multivariate_normal(KEY, mean, cov, (N,), np.float64))
    np.testing.assert_allclose(x.mean(0), mean, atol=0.04)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)
    with pytest.raises(fnad.ShapeError, match="cov"):
        random.multivariate_normal(KEY, mean, np.eye(3))


def _pmf_gap(sample, pmf):
    """sqrt(n) times the largest gap between the empirical and exact CDFs of a sample
    of non-negative integers."""
    x = np.asarray(sample).astype(np.int64)
    assert x.min() >= 0
    ks = np.arange(0, x.max() + 1)
    empirical = np.searchsorted(np.sort(x), ks, side="right") / len(x)
    return math.sqrt(len(x)) * np.abs(empirical - np.cumsum(pmf(ks))).max()


def _poisson_pmf(lam):
    return lambda k: np.exp(k * math.log(lam) - lam - np.vectorize(math.lgamma)(k + 1.0))


@pytest.mark.parametrize("lam", [0.7, 6.0, 45.0, 5000.0])
def test_poisson(lam):
    x = random.poisson(KEY, lam, (N,))
    assert x.dtype == np.int32 and x.shape == (N,)
    assert _pmf_gap(x, _poisson_pmf(lam)) < 1.95
    assert _pmf_gap(np.asarray(x) + max(1, int(0.05 * lam)), _poisson_pmf(lam)) > 1.95


def test_poisson_edges_geometric_rademacher_multinomial():
    out = np.asarray(random.poisson(KEY, np.array([-1.0, np.nan, 0.0, 3.0])))
    assert list(out[:3]) == [-1, -1, 0] and out[3] >= 0
    jitted = fnad.jit(lambda k: random.poisson(k, 12.0, (6,)))(KEY)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(random.poisson(KEY, 12.0, (6,))))
    g = random.geometric(KEY, 0.3, (N,))
    assert g.dtype == np.int32 and int(np.asarray(g).min()) >= 1
    assert _pmf_gap(g, lambda k: np.where(k >= 1, 0.3 * 0.7 ** (k - 1.0), 0)) < 1.95
    r = np.asarray(random.rademacher(KEY, (N,)))
    assert set(np.unique(r)) == {-1, 1} and abs(r.mean()) < 4 / math.sqrt(N)
    p = np.array([0.2, 0.3, 0.5])
    m = np.asarray(random.multinomial(KEY, 10, p, shape=(N, 3)))
    assert m.shape == (N, 3) and np.all(m.sum(-1) == 10)
    np.testing.assert_allclose(m.mean(0), 10 * p, atol=0.05)
    np.testing.assert_allclose(m.var(0), 10 * p * (1 - p), rtol=0.06)
    m = np.asarray(random.multinomial(KEY, np.array([4.0, 0.0, 7.0]), p))
    np.testing.assert_array_equal(m.sum(-1), [4, 0, 7])


def test_orthogonal_is_haar():
    q = np.asarray(random.orthogonal(KEY, 4, (5000,), np.float64))
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), q.shape),
                               atol=1e-12)
    # Haar: every entry has mean 0 and variance 1/n; det is +1 or -1 equally often
    np.testing.assert_allclose(q.mean(0), 0, atol=0.03)
    np.testing.assert_allclose((q ** 2).mean(0), 0.25, atol=0.02)
    assert abs(np.sign(np.linalg.det(q)).mean()) < 0.06
    wide = np.asarray(random.orthogonal(KEY, 3, m=5))
    assert wide.shape == (3, 5)
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-6)


def test_clone_and_errors():
    np.testing.assert_array_equal(np.asarray(random.clone(KEY)), np.asarray(KEY))
    with pytest.raises(fnad.DTypeError, match="key"):
        random.laplace(np.zeros(3), (2,))
    with pytest.raises(fnad.DTypeError):
        random.poisson(KEY, 1.0, (2,), np.float32)
    with pytest.raises(ValueError, match="dimension"):
        random.ball(KEY, 0)


def test_multivariate_normal_methods_allow_singular_cov():
    cov = np.array([[1.0, 1.0], [1.0, 1.0]])      # rank one: x0 == x1 exactly
    for method in ("eigh", "svd"):
        x = np.asarray(random.multivariate_normal(KEY, np.zeros(2), cov, (N,), np.float64,
                                                  method=method))
        np.testing.assert_allclose(x[:, 0], x[:, 1], atol=1e-7)
        np.testing.assert_allclose(x[:, 0].var(), 1.0, rtol=0.05)
    with pytest.raises(ValueError, match="method"):
        random.multivariate_normal(KEY, np.zeros(2), cov, method="lu")


@pytest.mark.parametrize("n,shape,m", [(4, (2,), None), (3, (), 5), (5, (), 3)])
def test_orthogonal_matches_jax(n, shape, m):
    jax = pytest.importorskip("jax")
    ours = np.asarray(random.orthogonal(random.key(1), n, shape, m=m))
    theirs = np.asarray(jax.random.orthogonal(jax.random.key(1), n, shape, m=m))
    np.testing.assert_allclose(ours, theirs, atol=2e-6)


def _trigamma(a):
    k = np.arange(200000)
    return float(np.sum(1 / (a + k) ** 2) + 1 / (a + 200000 - 0.5))


@pytest.mark.parametrize("a", [0.05, 0.7, 3.0, 40.0])
def test_gamma_implicit_derivative_in_expectation(a):
    """Per-sample derivatives dz/da average to d/da of the distribution's moments:
    E[z] = a (derivative 1), E[log z] = digamma(a) (derivative trigamma(a))."""
    draw = lambda a: random.gamma(KEY, a, (N,), np.float64)    # noqa: E731
    d_mean = float(fnad.grad(lambda a: draw(a).mean())(np.float64(a)))
    assert abs(d_mean - 1) < 0.05
    d_log = float(fnad.grad(lambda a: random.loggamma(KEY, a, (N,), np.float64).mean())(
        np.float64(a)))
    np.testing.assert_allclose(d_log, _trigamma(a), rtol=0.03)
    # jit, jvp and grad agree
    jitted = float(fnad.jit(fnad.grad(lambda a: draw(a).mean()))(np.float64(a)))
    np.testing.assert_allclose(jitted, d_mean, rtol=1e-12)
    tangent = fnad.jvp(lambda a: draw(a).mean(), (np.float64(a),), (np.float64(1.0),))[1]
    np.testing.assert_allclose(float(tangent), d_mean, rtol=1e-12)


def test_gamma_family_derivatives():
    # Beta(a, b): d/da E[x] = b / (a + b)^2
    a, b = 2.0, 3.0
    d = fnad.grad(lambda a: random.beta(KEY, a, b, (N,), np.float64).mean())(np.float64(a))
    np.testing.assert_allclose(float(d), b / (a + b) ** 2, rtol=0.05)
    # Dirichlet(alpha): d/d alpha_0 E[x_0] = (A - alpha_0) / A^2
    alpha = np.array([1.0, 2.0, 3.0])
    d = fnad.grad(lambda al: random.dirichlet(KEY, al, (N,), np.float64)[:, 0].mean())(alpha)
    np.testing.assert_allclose(np.asarray(d), [5 / 36, -1 / 36, -1 / 36], atol=0.01)
    # chi-squared: E = df, so the derivative of the mean is 1
    d = fnad.grad(lambda df: random.chisquare(KEY, df, (N,), np.float64).mean())(4.0)
    np.testing.assert_allclose(float(d), 1.0, rtol=0.05)
    # batched derivatives: one per shape parameter
    g = fnad.vmap(fnad.grad(lambda a: random.gamma(KEY, a, (2000,), np.float64).mean()))(
        np.array([0.5, 5.0]))
    np.testing.assert_allclose(np.asarray(g), 1.0, atol=0.06)
    # a draw with a constant shape is an ordinary constant
    g = fnad.grad(lambda x: (x * random.gamma(KEY, 2.0, (3,))).sum())(2.0)
    np.testing.assert_allclose(float(g), float(np.asarray(random.gamma(KEY, 2.0, (3,))).sum()),
                               rtol=1e-6)
    # transformations of uniforms are differentiable in their parameters: d/ds of
    # s * sqrt(2 E) is sqrt(2 E)
    g = fnad.grad(lambda s: random.rayleigh(KEY, s, (4,)).sum())(3.0)
    np.testing.assert_allclose(float(g), float(np.asarray(random.rayleigh(KEY, 1.0, (4,))).sum()),
                               rtol=1e-5)


def test_gamma_sample_derivative_is_the_inverse_cdf_one():
    """z = P^-1(a, u) for the u = P(a, z) each sample sits at: dz/da by finite
    differences of scipy's inverse incomplete gamma function."""
    special = pytest.importorskip("scipy.special")
    for a in (0.3, 2.5, 60.0):
        z = np.asarray(random.gamma(KEY, a, (6,), np.float64))
        d = np.asarray(fnad.jvp(lambda s: random.gamma(KEY, s, (6,), np.float64),
                                (np.float64(a),), (np.float64(1.0),))[1])
        u, h = special.gammainc(a, z), 1e-6 * a
        ref = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
        np.testing.assert_allclose(d, ref, rtol=2e-5)


def _binomial_pmf(n, p):
    lg = np.vectorize(math.lgamma)
    return lambda k: np.exp(lg(n + 1.0) - lg(k + 1.0) - lg(n - k + 1.0) + k * math.log(p)
                            + (n - k) * math.log1p(-p))


@pytest.mark.parametrize("n,p", [(10, 0.3), (1000, 0.004), (60, 0.8), (10 ** 6, 0.4)])
def test_binomial(n, p):
    x = random.binomial(KEY, n, p, (N,))
    assert x.dtype == np.float32 and x.shape == (N,)
    counts = np.asarray(x).astype(np.int64)
    assert _pmf_gap(counts, _binomial_pmf(n, p)) < 1.95
    shift = max(1, int(0.05 * math.sqrt(n * p * (1 - p)) + 0.05 * n * p))
    assert _pmf_gap(counts + shift, _binomial_pmf(n, p)) > 1.95


def test_binomial_edges_jit_vmap_and_multinomial_of_a_traced_n():
    out = np.asarray(random.binomial(KEY, np.array([-1.0, 5.0, 5.0, 5.0, 0.0]),
                                     np.array([0.5, 1.5, 0.0, 1.0, 0.3])))
    assert np.isnan(out[0]) and np.isnan(out[1]) and list(out[2:]) == [0, 5, 0]
    eager = np.asarray(random.binomial(KEY, 20.0, 0.6, (4,)))
    np.testing.assert_array_equal(
        np.asarray(fnad.jit(lambda k: random.binomial(k, 20.0, 0.6, (4,)))(KEY)), eager)
    batched = np.asarray(fnad.vmap(lambda n: random.binomial(KEY, n, 0.6, (3,)))(
        np.array([5.0, 50.0])))
    assert np.all(batched[0] <= 5) and np.all(batched[1] <= 50)
    counts = np.asarray(fnad.jit(lambda n: random.multinomial(KEY, n, np.array([0.2, 0.8])))(
        np.array([3.0, 9.0])))
    np.testing.assert_array_equal(counts.sum(-1), [3, 9])


def test_counts_saturate_instead_of_wrapping():
    p = np.array([0.0, 1.0, 1.5, np.nan, -0.1, 1e-30], np.float32)
    top = np.iinfo(np.int32).max
    np.testing.assert_array_equal(np.asarray(random.geometric(KEY, p)),
                                  [top, 1, -1, -1, -1, top])
    np.testing.assert_array_equal(np.asarray(random.geometric(KEY, p, dtype=np.int8)),
                                  [127, 1, -1, -1, -1, 127])
    lam = np.array([1e10, np.inf, -np.inf])
    np.testing.assert_array_equal(np.asarray(random.poisson(KEY, lam)), [top, top, -1])
    wide = np.asarray(random.poisson(KEY, 1e10, (500,), dtype=np.int64))
    assert abs(wide.mean() - 1e10) < 4 * math.sqrt(1e10 / 500)
    with pytest.raises(fnad.DTypeError, match="signed"):
        random.geometric(KEY, 0.5, dtype=np.uint8)
    out = np.asarray(random.binomial(KEY, np.array([np.inf, 1e15]), 0.5))
    assert np.isnan(out[0]) and abs(out[1] - 5e14) < 6 * math.sqrt(2.5e14)


def test_categorical_without_replacement():
    p = np.array([0.1, 0.2, 0.7])
    keys = random.split(random.key(1), N)
    d = np.asarray(fnad.vmap(lambda k: random.categorical(k, np.log(p), shape=(2,),
                                                          replace=False))(keys))
    assert np.all(d[:, 0] != d[:, 1])
    np.testing.assert_allclose(np.bincount(d[:, 0], minlength=3) / N, p, atol=0.012)
    # the second draw follows softmax over the categories left after the first
    second = [sum(p[j] * p[i] / (1 - p[j]) for j in range(3) if j != i) for i in range(3)]
    np.testing.assert_allclose(np.bincount(d[:, 1], minlength=3) / N, second, atol=0.012)
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]))
    out = np.asarray(random.categorical(KEY, logits, axis=0, shape=(2, 3), replace=False))
    assert out.shape == (2, 3) and np.all(out[0] != out[1])
    with pytest.raises(ValueError, match="distinct"):
        random.categorical(KEY, logits, shape=(4, 2), replace=False)
