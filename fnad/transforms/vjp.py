"""Reverse mode: the tape interpreter, `vjp`, `grad` and `value_and_grad`.

While the function runs, every primitive applied to a tracked value appends a
node to the trace's tape: the primitive's VJP rule with the values it needs. The
backward pass walks the tape from the end, handing each node's cotangent to its
rule. Rules are written in fnad operations and run in whatever interpreter is
current when the backward pass runs, so an enclosing transform sees (and can
differentiate, batch or stage) the backward pass itself.
"""
import numpy as np

from ..core import Trace, Tracer, use_trace, current_trace, bind_custom
from ..array import Array
from ..errors import GradientError
from ..tree_util import tree_flatten, tree_unflatten
from ._util import (flatten_fun_output, check_float_input, zeros_like, as_value,
                    normalize_argnums)


class Node:
    """One step of the tape. `rule(cotangent, out, *args, **params)` returns one
    cotangent per arg; `parents[i]` is the tracer args[i] came from, or None."""
    __slots__ = ("rule", "params", "args", "out", "parents", "multiple")

    def __init__(self, rule, params, args, out, parents, multiple):
        self.rule = rule
        self.params = params
        self.args = args
        self.out = out
        self.parents = parents
        self.multiple = multiple


class VJPTracer(Tracer):
    __slots__ = ("primal", "node", "index")

    def __init__(self, trace, primal, node, index=None):
        self._trace = trace
        self.primal = primal
        self.node = node
        self.index = index      # which output of a multiple-result node

    @property
    def aval(self):
        return self.primal.aval

    @property
    def shape(self):
        return self.primal.shape

    @property
    def dtype(self):
        return self.primal.dtype

    def concrete(self):
        p = self.primal
        return p.concrete() if isinstance(p, Tracer) else p


class VJPTrace(Trace):
    name = "grad"

    def __init__(self, parent):
        super().__init__(parent)
        self.tape = []

    def split(self, args):
        primals, parents, tracked = [], [], False
        for a in args:
            if type(a) is VJPTracer and a._trace is self:
                primals.append(a.primal)
                parents.append(a)
                tracked = True
            else:
                primals.append(a)
                parents.append(None)
        return primals, parents, tracked

    def record(self, rule, params, args, out, parents, multiple):
        node = Node(rule, params, args, out, parents, multiple)
        self.tape.append(node)
        if multiple:
            return [self.track(o, node, i) for i, o in enumerate(out)]
        return self.track(out, node)

    def track(self, value, node, index=None):
        # Integer and boolean results carry no derivative: leave them untracked.
        if value.dtype.kind != "f":
            return value
        return VJPTracer(self, value, node, index)

    def new_input(self, value):
        return self.record(None, None, (), value, (), False)

    def process(self, prim, args, params):
        primals, parents, tracked = self.split(args)
        out = self.bind_in_parent(prim, primals, params)
        if not tracked:
            return out
        return self.record(prim.vjp, params, primals, out, parents, prim.multiple_results)

    def process_custom(self, rules, args):
        primals, parents, tracked = self.split(args)
        with use_trace(self.parent):
            if not tracked:
                return bind_custom(rules, primals)
            outs, residuals = rules.fwd(primals)
        # The node's args are the residuals; its parents are still the primal inputs,
        # matching the one cotangent per input that bwd returns.
        return self.record(_custom_rule(rules.bwd), {}, residuals, outs, parents, True)


def _custom_rule(bwd):
    def rule(cotangents, outs, *residuals):
        cts = [zeros_like(o) if c is None else c for c, o in zip(cotangents, outs)]
        return bwd(residuals, cts)
    return rule


def backward(tape, seeds):
    """Run the tape backwards from `seeds` [(tracer, cotangent)]; returns the
    node -> cotangent map for the input nodes."""
    cts = {}
    for tracer, ct in seeds:
        _accumulate(cts, tracer, ct)
    grads = {}
    for node in reversed(tape):
        ct = cts.pop(node, None)
        if ct is None:
            continue
        if node.rule is None:
            grads[node] = ct
            continue
        arg_cts = node.rule(ct, node.out, *node.args, **node.params)
        for parent, c in zip(node.parents, arg_cts):
            if parent is not None and c is not None:
                _accumulate(cts, parent, c)
    return grads


def _accumulate(cts, tracer, ct):
    node = tracer.node
    if node.multiple:
        slots = cts.get(node)
        if slots is None:
            slots = cts[node] = [None] * len(node.out)
        i = tracer.index
        slots[i] = ct if slots[i] is None else slots[i] + ct
    else:
        prev = cts.get(node)
        cts[node] = ct if prev is None else prev + ct


def vjp(fun, *primals, has_aux=False):
    """(fun(*primals), vjp_fn) where vjp_fn(cotangent) gives one cotangent per primal."""
    flat_in, tree_in = tree_flatten(primals)
    trace = VJPTrace(current_trace())
    flat_in = [check_float_input(x, "vjp", f"input {i}") for i, x in enumerate(flat_in)]
    inputs = [trace.new_input(x) for x in flat_in]
    try:
        with use_trace(trace):
            out = fun(*tree_unflatten(tree_in, inputs))
    finally:
        trace.alive = False
    out, aux = (out if has_aux else (out, None))
    flat_out, tree_out = flatten_fun_output(out)
    primals_out = [_primal(trace, o) for o in flat_out]

    def vjp_fn(cotangent):
        flat_ct, tree_ct = tree_flatten(cotangent)
        if tree_ct != tree_out:
            raise ValueError(f"vjp: the cotangent's structure {tree_ct} differs from the "
                             f"output's {tree_out}")
        seeds = []
        for i, (o, c) in enumerate(zip(flat_out, flat_ct)):
            c = as_value(c, f"cotangent {i}")
            if tuple(c.shape) != tuple(o.shape):
                raise ValueError(f"vjp: cotangent {i} has shape {tuple(c.shape)} but the "
                                 f"output has shape {tuple(o.shape)}")
            if type(o) is VJPTracer and o._trace is trace:
                seeds.append((o, c))
        grads = backward(trace.tape, seeds)
        flat_grads = [grads.get(x.node) if type(x) is VJPTracer else None for x in inputs]
        flat_grads = [zeros_like(x) if g is None else g for g, x in zip(flat_grads, flat_in)]
        return tree_unflatten(tree_in, flat_grads)

    result = (tree_unflatten(tree_out, primals_out), vjp_fn)
    if has_aux:
        aux_leaves, aux_tree = tree_flatten(aux)
        return result + (tree_unflatten(aux_tree, [_primal(trace, a) for a in aux_leaves]),)
    return result


def _primal(trace, x):
    return x.primal if type(x) is VJPTracer and x._trace is trace else x


def value_and_grad(fun, argnums=0, has_aux=False):
    """fun's value and its gradient with respect to the arguments named by argnums."""
    def value_and_grad_fun(*args, **kwargs):
        single, nums = normalize_argnums(argnums, len(args), "grad")
        diff_args = tuple(args[i] for i in nums)

        def restricted(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return fun(*full, **kwargs)

        _check_grad_inputs(diff_args, nums)
        result = vjp(restricted, *diff_args, has_aux=has_aux)
        out, pullback = result[0], result[1]
        out_leaf = _check_scalar_output(out)
        grads = pullback(Array(np.ones((), out_leaf.dtype)))
        value = (out, result[2]) if has_aux else out
        return value, (grads[0] if single else grads)

    _copy_name(value_and_grad_fun, fun, "value_and_grad")
    return value_and_grad_fun


def grad(fun, argnums=0, has_aux=False):
    """The gradient of scalar-valued fun with respect to the arguments named by argnums."""
    vg = value_and_grad(fun, argnums, has_aux)

    def grad_fun(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    _copy_name(grad_fun, fun, "grad")
    return grad_fun


def _check_grad_inputs(diff_args, nums):
    for n, a in zip(nums, diff_args):
        for leaf in tree_flatten(a)[0]:
            dtype = getattr(leaf, "dtype", None)
            if dtype is None:
                dtype = np.asarray(leaf).dtype
            if np.dtype(dtype).kind != "f":
                raise GradientError(
                    f"grad requires floating-point inputs, but argument {n} has a leaf of "
                    f"dtype {np.dtype(dtype)} and shape {tuple(np.shape(leaf))}; pass it as a "
                    f"float array, or leave it out of argnums")


def _check_scalar_output(out):
    leaves, _ = tree_flatten(out)
    if len(leaves) != 1:
        raise GradientError(f"grad requires a function with one scalar output, got a "
                            f"pytree with {len(leaves)} leaves; use vjp or jacrev")
    leaf = leaves[0]
    shape = tuple(np.shape(leaf)) if not hasattr(leaf, "shape") else tuple(leaf.shape)
    if shape != ():
        raise GradientError(f"grad requires a scalar output, got an output of shape "
                            f"{shape}; reduce it (e.g. .sum()) or use vjp/jacrev")
    if leaf.dtype.kind != "f":
        raise GradientError(f"grad requires a floating-point output, got dtype {leaf.dtype}")
    return leaf


def _copy_name(wrapper, fun, prefix):
    name = getattr(fun, "__name__", "fun")
    wrapper.__name__ = f"{prefix}({name})"
    wrapper.__doc__ = getattr(fun, "__doc__", None)
    wrapper.__wrapped__ = fun
