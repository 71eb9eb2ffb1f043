"""Transformer block: one jitted SGD training step, fnad.jit against JAX jit and
PyTorch (eager; torch.compile reported when it works), float32, CPU.

The block (issue 14): batch 16, sequence 64, width 128, 4 heads, MLP 512, pre-norm:
    h = x + attention(layernorm(x)) @ Wo
    y = h + gelu_tanh(layernorm(h) @ W1 + b1) @ W2 + b2
with q, k, v from one fused projection layernorm(x) @ Wqkv (sliced in three), softmax
attention over the sequence per head, and the loss mean((y - target)^2). The step is
params - 0.01 * grad(loss), returned with the loss; each framework runs the same math
from the same initial parameters.

Before timing, every framework's loss and updated parameters are checked against a
float64 run of the same step (fnad's float64, which keeps float64) and against each
other (rtol 1e-3 relative to each array's largest entry), so what is timed is the same
computation. Timing is bench/eager.py's: warm-up, calibration, rounds interleaved
across frameworks (a 50 ms pause before each), medians and mins, the load printed.

Run BLAS-bound benchmarks with the machine's OpenBLAS overrides unset (issue 14):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/transformer.py
    ... bench/transformer.py --quick          # fewer, shorter rounds
    ... bench/transformer.py --only jax       # fnad and a subset of the peers
    ... bench/transformer.py --profile        # cProfile fnad's call after timing
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from eager import measure_interleaved, print_header, profile_call  # noqa: E402
from rnn import openblas_kernel  # noqa: E402

BATCH, SEQ, D, HEADS, MLP = 16, 64, 128, 4, 512
LR, EPS = 0.01, 1e-5
RTOL = 1e-3
TARGET_VS_JAX = 1.1
NAMES = ("ln1_g", "ln1_b", "wqkv", "wo", "ln2_g", "ln2_b", "w1", "b1", "w2", "b2")


def data():
    rng = np.random.default_rng(0)

    def dense(n_in, n_out):
        return rng.uniform(-1, 1, (n_in, n_out)).astype(np.float32) / np.float32(np.sqrt(n_in))
    params = (np.ones(D, np.float32), np.zeros(D, np.float32), dense(D, 3 * D), dense(D, D),
              np.ones(D, np.float32), np.zeros(D, np.float32), dense(D, MLP),
              np.zeros(MLP, np.float32), dense(MLP, D), np.zeros(D, np.float32))
    x = rng.standard_normal((BATCH, SEQ, D)).astype(np.float32)
    target = rng.standard_normal((BATCH, SEQ, D)).astype(np.float32)
    return params, x, target


def make_loss(np_, swap, permute, last_max, last_mean, last_sum):
    """The block's loss written once; the few calls whose spelling differs between
    numpy-like modules and torch come in as functions (swap the last two axes, permute,
    and max / mean / sum over the last axis keeping it)."""
    head = D // HEADS

    def layernorm(x, g, b):
        xc = x - last_mean(x)
        var = last_mean(xc * xc)
        return xc / np_.sqrt(var + EPS) * g + b

    def gelu(x):
        return 0.5 * x * (1 + np_.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

    def heads(t):      # (B, S, D) -> (B, H, S, head)
        return permute(t.reshape(BATCH, SEQ, HEADS, head))

    def loss(params, x, target):
        ln1_g, ln1_b, wqkv, wo, ln2_g, ln2_b, w1, b1, w2, b2 = params
        qkv = layernorm(x, ln1_g, ln1_b) @ wqkv
        q, k, v = (heads(qkv[..., i * D:(i + 1) * D]) for i in range(3))
        s = (q @ swap(k)) * (1 / head ** 0.5)     # a Python float: weak, keeps float32
        s = s - last_max(s)
        p = np_.exp(s)
        p = p / last_sum(p)
        a = permute(p @ v).reshape(BATCH, SEQ, D)
        h = x + a @ wo
        y = h + gelu(layernorm(h, ln2_g, ln2_b) @ w1 + b1) @ w2 + b2
        r = y - target
        return (r * r).mean()
    return loss


def numpy_like_loss(np_):
    return make_loss(np_, lambda a: a.swapaxes(-1, -2), lambda a: a.transpose(0, 2, 1, 3),
                     lambda a: a.max(-1, keepdims=True), lambda a: a.mean(-1, keepdims=True),
                     lambda a: a.sum(-1, keepdims=True))


def setup_fnad(params, x, target, dtype=np.float32):
    import fnad
    import fnad.numpy as fnp
    # Steady state is what is timed: compile on the first call, as JAX does, rather
    # than run through numpy while background threads compile (as in rnn.py).
    fnad.config.update("background_compile", False)
    grad = fnad.value_and_grad(numpy_like_loss(fnp))

    @fnad.jit
    def step(params, x, target):
        loss, g = grad(params, x, target)
        return loss, tuple(p - LR * gp for p, gp in zip(params, g))
    p = tuple(fnp.asarray(a.astype(dtype)) for a in params)
    xs, ts = fnp.asarray(x.astype(dtype)), fnp.asarray(target.astype(dtype))

    def call():
        out = step(p, xs, ts)
        np.asarray(out[1][0])
        return out
    return call, _as_numpy


def setup_jax(params, x, target):
    import jax
    import jax.numpy as jnp
    grad = jax.value_and_grad(numpy_like_loss(jnp))

    @jax.jit
    def step(params, x, target):
        loss, g = grad(params, x, target)
        return loss, tuple(p - LR * gp for p, gp in zip(params, g))
    p = tuple(jnp.asarray(a) for a in params)
    xs, ts = jnp.asarray(x), jnp.asarray(target)

    def call():
        return jax.block_until_ready(step(p, xs, ts))
    return call, _as_numpy


def setup_torch(params, x, target, compiled=False):
    import torch
    torch.set_num_threads(os.cpu_count())
    loss_fn = make_loss(torch, lambda a: a.transpose(-1, -2), lambda a: a.permute(0, 2, 1, 3),
                        lambda a: a.amax(-1, keepdim=True), lambda a: a.mean(-1, keepdim=True),
                        lambda a: a.sum(-1, keepdim=True))
    if compiled:
        loss_fn = torch.compile(loss_fn)
    p0 = [torch.tensor(a) for a in params]
    xs, ts = torch.tensor(x), torch.tensor(target)

    def call():
        p = [a.detach().requires_grad_(True) for a in p0]
        loss = loss_fn(p, xs, ts)
        loss.backward()
        with torch.no_grad():
            return loss.detach(), [a - LR * a.grad for a in p]
    return call, lambda out: (float(out[0]), [a.numpy() for a in out[1]])


def _as_numpy(out):
    loss, new = out
    return float(np.asarray(loss)), [np.asarray(a) for a in new]


SETUPS = {"fnad": setup_fnad, "jax": setup_jax, "torch": setup_torch,
          "torch.compile": lambda *a: setup_torch(*a, compiled=True)}


def check(name, got, want):
    """Compare the updated parameters through their change (p - new = lr * grad), so a
    gradient error is not hidden under the parameter's own size; the change is known
    only to the float32 spacing of the parameter it was subtracted from (an update of
    1e-6 to a layernorm gain of 1.0 keeps two digits), which the bound allows."""
    params = want[2]
    loss, new = got
    assert np.isclose(loss, want[0], rtol=RTOL), f"{name}: loss {loss} vs {want[0]}"
    for label, p, g, r in zip(NAMES, params, new, want[1]):
        dg, dr = p - g.astype(np.float64), p - r
        spacing = np.spacing(np.abs(p).astype(np.float32)).astype(np.float64)
        excess = np.abs(dg - dr) - 2 * spacing
        err = excess.max() / max(np.abs(dr).max(), 1e-30)
        assert err < RTOL, f"{name}: the update of {label} is off by {err:.2e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    ap.add_argument("--rounds", type=int, default=None, help="timed rounds (default 20)")
    ap.add_argument("--only", default=None, help="comma-separated peers besides fnad")
    ap.add_argument("--profile", action="store_true", help="cProfile fnad's call after timing")
    args = ap.parse_args(argv)
    rounds = args.rounds or (6 if args.quick else 20)
    target_ns, warmup_ns = (5e7, 3e8) if args.quick else (2e8, 1e9)
    params, x, target = data()
    ref_call, ref_np = setup_fnad(params, x, target, dtype=np.float64)
    ref = ref_np(ref_call())
    want = (ref[0], ref[1], [p.astype(np.float64) for p in params])
    peers = ["jax", "torch", "torch.compile"] if args.only is None else args.only.split(",")
    calls, versions, notes, results = {}, {}, [], {}
    for name in ["fnad"] + [p for p in peers if p != "fnad"]:
        try:
            call, to_numpy = SETUPS[name](params, x, target)
            check(name, to_numpy(call()), want)
            results[name] = to_numpy(call())           # the compiled call as well
            check(name, results[name], want)
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
    for name in results:        # the float32 results against each other, too
        if name != "fnad":
            check(f"{name} vs fnad", results[name],
                  (results["fnad"][0], [a.astype(np.float64) for a in results["fnad"][1]],
                   want[2]))
    notes.append(f"BLAS: {openblas_kernel()}")
    notes.append("OPENBLAS_CORETYPE=" + os.environ.get("OPENBLAS_CORETYPE", "(unset)")
                 + ", OPENBLAS_L2_SIZE=" + os.environ.get("OPENBLAS_L2_SIZE", "(unset)"))
    print_header("Transformer block step (bench/transformer.py)", versions, notes)
    print(f"results agree with fnad's float64 step and each other (rtol {RTOL}): "
          f"{', '.join(calls)}")
    load_before = os.getloadavg()[0]
    timings = measure_interleaved(calls, rounds, int(target_ns), int(warmup_ns), settle_s=0.05)
    load_after = os.getloadavg()[0]
    base = timings["jax"]["median"] if "jax" in timings else timings["fnad"]["median"]
    print(f"\nload average (1 min): {load_before:.2f} before, {load_after:.2f} after; "
          f"{rounds} rounds\n")
    print(f"| transformer block b={BATCH} s={SEQ} d={D} h={HEADS} mlp={MLP}, SGD step "
          "| median ms | min ms | × JAX jit |")
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
