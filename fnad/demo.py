"""python -m fnad.demo: train a small convolutional network on the bundled 8x8
handwritten digits with a jitted update step, save a checkpoint, reload it and
check that it gives the same test accuracy.

Everything is a pure function of pytrees: the network is an (init, apply) pair,
the optimizer an (init, update) pair, the step `params, opt_state, loss =
step(params, opt_state, batch)` one compiled program."""
import argparse
import os
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import nn, optim, random


MODELS = {
    "cnn": lambda: nn.serial(
        nn.Conv(16, (3, 3), padding="SAME"), nn.Relu,
        nn.Conv(32, (3, 3), padding="SAME"), nn.Relu, nn.MaxPool((2, 2)),
        nn.Flatten, nn.Dense(64), nn.Relu, nn.Dense(10)),
    "mlp": lambda: nn.serial(nn.Flatten, nn.Dense(128), nn.Relu, nn.Dense(10)),
}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m fnad.demo",
        description="Train a small network on the bundled 8x8 digits with fnad.")
    parser.add_argument("--epochs", type=int, default=12, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--model", choices=sorted(MODELS), default="cnn")
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default="fnad-demo-output",
                        help="where the checkpoint and the loss curve go")
    return parser.parse_args(argv)


def accuracy(apply, params, images, labels, batch_size=512):
    predict = fnad.jit(lambda p, x: fnp.argmax(apply(p, x, train=False), axis=-1))
    correct = 0
    for start in range(0, len(images), batch_size):
        x = fnp.asarray(images[start:start + batch_size])
        correct += int(np.sum(np.asarray(predict(params, x)) == labels[start:start + batch_size]))
    return correct / len(images)


def progress(epoch, epochs, done, total, loss, width=30):
    filled = int(width * done / total)
    bar = "#" * filled + "-" * (width - filled)
    sys.stdout.write(f"\repoch {epoch:2d}/{epochs} [{bar}] {done:4d}/{total} loss {loss:.4f}")
    sys.stdout.flush()


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    (train_x, train_y), (test_x, test_y) = (fnad.datasets.digits("train", seed=args.seed),
                                            fnad.datasets.digits("test", seed=args.seed))
    train_x, test_x = train_x[..., None], test_x[..., None]     # NHWC, one channel

    init, apply = MODELS[args.model]()
    key = random.key(args.seed)
    _, params = init(key, (-1,) + train_x.shape[1:])
    opt = optim.adam(args.learning_rate)
    opt_state = opt.init(params)

    def loss_fn(params, x, y):
        return nn.softmax_cross_entropy(apply(params, x), y)

    @fnad.jit
    def step(params, opt_state, x, y):
        loss, grads = fnad.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    print(f"fnad demo: {args.model} on {len(train_x)} training and {len(test_x)} test "
          f"digits, {args.epochs} epochs of batches of {args.batch_size}")
    losses = []
    total = -(-len(train_x) // args.batch_size)
    for epoch in range(1, args.epochs + 1):
        epoch_losses = []
        batches = fnad.data.batches((train_x, train_y), args.batch_size,
                                    key=random.fold_in(key, epoch))
        for i, (x, y) in enumerate(batches, 1):
            params, opt_state, loss = step(params, opt_state, x, y)
            epoch_losses.append(float(loss))
            progress(epoch, args.epochs, i, total, float(np.mean(epoch_losses)))
        losses.append(float(np.mean(epoch_losses)))
        acc = accuracy(apply, params, test_x, test_y)
        print(f"  test accuracy {acc:.4f}")

    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, "params.safetensors")
    fnad.io.save(path, params)
    restored = fnad.io.load(path, like=params)
    final = accuracy(apply, params, test_x, test_y)
    reloaded = accuracy(apply, restored, test_x, test_y)
    print(f"saved {path}; test accuracy {final:.4f} before and {reloaded:.4f} after reloading")
    if reloaded != final:
        raise SystemExit("the reloaded checkpoint does not reproduce the test accuracy")
    _plot(losses, os.path.join(args.output_dir, "loss.png"))
    print(f"done in {time.perf_counter() - start:.1f} s")
    return final


def _plot(losses, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no loss curve)")
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(range(1, len(losses) + 1), losses, marker="o")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss")
    ax.set_yscale("log")
    ax.set_title("fnad demo: digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"loss curve: {path}")


if __name__ == "__main__":
    main()
