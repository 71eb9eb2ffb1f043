"""ONNX operators written with fnad.numpy and fnad.lax, for fnad.onnx.load.

The math, shape and reduction operators are here; the network and control-flow
ones in network_ops.py, which registers them into the same OPERATORS table.

Each entry is ``op(ctx, env, *inputs, **attributes)`` -> output (or a list): inputs
are fnad values or numpy arrays (constants), None for an omitted optional input.
Inputs that ONNX passes as tensors but that must be known to build the computation
(shapes, axes, pads, k) are read with `static`, which refuses a traced value.
"""
import math
from typing import Any, Callable

import numpy as np
from onnx import helper, numpy_helper

from .. import lax, nn
from .. import numpy as fnp
from ..core import Tracer
from ..errors import ConcretizationError, UnsupportedOperatorError

OPERATORS = {}


class Context:
    """What an operator may need beyond its inputs: the model's opset, the graph runner
    (for subgraphs), and how many outputs the node being run has (Split)."""

    def __init__(self, opset, run_graph):
        self.opset = opset
        self.run_graph = run_graph
        self.outputs = 1


def op(*names):
    def register(fn):
        for n in names:
            OPERATORS[n] = fn
        return fn
    return register


def static(x, what="this input"):
    if isinstance(x, Tracer):
        raise ConcretizationError(f"fnad.onnx.load: {what} must be a constant of the model "
                                  f"(it sets a shape, an axis or a size), but it is "
                                  f"computed from the inputs or parameters")
    return np.asarray(x)


def ints(x, what="this input"):
    return [int(v) for v in static(x, what).reshape(-1)]


def _unary(name, fn):
    OPERATORS[name] = lambda ctx, env, x: fn(x)


# (the loops below reuse _fn for functions of one and two operands)
_fn: Callable[..., Any]
for _name, _fn in {
        "Neg": fnp.negative, "Abs": fnp.abs, "Exp": fnp.exp, "Log": fnp.log,
        "Sqrt": fnp.sqrt, "Reciprocal": fnp.reciprocal, "Sin": fnp.sin, "Cos": fnp.cos,
        "Tan": fnp.tan, "Asin": fnp.arcsin, "Acos": fnp.arccos, "Atan": fnp.arctan,
        "Sinh": fnp.sinh, "Cosh": fnp.cosh, "Asinh": fnp.arcsinh, "Acosh": fnp.arccosh,
        "Atanh": fnp.arctanh, "Tanh": fnp.tanh, "Erf": lax.erf, "Sigmoid": lax.logistic,
        "Floor": fnp.floor, "Ceil": fnp.ceil, "Round": fnp.round, "Sign": fnp.sign,
        "IsNaN": fnp.isnan, "Not": fnp.logical_not, "BitwiseNot": fnp.invert,
        "Relu": nn.relu, "Softplus": nn.softplus, "Softsign": nn.soft_sign,
        "Identity": lambda x: x}.items():
    _unary(_name, _fn)


def _binary(name, fn):
    OPERATORS[name] = lambda ctx, env, x, y: fn(x, y)


for _name, _fn in {
        "Add": fnp.add, "Sub": fnp.subtract, "Mul": fnp.multiply,
        "Equal": fnp.equal, "Less": fnp.less, "LessOrEqual": fnp.less_equal,
        "Greater": fnp.greater, "GreaterOrEqual": fnp.greater_equal,
        "And": fnp.logical_and, "Or": fnp.logical_or, "Xor": fnp.logical_xor,
        "BitwiseAnd": fnp.bitwise_and, "BitwiseOr": fnp.bitwise_or,
        "BitwiseXor": fnp.bitwise_xor}.items():
    _binary(_name, _fn)


@op("Div")
def _div(ctx, env, x, y):
    if fnp.issubdtype(fnp.result_type(x, y), fnp.integer):
        return lax.div(x, y)        # C's division, toward zero
    return fnp.divide(x, y)


@op("Pow")
def _pow(ctx, env, x, y):
    return fnp.power(x, fnp.asarray(y).astype(fnp.asarray(x).dtype))


@op("Mod")
def _mod(ctx, env, x, y, fmod=0):
    return fnp.fmod(x, y) if fmod else fnp.remainder(x, y)


def _fold(fn, finish=None):
    def rule(ctx, env, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return finish(out, len(xs)) if finish else out
    return rule


OPERATORS.update({"Max": _fold(fnp.maximum), "Min": _fold(fnp.minimum), "Sum": _fold(fnp.add),
                  "Mean": _fold(fnp.add, lambda s, n: s / n)})


@op("IsInf")
def _isinf(ctx, env, x, detect_negative=1, detect_positive=1):
    return ((fnp.isposinf(x) if detect_positive else fnp.zeros_like(x, bool))
            | (fnp.isneginf(x) if detect_negative else fnp.zeros_like(x, bool)))


@op("Where")
def _where(ctx, env, c, x, y):
    return fnp.where(c, x, y)


@op("Clip")
def _clip(ctx, env, x, lo=None, hi=None, min=None, max=None):  # noqa: A002 (opset < 11)
    lo = lo if lo is not None else min
    hi = hi if hi is not None else max
    if lo is not None:
        x = fnp.maximum(x, fnp.asarray(lo, fnp.asarray(x).dtype))
    if hi is not None:
        x = fnp.minimum(x, fnp.asarray(hi, fnp.asarray(x).dtype))
    return x


@op("PRelu")
def _prelu(ctx, env, x, slope):
    return fnp.where(x < 0, slope * x, x)


@op("HardSigmoid")
def _hard_sigmoid(ctx, env, x, alpha=0.2, beta=0.5):
    return fnp.clip(alpha * x + beta, 0, 1)


@op("HardSwish")
def _hard_swish(ctx, env, x):
    return x * fnp.clip(x / 6 + 0.5, 0, 1)


@op("Selu")
def _selu(ctx, env, x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return gamma * fnp.where(x > 0, x, alpha * fnp.expm1(fnp.minimum(x, 0)))


@op("LeakyRelu")
def _leaky_relu(ctx, env, x, alpha=0.01):
    return fnp.where(x >= 0, x, alpha * x)


@op("Elu")
def _elu(ctx, env, x, alpha=1.0):
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.minimum(x, 0)))


@op("Gelu")
def _gelu(ctx, env, x, approximate="none"):
    return nn.gelu(x, approximate=text(approximate) == "tanh")


@op("Cast")
def _cast(ctx, env, x, to, saturate=1):
    # (saturate is about float8 targets, which fnad has no dtype for: the cast below
    # refuses them)
    dtype = helper.tensor_dtype_to_np_dtype(to)
    return x.astype(dtype) if isinstance(x, np.ndarray) else fnp.asarray(x).astype(dtype)


@op("Constant")
def _constant(ctx, env, value=None, value_float=None, value_floats=None, value_int=None,
              value_ints=None, **other):
    if other:       # value_string(s), sparse_value: no fnad array holds them
        raise UnsupportedOperatorError(f"fnad.onnx.load: Constant with "
                                       f"{', '.join(sorted(other))}")
    if value is not None:
        return numpy_helper.to_array(value)
    if value_float is not None:
        return np.asarray(value_float, np.float32)
    if value_floats is not None:
        return np.asarray(value_floats, np.float32)
    if value_int is not None:
        return np.asarray(value_int, np.int64)
    return np.asarray(value_ints, np.int64)


@op("Dropout")
def _dropout(ctx, env, x, ratio=None, training_mode=None, **attrs):
    # inference: the identity (and an all-true mask); a training-mode dropout would
    # need random numbers the graph does not carry
    if training_mode is not None and bool(np.asarray(training_mode)):
        raise UnsupportedOperatorError("fnad.onnx.load: Dropout with training_mode true "
                                       "(export the model in eval mode)")
    return [x, fnp.ones(fnp.shape(x), bool)]


def text(v):
    return v.decode() if isinstance(v, bytes) else v


# --------------------------------------------------------------------------- shapes

@op("Shape")
def _shape(ctx, env, x, start=0, end=None):
    return np.asarray(fnp.shape(x)[start:end], np.int64)


@op("Size")
def _size(ctx, env, x):
    return np.asarray(math.prod(fnp.shape(x)), np.int64)


@op("Reshape")
def _reshape(ctx, env, x, shape, allowzero=0):
    shape = ints(shape, "Reshape's shape")
    if not allowzero:
        shape = [fnp.shape(x)[k] if s == 0 else s for k, s in enumerate(shape)]
    return fnp.reshape(x, shape)


@op("Flatten")
def _flatten(ctx, env, x, axis=1):
    shape = fnp.shape(x)
    axis %= max(len(shape), 1) if axis < 0 else len(shape) + 1
    return fnp.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))


@op("Transpose")
def _transpose(ctx, env, x, perm=None):
    return fnp.transpose(x, perm)


def _axes(ctx, axes_input, attrs_axes):
    if axes_input is not None:
        return ints(axes_input, "axes")
    return list(attrs_axes) if attrs_axes is not None else None


@op("Squeeze")
def _squeeze(ctx, env, x, axes=None, **attrs):
    axes = _axes(ctx, axes, attrs.get("axes"))
    return fnp.squeeze(x, tuple(axes) if axes is not None else None)


@op("Unsqueeze")
def _unsqueeze(ctx, env, x, axes=None, **attrs):
    axes = _axes(ctx, axes, attrs.get("axes"))
    rank = fnp.ndim(x) + len(axes)
    return fnp.expand_dims(x, tuple(sorted(a % rank for a in axes)))


@op("Concat")
def _concat(ctx, env, *xs, axis):
    if all(isinstance(x, np.ndarray) for x in xs):
        return np.concatenate(xs, axis=axis)
    return fnp.concatenate(xs, axis=axis)


@op("Slice")
def _slice(ctx, env, x, starts, ends, axes=None, steps=None):
    starts, ends = ints(starts), ints(ends)
    axes = ints(axes) if axes is not None else list(range(len(starts)))
    steps = ints(steps) if steps is not None else [1] * len(starts)
    index = [slice(None)] * fnp.ndim(x)
    for a, s, e, st in zip(axes, starts, ends, steps):
        n = fnp.shape(x)[a]
        # ONNX clamps out-of-range bounds, as Python's slices do, except that an end
        # far below zero with a negative step means "through index 0".
        e = None if (st < 0 and e < -n) or (st > 0 and e >= n) else e
        index[a] = slice(s, e, st)
    return x[tuple(index)]


@op("Expand")
def _expand(ctx, env, x, shape):
    return fnp.broadcast_to(x, np.broadcast_shapes(fnp.shape(x), tuple(ints(shape))))


@op("Tile")
def _tile(ctx, env, x, repeats):
    return fnp.tile(x, ints(repeats))


@op("ConstantOfShape")
def _constant_of_shape(ctx, env, shape, value=None):
    fill = numpy_helper.to_array(value).reshape(()) if value is not None else np.float32(0)
    return np.full(ints(shape), fill, fill.dtype)


@op("Range")
def _range(ctx, env, start, limit, delta):
    start, limit, delta = (static(v) for v in (start, limit, delta))
    return np.arange(start, limit, delta).astype(np.asarray(start).dtype)


@op("Gather")
def _gather(ctx, env, x, indices, axis=0):
    if isinstance(x, np.ndarray) and isinstance(indices, np.ndarray):
        return np.take(x, indices, axis=axis)
    return fnp.take(x, indices, axis=axis)


@op("GatherElements")
def _gather_elements(ctx, env, x, indices, axis=0):
    return fnp.take_along_axis(x, indices, axis=axis)


def _nd_index(indices):
    k = fnp.shape(indices)[-1]
    return tuple(indices[..., j] for j in range(k))


@op("GatherND")
def _gather_nd(ctx, env, x, indices, batch_dims=0):
    if batch_dims:
        raise UnsupportedOperatorError("fnad.onnx.load: GatherND with batch_dims > 0")
    return fnp.asarray(x)[_nd_index(indices)]


@op("ScatterND")
def _scatter_nd(ctx, env, x, indices, updates, reduction="none"):
    at = fnp.asarray(x).at[_nd_index(indices)]
    how = text(reduction)
    return {"none": at.set, "add": at.add, "mul": at.multiply, "max": at.max,
            "min": at.min}[how](updates)


@op("Pad")
def _pad(ctx, env, x, pads, constant_value=None, axes=None, mode="constant"):
    if text(mode) != "constant":
        raise UnsupportedOperatorError(f"fnad.onnx.load: Pad mode {text(mode)!r} (only constant)")
    pads = ints(pads)
    rank = fnp.ndim(x)
    axes = ints(axes) if axes is not None else list(range(rank))
    config = [(0, 0, 0)] * rank
    for j, a in enumerate(axes):
        config[a % rank] = (pads[j], pads[j + len(axes)], 0)
    value = fnp.asarray(0 if constant_value is None else constant_value,
                        fnp.asarray(x).dtype).reshape(())
    return lax.pad(x, value, config)


@op("Einsum")
def _einsum(ctx, env, *xs, equation):
    return fnp.einsum(text(equation), *xs)


@op("TopK")
def _topk(ctx, env, x, k, axis=-1, largest=1, sorted=1):  # noqa: A002 (ONNX's name)
    k = ints(k)[0]
    # largest first, ties in index order: a stable ascending sort of an order-reversing
    # key (~x for integers and bools, which cannot wrap as -x does for uint8 or iinfo.min)
    exact = np.issubdtype(fnp.asarray(x).dtype, np.integer) or fnp.asarray(x).dtype == bool
    order = fnp.argsort((~x if exact else -x) if largest else x, axis=axis, stable=True)
    idx = lax.slice_in_dim(order, 0, k, axis=axis)
    return [fnp.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]


@op("CumSum")
def _cumsum(ctx, env, x, axis, exclusive=0, reverse=0):
    axis = ints(axis)[0] % fnp.ndim(x)
    if exclusive:
        # the sums of the elements before each one: the input shifted one place (a zero
        # coming in), summed; cumsum(x) - x would give inf - inf = NaN after an inf
        config = [(0, 0, 0)] * fnp.ndim(x)
        config[axis] = (-1, 1, 0) if reverse else (1, -1, 0)
        x = lax.pad(x, 0, config)
    return lax.cumsum(x, axis, reverse=bool(reverse))


# --------------------------------------------------------------------------- reductions

def _reduction(fn, since):
    def rule(ctx, env, x, axes=None, keepdims=1, noop_with_empty_axes=0, **attrs):
        # `axes` is an input from opset `since` on, an attribute before it; both arrive
        # as this keyword
        axes = _axes(ctx, axes if ctx.opset >= since else None,
                     axes if ctx.opset < since else None)
        if not axes:
            if noop_with_empty_axes:
                return x
            axes = None
        return fn(x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdims))
    return rule


def _sum_of(transform, finish=None):
    def fn(x, axis, keepdims):
        out = fnp.sum(transform(x), axis=axis, keepdims=keepdims)
        return finish(out) if finish else out
    return fn


def _logsumexp(x, axis, keepdims):
    top = lax.stop_gradient(fnp.max(x, axis=axis, keepdims=True))
    top = fnp.where(fnp.isfinite(top), top, 0)
    out = fnp.log(fnp.sum(fnp.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else fnp.squeeze(out, axis)


OPERATORS.update({
    "ReduceSum": _reduction(fnp.sum, 13), "ReduceMean": _reduction(fnp.mean, 18),
    "ReduceMax": _reduction(fnp.max, 18), "ReduceMin": _reduction(fnp.min, 18),
    "ReduceProd": _reduction(fnp.prod, 18),
    "ReduceL1": _reduction(_sum_of(fnp.abs), 18),
    "ReduceL2": _reduction(_sum_of(lambda x: x * x, fnp.sqrt), 18),
    "ReduceSumSquare": _reduction(_sum_of(lambda x: x * x), 18),
    "ReduceLogSumExp": _reduction(_logsumexp, 18)})


@op("Split")
def _split(ctx, env, x, split=None, axis=0, num_outputs=None, **attrs):
    sizes = ints(split, "Split's sizes") if split is not None else attrs.get("split")
    n = fnp.shape(x)[axis]
    if sizes is None:
        count = num_outputs or ctx.outputs
        step = -(-n // count)
        sizes = [min(step, n - k * step) for k in range(count)]
    cuts = np.cumsum(sizes)[:-1].tolist()
    return fnp.split(x, cuts, axis=axis)


@op("Trilu")
def _trilu(ctx, env, x, k=None, upper=1):
    k = 0 if k is None else ints(k, "Trilu's k")[0]
    return fnp.triu(x, k) if upper else fnp.tril(x, k)


def _arg(fn):
    def rule(ctx, env, x, axis=0, keepdims=1, select_last_index=0):
        if select_last_index:
            n = fnp.shape(x)[axis]
            out = n - 1 - fn(fnp.flip(x, axis), axis=axis)
        else:
            out = fn(x, axis=axis)
        out = out.astype(np.int64)
        return fnp.expand_dims(out, axis) if keepdims else out
    return rule


OPERATORS.update({"ArgMax": _arg(fnp.argmax), "ArgMin": _arg(fnp.argmin)})
