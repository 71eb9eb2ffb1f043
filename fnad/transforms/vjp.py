"""Reverse mode: the tape interpreter, `vjp`, `grad` and `value_and_grad`.

While the function runs, every primitive applied to a tracked value appends a
node to the trace's tape: the primitive's VJP rule with the values it needs. The
backward pass walks the tape from the end, handing each node's cotangent to its
rule. Rules are written in fnad operations and run in whatever interpreter is
current when the backward pass runs, so an enclosing transform sees (and can
differentiate, batch or stage) the backward pass itself.
"""
from typing import Any, Callable, Sequence

import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..core import (Trace, Tracer, use_trace, current_trace, bind_custom, EVAL, host_operand,
                    no_derivative)
from ..array import Array, wrap
from ..errors import GradientError, DTypeError
from ..tree_util import LEAF, tree_flatten, tree_unflatten
from ._util import (flatten_fun_output, check_float_input, zeros_like, as_value,
                    check_argnums, resolve_argnums, split_aux)


class Node:
    """One step of the tape. `rule(cotangent, out, *args, **params)` returns one
    cotangent per arg; `parents[i]` is the tracer args[i] came from, or None.
    For a selective rule, `needed` lists which args want a cotangent; the rule is
    passed it and skips the work for the others. It is None for other rules.
    Single-result steps are stored in their VJPTracer itself; this class holds the
    steps with several results, whose tracers point at it."""
    __slots__ = ("rule", "params", "args", "out", "parents", "multiple", "needed", "ct")

    def __init__(self, rule, params, args, out, parents, multiple, needed=None):
        self.ct = None          # the cotangent, accumulated during a backward pass
        self.rule = rule
        self.params = params
        self.args = args
        self.out = out
        self.parents = parents
        self.multiple = multiple
        self.needed = needed


class VJPTracer(Tracer):
    """A tracked value. `out` is its value as the rules see it (raw numpy when the
    trace's parent is plain evaluation); `primal` is the fnad value. For a
    single-result step the tracer is also the tape entry (`node` is None)."""
    __slots__ = ("rule", "params", "args", "out", "parents", "needed",
                 "node", "index", "shape", "dtype", "_primal", "ct")
    multiple = False

    @property
    def primal(self):
        p = self._primal
        if p is None:
            p = self._primal = wrap(self.out)
        return p

    @property
    def aval(self):
        return self.primal.aval

    def concrete(self):
        p = self.primal
        return p.concrete() if isinstance(p, Tracer) else p


_new = object.__new__


def _raw(a):
    """A host operand's numpy value; None for a value elsewhere (another device)."""
    return a._value if type(a) is Array else host_operand(a)


def _tracer(trace, out, primal, rule, params, args, parents, needed, node=None, index=None):
    t = _new(VJPTracer)
    t._trace, t.out, t._primal, t.node, t.index = trace, out, primal, node, index
    t.rule, t.params, t.args, t.parents, t.needed = rule, params, args, parents, needed
    t.shape, t.dtype, t.ct = out.shape, out.dtype, None
    return t


class VJPTrace(Trace):
    name = "grad"

    def __init__(self, parent):
        super().__init__(parent)
        self.tape = []
        if parent is EVAL:      # skip a dispatch per op
            self.process = self.process_concrete

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

    def record(self, rule, params, args, out, parents, multiple, selective=False,
               primal_out=None):
        """Append a step to the tape and return its tracked results. primal_out is
        what the tracers carry when it differs from the `out` the rule is given."""
        needed = [p is not None for p in parents] if selective else None
        primal_out = out if primal_out is None else primal_out
        if rule is no_derivative:
            return primal_out
        if not multiple:
            if dtype_kind(out.dtype) not in "fc":   # integers and booleans carry no derivative
                return primal_out
            t = _tracer(self, out, primal_out, rule, params, args, parents, needed)
            self.tape.append(t)
            return t
        node = Node(rule, params, args, out, parents, True, needed)
        self.tape.append(node)
        return [_tracer(self, o, p, None, None, None, None, None, node, i)
                if dtype_kind(o.dtype) in "fc" else p
                for i, (o, p) in enumerate(zip(out, primal_out))]

    def new_input(self, value):
        if self.parent is EVAL and type(value) is not Array and isinstance(value, Array):
            # The raw-numpy tape is a host fast path: other devices' values keep to bind.
            self.__dict__.pop("process", None)
        out = value._value if self.parent is EVAL and type(value) is Array else value
        return self.record(None, None, (), out, (), False, primal_out=value)

    def process(self, prim, args, params):
        primals, parents, tracked = self.split(args)
        out = self.parent.process(prim, primals, params)
        if not tracked:
            return out
        return self.record(prim.vjp, params, primals, out, parents, prim.multiple_results,
                           prim.selective_vjp)

    def process_concrete(self, prim, args, params):
        """process when the parent is plain evaluation. The tape keeps the raw numpy
        values, so the backward pass (if it too runs outside any transform) works on
        numpy end to end: each rule op is a numpy call, not a dispatch. This runs per
        op in eager grad: unrolled for one and two operands, one statement per tracer
        field (cheaper than a tuple assignment), no `**{}` when there are no params."""
        if len(args) == 1:
            a, = args
            if not (type(a) is VJPTracer and a._trace is self):
                return prim.eval(args, params)
            values, parents, needed = (a.out,), args, (True,)
        elif len(args) == 2:
            a, b = args
            own_a = type(a) is VJPTracer and a._trace is self
            own_b = type(b) is VJPTracer and b._trace is self
            if not (own_a or own_b):
                return prim.eval(args, params)
            va = a.out if own_a else a._value if type(a) is Array else host_operand(a)
            vb = b.out if own_b else b._value if type(b) is Array else host_operand(b)
            if va is None or vb is None:
                return VJPTrace.process(self, prim, args, params)
            values = va, vb
            parents = (a if own_a else None, b if own_b else None)
            needed = (own_a, own_b)
        else:
            needed = tuple(type(a) is VJPTracer and a._trace is self for a in args)
            if not any(needed):
                return prim.eval(args, params)
            values = tuple(a.out if own else _raw(a) for a, own in zip(args, needed))
            if any(v is None for v in values):
                return VJPTrace.process(self, prim, args, params)
            parents = tuple(a if own else None for a, own in zip(args, needed))
        try:    # the kernel, called here rather than through one more frame
            out = prim.impl(*values, **params) if params else prim.impl(*values)
        except (ValueError, TypeError, IndexError):
            prim.explain_failure(args, params)
            raise
        if prim.multiple_results:
            out = [o if type(o) is np.ndarray else np.asarray(o) for o in out]
            return self.record(prim.vjp, params, values, out, parents, True,
                               prim.selective_vjp, [wrap(o) for o in out])
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        dtype = out.dtype
        rule = prim.vjp
        # dtype.kind first: kind_of (bfloat16's "V" is a float) costs a call per op
        if (dtype.kind not in "fc" and dtype_kind(dtype) not in "fc") or rule is no_derivative:
            return wrap(out)
        t = _new(VJPTracer)     # _tracer(), inlined
        t._trace = self
        t.out = out
        t._primal = None
        t.node = None
        t.index = None
        t.rule = rule
        t.params = params
        t.args = values
        t.parents = parents
        t.needed = needed if prim.selective_vjp else None
        t.shape = out.shape
        t.dtype = dtype
        t.ct = None
        self.tape.append(t)
        return t

    def process_custom(self, rules, args):
        primals, parents, tracked = self.split(args)
        with use_trace(self.parent):
            if not tracked:
                return bind_custom(rules, primals)
            outs, residuals = rules.fwd(primals)
        raw = [o._value if type(o) is Array else o for o in outs] if self.parent is EVAL \
            else outs
        # The step's args are the residuals; its parents are still the primal inputs,
        # matching the one cotangent per input that bwd returns.
        return self.record(_custom_rule(rules.bwd), {}, residuals, raw, parents, True,
                           primal_out=outs)


def _custom_rule(bwd):
    # User code gets fnad values, never the raw numpy the tape may hold.
    def rule(cotangents, outs, *residuals):
        cts = [zeros_like(o) if c is None else _as_fnad(c) for c, o in zip(cotangents, outs)]
        return bwd(residuals, cts)
    return rule


def backward(tape, seeds):
    """Run the tape backwards from `seeds` [(tracer, cotangent)]; returns the
    cotangents of the input tracers, keyed by id. Cotangents accumulate on the tape
    entries themselves and are cleared as they are consumed, so a tape can be run
    backwards any number of times."""
    grads = {}
    try:
        for tracer, ct in seeds:
            _accumulate(tracer, ct)
        for node in reversed(tape):
            ct = node.ct
            if ct is None:
                continue
            node.ct = None
            if node.rule is None:
                grads[id(node)] = ct
                continue
            needed, params = node.needed, node.params
            if needed is not None:
                arg_cts = node.rule(ct, node.out, *node.args, needed=needed, **params) \
                    if params else node.rule(ct, node.out, *node.args, needed=needed)
            else:
                arg_cts = node.rule(ct, node.out, *node.args, **params) if params else \
                    node.rule(ct, node.out, *node.args)
            for parent, c in zip(node.parents, arg_cts):
                if parent is not None and c is not None:
                    if parent.node is None:     # _accumulate, inlined for one result
                        prev = parent.ct
                        parent.ct = c if prev is None else prev + c
                    else:
                        _accumulate(parent, c)
    except BaseException:
        for node in tape:
            node.ct = None
        raise
    return grads


def _accumulate(tracer, ct):
    node = tracer.node
    if node is None:
        prev = tracer.ct
        tracer.ct = ct if prev is None else prev + ct
    else:
        slots = node.ct
        if slots is None:
            slots = node.ct = [None] * len(node.out)
        i = tracer.index
        slots[i] = ct if slots[i] is None else slots[i] + ct


_FLAT_TUPLES = {}    # n -> the treedef of a tuple of n leaves


def _flatten_args(args):
    """tree_flatten of a tuple of arguments; when each is an Array (the common eager
    call) the tuple is its own list of leaves and its treedef depends only on n."""
    for a in args:
        if type(a) is not Array:
            return tree_flatten(args)
    tree = _FLAT_TUPLES.get(len(args))
    if tree is None:
        tree = _FLAT_TUPLES[len(args)] = tree_flatten(tuple(range(len(args))))[1]
    return list(args), tree


def _unflatten_args(tree, leaves):
    return tuple(leaves) if _FLAT_TUPLES.get(len(leaves)) is tree else \
        tree_unflatten(tree, leaves)


def _trace_forward(fun, primals, has_aux, transform):
    """Run fun under a new tape. Returns what the pullback needs and the outputs."""
    flat_in, tree_in = _flatten_args(primals)
    trace = VJPTrace(current_trace())
    flat_in = [x if type(x) is Array and x._value.dtype.kind in "fc"
               else check_float_input(x, transform, f"input {i}") for i, x in enumerate(flat_in)]
    inputs = [trace.new_input(x) for x in flat_in]
    try:
        with use_trace(trace):
            out = fun(*_unflatten_args(tree_in, inputs))
    finally:
        trace.alive = False
    out, aux = split_aux(out, transform) if has_aux else (out, None)
    if type(out) is VJPTracer or type(out) is Array:     # one array: nothing to walk
        flat_out, tree_out = [out], LEAF
    else:
        flat_out, tree_out = flatten_fun_output(out)
    if has_aux:
        aux_leaves, aux_tree = tree_flatten(aux)
        aux = tree_unflatten(aux_tree, [_primal(trace, a) for a in aux_leaves])
    return trace, flat_in, tree_in, inputs, flat_out, tree_out, aux


def _pullback(trace, flat_in, inputs, flat_out, flat_ct):
    """Cotangents of the flat inputs, given those of the flat outputs (fnad values,
    or numpy arrays that nothing will write to)."""
    seeds = []
    for i, (o, c) in enumerate(zip(flat_out, flat_ct)):
        if c.shape != o.shape:
            raise ValueError(f"vjp: cotangent {i} has shape {tuple(c.shape)} but the "
                             f"output has shape {tuple(o.shape)}")
        if type(o) is VJPTracer and o._trace is trace:
            seeds.append((o, c._value if type(c) is Array else c))
    grads = backward(trace.tape, seeds)
    return [_as_fnad(grads[id(x)]) if id(x) in grads else zeros_like(x) for x in inputs]


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """(fun(*primals), vjp_fn) where vjp_fn(cotangent) gives one cotangent per primal.

    Reverse mode: the forward pass records the primitives it applies on a tape, and
    vjp_fn walks it backwards, so one call of vjp_fn costs about one evaluation of fun
    whatever the number of inputs. The cotangent has the output's structure, shapes
    and dtypes; vjp_fn returns a tuple with one entry per primal. With has_aux, fun
    returns (output, aux) and vjp returns (output, vjp_fn, aux). As jax.vjp.

    >>> y, vjp_fn = fnad.vjp(lambda x: x * fnp.asarray([1.0, 2.0]), 3.0)
    >>> vjp_fn(fnp.ones(2))
    (Array(3., dtype=float32),)
    """
    trace, flat_in, tree_in, inputs, flat_out, tree_out, aux = _trace_forward(
        fun, primals, has_aux, "vjp")

    def vjp_fn(cotangent):
        flat_ct, tree_ct = tree_flatten(cotangent)
        if tree_ct != tree_out:
            raise ValueError(f"vjp: the cotangent's structure {tree_ct} differs from the "
                             f"output's {tree_out}")
        flat_ct = [_user_cotangent(c, o, i) for i, (c, o) in enumerate(zip(flat_ct, flat_out))]
        return tree_unflatten(tree_in, _pullback(trace, flat_in, inputs, flat_out, flat_ct))

    result = (tree_unflatten(tree_out, [_primal(trace, o) for o in flat_out]), vjp_fn)
    return result + (aux,) if has_aux else result


def _user_cotangent(c, out, i):
    """The user's cotangent for output i. It must have the output's dtype, as in JAX:
    a float64 or integer cotangent would otherwise make a float64 gradient for float32
    inputs. A Python scalar is weakly typed and takes the output's dtype."""
    if isinstance(c, (bool, int, float, complex)) and dtype_kind(out.dtype) in "fc" and not (
            isinstance(c, complex) and dtype_kind(out.dtype) == "f"):
        return Array(np.asarray(c, out.dtype))
    c = as_value(c, f"cotangent {i}")
    if dtype_kind(out.dtype) in "fc" and c.dtype != out.dtype:
        raise DTypeError(f"vjp: cotangent {i} has dtype {c.dtype} but the output it pulls "
                         f"back has dtype {out.dtype} (shape {tuple(out.shape)}); pass a "
                         f"cotangent of dtype {out.dtype}, e.g. with .astype")
    return c


def _as_fnad(g):
    # Rules run on raw numpy values return numpy arrays: fresh, or values of
    # immutable Arrays, so wrapping without a copy is safe.
    if isinstance(g, (np.ndarray, np.generic)):
        return wrap(g)
    return g


def _primal(trace, x):
    return x.primal if type(x) is VJPTracer and x._trace is trace else x


_ONES = {}     # read-only unit cotangents, one per dtype


def value_and_grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """fun's value and its gradient with respect to the arguments named by argnums.
    For complex inputs and a real output the gradient is the cotangent JAX gives,
    conj(df/dz) + ... (grad(abs(z)**2) is 2 conj(z)); holomorphic=True takes complex
    inputs to a complex output and gives f'(z).

    Returns a function giving (value, gradient) — ((value, aux), gradient) with
    has_aux — from one forward and one backward pass. As jax.value_and_grad.

    >>> fnad.value_and_grad(lambda x: fnp.sum(x ** 2))(fnp.asarray([1.0, 2.0]))
    (Array(5., dtype=float32), Array([2., 4.], dtype=float32))
    """
    return _value_and_grad(fun, argnums, has_aux, "value_and_grad", holomorphic)


def _value_and_grad(fun, argnums, has_aux, name, holomorphic=False):
    single, spec = check_argnums(argnums, name)
    resolved = {}       # number of arguments -> (argnums as non-negative positions,
    #                     whether they name every argument)

    def value_and_grad_fun(*args, **kwargs):
        n = len(args)
        known = resolved.get(n)
        if known is None:
            nums = resolve_argnums(spec, n, name)
            known = resolved[n] = nums, nums == tuple(range(n))
        nums, every = known
        if every and not kwargs:
            restricted = fun        # every argument is differentiated: nothing to fix
        else:
            def restricted(*diff):
                full = list(args)
                for i, d in zip(nums, diff):
                    full[i] = d
                return fun(*full, **kwargs)

        diff_args = args if restricted is fun else tuple(args[i] for i in nums)
        if holomorphic:
            _check_complex_inputs(diff_args, name)
        trace, flat_in, tree_in, inputs, flat_out, tree_out, aux = _trace_forward(
            restricted, diff_args, has_aux, name)
        out_leaf = _check_scalar_output(flat_out, name, holomorphic)
        seed = _ONES.get(out_leaf.dtype)
        if seed is None:
            seed = _ONES[out_leaf.dtype] = np.ones((), out_leaf.dtype)
            seed.flags.writeable = False
        grads = _unflatten_args(tree_in, _pullback(trace, flat_in, inputs, flat_out, [seed]))
        value = _primal(trace, out_leaf)
        if tree_out.node_type is not None:
            value = tree_unflatten(tree_out, [value])
        value = (value, aux) if has_aux else value
        return value, (grads[0] if single else grads)

    _copy_name(value_and_grad_fun, fun, "value_and_grad")
    return value_and_grad_fun


def grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable[..., Any]:
    """The gradient of scalar-valued fun with respect to the arguments named by argnums
    (holomorphic: see value_and_grad).

    Args:
        fun: a function of arrays (pytrees of arrays) with a scalar, real output.
        argnums: the position, or a tuple of positions, of the arguments to
            differentiate (keyword arguments are never differentiated).
        has_aux: fun returns (output, aux); the function then returns (gradient, aux).
        holomorphic: fun is a complex-differentiable function of complex inputs.

    Returns:
        A function with fun's arguments that returns the gradient (for one argnum, an
        array or pytree shaped like that argument; for a tuple, a tuple of them). A
        non-scalar output raises GradientError (use vjp or jacrev), as does an integer
        input. As jax.grad: grad sees concrete values, so Python control flow on
        them works (as in JAX outside jit).

    >>> def loss(params, x):
    ...     return fnp.sum((params["w"] * x + params["b"]) ** 2)
    >>> params = {"w": fnp.asarray([1.0, 2.0]), "b": 0.5}
    >>> fnad.grad(loss)(params, fnp.asarray([1.0, -1.0]))
    {'b': Array(0., dtype=float32), 'w': Array([3., 3.], dtype=float32)}
    >>> fnad.grad(lambda x, y: x * y, argnums=1)(2.0, 3.0)
    Array(2., dtype=float32)
    >>> fnad.grad(fnad.grad(lambda x: x ** 3))(2.0)
    Array(12., dtype=float32)
    """
    vg = _value_and_grad(fun, argnums, has_aux, "grad", holomorphic)

    def grad_fun(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    _copy_name(grad_fun, fun, "grad")
    return grad_fun


def _check_complex_inputs(args, name):
    for i, x in enumerate(tree_flatten(args)[0]):
        dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
        if dtype_kind(dtype) != "c":
            raise GradientError(
                f"{name} with holomorphic=True requires inputs with complex dtype, but "
                f"input {i} has dtype {dtype}; convert it with .astype(complex64) or "
                f"differentiate a real function without holomorphic=True")


def _check_scalar_output(leaves, name="grad", holomorphic=False):
    if len(leaves) != 1:
        raise GradientError(f"grad requires a function with one scalar output, got a "
                            f"pytree with {len(leaves)} leaves; use vjp or jacrev")
    leaf = leaves[0]
    shape = tuple(np.shape(leaf)) if not hasattr(leaf, "shape") else tuple(leaf.shape)
    if shape != ():
        raise GradientError(f"grad requires a scalar output, got an output of shape "
                            f"{shape}; reduce it (e.g. .sum()) or use vjp/jacrev")
    kind = dtype_kind(leaf.dtype)
    if holomorphic:
        if kind != "c":
            raise GradientError(f"{name} with holomorphic=True requires a complex output, "
                                f"got dtype {leaf.dtype}")
    elif kind == "c":
        raise GradientError(
            f"{name} requires a real-valued output, got dtype {leaf.dtype}; for a "
            f"holomorphic function pass holomorphic=True, otherwise differentiate a real "
            f"part (real, abs) or use vjp directly")
    elif kind != "f":
        raise GradientError(f"grad requires a floating-point output, got dtype {leaf.dtype}")
    return leaf


def _copy_name(wrapper, fun, prefix):
    name = getattr(fun, "__name__", "fun")
    wrapper.__name__ = f"{prefix}({name})"
    wrapper.__doc__ = getattr(fun, "__doc__", None)
    wrapper.__wrapped__ = fun
