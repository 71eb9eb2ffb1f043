"""eval_shape: the shapes and dtypes a function would return, computed by staging it
with abstract values, without running any kernel."""
from ..abstract import ShapedArray
from ..tree_util import tree_flatten, tree_unflatten
from .staging import stage_flat


class ShapeDtypeStruct:
    """An abstract array: shape and dtype, nothing else (JAX's name)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype})"


def eval_shape(fun, *args, **kwargs):
    """A pytree of ShapeDtypeStruct shaped like fun(*args, **kwargs)'s output. Leaves of
    args may be arrays or anything with .shape and .dtype."""
    flat, in_tree = tree_flatten(args)
    avals = [ShapedArray(x.shape, x.dtype) for x in flat]
    out_tree = []

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)), **kwargs)
        leaves_out, tree = tree_flatten(out)
        out_tree.append(tree)
        return leaves_out

    closed = stage_flat(flat_fun, avals)
    return tree_unflatten(out_tree[0], [ShapeDtypeStruct(a.shape, a.dtype)
                                        for a in closed.program.out_avals])
