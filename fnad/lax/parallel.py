"""Collectives over named axes, with JAX's lax signatures.

The axis is bound by fnad.vmap(f, axis_name=...) (its examples are the members) or
by fnad.distributed.shard_map(f, axis_name=...) (the MPI processes are). psum, pmean,
pmax and pmin take a pytree and reduce all its leaves in one collective: over
processes that is one MPI Allreduce per dtype on a packed buffer, so a step's
gradients cost one call, however many leaves they have.
"""
from typing import Any, Hashable, Protocol, Sequence

import numpy as np

from ..errors import ShapeError
from ..numpy._core import as_operand
from ..primitives import collectives as C
from ..tree_util import tree_flatten, tree_unflatten, tree_map
from ..typing import Array, PyTree

UnboundAxisNameError = C.UnboundAxisNameError


class TreeReduction(Protocol):
    """psum, pmean, pmax and pmin: a pytree in, one like it out."""
    def __call__(self, x: PyTree, axis_name: Hashable, *,
                 axis_index_groups: Any = None) -> PyTree: ...


def _tree_reduction(prim: Any, who: str) -> TreeReduction:
    def reduce(x: PyTree, axis_name: Hashable, *, axis_index_groups: Any = None) -> PyTree:
        _no_groups(axis_index_groups, who)
        names = C.axis_names(axis_name, who)
        leaves, tree = tree_flatten(x)
        if not leaves:
            return x
        return tree_unflatten(tree, prim.bind(*[as_operand(v) for v in leaves],
                                              axis_name=names))
    reduce.__name__ = who
    return reduce


psum = _tree_reduction(C.psum_p, "psum")
pmean = _tree_reduction(C.pmean_p, "pmean")
pmax = _tree_reduction(C.pmax_p, "pmax")
pmin = _tree_reduction(C.pmin_p, "pmin")

psum.__doc__ = """The sum over the members of axis_name (a name or a tuple of names)
of each leaf of x, given to every member. One collective for the whole pytree."""
pmean.__doc__ = """The mean over the members of axis_name of each (float) leaf of x."""
pmax.__doc__ = """The maximum over the members of axis_name of each leaf of x (NaN wins,
as in numpy); its derivative is shared between the members holding the maximum."""
pmin.__doc__ = """The minimum over the members of axis_name of each leaf of x."""


def _no_groups(axis_index_groups, who):
    if axis_index_groups is not None:
        raise ValueError(f"{who}: axis_index_groups is not supported; bind a separate "
                         f"axis (vmap or a sub-communicator) for each group instead")


def _single(axis_name, who):
    names = C.axis_names(axis_name, who)
    if len(names) != 1:
        raise UnboundAxisNameError(f"{who} takes a single axis name, got {names!r}")
    return names[0]


def all_gather(x: PyTree, axis_name: Hashable, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False) -> PyTree:
    """Every member's x, stacked along a new axis `axis` (concatenated along `axis`
    with tiled=True), given to every member. x may be a pytree."""
    _no_groups(axis_index_groups, "all_gather")
    name = _single(axis_name, "all_gather")
    size = C.lookup(name, "all_gather").size

    def gather(v):
        v = as_operand(v)
        ax = _axis(axis, v.ndim + (not tiled), "all_gather", "axis")
        return C.all_gather_p.bind(v, axis_name=(name,), axis=ax, tiled=bool(tiled),
                                   axis_size=size)
    return tree_map(gather, x)


def psum_scatter(x: PyTree, axis_name: Hashable, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> PyTree:
    """The sum over members of x, split along scatter_dimension: member k gets block
    k (with tiled=False that dimension must have one entry per member and is
    removed). x may be a pytree."""
    _no_groups(axis_index_groups, "psum_scatter")
    name = _single(axis_name, "psum_scatter")
    size = C.lookup(name, "psum_scatter").size

    def scatter(v):
        v = as_operand(v)
        sd = _axis(scatter_dimension, v.ndim, "psum_scatter", "scatter_dimension")
        return C.psum_scatter_p.bind(v, axis_name=(name,), scatter_dimension=sd,
                                     tiled=bool(tiled), axis_size=size)
    return tree_map(scatter, x)


def ppermute(x: PyTree, axis_name: Hashable, perm: Sequence[tuple[int, int]]) -> PyTree:
    """Member `source` sends its x to member `destination` for each (source,
    destination) pair of perm; members no pair sends to get zeros. x may be a pytree."""
    name = _single(axis_name, "ppermute")
    size = C.lookup(name, "ppermute").size
    pairs = C.check_perm(perm, size)
    return tree_map(lambda v: C.ppermute_p.bind(as_operand(v), axis_name=(name,), perm=pairs,
                                                axis_size=size), x)


def axis_index(axis_name: Hashable) -> Array:
    """This member's position along axis_name (int32): the example's index under
    vmap, the process's rank under shard_map."""
    return C.axis_index_p.bind(axis_name=(_single(axis_name, "axis_index"),))


def axis_size(axis_name: Hashable) -> int:
    """The number of members of axis_name (a Python int, as in JAX); a tuple of names
    gives the product of their sizes."""
    names = C.axis_names(axis_name, "axis_size")
    return int(np.prod([C.lookup(n, "axis_size").size for n in names], dtype=np.int64))


def _axis(axis, ndim, who, what):
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise ShapeError(f"{who}: {what}={axis} out of range for rank {ndim}")
    return axis % max(ndim, 1)
