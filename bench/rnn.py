"""RNN through scan: the gradient of an Elman RNN run with lax.scan, fnad.jit against
JAX jit and PyTorch (eager; torch.compile reported when it works), float32, CPU.

The model (issue 14): T = 100 steps, batch 32, 64 inputs, 128 hidden units,
    h_{t+1} = tanh(x_t @ Wx + h_t @ Wh + b),   h_0 = 0,
and the loss mean(h_T) + sum_t |h_t|^2 (the per-step squared norms are the scan's
per-step outputs). Each framework computes the loss and its gradient with respect to
(Wx, Wh, b): fnad and JAX as jit(value_and_grad(loss)) over lax.scan, PyTorch as a
Python loop and loss.backward().

Before timing, every framework's loss and gradients are checked against a float64
numpy reference (forward and a hand-written backward through time, rtol 1e-3), so
what is timed is the same computation. Timing is bench/eager.py's: warm-up,
calibration to ~200 ms rounds, rounds interleaved across frameworks (a 50 ms pause
before each), medians and mins. The 1-minute load average before and after is printed.

Run BLAS-bound benchmarks with the machine's OpenBLAS overrides unset (issue 14):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/rnn.py
    ... bench/rnn.py --quick          # fewer, shorter rounds
    ... bench/rnn.py --only jax       # fnad and a subset of the peers
    ... bench/rnn.py --profile        # cProfile fnad's call after timing
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from eager import cpu_model, measure_interleaved, print_header, profile_call  # noqa: E402

T, BATCH, IN, HIDDEN = 100, 32, 64, 128
RTOL = 1e-3
TARGET_VS_JAX = 1.2


def data():
    rng = np.random.default_rng(0)
    scale_x, scale_h = 1 / np.sqrt(IN), 1 / np.sqrt(HIDDEN)
    params = (rng.uniform(-scale_x, scale_x, (IN, HIDDEN)).astype(np.float32),
              rng.uniform(-scale_h, scale_h, (HIDDEN, HIDDEN)).astype(np.float32),
              rng.uniform(-scale_h, scale_h, (HIDDEN,)).astype(np.float32))
    xs = rng.standard_normal((T, BATCH, IN)).astype(np.float32)
    return params, xs


def reference(params, xs):
    """Loss and gradients in float64 numpy: the forward loop, then backpropagation
    through time written out by hand."""
    wx, wh, b = (p.astype(np.float64) for p in params)
    xs = xs.astype(np.float64)
    hs = [np.zeros((BATCH, HIDDEN))]
    for x in xs:
        hs.append(np.tanh(x @ wx + hs[-1] @ wh + b))
    loss = hs[-1].mean() + sum((h * h).sum() for h in hs[1:])
    g = [np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)]
    dh = np.full_like(hs[-1], 1 / hs[-1].size)
    for t in range(T, 0, -1):
        dh = dh + 2 * hs[t]
        dz = dh * (1 - hs[t] ** 2)
        g[0] += xs[t - 1].T @ dz
        g[1] += hs[t - 1].T @ dz
        g[2] += dz.sum(0)
        dh = dz @ wh.T
    return loss, g


def _scan_loss(np_, lax):
    def loss(params, xs):
        wx, wh, b = params

        def step(h, x):
            h = np_.tanh(x @ wx + h @ wh + b)
            return h, (h * h).sum()
        h, norms = lax.scan(step, np_.zeros((BATCH, HIDDEN), np_.float32), xs)
        return h.mean() + norms.sum()
    return loss


def setup_fnad(params, xs):
    import fnad
    import fnad.numpy as fnp
    # Steady state is what is timed: compile the loops on the first call, as JAX does,
    # rather than running Python loops while a background thread compiles them.
    fnad.config.update("background_compile", False)
    step = fnad.jit(fnad.value_and_grad(_scan_loss(fnp, fnad.lax)))
    p, x = tuple(fnad.numpy.asarray(a) for a in params), fnad.numpy.asarray(xs)

    def call():
        loss, g = step(p, x)
        np.asarray(g[0])    # synchronous already; touch a result as the peers do
        return loss, g
    return call, _as_numpy


def setup_jax(params, xs):
    import jax
    import jax.numpy as jnp
    step = jax.jit(jax.value_and_grad(_scan_loss(jnp, jax.lax)))
    p, x = tuple(jnp.asarray(a) for a in params), jnp.asarray(xs)

    def call():
        return jax.block_until_ready(step(p, x))
    return call, _as_numpy


def _torch_loss(torch):
    def loss(params, xs):
        wx, wh, b = params
        h = torch.zeros((BATCH, HIDDEN))
        total = 0
        for x in xs:
            h = torch.tanh(x @ wx + h @ wh + b)
            total = total + (h * h).sum()
        return h.mean() + total
    return loss


def setup_torch(params, xs, compiled=False):
    import torch
    torch.set_num_threads(os.cpu_count())
    p = [torch.tensor(a, requires_grad=True) for a in params]
    x = torch.tensor(xs)
    loss_fn = _torch_loss(torch)
    if compiled:
        loss_fn = torch.compile(loss_fn)

    def call():
        for q in p:
            q.grad = None
        loss = loss_fn(p, x)
        loss.backward()
        return loss.detach(), [q.grad for q in p]
    return call, lambda out: (float(out[0]), [g.numpy() for g in out[1]])


def _as_numpy(out):
    loss, g = out
    return float(np.asarray(loss)), [np.asarray(a) for a in g]


SETUPS = {"fnad": setup_fnad, "jax": setup_jax, "torch": setup_torch,
          "torch.compile": lambda p, x: setup_torch(p, x, compiled=True)}


def check(name, got, want):
    loss, grads = got
    assert np.isclose(loss, want[0], rtol=RTOL), f"{name}: loss {loss} vs {want[0]}"
    for i, (g, r) in enumerate(zip(grads, want[1])):
        err = np.abs(g - r).max() / np.abs(r).max()
        assert err < RTOL, f"{name}: gradient {i} is off by {err:.2e} (relative to its max)"


def openblas_kernel():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} "
                     f"({i.get('num_threads')} threads)"
                     for i in threadpool_info() if i.get("user_api") == "blas") or "none"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    ap.add_argument("--rounds", type=int, default=None, help="timed rounds (default 20)")
    ap.add_argument("--only", default=None, help="comma-separated peers besides fnad")
    ap.add_argument("--profile", action="store_true", help="cProfile fnad's call after timing")
    args = ap.parse_args(argv)
    rounds = args.rounds or (6 if args.quick else 20)
    target_ns, warmup_ns = (5e7, 3e8) if args.quick else (2e8, 1e9)
    params, xs = data()
    want = reference(params, xs)
    peers = ["jax", "torch", "torch.compile"] if args.only is None else args.only.split(",")
    calls, versions, notes = {}, {}, []
    for name in ["fnad"] + [p for p in peers if p != "fnad"]:
        try:
            call, to_numpy = SETUPS[name](params, xs)
            check(name, to_numpy(call()), want)
            check(name, to_numpy(call()), want)      # the compiled call as well
        except ImportError as e:
            notes.append(f"{name}: skipped ({e})")
            continue
        except Exception as e:     # a peer that fails here is reported, not timed
            if name == "fnad":
                raise
            notes.append(f"{name}: skipped ({type(e).__name__}: {str(e)[:200]})")
            continue
        calls[name] = call
        module = sys.modules.get(name.split(".")[0])
        versions[name] = {"version": getattr(module, "__version__", "?")}
    notes.append(f"BLAS: {openblas_kernel()}")
    notes.append("OPENBLAS_CORETYPE=" + os.environ.get("OPENBLAS_CORETYPE", "(unset)")
                 + ", OPENBLAS_L2_SIZE=" + os.environ.get("OPENBLAS_L2_SIZE", "(unset)"))
    print_header("RNN through scan (bench/rnn.py)", versions, notes)
    print(f"results agree with the float64 reference (rtol {RTOL}): {', '.join(calls)}")
    load_before = os.getloadavg()[0]
    timings = measure_interleaved({k: v for k, v in calls.items()}, rounds, int(target_ns),
                                  int(warmup_ns), settle_s=0.05)
    load_after = os.getloadavg()[0]
    base = timings["jax"]["median"] if "jax" in timings else timings["fnad"]["median"]
    print(f"\nload average (1 min): {load_before:.2f} before, {load_after:.2f} after; "
          f"{rounds} rounds\n")
    print("| RNN T=100 b=32 in=64 h=128, grad through scan | median ms | min ms | × JAX jit |")
    print("|---|---:|---:|---:|")
    for name, r in timings.items():
        print(f"| {name} | {r['median'] / 1e3:.2f} | {r['min'] / 1e3:.2f} | "
              f"{r['median'] / base:.2f} |")
    if "jax" in timings:
        ratio = timings["fnad"]["median"] / timings["jax"]["median"]
        print(f"\nfnad / JAX jit = **{ratio:.2f}x** (target <= {TARGET_VS_JAX}x: "
              f"{'MET' if ratio <= TARGET_VS_JAX else 'NOT MET'})")
    if args.profile:
        profile_call("fnad", calls["fnad"])


if __name__ == "__main__":
    main()
