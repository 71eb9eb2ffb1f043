"""jit: stage a function into a Program and run it as one call primitive.

Staging runs the function with StagedTracers, which know only shape and dtype;
each bind appends an equation. The staged Program becomes the parameter of the
`jit_call` primitive, so a jitted function under grad, jvp or another jit is one
primitive application whose rules transform the Program (and jit the result).
"""
import collections
import functools
import inspect
import weakref

import numpy as np

from ..array import Array, CudaArray
from ..core import (Trace, Tracer, Primitive, ShapedArray, use_trace, current_trace,
                    bind_custom, get_aval, EVAL, _wrap)
from ..errors import ConcretizationError, EscapedTracerError
from ..program import Program, Var, Literal, Equation, evaluate
from ..tree_util import tree_flatten, tree_unflatten
from ._util import as_value, check_argnums, resolve_argnums
from .. import config
from ..cache import register


class StagedTracer(Tracer):
    __slots__ = ("aval", "var", "shape", "dtype")

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
    program = Program(constvars + [t.var for t in tracers], [], [], trace.eqns, outs)
    return ClosedProgram(program, [c for _, c in trace.consts])


class ClosedProgram:
    """A Program whose leading inputs take the values `consts` (arrays captured while
    staging, or values of enclosing transforms)."""
    __slots__ = ("program", "consts")

    def __init__(self, program, consts):
        self.program = program
        self.consts = consts

    def __repr__(self):
        from ..program import pretty
        return pretty(self.program, num_consts=len(self.consts))

    def call(self, *args):
        return jit_call_p.bind(*self.consts, *args, program=self.program)


# --------------------------------------------------------------------------- custom_call

class CustomCallPrimitive(Primitive):
    """A staged function with custom derivative rules: binding it hands the rules
    back to the current interpreter, exactly as the unstaged call did."""

    def bind(self, *args, rules, program):
        return bind_custom(rules, args)


def _custom_call_impl(*args, rules, program):
    return evaluate(program.program, program.consts, args)


custom_call_p = CustomCallPrimitive(
    "custom_call",
    abstract_eval=lambda *avals, rules, program: program.program.out_avals,
    impl=_custom_call_impl,
    jvp=lambda primals, tangents, rules, program: rules.jvp(primals, tangents),
    vjp=lambda cts, outs, *args, rules, program: rules.bwd(rules.fwd(list(args))[1], cts),
    multiple_results=True)


# --------------------------------------------------------------------------- jit_call

def _float_positions(avals):
    return [i for i, a in enumerate(avals) if a.dtype.kind == "f"]


def optimize(closed):
    from .optimize import optimize as run_passes
    return run_passes(closed)


def program_cache(fn):
    """Memoize fn(program, *key) for as long as the program lives."""
    caches = weakref.WeakKeyDictionary()
    register(caches.clear)

    @functools.wraps(fn)
    def cached(program, *key):
        table = caches.setdefault(program, {})
        if key not in table:
            # No lock: staging may take long and re-enter this cache. Threads that miss
            # together both compute; setdefault keeps the first, so all share one entry.
            table.setdefault(key, fn(program, *key))
        return table[key]
    return cached


@program_cache
def _derivative_program(program, kind):
    """The staged JVP or VJP of a program, cached per program."""
    from .jvp import jvp
    from .custom import pullback_floats
    avals = program.in_avals
    n = len(avals)
    run = lambda xs: evaluate(program, [], list(xs))
    if kind == "jvp":
        floats = _float_positions(avals)

        def jvp_fun(*primals_and_tangents):
            primals, tangents = primals_and_tangents[:n], primals_and_tangents[n:]

            def on_floats(*fs):
                xs = list(primals)
                for i, f in zip(floats, fs):
                    xs[i] = f
                return run(xs)
            outs, t_outs = jvp(on_floats, tuple(primals[i] for i in floats), tuple(tangents))
            return list(outs) + list(t_outs)
        return optimize(stage_flat(jvp_fun, avals + [avals[i] for i in floats]))

    out_avals = program.out_avals

    def vjp_fun(*args_and_cts):
        args, cts = args_and_cts[:n], args_and_cts[n:]
        return [c for c in pullback_floats(run, list(args), list(cts)) if c is not None]
    return optimize(stage_flat(vjp_fun, avals + list(out_avals)))


def _jit_call_jvp(primals, tangents, program):
    floats = _float_positions(program.in_avals)
    if all(tangents[i] is None for i in floats):
        return jit_call_p.bind(*primals, program=program), [None] * len(program.outputs)
    from ._util import zeros_like
    tangents = [zeros_like(primals[i]) if tangents[i] is None else tangents[i] for i in floats]
    outs = _derivative_program(program, "jvp").call(*primals, *tangents)
    m = len(program.outputs)
    return outs[:m], outs[m:]


def _jit_call_vjp(cts, outs, *args, program):
    from ._util import zeros_like
    cts = [zeros_like(o) if c is None else c for c, o in zip(cts, outs)]
    float_cts = _derivative_program(program, "vjp").call(*args, *cts)
    result = [None] * len(args)
    for i, c in zip(_float_positions(program.in_avals), float_cts):
        result[i] = c
    return result


def _jit_call_impl(*args, program):
    from ..kernels.cpu.lowering import compiled
    return compiled(program)(*args)


jit_call_p = Primitive(
    "jit_call",
    abstract_eval=lambda *avals, program: program.out_avals,
    impl=_jit_call_impl, jvp=_jit_call_jvp, vjp=_jit_call_vjp, multiple_results=True)


# --------------------------------------------------------------------------- the jit API

class Jitted:
    """The function returned by fnad.jit."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = check_argnums(static_argnums, "jit", "static_argnums", True)[1]
        self.static_argnames = _as_tuple(static_argnames)
        self.donate_argnums = check_argnums(donate_argnums, "jit", "donate_argnums", True)[1]
        # At most config.trace_cache_size traces, the least recently used dropped first;
        # a fast-path entry (its call's trace_key names its trace) goes with its trace.
        self.cache = collections.OrderedDict()  # trace key -> (ClosedProgram, out tree)
        # (type, shape, dtype) per Array argument -> compiled call; one table per x64
        # setting, so the hot path's key needs no flag in it.
        self.fast_by_x64 = ({}, {})
        self.trace_count = 0
        _live.add(self)
        try:
            self.signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self.signature = None

    def _split(self, args, kwargs):
        static = []
        static_argnums = sorted(resolve_argnums(self.static_argnums, len(args), "jit",
                                                "static_argnums"))
        for i in static_argnums:
            static.append(("pos", i, _hashable_static(args[i], f"argument {i}")))
        static_kw = {k: v for k, v in kwargs.items() if k in self.static_argnames}
        for k, v in sorted(static_kw.items()):
            static.append(("kw", k, _hashable_static(v, f"argument {k!r}")))
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        positions = [i for i in range(len(args)) if i not in static_argnums]
        dynamic = [args[i] for i in positions]
        return tuple(static), positions, dynamic, dyn_kwargs, static_kw

    def _stage(self, args, kwargs):
        _, entry, flat = self._stage_keyed(args, kwargs)
        return entry, flat

    def _stage_keyed(self, args, kwargs):
        static, positions, dynamic, dyn_kwargs, static_kw = self._split(args, kwargs)
        flat, in_tree = tree_flatten((dynamic, dyn_kwargs))
        flat = [as_value(x, "jit argument") for x in flat]
        avals = tuple(ShapedArray(x.shape, x.dtype) for x in flat)
        key = (in_tree, avals, static, config.enable_x64)   # x64 changes what f traces to
        entry = self.cache.get(key)
        if entry is None:
            if config.explain_cache_misses and self.cache:
                print(f"fnad.jit: tracing {self.__name__} again: no cached trace for "
                      f"{_describe(avals)} with static args {static}")
            # Threads that miss together both trace (no lock around user code); the
            # first entry stored is kept, so they share one program and its kernels.
            entry = self.cache.setdefault(
                key, self._trace(args, static_kw, positions, in_tree, avals))
            self._bound()
        else:
            try:
                self.cache.move_to_end(key)
            except KeyError:        # dropped by another thread meanwhile
                pass
        return key, entry, flat

    def _bound(self):
        size = max(1, config.trace_cache_size)
        while len(self.cache) > size:
            try:
                self.cache.popitem(last=False)
            except KeyError:        # emptied by another thread meanwhile
                break
        for fast in self.fast_by_x64:
            if len(fast) > size:
                for key, call in list(fast.items()):
                    if call.trace_key not in self.cache:
                        fast.pop(key, None)

    def clear_cache(self):
        """Forget this function's traces (as JAX's jitted functions do)."""
        self.cache.clear()
        for fast in self.fast_by_x64:
            fast.clear()

    def _cache_size(self):
        return len(self.cache)

    def _trace(self, args, static_kw, positions, in_tree, avals):
        self.trace_count += 1
        out_tree_cell = []

        def flat_fun(*leaves):
            dyn, kw = tree_unflatten(in_tree, list(leaves))
            full = list(args)
            for i, d in zip(positions, dyn):
                full[i] = d
            out = self.fun(*full, **kw, **static_kw)
            flat_out, out_tree = tree_flatten(out)
            out_tree_cell.append(out_tree)
            return flat_out

        closed = optimize(stage_flat(flat_fun, list(avals)))
        return closed, out_tree_cell[0]

    def __call__(self, *args, **kwargs):
        if not kwargs and current_trace() is EVAL and not config.disable_jit:
            # The fast path: Arrays in, nothing to transform. The key is cheap to
            # build and the compiled driver is called directly, without bind.
            try:
                key = _fast_key(args)
            except AttributeError:
                key = None
            fast = self.fast_by_x64[config.enable_x64].get(key)
            if fast is not None:
                try:
                    self.cache.move_to_end(fast.trace_key)     # (least recently used)
                except KeyError:    # its trace was dropped: trace again below
                    fast = None
            if fast is not None:
                out = fast(args)
                if out is not _OTHER_DEVICE:
                    return out
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        trace_key, (closed, out_tree), flat = self._stage_keyed(args, kwargs)
        out = tree_unflatten(out_tree, closed.call(*flat))
        if not kwargs and not self.static_argnums and current_trace() is EVAL \
                and all(isinstance(a, Array) for a in args) \
                and len({a.device for a in args}) <= 1 \
                and not any(isinstance(c, Tracer) for c in closed.consts):
            key = _fast_key(args)
            on_gpu = args and type(args[0]) is CudaArray
            call = (_fast_cuda_call(closed, out_tree, args[0].device) if on_gpu
                    else _fast_call(closed, out_tree))
            call.trace_key = trace_key
            self.fast_by_x64[config.enable_x64][key] = call
            self._bound()
        return out

    def lower(self, *args, **kwargs):
        (closed, _), _ = self._stage(args, kwargs)
        from ..kernels.cpu.lowering import compiled
        return Lowered(closed, compiled(closed.program))

    def trace(self, *args, **kwargs):
        (closed, _), _ = self._stage(args, kwargs)
        return closed


def _fast_key(args):
    """The fast path's key: type, shape and dtype of each Array argument (AttributeError
    for anything else). One argument, the common case, skips building a list."""
    if len(args) == 1:
        a = args[0]
        return type(a), a._value.shape, a._value.dtype
    return tuple([(type(a), a._value.shape, a._value.dtype) for a in args])


def _fast_call(closed, out_tree):
    from ..kernels.cpu.lowering import compiled
    run = compiled(closed.program)
    consts = [c._value if type(c) is Array else c for c in closed.consts]
    if out_tree.node_type is None:
        def call(args):
            return _wrap(run(*consts, *[a._value for a in args])[0])
    else:
        def call(args):
            outs = run(*consts, *[a._value for a in args])
            return tree_unflatten(out_tree, [_wrap(o) for o in outs])
    return call


# What a GPU fast path returns for arguments on another GPU than its own (the key
# holds types, shapes and dtypes, not devices): the call takes the general path.
_OTHER_DEVICE = object()


def _fast_cuda_call(closed, out_tree, device):
    """The fast path for arguments on a GPU: the program's cuda executable on device
    arrays, its host constants uploaded once."""
    from ..kernels.cuda import device_value
    from ..kernels.cuda.lowering import compiled
    run = compiled(closed.program)
    consts = [device_value(c, device.id) for c in closed.consts]

    def call(args):
        if any(a._device != device for a in args):
            return _OTHER_DEVICE
        outs = run(*consts, *[a._value for a in args])
        return tree_unflatten(out_tree, [CudaArray(o, device) for o in outs])
    return call


_live = weakref.WeakSet()    # every Jitted, for clear_caches


@register
def _clear_jitted():
    for jitted in list(_live):
        jitted.clear_cache()


class Lowered:
    def __init__(self, closed, executable):
        self.closed = closed
        self.executable = executable

    def as_text(self):
        return self.executable.source

    def compile(self):
        return self.executable


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=()):
    """Stage `fun` into a Program on its first call for each input shape/dtype, and run
    the compiled program afterwards. Usable as @jit or @jit(static_argnums=...)."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums)


def make_jaxpr(fun, static_argnums=()):
    """make_jaxpr(f)(*args) -> the Program that jit would stage, printable."""
    def staged(*args, **kwargs):
        return Jitted(fun, static_argnums).trace(*args, **kwargs)
    return staged


def _as_tuple(x):
    if x is None:
        return ()
    return (x,) if isinstance(x, (int, str)) else tuple(x)


def _hashable_static(value, what):
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"jit: static {what} must be hashable, got a value of type "
                        f"{type(value).__name__}; pass a tuple instead of a list, or make "
                        f"the argument non-static") from None
    return value


def _describe(avals):
    return ", ".join(str(a) for a in avals)


# --------------------------------------------------------------------------- vmap rules

@program_cache
def _batched_program(program, in_avals, batch_dims):
    """The staged vmap of a program over arguments of in_avals batched along
    batch_dims (None: unbatched), cached per program, and the batch axis of each
    output: 0, or None for outputs that do not depend on the batched arguments."""
    from .batching import vmap_flat
    size = next(a.shape[d] for a, d in zip(in_avals, batch_dims) if d is not None)
    run = lambda *xs: evaluate(program, [], list(xs))
    out_dims = []

    def batched(*xs):
        pairs = vmap_flat(run, xs, list(batch_dims), size, keep_unbatched=True)
        out_dims[:] = [0 if b else None for _, b in pairs]
        return [o for o, _ in pairs]
    return optimize(stage_flat(batched, list(in_avals))), tuple(out_dims)


def _jit_call_batch(args, batch_dims, program):
    # vmap(jit(f)) stays one compiled call: jit the vmapped program.
    avals = tuple(ShapedArray(x.shape, x.dtype) for x in args)
    closed, out_dims = _batched_program(program, avals, tuple(batch_dims))
    return closed.call(*args), list(out_dims)


def _custom_call_batch(args, batch_dims, rules, program):
    # Reached only by binding directly: vmap itself hands custom rules to
    # BatchTrace.process_custom, which does the same.
    from .batching import batch_rules, moveaxis_to
    size = next(x.shape[d] for x, d in zip(args, batch_dims) if d is not None)
    moved = [x if d is None else moveaxis_to(x, d, 0) for x, d in zip(args, batch_dims)]
    outs = bind_custom(batch_rules(rules, [d is not None for d in batch_dims], size), moved)
    return outs, [0] * len(outs)


jit_call_p.batch = _jit_call_batch
custom_call_p.batch = _custom_call_batch
