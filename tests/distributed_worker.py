"""Run by tests/test_distributed.py under `mpiexec -n K`: every check in one launch
(each launch pays for importing numba and compiling). Exits nonzero (MPI Abort, with
the rank and the failed assertion named) when a check fails; rank 0 prints OK.

    distributed_worker.py checks          collectives, derivatives, data, bucketing,
                                          equivalence
    distributed_worker.py fail DIR STEP   train; process 1 raises at STEP; rank 0
                                          checkpoints to DIR after every step
    distributed_worker.py gpu             collectives on GPU arrays (CUDA simulator)
"""
import os
import sys
import time

import numpy as np

import fnad
import fnad.numpy as fnp
from fnad import lax

D = fnad.distributed
D.initialize()
RANK, K = D.process_index(), D.process_count()


def close(a, b, tol=1e-12, what=""):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol, err_msg=what)


# --------------------------------------------------------------------------- collectives

def collective_checks():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(K, 3))
    X[1 % K, 2] = np.nan if K > 1 else X[0, 2]
    ring = [(k, (k + 1) % K) for k in range(K)]
    funcs = {
        "psum": lambda x: lax.psum({"a": x, "b": x.astype(np.float32), "c": fnp.ones(2)}, "p"),
        "pmean": lambda x: lax.pmean(x, "p"),
        "pmax": lambda x: lax.pmax(x, "p"),
        "pmin": lambda x: lax.pmin(x, "p"),
        "psum int": lambda x: lax.psum(lax.axis_index("p") + 1, "p"),
        "all_gather": lambda x: lax.all_gather(x, "p", axis=1),
        "all_gather tiled": lambda x: lax.all_gather(x, "p", tiled=True),
        "psum_scatter": lambda x: lax.psum_scatter(fnp.outer(fnp.arange(K * 2.0), x), "p",
                                                   tiled=True),
        "ppermute": lambda x: lax.ppermute(x, "p", ring),
        "ppermute partial": lambda x: lax.ppermute(x, "p", [(0, K - 1)]),
        "axis_index": lambda x: lax.axis_index("p"),
        "axis_size": lambda x: fnp.asarray(lax.axis_size("p")),
    }
    for name, f in funcs.items():
        ref = fnad.tree_util.tree_map(lambda o: np.asarray(o)[RANK],
                                      fnad.vmap(f, axis_name="p")(X))
        for mode, g in (("eager", D.shard_map(f, "p")), ("jit", fnad.jit(D.shard_map(f, "p"))),
                        ("jit inside", D.shard_map(fnad.jit(f), "p"))):
            for _ in range(2):
                got = g(X[RANK])
                for a, b in zip(fnad.tree_util.tree_leaves(got), fnad.tree_util.tree_leaves(ref)):
                    assert np.asarray(a).dtype == np.asarray(b).dtype, (name, mode)
                    close(a, b, 1e-6 if np.asarray(a).dtype == np.float32 else 1e-14,
                          f"{name} {mode}")

    # vmap inside shard_map: each process maps over its B examples, the collectives
    # still combine over the processes (their batching rules re-bind them on the
    # batched values), against the unbatched reference run once per example
    A = rng.normal(size=(K, 2, 3))
    for name, f in funcs.items():
        per_example = [fnad.vmap(f, axis_name="p")(A[:, b]) for b in range(A.shape[1])]
        ref = fnad.tree_util.tree_map(lambda *o: np.stack([np.asarray(v)[RANK] for v in o]),
                                      *per_example)
        for mode, g in (("eager", D.shard_map(fnad.vmap(f), "p")),
                        ("jit", fnad.jit(D.shard_map(fnad.vmap(f), "p")))):
            got = g(A[RANK])
            for a, b in zip(fnad.tree_util.tree_leaves(got), fnad.tree_util.tree_leaves(ref)):
                assert np.asarray(a).dtype == np.asarray(b).dtype, (name, mode)
                close(a, b, 1e-6 if np.asarray(a).dtype == np.float32 else 1e-14,
                      f"vmap of {name} {mode}")

    # derivatives: each process's vjp/jvp (the collectives' own rules, over MPI) equal
    # the vmap reference's rows
    Y = rng.normal(size=(K, 3))
    grads = {
        "psum": lambda x: lax.psum(x, "p") * x,
        "pmean": lambda x: fnp.sin(lax.pmean(x * x, "p")),
        "pmax": lambda x: lax.pmax(x, "p") * x,
        "pmin": lambda x: fnp.exp(lax.pmin(x, "p")),
        "all_gather": lambda x: lax.all_gather(x, "p") ** 2,
        "all_gather tiled": lambda x: fnp.tanh(lax.all_gather(x, "p", axis=0, tiled=True)),
        "psum_scatter": lambda x: lax.psum_scatter(fnp.outer(fnp.arange(K * 1.0), x), "p"),
        "psum_scatter tiled": lambda x: lax.psum_scatter(
            fnp.outer(fnp.arange(K * 2.0), x) * x[0], "p", tiled=True) ** 2,
        "ppermute": lambda x: lax.ppermute(x, "p", ring) * x,
    }
    for name, f in grads.items():
        out = fnad.vmap(f, axis_name="p")(Y)
        C = rng.normal(size=np.shape(out))
        T = rng.normal(size=Y.shape)
        ref_ct = fnad.vmap(lambda x, c: fnad.vjp(f, x)[1](c)[0], axis_name="p")(Y, C)
        ref_t = fnad.vmap(lambda x, t: fnad.jvp(f, (x,), (t,))[1], axis_name="p")(Y, T)
        ct = fnad.jit(D.shard_map(lambda x, c: fnad.vjp(f, x)[1](c)[0], "p"))(Y[RANK], C[RANK])
        t = D.shard_map(lambda x, t: fnad.jvp(f, (x,), (t,))[1], "p")(Y[RANK], T[RANK])
        close(ct, np.asarray(ref_ct)[RANK], 1e-13, f"vjp {name}")
        close(t, np.asarray(ref_t)[RANK], 1e-13, f"jvp {name}")
        # against float64 central differences of the whole job (every process moves
        # its input along its row of T): the jvp directly, the vjp by the dot test
        # sum_k <C_k, (J T)_k> = sum_k <(J^T C)_k, T_k>, summed over processes by psum
        h = 1e-6
        run = D.shard_map(f, "p")
        fd = (np.asarray(run(Y[RANK] + h * T[RANK])) - np.asarray(run(Y[RANK] - h * T[RANK]))) \
            / (2 * h)
        close(t, fd, 1e-6, f"jvp {name} vs finite differences")
        total = D.shard_map(lambda a, b: lax.psum(fnp.stack([a, b]), "p"), "p")
        lhs, rhs = np.asarray(total(np.vdot(C[RANK], fd), np.vdot(np.asarray(ct), T[RANK])))
        close(lhs, rhs, 1e-6, f"vjp {name} vs finite differences")

    # grad (outside) of a jitted function holding collectives, and grad inside jit
    w = rng.normal(size=3)
    inner = fnad.jit(lambda w, x: lax.pmean(fnp.tanh(x * w), "p") * lax.psum(x @ w, "p"))
    loss = lambda w, x: fnp.sum(inner(w, x) ** 2)      # noqa: E731
    ref = fnad.vmap(fnad.grad(loss), in_axes=(None, 0), axis_name="p")(w, Y)
    for mode, g in (("grad of jit", D.shard_map(fnad.grad(loss), "p")),
                    ("jit of grad of jit", fnad.jit(D.shard_map(fnad.grad(loss), "p")))):
        close(g(w, Y[RANK]), np.asarray(ref)[RANK], 1e-12, mode)

    # an unbound name is an error here too
    try:
        lax.psum(Y, "nope")
    except NameError as err:
        assert "'nope'" in str(err)
    else:
        raise AssertionError("psum over an unbound name did not raise")


# --------------------------------------------------------------------------- communicators

def communicator_checks():
    """initialize() joins COMM_WORLD by default, or the communicator it is given."""
    from mpi4py import MPI
    assert D.is_initialized() and D.communicator() is MPI.COMM_WORLD
    try:
        D.initialize("world")
    except TypeError as err:
        assert "communicator" in str(err)
    else:
        raise AssertionError("initialize accepted a string")
    if K == 1:
        return
    # a jitted function called inside shard_map stages lax.axis_size as a number: its
    # trace for the whole job must not serve the half below (same arguments)
    scaled = fnad.jit(lambda v: v * lax.axis_size("half"))
    one = fnp.asarray(np.ones(2))
    assert np.all(np.asarray(D.shard_map(scaled, "half")(one)) == K)
    assert np.all(np.asarray(D.shard_map(scaled, "half")(one)) == K)
    # the even and the odd ranks as two jobs of their own
    group = MPI.COMM_WORLD.Split(RANK % 2, RANK)
    D.initialize(group)
    try:
        assert D.process_count() == group.Get_size() and D.process_index() == RANK // 2
        for g in (D.shard_map(lambda v: lax.psum(v, "half"), "half"),
                  fnad.jit(D.shard_map(lambda v: lax.psum(v, "half"), "half"))):
            total = g(np.float64(RANK))
            assert float(total) == sum(r for r in range(K) if r % 2 == RANK % 2), total
        for _ in range(2):
            got = np.asarray(D.shard_map(scaled, "half")(one))
            assert np.all(got == group.Get_size()), (got, group.Get_size())
    finally:
        D.initialize(MPI.COMM_WORLD)
        group.Free()
    assert D.process_count() == K and D.process_index() == RANK


# --------------------------------------------------------------------------- equivalence

def mlp_params(rng):
    return [(rng.normal(size=(5, 16)) * 0.5, np.zeros(16)),
            (rng.normal(size=(16, 16)) * 0.3, rng.normal(size=16) * 0.1),
            (rng.normal(size=(16, 3)) * 0.3, np.zeros(3))]


def mlp_loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = fnp.tanh(h)
    return fnp.mean((h - y) ** 2)


def train(opt, params, batches, step_fn):
    state = opt.init(params)
    for x, y in batches:
        params, state = step_fn(params, state, x, y)
    return params


def equivalence_checks():
    rng = np.random.default_rng(3)
    params = mlp_params(rng)
    data_x, data_y = rng.normal(size=(20 * 8 * K, 5)), rng.normal(size=(20 * 8 * K, 3))
    for opt in (fnad.optim.sgd(0.1), fnad.optim.adam(1e-2)):
        def local_step(params, state, x, y):
            grads = lax.pmean(fnad.grad(mlp_loss)(params, x, y), "p")
            updates, state = opt.update(grads, state, params)
            return fnad.optim.apply_updates(params, updates), state

        def whole_step(params, state, x, y):
            updates, state = opt.update(fnad.grad(mlp_loss)(params, x, y), state, params)
            return fnad.optim.apply_updates(params, updates), state
        before = D.mpi_call_counts().get("Allreduce", 0)
        # 20 steps; each process on its shard (8 examples) of the global batch (8 K)
        mine = fnad.data.batches((data_x, data_y), 8, key=11, shard=(RANK, K))
        ours = train(opt, params, mine, fnad.jit(D.shard_map(local_step, "p")))
        calls = D.mpi_call_counts()["Allreduce"] - before
        # one Allreduce per step for all 6 float64 gradient leaves (bucketing)
        assert calls == 20, calls
        # shard r takes every K-th entry of the epoch's permutation, so step s of all
        # processes together holds entries [8Ks, 8K(s+1)): the whole batch of step s
        whole = fnad.data.batches((data_x, data_y), 8 * K, key=11)
        ref = train(opt, params, whole, fnad.jit(whole_step))
        for a, b in zip(fnad.tree_util.tree_leaves(ours), fnad.tree_util.tree_leaves(ref)):
            close(a, b, 1e-10, "parameters after 20 steps")


def bucketing_checks():
    """A jitted step pmean-ing a 12-leaf gradient makes one MPI call, an Allreduce,
    whether the tree is pmean-ed at once or leaf by leaf."""
    rng = np.random.default_rng(5)
    widths = [5, 8, 8, 8, 8, 8, 3]
    params = [(rng.normal(size=(a, b)) * 0.4, rng.normal(size=b) * 0.1)
              for a, b in zip(widths, widths[1:])]
    assert len(fnad.tree_util.tree_leaves(params)) == 12
    x, y = rng.normal(size=(4 * K, 5)), rng.normal(size=(4 * K, 3))
    step = fnad.jit(D.shard_map(
        lambda p, x, y: lax.pmean(fnad.grad(mlp_loss)(p, x, y), "p"), "p"))
    ref = fnad.grad(mlp_loss)(params, x, y)
    # one pmean of the whole tree, and one pmean per leaf (the optimizer combines them)
    per_leaf = fnad.jit(D.shard_map(
        lambda p, x, y: fnad.tree_util.tree_map(lambda g: lax.pmean(g, "p"),
                                                fnad.grad(mlp_loss)(p, x, y)), "p"))
    for step in (step, per_leaf):
        for _ in range(3):              # the first call and the compiled program
            before = D.mpi_call_counts()
            got = step(params, x[4 * RANK:4 * RANK + 4], y[4 * RANK:4 * RANK + 4])
            after = D.mpi_call_counts()
            made = {k: after[k] - before.get(k, 0) for k in after
                    if after[k] != before.get(k, 0)}
            assert made == {"Allreduce": 1}, made
            for a, b in zip(fnad.tree_util.tree_leaves(got), fnad.tree_util.tree_leaves(ref)):
                close(a, b, 1e-12, "12-leaf pmean-ed gradient")


def data_checks():
    n = 10 * K + (K - 1)
    seen = []
    for x in fnad.data.batches(np.arange(n), 3, key=5, shard=(RANK, K), pad_shards=False):
        seen.append(np.asarray(x))
    mine = np.concatenate(seen)
    everyone = np.asarray(D.shard_map(lambda v: lax.all_gather(v, "p"), "p")(mine))
    assert len(set(everyone.ravel().tolist())) == everyone.size == n - n % K
    seen = np.concatenate([np.asarray(x) for x in fnad.data.batches(np.arange(8 * K), 4, key=5,
                                                                    shard=(RANK, K))])
    everyone = np.asarray(D.shard_map(lambda v: lax.all_gather(v, "p"), "p")(seen))
    assert sorted(everyone.ravel().tolist()) == list(range(8 * K))     # one epoch, once


# --------------------------------------------------------------------------- failure

def failure_run(directory, fail_at):
    rng = np.random.default_rng(3)
    params = mlp_params(rng)
    opt = fnad.optim.adam(1e-2)
    state = opt.init(params)
    x, y = rng.normal(size=(8, 5)), rng.normal(size=(8, 3))

    def local_step(params, state):
        grads = lax.pmean(fnad.grad(mlp_loss)(params, x, y), "p")
        updates, state = opt.update(grads, state, params)
        return fnad.optim.apply_updates(params, updates), state
    step = fnad.jit(D.shard_map(local_step, "p"))
    for i in range(1, 100):
        if RANK == 1 and i == fail_at:
            with open(os.path.join(directory, "raised_at"), "w") as f:
                f.write(repr(time.time()))
            raise RuntimeError(f"boom at step {i}")
        params, state = step(params, state)
        if RANK == 0:
            fnad.io.save(os.path.join(directory, "ckpt.fnad"), {"params": params, "step": i})


def gpu_checks():
    """Collectives on GPU arrays (host staging): results on the operands' GPU."""
    gpu = fnad.devices("cuda")[0]
    x = np.arange(6.0).reshape(2, 3) + RANK
    f = D.shard_map(lambda v: (lax.psum({"a": v, "b": 2 * v}, "p"), lax.all_gather(v, "p")),
                    "p")
    out = f(fnad.device_put(x, gpu))
    ref = D.shard_map(lambda v: (lax.psum({"a": v, "b": 2 * v}, "p"),
                                 lax.all_gather(v, "p")), "p")(x)
    for o, r in zip(fnad.tree_util.tree_leaves(out), fnad.tree_util.tree_leaves(ref)):
        assert o.device == gpu, o.device
        close(o, r, 0, "gpu")


if __name__ == "__main__":
    if sys.argv[1] == "checks":
        collective_checks()
        data_checks()
        communicator_checks()
        bucketing_checks()
        equivalence_checks()
        if RANK == 0:
            print("OK", D.mpi_call_counts(), flush=True)
    elif sys.argv[1] == "gpu":
        gpu_checks()
        print("OK", flush=True)
    else:
        failure_run(sys.argv[2], int(sys.argv[3]))
