"""jit: stage a function into a Program on its first call per input signature, and
run it as one `jit_call` afterwards.

A call with only Arrays, outside any transform, takes the fast path: the compiled
executable of the backend owning the arguments, looked up by the arguments' types,
shapes and dtypes, with no bind in between.
"""
import collections
import functools
import inspect
import weakref

from .. import backend, config
from ..backend import OTHER_DEVICE
from ..abstract import ShapedArray
from ..array import Array
from ..cache import register
from ..errors import ArgnumsError
from ..core import EVAL, Tracer, current_trace
from ..tree_util import tree_flatten, tree_unflatten
from ..transforms._util import as_value, check_argnums, resolve_argnums
from .call import call
from .staging import stage


# --------------------------------------------------------------------------- the jit API

class Jitted:
    """The function returned by fnad.jit."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
                 donate_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = check_argnums(static_argnums, "jit", "static_argnums", True)[1]
        self.static_argnames = _as_tuple(static_argnames)
        self.donate_argnums = check_argnums(donate_argnums, "jit", "donate_argnums", True)[1]
        self.donate_argnames = _as_tuple(donate_argnames)
        _check_donation(self.static_argnums, self.donate_argnums, self.static_argnames,
                        self.donate_argnames)
        self.donating = {}          # trace key -> [donated leaves, executable, its device]
        self.donates = bool(self.donate_argnums or self.donate_argnames)
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
                for key, entry in list(fast.items()):
                    if entry.trace_key not in self.cache:
                        fast.pop(key, None)

    def clear_cache(self):
        """Forget this function's traces (as JAX's jitted functions do)."""
        self.cache.clear()
        self.donating.clear()
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

        closed = stage(flat_fun, avals)
        return closed, out_tree_cell[0]

    def __call__(self, *args, **kwargs):
        if self.donates and current_trace() is EVAL and not config.disable_jit:
            return self._call_donating(args, kwargs)
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
                if out is not OTHER_DEVICE:
                    return out
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        trace_key, (closed, out_tree), flat = self._stage_keyed(args, kwargs)
        out = tree_unflatten(out_tree, call(closed, *flat))
        if not kwargs and not self.static_argnums and current_trace() is EVAL \
                and all(isinstance(a, Array) for a in args) \
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
        arrays = all(isinstance(x, Array) for x in flat)
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
            if isinstance(flat[position], Array):
                flat[position].delete()
        return out

    def _donated_leaves(self, args, kwargs):
        """The positions, among the flattened dynamic arguments, of the donated leaves."""
        _, positions, dynamic, dyn_kwargs, _ = self._split(args, kwargs)
        donate = set(resolve_argnums(self.donate_argnums, len(args), "jit", "donate_argnums"))
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


def _fast_key(args):
    """The fast path's key: type, shape and dtype of each Array argument (AttributeError
    for anything else). One argument, the common case, skips building a list."""
    if len(args) == 1:
        a = args[0]
        return type(a), a._value.shape, a._value.dtype
    return tuple([(type(a), a._value.shape, a._value.dtype) for a in args])


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


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=()):
    """Stage `fun` into a Program on its first call for each input shape/dtype, and run
    the compiled program afterwards. Usable as @jit or @jit(static_argnums=...).

    Arguments named by donate_argnums / donate_argnames are consumed by each call made
    outside any transform: their Arrays are deleted afterwards (using one raises
    DeletedArrayError), and the cpu backend writes results of the same shape and
    dtype into their buffers instead of allocating new ones, as JAX does."""
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)


def make_jaxpr(fun, static_argnums=()):
    """make_jaxpr(f)(*args) -> the Program that jit would stage, printable."""
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
