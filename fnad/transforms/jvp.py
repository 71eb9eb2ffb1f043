"""Forward mode: the JVP interpreter, `jvp`, `linearize`-free `jacfwd`.

A JVPTracer carries a primal value and its tangent. A value with no tangent is
never wrapped: a symbolic zero costs nothing, so `jvp` with respect to one of many
inputs only does the work that input needs.
"""
from ..core import Trace, Tracer, use_trace, current_trace, bind_custom
from ..primitives._rules import instantiate
from typing import Any, Callable, Sequence

from ..tree_util import PyTree, tree_flatten, tree_unflatten
from ._util import flatten_fun_output, check_float_input, zeros_like, check_tangent, split_aux


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        p = self.primal
        return p.aval

    @property
    def shape(self):
        return self.primal.shape

    @property
    def dtype(self):
        return self.primal.dtype

    def concrete(self):
        p = self.primal
        return p.concrete() if isinstance(p, Tracer) else p


class JVPTrace(Trace):
    name = "jvp"

    def split(self, args):
        primals, tangents, any_tangent = [], [], False
        for a in args:
            if type(a) is JVPTracer and a._trace is self:
                primals.append(a.primal)
                tangents.append(a.tangent)
                any_tangent = True
            else:
                primals.append(a)
                tangents.append(None)
        return primals, tangents, any_tangent

    def wrap(self, out, tangent):
        return out if tangent is None else JVPTracer(self, out, tangent)

    def process(self, prim, args, params):
        primals, tangents, any_tangent = self.split(args)
        if not any_tangent:
            return self.bind_in_parent(prim, primals, params)
        with use_trace(self.parent):
            out, tangent_out = prim.jvp(primals, tangents, **params)
        if prim.multiple_results:
            return [self.wrap(o, t) for o, t in zip(out, tangent_out)]
        return self.wrap(out, tangent_out)

    def process_custom(self, rules, args):
        primals, tangents, any_tangent = self.split(args)
        with use_trace(self.parent):
            if not any_tangent:
                return bind_custom(rules, primals)
            tangents = [instantiate(t, p) for t, p in zip(tangents, primals)]
            outs, tangents_out = rules.jvp(primals, tangents)
        return [self.wrap(o, t) for o, t in zip(outs, tangents_out)]


def jvp(fun: Callable[..., Any], primals: Sequence[PyTree], tangents: Sequence[PyTree],
        has_aux: bool = False) -> tuple[Any, ...]:
    """(fun(*primals), the derivative of fun at primals applied to tangents): forward mode.

    Args:
        fun: a function of arrays (pytrees of arrays) returning arrays.
        primals: a tuple (or list) of fun's arguments.
        tangents: a tuple of the same structure, shapes and dtypes: the direction.
        has_aux: fun returns (output, aux); aux is returned as a third value, not
            differentiated.

    Returns:
        (primals_out, tangents_out), as jax.jvp. One forward pass computes both, so a
        Jacobian-vector product costs about one evaluation of fun.

    >>> fnad.jvp(fnp.sin, (0.0,), (1.0,))
    (Array(0., dtype=float32), Array(1., dtype=float32))
    >>> f = lambda x, y: x * y
    >>> fnad.jvp(f, (2.0, 3.0), (1.0, 0.0))     # d/dx (x y) = y
    (Array(6., dtype=float32), Array(3., dtype=float32))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp expects primals and tangents as tuples (or lists), e.g. "
                        "jvp(f, (x,), (v,))")
    flat_p, tree_p = tree_flatten(tuple(primals))
    flat_t, tree_t = tree_flatten(tuple(tangents))
    if tree_p != tree_t:
        raise ValueError(f"jvp: primals and tangents have different structures: "
                         f"{tree_p} and {tree_t}")
    trace = JVPTrace(current_trace())
    tracers = []
    for i, (p, t) in enumerate(zip(flat_p, flat_t)):
        p = check_float_input(p, "jvp", f"primal {i}")
        t = check_tangent(p, t, i)
        tracers.append(JVPTracer(trace, p, t))
    try:
        with use_trace(trace):
            out = fun(*tree_unflatten(tree_p, tracers))
    finally:
        trace.alive = False
    out, aux = split_aux(out, "jvp") if has_aux else (out, None)
    flat_out, tree_out = flatten_fun_output(out)
    primals_out, tangents_out = [], []
    for o in flat_out:
        if type(o) is JVPTracer and o._trace is trace:
            primals_out.append(o.primal)
            tangents_out.append(o.tangent)
        else:
            primals_out.append(o)
            tangents_out.append(zeros_like(o))
    result = (tree_unflatten(tree_out, primals_out), tree_unflatten(tree_out, tangents_out))
    if has_aux:
        return result + (_strip(trace, aux),)
    return result


def _strip(trace, tree):
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [l.primal if type(l) is JVPTracer and l._trace is trace
                                    else l for l in leaves])
