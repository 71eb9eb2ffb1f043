"""Shared building blocks for declaring primitives: common shape rules and the
cotangent helpers that broadcasting and reductions need."""
import numpy as np

from ..abstract import ShapedArray, check_same_dtype, broadcast_shapes
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


# --------------------------------------------------------------------------- simplification
# Rules for the jit optimizer (fnad/transforms/optimize.py): rule(eqn, producer_of) ->
# an atom replacing the output, a replacement equation, or None.

def _is_scalar_literal(a, value):
    return hasattr(a, "value") and np.ndim(a.value) == 0 and a.value == value


def _same_type(a, b):
    return a.aval.shape == b.aval.shape and a.aval.dtype == b.aval.dtype


def drop_identity_operand(value, positions):
    """x op value -> x, for the operand positions where `value` is an identity."""
    def rule(e, producer_of):
        out = e.outputs[0]
        for pos in positions:
            other = e.inputs[1 - pos]
            if _is_scalar_literal(e.inputs[pos], value) and _same_type(other, out):
                return other
        return None
    return rule


def identity_when_same_type(e, producer_of):
    """A conversion, reshape or broadcast that changes nothing."""
    return e.inputs[0] if _same_type(e.inputs[0], e.outputs[0]) else None


def compose_with_producer(combine, is_identity=None):
    """f(f(x)) -> one f, with params combine(inner_params, outer_params); an f that
    changes nothing (is_identity(eqn); by default: same shape and dtype) -> x."""
    is_identity = is_identity or (lambda e: _same_type(e.inputs[0], e.outputs[0]))

    def rule(e, producer_of):
        if is_identity(e):
            return e.inputs[0]
        inner = producer_of(e.inputs[0])
        if inner is None or inner.prim is not e.prim:
            return None
        from ..program import Equation
        merged = Equation(e.prim, [inner.inputs[0]], e.outputs,
                          combine(inner.params, e.params))
        return inner.inputs[0] if is_identity(merged) else merged
    return rule
