"""Transforming a Program: its staged jvp, vjp and vmap, each derived once per program
(and mask) and kept while the program lives.

The rules of every primitive that holds programs (jit_call, cond, while, scan) are
written with these: a derivative or batched version of a call is a call of the
derived program. Masks say which inputs are perturbed or batched and which outputs
are wanted, so a rule stages only the work it needs; `dependent` is the dataflow pass
that tells which outputs the flagged inputs can reach.
"""
from ..dtypes import kind_of as dtype_kind
from ..abstract import ShapedArray
from ..core import current_trace, use_trace
from ..primitives._rules import zeros
from ..primitives.structural import broadcast_batch, moveaxis_to
from ..program import ClosedProgram, Equation, Program, Var, evaluate, per_program
from ..transforms._util import as_value
from ..transforms.batching import BatchTrace, BatchTracer, rule_axis_name
from ..transforms.custom import pullback_floats
from ..transforms.jvp import jvp
from .staging import stage


def dependent(program, in_mask, floats_only=False):
    """Which outputs depend on the inputs flagged in in_mask. With floats_only, only
    through floating-point values: where a tangent can reach."""
    def counts(v):
        return not floats_only or dtype_kind(v.aval.dtype) in "fc"
    reached = {v for v, m in zip(program.invars, in_mask) if m and counts(v)}
    for e in program.eqns:
        if any(isinstance(a, Var) and a in reached for a in e.inputs):
            reached.update(o for o in e.outputs if counts(o))
    return tuple(isinstance(a, Var) and a in reached for a in program.outputs)


@per_program
def jvp_program(program, in_mask, out_mask):
    """The staged jvp: (inputs..., tangents of the in_mask inputs) ->
    (outputs..., tangents of the out_mask outputs)."""
    avals = program.in_avals
    n, at = len(avals), [i for i, m in enumerate(in_mask) if m]

    def fun(*args):
        primals, tangents = list(args[:n]), tuple(args[n:])

        def on_perturbed(*xs):
            full = list(primals)
            for i, x in zip(at, xs):
                full[i] = x
            return evaluate(program, full)
        outs, t_outs = jvp(on_perturbed, tuple(primals[i] for i in at), tangents)
        return list(outs) + [t for t, m in zip(t_outs, out_mask) if m]
    return stage(fun, avals + [avals[i] for i in at])


@per_program
def vjp_program(program, ct_mask):
    """The staged vjp: (inputs..., cotangents of the ct_mask outputs) -> cotangents of
    the float inputs. The other outputs' cotangents are zero."""
    avals, out_avals = program.in_avals, program.out_avals
    n = len(avals)

    def fun(*args):
        given = iter(args[n:])
        cts = [next(given) if m else zeros(a.shape, a.dtype) for m, a in zip(ct_mask, out_avals)]
        in_cts = pullback_floats(lambda xs: evaluate(replayed(program), xs), list(args[:n]),
                                 cts)
        return [c for c in in_cts if c is not None]
    return stage(fun, avals + [a for a, m in zip(out_avals, ct_mask) if m])


def replayed(program):
    """The program as a vjp runs it again for the values its backward pass needs: the
    effects with no outputs (debug printing, host callbacks) left out, here and in the
    programs its equations hold, since they were seen when the program itself ran."""
    return _replayed(program) if program.has_effects else program


@per_program
def _replayed(program):
    eqns = []
    for e in program.eqns:
        if e.prim.effect and not e.outputs:
            continue
        params = {k: _replayed_param(v) for k, v in e.params.items()}
        changed = any(params[k] is not v for k, v in e.params.items())
        eqns.append(Equation(e.prim, e.inputs, e.outputs, params) if changed else e)
    return Program(program.invars, eqns, program.outputs)


def _replayed_param(value):
    if isinstance(value, Program):
        return replayed(value)
    if isinstance(value, ClosedProgram):
        inner = replayed(value.program)
        return value if inner is value.program else ClosedProgram(inner, value.consts)
    if isinstance(value, tuple):
        new = tuple(_replayed_param(v) for v in value)
        return value if all(a is b for a, b in zip(new, value)) else new
    return value


def _batch_traced(program, args, in_batched, size):
    """Evaluate program, in the current interpreter, on args with a leading batch axis
    where in_batched: [(output, whether it is batched)], batched ones along axis 0."""
    trace = BatchTrace(current_trace(), size)
    xs = [BatchTracer(trace, x, 0) if b else x for x, b in zip(args, in_batched)]
    try:
        with use_trace(trace):
            outs = evaluate(program, xs)
    finally:
        trace.alive = False
    return [(moveaxis_to(o.value, o.batch_dim, 0), True)
            if type(o) is BatchTracer and o._trace is trace else (o, False) for o in outs]


def vmapped(program, args, in_batched, out_batched, size):
    """_batch_traced with the outputs batched exactly where out_batched says (it must
    include every output the batched inputs reach)."""
    result = []
    for (o, batched), wanted in zip(_batch_traced(program, args, in_batched, size),
                                    out_batched):
        assert wanted or not batched, "an output batched against the dataflow analysis"
        result.append(broadcast_batch(as_value(o, "vmap output"), size)
                      if wanted and not batched else o)
    return result


def batched_program(program, in_batched, out_batched, size):
    """The staged vmap: inputs with a leading batch axis of `size` where in_batched,
    outputs with one where out_batched (which must include every output the batched
    inputs reach: see `dependent`)."""
    # The vmap's axis name is part of the key: a collective over that name becomes a
    # reduction over the batch, over another name it stays a collective.
    return _batched_program(program, in_batched, out_batched, size, rule_axis_name())


@per_program
def _batched_program(program, in_batched, out_batched, size, axis_name):
    avals = [ShapedArray((size,) + a.shape, a.dtype) if b else a
             for a, b in zip(program.in_avals, in_batched)]
    return stage(lambda *xs: vmapped(program, xs, in_batched, out_batched, size), avals)


def batched_program_as_traced(program, in_batched, size):
    """The staged vmap with each output batched only where tracing finds it batched
    (finer than `dependent`, which sees a multi-output equation as one): returns the
    program and which outputs have a batch axis (at 0)."""
    return _batched_program_as_traced(program, in_batched, size, rule_axis_name())


@per_program
def _batched_program_as_traced(program, in_batched, size, axis_name):
    avals = [ShapedArray((size,) + a.shape, a.dtype) if b else a
             for a, b in zip(program.in_avals, in_batched)]
    found = []

    def fun(*xs):
        pairs = _batch_traced(program, xs, in_batched, size)
        found[:] = [b for _, b in pairs]
        return [o for o, _ in pairs]
    closed = stage(fun, avals)
    return closed, tuple(found)
