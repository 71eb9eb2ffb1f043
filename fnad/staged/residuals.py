"""A loop body's reverse mode split in two: a forward program that also emits the
values its derivative needs (the residuals), and a backward program that reads them.

A scan differentiated this way runs two loops, as JAX's does: the forward scan
stacks each step's residuals as extra per-step outputs, and the reverse scan runs
only the transposed (linear) part of the body. Without the split the reverse pass
must re-run the body forward to rebuild its intermediates, and a scan runs three
loops.

The split is made on the staged vjp of the body: everything staged while the vjp
runs forward is the forward program, everything staged by the pullback is the
backward program. Splitting at that boundary rather than by dataflow (what does not
depend on a cotangent) keeps checkpoint's trade: a checkpointed body recomputes its
forward inside its pullback, and that recomputation stays in the backward program,
so only the checkpoint's inputs are kept per step.

Residuals that are the body's constants or scanned inputs are not stacked (the
backward loop is given them as they are), and values computed from constants alone
(a transposed weight, a broadcast bias) are recomputed in the backward program
rather than stacked once per step.
"""
from ..dtypes import kind_of as dtype_kind
from ..abstract import ShapedArray
from ..core import current_trace
from ..primitives._rules import zeros
from ..primitives.elementwise import add_p
from ..program import ClosedProgram, Program, Var, evaluate, per_program
from ..transforms.optimize import optimize
from ..transforms.vjp import vjp
from .staging import stage, stage_flat


class Split:
    """The two halves of a body's vjp (see `split_vjp`). The forward program takes
    (fwd.consts | body inputs) and returns (body outputs | per-step residuals); the
    backward program takes (bwd.consts | consts, ct_carry, acc | xs, stacked,
    ct_ys) as a reverse scan's (constants | carry | scanned) and returns
    (ct_carry_in, acc + ct_consts | ct_xs)."""
    __slots__ = ("fwd", "bwd", "stacked_avals", "ct_carry_at", "ct_const_at", "ct_x_at")

    def __init__(self, fwd, bwd, stacked_avals, ct_carry_at, ct_const_at, ct_x_at):
        self.fwd, self.bwd, self.stacked_avals = fwd, bwd, stacked_avals
        self.ct_carry_at, self.ct_const_at, self.ct_x_at = ct_carry_at, ct_const_at, ct_x_at


def _is_float(aval):
    return dtype_kind(aval.dtype) in "fc"


@per_program
def split_vjp(body, num_consts, num_carry, wanted):
    """Split the vjp of a scan body (inputs consts | carry | xs, outputs carry | ys).
    `wanted[i]` says whether input i (a constant or scanned input) needs its
    cotangent; every float carry gets one, since it carries the others' through the
    loop."""
    nC, nc = num_consts, num_carry
    avals, out_avals = body.in_avals, body.out_avals
    n_in = len(avals)
    ct_carry_at = tuple(i for i in range(nC, nC + nc) if _is_float(avals[i]))
    ct_const_at = tuple(i for i in range(nC) if wanted[i] and _is_float(avals[i]))
    ct_x_at = tuple(i for i in range(nC + nc, n_in) if wanted[i] and _is_float(avals[i]))
    diff_at = ct_const_at + ct_carry_at + ct_x_at
    ct_out_at = tuple(i for i, a in enumerate(out_avals) if _is_float(a))
    boundary = []

    def both(*args):
        point, given = list(args[:n_in]), iter(args[n_in:])

        def on_diff(*xs):
            full = list(point)
            for i, x in zip(diff_at, xs):
                full[i] = x
            return evaluate(body, full)
        outs, pullback = vjp(on_diff, *[point[i] for i in diff_at])
        boundary.append(len(current_trace().eqns))     # forward above, pullback below
        cts = [next(given) if _is_float(a) else zeros(a.shape, a.dtype) for a in out_avals]
        return list(outs) + list(pullback(cts))
    staged = stage_flat(both, list(avals) + [out_avals[i] for i in ct_out_at])
    program, k = staged.program, len(staged.consts)
    fwd, bwd, stacked = _cut(program, k, boundary[0], nC, nc, n_in, len(out_avals),
                             len(ct_out_at))
    fwd = optimize(ClosedProgram(fwd, list(staged.consts)))
    # The backward program as the reverse scan wants it: the cotangent accumulators
    # of the constants ride in its carry.
    n_st = len(stacked)
    n_ct_carry, n_acc = len(ct_carry_at), len(ct_const_at)
    n_ct_ys = len(ct_out_at) - sum(1 for i in ct_out_at if i < nc)
    carry_cts_at = [j for j, i in enumerate(ct_out_at) if i < nc]

    def backward(*args):
        consts, ct_carry, acc, xs, res, ct_ys = _take(args, nC, n_ct_carry, n_acc,
                                                      n_in - nC - nc, n_st)
        cts = iter(ct_ys)
        carry_ct = dict(zip(carry_cts_at, ct_carry))
        all_cts = [carry_ct[j] if j in carry_ct else next(cts) for j in range(len(ct_out_at))]
        in_cts = evaluate(bwd, list(staged.consts) + consts + xs + res + all_cts)
        by_input = dict(zip(diff_at, in_cts))
        return ([by_input[i] for i in ct_carry_at]
                + [add_p.bind(a, by_input[i]) for a, i in zip(acc, ct_const_at)]
                + [by_input[i] for i in ct_x_at])
    bwd_avals = (list(avals[:nC]) + [avals[i] for i in ct_carry_at]
                 + [avals[i] for i in ct_const_at] + list(avals[nC + nc:])
                 + [v.aval for v in stacked] + [out_avals[i] for i in ct_out_at if i >= nc])
    assert n_ct_ys == len(ct_out_at) - len(carry_cts_at)
    return Split(fwd, stage(backward, bwd_avals), tuple(v.aval for v in stacked),
                 ct_carry_at, ct_const_at, ct_x_at)


def _take(seq, *sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(seq[start:start + n]))
        start += n
    out.append(list(seq[start:]))
    return out


def _cut(program, k, boundary, nC, nc, n_in, n_out, n_cts):
    """(forward Program, backward Program, stacked residual vars) from the staged
    vjp `program`: inputs (k captured | body inputs | output cotangents), outputs
    (body outputs | input cotangents), its first `boundary` equations the forward."""
    invars = program.invars
    captured, consts = invars[:k], invars[k:k + nC]
    xs, cts = invars[k + nC + nc:k + n_in], invars[k + n_in:]
    forward, backward = program.eqns[:boundary], program.eqns[boundary:]
    # Loop-invariant forward values: computed from captured values and constants only.
    invariant = set(captured) | set(consts)
    hoisted = []
    for e in forward:
        if all(not isinstance(a, Var) or a in invariant for a in e.inputs) \
                and not e.has_effect:
            invariant.update(e.outputs)
            hoisted.append(e)
    defined_fwd = set(invars[:k + n_in])
    for e in forward:
        defined_fwd.update(e.outputs)
    needed = []
    seen = set()

    def need(a):
        if isinstance(a, Var) and a in defined_fwd and a not in seen:
            seen.add(a)
            needed.append(a)
    for e in backward:
        for a in e.inputs:
            need(a)
    for a in program.outputs[n_out:]:
        need(a)
    given = set(captured) | set(consts) | set(xs)
    recomputed = [v for v in needed if v in invariant and v not in given]
    stacked = [v for v in needed if v not in invariant and v not in given]
    fwd = Program(invars[:k + n_in], forward, list(program.outputs[:n_out]) + stacked)
    # The invariant values the backward program needs, with what they are made of.
    keep = set(recomputed)
    prelude = []
    for e in reversed(hoisted):
        if any(o in keep for o in e.outputs):
            prelude.append(e)
            keep.update(a for a in e.inputs if isinstance(a, Var))
    prelude.reverse()
    bwd = Program(list(captured) + list(consts) + list(xs) + stacked + list(cts),
                  prelude + backward, list(program.outputs[n_out:]))
    assert len(cts) == n_cts
    return fwd, bwd, stacked


def stacked_avals(split, length):
    return [ShapedArray((length,) + a.shape, a.dtype) for a in split.stacked_avals]
