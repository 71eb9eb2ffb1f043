"""Many processes over MPI: one process per device, a named axis across them.

Start the same script on every process with MPI's launcher (``mpiexec -n 4 python
train.py`` on one machine, ``srun``/``mpiexec -hosts ...`` across a cluster's
machines); each process runs the same program on its own shard of the data, and
the collectives of fnad.lax (psum, pmean, all_gather, ppermute, axis_index...) over
the axis bound by `shard_map` combine the processes' values through MPI::

    fnad.distributed.initialize()
    step = fnad.jit(fnad.distributed.shard_map(train_step, axis_name="batch"))
    # in train_step: grads = fnad.lax.pmean(grads, "batch")

It is JAX's named-axis model (the same function under vmap(axis_name="batch") in one
process gives the same numbers) and PyTorch's DistributedDataParallel's data flow:
parameters and optimizer state are replicated (every process holds and updates its
own identical copy), the data is sharded (fnad.data.batches(..., shard=(index,
count))), and the gradients are averaged by one all-reduce of every leaf packed in
one buffer per dtype.

The collectives' kernels call mpi4py on host (numpy) buffers: Allreduce, Allgather,
Reduce_scatter_block and Sendrecv, contiguous and without pickling, from eager code
or from jit's compiled driver between kernels. Arrays on a GPU go through host
staging (copied to the host for the call and back); CUDA-aware MPI is not used.

Failure: after `initialize()`, an exception that ends any process's script prints
the process's rank and the error, then calls MPI Abort, which ends every process of
the job (a peer waiting in a collective would otherwise wait forever). Checkpoints
written with fnad.io.save are atomic, so the last completed one stays loadable.
"""
import sys
import traceback
from typing import Any, Callable

from .errors import FnadError
from .kernels import mpi
from .primitives.collectives import AxisFrame, bind_axis


class DistributedError(FnadError, RuntimeError):
    """fnad.distributed used before initialize(), or without mpi4py."""


_state: dict[str, Any] = {"comm": None, "hook": None}


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise DistributedError(
            "fnad.distributed needs mpi4py and an MPI library: pip install "
            "'fnad[distributed]' (mpi4py and the mpich wheel, which puts mpiexec in the "
            f"environment's bin/) ({err})") from None
    return MPI


def initialize(comm: Any = None, *, abort_on_error: bool = True) -> None:
    """Join the MPI job: `comm` (an mpi4py communicator) or MPI.COMM_WORLD. With
    abort_on_error (the default), an uncaught exception in this process names the
    rank and the error on stderr and aborts the whole job. Calling it again with the
    same communicator does nothing."""
    MPI = _import_mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    if not isinstance(comm, MPI.Comm):
        raise TypeError(f"initialize: comm must be an mpi4py communicator, got "
                        f"{type(comm).__name__}")
    _state["comm"] = comm
    if abort_on_error and _state["hook"] is None:
        _state["hook"] = sys.excepthook
        sys.excepthook = _abort_job
    return None


def _abort_job(kind, error, tb):
    comm = _state["comm"]
    rank, size = comm.Get_rank(), comm.Get_size()
    text = "".join(traceback.format_exception(kind, error, tb))
    sys.stderr.write(f"{text}fnad.distributed: process {rank} of {size} failed with "
                     f"{kind.__name__}: {error}; aborting the job\n")
    sys.stderr.flush()
    comm.Abort(1)


def is_initialized() -> bool:
    """Whether initialize() has been called in this process."""
    return _state["comm"] is not None


def communicator() -> Any:
    """The MPI communicator initialize() joined."""
    if _state["comm"] is None:
        raise DistributedError("fnad.distributed.initialize() has not been called")
    return _state["comm"]


def process_index() -> int:
    """This process's rank (0 to process_count() - 1)."""
    return communicator().Get_rank()


def process_count() -> int:
    """The number of processes in the job."""
    return communicator().Get_size()


def shard_map(f: Callable[..., Any], axis_name: Any) -> Callable[..., Any]:
    """f run once per process, with `axis_name` bound to the process axis: each
    process passes its own inputs (its shard) and gets its own outputs, and the
    collectives f calls over `axis_name` combine all processes' values. Composes with
    jit either way round (jit(shard_map(f, ...)) stages the collectives, which run
    over MPI from the compiled program)."""
    if not isinstance(axis_name, str):
        raise TypeError(f"shard_map: axis_name must be a string, got {axis_name!r}")

    def mapped(*args, **kwargs):
        comm = communicator()
        with bind_axis(AxisFrame(axis_name, comm.Get_size(), comm)):
            return f(*args, **kwargs)
    mapped.__name__ = f"shard_map({getattr(f, '__name__', 'f')})"
    mapped.__wrapped__ = f  # type: ignore[attr-defined]  # (functools.wraps' attribute)
    return mapped


def mpi_call_counts() -> Any:
    """The MPI calls this process's collectives have made so far, by MPI function
    ({'Allreduce': 12, ...}): a whole pytree psum-ed at once is one Allreduce per dtype."""
    return dict(mpi.mpi_calls)
