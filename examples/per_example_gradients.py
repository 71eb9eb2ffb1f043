"""Per-example gradients by composing transforms: jit(vmap(grad(loss))).

`grad(loss)` is the gradient for ONE example; `vmap` maps it over a batch of
examples while sharing the parameters (in_axes=(None, 0, 0)); `jit` compiles the
result. The per-example gradients are checked against a Python loop of grad calls,
then used as in DP-SGD: clip each example's gradient to a maximum norm, average,
add Gaussian noise, and take a step.

    python examples/per_example_gradients.py [--quick]
"""
import argparse
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import nn, random
from fnad.tree_util import tree_map, tree_leaves


def global_norms(per_example_grads):
    """The L2 norm of each example's whole gradient pytree: shape [batch]."""
    squares = [fnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1)
               for g in tree_leaves(per_example_grads)]
    return fnp.sqrt(sum(squares))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller batch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    batch, hidden = (16, 32) if args.quick else (128, 64)
    clip_norm, noise_multiplier, lr = 1.0, 1.1, 0.5

    images, labels = fnad.datasets.digits("train", seed=args.seed)
    x = fnp.asarray(images[:batch].reshape(batch, 64))
    y = fnp.asarray(labels[:batch])

    init, apply = nn.serial(nn.Dense(hidden), nn.Tanh, nn.Dense(10))
    key = random.key(args.seed)
    _, params = init(key, (-1, 64))

    def loss(params, xi, yi):
        """The loss of one example: xi has shape [64], yi is a scalar label."""
        return nn.softmax_cross_entropy(apply(params, xi), yi)

    per_example_grads = fnad.jit(fnad.vmap(fnad.grad(loss), in_axes=(None, 0, 0)))

    start = time.perf_counter()
    grads = per_example_grads(params, x, y)
    first = time.perf_counter() - start
    start = time.perf_counter()
    grads = per_example_grads(params, x, y)
    vmapped = time.perf_counter() - start

    grad_one = fnad.grad(loss)
    start = time.perf_counter()
    looped = [grad_one(params, x[i], y[i]) for i in range(batch)]
    loop_time = time.perf_counter() - start
    worst = 0.0
    for i, g_i in enumerate(looped):
        for a, b in zip(tree_leaves(grads), tree_leaves(g_i)):
            worst = max(worst, float(np.max(np.abs(np.asarray(a)[i] - np.asarray(b)))))
    shapes = [tuple(g.shape) for g in tree_leaves(grads)]
    print(f"per-example gradient leaves: {shapes}")
    print(f"largest difference from a loop of {batch} grad calls: {worst:.2e}")
    print(f"jit(vmap(grad)): first call {first * 1e3:.1f} ms (traces and compiles), "
          f"then {vmapped * 1e3:.2f} ms; Python loop of grads: {loop_time * 1e3:.1f} ms")

    norms = np.asarray(global_norms(grads))
    print("per-example gradient norms (first 8):",
          np.array2string(norms[:8], precision=3, max_line_width=100))
    print(f"  min {norms.min():.3f}  median {np.median(norms):.3f}  max {norms.max():.3f}; "
          f"{int(np.sum(norms > clip_norm))} of {batch} exceed the clip norm {clip_norm}")

    # DP-SGD: clip each example's gradient, average, add noise scaled to the clip norm.
    @fnad.jit
    def dp_sgd_step(params, x, y, key):
        g = fnad.vmap(fnad.grad(loss), in_axes=(None, 0, 0))(params, x, y)
        scale = fnp.minimum(1.0, clip_norm / (global_norms(g) + 1e-12))
        clipped = tree_map(lambda leaf: leaf * scale.reshape((-1,) + (1,) * (leaf.ndim - 1)),
                           g)
        leaves, treedef = fnad.tree_util.tree_flatten(clipped)
        keys = random.split(key, len(leaves))
        noisy = [fnp.sum(leaf, axis=0) + noise_multiplier * clip_norm
                 * random.normal(k, leaf.shape[1:], leaf.dtype)
                 for leaf, k in zip(leaves, keys)]
        mean = fnad.tree_util.tree_unflatten(treedef, [n / x.shape[0] for n in noisy])
        return tree_map(lambda p, d: p - lr * d, params, mean), global_norms(clipped)

    batch_loss = fnad.jit(lambda p, x, y: fnp.mean(fnad.vmap(loss, (None, 0, 0))(p, x, y)))
    before = float(batch_loss(params, x, y))
    new_params, clipped_norms = dp_sgd_step(params, x, y, random.fold_in(key, 1))
    after = float(batch_loss(new_params, x, y))
    print(f"after clipping, the largest per-example norm is "
          f"{float(np.max(np.asarray(clipped_norms))):.3f}; one noisy DP-SGD step moves the "
          f"batch loss {before:.4f} -> {after:.4f}")

    ok = worst < 1e-5 and float(np.max(np.asarray(clipped_norms))) <= clip_norm + 1e-5
    if not ok:
        print("FAILED: per-example gradients disagree with the loop, or clipping failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
