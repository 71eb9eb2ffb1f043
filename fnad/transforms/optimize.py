"""Program clean-up before lowering: algebraic simplification of what autodiff
leaves behind, constant folding, common-subexpression and dead-code elimination.

Each pass maps a ClosedProgram to an equivalent one; `optimize` runs them in order.
"""
import re

import numpy as np

from ..array import Array
from ..abstract import ShapedArray, broadcast_shapes
from ..program import ClosedProgram, Program, Literal, Var, Equation
from ..primitives.elementwise import add_p
from ..primitives.shape import concatenate_p, pad_p
from ..primitives.structural import broadcast_in_dim_p

# Constants folded into the program as new inputs when the result is this small or
# smaller (elements); bigger results stay as computations.
FOLD_LIMIT = 1 << 16


def optimize(closed):
    closed = fold_constants(closed)
    closed = inline_scalar_broadcasts(closed)
    closed = simplify(closed)
    closed = eliminate_common_subexpressions(closed)
    closed = eliminate_dead_code(closed)
    closed = sums_of_pads_as_concatenations(closed)
    closed = eliminate_dead_code(closed)
    closed = combine_independent_calls(closed)
    # the recomputed copies leave their originals dead where no one else reads them
    return eliminate_dead_code(recompute_cheap_elementwise(closed))


def _substitute(closed, eqns, replace, extra_consts=()):
    """Rebuild closed with new equations, where replace maps old atoms to new ones."""
    def r(a):
        while not isinstance(a, Literal) and a in replace:
            a = replace[a]
        return a
    program = closed.program
    new_eqns = [Equation(e.prim, [r(a) for a in e.inputs], e.outputs, e.params) for e in eqns]
    n_old = len(closed.consts)
    extra_vars = [v for v, _ in extra_consts]
    invars = program.invars[:n_old] + extra_vars + program.invars[n_old:]
    out = Program(invars, new_eqns, [r(a) for a in program.outputs])
    return ClosedProgram(out, list(closed.consts) + [c for _, c in extra_consts])


# --------------------------------------------------------------------------- folding

def fold_constants(closed):
    program = closed.program
    known = {}
    for v, c in zip(program.invars, closed.consts):
        # Only host values fold: a constant on another device stays where it is.
        if type(c) is Array or isinstance(c, (np.ndarray, np.generic)):
            known[v] = c._value if type(c) is Array else np.asarray(c)
    eqns, replace, extra = [], {}, []

    def value(a):
        return a.value if isinstance(a, Literal) else known.get(replace.get(a, a))

    for e in program.eqns:
        vals = [value(a) for a in e.inputs]
        if e.inputs and all(v is not None for v in vals) and _foldable(e) \
                and not e.has_effect:
            outs = e.prim.impl(*vals, **e.params)
            outs = outs if e.prim.multiple_results else [outs]
            # A broadcast stays an index map: folding it would only inflate a constant.
            limit = FOLD_LIMIT if e.prim.index_map is None else \
                max(max(np.size(v) for v in vals), 1)
            if all(np.size(o) <= limit for o in outs):
                for var, o in zip(e.outputs, outs):
                    o = np.asarray(o)
                    if o.ndim == 0:
                        replace[var] = Literal(o)
                    else:
                        new = Var(var.aval)
                        replace[var] = new
                        known[new] = o
                        extra.append((new, Array(o)))
                continue
        eqns.append(e)
    return _substitute(closed, eqns, replace, extra) if replace else closed


def _foldable(e):
    """Equations that call programs (jit, custom rules, control flow) are left alone:
    folding would run them, loops and all, at compile time."""
    return not any(_holds_program(v) for v in e.params.values())


def _holds_program(value):
    if isinstance(value, (tuple, list)):
        return any(_holds_program(v) for v in value)
    return isinstance(value, (Program, ClosedProgram))


# --------------------------------------------------------------------------- broadcasts

def inline_scalar_broadcasts(closed):
    """A scalar literal broadcast to an array and consumed only by elementwise
    primitives (which broadcast like numpy) is replaced by the literal itself, when
    that leaves every consumer's result shape unchanged. Autodiff produces these
    for the unit cotangent of a reduction."""
    program = closed.program
    users = {}
    for e in program.eqns:
        for a in e.inputs:
            if not isinstance(a, Literal):
                users.setdefault(a, []).append(e)
    outputs = {a for a in program.outputs if not isinstance(a, Literal)}
    replace = {}
    for e in program.eqns:
        if e.prim.index_map is None or not isinstance(e.inputs[0], Literal) \
                or e.inputs[0].value.ndim != 0:
            continue
        out = e.outputs[0]
        if out in outputs or not all(_keeps_shape(u, out) for u in users.get(out, ())):
            continue
        replace[out] = e.inputs[0]
    if not replace:
        return closed
    eqns = [e for e in program.eqns if not (e.outputs and e.outputs[0] in replace)]
    return _substitute(closed, eqns, replace)


def _keeps_shape(e, scalar_var):
    if e.prim.scalar is None:
        return False
    others = [tuple(a.aval.shape) for a in e.inputs if a is not scalar_var]
    return broadcast_shapes(e.prim.name, (), *others) == tuple(e.outputs[0].aval.shape)


# --------------------------------------------------------------------------- simplify

def simplify(closed):
    """Apply each primitive's own `simplify` rule (x + 0 -> x, transpose of transpose ->
    one transpose, ...: the algebra autodiff leaves behind). A rule gets the equation
    and the producer of each var, and returns an atom that replaces the output, a
    replacement equation, or None."""
    program = closed.program
    producer = {}
    eqns, replace = [], {}

    def r(a):
        while not isinstance(a, Literal) and a in replace:
            a = replace[a]
        return a

    for e in program.eqns:
        e = Equation(e.prim, [r(a) for a in e.inputs], e.outputs, e.params)
        rule = e.prim.simplify
        result = rule(e, producer.get) if rule is not None else None
        if isinstance(result, (Var, Literal)):
            replace[e.outputs[0]] = result
            continue
        if result is not None:
            e = result
        for o in e.outputs:
            producer[o] = e
        eqns.append(e)
    return _substitute(closed, eqns, replace) if replace or eqns != program.eqns else closed


# --------------------------------------------------------------------------- pad sums

def sums_of_pads_as_concatenations(closed):
    """add(pad(x), pad(y)), both padded with zeros along one axis into disjoint
    windows, becomes one concatenate of x and y (zeros in any gap, padded once at the
    ends if they leave some uncovered). Reverse mode writes exactly this for the
    cotangent of an array cut into slices (q, k, v from one projection): each slice's
    cotangent padded to full size, then summed. Chains of adds collapse into one
    concatenate, pieces taken from the concatenate made for the inner add.

    The numbers stay those of the sum: each float piece is written as piece + 0.0
    (what the sum computed there: the other pads' zeros, turning -0.0 into +0.0),
    and the gaps and ends are +0.0 + +0.0."""
    program = closed.program
    uses = {}
    for e in program.eqns:
        for a in e.inputs:
            if not isinstance(a, Literal):
                uses[a] = uses.get(a, 0) + 1
    for a in program.outputs:
        if not isinstance(a, Literal):
            uses[a] = uses.get(a, 0) + 1
    producer, canonical, eqns, changed = {}, set(), [], False
    for e in program.eqns:
        new = _pad_sum(e, producer, uses, canonical) if e.prim is add_p else None
        if new is not None:
            changed = True
        for n in new or [e]:
            for o in n.outputs:
                producer[o] = n
            eqns.append(n)
    if not changed:
        return closed
    return ClosedProgram(Program(program.invars, eqns, program.outputs), closed.consts)


def _zero_pad_window(a, producer, uses):
    """(input, axis, start, stop) when `a` is used once and is a zero-valued pad along a
    single axis without interior padding, else None."""
    p = producer.get(a)
    if p is None or p.prim is not pad_p or uses.get(a, 0) != 1:
        return None
    value = p.inputs[1]
    if not isinstance(value, Literal) or value.value != 0 or np.signbit(value.value):
        return None
    padded = [d for d, (lo, hi, interior) in enumerate(p.params["padding_config"])
              if (lo, hi, interior) != (0, 0, 0)]
    if len(padded) != 1:
        return None
    d = padded[0]
    lo, hi, interior = p.params["padding_config"][d]
    if interior or lo < 0 or hi < 0:
        return None
    return p.inputs[0], d, lo, lo + p.inputs[0].aval.shape[d]


def _pad_sum(e, producer, uses, canonical):
    """The equations replacing add e by a concatenate (see above), or None."""
    out = e.outputs[0]
    if any(isinstance(a, Literal) or a.aval.shape != out.aval.shape for a in e.inputs):
        return None
    windows = [_zero_pad_window(a, producer, uses) for a in e.inputs]
    if None in windows or windows[0][1] != windows[1][1]:
        return None
    windows.sort(key=lambda w: w[2])
    (_, d, _, stop0), (_, _, start1, _) = windows
    if stop0 > start1:          # overlapping windows really add
        return None
    new, pieces = [], []
    float_kind = np.dtype(out.aval.dtype).kind in "fc"

    def emit(prim, inputs, **params):
        var = Var(prim.abstract_eval(*[a.aval for a in inputs], **params))
        new.append(Equation(prim, list(inputs), [var], params))
        return var

    zero = Literal(np.zeros((), out.aval.dtype))
    for k, (x, _, start, stop) in enumerate(windows):
        if k and start > windows[k - 1][3]:         # zeros between the two windows
            shape = list(out.aval.shape)
            shape[d] = start - windows[k - 1][3]
            pieces.append(emit(broadcast_in_dim_p, [zero], shape=tuple(shape),
                               broadcast_dimensions=()))
        inner = producer.get(x)
        if inner is not None and inner.prim is concatenate_p and x in canonical \
                and inner.params["dimension"] == d:
            pieces.extend(inner.inputs)     # already written as piece + 0.0
        else:
            pieces.append(emit(add_p, [x, zero]) if float_kind else x)
    start, stop = windows[0][2], windows[1][3]
    n = out.aval.shape[d]
    whole = (start, n - stop) == (0, 0)
    joined = out if whole else Var(ShapedArray(
        [stop - start if i == d else s for i, s in enumerate(out.aval.shape)], out.aval.dtype))
    new.append(Equation(concatenate_p, pieces, [joined], {"dimension": d}))
    canonical.add(joined)
    if not whole:
        config = tuple((start, n - stop, 0) if i == d else (0, 0, 0)
                       for i in range(out.aval.ndim))
        new.append(Equation(pad_p, [joined, zero], [out], {"padding_config": config}))
        canonical.add(out)
    return new


# --------------------------------------------------------------------------- recompute

# A value recomputed where it is used again is at most this many arithmetic steps away
# from values that exist anyway.
RECOMPUTE_DEPTH = 2
# A scalar expression calling a function (np.tanh(...), kernels.f(...)) is not cheap.
_CALLS = re.compile(r"[\w\]]\(")


def recompute_cheap_elementwise(closed):
    """Values a few arithmetic steps (+, -, *, /, select) from others, used again after
    a non-elementwise equation (a dot_general, a reduction's consumer...), are
    recomputed there instead of kept: the fused loop that made them then keeps them in
    registers, and the later loop reads the fewer values they came from. Reverse mode
    needs this: the backward pass of x -> 0.5 * x * (1 + tanh(c * (x + a * x**3)))
    reads six intermediates of the forward pass; recomputed, it reads x and the tanh.

    Fusion groups are runs of elementwise equations in program order, so the copies
    go just before the equation using them, and a value's "region" counts the
    non-elementwise equations before it. The copies compute the same operations on
    the same values: the numbers are the same to the bit."""
    program = closed.program
    producer, region, k = {}, {}, 0
    for e in program.eqns:
        if not _elementwise(e):
            k += 1
        for o in e.outputs:
            producer[o], region[o] = e, k
    outputs = {a for a in program.outputs if not isinstance(a, Literal)}
    # Values that exist as arrays whatever this pass does: inputs, results of library
    # calls, and elementwise values used after their region that are not cheap. A copy
    # may read only these, so no value is kept that was not kept before.
    kept = set(program.invars) | outputs
    k = 0
    for e in program.eqns:
        if not _elementwise(e):
            k += 1
            kept.update(e.outputs)
        kept.update(a for a in e.inputs if not isinstance(a, Literal) and a in producer
                    and region[a] < k and not _cheap(producer[a]))

    def anchor(a, here, depth):
        p = producer.get(a)
        return a in outputs or p is None or region[a] >= here or depth > RECOMPUTE_DEPTH \
            or not _cheap(p)

    def copyable(a, here, depth):
        if isinstance(a, Literal):
            return True
        if anchor(a, here, depth):
            return a in kept
        return all(copyable(x, here, depth + 1) for x in producer[a].inputs)

    eqns, changed, k = [], False, 0
    copies = {}             # (var, region) -> its copy there

    def copy(a, here, depth):
        if isinstance(a, Literal) or anchor(a, here, depth):
            return a
        if (a, here) not in copies:
            p = producer[a]
            var = Var(a.aval)
            inputs = [copy(x, here, depth + 1) for x in p.inputs]
            eqns.append(Equation(p.prim, inputs, [var], p.params))
            copies[(a, here)] = var
        return copies[(a, here)]

    for e in program.eqns:
        if not _elementwise(e):
            k += 1
        else:
            # (a copy of another shape would split the consumer's fusion group)
            shape = e.outputs[0].aval.shape
            inputs = [a if isinstance(a, Literal) or a.aval.shape != shape
                      or anchor(a, k, 1) or not copyable(a, k, 1) else copy(a, k, 1)
                      for a in e.inputs]
            if any(x is not a for x, a in zip(inputs, e.inputs)):
                e = Equation(e.prim, inputs, e.outputs, e.params)
                changed = True
        eqns.append(e)
    if not changed:
        return closed
    return ClosedProgram(Program(program.invars, eqns, program.outputs), closed.consts)


def _elementwise(e):
    return e.prim.scalar is not None and e.prim.reduction is None and len(e.outputs) == 1


def _cheap(e):
    return _elementwise(e) and not e.has_effect and not _CALLS.search(e.prim.scalar) \
        and all(a.aval.shape == e.outputs[0].aval.shape for a in e.inputs
                if not isinstance(a, Literal))


# --------------------------------------------------------------------------- CSE, DCE

def _atom_key(a):
    return ("lit",) + a.key() if isinstance(a, Literal) else ("var", id(a))


def eliminate_common_subexpressions(closed):
    program = closed.program
    seen, eqns, replace = {}, [], {}

    def r(a):
        return a if isinstance(a, Literal) else replace.get(a, a)

    for e in program.eqns:
        inputs = [r(a) for a in e.inputs]
        if e.has_effect:
            eqns.append(Equation(e.prim, inputs, e.outputs, e.params))
            continue
        try:
            key = (e.prim.name, tuple(_atom_key(a) for a in inputs),
                   tuple(sorted(e.params.items(), key=lambda kv: kv[0])))
            hash(key)
        except TypeError:
            key = None
        previous = seen.get(key) if key is not None else None
        if previous is not None:
            for old, new in zip(e.outputs, previous.outputs):
                replace[old] = new
            continue
        e = Equation(e.prim, inputs, e.outputs, e.params)
        if key is not None:
            seen[key] = e
        eqns.append(e)
    return _substitute(closed, eqns, replace) if replace else closed


def eliminate_dead_code(closed):
    program = closed.program
    live = {a for a in program.outputs if not isinstance(a, Literal)}
    kept = []
    for e in reversed(program.eqns):
        if e.has_effect or any(o in live for o in e.outputs):
            kept.append(e)
            live.update(a for a in e.inputs if not isinstance(a, Literal))
    kept.reverse()
    if len(kept) == len(program.eqns):
        return closed
    return ClosedProgram(Program(program.invars, kept, program.outputs), closed.consts)


# --------------------------------------------------------------------------- combining

def combine_independent_calls(closed):
    """Equations of one combinable primitive with equal params become one equation
    over all their operands when nothing between them reads an earlier one's outputs
    and no other effect runs between them: `tree_map(lambda g: pmean(g, "i"), grads)`
    makes one all-reduce, not one per leaf. The combined call runs where the last of
    them ran; the equations in between do not depend on it."""
    program = closed.program
    eqns, group, pending = [], [], set()

    def key(e):
        try:
            k = (e.prim, tuple(sorted(e.params.items(), key=lambda kv: kv[0])))
            hash(k)
            return k
        except TypeError:
            return None

    def flush():
        if len(group) == 1:
            eqns.append(group[0])
        elif group:
            first = group[0]
            eqns.append(Equation(first.prim, [a for e in group for a in e.inputs],
                                 [o for e in group for o in e.outputs], first.params))
        group.clear()
        pending.clear()

    for e in program.eqns:
        reads_group = any(not isinstance(a, Literal) and a in pending for a in e.inputs)
        k = key(e) if e.prim.combinable else None
        if k is None or reads_group or not group or k != key(group[0]):
            if reads_group or e.has_effect or k is not None:
                flush()
            if k is None:
                eqns.append(e)
                continue
        group.append(e)
        pending.update(e.outputs)
    flush()
    if len(eqns) == len(program.eqns):
        return closed
    return ClosedProgram(Program(program.invars, eqns, program.outputs), closed.consts)
