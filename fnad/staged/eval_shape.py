"""eval_shape: the shapes and dtypes a function would return, computed by staging it
with abstract values, without running any kernel."""
import math

import numpy as np

from ..abstract import ShapedArray, get_aval
from ..transforms._util import as_value
from ..tree_util import tree_flatten, tree_unflatten
from .staging import stage_flat


class ShapeDtypeStruct:
    """An abstract array: shape and dtype, nothing else (JAX's name). `sharding` is
    accepted for code written against JAX and must be None (fnad does not shard)."""
    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
        if sharding is not None:
            raise ValueError("ShapeDtypeStruct: fnad has no shardings; leave sharding=None")
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.weak_type) \
            == (other.shape, other.dtype, other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def eval_shape(fun, *args, **kwargs):
    """A pytree of ShapeDtypeStruct shaped like fun(*args, **kwargs)'s output. Leaves of
    args may be arrays or anything with .shape and .dtype."""
    flat, in_tree = tree_flatten(args)
    avals = [ShapedArray(x.shape, x.dtype) if hasattr(x, "shape") and hasattr(x, "dtype")
             else get_aval(as_value(x, "eval_shape argument")) for x in flat]
    out_tree = []

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)), **kwargs)
        leaves_out, tree = tree_flatten(out)
        out_tree.append(tree)
        return leaves_out

    closed = stage_flat(flat_fun, avals)
    return tree_unflatten(out_tree[0], [ShapeDtypeStruct(a.shape, a.dtype)
                                        for a in closed.program.out_avals])
