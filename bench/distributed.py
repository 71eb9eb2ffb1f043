"""Data-parallel benchmark over MPI; run with two processes, one BLAS thread each:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/mpiexec -n 2 \\
        .venv/bin/python bench/distributed.py [--quick]

  (a) all-reduce of a 10M float32 buffer: fnad.lax.psum under jit(shard_map) against
      raw mpi4py Allreduce on the same buffer: in place (which overwrites the input),
      into a reused output buffer (what psum must do: its input stays valid), and into
      a new buffer each call; target <= 1.1x the raw time;
  (b) a W2 step (the MLP 784-1024-1024-10 SGD step of bench/jit.py, float32, pmean'ed
      gradients) on 2 processes x 128 examples against 1 process x 256, one BLAS
      thread per process, and the time of the step's gradient all-reduce alone;
  (c) MPI calls per step: the step's pmean of the 6 gradient leaves and the loss (one
      call), and the same step written with one pmean per leaf.

Timings alternate between the peers in every round (so drift and load from other
users hit all of them alike); medians over rounds. While process 0 times the
1-process step, process 1 waits without spinning (Ibarrier polled with sleeps).
The last thing printed (by process 0) is a markdown table for bench/README.md.
"""
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import fnad  # noqa: E402
import fnad.numpy as fnp  # noqa: E402
from fnad import lax  # noqa: E402
from fnad.nn.activations import relu, log_softmax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jit import w2_data, LR  # noqa: E402

D = fnad.distributed
D.initialize()
COMM = D.communicator()
RANK, K = D.process_index(), D.process_count()
AXIS = "p"


def blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} "
                     f"{i.get('architecture')} x{i.get('num_threads')}"
                     for i in threadpool_info() if i.get("user_api") == "blas")


def timed(fn, reps):
    """Median seconds of `reps` calls, all processes starting each call together."""
    times = []
    for _ in range(reps):
        COMM.Barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    # a collective ends when the slowest process ends: take the slowest's time
    return COMM.allreduce(statistics.median(times), op=_mpi().MAX)


def _mpi():
    from mpi4py import MPI
    return MPI


def idle_until_released():
    """What process 1 does while process 0 times alone: wait without spinning."""
    request = COMM.Ibarrier()
    while not request.Test():
        time.sleep(0.001)


def release():
    COMM.Ibarrier().Wait()


# --------------------------------------------------------------------------- (a)

def bench_allreduce(rounds, reps):
    MPI = _mpi()
    x = np.random.default_rng(RANK).standard_normal(10_000_000).astype(np.float32)
    psum = fnad.jit(D.shard_map(lambda v: lax.psum(v, AXIS), AXIS))
    fx = fnp.asarray(x)
    got = np.asarray(psum(fx))
    want = np.empty_like(x)
    COMM.Allreduce(x, want, op=MPI.SUM)
    assert np.array_equal(got, want), "psum differs from MPI's Allreduce"
    buf = x.copy()

    def raw_in_place():
        COMM.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

    def raw_fresh():
        out = np.empty_like(x)
        COMM.Allreduce(x, out, op=MPI.SUM)

    reused = np.empty_like(x)

    def raw_reused():
        COMM.Allreduce(x, reused, op=MPI.SUM)

    def fnad_psum():
        psum(fx)
    peers = (("raw in place", raw_in_place), ("raw into a reused buffer", raw_reused),
             ("raw into a new buffer", raw_fresh), ("fnad psum (jit)", fnad_psum))
    results = {name: [] for name, _ in peers}
    for _ in range(rounds):
        for name, fn in peers:
            results[name].append(timed(fn, reps))
    return {k: statistics.median(v) for k, v in results.items()}


# --------------------------------------------------------------------------- (b), (c)

def loss(params, x, y):
    h = x
    for i, p in enumerate(params):
        h = h @ p["w"] + p["b"]
        if i < len(params) - 1:
            h = relu(h)
    return -fnp.mean(fnp.take_along_axis(log_softmax(h), y[:, None], axis=1))


def local_step(params, x, y):
    value, grads = fnad.value_and_grad(loss)(params, x, y)
    grads, value = lax.pmean((grads, value), AXIS)      # one all-reduce for all
    return fnad.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), value


def per_leaf_step(params, x, y):
    value, grads = fnad.value_and_grad(loss)(params, x, y)
    grads = fnad.tree_util.tree_map(lambda g: lax.pmean(g, AXIS), grads)
    value = lax.pmean(value, AXIS)
    return fnad.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), value


def whole_step(params, x, y):
    value, grads = fnad.value_and_grad(loss)(params, x, y)
    return fnad.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), value


def bench_step(rounds, reps):
    params, x, y = w2_data()
    fp = fnad.tree_util.tree_map(fnp.asarray, params)
    half = len(x) // K
    mx, my = fnp.asarray(x[RANK * half:(RANK + 1) * half]), fnp.asarray(y[RANK * half:(RANK + 1) * half])
    sharded = fnad.jit(D.shard_map(local_step, AXIS))
    per_leaf = fnad.jit(D.shard_map(per_leaf_step, AXIS))
    whole = fnad.jit(whole_step)
    grads_like = fnad.tree_util.tree_map(fnp.asarray, params)
    reduce_only = fnad.jit(D.shard_map(lambda g: lax.pmean(g, AXIS), AXIS))

    # the same numbers as one process on the whole batch, before anything is timed
    ours = sharded(fp, mx, my)
    ref = whole(fp, fnp.asarray(x), fnp.asarray(y))
    for a, b in zip(fnad.tree_util.tree_leaves(ours), fnad.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5)
    per_leaf(fp, mx, my)
    reduce_only(grads_like)

    calls = {}
    for name, fn in (("pmean of the gradient pytree", sharded),
                     ("one pmean per leaf", per_leaf)):
        before = sum(D.mpi_call_counts().values())
        fn(fp, mx, my)
        calls[name] = sum(D.mpi_call_counts().values()) - before

    results = {f"{K} processes x {half}": [], "gradient all-reduce alone": [],
               f"1 process x {len(x)}": []}
    big_x, big_y = fnp.asarray(x), fnp.asarray(y)
    for _ in range(rounds):
        results[f"{K} processes x {half}"].append(timed(lambda: sharded(fp, mx, my), reps))
        results["gradient all-reduce alone"].append(timed(lambda: reduce_only(grads_like), reps))
        if RANK == 0:
            times = []
            for _ in range(reps):
                start = time.perf_counter()
                whole(fp, big_x, big_y)
                times.append(time.perf_counter() - start)
            results[f"1 process x {len(x)}"].append(statistics.median(times))
            release()
        else:
            idle_until_released()
    single = COMM.bcast(results[f"1 process x {len(x)}"] if RANK == 0 else None, root=0)
    results[f"1 process x {len(x)}"] = single
    return {k: statistics.median(v) for k, v in results.items()}, calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, reps = (3, 3) if args.quick else (7, 5)
    load_start = os.getloadavg()
    a = bench_allreduce(rounds, reps)
    b, c = bench_step(rounds, reps)
    load_end = os.getloadavg()
    if RANK:
        return
    print(f"\n{K} processes (mpiexec), {rounds} rounds x {reps} calls, medians; "
          f"BLAS: {blas_info()}; load average {load_start[0]:.1f} at start, "
          f"{load_end[0]:.1f} at end ({os.cpu_count()} cores)\n")
    base, same = a["raw in place"], a["raw into a reused buffer"]
    print("| (a) all-reduce of 10M float32 | ms | vs raw in place | vs raw into a reused "
          "buffer |\n|---|---|---|---|")
    for name, t in a.items():
        print(f"| {name} | {t * 1e3:.2f} | {t / base:.2f}x | {t / same:.2f}x |")
    single = b[f"1 process x {256}"]
    print("\n| (b) W2 SGD step, global batch 256 | ms | speedup vs 1 process |\n|---|---|---|")
    for name, t in b.items():
        extra = (f"{single / t:.2f}x" if "processes" in name or "1 process" in name
                 else f"{t / b[f'{K} processes x {256 // K}'] * 100:.0f}% of the "
                      f"{K}-process step")
        print(f"| {name} | {t * 1e3:.2f} | {extra} |")
    print("\n| (c) MPI calls per step | calls |\n|---|---|")
    for name, n in c.items():
        print(f"| {name} | {n} |")


if __name__ == "__main__":
    main()
