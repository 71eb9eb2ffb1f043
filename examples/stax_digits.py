"""A convolutional digit classifier written against JAX's example libraries.

Written the way `jax.example_libraries` code is -- stax layers, an (init, update,
get_params) optimizer from `optimizers`, a jitted update step -- so that the only
fnad-specific lines are the imports and the dataset: the bundled 8x8 digits
(fnad.datasets.digits, no download) stand in for MNIST.

    python examples/stax_digits.py [--quick]
"""
import argparse
import itertools
import sys
import time

import numpy as np

import fnad as jax
import fnad.numpy as jnp
from fnad import random
from fnad.example_libraries import optimizers, stax
from fnad.example_libraries.stax import (Conv, Dense, Flatten, LogSoftmax, MaxPool, Relu,
                                         Dropout)


def loss(params, batch, predict, rng):
    inputs, targets = batch
    preds = predict(params, inputs, rng=rng)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


def accuracy(params, batch, predict):
    inputs, labels = batch
    predicted_class = jnp.argmax(predict(params, inputs, mode="test"), axis=1)
    return float(jnp.mean(predicted_class == labels))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    epochs, target = (5, 0.85) if args.quick else (15, 0.95)
    step_size, batch_size, momentum_mass = 0.05, 64, 0.9

    train_x, train_y = jax.datasets.digits("train", seed=args.seed)
    test_x, test_y = jax.datasets.digits("test", seed=args.seed)
    train_x, test_x = train_x[..., None], test_x[..., None]        # NHWC, one channel
    train_onehot = np.eye(10, dtype=np.float32)[train_y]

    # Dropout keeps each activation with probability 0.9 while training; in
    # mode="test" it passes everything through.
    init_random_params, predict_train = stax.serial(
        Conv(16, (3, 3), padding="SAME"), Relu, MaxPool((2, 2), (2, 2)),
        Conv(32, (3, 3), padding="SAME"), Relu, Flatten,
        Dense(64), Relu, Dropout(0.9), Dense(10), LogSoftmax)

    def predict(params, inputs, rng=None, mode="train"):
        return predict_train(params, inputs, rng=rng if rng is not None else random.key(0),
                             mode=mode)

    rng = random.key(args.seed)
    _, init_params = init_random_params(rng, (-1, 8, 8, 1))
    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

    @jax.jit
    def update(i, opt_state, batch, rng):
        params = get_params(opt_state)
        return opt_update(i, jax.grad(loss)(params, batch, predict, rng), opt_state)

    num_batches = len(train_x) // batch_size
    perm_rng = np.random.RandomState(args.seed)

    def data_stream():
        while True:
            perm = perm_rng.permutation(len(train_x))
            for i in range(num_batches):
                idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_x[idx], train_onehot[idx]

    batches = data_stream()
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    print(f"stax CNN on {len(train_x)} training / {len(test_x)} test digits, {epochs} "
          f"epochs, batch {batch_size}, momentum SGD")
    start = time.perf_counter()
    for epoch in range(epochs):
        for _ in range(num_batches):
            i = next(itercount)
            opt_state = update(i, opt_state, next(batches), random.fold_in(rng, i))
        params = get_params(opt_state)
        train_acc = accuracy(params, (train_x, train_y), predict)
        test_acc = accuracy(params, (test_x, test_y), predict)
        print(f"epoch {epoch + 1:2d}  train accuracy {train_acc:.4f}  "
              f"test accuracy {test_acc:.4f}")
    test_acc = accuracy(get_params(opt_state), (test_x, test_y), predict)
    print(f"final test accuracy {test_acc:.4f} (target >= {target}, chance 0.1) in "
          f"{time.perf_counter() - start:.1f} s")
    if test_acc < target:
        print(f"FAILED: test accuracy {test_acc:.4f} is below {target}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
