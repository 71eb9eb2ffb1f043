"""The collectives' cpu kernels: MPI calls (mpi4py) on contiguous host buffers.

No array is pickled: every call passes numpy buffers to mpi4py's upper-case methods.
The psum family packs all operands of one dtype into one buffer for one Allreduce
(bucketing). mpi4py is imported on first use, so fnad runs without it until a process
axis is used.
"""
import sys
import threading

import numpy as np

from ..dtypes import kind_of as dtype_kind

# MPI calls made by this process's collectives, by MPI function: what bucketing saves
# is visible here (one Allreduce for a whole pytree of one dtype).
mpi_calls = {}


def _count(fn):
    mpi_calls[fn] = mpi_calls.get(fn, 0) + 1


def _mpi():
    from mpi4py import MPI
    return MPI


def _wire_dtype(dtype):
    # MPI has no float16/bfloat16 sum: those travel (and are summed) in float32,
    # rounded once at the end, which is also the more accurate sum.
    return np.dtype(np.float32) if dtype_kind(dtype) == "f" and \
        np.dtype(dtype).itemsize < 4 else np.dtype(dtype)


# Result buffers of large collectives are recycled once nothing references them any
# more: writing a fresh 40 MB buffer costs its page faults, half again the time of
# the all-reduce itself. A buffer is taken only when the pool's own reference is its
# only one (every Array, view or driver variable holding it counts), so a value
# anyone can still see is never overwritten.
_POOL_MIN_BYTES = 1 << 20
_POOL_SIZE = 8
_pool = []
_pool_lock = threading.Lock()


def result_buffer(shape, dtype):
    """An uninitialized array for a collective's result: a recycled one if free."""
    dtype = np.dtype(dtype)
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize < _POOL_MIN_BYTES:
        return np.empty(shape, dtype)
    with _pool_lock:
        for i in range(len(_pool)):
            # 2: the list's reference and getrefcount's argument
            if (sys.getrefcount(_pool[i]) == 2 and _pool[i].shape == tuple(shape)
                    and _pool[i].dtype == dtype):
                return _pool[i]
        buf = np.empty(shape, dtype)
        if len(_pool) >= _POOL_SIZE:
            free = [i for i in range(len(_pool)) if sys.getrefcount(_pool[i]) == 2]
            if not free:
                return buf
            del _pool[free[0]]
        _pool.append(buf)
        return buf


def allreduce(values, comm, kind):
    """values combined over comm by kind ('sum', 'max' or 'min'): one Allreduce per
    dtype, every value of that dtype packed in one buffer."""
    MPI = _mpi()
    if kind != "sum":
        return _extremum(values, comm, kind == "max")
    outs = [None] * len(values)
    groups = {}
    for i, v in enumerate(values):
        groups.setdefault(_wire_dtype(v.dtype), []).append(i)
    for wire, members in groups.items():
        if len(members) == 1 and values[members[0]].dtype == wire:
            i = members[0]
            out = result_buffer(values[i].shape, wire)
            _count("Allreduce")
            comm.Allreduce(np.ascontiguousarray(values[i]), out, op=MPI.SUM)
            outs[i] = out
            continue
        sizes = [values[i].size for i in members]
        buf = result_buffer((sum(sizes),), wire)
        start = 0
        for i, n in zip(members, sizes):
            buf[start:start + n] = values[i].ravel()
            start += n
        _count("Allreduce")
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        start = 0
        for i, n in zip(members, sizes):
            piece = buf[start:start + n].reshape(values[i].shape)
            outs[i] = piece if values[i].dtype == wire else piece.astype(values[i].dtype)
            start += n
    return outs


def _extremum(values, comm, largest):
    """Max/min with numpy's NaN rule (a NaN anywhere wins), which MPI's MAX/MIN do not
    keep: NaNs travel as flags beside the values, in the same float64 buffer (exact
    for every float dtype fnad has); integers go as they are, one call per dtype."""
    MPI = _mpi()
    op = MPI.MAX if largest else MPI.MIN
    outs = [None] * len(values)
    groups = {}
    for i, v in enumerate(values):
        groups.setdefault("f" if dtype_kind(v.dtype) == "f" else v.dtype, []).append(i)
    for group, members in groups.items():
        flag = 1.0 if largest else -1.0     # combined by the same MAX (MIN) as the values
        parts = []
        for i in members:
            v = values[i].astype(np.float64 if group == "f" else values[i].dtype).ravel()
            if group == "f":
                nan = np.isnan(v)
                parts += [np.where(nan, -flag * np.inf, v), nan * flag]
            else:
                parts.append(v)
        buf = np.concatenate(parts)
        _count("Allreduce")
        comm.Allreduce(MPI.IN_PLACE, buf, op=op)
        start = 0
        for i in members:
            n, shape, dtype = values[i].size, values[i].shape, values[i].dtype
            if group == "f":
                v, nan = buf[start:start + n], buf[start + n:start + 2 * n] != 0
                outs[i] = np.where(nan, np.nan, v).astype(dtype).reshape(shape)
                start += 2 * n
            else:
                outs[i] = buf[start:start + n].reshape(shape)
                start += n
    return outs


def allgather(x, comm):
    """Every process's x stacked along a new leading axis."""
    recv = result_buffer((comm.Get_size(),) + x.shape, x.dtype)
    _count("Allgather")
    comm.Allgather(np.ascontiguousarray(x), recv)
    return recv


def reduce_scatter(blocks, comm):
    """blocks (one per process along axis 0) summed over processes; this process's
    block of the sum."""
    wire = _wire_dtype(blocks.dtype)
    send = np.ascontiguousarray(blocks, dtype=wire)
    recv = np.empty(send.shape[1:], wire)
    _count("Reduce_scatter_block")
    comm.Reduce_scatter_block(send, recv, op=_mpi().SUM)
    return recv.astype(blocks.dtype, copy=False)


def sendrecv(x, comm, dest, source):
    """x sent to rank `dest` while receiving from rank `source` (either None: no
    such peer); zeros when nothing is received."""
    MPI = _mpi()
    out = np.zeros(x.shape, x.dtype)
    _count("Sendrecv")
    comm.Sendrecv(np.ascontiguousarray(x), MPI.PROC_NULL if dest is None else dest, 0,
                  out, MPI.PROC_NULL if source is None else source, 0)
    return out
