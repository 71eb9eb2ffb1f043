"""Eager-mode benchmark: fnad against PyTorch, HIPS autograd, JAX (no jit) and numpy.

Measures, in one run:
  1. microseconds per gradient call of a 20-op scalar function of float32 (10,) arrays
     (``fnad.grad(f)(x)`` vs ``torch.autograd.grad``, ``autograd.grad(f)(x)``,
     ``jax.grad(f)(x)`` without jit, and the plain numpy forward pass for reference);
  2. microseconds per single elementwise op ``x + y`` on float32 (10,) arrays outside any
     transform (fnad, ``np.add``, torch, jax eager).

Every peer is optional: one that fails to import is skipped with a note. Before any
timing the gradients of all frameworks are checked against each other and against a
float64 central-difference reference (np.allclose, rtol 1e-4), so a wrong answer is never
timed.

Usage:
    .venv/bin/python bench/eager.py              # full run (30 rounds)
    .venv/bin/python bench/eager.py --quick      # fewer, shorter rounds
    .venv/bin/python bench/eager.py --rounds 50
    .venv/bin/python bench/eager.py --profile    # also cProfile fnad's grad call
    .venv/bin/python bench/eager.py --cpu-time   # thread CPU time (a shared machine)

The last thing printed is a markdown table ready to paste into bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

N = 10
RTOL = 1e-4
ATOL = 1e-6

# Targets (fnad median / peer median).
TARGET_GRAD_VS_TORCH = 0.5
TARGET_OP_VS_NUMPY = 3.0


# --------------------------------------------------------------------------------------
# The benchmark function, written once against a numpy-like namespace `m`.
# 20 ops: x*w, +b, tanh, **2, sin, -x, *x, exp, *, +, x*x, 1+, /, **2, 1+, log, +1,
#         sqrt, *w, sum
# --------------------------------------------------------------------------------------
def make_f(m, w, b):
    def f(x):
        num = m.tanh(x * w + b) ** 2 + m.sin(x) * m.exp(-x * x)
        r = num / (1 + x * x)
        return m.sum(m.sqrt(m.log(1 + r ** 2) + 1) * w)
    return f


def inputs():
    rng = np.random.default_rng(0)
    x = np.linspace(-2.0, 2.0, N).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    return x, w, b, y


def reference_grad(x, w, b):
    """float64 central differences of the numpy forward pass (independent of every AD)."""
    f64 = make_f(np, w.astype(np.float64), b.astype(np.float64))
    x64 = x.astype(np.float64)
    h = 1e-6
    g = np.empty_like(x64)
    for i in range(x64.size):
        e = np.zeros_like(x64)
        e[i] = h
        g[i] = (f64(x64 + e) - f64(x64 - e)) / (2 * h)
    return g


# --------------------------------------------------------------------------------------
# Frameworks. Each setup returns dict(grad=callable or None, add=callable or None,
# grad_value=np.ndarray, add_value=np.ndarray); callables take no arguments.
# --------------------------------------------------------------------------------------
def setup_fnad(x, w, b, y):
    import fnad
    import fnad.numpy as fnp
    fw, fb, fx, fy = (fnp.asarray(a) for a in (w, b, x, y))
    grad_f = fnad.grad(make_f(fnp, fw, fb))
    out = dict(
        version=fnad.__version__,
        grad=lambda: grad_f(fx),
        add=lambda: fx + fy,
    )
    out["grad_value"] = np.asarray(out["grad"]())
    out["add_value"] = np.asarray(out["add"]())
    return out


def setup_numpy(x, w, b, y):
    f = make_f(np, w, b)
    return dict(
        version=np.__version__,
        forward=lambda: f(x),
        add=lambda: np.add(x, y),
        add_value=np.add(x, y),
    )


def setup_torch(x, w, b, y):
    import torch
    tw, tb, ty = (torch.from_numpy(a.copy()) for a in (w, b, y))
    tx = torch.from_numpy(x.copy()).requires_grad_(True)
    tx_plain = torch.from_numpy(x.copy())
    f = make_f(torch, tw, tb)

    def grad():
        return torch.autograd.grad(f(tx), tx)[0]

    out = dict(
        version=torch.__version__,
        note=f"torch threads={torch.get_num_threads()}",
        grad=grad,
        add=lambda: tx_plain + ty,
    )
    out["grad_value"] = out["grad"]().numpy()
    out["add_value"] = out["add"]().numpy()
    return out


def setup_autograd(x, w, b, y):
    import autograd
    import autograd.numpy as anp
    f = make_f(anp, w, b)
    grad_f = autograd.grad(f)
    try:
        from importlib.metadata import version
        ver = version("autograd")
    except Exception:  # pragma: no cover
        ver = "?"
    out = dict(version=ver, grad=lambda: grad_f(x))
    out["grad_value"] = np.asarray(out["grad"]())
    return out


def setup_jax(x, w, b, y):
    import jax
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jjnp
    jw, jb, jx, jy = (jjnp.asarray(a) for a in (w, b, x, y))
    grad_f = jax.grad(make_f(jjnp, jw, jb))  # no jit: eager op-by-op dispatch

    # JAX dispatches asynchronously; block on the result so a call is a finished call.
    out = dict(
        version=jax.__version__,
        note="no jit; block_until_ready on every result",
        grad=lambda: grad_f(jx).block_until_ready(),
        add=lambda: (jx + jy).block_until_ready(),
    )
    out["grad_value"] = np.asarray(out["grad"]())
    out["add_value"] = np.asarray(out["add"]())
    return out


FRAMEWORKS = [
    ("fnad", setup_fnad),
    ("numpy", setup_numpy),
    ("torch", setup_torch),
    ("autograd", setup_autograd),
    ("jax", setup_jax),
]


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------
def calibrate(fn, target_ns):
    """Number of calls per round so that one round takes about target_ns."""
    n = 1
    while True:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        dt = time.perf_counter_ns() - t0
        if dt >= target_ns / 4 or n >= 1 << 20:
            return max(1, int(n * target_ns / max(dt, 1)))
        n *= 4


def measure_interleaved(fns, rounds, target_ns, warmup_ns, settle_s=0.0,
                        clock=time.perf_counter_ns):
    """Median and min per-call time (µs) of each callable in `fns` {name: fn}, read
    off `clock` (wall time by default; time.thread_time_ns gives the calling thread's
    CPU time, which other processes on a shared machine barely move).

    Each is warmed up and calibrated to n calls per round; then the rounds are
    interleaved (round r of every framework before round r+1 of any), so a transient
    load on the machine hits all frameworks alike and the ratios stay fair. With
    settle_s, every round starts after that pause: the thread pools of the framework
    that ran before (OpenMP, OpenBLAS, Eigen) spin-wait for a while after their work
    and would otherwise steal the cores from the next framework's first calls."""
    ns = {}
    for name, fn in fns.items():
        # warm-up (caches, lazy imports, Numba compilation, the allocator)
        t_end = time.perf_counter_ns() + warmup_ns
        while time.perf_counter_ns() < t_end:
            fn()
        ns[name] = calibrate(fn, target_ns)
    per_call = {name: [] for name in fns}
    gc_was_enabled = gc.isenabled()
    try:
        for _ in range(rounds):
            for name, fn in fns.items():
                n = ns[name]
                gc.collect()
                if settle_s:
                    time.sleep(settle_s)
                gc.disable()
                t0 = clock()
                for _ in range(n):
                    fn()
                dt = clock() - t0
                if gc_was_enabled:
                    gc.enable()
                per_call[name].append(dt / n / 1e3)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: dict(median=statistics.median(v), min=min(v), n=ns[name], rounds=rounds)
            for name, v in per_call.items()}


# --------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------
def cpu_model():
    info = {}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if ":" in line:
                    k, v = (s.strip() for s in line.split(":", 1))
                    info.setdefault(k, v)
    except OSError:
        pass
    name = info.get("model name") or platform.processor() or "?"
    if "cpu family" in info and "model" in info:
        name += f" (family {info['cpu family']}, model {info['model']})"
    return name


def fmt_us(v):
    return f"{v:,.1f}" if v >= 10 else f"{v:.2f}"


def markdown_table(rows):
    lines = [
        "| benchmark | framework | median µs/call | min µs/call | × fnad (median) | calls × rounds |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for bench, fw, r, ratio in rows:
        ratio_s = "1.00" if fw == "fnad" else (f"{ratio:.2f}" if ratio is not None else "—")
        lines.append(
            f"| {bench} | {fw} | {fmt_us(r['median'])} | {fmt_us(r['min'])} | "
            f"{ratio_s} | {r['n']} × {r['rounds']} |"
        )
    return "\n".join(lines)


def profile_call(label, fn, seconds=3.0, top=25, cumulative=False):
    """cProfile repeated calls of fn for `seconds`; print the top entries."""
    import cProfile
    import pstats
    pr = cProfile.Profile()
    t_end = time.perf_counter() + seconds
    calls = 0
    pr.enable()
    while time.perf_counter() < t_end:
        fn()
        calls += 1
    pr.disable()
    print(f"\n## cProfile of {label}, {calls} calls\n")
    st = pstats.Stats(pr, stream=sys.stdout)
    st.strip_dirs().sort_stats("tottime").print_stats(top)
    if cumulative:
        st.sort_stats("cumulative").print_stats(top)


def print_header(title, fws, notes):
    """Date, machine, framework versions and notes, at the top of a run's output."""
    now = datetime.datetime.now().astimezone()
    print(f"# {title}")
    print(f"date: {now:%Y-%m-%d %H:%M %Z}")
    print(f"machine: {cpu_model()}, nproc={os.cpu_count()}, {platform.system()} "
          f"{platform.release()}, Python {platform.python_version()}")
    print("versions: " + ", ".join(f"{k} {v.get('version', '?')}" for k, v in fws.items()))
    for k, v in fws.items():
        if v.get("note"):
            print(f"note: {k}: {v['note']}")
    for n_ in notes:
        print("note: " + n_)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=None,
                    help="timed rounds per measurement (default 30; 10 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer and shorter rounds (a smoke run, noisier numbers)")
    ap.add_argument("--round-ms", type=float, default=None,
                    help="target wall time of one round in ms (default 20; 5 with --quick)")
    ap.add_argument("--only", default=None,
                    help="comma-separated frameworks to run (default: all available)")
    ap.add_argument("--profile", action="store_true",
                    help="after timing, cProfile fnad's grad call and print the hotspots")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the calling thread's CPU time instead of wall time: "
                         "steadier on a shared machine. fnad, numpy, autograd and torch "
                         "(autograd on CPU) work on the calling thread; JAX dispatches to "
                         "its own threads, so its CPU time here is a lower bound")
    args = ap.parse_args(argv)
    clock = time.thread_time_ns if args.cpu_time else time.perf_counter_ns
    rounds = args.rounds or (10 if args.quick else 30)
    target_ns = int((args.round_ms or (5 if args.quick else 20)) * 1e6)
    warmup_ns = int((0.1 if args.quick else 0.5) * 1e9)

    x, w, b, y = inputs()
    wanted = set(args.only.split(",")) if args.only else None

    fws = {}
    notes = []
    for name, setup in FRAMEWORKS:
        if wanted is not None and name not in wanted and name != "fnad":
            continue
        try:
            fws[name] = setup(x, w, b, y)
        except ImportError as e:
            notes.append(f"{name}: skipped (import failed: {e})")
        except Exception as e:  # a peer that imports but cannot run is also skipped
            if name == "fnad":
                raise
            notes.append(f"{name}: skipped ({type(e).__name__}: {e})")
    if "fnad" not in fws:
        sys.exit("fnad failed to set up")

    # ---- correctness before any timing ------------------------------------------------
    ref = reference_grad(x, w, b)
    grads = {k: v["grad_value"] for k, v in fws.items() if "grad_value" in v}
    for name, g in grads.items():
        assert g.shape == x.shape and g.dtype == np.float32, (name, g.shape, g.dtype)
        assert np.allclose(g, ref, rtol=RTOL, atol=1e-5), (
            f"{name} gradient disagrees with the float64 finite-difference reference:\n"
            f"{g}\nvs\n{ref}")
    for name, g in grads.items():
        assert np.allclose(g, grads["fnad"], rtol=RTOL, atol=ATOL), (
            f"{name} gradient disagrees with fnad's:\n{g}\nvs\n{grads['fnad']}")
    adds = {k: v["add_value"] for k, v in fws.items() if "add_value" in v}
    for name, a in adds.items():
        assert a.dtype == np.float32 and np.allclose(a, x + y, rtol=RTOL, atol=ATOL), name
    if "numpy" in fws:
        fv = np.float32(np.asarray(fws["numpy"]["forward"]()))
        assert np.isfinite(fv)

    # ---- header -----------------------------------------------------------------------
    print_header("fnad eager benchmark", fws, notes)
    print(f"gradients checked: {', '.join(grads)} agree with each other and with a float64 "
          f"finite-difference reference (rtol {RTOL})")
    print(f"timing: {rounds} rounds of n calls (~{target_ns / 1e6:g} ms/round) after "
          f"{warmup_ns / 1e9:g}s warm-up, rounds interleaved across frameworks, "
          f"gc off within a round\n")
    sys.stdout.flush()

    # ---- timing -----------------------------------------------------------------------
    order = ["fnad", "torch", "autograd", "jax", "numpy"]
    labels = {"grad": "grad (20-op f, (10,) f32)",
              "forward": "forward only (no grad)",
              "add": "x + y ((10,) f32)"}
    rows = []
    results = {}
    # The numpy forward pass is timed with the grads, so it shares their conditions.
    for keys in (("grad", "forward"), ("add",)):
        fns = {(key, name): fws[name][key] for key in keys for name in order
               if name in fws and fws[name].get(key) is not None}
        print(f"timing {', '.join(labels[k] for k in keys)}: "
              f"{', '.join(name for _, name in fns)} ...", flush=True)
        res = measure_interleaved(fns, rounds, target_ns, warmup_ns, clock=clock)
        for (key, name), r in res.items():
            results[(key, name)] = r
            print(f"  {labels[key]:28s} {name:9s} median {fmt_us(r['median']):>9s} µs   "
                  f"min {fmt_us(r['min']):>9s} µs   (n={r['n']})", flush=True)
    for (key, name), r in results.items():
        base_key = "grad" if key == "forward" else key
        base = results.get((base_key, "fnad"))
        ratio = r["median"] / base["median"] if base else None
        rows.append((labels[key], name, r, ratio))

    # ---- targets ----------------------------------------------------------------------
    target_lines = []
    fg, tg = results.get(("grad", "fnad")), results.get(("grad", "torch"))
    if fg and tg:
        q = fg["median"] / tg["median"]
        target_lines.append(
            f"- fnad grad / PyTorch grad = **{q:.2f}×** (target ≤ {TARGET_GRAD_VS_TORCH}×): "
            f"**{'MET' if q <= TARGET_GRAD_VS_TORCH else 'NOT MET'}** "
            f"(ratio of mins: {fg['min'] / tg['min']:.2f}×)")
    else:
        target_lines.append("- fnad grad vs PyTorch: not measured (torch unavailable)")
    fa, na = results.get(("add", "fnad")), results.get(("add", "numpy"))
    if fa and na:
        q = fa["median"] / na["median"]
        target_lines.append(
            f"- fnad `x + y` / numpy `np.add` = **{q:.2f}×** (target ≤ {TARGET_OP_VS_NUMPY}×): "
            f"**{'MET' if q <= TARGET_OP_VS_NUMPY else 'NOT MET'}** "
            f"(ratio of mins: {fa['min'] / na['min']:.2f}×)")

    print("\n## Results (paste into bench/README.md)\n")
    print(f"Measured {datetime.date.today()} on {cpu_model()} ({os.cpu_count()} cores), "
          f"`bench/eager.py --rounds {rounds}{' --quick' if args.quick else ''}"
          f"{' --cpu-time' if args.cpu_time else ''}`"
          f"{' (thread CPU time)' if args.cpu_time else ''}. "
          "× fnad = framework median / fnad median (>1: slower than fnad); "
          "the forward-only row is relative to fnad's grad.\n")
    print(markdown_table(rows))
    print("\nTargets:\n")
    print("\n".join(target_lines))

    if args.profile:
        profile_call("fnad.grad(f)(x)", fws["fnad"]["grad"], cumulative=True)


if __name__ == "__main__":
    main()
