"""numpy's own functions on fnad values: NEP 13 (``__array_ufunc__``) and NEP 18
(``__array_function__``).

``np.exp(x)``, ``np.sum(x, axis=0)``, ``np.where(c, x, y)``, ``np.add.reduce(x)`` on
an Array or a tracer run the fnad.numpy function of the same meaning, so they are
differentiated, jitted and batched like ``fnp.exp``. Without this numpy would turn a
tracer into a plain array and the transform would silently lose it (a dropped
derivative is a wrong number with no error).

The table is derived from the names themselves: a numpy function or ufunc maps to
the fnad.numpy (or fnad.numpy.linalg) function of the same public name; `EXTRA` and
the ufunc-method tables below list the few exceptions. A call is translated through
numpy's own signature, so a positional ``out`` or a renamed parameter cannot land on
the wrong fnad argument, and an argument fnad cannot honour is an error, never
ignored. Array and Tracer get the two protocol methods from `fnad.numpy._methods`.
"""
import functools
import inspect

import numpy as np

from ..array import Array
from ..core import Tracer
from ..errors import ImmutableArrayError, NumpyFunctionError
from . import _core, _shapes

_NO_VALUE = np._NoValue


def _is_fnad_function(obj):
    return callable(obj) and not isinstance(obj, type) and \
        (getattr(obj, "__module__", None) or "").startswith("fnad.")


def _is_numpy_function(obj):
    return isinstance(obj, np.ufunc) or (callable(obj) and not isinstance(obj, type))


def _copy(a, order="K", subok=False):
    return _core.as_operand(a)      # Arrays are immutable: a copy is the value itself


def _each(fn):
    """numpy's atleast_Nd(*arys): one array for one argument, a tuple for several."""
    def call(*arys):
        out = tuple(fn(a) for a in arys)
        return out[0] if len(out) == 1 else out
    call.__name__ = fn.__name__
    return call


# numpy functions whose fnad counterpart has another name or shape of call.
EXTRA = {
    np.copy: _copy,
    np.atleast_1d: _each(_shapes.atleast_1d),
    np.atleast_2d: _each(_shapes.atleast_2d),
}

# numpy arguments under another name in fnad, per numpy function.
RENAMED = {np.clip: {"min": "a_min", "max": "a_max"}}

# ufunc methods: (ufunc name -> fnad.numpy function name, numpy's default axis).
REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
          "logical_and": "all", "logical_or": "any"}
ACCUMULATE = {"add": "cumsum", "multiply": "cumprod"}

# Arguments that change nothing for immutable fnad arrays, whatever their value.
_HARMLESS = {"subok", "copy", "overwrite_input"}


def _ignorable(name, value, default):
    if name in _HARMLESS or value is default:
        return True
    if name == "where":
        return value is True
    if name == "device":
        return value is None or value == "cpu"
    return isinstance(value, (str, bool, int, type(None))) and \
        type(value) is type(default) and value == default


class Counterpart:
    """How a call of one numpy function becomes a call of its fnad function."""

    def __init__(self, np_func, fn, fnad_name):
        self.name = f"{getattr(np_func, '__module__', None) or 'numpy'}.{np_func.__name__}"
        self.fn = fn
        self.fnad_name = fnad_name
        try:
            self.np_sig = inspect.signature(np_func)
            fn_params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            self.np_sig, self.fast = None, 0
            return
        self.fn_params = fn_params
        self.renamed = _renames(self.np_sig.parameters, fn_params,
                                RENAMED.get(np_func, {}))
        self.fast = _positional_agreement(self.np_sig.parameters, fn_params, self.renamed)

    def __call__(self, args, kwargs):
        if not kwargs and len(args) <= self.fast:
            return self.fn(*args)
        if self.np_sig is None:
            return self.fn(*args, **_drop_out(self.name, kwargs))
        bound = self.np_sig.bind(*args, **kwargs)   # numpy's own TypeError if misused
        positional, named = [], {}
        for name, value in bound.arguments.items():
            kind = self.np_sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                positional.extend(value)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                for key, item in value.items():
                    self._pass(key, item, _NO_VALUE, named)
            else:
                self._pass(name, value, self.np_sig.parameters[name].default, named)
        return self.fn(*positional, **named)

    def _pass(self, name, value, default, named):
        if name == "out":
            _drop_out(self.name, {"out": value})
            return
        target = self.renamed.get(name, name)
        if target in self.fn_params:
            named[target] = value
        elif not _ignorable(name, value, default):
            raise NumpyFunctionError(
                f"{self.name}(..., {name}={_describe(value)}) on fnad arrays: fnad's "
                f"counterpart {self.fnad_name} has no {name!r} argument. Leave it out, or "
                f"call np.asarray(x) first to work on a numpy copy (outside transforms: "
                f"the copy is not differentiated, jitted or batched).")


def _describe(value):
    if isinstance(value, (Array, Tracer, np.ndarray)):
        return f"<{type(value).__name__} {value.dtype}{list(value.shape)}>"
    return repr(value)


def _renames(np_params, fn_params, explicit):
    """numpy parameter -> fnad parameter, where numpy names a positional parameter
    differently (``np.reshape(a, shape)`` and ``fnp.reshape(a, newshape)``)."""
    renamed = dict(explicit)
    np_pos, fn_pos = _positional(np_params), _positional(fn_params)
    for np_name, fn_name in zip(np_pos, fn_pos):
        if np_name not in fn_params and fn_name not in np_params:
            renamed[np_name] = fn_name
    return renamed


def _positional(params):
    return [name for name, p in params.items() if p.kind in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]


def _positional_agreement(np_params, fn_params, renamed):
    """How many leading positional arguments can go to fnad unchanged: the cheap path
    for ``np.sum(x)`` or ``np.where(c, x, y)``."""
    first = next(iter(np_params.values()), None)
    if first is not None and first.kind is inspect.Parameter.VAR_POSITIONAL:
        return 1 << 30 if any(p.kind is inspect.Parameter.VAR_POSITIONAL
                              for p in fn_params.values()) else 0
    agree = 0
    for np_name, fn_name in zip(_positional(np_params), _positional(fn_params)):
        if np_name == "out" or renamed.get(np_name, np_name) != fn_name:
            break
        agree += 1
    return agree


def _drop_out(name, kwargs):
    out = kwargs.get("out")
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise ImmutableArrayError(
            f"{name}(..., out=...) with fnad arrays: fnad arrays are immutable and fnad "
            f"never writes into an existing array (numpy's in-place operators such as "
            f"`a += x` on a numpy array `a` pass out=a too). Use the returned value: "
            f"`y = np.{name.rpartition('.')[2]}(...)`, or `a = a + x`.")
    return {k: v for k, v in kwargs.items() if k != "out"}


_namespaces = {}     # numpy module -> the names of its fnad counterpart


def register(numpy_names, linalg_names):
    """Called by fnad.numpy once its names exist (it sits above Array and Tracer, so
    it hands them down instead of being imported from below)."""
    _namespaces[np] = numpy_names
    _namespaces[np.linalg] = linalg_names
    counterparts.cache_clear()


@functools.cache
def counterparts():
    """numpy function or ufunc -> Counterpart, built on first use."""
    table = {}
    for np_module, fnad_names in _namespaces.items():
        fnad_module = "fnad." + np_module.__name__
        for name in dir(np_module):
            if name.startswith("_"):
                continue
            np_func, fn = getattr(np_module, name), fnad_names.get(name)
            if _is_fnad_function(fn) and _is_numpy_function(np_func):
                table.setdefault(np_func, (fn, f"{fnad_module}.{name}"))
    for np_func, fn in EXTRA.items():
        table[np_func] = (fn, f"fnad's {np_func.__name__}")
    return {np_func: Counterpart(np_func, fn, fnad_name)
            for np_func, (fn, fnad_name) in table.items()}


def _no_counterpart(what):
    return NumpyFunctionError(
        f"{what} has no fnad counterpart, so it cannot run on fnad arrays (nor be "
        f"differentiated, jitted or batched). Outside transforms, call np.asarray(x) "
        f"first to work on a numpy copy; inside them, write it with fnad.numpy or "
        f"fnad.lax operations.")


_NUMPY_DEFAULTS = (np.ndarray.__array_function__, np.ndarray.__array_ufunc__)


def _ours(types):
    """Every operand type is fnad's or plain numpy's (whose protocol methods are
    numpy's defaults): another library's array decides for itself."""
    return all(issubclass(t, (Array, Tracer))
               or getattr(t, "__array_function__", None) in _NUMPY_DEFAULTS
               or getattr(t, "__array_ufunc__", None) in _NUMPY_DEFAULTS
               for t in types)


# --------------------------------------------------------------------------- the protocols

def array_function(self, func, types, args, kwargs):
    """NEP 18: numpy function `func` called with fnad values among its arguments."""
    if not _ours(types):
        return NotImplemented       # another library's array takes part: let it decide
    counterpart = counterparts().get(func)
    if counterpart is None:
        raise _no_counterpart(f"{func.__module__}.{func.__name__}")
    return counterpart(args, kwargs)


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NEP 13: numpy ufunc (or one of its methods) applied with fnad operands."""
    if not _ours(type(x) for x in inputs + kwargs.get("out", ())
                 if hasattr(type(x), "__array_ufunc__")):
        return NotImplemented
    name = f"numpy.{ufunc.__name__}"
    kwargs = _drop_out(name if method == "__call__" else f"{name}.{method}", kwargs)
    if method == "__call__":
        counterpart = counterparts().get(ufunc)
        if counterpart is None:
            raise _no_counterpart(name)
        _check_ufunc_kwargs(name, kwargs, ())
        return counterpart.fn(*inputs)
    if method == "reduce" and ufunc.__name__ in REDUCE:
        return _reduce(name, REDUCE[ufunc.__name__], *inputs, **kwargs)
    if method == "accumulate" and ufunc.__name__ in ACCUMULATE:
        return _reduce(name, ACCUMULATE[ufunc.__name__], *inputs, **kwargs)
    if method == "outer" and ufunc in counterparts():
        a, b = (_core.as_operand(x) for x in inputs)
        _check_ufunc_kwargs(name, kwargs, ())
        return counterparts()[ufunc].fn(_shapes.reshape(a, a.shape + (1,) * b.ndim), b)
    if method == "at":
        raise ImmutableArrayError(
            f"{name}.at on fnad arrays: fnad arrays are immutable; use "
            f"x.at[idx].add(v) (or .set, .multiply, .min, .max), which returns an "
            f"updated copy")
    raise _no_counterpart(f"{name}.{method}")


_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "subok": True,
                   "dtype": None, "signature": None}


def _check_ufunc_kwargs(name, kwargs, accepted):
    for key, value in kwargs.items():
        if key not in accepted and not _ignorable(key, value, _UFUNC_DEFAULTS.get(key)):
            raise NumpyFunctionError(
                f"{name}(..., {key}={_describe(value)}) is not supported on fnad arrays: fnad's "
                f"counterpart takes the operands only (cast with x.astype(dtype), select "
                f"with fnad.numpy.where), or call np.asarray(x) first to work on a numpy "
                f"copy outside transforms")


def _reduce(name, fn_name, array, axis=0, **kwargs):
    """``np.add.reduce(x)`` is ``fnp.sum(x, axis=0)``: numpy's default axis is 0."""
    fn = _namespaces[np][fn_name]
    accepted = inspect.signature(fn).parameters
    _check_ufunc_kwargs(name, kwargs, accepted)
    return fn(array, axis=axis, **{k: v for k, v in kwargs.items() if k in accepted})
