"""ONNX Runtime latency of fnad's exported demo CNN beside fnad's jitted forward.

The model is fnad.demo's "cnn" (conv 3x3 -> 16, relu, conv 3x3 -> 32, relu, 2x2 max
pool, flatten, dense 64, relu, dense 10) on 8x8 single-channel digits, float32, CPU.
It is exported once with fnad.onnx.export (dynamic batch axis) and run at batch 1
and 128:

  fnad-jit   fnad.jit(apply)(params, x), the forward pass as one compiled program
  ort        onnxruntime.InferenceSession(CPUExecutionProvider).run on the export
  ort-1t     the same session limited to one intra-op thread

Before timing, the script checks that ONNX Runtime and fnad agree to 1e-5. Timing is
bench/eager.py's: warm-up, calibration to ~20 ms rounds, rounds interleaved across
the frameworks, gc off within a round; medians (and mins) in microseconds per call.
The 1-minute load average before and after is printed (the machine may be shared).

Usage:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/onnx.py
    ... bench/onnx.py --quick      # 8 short rounds
"""
import argparse
import importlib.util
import os
import sys

# This file's name would shadow the onnx package for `python bench/onnx.py` (the
# script's folder comes first on sys.path): drop the folder, load eager.py by path.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
_spec = importlib.util.spec_from_file_location("eager", os.path.join(HERE, "eager.py"))
eager = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eager)
measure_interleaved, print_header = eager.measure_interleaved, eager.print_header

import numpy as np  # noqa: E402


def blas_note():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    return "; ".join(f"{p.get('internal_api')} {p.get('version')} "
                     f"{p.get('architecture')} x{p.get('num_threads')}"
                     for p in threadpool_info())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    rounds, target_ms = (8, 5) if args.quick else (30, 20)

    import onnxruntime as ort

    import fnad
    import fnad.onnx
    from fnad.demo import MODELS

    init, apply = MODELS["cnn"]()
    _, params = init(fnad.random.PRNGKey(0), (-1, 8, 8, 1))
    forward = fnad.jit(apply)
    example = np.zeros((2, 8, 8, 1), np.float32)
    model = fnad.onnx.export(lambda p, image: apply(p, image), example, params=params,
                             dynamic_axes={"image": {0: "batch"}})
    blob = model.SerializeToString()
    sessions = {}
    for label, threads in (("ort", 0), ("ort-1t", 1)):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        sessions[label] = ort.InferenceSession(blob, opts, providers=["CPUExecutionProvider"])

    print_header("fnad.onnx: exported demo CNN in ONNX Runtime vs fnad.jit",
                 {"fnad": {"version": getattr(fnad, "__version__", "dev")},
                  "onnxruntime": {"version": ort.__version__}},
                 [f"BLAS: {blas_note()}", f"load average before: {os.getloadavg()}"])
    rows = []
    rng = np.random.default_rng(0)
    for batch in (1, 128):
        x = rng.random((batch, 8, 8, 1), dtype=np.float32)
        want = np.asarray(forward(params, x))
        for s in sessions.values():
            np.testing.assert_allclose(s.run(None, {"image": x})[0], want, rtol=1e-5,
                                       atol=1e-5)
        fns = {"fnad-jit": lambda: forward(params, x),
               **{label: (lambda s=s: s.run(None, {"image": x}))
                  for label, s in sessions.items()}}
        stats = measure_interleaved(fns, rounds, target_ms * 1e6, 200e6, settle_s=0.02)
        base = stats["fnad-jit"]["median"]
        for name, st in stats.items():
            rows.append((batch, name, st["median"], st["min"], st["median"] / base))
    print(f"load average after: {os.getloadavg()}")
    print()
    print("| batch | runner | median µs | min µs | / fnad-jit |")
    print("|---:|---|---:|---:|---:|")
    for batch, name, med, lo, ratio in rows:
        print(f"| {batch} | {name} | {med:.1f} | {lo:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
