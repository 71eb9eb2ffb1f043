"""Staging: running a function on abstract values to record it as a Program.

StagedTracers know only shape and dtype; each bind appends an equation. Arrays the
function captures become leading inputs of the program, their values the constants
of the ClosedProgram `stage_flat` returns. A function with custom derivative rules is
recorded as one `custom_call` equation that keeps the rules, so transforming the
staged program later transforms it with them.
"""
import numpy as np

from ..abstract import get_aval
from ..array import Array
from ..core import Primitive, Trace, Tracer, bind_custom, current_trace, use_trace
from ..errors import ConcretizationError, EscapedTracerError
from ..primitives._rules import batch_size
from ..primitives.structural import move_batch_axes
from ..program import ClosedProgram, Equation, Literal, Program, Var, evaluate
from ..transforms._util import as_value
from ..transforms.batching import batch_rules
from ..transforms.optimize import optimize


class StagedTracer(Tracer):
    __slots__ = ("aval", "var", "shape", "dtype")

    @property
    def weak_type(self):
        """A jit argument made from a Python scalar promotes like it (see ShapedArray)."""
        return self.aval.weak_type

    def _check_not_escaped(self):
        if not self._trace.alive:
            raise EscapedTracerError(
                f"a value of shape {self.shape} and dtype {self.dtype} traced by jit was "
                f"used (converted to numpy, bool, int or float) after the jit trace that "
                f"made it had finished: it escaped its jit, e.g. through a global, a list "
                f"or a closure the jitted function wrote to. Return it from the jitted "
                f"function instead.")

    def __array__(self, dtype=None, copy=None):
        self._check_not_escaped()
        return Tracer.__array__(self, dtype, copy)

    def concrete(self):
        self._check_not_escaped()
        raise ConcretizationError(
            f"a traced value of shape {self.shape} and dtype {self.dtype} was used where a "
            f"concrete Python value is needed (bool(), int(), float(), an `if` or `while` "
            f"on an array, or numpy conversion) inside a function being staged by jit. "
            f"Use fnad.lax.cond / fnad.lax.while_loop for data-dependent control flow, "
            f"or mark the argument static with static_argnums/static_argnames.")


def _new_tracer(trace, aval):
    t = object.__new__(StagedTracer)
    t._trace, t.aval, t.var = trace, aval, Var(aval)
    t.shape, t.dtype = aval.shape, aval.dtype
    return t


class StagingTrace(Trace):
    name = "jit"

    def __init__(self, parent):
        super().__init__(parent)
        self.eqns = []
        self.constvars = {}     # id(value) -> Var
        self.consts = []        # (Var, value), in order of capture

    def atom(self, x):
        if type(x) is StagedTracer and x._trace is self:
            return x.var
        if isinstance(x, Tracer) and not x._trace.alive:
            raise EscapedTracerError(
                f"jit: a value traced by {x._trace.name}, which has already returned, was "
                f"used while staging; return it from the transformed function instead")
        if not isinstance(x, Tracer):
            value = x._value if type(x) is Array else x
            if isinstance(value, (np.ndarray, np.generic)) and value.size == 1 \
                    and np.ndim(value) == 0:
                return Literal(value)
        # Arrays, and values of enclosing transforms, become inputs of the program.
        var = self.constvars.get(id(x))
        if var is None:
            var = self.constvars[id(x)] = Var(get_aval(x))
            self.consts.append((var, x))
        return var

    def process(self, prim, args, params):
        inputs = [self.atom(a) for a in args]
        out = prim.abstract_eval(*[a.aval for a in inputs], **params)
        outs = out if prim.multiple_results else [out]
        tracers = [_new_tracer(self, aval) for aval in outs]
        self.eqns.append(Equation(prim, inputs, [t.var for t in tracers], params))
        return tracers if prim.multiple_results else tracers[0]

    def process_custom(self, rules, args):
        avals = [get_aval(a) for a in args]
        sub = stage_flat(lambda *xs: rules.fun(list(xs)), avals)
        return self.process(custom_call_p, args, {"rules": rules, "program": sub})


def stage_flat(flat_fun, avals):
    """Stage flat_fun(*arrays) -> list of arrays into a closed Program whose first
    inputs are the captured constants. Returns (program, const_values)."""
    trace = StagingTrace(current_trace())
    tracers = [_new_tracer(trace, a) for a in avals]
    try:
        with use_trace(trace):
            outs = flat_fun(*tracers)
    finally:
        trace.alive = False
    outs = [trace.atom(as_value(o, "jit output")) for o in outs]
    constvars = [v for v, _ in trace.consts]
    program = Program(constvars + [t.var for t in tracers], trace.eqns, outs)
    return ClosedProgram(program, [c for _, c in trace.consts])


def stage(fun, avals):
    """fun(*arrays) -> list of arrays, staged for arguments of `avals` and optimized."""
    return optimize(stage_flat(fun, list(avals)))


# --------------------------------------------------------------------------- custom_call

class CustomCallPrimitive(Primitive):
    """A staged function with custom derivative rules: binding it hands the rules
    back to the current interpreter, exactly as the unstaged call did."""

    def bind(self, *args, rules, program):
        return bind_custom(rules, args)


def _custom_call_impl(*args, rules, program):
    # Host buffers out, as every cpu kernel gives: a jitted program's driver hands them
    # straight to the next kernel (a constant in the program made these fnad Arrays).
    return [np.asarray(o) for o in evaluate(program.program, [*program.consts, *args])]


def _custom_call_batch(args, batch_dims, rules, program):
    # Reached only by binding directly: vmap itself hands custom rules to
    # BatchTrace.process_custom, which does the same.
    size = batch_size(args, batch_dims)
    moved = move_batch_axes(args, batch_dims, 0)
    outs = bind_custom(batch_rules(rules, [d is not None for d in batch_dims], size), moved)
    return outs, [0] * len(outs)


def _onnx_custom_call(b, *args, rules, program):
    # The forward program is the whole computation; the derivative rules (new objects
    # at every staging, so they "move" with a dynamic size) are never read.
    b.cover("rules")
    consts = [b.const(np.asarray(c)) for c in program.consts]
    return b.lower(program.program, consts + list(args))


custom_call_p = CustomCallPrimitive(
    "custom_call",
    abstract_eval=lambda *avals, rules, program: program.program.out_avals,
    impl=_custom_call_impl,
    jvp=lambda primals, tangents, rules, program: rules.jvp(primals, tangents),
    vjp=lambda cts, outs, *args, rules, program: rules.bwd(rules.fwd(list(args))[1], cts),
    batch=_custom_call_batch,
    multiple_results=True, onnx=_onnx_custom_call)
