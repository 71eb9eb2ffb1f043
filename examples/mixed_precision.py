"""Mixed-precision training on the bundled 8x8 digits, both ways fnad.amp offers.

1. The JAX way, a Policy: float32 params, bfloat16 compute, float32 output. The CNN
   runs forward and backward on bfloat16 copies of its params; the loss and the Adam
   update are float32.
2. The PyTorch way, autocast + loss scaling: an MLP whose matrix products run in
   float16 (autocast decides per primitive), with a DynamicLossScale (GradScaler's
   rule) and an optimizer that skips steps whose gradients overflowed. It is compared
   with the same MLP trained in float32 from the same initialization.

Prints test accuracies and the loss-scale history; exits non-zero when the bfloat16 CNN
misses 97% or the float16 MLP is more than 0.5 points below its float32 twin (with
--quick: fewer epochs, 85% and 2 points).
"""
import argparse
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import amp, nn, optim, random


def accuracy(predict, params, images, labels):
    return float(np.mean(np.asarray(predict(params, images)) == labels))


def train(loss_of, params, opt, data, epochs, key, batch_size, loss_scale=None):
    """Adam over mini-batches; with a loss scale, the step scales the loss, unscales
    the gradients, skips non-finite steps (apply_if_finite) and adjusts the scale."""
    opt_state = opt.init(params)

    @fnad.jit
    def step(params, opt_state, scale, x, y):
        if scale is None:
            grads = fnad.grad(loss_of)(params, x, y)
        else:
            grads = scale.unscale(fnad.grad(lambda p: scale.scale(loss_of(p, x, y)))(params))
            scale = scale.adjust(amp.all_finite(grads))
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, scale

    history = []
    for epoch in range(epochs):
        for x, y in fnad.data.batches(data, batch_size, key=random.fold_in(key, epoch)):
            params, opt_state, loss_scale = step(params, opt_state, loss_scale, x, y)
            if loss_scale is not None:
                history.append(float(loss_scale.loss_scale))
    return params, opt_state, history


def bfloat16_cnn(train_x, train_y, test_x, test_y, epochs, key):
    init, apply = nn.serial(
        nn.Conv(16, (3, 3), padding="SAME"), nn.Relu,
        nn.Conv(32, (3, 3), padding="SAME"), nn.Relu, nn.MaxPool((2, 2)),
        nn.Flatten, nn.Dense(64), nn.Relu, nn.Dense(10))
    policy = amp.get_policy("params=float32,compute=bfloat16,output=float32")
    _, params = init(key, (-1,) + train_x.shape[1:])

    def logits(params, x):
        out = apply(policy.cast_to_compute(params), policy.cast_to_compute(x))
        return policy.cast_to_output(out)

    def loss_of(params, x, y):
        return nn.softmax_cross_entropy(logits(params, x), y)

    params, _, _ = train(loss_of, params, optim.adam(3e-3), (train_x, train_y), epochs, key,
                         batch_size=64)
    assert all(p.dtype == np.float32 for p in fnad.tree_util.tree_leaves(params))
    predict = fnad.jit(lambda p, x: fnp.argmax(logits(p, x), axis=-1))
    return accuracy(predict, params, test_x, test_y)


def float16_mlp(train_x, train_y, test_x, test_y, epochs, key):
    init, apply = nn.serial(nn.Flatten, nn.Dense(128), nn.Relu, nn.Dense(10))
    _, params0 = init(key, (-1,) + train_x.shape[1:])
    results = {}
    for name in ("float32", "float16"):
        forward = apply if name == "float32" else amp.autocast(apply, np.float16)

        def loss_of(params, x, y, forward=forward):
            return nn.softmax_cross_entropy(forward(params, x), y)

        scale = amp.DynamicLossScale(growth_interval=50) if name == "float16" else None
        opt = optim.adam(3e-3)
        if scale is not None:
            opt = amp.apply_if_finite(opt)
        params, opt_state, history = train(loss_of, params0, opt, (train_x, train_y),
                                           epochs, key, batch_size=64, loss_scale=scale)
        predict = fnad.jit(lambda p, x, forward=forward: fnp.argmax(forward(p, x), axis=-1))
        results[name] = accuracy(predict, params, test_x, test_y)
        if scale is not None:
            skipped = int(opt_state.notfinite_count)
            changes = [(i, s) for i, s in enumerate(history) if i == 0 or s != history[i - 1]]
            print(f"  float16 loss scale: {len(history)} steps, {skipped} skipped (overflow); "
                  f"scale at each change (step, scale): {changes[:12]}"
                  f"{' ...' if len(changes) > 12 else ''}; final {history[-1]:g}")
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few epochs (for tests)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    (train_x, train_y), (test_x, test_y) = (fnad.datasets.digits("train", seed=args.seed),
                                            fnad.datasets.digits("test", seed=args.seed))
    train_x, test_x = train_x[..., None], test_x[..., None]
    key = random.key(args.seed)

    cnn_epochs, mlp_epochs = (2, 3) if args.quick else (12, 20)
    cnn_target, mlp_gap = (0.85, 0.02) if args.quick else (0.97, 0.005)

    cnn = bfloat16_cnn(train_x, train_y, test_x, test_y, cnn_epochs, key)
    print(f"CNN, float32 params, bfloat16 compute: test accuracy {cnn:.4f}")
    mlp = float16_mlp(train_x, train_y, test_x, test_y, mlp_epochs, random.fold_in(key, 1))
    print(f"MLP test accuracy: float32 {mlp['float32']:.4f}, "
          f"float16 autocast + dynamic loss scaling {mlp['float16']:.4f}")
    print(f"done in {time.perf_counter() - start:.1f} s")
    failures = []
    if cnn < cnn_target:
        failures.append(f"bfloat16 CNN accuracy {cnn:.4f} < {cnn_target}")
    if mlp["float16"] < mlp["float32"] - mlp_gap:
        failures.append(f"float16 MLP {mlp['float16']:.4f} is more than {mlp_gap} below "
                        f"float32's {mlp['float32']:.4f}")
    if failures:
        sys.exit("; ".join(failures))


if __name__ == "__main__":
    main()
