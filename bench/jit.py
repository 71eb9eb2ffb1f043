"""jit benchmark: fnad.jit against JAX jit, PyTorch eager (and optionally torch.compile).

Measures, in one run (float32 throughout):
  W1j  microseconds per call of a jitted gradient of the 20-op function of (10,) arrays
       used by bench/eager.py: per-call overhead of the compiled path;
  W2   milliseconds per jitted SGD step of an MLP 784-1024-1024-10 (relu, log-softmax
       cross-entropy on integer labels, batch 256): forward, backward and the parameter
       update, params a pytree (list of dicts) returned by the step;
  W3   milliseconds per call of sum(tanh(x)*exp(-x**2) + sin(x)/(1+x**2)) on 10,000,000
       elements (numpy's eager time as a reference), and
  W3g  its gradient;
  W6   first-call latency (trace + compile + run) of the W2 step in a fresh process:
       fnad with a cold and a warm kernel cache, JAX (and PyTorch eager, for reference).

Before anything is timed, every framework's result is checked against the others and
against a float64 numpy reference (np.allclose, rtol 1e-4), so a wrong answer is never
timed. Every peer is optional: one that fails to import or run is skipped with a note.

Usage:
    .venv/bin/python bench/jit.py                   # full run, ~3-5 minutes
    .venv/bin/python bench/jit.py --quick           # fewer, shorter rounds; 1 W6 repeat
    .venv/bin/python bench/jit.py --only W2,W3      # a subset of W1j,W2,W3,W3g,W6
    .venv/bin/python bench/jit.py --torch-compile   # also torch.compile (slow to compile)
    .venv/bin/python bench/jit.py --profile         # cProfile fnad's timed calls
    .venv/bin/python bench/jit.py --lowered         # print fnad's generated code

The last thing printed is a markdown table ready to paste into bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

# The W1 function, its inputs and the timing loop are bench/eager.py's own.
from eager import cpu_model, inputs as w1_inputs, make_f, measure_interleaved, profile_call  # noqa: E402
from eager import reference_grad as w1_reference_grad  # noqa: E402

RTOL = 1e-4
WORKLOADS = ("W1j", "W2", "W3", "W3g", "W6")

# Targets: fnad / JAX (medians), and W6's absolute warm-cache budget.
TARGET_W1J = 0.5
TARGET_W2 = 1.1
TARGET_W3 = 0.5
TARGET_W3G = 0.5
TARGET_W6_WARM_S = 0.3
TARGET_W6_COLD = 2.0

# W2: the MLP
SIZES = (784, 1024, 1024, 10)
BATCH = 256
LR = 0.1

# W3
N3 = 10_000_000


# ======================================================================================
# W2: an MLP SGD step, written per framework (same math, same initial params).
# ======================================================================================
def w2_data():
    rng = np.random.default_rng(0)
    params = [dict(w=(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
                   b=(0.1 * rng.standard_normal(b)).astype(np.float32))
              for a, b in zip(SIZES[:-1], SIZES[1:])]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    return params, x, y


def w2_reference(params, x, y):
    """float64 numpy forward + hand-written backward + update: (new params, loss)."""
    p = [{k: v.astype(np.float64) for k, v in d.items()} for d in params]
    acts, zs, h = [x.astype(np.float64)], [], x.astype(np.float64)
    for i, d in enumerate(p):
        z = h @ d["w"] + d["b"]
        zs.append(z)
        h = np.maximum(z, 0) if i < len(p) - 1 else z
        acts.append(h)
    z = zs[-1]
    zmax = z.max(axis=1, keepdims=True)
    lse = zmax + np.log(np.exp(z - zmax).sum(axis=1, keepdims=True))
    logp = z - lse
    loss = -logp[np.arange(len(y)), y].mean()
    dz = np.exp(logp)
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    grads = [None] * len(p)
    for i in reversed(range(len(p))):
        grads[i] = dict(w=acts[i].T @ dz, b=dz.sum(axis=0))
        if i:
            dz = (dz @ p[i]["w"].T) * (zs[i - 1] > 0)
    new = [{k: d[k] - LR * g[k] for k in d} for d, g in zip(p, grads)]
    return new, loss


def w2_fnad():
    import fnad
    import fnad.numpy as fnp
    from fnad.nn.activations import relu, log_softmax

    def loss(params, x, y):
        h = x
        for i, p in enumerate(params):
            h = h @ p["w"] + p["b"]
            if i < len(params) - 1:
                h = relu(h)
        logp = log_softmax(h)
        return -fnp.mean(fnp.take_along_axis(logp, y[:, None], axis=1))

    def step(params, x, y):
        value, grads = fnad.value_and_grad(loss)(params, x, y)
        new = fnad.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return new, value

    step = fnad.jit(step)
    params, x, y = w2_data()
    fp = fnad.tree_util.tree_map(fnp.asarray, params)
    fx, fy = fnp.asarray(x), fnp.asarray(y)
    return step, (fp, fx, fy), lambda out: out


def w2_jax():
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        h = x
        for i, p in enumerate(params):
            h = h @ p["w"] + p["b"]
            if i < len(params) - 1:
                h = jax.nn.relu(h)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        new = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return new, value

    step = jax.jit(step)
    params, x, y = w2_data()
    jp = jax.tree_util.tree_map(jnp.asarray, params)
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    return step, (jp, jx, jy), jax.block_until_ready


def _torch_loss(torch):
    def loss(params, x, y):
        h = x
        for i, p in enumerate(params):
            h = h @ p["w"] + p["b"]
            if i < len(params) - 1:
                h = torch.relu(h)
        logp = torch.log_softmax(h, dim=-1)
        return -logp.gather(1, y[:, None]).mean()
    return loss


def w2_torch():
    """Eager PyTorch, the usual way: leaf tensors with requires_grad, autograd.grad,
    the update under no_grad into new tensors."""
    import torch
    loss = _torch_loss(torch)

    def step(params, x, y):
        leaves = [p[k] for p in params for k in ("w", "b")]
        value = loss(params, x, y)
        grads = iter(torch.autograd.grad(value, leaves))
        with torch.no_grad():
            new = [{k: p[k] - LR * next(grads) for k in ("w", "b")} for p in params]
        return new, value.detach()

    params, x, y = w2_data()
    tp = [{k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in d.items()}
          for d in params]
    tx, ty = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    return step, (tp, tx, ty), lambda out: out


def w2_torch_compile():
    """torch.compile of a functional step (torch.func.grad_and_value)."""
    import torch
    loss = _torch_loss(torch)

    def step(params, x, y):
        grads, value = torch.func.grad_and_value(loss)(params, x, y)
        new = [{k: p[k] - LR * g[k] for k in ("w", "b")} for p, g in zip(params, grads)]
        return new, value

    params, x, y = w2_data()
    tp = [{k: torch.from_numpy(v.copy()) for k, v in d.items()} for d in params]
    tx, ty = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    return torch.compile(step), (tp, tx, ty), lambda out: out


def w2_as_numpy(out):
    new, value = out
    return [{k: np.asarray(v.detach() if hasattr(v, "detach") else v) for k, v in d.items()}
            for d in new], np.asarray(value.detach() if hasattr(value, "detach") else value)


# ======================================================================================
# W3: sum(tanh(x)*exp(-x**2) + sin(x)/(1+x**2)) on 10M float32, and its gradient.
# ======================================================================================
def make_w3(m):
    def f(x):
        return m.sum(m.tanh(x) * m.exp(-x ** 2) + m.sin(x) / (1 + x ** 2))
    return f


def w3_data():
    return np.random.default_rng(1).standard_normal(N3).astype(np.float32)


def w3_reference(x):
    x = x.astype(np.float64)
    t, e, d = np.tanh(x), np.exp(-x * x), 1 + x * x
    value = np.sum(t * e + np.sin(x) / d)
    grad = (1 - t * t) * e - 2 * x * t * e + np.cos(x) / d - 2 * x * np.sin(x) / (d * d)
    return value, grad


def w3_numpy_grad(x):
    """The hand-written derivative in float32 numpy (a reference point for W3g)."""
    t, e, d = np.tanh(x), np.exp(-x * x), 1 + x * x
    return (1 - t * t) * e - 2 * x * t * e + np.cos(x) / d - 2 * x * np.sin(x) / (d * d)


# ======================================================================================
# Framework setups. Each returns {workload: (callable, to_numpy)} for the workloads
# requested; the callables take no arguments and return a finished result.
# ======================================================================================
def setup_fnad(work, opts):
    import fnad
    import fnad.numpy as fnp
    # The steady state is what these workloads time: compile on the first call rather
    # than running it unfused while a background thread compiles (W6 keeps the default).
    fnad.config.background_compile = False
    out = {}
    if "W1j" in work:
        x, w, b, _ = w1_inputs()
        fw, fb, fx = (fnp.asarray(a) for a in (w, b, x))
        g = fnad.jit(fnad.grad(make_f(fnp, fw, fb)))
        out["W1j"] = (lambda: g(fx), np.asarray, (g, (fx,)))
    if "W2" in work:
        step, args, _ = w2_fnad()
        out["W2"] = (lambda: step(*args), w2_as_numpy, (step, args))
    if "W3" in work or "W3g" in work:
        X = fnp.asarray(w3_data())
        f3 = fnad.jit(make_w3(fnp))
        g3 = fnad.jit(fnad.grad(make_w3(fnp)))
        if "W3" in work:
            out["W3"] = (lambda: f3(X), np.asarray, (f3, (X,)))
        if "W3g" in work:
            out["W3g"] = (lambda: g3(X), np.asarray, (g3, (X,)))
    return out


def setup_jax(work, opts):
    import jax
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    out = {}
    if "W1j" in work:
        x, w, b, _ = w1_inputs()
        jw, jb, jx = (jnp.asarray(a) for a in (w, b, x))
        g = jax.jit(jax.grad(make_f(jnp, jw, jb)))
        out["W1j"] = (lambda: g(jx).block_until_ready(), np.asarray, None)
    if "W2" in work:
        step, args, block = w2_jax()
        out["W2"] = (lambda: block(step(*args)), w2_as_numpy, None)
    if "W3" in work or "W3g" in work:
        X = jnp.asarray(w3_data())
        f3 = jax.jit(make_w3(jnp))
        g3 = jax.jit(jax.grad(make_w3(jnp)))
        if "W3" in work:
            out["W3"] = (lambda: f3(X).block_until_ready(), np.asarray, None)
        if "W3g" in work:
            out["W3g"] = (lambda: g3(X).block_until_ready(), np.asarray, None)
    return out


def _torch_np(t):
    return t.detach().numpy()


def setup_torch(work, opts):
    """PyTorch eager."""
    import torch
    out = {}
    if "W1j" in work:   # eager: there is no jit of a 20-op grad without torch.compile
        x, w, b, _ = w1_inputs()
        tw, tb = torch.from_numpy(w.copy()), torch.from_numpy(b.copy())
        tx = torch.from_numpy(x.copy()).requires_grad_(True)
        f = make_f(torch, tw, tb)
        out["W1j"] = (lambda: torch.autograd.grad(f(tx), tx)[0], _torch_np, None)
    if "W2" in work:
        step, args, _ = w2_torch()
        out["W2"] = (lambda: step(*args), w2_as_numpy, None)
    if "W3" in work or "W3g" in work:
        X = torch.from_numpy(w3_data())
        Xg = X.clone().requires_grad_(True)
        f3 = make_w3(torch)
        if "W3" in work:
            def w3():
                with torch.no_grad():
                    return f3(X)
            out["W3"] = (w3, _torch_np, None)
        if "W3g" in work:
            out["W3g"] = (lambda: torch.autograd.grad(f3(Xg), Xg)[0], _torch_np, None)
    return out


def setup_torch_compile(work, opts):
    import torch
    out = {}
    if "W1j" in work:
        x, w, b, _ = w1_inputs()
        tw, tb, tx = (torch.from_numpy(a.copy()) for a in (w, b, x))
        g = torch.compile(torch.func.grad(make_f(torch, tw, tb)))
        out["W1j"] = (lambda: g(tx), _torch_np, None)
    if "W2" in work:
        step, args, _ = w2_torch_compile()
        out["W2"] = (lambda: step(*args), w2_as_numpy, None)
    if "W3" in work or "W3g" in work:
        X = torch.from_numpy(w3_data())
        f3 = torch.compile(make_w3(torch))
        g3 = torch.compile(torch.func.grad(make_w3(torch)))
        if "W3" in work:
            out["W3"] = (lambda: f3(X), _torch_np, None)
        if "W3g" in work:
            out["W3g"] = (lambda: g3(X), _torch_np, None)
    return out


def setup_numpy(work, opts):
    out = {}
    if "W3" in work or "W3g" in work:
        x = w3_data()
        if "W3" in work:
            f3 = make_w3(np)
            out["W3"] = (lambda: f3(x), np.asarray, None)
        if "W3g" in work:
            out["W3g"] = (lambda: w3_numpy_grad(x), np.asarray, None)
    return out


FRAMEWORKS = [
    ("fnad", setup_fnad),
    ("jax", setup_jax),
    ("torch", setup_torch),
    ("torch.compile", setup_torch_compile),
    ("numpy", setup_numpy),
]
FRAMEWORK_LABEL = {
    "fnad": "fnad jit", "jax": "JAX jit", "torch": "torch eager",
    "torch.compile": "torch.compile", "numpy": "numpy eager",
}


# ======================================================================================
# Correctness: every result against the float64 reference and against JAX's / fnad's.
# ======================================================================================
def check_w1(results):
    x, w, b, _ = w1_inputs()
    ref = w1_reference_grad(x, w, b)
    for name, g in results.items():
        assert g.shape == x.shape and g.dtype == np.float32, (name, g.shape, g.dtype)
        assert np.allclose(g, ref, rtol=RTOL, atol=1e-5), (
            f"W1j: {name}'s gradient disagrees with the float64 reference:\n{g}\nvs\n{ref}")


def check_w2(results):
    params, x, y = w2_data()
    ref_new, ref_loss = w2_reference(params, x, y)
    base = results.get("fnad")
    for name, (new, value) in results.items():
        assert value.dtype == np.float32, (name, value.dtype)
        assert np.allclose(value, ref_loss, rtol=RTOL), (name, float(value), ref_loss)
        for i, (d, r, p0) in enumerate(zip(new, ref_new, params)):
            for k in ("w", "b"):
                assert d[k].dtype == np.float32 and d[k].shape == r[k].shape, (name, i, k)
                assert np.allclose(d[k], r[k], rtol=RTOL, atol=1e-6), (
                    f"W2: {name}'s updated params[{i}][{k!r}] differ from the float64 "
                    f"reference (max abs err {np.abs(d[k] - r[k]).max():.3g})")
                # The update itself (lr * grad) to 1e-3 of its scale: a real check of
                # the gradient, which is small next to the params.
                du, dr = d[k] - p0[k], r[k] - p0[k]
                assert np.allclose(du, dr, rtol=1e-3, atol=1e-3 * np.abs(dr).max()), (
                    f"W2: {name}'s update of params[{i}][{k!r}] differs from the float64 "
                    f"reference (max abs err {np.abs(du - dr).max():.3g})")
        if base is not None:
            assert np.allclose(value, base[1], rtol=RTOL), (name, float(value), float(base[1]))
            for d, bd in zip(new, base[0]):
                for k in ("w", "b"):
                    assert np.allclose(d[k], bd[k], rtol=RTOL, atol=1e-6), (name, k)


def check_w3(results, grad):
    ref_value, ref_grad = w3_reference(w3_data())
    for name, v in results.items():
        assert v.dtype == np.float32, (name, v.dtype)
        if grad:
            assert v.shape == (N3,), (name, v.shape)
            err = np.abs(v - ref_grad).max()
            assert np.allclose(v, ref_grad, rtol=RTOL, atol=1e-6), (
                f"W3g: {name}'s gradient disagrees with the float64 reference "
                f"(max abs err {err:.3g})")
        else:
            assert v.shape == (), (name, v.shape)
            assert np.allclose(v, ref_value, rtol=RTOL), (
                f"W3: {name} = {float(v)!r}, float64 reference {ref_value!r}")


def w3_errors(results):
    ref_value, _ = w3_reference(w3_data())
    return {name: abs(float(v) / ref_value - 1) for name, v in results.items()}


# ======================================================================================
# W6: first call of the W2 step in a fresh process.
# ======================================================================================
def child(kind):
    """Run in a fresh process: import, build the W2 step, time its first two calls."""
    t0 = time.perf_counter()
    if kind == "fnad":
        import fnad  # noqa: F401
        t1 = time.perf_counter()
        step, args, block = w2_fnad()
    elif kind == "jax":
        import jax  # noqa: F401
        t1 = time.perf_counter()
        step, args, block = w2_jax()
    elif kind == "torch":
        import torch  # noqa: F401
        t1 = time.perf_counter()
        step, args, block = w2_torch()
    else:
        raise SystemExit(f"unknown child kind {kind}")
    t2 = time.perf_counter()
    out = block(step(*args))
    t3 = time.perf_counter()
    block(step(*args))
    t4 = time.perf_counter()
    new, value = w2_as_numpy(out)
    rep = dict(kind=kind, import_s=t1 - t0, setup_s=t2 - t1, first_s=t3 - t2,
               second_s=t4 - t3, loss=float(value))
    if kind == "fnad":
        from fnad.backends.cpu import lowering
        rep["stats"] = dict(getattr(lowering, "stats", {}))
    print("W6RESULT " + json.dumps(rep), flush=True)


def run_child(kind, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    env["JAX_PLATFORMS"] = "cpu"
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", kind],
                       env=env, capture_output=True, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("W6RESULT "):
            return json.loads(line[len("W6RESULT "):])
    raise RuntimeError(f"W6 child {kind} failed (rc {p.returncode}):\n"
                       f"{p.stdout[-2000:]}\n{p.stderr[-4000:]}")


def run_w6(repeats, with_torch, notes):
    """Scenarios, each repeated with fresh temporary cache directories; medians."""
    scenarios = {}      # label -> list of child reports

    def add(label, rep):
        scenarios.setdefault(label, []).append(rep)

    for r in range(repeats):
        fnad_dir = tempfile.mkdtemp(prefix="fnad-bench-cache-")
        both_fnad = tempfile.mkdtemp(prefix="fnad-bench-cache-")
        both_numba = tempfile.mkdtemp(prefix="numba-bench-cache-")
        try:
            # 1. empty FNAD_CACHE_DIR; Numba's own cache (fnad's library kernels, cached
            #    next to fnad's sources) as it is.
            env = {"FNAD_CACHE_DIR": fnad_dir}
            add("fnad, cold fnad cache", run_child("fnad", env))
            add("fnad, warm fnad cache", run_child("fnad", env))
            # 2. everything cold: NUMBA_CACHE_DIR empty too, so fnad's library kernels
            #    compile as well (NUMBA_CACHE_DIR also moves the generated kernels' cache).
            env = {"FNAD_CACHE_DIR": both_fnad, "NUMBA_CACHE_DIR": both_numba}
            add("fnad, cold fnad + Numba caches", run_child("fnad", env))
            add("fnad, warm fnad + Numba caches", run_child("fnad", env))
        finally:
            for d in (fnad_dir, both_fnad, both_numba):
                shutil.rmtree(d, ignore_errors=True)
        try:
            add("JAX, fresh process", run_child("jax", {}))
        except Exception as e:  # noqa: BLE001
            if r == 0:
                notes.append(f"W6 jax: skipped ({type(e).__name__}: {str(e)[:200]})")
        if with_torch:
            try:
                add("torch eager, fresh process", run_child("torch", {}))
            except Exception as e:  # noqa: BLE001
                if r == 0:
                    notes.append(f"W6 torch: skipped ({type(e).__name__}: {str(e)[:200]})")
    summary = {}
    for label, reps in scenarios.items():
        med = {k: statistics.median(rp[k] for rp in reps)
               for k in ("import_s", "setup_s", "first_s", "second_s")}
        med["min_first_s"] = min(rp["first_s"] for rp in reps)
        med["n"] = len(reps)
        med["stats"] = reps[-1].get("stats")
        summary[label] = med
    losses = {rp["kind"]: rp["loss"] for reps in scenarios.values() for rp in reps}
    ref = w2_reference(*w2_data())[1]
    for kind, loss in losses.items():
        assert np.isclose(loss, ref, rtol=RTOL), f"W6 {kind} child loss {loss} vs {ref}"
    return summary


# ======================================================================================
# Reporting
# ======================================================================================
UNIT = {"W1j": ("µs", 1.0), "W2": ("ms", 1e-3), "W3": ("ms", 1e-3), "W3g": ("ms", 1e-3)}
LABEL = {
    "W1j": "W1j jit(grad(20-op f)), (10,)",
    "W2": "W2 MLP SGD step, batch 256",
    "W3": "W3 sum(tanh·exp + sin/(1+x²)), 10M",
    "W3g": "W3g grad of W3, 10M",
}


def fmt(v):
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def git_state():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fnad"], cwd=root,
                               capture_output=True, text=True).stdout.strip()
        return head + (" + uncommitted changes in fnad/" if dirty else "")
    except OSError:
        return "?"


def target_line(name, q, target, detail=""):
    if q is None:
        return f"- {name}: not measured"
    ok = q <= target
    return (f"- {name} = **{q:.2f}×** JAX (target ≤ {target}×): "
            f"**{'MET' if ok else 'NOT MET'}**{detail}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer, shorter rounds and one W6 repeat (a smoke run, noisier)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="timed rounds per workload (default 30; 8 with --quick)")
    ap.add_argument("--w6-repeats", type=int, default=None,
                    help="fresh-process repeats per W6 scenario (default 3; 1 with --quick)")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated workloads (default all: {','.join(WORKLOADS)})")
    ap.add_argument("--torch-compile", action="store_true",
                    help="also time torch.compile (its first compile of W2 takes ~25 s)")
    ap.add_argument("--frameworks", default=None,
                    help="comma-separated subset of fnad,jax,torch,torch.compile,numpy "
                         "(fnad always runs)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    ap.add_argument("--profile", action="store_true",
                    help="after timing, cProfile each of fnad's timed calls")
    ap.add_argument("--lowered", action="store_true",
                    help="print fnad's generated code (jit(...).lower(...).as_text())")
    ap.add_argument("--settle-ms", type=float, default=50,
                    help="pause before each timed round, so the previous framework's "
                         "spinning threads park (default 50)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child)

    work = list(WORKLOADS)
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        bad = [w for w in wanted if w not in WORKLOADS]
        if bad:
            ap.error(f"unknown workload(s) {bad}; choose from {', '.join(WORKLOADS)}")
        work = [w for w in WORKLOADS if w in wanted]
    rounds = args.rounds or (8 if args.quick else 30)
    w6_repeats = args.w6_repeats or (1 if args.quick else 3)
    # (round target ms, warm-up s) per workload
    timing = {"W1j": (20, 0.5), "W2": (60, 1.0), "W3": (150, 1.0), "W3g": (150, 1.0)}
    if args.quick:
        timing = {k: (max(5, ms / 4), 0.2) for k, (ms, _) in timing.items()}

    load_start = os.getloadavg()
    notes = []
    if not args.torch_compile:
        notes.append("torch.compile: not timed by default (it works, but its first compile "
                      "of the W2 step takes ~25 s on this machine); pass --torch-compile")
    timed = [w for w in work if w != "W6"]
    fws = {}
    setup_s = {}
    for name, setup in FRAMEWORKS:
        if name == "torch.compile" and not args.torch_compile:
            continue
        if name.startswith("torch") and args.no_torch:
            continue
        if args.frameworks and name != "fnad" and name not in args.frameworks.split(","):
            continue
        if not timed:
            break
        try:
            t0 = time.perf_counter()
            fws[name] = setup(timed, args)
            setup_s[name] = time.perf_counter() - t0
        except ImportError as e:
            if name == "fnad":
                raise
            notes.append(f"{name}: skipped (import failed: {e})")
        except Exception as e:  # noqa: BLE001
            if name == "fnad":
                raise
            notes.append(f"{name}: skipped ({type(e).__name__}: {e})")

    # ---- first calls (compiles) and correctness, before any timing -------------------
    first_call = {}     # (workload, framework) -> seconds
    values = {}         # workload -> {framework: numpy result}
    for wl in timed:
        for name in list(fws):
            entry = fws[name].get(wl)
            if entry is None:
                continue
            fn, to_np = entry[0], entry[1]
            try:
                t0 = time.perf_counter()
                out = fn()
                first_call[(wl, name)] = time.perf_counter() - t0
                values.setdefault(wl, {})[name] = to_np(out)
            except Exception as e:  # noqa: BLE001
                if name == "fnad":
                    raise
                notes.append(f"{wl} {name}: skipped ({type(e).__name__}: {str(e)[:300]})")
                del fws[name][wl]
    checks = {"W1j": check_w1, "W2": check_w2,
              "W3": lambda r: check_w3(r, grad=False), "W3g": lambda r: check_w3(r, grad=True)}
    for wl, res in values.items():
        checks[wl](res)
    if "W3" in values:
        errs = w3_errors(values["W3"])
        notes.append("W3 relative error of the float32 sum vs float64: " + ", ".join(
            f"{k} {v:.1e}" for k, v in errs.items()))

    # ---- header ---------------------------------------------------------------------
    versions = {}
    for mod in ("numpy", "numba", "jax", "torch"):
        if mod in sys.modules:
            versions[mod] = getattr(sys.modules[mod], "__version__", "?")
    import fnad
    versions = {"fnad": f"{fnad.__version__} ({git_state()})", **versions}
    if "torch" in sys.modules:
        notes.append(f"torch intra-op threads: {sys.modules['torch'].get_num_threads()}")
    now = datetime.datetime.now().astimezone()
    print("# fnad jit benchmark")
    print(f"date: {now:%Y-%m-%d %H:%M %Z}")
    print(f"machine: {cpu_model()}, nproc={os.cpu_count()}, {platform.system()} "
          f"{platform.release()}, Python {platform.python_version()}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    for n_ in notes:
        print("note: " + n_)
    if values:
        print("checked before timing: " + "; ".join(
            f"{wl}: {', '.join(r)}" for wl, r in values.items())
            + f" agree with a float64 numpy reference (rtol {RTOL})")
        print("first calls (trace + compile + run, in this process): " + ", ".join(
            f"{wl} {fw} {s:.2f}s" for (wl, fw), s in first_call.items()))
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in load_start)} "
          f"(1, 5, 15 min; {os.cpu_count()} cores)")
    print(f"timing: {rounds} rounds per workload, rounds interleaved across frameworks, "
          f"gc off within a round; W6 in fresh processes, {w6_repeats} repeat(s)\n",
          flush=True)

    if args.lowered:
        for wl in timed:
            e = fws["fnad"].get(wl)
            if e and e[2]:
                jf, jargs = e[2]
                print(f"\n## fnad generated code for {wl}\n")
                print(jf.lower(*jargs).as_text())

    # ---- timing ---------------------------------------------------------------------
    order = ["fnad", "jax", "torch", "torch.compile", "numpy"]
    results = {}
    for wl in timed:
        fns = {name: fws[name][wl][0] for name in order
               if name in fws and wl in fws[name]}
        if not fns:
            continue
        round_ms, warm_s = timing[wl]
        print(f"timing {wl}: {', '.join(fns)} ...", flush=True)
        res = measure_interleaved(fns, rounds, int(round_ms * 1e6), int(warm_s * 1e9),
                                  args.settle_ms / 1e3)
        unit, scale = UNIT[wl]
        for name, r in res.items():
            results[(wl, name)] = r
            print(f"  {wl:4s} {name:14s} median {fmt(r['median'] * scale):>8s} {unit}   "
                  f"min {fmt(r['min'] * scale):>8s} {unit}   (n={r['n']})", flush=True)

    w6 = None
    if "W6" in work:
        print(f"W6: first call of the W2 step in fresh processes ({w6_repeats} repeat(s)) ...",
              flush=True)
        with_torch = not args.no_torch and (
            not args.frameworks or "torch" in args.frameworks.split(","))
        w6 = run_w6(w6_repeats, with_torch=with_torch, notes=notes)
        for label, m in w6.items():
            print(f"  {label:34s} import {m['import_s']:.2f}s  setup {m['setup_s']:.2f}s  "
                  f"first call {m['first_s']:.3f}s  second {m['second_s'] * 1e3:.1f}ms"
                  + (f"  kernels {m['stats']}" if m.get("stats") else ""), flush=True)

    # ---- tables and targets -----------------------------------------------------------
    lines = ["| workload | framework | median | min | × JAX (median) | calls × rounds |",
             "|---|---|---:|---:|---:|---:|"]
    for wl in timed:
        unit, scale = UNIT[wl]
        jax_r = results.get((wl, "jax"))
        for name in order:
            r = results.get((wl, name))
            if r is None:
                continue
            ratio = f"{r['median'] / jax_r['median']:.2f}" if jax_r else "—"
            lines.append(f"| {LABEL[wl]} | {FRAMEWORK_LABEL[name]} | "
                         f"{fmt(r['median'] * scale)} {unit} | {fmt(r['min'] * scale)} {unit} | "
                         f"{ratio} | {r['n']} × {r['rounds']} |")
    w6_lines = []
    if w6:
        w6_lines = ["| W6 scenario (fresh process) | import | setup | first call (median) | "
                    "first call (min) | second call | × JAX first call |",
                    "|---|---:|---:|---:|---:|---:|---:|"]
        jf = w6.get("JAX, fresh process")
        for label, m in w6.items():
            ratio = f"{m['first_s'] / jf['first_s']:.2f}" if jf else "—"
            w6_lines.append(
                f"| {label} | {m['import_s']:.2f} s | {m['setup_s']:.2f} s | "
                f"{m['first_s']:.3f} s | {m['min_first_s']:.3f} s | "
                f"{m['second_s'] * 1e3:.1f} ms | {ratio} |")

    def q(wl):
        a, b = results.get((wl, "fnad")), results.get((wl, "jax"))
        if not (a and b):
            return None, ""
        return a["median"] / b["median"], f" (ratio of mins {a['min'] / b['min']:.2f}×)"

    targets = []
    if "W1j" in timed:
        targets.append(target_line("W1j fnad jit(grad) per call", q("W1j")[0],
                                   TARGET_W1J, q("W1j")[1]))
    if "W2" in timed:
        targets.append(target_line("W2 fnad step", q("W2")[0], TARGET_W2, q("W2")[1]))
    if "W3" in timed:
        targets.append(target_line("W3 fnad", q("W3")[0], TARGET_W3, q("W3")[1]))
    if "W3g" in timed:
        targets.append(target_line("W3g fnad", q("W3g")[0], TARGET_W3G, q("W3g")[1]))
    if w6:
        warm = w6.get("fnad, warm fnad cache")
        ok = warm["first_s"] < TARGET_W6_WARM_S
        targets.append(f"- W6 fnad first call, warm cache = **{warm['first_s']:.3f} s** "
                       f"(target < {TARGET_W6_WARM_S} s): **{'MET' if ok else 'NOT MET'}**")
        jf = w6.get("JAX, fresh process")
        for label in ("fnad, cold fnad cache", "fnad, cold fnad + Numba caches"):
            cold = w6.get(label)
            if jf:
                targets.append(target_line(
                    f"W6 {label} first call {cold['first_s']:.2f} s", cold["first_s"] /
                    jf["first_s"], TARGET_W6_COLD, f" (JAX: {jf['first_s']:.2f} s)"))
            else:
                targets.append(f"- W6 {label}: JAX not measured")

    cmd = "bench/jit.py" + (" " + " ".join(sys.argv[1:]) if len(sys.argv) > 1 else "")
    print("\n## Results (paste into bench/README.md)\n")
    print(f"Measured {now:%Y-%m-%d %H:%M %Z} on {cpu_model()} (nproc = {os.cpu_count()}), "
          f"`{cmd}`; fnad {versions['fnad']}. × JAX = framework median / JAX jit median "
          "(> 1: slower than JAX).\n")
    if len(lines) > 2:
        print("\n".join(lines))
    if w6_lines:
        print()
        print("\n".join(w6_lines))
    load_end = os.getloadavg()
    print(f"\nLoad average (1, 5, 15 min) at start {' '.join(f'{v:.2f}' for v in load_start)}, "
          f"at end {' '.join(f'{v:.2f}' for v in load_end)} ({os.cpu_count()} cores; "
          "a load above ~0.2 means other work shared the machine).")
    print("\nTargets:\n")
    print("\n".join(targets))
    if notes:
        print("\nNotes:\n")
        print("\n".join(f"- {n_}" for n_ in notes))

    if args.profile:
        for wl in timed:
            e = fws["fnad"].get(wl)
            if e:
                profile_call(f"fnad {wl}", e[0], 3.0)


if __name__ == "__main__":
    main()
