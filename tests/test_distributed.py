"""fnad.distributed over real MPI processes: `mpiexec -n 2` and `-n 4` subprocesses
run tests/distributed_worker.py, which checks every collective over the process
axis against the single-process vmap(axis_name=...) reference (values eager, under
jit and under a vmap inside the process; per-process jvp/vjp against the reference
and against float64 finite differences of the whole job), data sharding, one
Allreduce for a 12-leaf gradient, and the equivalence of 20 SGD and 20 Adam steps
of a float64 MLP with one process on the whole batch (1e-10). Then the failure test
and examples/data_parallel.py under `mpiexec -n 2`. Skipped without mpi4py or
without mpiexec beside the Python executable (the `distributed` extra installs
both)."""
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import fnad

pytest.importorskip("mpi4py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
if not os.path.exists(MPIEXEC):
    pytest.skip(f"no mpiexec beside {sys.executable} (pip install mpich)",
                allow_module_level=True)
WORKER = os.path.join(os.path.dirname(__file__), "distributed_worker.py")


EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "examples", "data_parallel.py")


def launch(n, *args, timeout=240, script=WORKER, **env_vars):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1", **env_vars)
    start = time.monotonic()
    result = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, script, *args],
                            capture_output=True, text=True, timeout=timeout, env=env)
    return result, time.monotonic() - start


def test_before_initialize_is_an_error():
    if fnad.distributed.is_initialized():
        pytest.skip("this process has joined an MPI job")
    with pytest.raises(fnad.distributed.DistributedError, match="initialize"):
        fnad.distributed.process_index()
    with pytest.raises(fnad.distributed.DistributedError, match="initialize"):
        fnad.distributed.shard_map(lambda x: fnad.lax.psum(x, "p"), "p")(1.0)


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_training_and_data_over_processes(n):
    result, _ = launch(n, "checks")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    assert "OK" in result.stdout


def test_a_failing_process_ends_the_job_and_the_checkpoint_loads(tmp_path):
    result, _ = launch(2, "fail", str(tmp_path), "4", timeout=120)
    assert result.returncode != 0
    assert "process 1 of 2 failed with RuntimeError: boom at step 4" in result.stderr
    # rank 0 was blocked in the step-4 all-reduce when rank 1 failed: the job ended
    # soon after the raise, not at a timeout
    ended = time.time() - float((tmp_path / "raised_at").read_text())
    assert ended < 30, ended
    saved = fnad.io.load(str(tmp_path / "ckpt.fnad"))
    assert int(saved["step"]) in (2, 3)       # 3 unless the abort came mid-write
    leaves = fnad.tree_util.tree_leaves(saved["params"])
    assert len(leaves) == 6 and all(np.all(np.isfinite(np.asarray(v))) for v in leaves)


def test_gpu_arrays_go_through_host_staging():
    # numba's CUDA simulator stands in for a GPU (as the cuda tests do by default)
    result, _ = launch(2, "gpu", NUMBA_ENABLE_CUDASIM="1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    assert "OK" in result.stdout


def test_the_data_parallel_example_under_mpiexec(tmp_path):
    # `mpiexec -n 2 python examples/data_parallel.py`, as the README shows: it trains
    # half the epochs, resumes from process 0's checkpoint on both processes, checks
    # that the replicas hold identical parameters and that the accuracy is reached
    result, _ = launch(2, "--quick", "--output-dir", str(tmp_path), script=EXAMPLE,
                       timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    out = result.stdout
    assert "epoch 1: " in out and "(2 processes)" in out, out
    assert f"resumed from {tmp_path / 'checkpoint.fnad'} after epoch 1" in out, out
    assert out.count("final test accuracy") == 1, out          # printed by process 0 only
    assert float(re.search(r"final test accuracy ([0-9.]+)", out).group(1)) >= 0.8, out
    assert int(fnad.io.load(str(tmp_path / "checkpoint.fnad"))["epoch"]) == 2
