"""Gaussian-process regression: fit the kernel's hyperparameters by gradient descent on
the log marginal likelihood, then predict a posterior mean and variance.

The kernel is a squared exponential, k(x, x') = s^2 exp(-|x - x'|^2 / (2 l^2)), plus
observation noise sigma^2 on the diagonal; the hyperparameters (s, l, sigma) are
optimized in log space with optim.adam. The data's log marginal likelihood is the
density of y under N(0, K) (fnad.scipy.stats.multivariate_normal.logpdf, which
factors K = L L^T), and its gradient with respect to the hyperparameters goes back
through the Cholesky factorization and the triangular solve. The posterior is written
out with fnad.scipy.linalg: with alpha = K^-1 y (cho_solve) and v = L^-1 K(x, x*)
(solve_triangular), mean = K(x*, x) alpha and variance = s^2 - |v|^2 per point.
The script checks itself against
numpy: the log likelihood and the posterior mean, recomputed with np.linalg at the
fitted hyperparameters, must agree to 1e-8, and the fit must find the noise level and
the function the data came from.

    python examples/gaussian_process.py [--quick]
"""
import argparse
import math
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import optim
from fnad.scipy import linalg, stats


def kernel(params, a, b):
    """Squared-exponential covariances between the points of a (n, d) and b (m, d)."""
    amplitude, length = fnp.exp(params["log_amplitude"]), fnp.exp(params["log_length"])
    sq = fnp.sum(fnp.square(a[:, None, :] - b[None, :, :]), axis=-1)
    return amplitude ** 2 * fnp.exp(-sq / (2 * length ** 2))


def train_covariance(params, x):
    noise = fnp.exp(2 * params["log_noise"])
    return kernel(params, x, x) + noise * fnp.eye(x.shape[0])


def log_marginal_likelihood(params, x, y):
    return stats.multivariate_normal.logpdf(y, fnp.zeros(x.shape[0], y.dtype),
                                            train_covariance(params, x))


def posterior(params, x, y, x_new):
    """Posterior mean and variance of f(x_new) given noisy observations y at x."""
    chol = linalg.cholesky(train_covariance(params, x), lower=True)
    alpha = linalg.cho_solve((chol, True), y)
    cross = kernel(params, x, x_new)                      # (n, m)
    mean = fnp.matmul(fnp.transpose(cross), alpha)
    v = linalg.solve_triangular(chol, cross, lower=True)
    prior_var = fnp.exp(2 * params["log_amplitude"])
    return mean, prior_var - fnp.sum(fnp.square(v), axis=0)


def numpy_reference(params, x, y, x_new):
    """The same quantities in plain numpy (solve and slogdet, no Cholesky)."""
    p = {k: float(v) for k, v in params.items()}

    def k(a, b):
        sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return math.exp(2 * p["log_amplitude"]) * np.exp(-sq / (2 * math.exp(2 * p["log_length"])))
    cov = k(x, x) + math.exp(2 * p["log_noise"]) * np.eye(len(x))
    _, logdet = np.linalg.slogdet(cov)
    loglik = -0.5 * y @ np.linalg.solve(cov, y) - 0.5 * logdet - 0.5 * len(x) * math.log(2 * math.pi)
    return loglik, k(x, x_new).T @ np.linalg.solve(cov, y)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer points and steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n, steps = (40, 150) if args.quick else (120, 400)
    true_noise = 0.1

    rng = np.random.RandomState(args.seed)
    x = np.sort(rng.uniform(-3, 3, (n, 1)), axis=0)
    truth = lambda t: np.sin(2 * t[:, 0]) + 0.3 * t[:, 0]    # noqa: E731
    y = truth(x) + true_noise * rng.randn(n)
    x_test = np.linspace(-2.5, 2.5, 50)[:, None]

    params = {"log_amplitude": np.array(0.0), "log_length": np.array(0.0),
              "log_noise": np.array(math.log(0.5))}
    opt = optim.adam(0.05)
    opt_state = opt.init(params)

    @fnad.jit
    def step(params, opt_state):
        loss, grads = fnad.value_and_grad(lambda p: -log_marginal_likelihood(p, x, y))(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    print(f"GP regression on {n} noisy points of sin(2x) + 0.3x, {steps} Adam steps")
    start = time.perf_counter()
    for i in range(steps):
        params, opt_state, loss = step(params, opt_state)
        if i % max(steps // 5, 1) == 0 or i == steps - 1:
            print(f"step {i:4d}  -log p(y) {float(loss):9.4f}  amplitude "
                  f"{math.exp(float(params['log_amplitude'])):.3f}  length "
                  f"{math.exp(float(params['log_length'])):.3f}  noise "
                  f"{math.exp(float(params['log_noise'])):.3f}")
    mean, var = fnad.jit(posterior)(params, x, y, x_test)
    mean, var = np.asarray(mean), np.asarray(var)
    print(f"fitted in {time.perf_counter() - start:.1f} s")

    ref_loglik, ref_mean = numpy_reference(params, x, y, x_test)
    loglik = float(log_marginal_likelihood(params, x, y))
    rmse = float(np.sqrt(np.mean((mean - truth(x_test)) ** 2)))
    noise = math.exp(float(params["log_noise"]))
    print(f"log likelihood {loglik:.6f} (numpy {ref_loglik:.6f}); posterior mean vs numpy "
          f"{np.abs(mean - ref_mean).max():.2e}; rmse vs the true function {rmse:.4f}; "
          f"noise {noise:.3f} (true {true_noise}); posterior std "
          f"{np.sqrt(var.min()):.3f}..{np.sqrt(var.max()):.3f}")
    checks = {
        "log likelihood matches numpy": abs(loglik - ref_loglik) < 1e-8 * max(1, abs(ref_loglik)),
        "posterior mean matches numpy": np.allclose(mean, ref_mean, rtol=1e-8, atol=1e-10),
        "posterior variance is positive and below the prior's":
            bool(np.all(var > 0) and np.all(var < math.exp(2 * float(params["log_amplitude"])))),
        "noise level recovered": 0.5 * true_noise < noise < 2 * true_noise,
        "function recovered": rmse < 0.15,
    }
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
