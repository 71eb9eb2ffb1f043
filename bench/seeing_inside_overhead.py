"""What the issue-15 hooks (profiler, debug_nans, traceback filtering, layer
interceptors) cost when they are off: an A/B in one process.

"before" swaps in the per-call code as it was before them (jit's __call__ and the
cpu driver's Executable.__call__, copied below from commit 25db2a7, and the unwrapped
fnad.grad), "after" is the code as it is. The two alternate round by round on the
same compiled programs and the same inputs, so the machine's load hits both alike:

  W1   fnad.grad(f)(x), the 20-op function of bench/eager.py on (10,) float32
  W1j  jit(grad(f))(x), the same, compiled (bench/jit.py's W1j)
  W2   the jitted MLP SGD step of bench/jit.py (784-1024-1024-10, batch 256)
  W3   jit(sum(tanh(x)*exp(-x**2) + sin(x)/(1+x**2))) on 10M elements

Usage: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python \
           bench/seeing_inside_overhead.py [--rounds 15]
"""
import argparse
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import fnad  # noqa: E402
import fnad.numpy as fnp  # noqa: E402
from fnad.backends.cpu import lowering  # noqa: E402
from fnad.backends.cpu.lowering import Executable, wait_for_compiles  # noqa: E402
from fnad.staged import jit as jit_module  # noqa: E402
from fnad.staged.jit import Jitted  # noqa: E402
from fnad.transforms import vjp as vjp_module  # noqa: E402
from eager import inputs, make_f  # noqa: E402
from jit import make_w3, w2_fnad, w3_data  # noqa: E402


# ------------------------------------------------ the per-call code before issue 15
def jit_call_before(self, *args, **kwargs):
    J = jit_module
    if self.donates and J.current_trace() is J.EVAL and not J.config.disable_jit:
        return self._call_donating(args, kwargs)
    if not kwargs and J.current_trace() is J.EVAL and not J.config.disable_jit:
        try:
            key = J._fast_key(args)
        except AttributeError:
            key = None
        fast = self.fast_by_x64[J.config.enable_x64].get(key)
        if fast is not None:
            try:
                self.cache.move_to_end(fast.trace_key)
            except KeyError:
                fast = None
        if fast is not None:
            out = fast(args)
            if out is not J.OTHER_DEVICE:
                return out
    return self._call(args, kwargs)      # (not reached once warm)


def executable_call_before(self, *args, donated=()):
    out = self.run(*args, donated=donated) if donated else self.run(*args)
    if lowering._pending:
        lowering.start_pending_compiles()
    return out


VARIANTS = {"before": (jit_call_before, executable_call_before, vjp_module.grad),
            "after": (Jitted.__call__, Executable.__call__, fnad.grad)}


def install(variant):
    jit_call, executable_call, grad = VARIANTS[variant]
    Jitted.__call__ = jit_call
    Executable.__call__ = executable_call
    return grad


def workloads():
    x, w, b, _ = inputs()
    f = make_f(fnp, fnp.asarray(w), fnp.asarray(b))
    fx = fnp.asarray(x)
    w1j = fnad.jit(fnad.grad(f))
    step, (params, x2, y2), _ = w2_fnad()
    w3 = fnad.jit(make_w3(fnp))
    x3 = fnp.asarray(w3_data())
    grads = {}

    def w1(variant):
        grad = grads.get(variant)
        if grad is None:
            grad = grads[variant] = VARIANTS[variant][2](f)
        return grad(fx)
    return {"W1": (w1, 200), "W1j": (lambda v: w1j(fx), 2000),
            "W2": (lambda v: step(params, x2, y2), 3), "W3": (lambda v: w3(x3), 2)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    work = workloads()
    for name, (fn, _) in work.items():     # compile everything, both ways
        for variant in VARIANTS:
            install(variant)
            fn(variant)
            fn(variant)
    wait_for_compiles()
    times = {(name, v): [] for name in work for v in VARIANTS}
    load0 = os.getloadavg()
    for r in range(args.rounds):
        for name, (fn, n) in work.items():
            order = list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]
            for variant in order:
                install(variant)
                gc.collect()
                gc.disable()
                t0 = time.perf_counter_ns()
                for _ in range(n):
                    fn(variant)
                times[(name, variant)].append((time.perf_counter_ns() - t0) / n / 1e3)
                gc.enable()
    install("after")
    load1 = os.getloadavg()
    try:
        from threadpoolctl import threadpool_info
        blas = "; ".join(f"{i.get('internal_api')} {i.get('version')} "
                         f"{i.get('architecture')} x{i.get('num_threads')}"
                         for i in threadpool_info() if i.get("user_api") == "blas")
    except ImportError:
        blas = "threadpoolctl not installed"
    print(f"load average at start {load0}, at end {load1} (nproc {os.cpu_count()}); "
          f"BLAS: {blas}; {args.rounds} rounds, variants alternating")
    print("| workload | before median | after median | after/before (median) "
          "| before min | after min | after/before (min) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in work:
        b, a = times[(name, "before")], times[(name, "after")]
        mb, ma = statistics.median(b), statistics.median(a)
        print(f"| {name} | {_fmt(mb)} | {_fmt(ma)} | {ma / mb:.3f} | {_fmt(min(b))} "
              f"| {_fmt(min(a))} | {min(a) / min(b):.3f} |")


def _fmt(us):
    return f"{us / 1e3:.2f} ms" if us >= 1000 else f"{us:.2f} µs"


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
