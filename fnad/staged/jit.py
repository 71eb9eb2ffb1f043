"""jit: stage a function into a Program on its first call per input signature, and
run it as one `jit_call` afterwards.

A call with only Arrays, outside any transform, takes the fast path: the compiled
executable of the backend owning the arguments, looked up by the arguments' types,
shapes and dtypes, with no bind in between.
"""
import collections
import functools
import inspect
import time
import types
import weakref
from typing import Any, Callable, Generic, Iterable, ParamSpec, Sequence, TypeVar, overload

from .. import backend, config, events, tracebacks
from ..backend import OTHER_DEVICE
from ..abstract import ShapedArray
from ..array import Array
from ..cache import register
from ..errors import ArgnumsError, DTypeError
from ..core import EVAL, Tracer, current_trace
from ..primitives.collectives import axis_env_key
from ..tree_util import tree_flatten, tree_unflatten
from ..transforms._util import as_value, check_argnums, resolve_argnums
from .call import call
from . import debug_nans
from .eval_shape import ShapeDtypeStruct
from .staging import stage


# --------------------------------------------------------------------------- the jit API

# For annotations: a jitted function takes the arguments and gives the result of the
# function it wraps.
P = ParamSpec("P")
R = TypeVar("R")


class Jitted(Generic[P, R]):
    """The function returned by fnad.jit. Its traces and compiled calls belong to the
    wrapped function and the jit options (see `_setup_of`), not to this wrapper, so
    `jit(f)(x)` written inline traces f once, as in JAX."""

    def __init__(self, fun: Callable[P, R], static_argnums: Any = (), static_argnames: Any = (),
                 donate_argnums: Any = (), donate_argnames: Any = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        # (Checked and completed once per function and options: an inline jit(f)(x)
        # makes a new wrapper at every call.)
        setup = _setup_of(fun, (static_argnums, static_argnames, donate_argnums,
                                donate_argnames))
        (self.signature, self.static_argnums, self.static_argnames, self.donate_argnums,
         self.donate_argnames, traces) = setup
        self.donates = bool(self.donate_argnums or self.donate_argnames)
        self._positions = traces.positions  # number of positional args -> (static, donated)
        self._traces = traces
        self.cache = traces.cache
        self.fast_by_x64 = traces.fast_by_x64
        self.donating = traces.donating

    @property
    def trace_count(self):
        """How many times the function was traced under these options (by any wrapper)."""
        return self._traces.trace_count

    def __get__(self, obj, objtype=None):
        # A jitted function stored on a class binds like a function: D().f(x) calls
        # the jitted f with the instance first (a static argument if marked so).
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def _call_positions(self, nargs):
        """(static positions, donated positions) for a call with nargs positional
        arguments. A position the signature has but the call leaves out is passed by
        name or takes its default; one beyond the signature is an error."""
        found = self._positions.get(nargs)
        if found is None:
            found = self._positions[nargs] = (
                self._present(self.static_argnums, nargs, "static_argnums"),
                self._present(self.donate_argnums, nargs, "donate_argnums"))
        return found

    def _present(self, nums, nargs, what):
        declared = _positional_count(self.signature)
        inside = [n for n in nums if -nargs <= n < nargs
                  or not (0 <= n < declared)]   # (resolve_argnums explains the rest)
        return frozenset(resolve_argnums(inside, nargs, "jit", what))

    def _split(self, args, kwargs):
        static = []
        static_argnums = sorted(self._call_positions(len(args))[0])
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
        try:
            flat = [as_value(x, "jit argument") for x in flat]
        except DTypeError:
            raise
        except TypeError as err:
            raise TypeError(f"{err}. jit({_name_of(self.fun)}) traces array arguments; mark a "
                            f"Python object static with static_argnums/static_argnames "
                            f"(a method's `self`: functools.partial(jit, "
                            f"static_argnums=0)) or register its class as a pytree") from None
        weak = tuple(getattr(x, "weak_type", False) for x in flat)
        avals = tuple(ShapedArray(x.shape, x.dtype, w) for x, w in zip(flat, weak))
        # x64 and the bound axis names (vmap's axis_size) change what f traces to, and
        # so do arguments made from Python scalars (they promote like them)
        key = (in_tree, avals, weak, static, config.enable_x64, axis_env_key())
        entry = self.cache.get(key)
        if entry is None:
            if config.explain_cache_misses and self.cache:
                events.logger.warning("fnad.jit: tracing %s again: no cached trace for %s "
                                      "with static args %s", _name_of(self.fun),
                                      _describe(avals), static)
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
        self._traces.bound()

    def clear_cache(self):
        """Forget this function's traces (as JAX's jitted functions do)."""
        self._traces.clear()

    def _cache_size(self):
        return len(self.cache)

    def _trace(self, args, static_kw, positions, in_tree, avals):
        self._traces.trace_count += 1
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

        start = time.perf_counter()
        with events.span(f"trace {_name_of(self.fun)}", "staging"):
            closed = stage(flat_fun, avals)
        if config.log_compiles:
            events.logger.warning("fnad: traced %s for %s in %.3f s (%d equations)",
                                  _name_of(self.fun), _describe(avals),
                                  time.perf_counter() - start, len(closed.program.eqns))
        return closed, out_tree_cell[0]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        # The API boundary: an error from tracing or running the function leaves with
        # fnad's frames removed from its traceback (fnad.tracebacks).
        try:
            if not kwargs and not self.donates and current_trace() is EVAL \
                    and not config.disable_jit and events.recording is None \
                    and not config.debug_nans:
                # The fast path: Arrays in, nothing to transform, nothing observing.
                # The key is cheap to build and the compiled driver is called
                # directly, without bind. (Inline: this is jit's per-call cost.)
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
                    if out is not OTHER_DEVICE:
                        return out
            if events.recording is None and not config.debug_nans:
                return self._call(args, kwargs)
            return self._call_observed(args, kwargs)
        except Exception as err:
            raise tracebacks.filtered(err)

    def _call_observed(self, args, kwargs):
        """A call while the profiler records (one event for the whole call) or
        config.debug_nans looks for NaNs in what it returns."""
        start = events.now()
        try:
            out = self._call(args, kwargs)
        finally:
            events.record(f"jit({_name_of(self.fun)})", "jit", start)
        if config.debug_nans and current_trace() is EVAL and not config.disable_jit:
            debug_nans.check(self.fun, _name_of(self.fun), out, args, kwargs)
        return out

    def _call(self, args, kwargs):
        if self.donates and current_trace() is EVAL and not config.disable_jit:
            return self._call_donating(args, kwargs)
        if not kwargs and current_trace() is EVAL and not config.disable_jit:
            # The fast path again, for calls __call__ did not take it for (observed
            # ones, or after a dropped trace).
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
                if out is not OTHER_DEVICE:
                    return out
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        traced, start = self._traces.trace_count, time.perf_counter()
        trace_key, (closed, out_tree), flat = self._stage_keyed(args, kwargs)
        out = tree_unflatten(out_tree, call(closed, *flat))
        if self._traces.trace_count != traced:
            _first_call_took(_name_of(self.fun), time.perf_counter() - start)
        # The fast table's key has no axis names: a trace made while names are bound
        # (inside shard_map) may depend on them (lax.axis_size is a Python int), so
        # only traces made with none bound go there (they cannot name an axis).
        if not kwargs and not self._call_positions(len(args))[0] \
                and current_trace() is EVAL and not trace_key[-1] \
                and all(_concrete(a) for a in args) \
                and len({a.device for a in args}) <= 1 \
                and not any(isinstance(c, Tracer) for c in closed.consts):
            key = _fast_key(args)
            owner = backend.of(args[0]) if args else backend.host()
            fast = owner.executable(closed, out_tree, args[0].device if args else None)
            fast.trace_key = trace_key
            self.fast_by_x64[config.enable_x64][key] = fast
            self._bound()
        return out

    def _call_donating(self, args, kwargs):
        """A call outside any transform that consumes its donated arguments: their
        Arrays are deleted afterwards, and the backend may write results into their
        buffers meanwhile (the cpu backend does, where no one else holds them)."""
        trace_key, (closed, out_tree), flat = self._stage_keyed(args, kwargs)
        # The donated leaves follow from the trace key (tree structure and static
        # arguments), so they are found once per trace, with its executable.
        entry = self.donating.get(trace_key)
        if entry is None:
            entry = self.donating[trace_key] = [self._donated_leaves(args, kwargs), None, None]
        donated, run, device = entry
        arrays = all(_concrete(x) for x in flat)
        devices = {x.device for x in flat} if arrays else ()
        if arrays and len(devices) == 1 \
                and not any(isinstance(c, Tracer) for c in closed.consts):
            if run is None or device != flat[0].device:   # (devices are not in the key)
                run = entry[1] = backend.of(flat[0]).executable(
                    closed, out_tree, flat[0].device, donated)
                entry[2] = flat[0].device
            out = run(flat)
        else:
            out = tree_unflatten(out_tree, call(closed, *flat))
        for position in donated:
            if _concrete(flat[position]):
                flat[position].delete()
        return out

    def _donated_leaves(self, args, kwargs):
        """The positions, among the flattened dynamic arguments, of the donated leaves."""
        _, positions, dynamic, dyn_kwargs, _ = self._split(args, kwargs)
        donate = self._call_positions(len(args))[1]
        leaves, start = [], 0
        for i, value in zip(positions, dynamic):
            n = len(tree_flatten(value)[0])
            if i in donate:
                leaves += range(start, start + n)
            start += n
        for name in sorted(dyn_kwargs):      # (dicts flatten in sorted key order)
            n = len(tree_flatten(dyn_kwargs[name])[0])
            if name in self.donate_argnames:
                leaves += range(start, start + n)
            start += n
        return tuple(leaves)

    def lower(self, *args, **kwargs):
        (closed, _), _ = self._stage(args, kwargs)
        return Lowered(closed, backend.host().compile(closed.program))

    def trace(self, *args, **kwargs):
        (closed, _), _ = self._stage(args, kwargs)
        return closed

    def eval_shape(self, *args, **kwargs):
        """The shapes and dtypes of this function's outputs for these arguments, as a
        pytree of ShapeDtypeStruct; nothing runs (the trace is cached for the call)."""
        (closed, out_tree), _ = self._stage(args, kwargs)
        return tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype)
                                         for a in closed.program.out_avals])

    def __repr__(self):
        return f"<fnad.jit of {self.fun!r}>"


def _concrete(x):
    # (isinstance(tracer, Array) holds, as in JAX: a concrete value is an Array that is
    # no Tracer.)
    return isinstance(x, Array) and not isinstance(x, Tracer)


def _fast_key(args):
    """The fast path's key: type, shape and dtype of each Array argument, and for a 0-d
    one whether it is weak (only an array made from one Python scalar can be, so larger
    ones skip the check); AttributeError for anything else. One argument, the common
    case, skips building a list."""
    if len(args) == 1:
        a = args[0]
        shape = a._value.shape
        return (type(a), shape, a._value.dtype, a.weak_type) if not shape else \
            (type(a), shape, a._value.dtype)
    return tuple([(type(a), a._value.shape, a._value.dtype, a.weak_type) if not a._value.shape
                  else (type(a), a._value.shape, a._value.dtype) for a in args])


class _Traces:
    """The traces of one function under one set of jit options, and the compiled calls
    of its fast path: kept for as long as the function lives."""
    __slots__ = ("cache", "fast_by_x64", "donating", "trace_count", "positions",
                 "__weakref__")

    def __init__(self):
        # At most config.trace_cache_size traces, the least recently used dropped first;
        # a fast-path entry (its call's trace_key names its trace) goes with its trace.
        self.cache = collections.OrderedDict()  # trace key -> (ClosedProgram, out tree)
        # (type, shape, dtype) per Array argument -> compiled call; one table per x64
        # setting, so the hot path's key needs no flag in it.
        self.fast_by_x64 = ({}, {})
        self.donating = {}      # trace key -> [donated leaves, executable, its device]
        self.trace_count = 0
        self.positions = {}     # number of positional arguments -> (static, donated)
        _live.add(self)

    def bound(self):
        size = max(1, config.trace_cache_size)
        while len(self.cache) > size:
            try:
                self.cache.popitem(last=False)
            except KeyError:        # emptied by another thread meanwhile
                break
        for fast in self.fast_by_x64:
            if len(fast) > size:
                for key, entry in list(fast.items()):
                    if entry.trace_key not in self.cache:
                        fast.pop(key, None)

    def clear(self):
        self.cache.clear()
        self.donating.clear()
        for fast in self.fast_by_x64:
            fast.clear()


_live = weakref.WeakSet()    # every _Traces, for clear_caches
# function -> {jit options -> _Traces}. Weak in the function, so a function (a lambda
# jitted inline, say) takes its traces with it when it is collected. As in JAX, a
# function is traced once per options and input signature: a global it reads is read
# when it is traced, not at each call (jit(f)(x) after changing the global reuses the
# trace; jax.clear_caches() or f.clear_cache() forgets it).
_by_function = weakref.WeakKeyDictionary()


def _setup_of(fun, given):
    """(signature, static_argnums, static_argnames, donate_argnums, donate_argnames,
    _Traces) for jit(fun, *given): the options checked and completed through the
    signature, and the traces every jit of `fun` with those options shares. A bound
    method is made anew at each attribute access, so its jits share nothing (nor do
    callables that cannot be weakly referenced or hashed)."""
    per_function = None
    if not isinstance(fun, types.MethodType):
        try:
            per_function = _by_function.get(fun)
            if per_function is None:
                per_function = _by_function.setdefault(fun, {})
        except TypeError:
            pass
    # (By repr: argnums=True must not find the entry of argnums=1, which equals it.)
    given_key = ("given", repr(given))
    setup = per_function.get(given_key) if per_function is not None else None
    if setup is not None:
        return setup
    signature = signature_or_none(fun)
    static_argnums, static_argnames, donate_argnums, donate_argnames = given
    static_argnums = check_argnums(static_argnums, "jit", "static_argnums", True)[1]
    donate_argnums = check_argnums(donate_argnums, "jit", "donate_argnums", True)[1]
    static_argnames, donate_argnames = _as_tuple(static_argnames), _as_tuple(donate_argnames)
    _check_donation(static_argnums, donate_argnums, static_argnames, donate_argnames)
    # Each argument is static (or donated) however it is passed: a name given is also
    # its position, a position also its name, as the signature says.
    options = (*argnums_both_ways(signature, static_argnums, static_argnames, "static"),
               *argnums_both_ways(signature, donate_argnums, donate_argnames, "donate"))
    _check_donation(*options[0::2], *options[1::2])
    if per_function is None:
        traces = _Traces()
    else:
        traces = per_function.get(options)
        if traces is None:
            traces = per_function.setdefault(options, _Traces())
    setup = (signature, *options, traces)
    if per_function is not None:
        per_function[given_key] = setup
    return setup


@register
def _clear_jitted():
    for traces in list(_live):
        traces.clear()


class Lowered:
    def __init__(self, closed, executable):
        self.closed = closed
        self.executable = executable

    def as_text(self):
        return self.executable.source

    def compile(self):
        return self.executable


@overload
def jit(fun: Callable[P, R], *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Iterable[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Iterable[str] = ()) -> Jitted[P, R]: ...


@overload
def jit(fun: None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Iterable[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Iterable[str] = ()) -> Callable[[Callable[P, R]], Jitted[P, R]]:
    ...


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=()):
    """Stage `fun` into a Program on its first call for each input shape/dtype, and run
    the compiled program afterwards. Usable as @jit or @jit(static_argnums=...).

    Arguments named by donate_argnums / donate_argnames are consumed by each call made
    outside any transform: their Arrays are deleted afterwards (using one raises
    DeletedArrayError), and the cpu backend writes results of the same shape and
    dtype into their buffers instead of allocating new ones, as JAX does.

    The cache key is the function, the pytree structure, shapes, dtypes and devices of
    the arguments and the values of the static ones; a new key traces again
    (fnad.config.explain_cache_misses says why). Compiled kernels are cached by
    structure on disk, so a new shape or a new process seldom recompiles. A Python
    `if` on a traced value raises ConcretizationError (use lax.cond, or make the
    argument static). Differences from JAX: the first call runs the fused loops through
    numpy while Numba compiles them in the background (fnad.config.background_compile).

    >>> @fnad.jit
    ... def step(x, lr):
    ...     return x - lr * fnad.grad(lambda v: fnp.sum(v ** 2))(x)
    >>> step(fnp.asarray([1.0, -2.0]), 0.25)
    Array([ 0.5, -1. ], dtype=float32)
    >>> scale = fnad.jit(lambda x, n: x * n, static_argnums=1)
    >>> scale(fnp.ones(2), 3)
    Array([3., 3.], dtype=float32)
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)


def make_jaxpr(fun, static_argnums=()):
    """make_jaxpr(f)(*args) -> the Program that jit would stage, printable.

    >>> print(fnad.make_jaxpr(lambda x: fnp.sum(x * 2.0))(fnp.ones(3)))
    { lambda  ; a:float32[3]. let
        b:float32[3] = mul a 2.0:float32
        c:float32[] = reduce_sum[axes=(0,)] b
      in ( c ) }
    """
    def staged(*args, **kwargs):
        return Jitted(fun, static_argnums).trace(*args, **kwargs)
    return staged


def _check_donation(static_argnums, donate_argnums, static_argnames, donate_argnames):
    for what, static, donated in (("argnums", static_argnums, donate_argnums),
                                  ("argnames", static_argnames, donate_argnames)):
        both = sorted(set(static) & set(donated))
        if both:
            raise ArgnumsError(f"jit: static_{what} and donate_{what} both name {both}: a "
                               f"static argument is a Python value, not a buffer to donate")
    for name in donate_argnames:
        if not isinstance(name, str):
            raise ArgnumsError(f"jit: donate_argnames must hold argument names (str), got "
                               f"{name!r} of type {type(name).__name__}")


def signature_or_none(fun):
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):     # (some builtins have none)
        return None


def _positional_count(signature):
    """How many parameters can be passed by position (all of them with *args)."""
    if signature is None:
        return 0
    count = 0
    for p in signature.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return float("inf")
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def argnums_both_ways(signature, nums, names, what, caller="jit"):
    """(argnums, argnames) completed with each other through the signature: the name
    of each position that can also be passed by name, the position of each name that
    can also be passed by position. A name the function does not take is an error."""
    if signature is None:
        return tuple(nums), tuple(names)
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params)
    known = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD,
                                                      p.POSITIONAL_ONLY)}
    unknown = [n for n in names if n not in known]
    if unknown and not takes_kwargs:
        raise ArgnumsError(f"{caller}: {what}_argnames={tuple(names)!r} names {unknown}, which "
                           f"the function does not take by name (its parameters: "
                           f"{[p.name for p in params]})")
    if _positional_count(signature) == len(positional):     # (no *args)
        # A position counted from the end is the parameter it counts back to.
        nums = [n + len(positional) if -len(positional) <= n < 0 else n for n in nums]
    nums, names = list(nums), list(names)
    for i, p in enumerate(positional):
        if p.kind is p.POSITIONAL_OR_KEYWORD:
            if i in nums and p.name not in names:
                names.append(p.name)
            if p.name in names and i not in nums:
                nums.append(i)
    return tuple(nums), tuple(names)


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


def _name_of(fun):
    """A name for `fun` in messages: its own, a partial's function's, or its type's."""
    name = getattr(fun, "__name__", None)
    if name is None and isinstance(fun, functools.partial):
        return f"partial({_name_of(fun.func)})"
    return name or type(fun).__name__


# A first call slower than this is worth a line in the log: the user sees a pause.
SLOW_FIRST_CALL_SECONDS = 1.0


def _first_call_took(name, seconds):
    if seconds > SLOW_FIRST_CALL_SECONDS or config.log_compiles:
        events.logger.warning(
            "fnad: the first call of jit(%s) took %.1f s (tracing, optimizing, lowering "
            "and running it%s)", name, seconds,
            "; its kernels compile in the background" if config.background_compile
            else ", compiling its kernels")
