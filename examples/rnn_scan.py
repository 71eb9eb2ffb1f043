"""A tanh RNN (32 hidden units) written with fnad.lax.scan, trained to continue sine
waves.

Each training sequence is a sine wave with a random frequency and phase; at every
step the RNN reads the current value and predicts the next one. The recurrence is
one `lax.scan` over time, so `grad` differentiates through the whole unrolled
sequence (backpropagation through time) and `jit` compiles the scan, its gradient
and the Adam update as one program. After training, the RNN runs closed-loop: a
second scan feeds each prediction back in as the next input to continue a wave it
has only seen the start of.

    python examples/rnn_scan.py [--quick]
"""
import argparse
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import lax, nn, optim, random

HIDDEN = 32


def init_params(key, hidden=HIDDEN):
    k1, k2, k3 = random.split(key, 3)
    return {"W_xh": random.normal(k1, (1, hidden)) * 0.5,
            "W_hh": random.normal(k2, (hidden, hidden)) * (0.9 / hidden ** 0.5),
            "b_h": fnp.zeros(hidden),
            "W_hy": random.normal(k3, (hidden, 1)) * (1.0 / hidden ** 0.5),
            "b_y": fnp.zeros(1)}


def cell(params, h, x):
    """One step: new hidden state [batch, hidden] and prediction [batch, 1]."""
    h = fnp.tanh(x @ params["W_xh"] + h @ params["W_hh"] + params["b_h"])
    return h, h @ params["W_hy"] + params["b_y"]


def run(params, xs):
    """Predictions for every step of xs [time, batch, 1], by a scan over time."""
    h0 = fnp.zeros((xs.shape[1], HIDDEN), fnp.float32)
    _, ys = lax.scan(lambda h, x: cell(params, h, x), h0, xs)
    return ys


def loss(params, xs, targets):
    return nn.mse(run(params, xs), targets)


def continue_wave(params, prefix, steps):
    """Read prefix [time, batch, 1], then feed each prediction back in for `steps`."""
    h0 = fnp.zeros((prefix.shape[1], HIDDEN), fnp.float32)
    h, ys = lax.scan(lambda h, x: cell(params, h, x), h0, prefix)

    def closed_loop(carry, _):
        h, y = carry
        h, y = cell(params, h, y)
        return (h, y), y
    _, future = lax.scan(closed_loop, (h, ys[-1]), None, length=steps)
    return future


def sine_batch(rng, batch, length, dt=0.2):
    """Waves sin(f t + phase) sampled at length + 1 points: [length + 1, batch, 1]."""
    freq = rng.uniform(0.5, 1.5, (1, batch, 1))
    phase = rng.uniform(0, 2 * np.pi, (1, batch, 1))
    t = np.arange(length + 1).reshape(-1, 1, 1) * dt
    return np.sin(freq * t + phase).astype(np.float32)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter sequences")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps, length, batch = (150, 30, 32) if args.quick else (600, 50, 64)
    required_factor = 10.0

    rng = np.random.default_rng(args.seed)
    params = init_params(random.key(args.seed))
    opt = optim.adam(1e-2)
    opt_state = opt.init(params)

    @fnad.jit
    def step(params, opt_state, xs, targets):
        value, grads = fnad.value_and_grad(loss)(params, xs, targets)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, value

    held_out = fnp.asarray(sine_batch(np.random.default_rng(10_000 + args.seed), 256, length))
    eval_loss = fnad.jit(loss)
    initial = float(eval_loss(params, held_out[:-1], held_out[1:]))
    print(f"RNN (tanh, {HIDDEN} hidden) on sine waves: {steps} Adam steps, batches of "
          f"{batch} sequences of {length} steps")
    print(f"step    0  held-out next-step MSE {initial:.5f}")
    start = time.perf_counter()
    for i in range(1, steps + 1):
        waves = fnp.asarray(sine_batch(rng, batch, length))
        params, opt_state, value = step(params, opt_state, waves[:-1], waves[1:])
        if i % (steps // 5) == 0:
            print(f"step {i:4d}  train MSE {float(value):.5f}  held-out MSE "
                  f"{float(eval_loss(params, held_out[:-1], held_out[1:])):.5f}")
    final = float(eval_loss(params, held_out[:-1], held_out[1:]))
    factor = initial / final
    print(f"held-out MSE {initial:.5f} -> {final:.5f}: {factor:.0f}x lower "
          f"in {time.perf_counter() - start:.1f} s")

    prefix_len, horizon = length, 20
    waves = sine_batch(np.random.default_rng(20_000 + args.seed), 8, prefix_len + horizon)
    future = np.asarray(fnad.jit(continue_wave, static_argnums=2)(
        params, fnp.asarray(waves[:prefix_len]), horizon))
    truth = waves[prefix_len + 1:prefix_len + horizon + 1]
    rms = float(np.sqrt(np.mean((future - truth) ** 2)))
    print(f"closed-loop continuation of {horizon} steps after a {prefix_len}-step prefix: "
          f"RMS error {rms:.3f} (the waves have amplitude 1)")
    print("  true: ", np.array2string(truth[:8, 0, 0], precision=2))
    print("  rnn:  ", np.array2string(future[:8, 0, 0], precision=2))

    if factor < required_factor:
        print(f"FAILED: the loss dropped only {factor:.1f}x (need {required_factor:.0f}x)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
