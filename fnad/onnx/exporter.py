"""fnad.onnx.export: a jittable function as an ONNX model.

The function is staged to a Program exactly as jit stages it, and each equation is
written by its primitive's `onnx=` rule (see builder.py for the convention). Symbolic
axes (dynamic_axes) are found by staging again at other sizes of each axis
(symbolic.py): a dimension that moves moves linearly (c0 + a * size) and is computed at
run time from the graph input that carries the axis, as are counts (a mean's n) and
their reciprocals; any other literal, captured constant or param that moves with the
size (and that the rule cannot express as a shape) pins the axis, and the error names
the equation and the user's line.
"""
import inspect
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .. import numpy as fnp
from ..abstract import ShapedArray
from ..core import Trace, current_trace, use_trace
from ..errors import DynamicAxisError, UnsupportedPrimitiveError
from ..program import Literal
from ..staged.staging import stage
from ..tree_util import (DictKey, GetAttrKey, SequenceKey, tree_flatten,
                         tree_flatten_with_path, tree_unflatten)
from .builder import Builder, Dim, PinnedParams, value_info
from .symbolic import align, moving_fills, programs_in

DEFAULT_OPSET = 18
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export(fun, *example_args, params=None, path=None, input_names=None,
           output_names=None, dynamic_axes=None, opset=DEFAULT_OPSET, doc_string=""):
    """Export `fun` as an onnx.ModelProto (also written to `path` when given).

    fun(*example_args) -> a pytree of arrays; with `params=`, fun(params,
    *example_args) and the leaves of `params` become the model's initializers (named
    by their tree paths, e.g. ``params/0/w``) while the example arguments become its
    inputs. Input names default to the function's argument names joined with their
    tree paths (``batch/image``); output names to ``output`` (``output/0`` ... for a
    pytree). `dynamic_axes` makes dimensions symbolic, as in torch.onnx.export:
    ``{"x": {0: "batch"}}`` or ``{"x": [0]}``, keyed by input (or output) names.
    """
    if opset < 17:
        raise ValueError(f"fnad.onnx.export: opset {opset} is older than 17, the first "
                         f"with every operator the lowering rules use")
    args = ((params,) if params is not None else ()) + tuple(example_args)
    pairs, in_tree = tree_flatten_with_path(args)
    leaves = [fnp.asarray(x) for _, x in pairs]
    n_params = len(tree_flatten(params)[0]) if params is not None else 0
    names = _input_names(fun, pairs, params is not None)
    if input_names is not None:
        if len(input_names) != len(names) - n_params:
            raise ValueError(f"fnad.onnx.export: input_names has {len(input_names)} names "
                             f"but the example arguments have {len(names) - n_params} "
                             f"leaves: {names[n_params:]}")
        names[n_params:] = list(input_names)
    symbols = _symbols(dynamic_axes or {}, names, leaves, n_params)

    base, out_paths, dims, varying, literals, fills = _stage_at_sizes(fun, in_tree, leaves,
                                                                      symbols)
    # Locating a line reruns fun on Arrays (numpy operands would bypass fnad's ops).
    arrays = tree_unflatten(in_tree, leaves)
    b = Builder(opset, dims, varying, {}, locate=lambda eqn: _locate(fun, arrays, eqn.prim),
                literals=literals)
    for s, (occurrences, _) in symbols.items():
        i, axis = occurrences[0]
        b.symbols[s] = b.op("Shape", names[i], start=axis, end=axis + 1)
    initializers, graph_inputs, env = _write_inputs(b, base, fills, names, leaves, n_params)
    try:
        outs = b.lower(base.program, env)
    except PinnedParams as err:
        raise DynamicAxisError(_pinned_message(err, symbols, fun, arrays)) from None

    out_names = _output_names(out_paths, output_names)
    unknown = [k for k in (dynamic_axes or {}) if k not in names and k not in out_names]
    if unknown:
        raise DynamicAxisError(f"fnad.onnx.export: dynamic_axes names {unknown}, which are "
                               f"neither inputs {names[n_params:]} nor outputs {out_names}")
    graph_outputs = _write_outputs(b, base.program, outs, out_names, dynamic_axes or {})
    graph = helper.make_graph(b.nodes, getattr(fun, "__name__", "fnad_function"),
                              graph_inputs, graph_outputs, initializer=initializers)
    model = helper.make_model(graph, producer_name="fnad", doc_string=doc_string,
                              opset_imports=[helper.make_opsetid("", opset)])
    # The oldest IR version that carries the opset, so older ONNX Runtimes (the onnx
    # extra asks for 1.17, which reads IR 9) load the model too.
    model.ir_version = min(model.ir_version, 9 if opset <= 20 else 10)
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model


def _stage_at_sizes(fun, in_tree, leaves, symbols):
    """Stage at the example's sizes and at size + 1 and + 2 of each symbolic axis;
    align the stagings: (base ClosedProgram, output tree paths, dims of every var,
    params that move per equation, scalar literals that are sizes (a mean's count),
    captured constants that are moving fills)."""
    out_paths = []

    def flat_fun(*xs):
        out_pairs, _ = tree_flatten_with_path(fun(*tree_unflatten(in_tree, list(xs))))
        out_paths[:] = [p for p, _ in out_pairs]
        return [o for _, o in out_pairs]

    base_avals = [ShapedArray(x.shape, x.dtype) for x in leaves]
    base = stage(flat_fun, base_avals)
    paths = list(out_paths)
    variants = []
    for s, (occurrences, size) in symbols.items():
        for step in (1, 2):
            avals = list(base_avals)
            for i, axis in occurrences:
                shape = list(avals[i].shape)
                shape[axis] = size + step
                avals[i] = ShapedArray(tuple(shape), avals[i].dtype)
            variants.append((s, step, stage(flat_fun, avals)))
    dims, varying, literals = {}, {}, {}
    fills = moving_fills(base, variants)
    align(base.program, [(s, st, v.program) for s, st, v in variants],
           {s: size for s, (_, size) in symbols.items()}, dims, varying, literals)
    return base, paths, dims, varying, literals, fills


def _write_inputs(b, base, fills, names, leaves, n_params):
    """Initializers (captured constants, then params), graph inputs, and the ONNX name
    of every program input in order."""
    program = base.program
    initializers, graph_inputs, env = [], [], []
    used = {a for e in program.eqns for a in e.inputs} | set(program.outputs)
    for i, c in enumerate(base.consts):
        name = f"const/{i}"
        c = np.asarray(c)
        if program.invars[i] not in used:
            pass                # kept by the program, read by nothing
        elif i in fills:
            name = b.op("Expand", b.const(c.flat[0]), b.shape_tensor(b.dims[program.invars[i]]))
        else:
            initializers.append(numpy_helper.from_array(c, name))
        env.append(name)
    for k, (name, v) in enumerate(zip(names, program.invars[len(base.consts):])):
        if k < n_params:
            initializers.append(numpy_helper.from_array(np.asarray(leaves[k]), name))
        else:
            graph_inputs.append(value_info(name, v.aval.dtype, b.dims.get(v, v.aval.shape)))
        env.append(name)
    return initializers, graph_inputs, env


def _write_outputs(b, program, outs, out_names, dynamic_axes):
    """Identity nodes naming the outputs, and their value infos (symbolic dims named
    by their symbol, or by the label dynamic_axes gives the output's axis)."""
    graph_outputs = []
    for name, value, atom in zip(out_names, outs, program.outputs):
        b.nodes.append(helper.make_node("Identity", [value], [name], name=b.fresh("n_out")))
        odims = list(atom.aval.shape if isinstance(atom, Literal)
                     else b.dims.get(atom, atom.aval.shape))
        for axis, label in _axes(dynamic_axes.get(name, {}), name).items():
            if not isinstance(odims[axis], Dim):
                raise DynamicAxisError(
                    f"fnad.onnx.export: dynamic_axes names axis {axis} of output {name!r}, "
                    f"but that axis has a fixed size {odims[axis]}: it depends on no "
                    f"dynamic input axis")
            if odims[axis].symbol is None:
                odims[axis] = Dim(0, {label: 1})
        graph_outputs.append(value_info(name, atom.aval.dtype, odims))
    return graph_outputs


# --------------------------------------------------------------------------- names

def _key_text(key):
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, DictKey):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return key.name
    return str(key)


def _input_names(fun, pairs, has_params):
    try:
        arg_names = [p.name for p in inspect.signature(fun).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        arg_names = []
    names = []
    for path, _ in pairs:
        k = path[0].idx
        head = ("params" if has_params and k == 0
                else arg_names[k] if k < len(arg_names) else f"input{k - has_params}")
        names.append("/".join([head] + [_key_text(p) for p in path[1:]]))
    return names


def _output_names(paths, given):
    names = ["/".join(["output"] + [_key_text(p) for p in path]) for path in paths]
    if given is not None:
        if len(given) != len(names):
            raise ValueError(f"fnad.onnx.export: output_names has {len(given)} names but "
                             f"the function returns {len(names)} arrays: {names}")
        names = list(given)
    return names


def _axes(spec, name):
    if isinstance(spec, dict):
        return {int(a): str(s) for a, s in spec.items()}
    return {int(a): f"{name}_dim{a}" for a in spec}


def _symbols(dynamic_axes, names, leaves, n_params):
    """symbol -> ([(leaf index, axis), ...], the example's size of that axis)."""
    symbols = {}
    for name, spec in dynamic_axes.items():
        if name not in names:
            continue            # an output's axis: checked once outputs are known
        i = names.index(name)
        if i < n_params:
            raise DynamicAxisError(f"fnad.onnx.export: {name!r} is a parameter "
                                   f"(initializer); only inputs can have dynamic axes")
        for axis, s in _axes(spec, name).items():
            shape = leaves[i].shape
            if not -len(shape) <= axis < len(shape):
                raise DynamicAxisError(f"fnad.onnx.export: dynamic_axes names axis {axis} "
                                       f"of input {name!r}, which has shape {shape}")
            axis %= len(shape)
            occ, size = symbols.setdefault(s, ([], shape[axis]))
            if shape[axis] != size:
                raise DynamicAxisError(
                    f"fnad.onnx.export: the dynamic axis {s!r} has size {size} in one "
                    f"input and {shape[axis]} in {name!r}; one symbol, one size")
            occ.append((i, axis))
    return symbols


def _pinned_message(err, symbols, fun, args):
    where = _locate(fun, args, err.eqn.prim)
    at = f" at {where}" if where else ""
    return (f"fnad.onnx.export: equation {err.eqn.prim.name}{at} pins a dynamic axis "
            f"({', '.join(sorted(symbols))}): its {', '.join(err.params)} changes with the "
            f"axis's size, and ONNX cannot compute it from the input's shape. Keep that "
            f"axis static, or write the function so the size enters the computation "
            f"only as a count or its reciprocal (as in a mean and its derivative); a "
            f"power or a product of sizes has no ONNX shape form.")


# --------------------------------------------------------------------------- locating

class _Locator(Trace):
    """Runs the function eagerly and notes the user's line that first binds the
    primitive (or a call whose program holds it)."""
    name = "onnx export"

    def __init__(self, parent, prim):
        super().__init__(parent)
        self.prim, self.where = prim, None

    def process(self, prim, args, params):
        if self.where is None and (prim is self.prim or any(
                _holds(p, self.prim) for v in params.values() for p in programs_in(v))):
            self.where = _user_frame()
        return self.bind_in_parent(prim, args, params)

    def process_custom(self, rules, args):
        return rules.fun(list(args))


def _holds(program, prim):
    return any(e.prim is prim or any(_holds(p, prim) for v in e.params.values()
                                     for p in programs_in(v)) for e in program.eqns)


def _user_frame():
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def _locate(fun, args, prim):
    locator = _Locator(current_trace(), prim)
    try:
        with use_trace(locator):
            fun(*args)
    except Exception:   # noqa: BLE001 - locating is best effort; the export error stands
        pass
    finally:
        locator.alive = False
    return locator.where


__all__ = ["export", "UnsupportedPrimitiveError"]
