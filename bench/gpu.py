"""GPU benchmark (issue 6): fnad's cuda backend against JAX and PyTorch on one GPU.

Measures, in one run (float32, every array in GPU memory before timing starts):
  W2  milliseconds per SGD step of bench/jit.py's MLP (784-1024-1024-10, relu,
      log-softmax cross-entropy on integer labels, batch 256): fnad.jit, JAX jit and
      PyTorch eager, the same functions bench/jit.py times on the cpu;
  W3  milliseconds per call of the gradient of sum(tanh(x)*exp(-x**2) + sin(x)/(1+x**2))
      over 10,000,000 elements (bench/jit.py's W3g), and the bandwidth that achieves:
      8 bytes per element (x read once, the gradient written once: the least traffic
      any implementation needs; intermediates that go through memory are not counted);
  BW  the GPU's memory bandwidth as this script measures it: a 1 GiB device-to-device
      copy (cudaMemcpy through numba.cuda, and torch's copy_ when torch runs), counted
      as 2 GiB moved (read + write). W3's bandwidth target is against the faster one.

Each timed call ends with its framework's synchronization (fnad.block_until_ready,
JAX's block_until_ready, torch.cuda.synchronize), so a call is a finished call.
Before anything is timed, every framework's results are checked against a float64
numpy reference (bench/jit.py's checks: W2's loss and updated params rtol 1e-4 and
against fnad's; W3's gradient rtol 1e-4), so a wrong answer is never timed. JAX runs
with float32 matmul precision "highest" and torch with TF32 off, so that all three do
the same float32 arithmetic.

Usage (on a machine with a CUDA GPU; numba-cuda, CUDA builds of JAX and PyTorch):
    .venv/bin/python bench/gpu.py                    # full run, ~1 minute
    .venv/bin/python bench/gpu.py --quick            # fewer, shorter rounds
    .venv/bin/python bench/gpu.py --only fnad,torch  # a subset of fnad,jax,torch
    .venv/bin/python bench/gpu.py --workloads W3     # a subset of W2,W3
    .venv/bin/python bench/gpu.py --sim-smoke        # no GPU: tiny sizes, fnad only,
                                                     # in numba's CUDA simulator

--sim-smoke proves only that the script's fnad path runs and gives right answers; its
timings say nothing about GPU speed. The last thing printed is a markdown table ready
to paste into bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

# bench/eager.py and bench/jit.py pin JAX to the cpu (setdefault) for their own runs;
# here JAX must see the GPU, and must not reserve 75% of its memory up front, which the
# other two frameworks share.
os.environ.setdefault("JAX_PLATFORMS", "cuda,cpu")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

# W2 and W3 (data, the per-framework functions, the float64 checks) are bench/jit.py's
# own; the timer and the header are bench/eager.py's.
import jit as workloads  # noqa: E402
from eager import cpu_model, measure_interleaved, print_header  # noqa: E402

WORKLOADS = ("W2", "W3")
FRAMEWORKS = ("fnad", "jax", "torch")
LABEL = {"fnad": "fnad jit", "jax": "JAX jit", "torch": "PyTorch eager"}

TARGET_W2_VS_TORCH = 2.0       # fnad's W2 step ≤ 2× PyTorch's (medians)
TARGET_W3_OF_BANDWIDTH = 0.5   # W3 ≥ 50% of the measured copy bandwidth
W3_BYTES_PER_ELEMENT = 8       # read x (4 bytes) + write the gradient (4 bytes)
COPY_BYTES = 1 << 30

# --sim-smoke: every GPU thread is a Python thread in the simulator, so sizes shrink to
# tens of elements. bench/jit.py's functions read these module globals when called.
SIM_SIZES, SIM_BATCH, SIM_N3, SIM_COPY_BYTES = (12, 16, 16, 10), 6, 200, 1 << 12


# ======================================================================================
# Framework setups: {workload: (callable, to_numpy)}; a callable takes no arguments and
# returns a finished (synchronized) result.
# ======================================================================================
def setup_fnad(work):
    import fnad
    import fnad.numpy as fnp
    # Time the steady state: compile on the first call rather than running unfused
    # while a background thread compiles.
    fnad.config.background_compile = False
    gpu = fnad.devices("cuda")[0]

    def on_gpu(out):
        # A result on the cpu would mean the timing measured the wrong backend.
        wrong = [leaf.device for leaf in fnad.tree_util.tree_leaves(out)
                 if leaf.device != gpu]
        assert not wrong, f"fnad returned arrays on {wrong}, not on {gpu}"
        return out

    out = {}
    if "W2" in work:
        step, args, _ = workloads.w2_fnad()
        args = fnad.device_put(args, gpu)
        out["W2"] = (lambda: fnad.block_until_ready(step(*args)),
                     lambda r: workloads.w2_as_numpy(on_gpu(r)))
    if "W3" in work:
        x3 = fnad.device_put(workloads.w3_data(), gpu)
        grad = fnad.jit(fnad.grad(workloads.make_w3(fnp)))
        out["W3"] = (lambda: fnad.block_until_ready(grad(x3)),
                     lambda r: np.asarray(on_gpu(r)))
    return out


def setup_jax(work):
    import jax
    import jax.numpy as jnp
    # JAX's default float32 matmul on recent GPUs is TF32 (10-bit mantissa); fnad and
    # torch (TF32 off) compute in full float32, and so must the comparison.
    jax.config.update("jax_default_matmul_precision", "highest")
    gpu = jax.devices("gpu")[0]
    out = {}
    if "W2" in work:
        step, args, block = workloads.w2_jax()
        args = jax.device_put(args, gpu)
        out["W2"] = (lambda: block(step(*args)), workloads.w2_as_numpy)
    if "W3" in work:
        x3 = jax.device_put(workloads.w3_data(), gpu)
        grad = jax.jit(jax.grad(workloads.make_w3(jnp)))
        out["W3"] = (lambda: grad(x3).block_until_ready(), np.asarray)
    return out


def setup_torch(work):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError(f"torch {torch.__version__} sees no CUDA device (a CPU build?)")
    torch.backends.cuda.matmul.allow_tf32 = False
    out = {}
    if "W2" in work:
        step, (params, x, y), _ = workloads.w2_torch()
        params = [{k: v.detach().cuda().requires_grad_(True) for k, v in d.items()}
                  for d in params]
        x, y = x.cuda(), y.cuda()

        def w2():
            result = step(params, x, y)
            torch.cuda.synchronize()
            return result

        def w2_numpy(r):
            new, value = r
            return workloads.w2_as_numpy(([{k: v.cpu() for k, v in d.items()} for d in new],
                                          value.cpu()))
        out["W2"] = (w2, w2_numpy)
    if "W3" in work:
        x3 = torch.from_numpy(workloads.w3_data()).cuda().requires_grad_(True)
        f = workloads.make_w3(torch)

        def w3():
            g = torch.autograd.grad(f(x3), x3)[0]
            torch.cuda.synchronize()
            return g
        out["W3"] = (w3, lambda g: g.detach().cpu().numpy())
    return out


SETUPS = {"fnad": setup_fnad, "jax": setup_jax, "torch": setup_torch}


# ======================================================================================
# The GPU: its name, and its copy bandwidth.
# ======================================================================================
def gpu_description(simulated):
    if simulated:
        return "numba's CUDA simulator (no GPU)"
    try:
        from numba import cuda
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
        cc = ".".join(map(str, dev.compute_capability))
        total = cuda.current_context().get_memory_info()[1]
        return f"{name} (compute capability {cc}, {total / 2**30:.0f} GiB)"
    except Exception:   # noqa: BLE001  (a numba.cuda without these: ask torch)
        pass
    try:
        import torch
        return torch.cuda.get_device_name(0)
    except Exception:   # noqa: BLE001
        return "a CUDA GPU (its name could not be read)"


def copy_setups(nbytes, with_torch):
    """{label: callable} device-to-device copies of nbytes, each synchronized."""
    from numba import cuda
    n = nbytes // 4
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.device_array(n, np.float32)

    def memcpy():
        dst.copy_to_device(src)     # a device source: cudaMemcpy device to device
        cuda.synchronize()
    copies = {"cudaMemcpy (numba.cuda)": memcpy}
    if with_torch:
        import torch
        tsrc = torch.ones(n, dtype=torch.float32, device="cuda")
        tdst = torch.empty_like(tsrc)

        def torch_copy():
            tdst.copy_(tsrc)
            torch.cuda.synchronize()
        copies["torch copy_"] = torch_copy
    return copies


# ======================================================================================
# Reporting
# ======================================================================================
def fmt(ms):
    # Three significant digits below 10: W3's call on a fast GPU is tens of µs.
    if ms >= 100:
        return f"{ms:,.0f}"
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.3g}"


def versions(fws):
    from importlib import metadata
    import fnad
    out = {"fnad": {"version": f"{fnad.__version__} ({workloads.git_state()})"}}
    dists = ["numpy", "numba", "numba-cuda"]
    dists += ["jax", "jaxlib"] * ("jax" in fws) + ["torch"] * ("torch" in fws)
    for dist in dists:
        try:
            out[dist] = {"version": metadata.version(dist)}
        except metadata.PackageNotFoundError:
            pass
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    ap.add_argument("--rounds", type=int, default=None,
                    help="timed rounds per workload (default 30; 8 with --quick)")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated frameworks (default all: {','.join(FRAMEWORKS)})")
    ap.add_argument("--workloads", default=None,
                    help=f"comma-separated workloads (default all: {','.join(WORKLOADS)})")
    ap.add_argument("--settle-ms", type=float, default=10,
                    help="pause before each timed round (default 10)")
    ap.add_argument("--sim-smoke", action="store_true",
                    help="no GPU needed: tiny sizes, fnad only, in numba's CUDA simulator; "
                         "checks the fnad path end to end, measures nothing")
    args = ap.parse_args(argv)

    def subset(text, allowed, what):
        if text is None:
            return list(allowed)
        wanted = [w.strip() for w in text.split(",") if w.strip()]
        bad = [w for w in wanted if w not in allowed]
        if bad:
            ap.error(f"unknown {what} {bad}; choose from {', '.join(allowed)}")
        return [w for w in allowed if w in wanted]
    args.frameworks = subset(args.only, FRAMEWORKS, "framework(s)")
    args.work = subset(args.workloads, WORKLOADS, "workload(s)")
    return args


def require_gpu(sim_smoke):
    """Exit with a clear message unless a GPU is there (or the simulator was asked for):
    timings from the simulator, or from a silent cpu fallback, would mean nothing."""
    if sim_smoke:
        # Must be decided before numba.cuda is first imported.
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import fnad
    from fnad.backends.cuda.runtime import simulated
    if not sim_smoke and simulated():
        sys.exit("bench/gpu.py: NUMBA_ENABLE_CUDASIM=1 is set, so numba.cuda would run "
                 "in its simulator, whose timings say nothing about a GPU. Unset it, or "
                 "pass --sim-smoke to check the script's fnad path without a GPU.")
    if not fnad.devices("cuda"):
        sys.exit("bench/gpu.py: no CUDA device: fnad.devices('cuda') is empty "
                 "(numba.cuda found no GPU, or no driver, or numba-cuda is not "
                 "installed). Run it on a machine with an NVIDIA GPU, or pass "
                 "--sim-smoke to check the script's fnad path in numba's CUDA simulator.")
    return simulated()


def main(argv=None):
    args = parse_args(argv)
    simulated = require_gpu(args.sim_smoke)
    notes = []
    if args.sim_smoke:
        workloads.SIZES, workloads.BATCH, workloads.N3 = SIM_SIZES, SIM_BATCH, SIM_N3
        copy_bytes = SIM_COPY_BYTES
        if args.frameworks != ["fnad"]:
            notes.append("--sim-smoke runs fnad only")
        args.frameworks = ["fnad"]
        rounds, timing = 2, {wl: (1, 0.0) for wl in ("BW", *WORKLOADS)}
        notes.append(f"SIMULATOR RUN (--sim-smoke): MLP {workloads.SIZES} batch "
                     f"{workloads.BATCH}, W3 on {workloads.N3} elements, copies of "
                     f"{copy_bytes} bytes; the timings below say nothing about GPU speed")
    else:
        copy_bytes = COPY_BYTES
        rounds = args.rounds or (8 if args.quick else 30)
        # (round target ms, warm-up s)
        timing = {"BW": (50, 0.5), "W2": (60, 1.0), "W3": (60, 1.0)}
        if args.quick:
            timing = {k: (max(5, ms / 4), 0.2) for k, (ms, _) in timing.items()}
    if "jax" in args.frameworks:
        notes.append("JAX: jax_default_matmul_precision='highest' (no TF32), "
                     "XLA_PYTHON_CLIENT_PREALLOCATE=false")
    if "torch" in args.frameworks:
        notes.append("torch: eager, torch.backends.cuda.matmul.allow_tf32 = False")

    # ---- set up, first calls (compiles), correctness: before any timing --------------
    fws = {}
    for name in args.frameworks:
        try:
            fws[name] = SETUPS[name](args.work)
        except Exception as e:  # noqa: BLE001  (a missing or CPU-only peer is skipped)
            if name == "fnad":
                raise
            notes.append(f"{name}: skipped ({type(e).__name__}: {str(e)[:300]})")
    first_call, values = {}, {}
    for wl in args.work:
        for name in list(fws):
            entry = fws[name].get(wl)
            if entry is None:
                continue
            try:
                t0 = time.perf_counter()
                result = entry[0]()
                first_call[(wl, name)] = time.perf_counter() - t0
                values.setdefault(wl, {})[name] = entry[1](result)
            except Exception as e:  # noqa: BLE001
                if name == "fnad":
                    raise
                notes.append(f"{wl} {name}: skipped ({type(e).__name__}: {str(e)[:300]})")
                del fws[name][wl]
    if "W2" in values:
        workloads.check_w2(values["W2"])
    if "W3" in values:
        workloads.check_w3(values["W3"], grad=True)

    gpu = gpu_description(simulated)
    package_versions = versions(fws)
    print_header("fnad GPU benchmark (issue 6)", package_versions, notes)
    print(f"gpu: {gpu}")
    if values:
        print("checked before timing against a float64 numpy reference (rtol "
              f"{workloads.RTOL}): " + "; ".join(f"{wl}: {', '.join(r)}"
                                                 for wl, r in values.items()))
        print("first calls (trace + compile + run): " + ", ".join(
            f"{wl} {fw} {s:.2f}s" for (wl, fw), s in first_call.items()))
    print(f"timing: {rounds} rounds per workload, interleaved across frameworks, each "
          "call synchronized, gc off within a round\n", flush=True)

    # ---- timing ---------------------------------------------------------------------
    results = {}

    def timed(key, fns, scale=1e-3):
        round_ms, warm_s = timing[key]
        print(f"timing {key}: {', '.join(fns)} ...", flush=True)
        res = measure_interleaved(fns, rounds, int(round_ms * 1e6), int(warm_s * 1e9),
                                  args.settle_ms / 1e3)
        for name, r in res.items():      # measure_interleaved gives µs; keep ms
            r = dict(r, median=r["median"] * scale, min=r["min"] * scale)
            results[(key, name)] = r
            print(f"  {key:3s} {name:24s} median {fmt(r['median']):>8s} ms   "
                  f"min {fmt(r['min']):>8s} ms   (n={r['n']})", flush=True)

    bandwidth = None
    if "W3" in args.work:
        copies = copy_setups(copy_bytes, "torch" in fws)
        timed("BW", copies)
        del copies      # frees the two buffers per copy before the workloads run
        # GB/s of a copy: bytes read + bytes written
        bandwidth = max(2 * copy_bytes / (results[("BW", name)]["median"] * 1e-3) / 1e9
                        for name in ("cudaMemcpy (numba.cuda)", "torch copy_")
                        if ("BW", name) in results)
    for wl in args.work:
        fns = {name: fws[name][wl][0] for name in fws if wl in fws[name]}
        if fns:
            timed(wl, fns)

    # ---- table and targets ----------------------------------------------------------
    w3_bytes = W3_BYTES_PER_ELEMENT * workloads.N3

    def gbs(key, r):
        nbytes = {"BW": 2 * copy_bytes, "W3": w3_bytes}.get(key)
        return nbytes / (r["median"] * 1e-3) / 1e9 if nbytes else None

    label = {"BW": f"BW device-to-device copy, {size_text(copy_bytes)}",
             "W2": f"W2 MLP SGD step {'-'.join(map(str, workloads.SIZES))}, batch "
                   f"{workloads.BATCH}",
             "W3": f"W3 grad of sum(tanh·exp + sin/(1+x²)), {workloads.N3:,} f32"}
    lines = ["| workload | framework | median | min | × PyTorch (median) | GB/s (median) | "
             "% of copy BW | calls × rounds |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key in ("BW", *args.work):
        torch_r = results.get((key, "torch"))
        for (k, name), r in results.items():
            if k != key:
                continue
            ratio = (f"{r['median'] / torch_r['median']:.2f}"
                     if torch_r and key != "BW" else "—")
            rate = gbs(key, r)
            share = f"{100 * rate / bandwidth:.0f}%" if rate and bandwidth else "—"
            lines.append(f"| {label[key]} | {LABEL.get(name, name)} | {fmt(r['median'])} ms "
                         f"| {fmt(r['min'])} ms | {ratio} | "
                         f"{rate_text(rate)} | {share} | "
                         f"{r['n']} × {r['rounds']} |")

    targets = []
    fn_w2, torch_w2 = results.get(("W2", "fnad")), results.get(("W2", "torch"))
    if "W2" in args.work:
        if fn_w2 and torch_w2:
            q = fn_w2["median"] / torch_w2["median"]
            ok = verdict(q <= TARGET_W2_VS_TORCH, simulated)
            targets.append(f"- W2 fnad / PyTorch eager = **{q:.2f}×** (target ≤ "
                           f"{TARGET_W2_VS_TORCH}×): **{ok}** (ratio of mins "
                           f"{fn_w2['min'] / torch_w2['min']:.2f}×)")
        else:
            targets.append("- W2 fnad / PyTorch eager: not measured")
    fn_w3 = results.get(("W3", "fnad"))
    if fn_w3 and bandwidth:
        share = gbs("W3", fn_w3) / bandwidth
        targets.append(f"- W3 fnad = **{rate_text(gbs('W3', fn_w3))} GB/s = "
                       f"{100 * share:.0f}%** of the measured copy bandwidth "
                       f"{rate_text(bandwidth)} GB/s (target ≥ "
                       f"{100 * TARGET_W3_OF_BANDWIDTH:.0f}%): "
                       f"**{verdict(share >= TARGET_W3_OF_BANDWIDTH, simulated)}**")
    elif "W3" in args.work:
        targets.append("- W3 fnad share of the copy bandwidth: not measured")

    now = datetime.datetime.now().astimezone()
    cmd = "bench/gpu.py" + (" " + " ".join(sys.argv[1:]) if len(sys.argv) > 1 else "")
    print("\n## Results (paste into bench/README.md)\n")
    print(f"Measured {now:%Y-%m-%d %H:%M %Z} on {gpu}, host {cpu_model()} "
          f"({os.cpu_count()} cores, {platform.system()}), `{cmd}`; fnad "
          f"{package_versions['fnad']['version']}. × PyTorch = framework median / PyTorch "
          f"eager median (> 1: slower). GB/s: W3 counts {W3_BYTES_PER_ELEMENT} bytes per "
          "element (x read once, the gradient written once); a copy counts read + write.\n")
    print("\n".join(lines))
    print("\nTargets:\n")
    print("\n".join(targets))
    if notes:
        print("\nNotes:\n")
        print("\n".join(f"- {n_}" for n_ in notes))


def size_text(nbytes):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:g} {unit}"
    return f"{nbytes} bytes"


def rate_text(gb_per_s):
    if gb_per_s is None:
        return "—"
    return f"{gb_per_s:,.0f}" if gb_per_s >= 10 else f"{gb_per_s:.3g}"


def verdict(ok, simulated):
    if simulated:
        return "not judged (simulator)"
    return "MET" if ok else "NOT MET"


if __name__ == "__main__":
    main()
