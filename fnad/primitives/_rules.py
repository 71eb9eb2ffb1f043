"""The rule kit, part one: what declaring a primitive needs without binding one.

Shape rules the families share, symbolic zeros, the axis bookkeeping of vmap rules,
declaration helpers for linear primitives and reductions over axes, and the jit
optimizer's algebra. Part two, fnad/primitives/structural.py, declares the structural
primitives every rule is written with and the helpers that bind them (sum_to_shape,
moveaxis_to, broadcast_batch, move_batch_axes...).
"""
import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..abstract import ShapedArray, check_same_dtype, broadcast_shapes
from ..array import Array
from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..program import Equation


# --------------------------------------------------------------------------- shape rules

def broadcasting(name, *, out_dtype=None, kinds=None):
    """Shape rule of an n-ary elementwise primitive: one dtype, numpy broadcasting."""
    def abstract_eval(*avals, **params):
        dtype = check_same_dtype(name, avals)
        if kinds is not None and dtype_kind(dtype) not in kinds:
            raise DTypeError(f"{name} does not accept dtype {dtype} "
                             f"(operands {', '.join(map(str, avals))})")
        shape = broadcast_shapes(name, *(a.shape for a in avals))
        return ShapedArray(shape, out_dtype or dtype)
    return abstract_eval


def shape_error(name, msg, *avals):
    """A ShapeError naming the primitive and its operands."""
    return ShapeError(f"{name}: {msg} (operand{'s' if len(avals) > 1 else ''} "
                      + ", ".join(map(str, avals)) + ")")


def check_axes(name, x, axes):
    if len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise ShapeError(f"{name}: axes {tuple(axes)} out of range for an operand of "
                         f"shape {tuple(x.shape)}")


def reduced_shape(name, kinds=None):
    """Shape rule of a reduction over an `axes` param (of an operand whose dtype is of
    one of `kinds`, if given)."""
    def abstract_eval(x, axes):
        check_axes(name, x, axes)
        if kinds is not None and dtype_kind(x.dtype) not in kinds:
            raise DTypeError(f"{name} does not accept dtype {x.dtype} (operand {x})")
        return ShapedArray(tuple(n for i, n in enumerate(x.shape) if i not in axes),
                           x.dtype)
    return abstract_eval


# --------------------------------------------------------------------------- zeros and tangents

def zeros(shape, dtype):
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


# --------------------------------------------------------------------------- vmap bookkeeping

def batch_size(args, batch_dims):
    """The length of the batch axis, read off the first batched operand."""
    return next(x.shape[d] for x, d in zip(args, batch_dims) if d is not None)


def batched_axes(axes, batch_dim):
    """Per-example axis numbers as axes of the batched array, whose batch axis is
    batch_dim: the axes at or after it move up by one."""
    return tuple(a + (a >= batch_dim) for a in axes)


def unary_batch(rule):
    """A vmap rule for a one-operand primitive: rule(x, batch_dim, **params) ->
    (out, out_batch_dim)."""
    def batch(args, batch_dims, **params):
        return rule(args[0], batch_dims[0], **params)
    return batch


# --------------------------------------------------------------------------- declaration helpers

def linear(name, impl, abstract_eval, transpose, **slots):
    """A primitive linear in its (single) array operand: its JVP applies it to the
    tangent, its VJP is transpose(g, x, **params)."""
    def jvp(primals, tangents, **params):
        return prim.bind(*primals, **params), prim.bind(*tangents, **params)

    prim = Primitive(name, abstract_eval=abstract_eval, impl=impl, jvp=jvp,
                     vjp=lambda g, out, x, **params: (transpose(g, x, **params),), **slots)
    return prim


def axes_reduction(name, kinds=None, **slots):
    """A reduction over an `axes` param. Its vmap rule keeps the batch axis where it
    is and renumbers the reduced axes around it."""
    def batch(args, batch_dims, axes):
        (x,), (d,) = args, batch_dims
        return prim.bind(x, axes=batched_axes(axes, d)), d - sum(a < d for a in axes)

    prim = Primitive(name, abstract_eval=reduced_shape(name, kinds), batch=batch, **slots)
    return prim


# --------------------------------------------------------------------------- simplification
# Rules for the jit optimizer (fnad/transforms/optimize.py): rule(eqn, producer_of) ->
# an atom replacing the output, a replacement equation, or None.

def _is_scalar_literal(a, value):
    if not (hasattr(a, "value") and np.ndim(a.value) == 0 and a.value == value):
        return False
    # a floating zero is an identity only with the right sign: x + (+0.0) and
    # x - (-0.0) turn -0.0 into +0.0
    literal = np.asarray(a.value)
    return not (value == 0 and dtype_kind(literal.dtype) in "fc"
                and np.signbit(np.real(literal)) != np.signbit(value))


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
        merged = Equation(e.prim, [inner.inputs[0]], e.outputs,
                          combine(inner.params, e.params))
        return inner.inputs[0] if is_identity(merged) else merged
    return rule
