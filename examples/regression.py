"""Fit y = w x^2 + b to noisy samples of y = 3 x^2 + 2 by plain gradient descent.

The parameters are a pytree (a dict {"w", "b"}); the whole update step — loss,
gradient and the descent step on every leaf — is one jitted function.

    python examples/regression.py [--quick]
"""
import argparse
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp

TRUE_W, TRUE_B = 3.0, 2.0


def make_data(n, noise, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    y = (TRUE_W * x ** 2 + TRUE_B + noise * rng.standard_normal(n)).astype(np.float32)
    return fnp.asarray(x), fnp.asarray(y)


def predict(params, x):
    return params["w"] * x ** 2 + params["b"]


def loss(params, x, y):
    return fnp.mean((predict(params, x) - y) ** 2)


@fnad.jit
def step(params, x, y, lr):
    value, grads = fnad.value_and_grad(loss)(params, x, y)
    params = fnad.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n, steps = (256, 300) if args.quick else (4096, 1000)
    x, y = make_data(n, noise=0.1, seed=args.seed)

    params = {"w": fnp.zeros((), fnp.float32), "b": fnp.zeros((), fnp.float32)}
    start = time.perf_counter()
    for i in range(steps):
        params, value = step(params, x, y, 0.5)
        if i % (steps // 5) == 0 or i == steps - 1:
            print(f"step {i:4d}  loss {float(value):.5f}  "
                  f"w {float(params['w']):.4f}  b {float(params['b']):.4f}")
    elapsed = time.perf_counter() - start
    w, b = float(params["w"]), float(params["b"])
    print(f"recovered w = {w:.4f} (true {TRUE_W}), b = {b:.4f} (true {TRUE_B}) "
          f"after {steps} steps in {elapsed:.2f} s")
    if abs(w - TRUE_W) > 0.1 or abs(b - TRUE_B) > 0.1:
        print("FAILED: the fit is more than 0.1 away from the true parameters")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
