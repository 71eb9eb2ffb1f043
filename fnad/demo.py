"""python -m fnad.demo: fit a small MLP to noisy data with fnad.grad, in eager mode.

Shows the workflow fnad is for: parameters as a pytree, a pure loss function,
`value_and_grad`, and an update written with `tree_map`. A training demo on the
bundled digits dataset with a jitted step replaces this as the library grows."""
import argparse
import time

import numpy as np

import fnad
import fnad.numpy as fnp


def init_params(rng, sizes):
    return [{"w": fnp.asarray(rng.standard_normal((m, n)) * np.sqrt(2.0 / m), np.float32),
             "b": fnp.zeros(n)} for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for layer in params[:-1]:
        x = fnp.tanh(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return fnp.mean((predict(params, x) - y) ** 2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    x = rng.uniform(-3, 3, (256, 1)).astype(np.float32)
    y = np.sin(x) + 0.05 * rng.standard_normal(x.shape).astype(np.float32)
    x, y = fnp.asarray(x), fnp.asarray(y)
    params = init_params(rng, [1, 32, 32, 1])
    value_and_grad = fnad.value_and_grad(loss_fn)

    start = time.perf_counter()
    for step in range(args.steps + 1):
        loss, grads = value_and_grad(params, x, y)
        params = fnad.tree_util.tree_map(lambda p, g: p - args.lr * g, params, grads)
        if step % (args.steps // 5 or 1) == 0:
            print(f"step {step:5d}  loss {float(loss):.5f}")
    elapsed = time.perf_counter() - start
    print(f"{args.steps} eager gradient steps in {elapsed:.2f} s "
          f"({1e3 * elapsed / args.steps:.2f} ms/step)")

    # Derivatives of the trained model: d/dx of the fit should approximate cos(x).
    probe = fnp.asarray([[0.0], [1.0], [2.0]])
    dfdx = [float(fnad.grad(lambda t: predict(params, fnp.reshape(t, (1, 1)))[0, 0])(p[0]))
            for p in probe]
    print("d/dx fit at 0, 1, 2:", np.round(dfdx, 3), " cos:", np.round(np.cos([0, 1, 2]), 3))
    return float(loss)


if __name__ == "__main__":
    main()
