"""W4 LeNet benchmark: one SGD step of a LeNet-5-like CNN, fnad.jit against JAX jit and
PyTorch eager (float32, CPU).

The step: a batch of 128 single-channel 28x28 images; conv 5x5 -> 6 channels, relu,
2x2 max pool (stride 2), conv 5x5 -> 16 channels, relu, 2x2 max pool, flatten (256),
dense 120, relu, dense 84, relu, dense 10; mean softmax cross-entropy over integer
labels; plain SGD (p -= lr * g). The step returns the new parameters and the loss.

  fnad       fnad.nn layers (NHWC input, HWIO kernels), the whole step in one fnad.jit
  fnad-nchw  the same step on PyTorch's layout (NCHW input, OIHW kernels) through
             fnad.lax.conv_general_dilated and reduce_window, one fnad.jit
  jax     jax.example_libraries.stax, the same layout, jax.jit, block_until_ready
  torch   torch.nn eager (NCHW, OIHW), loss.backward() and torch.optim.SGD

All start from the same parameters (drawn once with numpy and transposed into
each framework's layout; the first dense layer's rows are permuted because NHWC and
NCHW flatten in different orders) and see the same batch. Before anything is timed the
script checks fnad's initial loss against a float64 numpy forward pass, and that every
framework gives the same loss at the start and after one step (rtol 1e-4) and the same
first update of every parameter (rtol 1e-3), so forward, gradients and update agree.

Timing is bench/eager.py's: warm-up, calibration to ~200 ms rounds, 30 rounds
interleaved across frameworks (a 50 ms pause before each), gc off within a round;
medians and mins of ms per step. The 1-minute load average before and after timing is
printed: this run keeps up to 2 threads busy, anything above that is other work.

Usage:
    .venv/bin/python bench/lenet.py              # full run (30 rounds), ~1 minute
    .venv/bin/python bench/lenet.py --quick      # 10 short rounds
    .venv/bin/python bench/lenet.py --only torch # fnad and a subset of the peers
    .venv/bin/python bench/lenet.py --profile    # also time each kernel fnad's step
                                                 # runs, and cProfile the step
    .venv/bin/python bench/lenet.py --lowered    # print fnad's generated driver code
    ... --profile --layout fnad-nchw             # the NCHW step's profile instead

The last thing printed is a markdown table ready to paste into bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from eager import cpu_model, measure_interleaved, print_header, profile_call  # noqa: E402

BATCH = 128
LR = 0.05
RTOL = 1e-4


# --------------------------------------------------------------------------------------
# Shared data: parameters in fnad's / JAX's layout (HWIO kernels, (in, out) matrices).
# --------------------------------------------------------------------------------------
def data():
    rng = np.random.default_rng(0)

    def uniform(shape, fan_in):   # PyTorch's default initialization
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    params = [
        (uniform((5, 5, 1, 6), 25), uniform((6,), 25)), (), (),
        (uniform((5, 5, 6, 16), 150), uniform((16,), 150)), (), (), (),
        (uniform((256, 120), 256), uniform((120,), 256)), (),
        (uniform((120, 84), 120), uniform((84,), 120)), (),
        (uniform((84, 10), 84), uniform((10,), 84)),
    ]
    x = rng.random((BATCH, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.int32)
    return params, x, y


def dense_params(params):
    return [p for p in params if p != ()]


def reference_loss(params, x, y):
    """float64 numpy forward pass (a sanity check on the frameworks' common answer)."""
    def conv(h, w, b):
        k = w.shape[0]
        n, hh, ww, _ = h.shape
        out = np.zeros((n, hh - k + 1, ww - k + 1, w.shape[3]))
        for i in range(k):
            for j in range(k):
                out += np.einsum("nhwc,co->nhwo", h[:, i:i + hh - k + 1, j:j + ww - k + 1], w[i, j])
        return out + b

    def pool(h):
        n, hh, ww, c = h.shape
        return h.reshape(n, hh // 2, 2, ww // 2, 2, c).max((2, 4))

    (w1, b1), (w2, b2), (w3, b3), (w4, b4), (w5, b5) = [
        tuple(a.astype(np.float64) for a in p) for p in dense_params(params)]
    h = pool(np.maximum(conv(x.astype(np.float64), w1, b1), 0))
    h = pool(np.maximum(conv(h, w2, b2), 0)).reshape(len(x), -1)
    h = np.maximum(h @ w3 + b3, 0)
    h = np.maximum(h @ w4 + b4, 0)
    z = h @ w5 + b5
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean()


# --------------------------------------------------------------------------------------
# Frameworks: each setup returns dict(step=callable taking no arguments that runs one
# step and keeps the new params, losses=(loss at start, loss after one step), version).
# --------------------------------------------------------------------------------------
def setup_fnad(params, x, y):
    import fnad
    import fnad.numpy as fnp
    from fnad import nn, optim

    # Time the compiled kernels: with background compiles the first steps run through
    # numpy until Numba is done, which on a loaded machine reaches into the timing.
    fnad.config.update("background_compile", False)
    init, apply = nn.serial(
        nn.Conv(6, (5, 5)), nn.Relu, nn.MaxPool((2, 2), (2, 2)),
        nn.Conv(16, (5, 5)), nn.Relu, nn.MaxPool((2, 2), (2, 2)), nn.Flatten,
        nn.Dense(120), nn.Relu, nn.Dense(84), nn.Relu, nn.Dense(10))
    out_shape, shapes = init(fnad.random.key(0), (-1, 28, 28, 1))
    assert out_shape == (-1, 10)
    assert fnad.tree_util.tree_map(lambda a: a.shape, shapes) == \
        fnad.tree_util.tree_map(lambda a: a.shape, params), "layouts disagree"
    opt = optim.sgd(LR)

    def loss_fn(params, x, y):
        return nn.softmax_cross_entropy(apply(params, x), y)

    @fnad.jit
    def step(params, opt_state, x, y):
        loss, grads = fnad.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    fp = fnad.tree_util.tree_map(fnp.asarray, params)
    fx, fy = fnp.asarray(x), fnp.asarray(y)
    carry = [fp, opt.init(fp)]
    losses, after_one = [], None
    for _ in range(2):
        p, s, loss = step(carry[0], carry[1], fx, fy)
        losses.append(float(loss))
        carry[:] = p, s
        after_one = after_one or [np.asarray(a) for a in fnad.tree_util.tree_leaves(p)]

    def run():
        carry[0], carry[1], _ = step(carry[0], carry[1], fx, fy)

    return dict(version=fnad.__version__, step=run, losses=losses, after_one=after_one,
                jitted=step, args=(fp, opt.init(fp), fx, fy))


def to_nchw(params, x):
    """The parameters and batch in PyTorch's layout: OIHW kernels, NCHW images, and
    the first dense layer's rows in NCHW's flattening order (c, h, w)."""
    (w1, b1), (w2, b2), (w3, b3), (w4, b4), (w5, b5) = dense_params(params)
    w3 = w3.reshape(4, 4, 16, 120).transpose(2, 0, 1, 3).reshape(256, 120)
    layers = [(w1.transpose(3, 2, 0, 1), b1), (w2.transpose(3, 2, 0, 1), b2), (w3, b3),
              (w4, b4), (w5, b5)]
    return ([tuple(np.ascontiguousarray(a) for a in layer) for layer in layers],
            np.ascontiguousarray(x.transpose(0, 3, 1, 2)))


def from_nchw(leaves):
    """to_nchw's inverse on a flat list of the ten parameters."""
    t1, c1, t2, c2, t3, c3, t4, c4, t5, c5 = leaves
    t3 = t3.reshape(16, 4, 4, 120).transpose(1, 2, 0, 3).reshape(256, 120)
    return [t1.transpose(2, 3, 1, 0), c1, t2.transpose(2, 3, 1, 0), c2, t3, c3, t4, c4,
            t5, c5]


def setup_fnad_nchw(params, x, y):
    """fnad on PyTorch's layout: NCHW input, OIHW kernels, through fnad.lax (fnad.nn's
    layers are channels-last), the whole step in one fnad.jit."""
    import fnad
    import fnad.numpy as fnp
    from fnad import lax, nn

    fnad.config.update("background_compile", False)     # as in setup_fnad
    layout = ("NCHW", "OIHW", "NCHW")

    def conv_relu_pool(h, w, b):
        h = lax.conv_general_dilated(h, w, (1, 1), "VALID", dimension_numbers=layout)
        h = nn.relu(h + b[:, None, None])
        return lax.reduce_window(h, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss_fn(params, x, y):
        (w1, b1), (w2, b2), (w3, b3), (w4, b4), (w5, b5) = params
        h = conv_relu_pool(conv_relu_pool(x, w1, b1), w2, b2).reshape(x.shape[0], -1)
        h = nn.relu(h @ w3 + b3)
        h = nn.relu(h @ w4 + b4)
        return nn.softmax_cross_entropy(h @ w5 + b5, y)

    @fnad.jit
    def step(params, x, y):
        loss, grads = fnad.value_and_grad(loss_fn)(params, x, y)
        return fnad.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), loss

    p_nchw, x_nchw = to_nchw(params, x)
    fp = fnad.tree_util.tree_map(fnp.asarray, p_nchw)
    fx, fy = fnp.asarray(x_nchw), fnp.asarray(y)
    carry = [fp]
    losses, after_one = [], None
    for _ in range(2):
        p, loss = step(carry[0], fx, fy)
        losses.append(float(loss))
        carry[0] = p
        after_one = after_one or from_nchw(
            [np.asarray(a) for a in fnad.tree_util.tree_leaves(p)])

    def run():
        carry[0], _ = step(carry[0], fx, fy)

    return dict(version=fnad.__version__, step=run, losses=losses, after_one=after_one,
                jitted=step, args=(fp, fx, fy), note="NCHW input, OIHW kernels (fnad.lax)")


def setup_jax(params, x, y):
    import jax
    import jax.numpy as jnp
    from jax.example_libraries import stax

    _, apply = stax.serial(
        stax.Conv(6, (5, 5)), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Conv(16, (5, 5)), stax.Relu, stax.MaxPool((2, 2), (2, 2)), stax.Flatten,
        stax.Dense(120), stax.Relu, stax.Dense(84), stax.Relu, stax.Dense(10))

    def loss_fn(params, x, y):
        logp = jax.nn.log_softmax(apply(params, x))
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    @jax.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), loss

    jp = jax.tree_util.tree_map(jnp.asarray, params)
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    carry = [jp]
    losses, after_one = [], None
    for _ in range(2):
        p, loss = step(carry[0], jx, jy)
        losses.append(float(loss))
        carry[0] = p
        after_one = after_one or [np.asarray(a) for a in jax.tree_util.tree_leaves(p)]

    def run():
        carry[0], loss = step(carry[0], jx, jy)
        loss.block_until_ready()

    return dict(version=jax.__version__, step=run, losses=losses, after_one=after_one,
                note="jax.jit; block_until_ready on each step's loss")


def setup_torch(params, x, y):
    import torch
    import torch.nn.functional as F
    from torch import nn

    model = nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    # NHWC flattens (h, w, c), NCHW (c, h, w): to_nchw permutes the first dense
    # layer's inputs; torch.nn.Linear keeps (out, in) matrices.
    layers, x_nchw = to_nchw(params, x)
    values = [a.T if i >= 2 and a.ndim == 2 else a
              for i, layer in enumerate(layers) for a in layer]
    with torch.no_grad():
        for p, v in zip(model.parameters(), values):
            assert tuple(p.shape) == v.shape, (p.shape, v.shape)
            p.copy_(torch.from_numpy(np.ascontiguousarray(v)))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    tx = torch.from_numpy(x_nchw)
    ty = torch.from_numpy(y.astype(np.int64))

    def run():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(tx), ty)
        loss.backward()
        opt.step()
        return loss

    losses = [float(run().detach())]
    after_one = from_nchw([p.detach().numpy().copy().T if p.ndim == 2 else
                           p.detach().numpy().copy() for p in model.parameters()])
    losses.append(float(run().detach()))
    return dict(version=torch.__version__, step=run, losses=losses, after_one=after_one,
                note=f"eager; torch threads={torch.get_num_threads()}")


FRAMEWORKS = [("fnad", setup_fnad), ("fnad-nchw", setup_fnad_nchw), ("torch", setup_torch),
              ("jax", setup_jax)]
TARGETS = {"fnad": 0.9, "fnad-nchw": 1.0}     # median / PyTorch eager median


# --------------------------------------------------------------------------------------
# Profiles of fnad's step
# --------------------------------------------------------------------------------------
def profile_kernels(jitted, args, steps=50, top=25):
    """Wall time of each call in fnad's generated driver (fused kernels k*, library
    calls f* of a primitive's kernel), summed over `steps` steps. Reaches into the
    lowered Executable's namespace: a diagnostic, not an API."""
    from collections import defaultdict
    lowered = jitted.lower(*args)
    exe = lowered.executable
    program = getattr(lowered.closed, "program", lowered.closed)
    impl_names = {id(e.prim.impl): e.prim.name for e in program.eqns}
    totals, labels = defaultdict(float), {}
    saved = {}

    def shape_of(a):
        return "x".join(map(str, np.shape(a))) or "()"

    def timed(key, fn):
        def call(*xs):
            t0 = time.perf_counter_ns()
            out = fn(*xs)
            totals[key] += time.perf_counter_ns() - t0
            if key not in labels:
                if key[0] == "k":   # a fused loop nest: its sizes are the trailing ints
                    sizes = []
                    for a in reversed(xs):
                        if not isinstance(a, (int, np.integer)):
                            break
                        sizes.insert(0, str(int(a)))
                    labels[key] = f"fused {key} over {'x'.join(sizes) or '()'}"
                else:
                    impl = (fn.__kwdefaults__ or {}).get("_impl", fn)
                    name = impl_names.get(id(impl), getattr(impl, "__name__", key))
                    labels[key] = f"{name}({', '.join(shape_of(a) for a in xs)})"
            return out
        return call

    for key, fn in list(exe.namespace.items()):
        if key[:1] in ("f", "k") and key[1:].isdigit() and callable(fn):
            saved[key] = fn
            exe.namespace[key] = timed(key, fn)
    try:
        t0 = time.perf_counter_ns()
        for _ in range(steps):
            jitted(*args)
        wall = (time.perf_counter_ns() - t0) / steps / 1e6
    finally:
        exe.namespace.update(saved)
    per_step = {k: v / steps / 1e6 for k, v in totals.items()}
    inside = sum(per_step.values())
    print(f"\n## Where fnad's step spends its time ({steps} steps, instrumented: "
          f"{wall:.2f} ms/step, {inside:.2f} ms in {len(per_step)} calls, "
          f"{wall - inside:.2f} ms in the driver and jit dispatch)\n")
    by_prim = defaultdict(float)
    for k, v in per_step.items():
        by_prim["fused elementwise/reduce kernels" if k[0] == "k"
                else labels[k].split("(")[0]] += v
    print("| primitive | ms/step | share |\n|---|---:|---:|")
    for name, v in sorted(by_prim.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {v:.3f} | {100 * v / wall:.1f}% |")
    print(f"\ntop {top} calls:\n")
    print("| call | ms/step | share |\n|---|---:|---:|")
    for k, v in sorted(per_step.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| {labels[k]} | {v:.3f} | {100 * v / wall:.1f}% |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=None,
                    help="timed rounds (default 30; 10 with --quick)")
    ap.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    ap.add_argument("--round-ms", type=float, default=None,
                    help="target wall time of one round in ms (default 200; 50 with --quick)")
    ap.add_argument("--only", default=None, help="comma-separated peers (fnad always runs)")
    ap.add_argument("--profile", action="store_true", help="cProfile fnad's step")
    ap.add_argument("--layout", default="fnad", choices=["fnad", "fnad-nchw"],
                    help="which fnad step --profile and --lowered look at")
    ap.add_argument("--lowered", action="store_true",
                    help="print fnad.jit(step).lower(...).as_text()")
    args = ap.parse_args(argv)
    rounds = args.rounds or (10 if args.quick else 30)
    target_ns = int((args.round_ms or (50 if args.quick else 200)) * 1e6)
    warmup_ns = int((0.3 if args.quick else 1.0) * 1e9)

    params, x, y = data()
    wanted = set(args.only.split(",")) if args.only else None
    fws, notes = {}, []
    for name, setup in FRAMEWORKS:
        if wanted is not None and name not in wanted and not name.startswith("fnad"):
            continue
        try:
            fws[name] = setup(params, x, y)
        except ImportError as e:
            notes.append(f"{name}: skipped (import failed: {e})")
        except Exception as e:
            if name == "fnad":
                raise
            notes.append(f"{name}: skipped ({type(e).__name__}: {e})")

    # ---- correctness before any timing ------------------------------------------------
    ref = reference_loss(params, x, y)
    start, after = fws["fnad"]["losses"]
    assert np.isclose(start, ref, rtol=RTOL), f"fnad's loss {start} vs numpy's {ref}"
    assert after < start, f"one SGD step did not lower fnad's loss: {start} -> {after}"
    initial = [p for layer in dense_params(params) for p in layer]
    fnad_updates = [a - p for a, p in zip(fws["fnad"]["after_one"], initial)]
    for name, fw in fws.items():
        np.testing.assert_allclose(fw["losses"], fws["fnad"]["losses"], rtol=RTOL,
                                   err_msg=f"{name}'s losses (at the start, after one "
                                           f"step) disagree with fnad's")
        # the update itself (new params - initial ones), to 1e-3 of its largest entry
        for i, (a, p, u) in enumerate(zip(fw["after_one"], initial, fnad_updates)):
            assert a.shape == p.shape, (name, i, a.shape, p.shape)
            np.testing.assert_allclose(a - p, u, rtol=1e-3, atol=1e-3 * np.abs(u).max(),
                                       err_msg=f"{name}'s update of parameter {i} "
                                               f"disagrees with fnad's")

    print_header("fnad W4 LeNet benchmark", fws, notes)
    print(f"checked for {', '.join(fws)}: losses (rtol {RTOL}) at the start {start:.6f} "
          f"(numpy float64: {ref:.6f}) and after one step {after:.6f}; the first "
          f"update of every parameter (rtol 1e-3)")
    print(f"timing: {rounds} rounds of n steps (~{target_ns / 1e6:g} ms/round) after "
          f"{warmup_ns / 1e9:g}s warm-up, interleaved, gc off within a round\n", flush=True)

    load_before = os.getloadavg()[0]
    # bench/eager.py's timer (µs per call); a 50 ms pause before each round lets one
    # framework's spinning thread pools park before the next is timed.
    res = measure_interleaved({k: v["step"] for k, v in fws.items()}, rounds, target_ns,
                              warmup_ns, settle_s=0.05)
    for r in res.values():
        r["median"], r["min"] = r["median"] / 1e3, r["min"] / 1e3
    # This run itself keeps up to 2 threads busy; more than that means other work
    # shared the machine and the medians are inflated.
    print(f"1-minute load average: {load_before:.2f} before timing, "
          f"{os.getloadavg()[0]:.2f} after\n")
    torch_r = res.get("torch")
    lines = ["| framework | median ms/step | min ms/step | × PyTorch (median) | "
             "steps × rounds |", "|---|---:|---:|---:|---:|"]
    for name, r in res.items():
        ratio = f"{r['median'] / torch_r['median']:.2f}" if torch_r else "—"
        lines.append(f"| {name} | {r['median']:.2f} | {r['min']:.2f} | {ratio} | "
                     f"{r['n']} × {r['rounds']} |")
    print("## Results (paste into bench/README.md)\n")
    print(f"Measured {datetime.date.today()} on {cpu_model()} ({os.cpu_count()} cores), "
          f"`bench/lenet.py --rounds {rounds}{' --quick' if args.quick else ''}`.\n")
    print("\n".join(lines))
    if torch_r:
        for name, target in TARGETS.items():
            if name not in res:
                continue
            q = res[name]["median"] / torch_r["median"]
            print(f"- {name} / PyTorch eager = **{q:.2f}×** (target ≤ {target}×): "
                  f"**{'MET' if q <= target else 'NOT MET'}** (ratio of mins: "
                  f"{res[name]['min'] / torch_r['min']:.2f}×)")
    else:
        print("\n- fnad vs PyTorch eager: not measured (torch unavailable)")

    if args.lowered:
        print("\n## fnad.jit(step).lower(...).as_text()\n")
        print(fws[args.layout]["jitted"].lower(*fws[args.layout]["args"]).as_text())
    if args.profile:
        profile_kernels(fws[args.layout]["jitted"], fws[args.layout]["args"])
        profile_call(f"the {args.layout} step", fws[args.layout]["step"], top=20)


if __name__ == "__main__":
    main()
