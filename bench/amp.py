"""Mixed-precision benchmark: bench/jit.py's W2 step (MLP 784-1024-1024-10, relu,
log-softmax cross-entropy, batch 256, SGD) in float32 and with bfloat16 compute, on
the cpu, fnad and PyTorch side by side in one process, rounds interleaved.

  fnad float32          the step as bench/jit.py times it
  fnad bf16 policy      params float32, cast to bfloat16 for the forward and backward
                        passes (amp.Policy), loss in float32
  fnad bf16 autocast    amp.autocast(loss): matmuls in bfloat16, the rest by rule
  torch float32         eager PyTorch (bench/jit.py's w2_torch)
  torch bf16 autocast   the same under torch.autocast("cpu", dtype=torch.bfloat16)

Every variant's loss is checked against the float64 numpy reference first (float32:
rtol 1e-4; bfloat16: 2%) so no wrong answer is timed.

Memory, from the staged Program of value_and_grad (independent of allocator and OS
noise): the activations saved for the backward pass (per-example values made by the
forward pass and read by the backward pass), and the peak of all live intermediate
values walking the program in order (params' bfloat16 copies and gradients included).

Usage:  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/amp.py [--quick]
"""
import argparse
import os
import statistics
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jit as w2   # noqa: E402  (bench/jit.py: W2's data, reference and torch loss)

import fnad  # noqa: E402
import fnad.numpy as fnp  # noqa: E402
from fnad import amp  # noqa: E402
from fnad.backends.cpu import lowering  # noqa: E402
from fnad.nn.activations import relu, log_softmax  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def fnad_loss(params, x, y):
    h = x
    for i, p in enumerate(params):
        h = h @ p["w"] + p["b"]
        if i < len(params) - 1:
            h = relu(h)
    logp = log_softmax(h.astype(np.float32))
    return -fnp.mean(fnp.take_along_axis(logp, y[:, None], axis=1))


POLICY = amp.Policy(np.float32, BF16, np.float32)


def policy_loss(params, x, y):
    return fnad_loss(POLICY.cast_to_compute(params), POLICY.cast_to_compute(x), y)


def policy_loss_bf16_data(params, x_bf16, y):
    """The policy step fed a batch already in bfloat16 (the dataset cast once when it
    is loaded, as mixed-precision input pipelines do): no bfloat16 copy of the batch
    is made, and kept for the first layer's weight gradient, inside the step."""
    return fnad_loss(POLICY.cast_to_compute(params), x_bf16, y)


def make_step(loss):
    def step(params, x, y):
        value, grads = fnad.value_and_grad(loss)(params, x, y)
        new = fnad.tree_util.tree_map(lambda p, g: p - w2.LR * g, params, grads)
        return new, value
    return fnad.jit(step)


def _nbytes(v):
    return int(np.prod(v.aval.shape)) * np.dtype(v.aval.dtype).itemsize


def saved_activation_bytes(program, batch):
    """Bytes of the activations the step keeps for its backward pass: values with the
    batch as leading dimension, made at or before the equation producing the loss (the
    program's first output) and read after it. Inputs are not counted."""
    program = getattr(program, "program", program)
    made = {o: i for i, e in enumerate(program.eqns) for o in e.outputs}
    cut = made[program.outputs[0]]
    kept = {a for e in program.eqns[cut + 1:] for a in e.inputs
            if a in made and made[a] <= cut and a.aval.shape and a.aval.shape[0] == batch}
    return sum(_nbytes(v) for v in kept)


def peak_intermediate_bytes(program):
    """Peak of the summed sizes of live intermediate values over the program's order
    (the staged, unfused program: an upper bound on what the compiled step holds)."""
    program = getattr(program, "program", program)
    last_use = {a: i for i, e in enumerate(program.eqns) for a in e.inputs
                if hasattr(a, "aval")}
    outputs = {a for a in program.outputs if hasattr(a, "aval")}
    live = peak = 0
    for i, e in enumerate(program.eqns):
        live += sum(_nbytes(o) for o in e.outputs if o not in outputs)
        peak = max(peak, live)
        live -= sum(_nbytes(a) for a in set(e.inputs) if hasattr(a, "aval")
                    and last_use.get(a) == i and a not in outputs
                    and a not in program.invars)
    return peak


def blas_kernel():
    try:
        import threadpoolctl
        info = threadpoolctl.threadpool_info()
        return "; ".join(f"{i.get('internal_api')} {i.get('version')} "
                         f"{i.get('architecture', '')} ({i.get('num_threads')} threads)"
                         for i in info if i.get("user_api") == "blas") or "none reported"
    except ImportError:
        return "threadpoolctl not installed"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, per_round = (3, 3) if args.quick else (7, 10)
    params, x, y = w2.w2_data()
    _, ref_loss = w2.w2_reference(params, x, y)
    fp = fnad.tree_util.tree_map(fnp.asarray, params)
    fx, fy = fnp.asarray(x), fnp.asarray(y)

    variants = {}
    fx_bf16 = fx.astype(BF16)
    steps = {"fnad float32": (make_step(fnad_loss), 1e-4, fnad_loss, fx),
             "fnad bf16 policy": (make_step(policy_loss), 2e-2, policy_loss, fx),
             "fnad bf16 policy, bf16 data": (make_step(policy_loss_bf16_data), 2e-2,
                                             policy_loss_bf16_data, fx_bf16),
             "fnad bf16 autocast": (make_step(amp.autocast(fnad_loss)), 2e-2,
                                    amp.autocast(fnad_loss), fx)}
    for name, (step, rtol, _, xs) in steps.items():
        out = step(fp, xs, fy)
        assert abs(float(out[1]) - ref_loss) <= rtol * abs(ref_loss), (name, float(out[1]))
        variants[name] = lambda step=step, xs=xs: fnad.block_until_ready(step(fp, xs, fy))
    memory = {}
    for name, (_, _, loss, xs) in steps.items():
        program = fnad.make_jaxpr(lambda p, a, b, loss=loss: fnad.value_and_grad(loss)(
            p, a, b))(fp, xs, fy)
        memory[name] = (saved_activation_bytes(program, w2.BATCH),
                        peak_intermediate_bytes(program))
    notes = []
    try:
        import torch
        step, targs, _ = w2.w2_torch()
        loss = float(step(*targs)[1])
        assert abs(loss - ref_loss) <= 1e-4 * abs(ref_loss)
        variants["torch float32"] = lambda: step(*targs)

        def torch_bf16():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return step(*targs)
        loss = float(torch_bf16()[1])
        assert abs(loss - ref_loss) <= 2e-2 * abs(ref_loss), loss
        variants["torch bf16 autocast"] = torch_bf16
        notes.append(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    except ImportError:
        notes.append("torch not installed: not timed")

    for f in variants.values():     # warm up (fnad's kernels compile in the background)
        for _ in range(3):
            f()
    lowering.wait_for_compiles()
    for f in variants.values():
        f()
    load_start = os.getloadavg()
    times = {name: [] for name in variants}
    for _ in range(rounds):
        for name, f in variants.items():   # interleaved: load shifts hit every variant
            t0 = time.perf_counter()
            for _ in range(per_round):
                f()
            times[name].append((time.perf_counter() - t0) / per_round * 1e3)
    load_end = os.getloadavg()

    med = {name: statistics.median(t) for name, t in times.items()}
    print("\n| W2 step, cpu | median ms | vs fnad float32 | saved activations (MB) |"
          " vs float32 | peak of all intermediates (MB) | vs float32 |")
    print("|---|---|---|---|---|---|---|")
    base = memory["fnad float32"]
    for name in variants:
        mem = memory.get(name)
        mem_cols = (" | ".join(f"{m / 1e6:.2f} | {m / b:.2f}×" for m, b in zip(mem, base))
                    if mem is not None else "– | – | – | –")
        print(f"| {name} | {med[name]:.2f} | {med[name] / med['fnad float32']:.2f}× | "
              f"{mem_cols} |")
    print(f"\n{rounds} rounds of {per_round} steps, interleaved; medians of the rounds. "
          f"BLAS: {blas_kernel()}. " + "; ".join(notes) + ". "
          f"Load average (1 min) {load_start[0]:.2f} at start, {load_end[0]:.2f} at end "
          f"({os.cpu_count()} cores).")


if __name__ == "__main__":
    main()
