"""Shared building blocks for declaring primitives: common shape rules and the
cotangent helpers that broadcasting and reductions need."""
import numpy as np

from ..core import ShapedArray, check_same_dtype, broadcast_shapes
from ..errors import DTypeError


def broadcasting(name, *, out_dtype=None, kinds=None):
    """Shape rule of an n-ary elementwise primitive: one dtype, numpy broadcasting."""
    def abstract_eval(*avals, **params):
        dtype = check_same_dtype(name, avals)
        if kinds is not None and dtype.kind not in kinds:
            raise DTypeError(f"{name} does not accept dtype {dtype} "
                             f"(operands {', '.join(map(str, avals))})")
        shape = broadcast_shapes(name, *(a.shape for a in avals))
        return ShapedArray(shape, out_dtype or dtype)
    return abstract_eval


def sum_to_shape(x, shape):
    """Undo numpy broadcasting on a cotangent: sum over the broadcast axes."""
    if x.shape == shape:
        return x
    from . import reduce, shape as shape_ops
    shape = tuple(shape)
    lead = len(x.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and x.shape[i + lead] != 1)
    if axes:
        x = reduce.reduce_sum(x, axes)
    if tuple(x.shape) != shape:
        x = shape_ops.reshape(x, shape)
    return x


def broadcast_to(x, shape):
    if x.shape == shape:
        return x
    from . import shape as shape_ops
    shape = tuple(shape)
    lead = len(shape) - len(x.shape)
    return shape_ops.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def zeros(shape, dtype):
    from ..array import Array
    return Array(np.zeros(shape, dtype))


def instantiate(t, like):
    """A symbolic zero (None) as a concrete array of zeros shaped like `like`."""
    return zeros(like.shape, like.dtype) if t is None else t


def add_tangents(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def batch_elementwise(prim):
    """The vmap rule of an elementwise primitive that broadcasts like numpy: move each
    batch axis to the front and pad the example axes to a common rank, so numpy's
    right-aligned broadcasting pairs example axes with example axes."""
    def rule(args, batch_dims, **params):
        from . import shape as shape_ops
        from ..transforms.batching import moveaxis_to
        rank = max(x.ndim - (d is not None) for x, d in zip(args, batch_dims))
        moved = []
        for x, d in zip(args, batch_dims):
            if d is not None:
                x = moveaxis_to(x, d, 0)
                missing = rank - (x.ndim - 1)
                if missing:
                    x = shape_ops.reshape(x, (x.shape[0],) + (1,) * missing + tuple(x.shape[1:]))
            moved.append(x)
        out = prim.bind(*moved, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    return rule
