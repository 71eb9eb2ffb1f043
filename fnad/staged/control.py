"""Structured control flow: cond (switch is the same primitive), while and scan.

Each primitive holds the staged Programs of its branches or body in its params.
Those Programs are closed: what a branch or body captured while it was traced is an
explicit operand of the primitive (the leading `consts`), so every transform sees it.
The rules transform the nested Programs and stage the result:
  * jvp: the jvp of a body is a body over (primals, tangents), so a loop carries the
    tangents alongside the values. Which values carry a tangent is found by a
    dataflow pass over the body, iterated to a fixed point for loop carries.
  * vjp: cond runs the vjp of the branch that was taken. scan's forward stacks the
    residuals of the body's vjp, then a reverse scan runs the backward half of that
    vjp over them (fnad.staged.residuals): two loops. while_loop has no vjp, as in JAX: its trip count
    is unknown until it runs, so there is nowhere to keep the residuals.
  * batch: the body is vmapped. A batched predicate turns cond into running every
    branch and selecting, and keeps a while loop going until every example is done,
    with finished examples frozen by a select.
Their cpu kernels belong to the cpu backend (a whole loop compiled into one Numba
function where it can be); run_cond, run_while and run_scan below are the Python loops
over compiled sub-programs that any backend can fall back on.
"""
import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..backend import host_kernel
from ..core import Primitive, current_trace
from ..abstract import ShapedArray
from ..errors import DTypeError, ShapeError, GradientError
from ..program import Program, Var, per_program
from ..primitives.elementwise import select_p, eq_p, gt_p, clamp_p, convert_element_type_p
from ..primitives.reduce import reduce_max_p
from ..primitives.shape import broadcast_in_dim
from ..primitives import onnx_rules
from ..primitives._rules import batch_size, zeros
from ..primitives.structural import broadcast_batch_where, move_batch_axes, move_batch_axis
from ..transforms.custom import CustomRules
from ..transforms.vjp import VJPTrace
from .programs import batched_program, dependent, jvp_program, vjp_program, vmapped
from .residuals import split_vjp
from .staging import stage


def _describe(avals):
    return "(" + ", ".join(map(str, avals)) + ")"


def _zeros(aval):
    return zeros(aval.shape, aval.dtype)


_zeros_like = _zeros      # anything with .shape and .dtype


def _is_float(x):
    return dtype_kind(x.dtype) in "fc"


def _split(seq, *sizes):
    out, start = [], 0
    for n in sizes:
        out.append(list(seq[start:start + n]))
        start += n
    out.append(list(seq[start:]))
    return out


# --------------------------------------------------------------------------- programs

def _loop_fixed_point(body, const_mask, carry_mask, xs_mask, floats_only):
    """The carries a loop body can reach from the flagged inputs, whatever the trip
    count, and the other outputs (scan's ys) reached once those carries are."""
    carry, n = tuple(carry_mask), len(carry_mask)
    while True:
        out = dependent(body, tuple(const_mask) + carry + tuple(xs_mask), floats_only)
        grown = tuple(c or o for c, o in zip(carry, out[:n]))
        if grown == carry:
            return carry, out[n:]
        carry = grown


def _union(masks):
    return tuple(any(ms) for ms in zip(*masks))


@per_program
def _permuted(program, in_order, out_order):
    return Program([program.invars[i] for i in in_order], program.eqns,
                   [program.outputs[i] for i in out_order])


@per_program
def _ignoring(program, extra_avals):
    """program with extra trailing inputs that it does not read."""
    return Program(program.invars + [Var(a) for a in extra_avals], program.eqns,
                   program.outputs)


def join_branches(closed):
    """Branches with different captured constants as programs of one signature: all
    the constants, then the operands. Returns (constants, programs)."""
    closed = tuple(closed)
    return ([c for cp in closed for c in cp.consts],
            _joined(closed[0].program, tuple((cp.program, len(cp.consts)) for cp in closed)))


@per_program
def _joined(_first, programs):
    joined = []
    for i, (program, k) in enumerate(programs):
        invars = []
        for j, (other, n) in enumerate(programs):
            invars += program.invars[:k] if j == i else [Var(v.aval) for v in other.invars[:n]]
        joined.append(Program(invars + program.invars[k:], program.eqns,
                              program.outputs))
    return tuple(joined)


def _float_mask(xs, tangents):
    return tuple(t is not None and _is_float(x) for x, t in zip(xs, tangents))


def _instantiated(xs, tangents, mask):
    return [_zeros_like(x) if t is None else t for x, t, m in zip(xs, tangents, mask) if m]


def _masked(values, mask):
    """`values` placed where mask is set, None (a zero) elsewhere."""
    it = iter(values)
    return [next(it) if m else None for m in mask]


# --------------------------------------------------------------------------- cond

def _cond_abstract_eval(index, *operands, branches):
    if index.shape != () or dtype_kind(index.dtype) not in "iu":
        raise DTypeError(f"cond/switch: the branch index must be an integer scalar, got "
                         f"{index}")
    for i, branch in enumerate(branches):
        if list(branch.in_avals) != list(operands):
            raise ShapeError(f"cond: branch {i} takes {_describe(branch.in_avals)} but the "
                             f"operands are {_describe(operands)}")
    first = branches[0].out_avals
    for i, branch in enumerate(branches[1:], 1):
        if list(branch.out_avals) != list(first):
            raise ShapeError(f"cond: every branch must return the same shapes and dtypes; "
                             f"branch 0 returns {_describe(first)} but branch {i} returns "
                             f"{_describe(branch.out_avals)}")
    return list(first)


# The loops below run a construct from Python over its compiled sub-programs, on any
# backend: `compiled(program)` is the backend's executable, `empty` its allocator.

def run_cond(index, operands, branches, compiled):
    i = min(max(int(np.asarray(index)), 0), len(branches) - 1)
    return compiled(branches[i])(*operands)


def run_while(args, cond, body, cond_nconsts, body_nconsts, compiled):
    cond_consts, body_consts, carry = _split(args, cond_nconsts, body_nconsts)
    test, step = compiled(cond), compiled(body)
    while bool(np.asarray(test(*cond_consts, *carry)[0])):
        carry = step(*body_consts, *carry)
    return carry


def run_scan(args, body, num_consts, num_carry, length, reverse, compiled, empty):
    consts, carry, xs = _split(args, num_consts, num_carry)
    run = compiled(body)
    ys = [empty((length,) + a.shape, a.dtype) for a in body.out_avals[num_carry:]]
    for k in range(length):
        i = length - 1 - k if reverse else k
        outs = run(*consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for y, o in zip(ys, outs[num_carry:]):
            if len(o.shape):
                y[i] = o
            else:       # (a 0-d device array is no element value: write a 1-slice)
                y[i:i + 1] = o.reshape((1,))
    return carry + ys


def _cond_jvp(primals, tangents, branches):
    index, ops = primals[0], primals[1:]
    in_mask = _float_mask(ops, tangents[1:])
    if not any(in_mask):
        return cond_p.bind(*primals, branches=branches), [None] * len(branches[0].outputs)
    out_mask = _union(dependent(b, in_mask, True) for b in branches)
    consts, joined = join_branches(jvp_program(b, in_mask, out_mask) for b in branches)
    ts = [t for t, m in zip(tangents[1:], in_mask) if m]
    outs = cond_p.bind(index, *consts, *ops, *ts, branches=joined)
    m = len(branches[0].outputs)
    return outs[:m], _masked(outs[m:], out_mask)


def _cond_vjp(cts, outs, index, *ops, branches):
    float_in = [_is_float(x) for x in ops]
    if not any(float_in):
        return [None] * (1 + len(ops))
    ct_mask = tuple(_is_float(o) for o in outs)
    consts, joined = join_branches(vjp_program(b, ct_mask) for b in branches)
    given = [_zeros_like(o) if c is None else c for c, o, m in zip(cts, outs, ct_mask) if m]
    in_cts = iter(cond_p.bind(index, *consts, *ops, *given, branches=joined))
    return [None] + [next(in_cts) if f else None for f in float_in]


def _cond_batch(args, dims, branches):
    size = batch_size(args, dims)
    index, ops = args[0], move_batch_axes(args[1:], dims[1:], 0)
    in_batched = tuple(d is not None for d in dims[1:])
    if dims[0] is None:
        out_batched = _union(dependent(b, in_batched) for b in branches)
        consts, joined = join_branches(batched_program(b, in_batched, out_batched, size)
                               for b in branches)
        outs = cond_p.bind(index, *consts, *ops, branches=joined)
        return outs, [0 if b else None for b in out_batched]
    # Each example may take a different branch: run them all, then select.
    n = len(branches)
    index = move_batch_axis(index, dims[0], 0)
    index = clamp_p.bind(np.asarray(0, index.dtype), index, np.asarray(n - 1, index.dtype))
    every = [True] * len(branches[0].outputs)
    results = [vmapped(b, ops, in_batched, every, size) for b in branches]
    outs = []
    for k in range(len(every)):
        out = results[-1][k]
        for i in range(n - 2, -1, -1):
            taken = eq_p.bind(index, np.asarray(i, index.dtype))
            out = select_p.bind(broadcast_in_dim(taken, out.shape, (0,)), results[i][k], out)
        outs.append(out)
    return outs, [0] * len(outs)


# ONNX lowerings (see fnad/primitives/onnx_rules.py for the builder convention)

def _onnx_cond(b, index, *operands, branches):
    index = b.cast(index, np.int64)

    def branch(k):
        return b.graph(f"branch{k}", [], lambda sub: sub.typed(
            branches[k], sub.lower(branches[k], list(operands))))

    def chain(k):
        # Index k or below (clamped, as lax.switch) takes branch k, else the rest.
        if k == len(branches) - 1:
            return branch(k)
        return b.graph(f"switch{k}", [], lambda sub: sub.typed(branches[k], sub.op(
            "If", sub.op("LessOrEqual", index, sub.const(np.int64(k))),
            then_branch=branch(k), else_branch=chain(k + 1),
            outputs=len(branches[k].outputs), as_list=True)))

    if len(branches) == 1:
        return b.lower(branches[0], list(operands))
    return b.op("If", b.op("LessOrEqual", index, b.const(np.int64(0))),
                then_branch=branch(0), else_branch=chain(1),
                outputs=len(branches[0].outputs), as_list=True)


cond_p = Primitive("cond", abstract_eval=_cond_abstract_eval, impl=host_kernel("cond"),
                   jvp=_cond_jvp, vjp=_cond_vjp, batch=_cond_batch, multiple_results=True,
                   onnx=_onnx_cond)


# --------------------------------------------------------------------------- while

def _while_abstract_eval(*avals, cond, body, cond_nconsts, body_nconsts):
    cond_consts, body_consts, carry = _split(avals, cond_nconsts, body_nconsts)
    if list(cond.in_avals) != cond_consts + carry:
        raise ShapeError(f"while_loop: cond_fun takes {_describe(cond.in_avals)} but is "
                         f"given {_describe(cond_consts + carry)}")
    if [(a.shape, dtype_kind(a.dtype)) for a in cond.out_avals] != [((), "b")]:
        raise DTypeError(f"while_loop: cond_fun must return one boolean scalar, got "
                         f"{_describe(cond.out_avals)}")
    if list(body.in_avals) != body_consts + carry:
        raise ShapeError(f"while_loop: body_fun takes {_describe(body.in_avals)} but is "
                         f"given {_describe(body_consts + carry)}")
    if list(body.out_avals) != carry:
        raise ShapeError(f"while_loop: body_fun must return a carry of the same shapes and "
                         f"dtypes as its input: it takes {_describe(carry)} and returns "
                         f"{_describe(body.out_avals)}")
    return carry


def _while_jvp(primals, tangents, cond, body, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cond_consts, body_consts, init = _split(primals, nc, nb)
    _, t_consts, t_init = _split(tangents, nc, nb)
    const_mask = _float_mask(body_consts, t_consts)
    carry_mask, _ = _loop_fixed_point(body, const_mask, _float_mask(init, t_init), (), True)
    params = dict(cond=cond, body=body, cond_nconsts=nc, body_nconsts=nb)
    if not any(carry_mask):
        return while_p.bind(*primals, **params), [None] * len(init)
    closed = jvp_program(body, const_mask + carry_mask, carry_mask)
    # Its inputs are [its consts | consts, carry | their tangents]; while wants the
    # body's constants first, then the carry with its tangents.
    k, n, n_tc = len(closed.consts), len(init), sum(const_mask)
    order = (tuple(range(k + nb)) + tuple(range(k + nb + n, k + nb + n + n_tc))
             + tuple(range(k + nb, k + nb + n)) + tuple(range(k + nb + n + n_tc,
                                                              len(closed.program.invars))))
    new_body = _permuted(closed.program, order, tuple(range(len(closed.program.outputs))))
    t_carry_avals = tuple(a for a, m in zip(body.out_avals, carry_mask) if m)
    outs = while_p.bind(*cond_consts, *closed.consts, *body_consts,
                        *[t for t, m in zip(t_consts, const_mask) if m],
                        *init, *_instantiated(init, t_init, carry_mask),
                        cond=_ignoring(cond, t_carry_avals), body=new_body,
                        cond_nconsts=nc, body_nconsts=k + nb + n_tc)
    return outs[:n], _masked(outs[n:], carry_mask)


def _while_vjp(cts, outs, *args, **params):
    raise GradientError(
        "reverse-mode differentiation (grad, vjp, jacrev) does not work through "
        "lax.while_loop: its trip count is only known once it has run, so its residuals "
        "cannot be stored. Use lax.scan, or lax.fori_loop with static (Python int) "
        "bounds, which become a scan and are reverse-differentiable; forward mode "
        "(jvp, jacfwd) works through while_loop.")


def _while_batch(args, dims, cond, body, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    size = batch_size(args, dims)
    cond_consts, body_consts, init = _split(move_batch_axes(args, dims, 0), nc, nb)
    cc_b, bc_b, init_b = (tuple(d is not None for d in part) for part in _split(dims, nc, nb))
    carry_b, _ = _loop_fixed_point(body, bc_b, init_b, (), False)
    pred_batched = dependent(cond, cc_b + carry_b)[0]
    if pred_batched:
        carry_b = (True,) * len(init)
    init = broadcast_batch_where(init, init_b, carry_b, size)
    if not pred_batched:
        test = batched_program(cond, cc_b + carry_b, (False,), size)
        step = batched_program(body, bc_b + carry_b, carry_b, size)
        outs = while_p.bind(*test.consts, *cond_consts, *step.consts, *body_consts, *init,
                            cond=test.program, body=step.program,
                            cond_nconsts=len(test.consts) + nc,
                            body_nconsts=len(step.consts) + nb)
        return outs, [0 if b else None for b in carry_b]
    # A batched predicate: loop while any example runs; finished ones stay as they are.
    test, step = _frozen_while(cond, body, cc_b, bc_b, size)
    outs = while_p.bind(*test.consts, *cond_consts, *step.consts, *cond_consts,
                        *body_consts, *init, cond=test.program, body=step.program,
                        cond_nconsts=len(test.consts) + nc,
                        body_nconsts=len(step.consts) + nc + nb)
    return outs, [0] * len(outs)


@per_program
def _frozen_while(cond, body, cc_b, bc_b, size):
    nc, nb = len(cc_b), len(bc_b)
    every = (True,) * len(body.outputs)

    def batched(avals, mask):
        return [ShapedArray((size,) + a.shape, a.dtype) if b else a
                for a, b in zip(avals, mask)]
    cc_avals = batched(cond.in_avals[:nc], cc_b)
    bc_avals = batched(body.in_avals[:nb], bc_b)
    carry_avals = batched(body.out_avals, every)

    def running(cond_consts, carry):
        return vmapped(cond, list(cond_consts) + list(carry), cc_b + every, (True,), size)[0]

    def any_running(*args):
        pred = convert_element_type_p.bind(running(args[:nc], args[nc:]),
                                           new_dtype=np.dtype(np.int32))
        return [gt_p.bind(reduce_max_p.bind(pred, axes=(0,)), np.int32(0))]

    def step(*args):
        cond_consts, body_consts, carry = _split(args, nc, nb)
        pred = running(cond_consts, carry)
        new = vmapped(body, body_consts + carry, bc_b + every, every, size)
        return [select_p.bind(broadcast_in_dim(pred, x.shape, (0,)), y, x)
                for x, y in zip(carry, new)]
    return (stage(any_running, cc_avals + carry_avals),
            stage(step, cc_avals + bc_avals + carry_avals))


def _onnx_loop_inputs(b, carry_avals):
    it = (b.fresh("iter"), np.dtype(np.int64), ())
    keep = (b.fresh("cond"), np.dtype(np.bool_), ())
    carried = [(b.fresh("carry"), dt, dims) for dt, dims in carry_avals]
    return it, keep, carried


def _onnx_while(b, *args, cond, body, cond_nconsts, body_nconsts):
    cc, bc = list(args[:cond_nconsts]), list(args[cond_nconsts:cond_nconsts + body_nconsts])
    carry = list(args[cond_nconsts + body_nconsts:])
    first = b.lower(cond, cc + carry)[0]
    kinds = [(b.dtype(c), b.dims_of(c)) for c in carry]
    it, keep, carried = _onnx_loop_inputs(b, kinds)

    def build(sub):
        new = sub.lower(body, bc + [n for n, _, _ in carried])
        go = sub.lower(cond, cc + new)[0]
        return [(go, np.dtype(np.bool_), ())] + sub.typed(body, new)

    graph = b.graph("while_body", [it, keep] + carried, build)
    return b.op("Loop", None, first, *carry, body=graph, outputs=len(carry), as_list=True)


while_p = Primitive("while", abstract_eval=_while_abstract_eval, impl=host_kernel("while"),
                    jvp=_while_jvp, vjp=_while_vjp, batch=_while_batch,
                    multiple_results=True, onnx=_onnx_while)


# --------------------------------------------------------------------------- scan

def _scan_abstract_eval(*avals, body, num_consts, num_carry, length, reverse):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise ShapeError(f"scan: every scanned-over operand needs a leading axis of "
                             f"length {length}, got {_describe(xs)}")
    x_avals = [ShapedArray(x.shape[1:], x.dtype) for x in xs]
    if list(body.in_avals) != consts + carry + x_avals:
        raise ShapeError(f"scan: the body takes {_describe(body.in_avals)} but is given "
                         f"{_describe(consts + carry + x_avals)}")
    carry_out, ys = _split(body.out_avals, num_carry)
    if carry_out != carry:
        raise ShapeError(f"scan: the body must return a carry of the same shapes and dtypes "
                         f"as its input: it takes {_describe(carry)} and returns "
                         f"{_describe(carry_out)}")
    return carry + [ShapedArray((length,) + y.shape, y.dtype) for y in ys]


def _scan_jvp(primals, tangents, body, num_consts, num_carry, length, reverse):
    nC, nc = num_consts, num_carry
    consts, init, xs = _split(primals, nC, nc)
    t_consts, t_init, t_xs = _split(tangents, nC, nc)
    c_mask, x_mask = _float_mask(consts, t_consts), _float_mask(xs, t_xs)
    carry_mask, ys_mask = _loop_fixed_point(body, c_mask, _float_mask(init, t_init), x_mask,
                                            True)
    params = dict(num_consts=nC, num_carry=nc, length=length, reverse=reverse)
    if not any(carry_mask) and not any(ys_mask):
        return scan_p.bind(*primals, body=body, **params), [None] * len(body.outputs)
    closed = jvp_program(body, c_mask + carry_mask + x_mask, carry_mask + ys_mask)
    # Its inputs are [its consts | consts, carry, xs | their tangents] and its outputs
    # [carry, ys | their tangents]; scan wants each group next to its tangents.
    k, nx, ny = len(closed.consts), len(xs), len(body.outputs) - nc
    ntC, ntc, ntx, nty = sum(c_mask), sum(carry_mask), sum(x_mask), sum(ys_mask)
    p = k + nC + nc + nx                                       # first tangent input
    r = lambda start, n: tuple(range(start, start + n))        # noqa: E731
    in_order = (r(0, k + nC) + r(p, ntC) + r(k + nC, nc) + r(p + ntC, ntc)
                + r(k + nC + nc, nx) + r(p + ntC + ntc, ntx))
    out_order = r(0, nc) + r(nc + ny, ntc) + r(nc, ny) + r(nc + ny + ntc, nty)
    outs = scan_p.bind(*closed.consts, *consts, *[t for t, m in zip(t_consts, c_mask) if m],
                       *init, *_instantiated(init, t_init, carry_mask),
                       *xs, *[t for t, m in zip(t_xs, x_mask) if m],
                       body=_permuted(closed.program, in_order, out_order),
                       num_consts=k + nC + ntC, num_carry=nc + ntc, length=length,
                       reverse=reverse)
    carry, t_carry, ys, t_ys = _split(outs, nc, ntc, ny)
    return carry + ys, _masked(t_carry, carry_mask) + _masked(t_ys, ys_mask)


def _scan_vjp(cts, outs, *args, body, num_consts, num_carry, length, reverse):
    """The vjp slot, for a scan whose forward ran without keeping residuals: run it
    forward again keeping them, then the reverse scan. A scan bound under reverse
    mode does not come here (see ScanPrimitive.bind): its forward keeps them."""
    wanted = tuple(_is_float(a) for a in args)
    if not any(wanted):
        return [None] * len(args)
    params = dict(body=body, num_consts=num_consts, num_carry=num_carry, length=length,
                  reverse=reverse)
    _, residuals = _scan_forward(args, wanted, params)
    return _scan_backward(residuals, cts, wanted, params)


def _scan_forward(args, wanted, params):
    """The forward scan that also stacks each step's residuals (fnad.staged.residuals):
    (the scan's outputs, the residuals _scan_backward takes)."""
    body, nC, nc = params["body"], params["num_consts"], params["num_carry"]
    split = split_vjp(body, nC, nc, wanted)
    outs = scan_p.bind(*split.fwd.consts, *args, body=split.fwd.program,
                       num_consts=len(split.fwd.consts) + nC, num_carry=nc,
                       length=params["length"], reverse=params["reverse"])
    n_out = len(body.outputs)
    consts, _, xs = _split(args, nC, nc)
    return outs[:n_out], consts + xs + outs[n_out:]


def _scan_backward(residuals, cts, wanted, params):
    """One cotangent per scan operand (None where not wanted): a reverse scan over the
    backward half of the body's vjp, carrying the carry's cotangent and accumulating
    the constants'."""
    body, nC, nc = params["body"], params["num_consts"], params["num_carry"]
    split = split_vjp(body, nC, nc, wanted)
    n_x = len(body.invars) - nC - nc
    consts, xs, stacked = _split(residuals, nC, n_x)
    out_avals = body.out_avals
    ct_out = [_zeros(a) if c is None else c for c, a in zip(cts, out_avals)]
    ct_carry = [ct_out[i - nC] for i in split.ct_carry_at]
    ct_ys = [c for c, a in zip(ct_out[nc:], out_avals[nc:]) if _is_float(a)]
    acc = [_zeros(body.invars[i].aval) for i in split.ct_const_at]
    result = scan_p.bind(*split.bwd.consts, *consts, *ct_carry, *acc, *xs, *stacked, *ct_ys,
                         body=split.bwd.program, num_consts=len(split.bwd.consts) + nC,
                         num_carry=len(ct_carry) + len(acc), length=params["length"],
                         reverse=not params["reverse"])
    ct_init, ct_consts, ct_xs = _split(result, len(ct_carry), len(acc))
    found = dict(zip(split.ct_carry_at + split.ct_const_at + split.ct_x_at,
                     ct_init + ct_consts + ct_xs))
    return [found.get(i) for i in range(len(body.invars))]


def _two_pass_rules(params, wanted):
    """Reverse mode for one scan as a forward that keeps residuals and a backward that
    reads them (the tape's custom-rule step)."""
    def fwd(primals):
        return _scan_forward(primals, wanted, params)

    def bwd(residuals, cts):
        return _scan_backward(residuals, cts, wanted, params)

    def fun(primals):
        return Primitive.bind(scan_p, *primals, **params)

    def jvp(primals, tangents):
        return _scan_jvp(primals, tangents, **params)
    return CustomRules(fun, jvp, fwd, bwd)


class ScanPrimitive(Primitive):
    """scan_p. Under reverse mode, binding it records a two-pass step: the forward
    scan stacks the residuals the backward scan reads, as JAX does, instead of the
    tape calling the vjp slot afterwards, which would have to run the scan forward
    once more to rebuild them."""

    def bind(self, *args, **params):
        trace = current_trace()
        if isinstance(trace, VJPTrace):
            _, parents, tracked = trace.split(args)
            if tracked:
                wanted = tuple(p is not None and _is_float(a)
                               for p, a in zip(parents, args))
                if any(wanted):
                    return trace.process_custom(_two_pass_rules(params, wanted), args)
        return Primitive.bind(self, *args, **params)


def _scan_batch(args, dims, body, num_consts, num_carry, length, reverse):
    nC, nc = num_consts, num_carry
    size = batch_size(args, dims)
    c_dims, init_dims, x_dims = _split(dims, nC, nc)
    consts = move_batch_axes(args[:nC], c_dims, 0)
    init = move_batch_axes(args[nC:nC + nc], init_dims, 0)
    xs = move_batch_axes(args[nC + nc:], x_dims, 1)        # axis 0 is scanned over
    c_b, init_b, x_b = (tuple(d is not None for d in part) for part in (c_dims, init_dims,
                                                                         x_dims))
    carry_b, ys_b = _loop_fixed_point(body, c_b, init_b, x_b, False)
    step = batched_program(body, c_b + carry_b + x_b, carry_b + ys_b, size)
    init = broadcast_batch_where(init, init_b, carry_b, size)
    outs = scan_p.bind(*step.consts, *consts, *init, *xs, body=step.program,
                       num_consts=len(step.consts) + nC, num_carry=nc, length=length,
                       reverse=reverse)
    return outs, [0 if b else None for b in carry_b] + [1 if b else None for b in ys_b]


def _onnx_scan(b, *args, body, num_consts, num_carry, length, reverse):
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = list(args[num_consts + num_carry:])
    if xs:                  # the trip count is the scanned axis's length, at run time
        b.cover("length")
        trips = b.op("Squeeze", b.op("Shape", xs[0], start=0, end=1), b.ints([0]))
    else:
        trips = b.const(np.int64(length))
    kinds = [(b.dtype(c), b.dims_of(c)) for c in carry]
    it, keep, carried = _onnx_loop_inputs(b, kinds)

    def build(sub):
        i = it[0]
        if reverse:
            i = sub.op("Sub", sub.op("Sub", trips, sub.const(np.int64(1))), i)
        slices = [sub.op("Gather", x, i, axis=0) for x in xs]
        outs = sub.lower(body, consts + [n for n, _, _ in carried] + slices)
        return [(sub.op("Identity", keep[0]), np.dtype(np.bool_), ())] + sub.typed(body, outs)

    graph = b.graph("scan_body", [it, keep] + carried, build)
    outs = b.op("Loop", trips, None, *carry, body=graph, outputs=len(body.outputs),
                as_list=True)
    ys = outs[num_carry:]
    if reverse:
        ys = [onnx_rules.rev(b, y, (0,)) for y in ys]
    return outs[:num_carry] + ys


scan_p = ScanPrimitive("scan", abstract_eval=_scan_abstract_eval, impl=host_kernel("scan"),
                   jvp=_scan_jvp, vjp=_scan_vjp, batch=_scan_batch, multiple_results=True,
                   onnx=_onnx_scan)
