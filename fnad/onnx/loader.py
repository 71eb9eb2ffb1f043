"""fnad.onnx.load: an ONNX model as a pure fnad function and its parameters.

Each ONNX operator is written with fnad.numpy / fnad.lax (operators.py), so the
loaded function is made of fnad primitives: grad, jit and vmap work on it. The
floating-point initializers are the parameters (a dict keyed by initializer name);
integer ones (shapes, axes, indices) stay constants of the function. Shape
arithmetic (Shape, Gather on a shape, Concat of sizes ...) runs on concrete values,
so reshapes see static sizes under jit as well.
"""
import os

import numpy as np
import onnx
from onnx import numpy_helper

from .. import numpy as fnp
from .._api import ensure_compile_time_eval
from ..dtypes import is_float
from ..errors import FileFormatError, UnsupportedOperatorError
from .operators import OPERATORS, Context
from . import network_ops  # noqa: F401  (registers the network and control-flow operators)


def load(path_or_model):
    """(apply_fn, params): apply_fn(params, *inputs) runs the model's graph on the
    inputs (in the order of the graph's inputs) and returns its output, or a tuple
    of its outputs when it has several; params holds its floating-point initializers."""
    model = path_or_model
    if not isinstance(model, onnx.ModelProto):
        path = os.fspath(path_or_model)
        try:
            model = onnx.load(path)
        except OSError:
            raise       # a missing or unreadable file: the OS's own error says it best
        except Exception as err:   # noqa: BLE001 - protobuf's DecodeError and kin
            raise FileFormatError(path, f"fnad.onnx.load: not a valid ONNX model "
                                        f"({type(err).__name__}: {err})") from None
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    missing = sorted(_unsupported(model.graph))
    if missing:
        raise UnsupportedOperatorError(
            f"fnad.onnx.load: the model uses {len(missing)} ONNX operator(s) fnad does not "
            f"implement: {', '.join(missing)}")
    graph = model.graph
    params, constants = {}, {}
    for t in graph.initializer:
        value = numpy_helper.to_array(t)
        if is_float(value.dtype):      # bfloat16 weights are parameters too
            params[t.name] = fnp.asarray(value)
        else:
            constants[t.name] = value
    names = [i.name for i in graph.input if i.name not in params and i.name not in constants]
    outputs = [o.name for o in graph.output]

    def apply_fn(params, *inputs):
        if len(inputs) != len(names):
            raise TypeError(f"the loaded ONNX model takes {len(names)} inputs {names}, "
                            f"got {len(inputs)}")
        env = dict(constants)
        env.update(params)
        env.update(zip(names, inputs))
        ctx = Context(opset, run_graph)
        run_graph(ctx, graph, env)
        outs = tuple(_value(env, o, "the graph's output") for o in outputs)
        return outs[0] if len(outs) == 1 else outs

    apply_fn.input_names = names
    apply_fn.output_names = outputs
    return apply_fn, params


def run_graph(ctx, graph, env):
    """Evaluate `graph`'s nodes into env (which holds its inputs and outer values)."""
    for t in graph.initializer:
        env.setdefault(t.name, numpy_helper.to_array(t))
    for node in graph.node:
        args = [_value(env, i, f"an input of {node.op_type} node {node.name!r}") if i
                else None for i in node.input]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        ctx.outputs = len(node.output)
        if all(a is None or isinstance(a, np.ndarray) for a in args) and not any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                for a in node.attribute):
            # Shape arithmetic on constants (Shape -> Gather -> Concat -> Reshape) runs
            # now, under jit too, so the shapes it makes stay static.
            with ensure_compile_time_eval():
                out = OPERATORS[node.op_type](ctx, env, *args, **attrs)
            out = ([np.asarray(o) for o in out] if isinstance(out, (list, tuple))
                   else np.asarray(out))
        else:
            out = OPERATORS[node.op_type](ctx, env, *args, **attrs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        for name, value in zip(node.output, outs):
            if name:
                env[name] = value
    return env


def _value(env, name, what):
    """The value named `name`; a model naming one that no input, initializer or earlier
    node defines is malformed (ONNX graphs are topologically sorted)."""
    try:
        return env[name]
    except KeyError:
        raise FileFormatError("the ONNX model", f"fnad.onnx.load: {what} is {name!r}, which no "
                              f"graph input, initializer or earlier node defines") from None


def _unsupported(graph):
    missing = set()
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            missing.add(f"{node.domain}::{node.op_type}")
        elif node.op_type not in OPERATORS:
            missing.add(node.op_type)
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                missing |= _unsupported(a.g)
            for g in a.graphs:
                missing |= _unsupported(g)
    return missing


__all__ = ["load"]
