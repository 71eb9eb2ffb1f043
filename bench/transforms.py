"""Composed transforms, side by side with JAX and torch.func (float32, CPU).

  W5  per-example gradients of an MLP 784-256-10 (softmax cross-entropy), batch 128:
      fnad.jit(fnad.vmap(fnad.grad(loss), in_axes=(None, 0, 0))) vs torch.func's
      vmap(grad) and JAX's jit(vmap(grad)). The output is 128 x 203,530 floats
      (104 MB) per call, so this is bound by memory writes.
  W7  Hessian-vector product of sum(log(1 + exp(A @ x))), A 512x512, as jvp of grad,
      jitted (JAX jit; torch.func jvp(grad)).
  W8  an RNN of 64 hidden units over 200 steps (tanh(W h + U x)), the gradient of a
      squared loss through lax.scan, jitted, vs JAX's jit(grad) through lax.scan.

Results are checked across frameworks (rtol 1e-3) before timing. Medians over
interleaved rounds (bench/eager.py's harness). Targets: W5 <= 1.0x torch.func,
W7 <= 1.0x JAX jit; W8 is reported.

    .venv/bin/python bench/transforms.py [--quick] [--only W5,W7,W8]
"""
import argparse
import datetime
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from eager import measure_interleaved, cpu_model, fmt_us  # noqa: E402

RTOL = 1e-3


def _peer(name):
    try:
        return __import__(name)
    except Exception as err:      # a missing or broken peer is skipped, not fatal
        print(f"  ({name} unavailable: {type(err).__name__}: {err})")
        return None


# --------------------------------------------------------------------------- W5

def w5_data(batch=128):
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((784, 256)) * 0.05).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    w2 = (rng.standard_normal((256, 10)) * 0.05).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]    # one-hot labels
    return (w1, b1, w2, b2), x, y


def w5_fnad(params, x, y):
    import fnad
    import fnad.numpy as fnp

    def loss(p, xi, yi):
        w1, b1, w2, b2 = p
        h = fnad.nn.relu(xi @ w1 + b1)
        logits = h @ w2 + b2
        return -fnp.sum(yi * fnad.nn.log_softmax(logits))

    f = fnad.jit(fnad.vmap(fnad.grad(loss), in_axes=(None, 0, 0)))
    p = tuple(fnp.asarray(a) for a in params)
    xs, ys = fnp.asarray(x), fnp.asarray(y)
    return lambda: f(p, xs, ys), lambda out: [np.asarray(o) for o in out]


def w5_torch(params, x, y):
    torch = _peer("torch")
    if torch is None:
        return None
    from torch.func import grad, vmap
    torch.set_num_threads(os.cpu_count() or 1)

    def loss(p, xi, yi):
        w1, b1, w2, b2 = p
        h = torch.relu(xi @ w1 + b1)
        return -torch.sum(yi * torch.log_softmax(h @ w2 + b2, dim=-1))

    f = vmap(grad(loss), in_dims=(None, 0, 0))
    p = tuple(torch.from_numpy(a) for a in params)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    return lambda: f(p, xs, ys), lambda out: [o.numpy() for o in out]


def w5_jax(params, x, y):
    jax = _peer("jax")
    if jax is None:
        return None
    import jax.numpy as jnp

    def loss(p, xi, yi):
        w1, b1, w2, b2 = p
        h = jax.nn.relu(xi @ w1 + b1)
        return -jnp.sum(yi * jax.nn.log_softmax(h @ w2 + b2))

    f = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    p = tuple(jnp.asarray(a) for a in params)
    xs, ys = jnp.asarray(x), jnp.asarray(y)
    return (lambda: jax.block_until_ready(f(p, xs, ys)),
            lambda out: [np.asarray(o) for o in out])


# --------------------------------------------------------------------------- W7

def w7_data(n=512):
    rng = np.random.default_rng(1)
    A = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    v = rng.standard_normal(n).astype(np.float32)
    return A, x, v


def w7_fnad(A, x, v):
    import fnad
    import fnad.numpy as fnp
    A_ = fnp.asarray(A)

    def f(x):
        return fnp.sum(fnp.log1p(fnp.exp(A_ @ x)))

    hvp = fnad.jit(lambda x, v: fnad.jvp(fnad.grad(f), (x,), (v,))[1])
    xs, vs = fnp.asarray(x), fnp.asarray(v)
    return lambda: hvp(xs, vs), np.asarray


def w7_jax(A, x, v):
    jax = _peer("jax")
    if jax is None:
        return None
    import jax.numpy as jnp
    A_ = jnp.asarray(A)

    def f(x):
        return jnp.sum(jnp.log1p(jnp.exp(A_ @ x)))

    hvp = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
    xs, vs = jnp.asarray(x), jnp.asarray(v)
    return lambda: hvp(xs, vs).block_until_ready(), np.asarray


def w7_torch(A, x, v):
    torch = _peer("torch")
    if torch is None:
        return None
    from torch.func import grad, jvp
    A_ = torch.from_numpy(A)

    def f(x):
        return torch.sum(torch.log1p(torch.exp(A_ @ x)))

    xs, vs = torch.from_numpy(x), torch.from_numpy(v)
    return lambda: jvp(grad(f), (xs,), (vs,))[1], lambda t: t.numpy()


# --------------------------------------------------------------------------- W8

def w8_data(hidden=64, steps=200, features=16):
    rng = np.random.default_rng(2)
    W = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    U = (rng.standard_normal((hidden, features)) / np.sqrt(features)).astype(np.float32)
    xs = rng.standard_normal((steps, features)).astype(np.float32)
    target = rng.standard_normal(hidden).astype(np.float32)
    return W, U, xs, target


def _rnn_grad(lib, lax, grad, xs, target):
    def loss(params):
        W, U = params

        def step(h, x):
            h = lib.tanh(W @ h + U @ x)
            return h, None
        h, _ = lax.scan(step, lib.zeros(W.shape[0], dtype=W.dtype), xs)
        return lib.sum((h - target) ** 2)
    return grad(loss)


def w8_fnad(W, U, xs, target):
    import fnad
    import fnad.numpy as fnp
    # Time the compiled loop, not the Python loop that runs while it compiles.
    fnad.config.background_compile = False
    g = fnad.jit(_rnn_grad(fnp, fnad.lax, fnad.grad, fnp.asarray(xs), fnp.asarray(target)))
    params = (fnp.asarray(W), fnp.asarray(U))
    return lambda: g(params), lambda out: [np.asarray(o) for o in out]


def w8_jax(W, U, xs, target):
    jax = _peer("jax")
    if jax is None:
        return None
    import jax.numpy as jnp
    g = jax.jit(_rnn_grad(jnp, jax.lax, jax.grad, jnp.asarray(xs), jnp.asarray(target)))
    params = (jnp.asarray(W), jnp.asarray(U))
    return (lambda: jax.block_until_ready(g(params)),
            lambda out: [np.asarray(o) for o in out])


# --------------------------------------------------------------------------- driver

WORKLOADS = {
    "W5": ("per-example grads, MLP 784-256-10, batch 128", w5_data,
           {"fnad": w5_fnad, "torch.func": w5_torch, "jax jit": w5_jax}, "torch.func", 1.0),
    "W7": ("HVP of sum(log1p(exp(A@x))), A 512x512", w7_data,
           {"fnad": w7_fnad, "jax jit": w7_jax, "torch.func": w7_torch}, "jax jit", 1.0),
    "W8": ("RNN 64 hidden x 200 steps, grad through scan", w8_data,
           {"fnad": w8_fnad, "jax jit": w8_jax}, "jax jit", None),
}


def _agree(name, outputs):
    ref_name, ref = next(iter(outputs.items()))
    for fw, out in outputs.items():
        for a, b in zip(np.atleast_1d(ref) if not isinstance(ref, list) else ref,
                        np.atleast_1d(out) if not isinstance(out, list) else out):
            scale = max(float(np.max(np.abs(a))), 1e-6)
            if not np.allclose(a, b, rtol=RTOL, atol=RTOL * scale):
                raise SystemExit(f"{name}: {fw} disagrees with {ref_name} "
                                 f"(max abs diff {np.max(np.abs(a - b)):.3g})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", default="W5,W7,W8")
    args = parser.parse_args(argv)
    rounds = args.rounds or (5 if args.quick else 15)
    target_ns, warmup_ns = (5e7, 2e8) if args.quick else (2e8, 1e9)
    print(f"bench/transforms.py on {cpu_model()} ({os.cpu_count()} cores), "
          f"{datetime.date.today()}")
    lines = ["| workload | framework | median ms | min ms | × baseline |", "|---|---|---:|---:|---:|"]
    verdicts = []
    for key in args.only.split(","):
        title, data, setups, baseline, target = WORKLOADS[key]
        inputs = data()
        calls, outputs = {}, {}
        for fw, setup in setups.items():
            made = setup(*inputs)
            if made is None:
                continue
            call, to_numpy = made
            outputs[fw] = to_numpy(call())
            calls[fw] = call
        _agree(key, outputs)
        print(f"{key}: {title}: results agree across {', '.join(calls)}")
        timings = measure_interleaved(calls, rounds, target_ns, warmup_ns)
        base = timings.get(baseline, timings["fnad"])["median"]
        for fw, r in timings.items():
            lines.append(f"| {key} {title} | {fw} | {fmt_us(r['median'] / 1e3)} | "
                         f"{fmt_us(r['min'] / 1e3)} | {r['median'] / base:.2f} |")
        if baseline in timings:
            ratio = timings["fnad"]["median"] / timings[baseline]["median"]
            goal = "" if target is None else (
                f" (target <= {target}x: {'MET' if ratio <= target else 'NOT MET'})")
            verdicts.append(f"- {key}: fnad / {baseline} = **{ratio:.2f}x**{goal}")
    print("\n".join(lines))
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
