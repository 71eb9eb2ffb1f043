"""Abstract values: what is known of an array while tracing (its shape and dtype),
and the shape and dtype checks every primitive's shape rule shares."""
import numpy as np

from .errors import DTypeError, ShapeError


class ShapedArray:
    """An abstract value: what is known of an array while tracing. weak_type marks a
    jit argument made from a Python scalar (fnad.numpy.asarray(2.0)): it promotes like
    that scalar, as the Array does eagerly. Results of operations are never weak, and
    shape rules compare shapes and dtypes only (jit's trace key holds the flags)."""
    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other):
        return (isinstance(other, ShapedArray) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        weak = "~" if self.weak_type else ""      # as JAX prints a weak f32[]: ~float32[]
        return f"{weak}{self.dtype.name}[{','.join(map(str, self.shape))}]"


def get_aval(x):
    """The abstract value of anything bind accepts."""
    return ShapedArray(np.shape(x) if not hasattr(x, "shape") else x.shape,
                       x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)


def check_same_dtype(prim_name, avals):
    dtypes = {a.dtype for a in avals}
    if len(dtypes) > 1:
        raise DTypeError(f"{prim_name} needs operands of one dtype, got "
                         + ", ".join(f"{a.dtype} {a.shape}" for a in avals))
    return avals[0].dtype


def broadcast_shapes(prim_name, *shapes):
    # numpy's rule, written out: np.broadcast_shapes takes at most 32 dimensions, and
    # arrays may have 64.
    shapes = [tuple(s) for s in shapes]
    if len(set(shapes)) == 1:
        return shapes[0]
    rank = max(map(len, shapes), default=0)
    out = []
    for sizes in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes]):
        other = {n for n in sizes if n != 1}
        if len(other) > 1:
            raise ShapeError(f"{prim_name}: shapes " + " and ".join(map(str, shapes))
                             + " do not broadcast together")
        out.append(other.pop() if other else 1)
    return tuple(out)
