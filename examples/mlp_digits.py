"""Train a multilayer perceptron on the bundled 8x8 digits.

The network is a stax-style (init, apply) pair from fnad.nn, the optimizer is
optim.adam, and one jitted step does the forward pass, the backward pass and the
Adam update. fnad.data.batches shuffles the training set differently each epoch.

    python examples/mlp_digits.py [--quick]
"""
import argparse
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import nn, optim, random


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller net, fewer epochs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    hidden, epochs, target = (32, 5, 0.85) if args.quick else (128, 20, 0.95)
    batch_size = 64

    (train_x, train_y) = fnad.datasets.digits("train", seed=args.seed)
    (test_x, test_y) = fnad.datasets.digits("test", seed=args.seed)
    train_x, test_x = train_x.reshape(-1, 64), test_x.reshape(-1, 64)

    init, apply = nn.serial(nn.Dense(hidden), nn.Relu, nn.Dense(hidden), nn.Relu,
                            nn.Dense(10))
    key = random.key(args.seed)
    _, params = init(key, (-1, 64))
    opt = optim.adam(3e-3)
    opt_state = opt.init(params)

    def loss_fn(params, x, y):
        return nn.softmax_cross_entropy(apply(params, x), y)

    @fnad.jit
    def step(params, opt_state, x, y):
        loss, grads = fnad.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    @fnad.jit
    def predict(params, x):
        return fnp.argmax(apply(params, x), axis=-1)

    def accuracy(params, x, y):
        return float(np.mean(np.asarray(predict(params, fnp.asarray(x))) == y))

    print(f"MLP 64-{hidden}-{hidden}-10 on {len(train_x)} training / {len(test_x)} test "
          f"digits, {epochs} epochs, batch {batch_size}")
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        losses = []
        for x, y in fnad.data.batches((train_x, train_y), batch_size,
                                      key=random.fold_in(key, epoch)):
            params, opt_state, loss = step(params, opt_state, x, y)
            losses.append(float(loss))
        print(f"epoch {epoch:2d}  train loss {np.mean(losses):.4f}  "
              f"test accuracy {accuracy(params, test_x, test_y):.4f}")
    acc = accuracy(params, test_x, test_y)
    print(f"final test accuracy {acc:.4f} (target >= {target}) "
          f"in {time.perf_counter() - start:.1f} s")
    if acc < target:
        print(f"FAILED: test accuracy {acc:.4f} is below {target}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
