"""The ONNX operators of networks (MatMul, Gemm, Conv, pools, softmax, normalizations)
and of control flow (If, Loop), written with fnad; registered into operators.OPERATORS.
"""
import math

import numpy as np

from .. import lax, nn
from .. import numpy as fnp
from ..core import Tracer
from ..errors import UnsupportedOperatorError
from .operators import OPERATORS, ints, op, text


# --------------------------------------------------------------------------- networks

@op("MatMul")
def _matmul(ctx, env, a, b):
    return fnp.matmul(a, b)


@op("Gemm")
def _gemm(ctx, env, a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    a = fnp.transpose(a) if transA else a
    b = fnp.transpose(b) if transB else b
    out = fnp.matmul(a, b)
    out = out * alpha if alpha != 1.0 else out
    if c is not None:
        out = out + (c * beta if beta != 1.0 else c)
    return out


def _window_padding(attrs, spatial, kernel, strides, dilations):
    auto = text(attrs.get("auto_pad", "NOTSET"))
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for n, k, s, d in zip(spatial, kernel, strides, dilations):
            total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
            small, big = total // 2, total - total // 2
            pads.append((small, big) if auto == "SAME_UPPER" else (big, small))
        return pads
    if auto == "VALID":
        return [(0, 0)] * len(spatial)
    p = list(attrs.get("pads", [0] * 2 * len(spatial)))
    return list(zip(p[:len(spatial)], p[len(spatial):]))


@op("Conv")
def _conv(ctx, env, x, w, bias=None, **attrs):
    spatial = fnp.shape(x)[2:]
    kernel = attrs.get("kernel_shape", fnp.shape(w)[2:])
    strides = attrs.get("strides", [1] * len(spatial))
    dilations = attrs.get("dilations", [1] * len(spatial))
    pads = _window_padding(attrs, spatial, kernel, strides, dilations)
    out = lax.conv_general_dilated(x, w, tuple(strides), pads, rhs_dilation=tuple(dilations),
                                   feature_group_count=attrs.get("group", 1))
    if bias is not None:
        out = out + fnp.reshape(bias, (1, -1) + (1,) * len(spatial))
    return out


def _pool(computation):
    def rule(ctx, env, x, **attrs):
        if attrs.get("ceil_mode", 0):
            raise UnsupportedOperatorError("fnad.onnx.load: pooling with ceil_mode=1")
        spatial = fnp.shape(x)[2:]
        kernel = list(attrs["kernel_shape"])
        strides = list(attrs.get("strides", [1] * len(kernel)))
        dilations = list(attrs.get("dilations", [1] * len(kernel)))
        pads = _window_padding(attrs, spatial, kernel, strides, dilations)
        return computation(x, kernel, strides, pads, dilations, attrs)
    return rule


def _max_pool(x, kernel, strides, pads, dilations, attrs):
    dtype = fnp.asarray(x).dtype
    return lax.reduce_window(x, fnp.asarray(-np.inf, dtype), lax.max, (1, 1, *kernel),
                             (1, 1, *strides), [(0, 0), (0, 0), *pads],
                             window_dilation=(1, 1, *dilations))


def _average_pool(x, kernel, strides, pads, dilations, attrs):
    dtype = fnp.asarray(x).dtype
    window = ((1, 1, *kernel), (1, 1, *strides), [(0, 0), (0, 0), *pads])
    total = lax.reduce_window(x, fnp.asarray(0, dtype), lax.add, *window)
    if attrs.get("count_include_pad", 0) or not any(lo or hi for lo, hi in pads):
        return total / math.prod(kernel)
    ones = fnp.ones((1, 1) + tuple(fnp.shape(x)[2:]), dtype)
    count = lax.reduce_window(ones, fnp.asarray(0, dtype), lax.add, *window)
    return total / count


OPERATORS.update({"MaxPool": _pool(_max_pool), "AveragePool": _pool(_average_pool)})


@op("GlobalAveragePool")
def _global_average_pool(ctx, env, x):
    return fnp.mean(x, axis=tuple(range(2, fnp.ndim(x))), keepdims=True)


@op("GlobalMaxPool")
def _global_max_pool(ctx, env, x):
    return fnp.max(x, axis=tuple(range(2, fnp.ndim(x))), keepdims=True)


def _softmax_rule(fn):
    def rule(ctx, env, x, axis=None):
        if axis is None:
            axis = -1 if ctx.opset >= 13 else 1
        if ctx.opset < 13:      # the old form: softmax over the flattened trailing axes
            shape = fnp.shape(x)
            flat = fnp.reshape(x, (math.prod(shape[:axis]), -1))
            return fnp.reshape(fn(flat, axis=-1), shape)
        return fn(x, axis=axis)
    return rule


OPERATORS.update({"Softmax": _softmax_rule(nn.softmax),
                  "LogSoftmax": _softmax_rule(nn.log_softmax)})


@op("LayerNormalization")
def _layer_norm(ctx, env, x, scale, bias=None, axis=-1, epsilon=1e-5, stash_type=1):
    axes = tuple(range(axis % fnp.ndim(x), fnp.ndim(x)))
    mean = fnp.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = fnp.mean(centered * centered, axis=axes, keepdims=True)
    out = centered / fnp.sqrt(var + epsilon) * scale
    return out + bias if bias is not None else out


@op("BatchNormalization")
def _batch_norm(ctx, env, x, scale, bias, mean, var, epsilon=1e-5, momentum=0.9,
                training_mode=0):
    if training_mode:
        raise UnsupportedOperatorError("fnad.onnx.load: BatchNormalization in training mode")
    shape = (1, -1) + (1,) * (fnp.ndim(x) - 2)
    inv = fnp.reshape(scale / fnp.sqrt(var + epsilon), shape)
    return (x - fnp.reshape(mean, shape)) * inv + fnp.reshape(bias, shape)


# --------------------------------------------------------------------------- control flow

def _run_subgraph(ctx, env, graph, inputs=()):
    inner = dict(env)
    inner.update(zip([i.name for i in graph.input], inputs))
    ctx.run_graph(ctx, graph, inner)
    return [inner[o.name] for o in graph.output]


@op("If")
def _if(ctx, env, cond, then_branch, else_branch):
    if not isinstance(cond, Tracer):
        taken = then_branch if bool(np.asarray(cond).reshape(())) else else_branch
        return _run_subgraph(ctx, env, taken)
    return lax.cond(fnp.reshape(cond, ()), lambda: _run_subgraph(ctx, env, then_branch),
                    lambda: _run_subgraph(ctx, env, else_branch))


def _condition_passes_through(body):
    """Whether the body's condition output is its condition input (through Identity
    nodes): the loop then runs exactly its trip count."""
    made_by = {o: n for n in body.node for o in n.output}
    name = body.output[0].name
    while name in made_by and made_by[name].op_type == "Identity":
        name = made_by[name].input[0]
    return name == body.input[1].name


@op("Loop")
def _loop(ctx, env, trips, cond, *initial, body):
    n_carry = len(initial)
    n_scan = len(body.output) - 1 - n_carry
    counted = (trips is not None and not isinstance(trips, Tracer)
               and not isinstance(cond, Tracer) and _condition_passes_through(body))
    if counted:
        # A fixed trip count (fori_loop, scan): lax.scan, which reverse mode can
        # differentiate and which stacks the per-iteration outputs.
        n = ints(trips, "Loop's trip count")[0]
        if cond is not None and not bool(np.asarray(cond).reshape(())):
            n = 0
        go = np.asarray(True)

        def step(carry, i):
            outs = _run_subgraph(ctx, env, body, [i, go, *carry])
            return list(outs[1:1 + n_carry]), list(outs[1 + n_carry:])

        carry, ys = lax.scan(step, list(initial), np.arange(n, dtype=np.int64))
        return list(carry) + list(ys)
    if n_scan:
        raise UnsupportedOperatorError(
            "fnad.onnx.load: a Loop with per-iteration outputs whose trip count is not a "
            "constant or whose condition can stop it early (its output length is not "
            "known before it runs)")
    limit = np.iinfo(np.int64).max if trips is None else fnp.asarray(trips).reshape(())
    go = fnp.asarray(True) if cond is None else fnp.asarray(cond).reshape(())

    def keep_going(state):
        i, ok, _ = state
        return ok & (i < limit)

    def step(state):
        i, ok, carry = state
        outs = _run_subgraph(ctx, env, body, [i, ok, *carry])
        return i + 1, fnp.reshape(outs[0], ()), list(outs[1:])

    _, _, carry = lax.while_loop(keep_going, step,
                                 (fnp.asarray(0, np.int64), go, list(initial)))
    return list(carry)


@op("Scan")
def _scan(ctx, env, *args, body, num_scan_inputs, scan_input_axes=None,
          scan_input_directions=None, scan_output_axes=None, scan_output_directions=None):
    n_state = len(args) - num_scan_inputs
    states, xs = list(args[:n_state]), list(args[n_state:])
    in_axes = list(scan_input_axes or [0] * len(xs))
    in_dirs = list(scan_input_directions or [0] * len(xs))
    # Each scanned input with its scan axis first, reversed where it runs backwards.
    xs = [fnp.moveaxis(x, a, 0) for x, a in zip(xs, in_axes)]
    xs = [fnp.flip(x, 0) if d else x for x, d in zip(xs, in_dirs)]

    def step(carry, slices):
        outs = _run_subgraph(ctx, env, body, [*carry, *slices])
        return list(outs[:n_state]), list(outs[n_state:])

    carry, ys = lax.scan(step, states, xs)
    n_out = len(ys)
    out_axes = list(scan_output_axes or [0] * n_out)
    out_dirs = list(scan_output_directions or [0] * n_out)
    ys = [fnp.flip(y, 0) if d else y for y, d in zip(ys, out_dirs)]
    ys = [fnp.moveaxis(y, 0, a) for y, a in zip(ys, out_axes)]
    return list(carry) + ys
