"""Collectives: operations over a named axis of many copies of one computation.

A *named axis* is a set of members (examples of a vmap, or processes of an MPI job)
that run the same program on their own data; a collective combines the members'
values. The name is bound in one of two ways, and each collective means the same
under both:

    vmap(f, axis_name="i")                 members are the examples of the batch; the
                                           vmap interpreter calls the collective's
                                           batching rule, which computes over the
                                           batch axis (psum is a sum over it)
    fnad.distributed.shard_map(f, "i")     members are the processes of an MPI
                                           communicator; the cpu kernel (eager, or
                                           from jit's driver) calls MPI on the host
                                           buffers, in place, without pickling

The contract with vmap: a primitive with an `axis_name` param (a tuple of names) is a
collective. The batching interpreter passes its own axis to the rule as
`vmap_axis=(name or None, size)` and calls the rule even when no operand is batched
if it names that axis (axis_index has no operand at all). A rule whose names do not
include the vmap's axis re-binds itself on the batched values, for the interpreter
that owns the name.

Derivatives are those of the whole computation over every member (the map from all
members' inputs to all members' outputs): psum is self-adjoint (the transpose of
"sum and give everyone the total" is the same), all_gather and psum_scatter are each
other's transposes, ppermute's is the inverse permutation, pmax/pmin share the
derivative between the members holding the extremum, as reduce_max does.

All collectives are effects: the optimizer never folds, drops or reorders them past
another effect (a process that skipped an all-reduce would leave its peers waiting
forever). The all-reduces are `combinable`: independent ones next to each other
become one call over all their operands, the same in every process.
"""
import contextvars

import numpy as np

from ..abstract import ShapedArray
from ..core import Primitive, no_derivative
from ..dtypes import kind_of as dtype_kind
from ..errors import DTypeError, FnadError, ShapeError
from ..kernels import mpi
from .reduce import reduce_max_p, reduce_min_p
from .shape import concatenate, iota, slice as slice_
from .structural import (broadcast_batch, convert_element_type_p, moveaxis_to, reduce_sum,
                         reshape)
from .elementwise import eq_p


class UnboundAxisNameError(FnadError, NameError):
    """A collective named an axis that no vmap(axis_name=...) or shard_map binds."""


# --------------------------------------------------------------------------- the axis environment

class AxisFrame:
    """One bound name: `size` members; `comm` is the MPI communicator of a process
    axis, None for a vmap axis."""
    __slots__ = ("name", "size", "comm")

    def __init__(self, name, size, comm=None):
        self.name, self.size, self.comm = name, size, comm

    def __repr__(self):
        return (f"{self.name!r} ({'processes' if self.comm is not None else 'vmap'}, "
                f"size {self.size})")


# The names bound where the current code runs, innermost last: per thread, as the
# current interpreter is.
_axis_env = contextvars.ContextVar("fnad named axes", default=())

# Process axes stay bound for the process once shard_map has bound them: jit's driver
# runs a collective long after the call that staged it has returned.
_process_axes = {}


class bind_axis:
    """Context manager binding frame.name for the code run inside it."""
    __slots__ = ("frame", "token")

    def __init__(self, frame):
        self.frame = frame

    def __enter__(self):
        if self.frame.comm is not None:
            _process_axes[self.frame.name] = self.frame
        self.token = _axis_env.set(_axis_env.get() + (self.frame,))
        return self.frame

    def __exit__(self, *exc):
        _axis_env.reset(self.token)


def axis_env_key():
    """The bound names and sizes, hashable: part of jit's trace-cache key, since what a
    function stages can depend on them (lax.axis_size is a Python int)."""
    return tuple((f.name, f.size, f.comm is not None) for f in _axis_env.get())


def lookup(name, who):
    """The innermost frame binding `name`, or an UnboundAxisNameError naming it."""
    for frame in reversed(_axis_env.get()):
        if frame.name == name:
            return frame
    if name in _process_axes:
        return _process_axes[name]
    bound = [f for f in _axis_env.get()] + [f for n, f in _process_axes.items()]
    raise UnboundAxisNameError(
        f"{who}: unbound axis name {name!r}; "
        + (f"the names bound here are {', '.join(map(repr, bound))}" if bound else
           "no axis name is bound here")
        + ". Bind it with fnad.vmap(f, axis_name=...) or fnad.distributed.shard_map(f, "
        "axis_name=...) around the code calling the collective.")


def axis_names(axis_name, who):
    """A collective's `axis_name` argument (a name or a tuple of names) as a tuple."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if not names:
        raise UnboundAxisNameError(f"{who}: axis_name is empty")
    for n in names:
        try:
            hash(n)
        except TypeError:
            raise TypeError(f"{who}: axis names must be hashable (strings), got {n!r}") \
                from None
    return names


def _one_name(names, who):
    if len(names) != 1:
        raise UnboundAxisNameError(f"{who} takes a single axis name, got {names!r}")
    return names[0]


def _comm(names, who):
    """The communicator a kernel runs over: every name must be a process axis (a vmap
    axis is handled by vmap before the kernel is reached)."""
    comms = []
    for n in names:
        frame = lookup(n, who)
        if frame.comm is None:
            raise UnboundAxisNameError(
                f"{who}: the axis {n!r} is bound by a vmap that is not active where the "
                f"kernel runs (a value escaped its vmap?)")
        comms.append(frame.comm)
    if len(comms) > 1:
        raise UnboundAxisNameError(f"{who}: at most one process axis per collective, "
                                   f"got {names!r}")
    return comms[0]


# --------------------------------------------------------------------------- psum, pmean, pmax, pmin

def _check_kinds(name, kinds, operands):
    for a in operands:
        if dtype_kind(a.dtype) not in kinds:
            raise DTypeError(f"{name} does not accept dtype {a.dtype} (operand of shape "
                             f"{tuple(a.shape)}); it takes {_KIND_WORDS[kinds]}")


def _reduction_shape(name, kinds):
    def abstract_eval(*avals, axis_name):
        for n in axis_name:
            lookup(n, name)
        _check_kinds(name, kinds, avals)
        return [ShapedArray(a.shape, a.dtype) for a in avals]
    return abstract_eval


_KIND_WORDS = {"iufc": "integer, float or complex arrays", "fc": "float or complex arrays",
               "iuf": "integer or float arrays"}


def _over_members(x, d, size, kind):
    """The reduction over a vmap axis: x batched at d (None: the same on every member)."""
    if kind == "sum":
        return reduce_sum(x, (d,)) if d is not None else x * size
    if kind == "mean":
        return reduce_sum(x, (d,)) / size if d is not None else x
    prim = reduce_max_p if kind == "max" else reduce_min_p
    return prim.bind(x, axes=(d,)) if d is not None else x


def _reduction(name, kind, kinds):
    def impl(*values, axis_name):
        comm = _comm(axis_name, name)
        outs = mpi.allreduce(values, comm, "sum" if kind == "mean" else kind)
        if kind == "mean":
            n = comm.Get_size()
            for o in outs:          # fresh buffers of the all-reduce: no one else sees them
                np.divide(o, n, out=o)
        return outs

    def batch(args, batch_dims, axis_name, vmap_axis):
        _check_kinds(name, kinds, args)
        name_here, size = vmap_axis
        if name_here not in axis_name:
            return prim.bind(*args, axis_name=axis_name), list(batch_dims)
        outs = [_over_members(x, d, size, kind) for x, d in zip(args, batch_dims)]
        rest = tuple(n for n in axis_name if n != name_here)
        if rest:
            outs = prim.bind(*outs, axis_name=rest)
        return list(outs), [None] * len(outs)

    if kind in ("sum", "mean"):
        def jvp(primals, tangents, axis_name):
            outs = prim.bind(*primals, axis_name=axis_name)
            given = [i for i, t in enumerate(tangents) if t is not None]
            t_outs = [None] * len(primals)
            if given:
                for i, t in zip(given, prim.bind(*[tangents[i] for i in given],
                                                 axis_name=axis_name)):
                    t_outs[i] = t
            return outs, t_outs

        def vjp(cts, outs, *args, axis_name):
            # Self-adjoint: the all-ones (or all-1/n) matrix over members is symmetric.
            given = [i for i, c in enumerate(cts) if c is not None]
            result = [None] * len(args)
            if given:
                for i, c in zip(given, prim.bind(*[cts[i] for i in given],
                                                 axis_name=axis_name)):
                    result[i] = c
            return result
    else:
        def weights(x, out, axis_name):
            mask = convert_element_type_p.bind(eq_p.bind(x, out), new_dtype=x.dtype)
            count, = psum_p.bind(mask, axis_name=axis_name)
            return mask / count

        def jvp(primals, tangents, axis_name):
            outs = prim.bind(*primals, axis_name=axis_name)
            t_outs = []
            for x, o, t in zip(primals, outs, tangents):
                t_outs.append(None if t is None else
                              psum_p.bind(t * weights(x, o, axis_name),
                                          axis_name=axis_name)[0])
            return outs, t_outs

        def vjp(cts, outs, *args, axis_name):
            return [None if c is None else
                    psum_p.bind(c, axis_name=axis_name)[0] * weights(x, o, axis_name)
                    for c, o, x in zip(cts, outs, args)]

    prim = Primitive(name, abstract_eval=_reduction_shape(name, kinds), impl=impl, jvp=jvp,
                     vjp=vjp, batch=batch, effect=True, combinable=True,
                     multiple_results=True)
    return prim


psum_p = _reduction("psum", "sum", "iufc")
pmean_p = _reduction("pmean", "mean", "fc")
pmax_p = _reduction("pmax", "max", "iuf")
pmin_p = _reduction("pmin", "min", "iuf")


# --------------------------------------------------------------------------- all_gather

def _check_size(name, axis_name, axis_size):
    frame = lookup(_one_name(axis_name, name), name)
    if frame.size != axis_size:
        raise ShapeError(f"{name}: axis {frame!r} has {frame.size} members, the call was "
                         f"staged for {axis_size}")


def _gather_shape(x, axis_name, axis, tiled, axis_size):
    _check_size("all_gather", axis_name, axis_size)
    if not 0 <= axis <= x.ndim - tiled:
        raise ShapeError(f"all_gather: axis {axis} out of range for an operand of shape "
                         f"{tuple(x.shape)} (tiled={tiled})")
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return ShapedArray(tuple(shape), x.dtype)


def _gathered(stacked, axis, tiled):
    """Members stacked along a new `axis` -> all_gather's result (merged when tiled)."""
    if not tiled:
        return stacked
    shape = list(stacked.shape)
    shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
    return reshape(stacked, tuple(shape))


def _gather_impl(x, axis_name, axis, tiled, axis_size):
    comm = _comm(axis_name, "all_gather")
    out = np.ascontiguousarray(np.moveaxis(mpi.allgather(x, comm), 0, axis))
    if tiled:
        shape = list(out.shape)
        shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
        out = out.reshape(shape)
    return out


def _example(x, d):
    """The abstract value of one member's x (x batched at d, or not batched)."""
    shape = list(x.shape)
    if d is not None:
        del shape[d]
    return ShapedArray(tuple(shape), x.dtype)


def _gather_batch(args, batch_dims, axis_name, axis, tiled, axis_size, vmap_axis):
    (x,), (d,) = args, batch_dims
    _gather_shape(_example(x, d), axis_name, axis, tiled, axis_size)
    params = dict(axis_name=axis_name, tiled=tiled, axis_size=axis_size)
    if vmap_axis[0] not in axis_name:
        return all_gather_p.bind(moveaxis_to(x, d, 0), axis=axis + 1, **params), 0
    stacked = moveaxis_to(x, d, axis) if d is not None else broadcast_batch(x, axis_size, axis)
    return _gathered(stacked, axis, tiled), None


all_gather_p = Primitive(
    "all_gather", abstract_eval=_gather_shape, impl=_gather_impl,
    jvp=lambda primals, tangents, **p: (all_gather_p.bind(*primals, **p),
                                        None if tangents[0] is None
                                        else all_gather_p.bind(tangents[0], **p)),
    vjp=lambda g, out, x, axis_name, axis, tiled, axis_size: (psum_scatter_p.bind(
        g, axis_name=axis_name, scatter_dimension=axis, tiled=tiled, axis_size=axis_size),),
    batch=_gather_batch, effect=True)


# --------------------------------------------------------------------------- psum_scatter

def _scatter_shape(x, axis_name, scatter_dimension, tiled, axis_size):
    _check_size("psum_scatter", axis_name, axis_size)
    sd = scatter_dimension
    if not 0 <= sd < x.ndim:
        raise ShapeError(f"psum_scatter: scatter_dimension {sd} out of range for an operand "
                         f"of shape {tuple(x.shape)}")
    n = x.shape[sd]
    if (n % axis_size if tiled else n != axis_size):
        raise ShapeError(
            f"psum_scatter: dimension {sd} of the operand (shape {tuple(x.shape)}) must "
            + (f"be a multiple of the axis size {axis_size} (tiled=True)" if tiled else
               f"equal the axis size {axis_size} (or pass tiled=True)"))
    if dtype_kind(x.dtype) not in "iufc":
        raise DTypeError(f"psum_scatter does not accept dtype {x.dtype}")
    shape = list(x.shape)
    if tiled:
        shape[sd] //= axis_size
    else:
        del shape[sd]
    return ShapedArray(tuple(shape), x.dtype)


def _split_members(x, sd, size):
    """x's dimension sd (of length size * c) as two, (size, c): tiled scatter's view."""
    shape = list(x.shape)
    shape[sd:sd + 1] = [size, shape[sd] // size]
    return shape


def _scatter_impl(x, axis_name, scatter_dimension, tiled, axis_size):
    comm = _comm(axis_name, "psum_scatter")
    sd, n = scatter_dimension, comm.Get_size()
    if tiled:
        x = x.reshape(_split_members(x, sd, n))
    return mpi.reduce_scatter(np.moveaxis(x, sd, 0), comm)


def _scatter_batch(args, batch_dims, axis_name, scatter_dimension, tiled, axis_size,
                   vmap_axis):
    (x,), (d,) = args, batch_dims
    sd = scatter_dimension
    _scatter_shape(_example(x, d), axis_name, sd, tiled, axis_size)
    if vmap_axis[0] not in axis_name:
        return psum_scatter_p.bind(moveaxis_to(x, d, 0), axis_name=axis_name,
                                   scatter_dimension=sd + 1, tiled=tiled,
                                   axis_size=axis_size), 0
    total = _over_members(x, d, axis_size, "sum")
    if tiled:
        total = reshape(total, tuple(_split_members(total, sd, axis_size)))
    return total, sd


psum_scatter_p = Primitive(
    "psum_scatter", abstract_eval=_scatter_shape, impl=_scatter_impl,
    jvp=lambda primals, tangents, **p: (psum_scatter_p.bind(*primals, **p),
                                        None if tangents[0] is None
                                        else psum_scatter_p.bind(tangents[0], **p)),
    vjp=lambda g, out, x, axis_name, scatter_dimension, tiled, axis_size: (
        all_gather_p.bind(g, axis_name=axis_name, axis=scatter_dimension, tiled=tiled,
                          axis_size=axis_size),),
    batch=_scatter_batch, effect=True)


# --------------------------------------------------------------------------- ppermute

def check_perm(perm, size, who="ppermute"):
    """perm as a tuple of (source, destination) int pairs, each source and each
    destination at most once, all within the axis."""
    try:
        pairs = tuple((int(s), int(t)) for s, t in perm)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: perm must be a sequence of (source, destination) index "
                        f"pairs, got {perm!r}") from None
    for what, column in (("source", [s for s, _ in pairs]), ("destination", [t for _, t in pairs])):
        if len(set(column)) != len(column):
            raise ValueError(f"{who}: perm {pairs} names a {what} twice")
        bad = [i for i in column if not 0 <= i < size]
        if bad:
            raise ValueError(f"{who}: perm {pairs} names {what} {bad[0]} outside the axis "
                             f"of size {size}")
    return pairs


def _permute_shape(x, axis_name, perm, axis_size):
    _check_size("ppermute", axis_name, axis_size)
    return ShapedArray(x.shape, x.dtype)


def _permute_impl(x, axis_name, perm, axis_size):
    comm = _comm(axis_name, "ppermute")
    rank = comm.Get_rank()
    return mpi.sendrecv(x, comm, dest=next((t for s, t in perm if s == rank), None),
                        source=next((s for s, t in perm if t == rank), None))


def _permute_batch(args, batch_dims, axis_name, perm, axis_size, vmap_axis):
    (x,), (d,) = args, batch_dims
    if vmap_axis[0] not in axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm, axis_size=axis_size), d
    size = vmap_axis[1]
    if d is None and len(perm) == size:
        return x, None                  # every member gets the same value from someone
    members = moveaxis_to(x, d, 0) if d is not None else broadcast_batch(x, size)
    source_of = {t: s for s, t in perm}
    zero = np.zeros((1,) + tuple(members.shape[1:]), members.dtype)
    rows = [slice_(members, (source_of[k],) + (0,) * (members.ndim - 1),
                   (source_of[k] + 1,) + tuple(members.shape[1:]))
            if k in source_of else zero for k in range(size)]
    return concatenate(rows, 0), 0


def _inverse(perm):
    return tuple((t, s) for s, t in perm)


ppermute_p = Primitive(
    "ppermute", abstract_eval=_permute_shape, impl=_permute_impl,
    jvp=lambda primals, tangents, **p: (ppermute_p.bind(*primals, **p),
                                        None if tangents[0] is None
                                        else ppermute_p.bind(tangents[0], **p)),
    vjp=lambda g, out, x, axis_name, perm, axis_size: (ppermute_p.bind(
        g, axis_name=axis_name, perm=_inverse(perm), axis_size=axis_size),),
    batch=_permute_batch, effect=True)


# --------------------------------------------------------------------------- axis_index

def _index_shape(axis_name):
    lookup(_one_name(axis_name, "axis_index"), "axis_index")
    return ShapedArray((), np.dtype(np.int32))


def _index_impl(axis_name):
    return np.asarray(_comm(axis_name, "axis_index").Get_rank(), np.int32)


def _index_batch(args, batch_dims, axis_name, vmap_axis):
    return iota(np.dtype(np.int32), (vmap_axis[1],), 0), 0


axis_index_p = Primitive(
    "axis_index", abstract_eval=_index_shape, impl=_index_impl,
    jvp=lambda primals, tangents, axis_name: (axis_index_p.bind(axis_name=axis_name), None),
    vjp=no_derivative, batch=_index_batch, effect=True)

