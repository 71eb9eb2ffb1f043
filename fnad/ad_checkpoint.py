"""checkpoint (remat) with a policy: which intermediates of the checkpointed function
the forward pass saves for the backward pass, the rest being recomputed there.

The function is staged into a Program once per call; the policy is asked about each
equation. The forward pass runs the program and keeps the inputs plus the results the
policy saves. The backward pass replays the program under vjp, except that an
equation whose result was saved is not run again: it is replaced by a function with
custom rules that returns the saved value and applies the equation's own VJP rule
(so gradients still flow through it to its inputs). A value named with
checkpoint_name saves the equation that computed it too (the name is the identity).

Without a policy nothing is saved but the inputs. Staging is what finds the values of
enclosing transforms that the function closes over (`checkpoint(lambda x: x @ w)` with
`w` traced by an outer grad or jit): they become inputs of the rules, so their
derivatives flow too. Operations with several results (control flow) are never saved;
they are recomputed.
"""
import functools

from . import checkpoint_policies  # noqa: F401  (fnad.ad_checkpoint.checkpoint_policies)
from .abstract import get_aval
from .core import Tracer, bind_custom
from .program import Literal
from .staged.jit import argnums_both_ways, signature_or_none
from .staged.staging import CustomCallPrimitive, stage_flat
from .transforms.custom import CustomRules, checkpoint_name, checkpoint_name_p  # noqa: F401
from .transforms.custom import pullback_floats
from .transforms.jvp import jvp as _jvp
from .transforms._util import as_value, check_argnums, resolve_argnums, zeros_like
from .tree_util import tree_flatten, tree_unflatten


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=()):
    """Trade compute for memory in reverse mode: keep only what `policy` saves
    (default: nothing but the inputs) and recompute the rest in the backward pass.
    Gradients are unchanged. `prevent_cse` is accepted for JAX code; fnad's optimizer
    never merges a recomputation with the forward pass, so it has nothing to prevent."""
    static_argnums = check_argnums(static_argnums, "checkpoint", "static_argnums",
                                   allow_empty=True)[1]
    static_argnames = (static_argnames,) if isinstance(static_argnames, str) \
        else tuple(static_argnames or ())
    if policy is None:
        policy = checkpoint_policies.nothing_saveable
    static_argnums, static_argnames = argnums_both_ways(
        signature_or_none(fun), static_argnums, static_argnames, "static", "checkpoint")

    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        static_at = set(resolve_argnums([n for n in static_argnums if n < len(args)],
                                        len(args), "checkpoint", "static_argnums"))
        static_kw = {k: v for k, v in kwargs.items() if k in static_argnames}
        dynamic = ([a for i, a in enumerate(args) if i not in static_at],
                   {k: v for k, v in kwargs.items() if k not in static_argnames})

        def call(dyn_args, dyn_kwargs):
            it = iter(dyn_args)
            full = [a if i in static_at else next(it) for i, a in enumerate(args)]
            return fun(*full, **dyn_kwargs, **static_kw)
        leaves, in_tree = tree_flatten(dynamic)
        leaves = [as_value(x, "checkpoint argument") for x in leaves]
        return _checkpointed(lambda *xs: call(*tree_unflatten(in_tree, list(xs))), leaves,
                             policy)
    return remat_fun


remat = checkpoint


def _checkpointed(fun, leaves, policy):
    out_tree = []

    def flat_fun(*xs):
        out_leaves, tree = tree_flatten(fun(*xs))
        out_tree.append(tree)
        return [as_value(o, "checkpoint output") for o in out_leaves]
    closed = stage_flat(flat_fun, [get_aval(x) for x in leaves])
    program, consts = closed.program, list(closed.consts)
    # Values of enclosing transforms the function closed over become inputs of the
    # rules, so derivatives with respect to them flow; concrete constants stay closed.
    traced = [i for i, c in enumerate(consts) if isinstance(c, Tracer)]
    saved_vars = _saved_vars(program, policy)

    def program_inputs(xs):
        values = list(consts)
        for j, i in enumerate(traced):
            values[i] = xs[j]
        return values + list(xs[len(traced):])

    def run(xs):
        return _run(program, program_inputs(xs), ())[0]

    def jvp(primals, tangents):
        return _jvp(lambda *p: run(list(p)), tuple(primals), tuple(tangents))

    def fwd(primals):
        outs, saved = _run(program, program_inputs(primals), saved_vars)
        return outs, list(primals) + saved

    def bwd(residuals, cotangents):
        primals, saved = residuals[:len(residuals) - len(saved_vars)], \
            residuals[len(residuals) - len(saved_vars):]
        known = dict(zip(saved_vars, saved))
        return pullback_floats(lambda xs: _replay(program, program_inputs(xs), known),
                               primals, cotangents)

    inputs = [consts[i] for i in traced] + leaves
    out = bind_custom(CustomRules(run, jvp, fwd, bwd), inputs)
    return tree_unflatten(out_tree[0], out)


def _saved_vars(program, policy):
    """The vars whose values the forward pass keeps, in equation order."""
    inputs = set(program.invars)
    saved = {}
    for eqn in program.eqns:
        if eqn.prim.multiple_results or isinstance(eqn.prim, CustomCallPrimitive):
            continue
        if policy(eqn.prim, *[a.aval for a in eqn.inputs], **eqn.params):
            saved[eqn.outputs[0]] = None
            named = eqn.inputs[0]
            if eqn.prim is checkpoint_name_p and not isinstance(named, Literal) \
                    and named not in inputs:
                saved[named] = None
    return list(saved)


def _run(program, args, wanted):
    """Evaluate `program` through bind: (outputs, values of the `wanted` vars)."""
    env = dict(zip(program.invars, args))

    def read(a):
        return a.value if isinstance(a, Literal) else env[a]
    for eqn in program.eqns:
        out = eqn.prim.bind(*[read(a) for a in eqn.inputs], **eqn.params)
        env.update(zip(eqn.outputs, out if eqn.prim.multiple_results else [out]))
    return [read(a) for a in program.outputs], [env[v] for v in wanted]


def _replay(program, args, known):
    """Evaluate `program` with the equations whose result is `known` not run again."""
    env = dict(zip(program.invars, args))

    def read(a):
        return a.value if isinstance(a, Literal) else env[a]
    for eqn in program.eqns:
        ins = [read(a) for a in eqn.inputs]
        if not eqn.prim.multiple_results and eqn.outputs[0] in known:
            # Only traced inputs take part: the others (literals, concrete constants)
            # want no cotangent, so the rule does not compute one for them.
            at = [i for i, x in enumerate(ins) if isinstance(x, Tracer)]
            value = known[eqn.outputs[0]]
            env[eqn.outputs[0]] = bind_custom(_saved_rules(eqn, value, ins, at),
                                              [ins[i] for i in at])[0] if at else value
            continue
        out = eqn.prim.bind(*ins, **eqn.params)
        env.update(zip(eqn.outputs, out if eqn.prim.multiple_results else [out]))
    return [read(a) for a in program.outputs]


def _saved_rules(eqn, out, ins, at):
    """Rules for one equation whose result `out` is known: nothing to compute; its
    derivatives are the equation's own rules (at: the positions of its traced inputs)."""
    prim, params = eqn.prim, eqn.params

    def full(values):
        args = list(ins)
        for i, v in zip(at, values):
            args[i] = v
        return args

    def fun(values):
        return [out]

    def fwd(values):
        return [out], list(values)

    def bwd(values, cotangents):
        args = full(values)
        extra = {"needed": [i in at for i in range(len(args))]} if prim.selective_vjp else {}
        cts = prim.vjp(cotangents[0], out, *args, **params, **extra)
        return [cts[i] for i in at]

    def jvp(values, tangents):
        all_tangents = [None] * len(ins)
        for i, t in zip(at, tangents):
            all_tangents[i] = t
        t_out = prim.jvp(full(values), all_tangents, **params)[1]
        return [out], [zeros_like(out) if t_out is None else t_out]

    return CustomRules(fun, jvp, fwd, bwd)
