"""numpy's own functions on fnad values: NEP 13 (``__array_ufunc__``) and NEP 18
(``__array_function__``).

``np.exp(x)``, ``np.sum(x, axis=0)``, ``np.where(c, x, y)``, ``np.add.reduce(x)`` on
an Array or a tracer run the fnad.numpy function of the same meaning, so they are
differentiated, jitted and batched like ``fnp.exp``. Without this numpy would turn a
tracer into a plain array and the transform would silently lose it (a dropped
derivative is a wrong number with no error).

The table is derived from the names themselves: a numpy function or ufunc maps to
the fnad.numpy (or fnad.numpy.linalg, .fft) function of the same public name; `EXTRA` and
the ufunc-method tables below list the few exceptions. A call is translated through
numpy's own signature, so a positional ``out`` or a renamed parameter cannot land on
the wrong fnad argument, and an argument fnad cannot honour is never ignored. A call
fnad cannot run (no counterpart, or such an argument) raises on traced values and runs
numpy's own function on numpy copies of concrete Arrays, where nothing is lost.
``out=`` always raises: fnad never writes into an array. Array and Tracer get the two
protocol methods from `fnad.numpy._methods`.
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
    return callable(obj) and not isinstance(obj, type)     # functions and ufuncs


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

# ufunc.reduce and ufunc.accumulate: ufunc name -> the fnad.numpy function.
TABLES = {
    "reduce": {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
               "logical_and": "all", "logical_or": "any"},
    "accumulate": {"add": "cumsum", "multiply": "cumprod"},
}

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
        params = self.np_sig.parameters
        self.fn_params = fn_params
        self.renamed = _renames(params, fn_params, RENAMED.get(np_func, {}))
        self.fast = _positional_agreement(params, fn_params, self.renamed)
        self.positional = _positional(params)
        self.keywords = {n for n, p in params.items() if p.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
        self.simple = not any(p.kind in (inspect.Parameter.VAR_POSITIONAL,
                                         inspect.Parameter.VAR_KEYWORD)
                              for p in params.values())

    def translate(self, args, kwargs):
        """(positional, keyword) arguments for the fnad function, or a string saying
        which argument it cannot honour."""
        if not kwargs and len(args) <= self.fast:
            return args, kwargs
        if self.np_sig is None:
            return args, kwargs
        positional, named = [], {}
        for key, item in self._bind(args, kwargs, positional):
            target = self.renamed.get(key, key)
            if key == "out":
                _drop_out(self.name, {"out": item})
            elif target in self.fn_params:
                named[target] = item
            elif not _ignorable(key, item, self.np_sig.parameters[key].default
                                if key in self.np_sig.parameters else _NO_VALUE):
                return f"{self.name}(..., {key}={_describe(item)}): fnad's " \
                       f"counterpart {self.fnad_name} has no {key!r} argument"
        return positional, named

    def _bind(self, args, kwargs, positional):
        """numpy's arguments by name, as numpy binds them; *args go to `positional`."""
        if self.simple and len(args) <= len(self.positional) and \
                self.keywords.issuperset(kwargs) and \
                not any(name in kwargs for name in self.positional[:len(args)]):
            named = dict(zip(self.positional, args))
            named.update(kwargs)
            return named.items()
        bound = self.np_sig.bind(*args, **kwargs)   # numpy's own TypeError if misused
        items = []
        for name, value in bound.arguments.items():
            kind = self.np_sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                positional.extend(value)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                items.extend(value.items())
            else:
                items.append((name, value))
        return items


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


def register(numpy_names, linalg_names, fft_names):
    """Called by fnad.numpy once its names exist (it sits above Array and Tracer, so
    it hands them down instead of being imported from below)."""
    _namespaces[np] = numpy_names
    _namespaces[np.linalg] = linalg_names
    _namespaces[np.fft] = fft_names
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
                # an alias (np.concat is np.concatenate) defers to the function's own
                # name, whose fnad counterpart takes numpy's arguments
                if name == getattr(np_func, "__name__", None) or np_func not in table:
                    table[np_func] = (fn, f"{fnad_module}.{name}")
    for np_func, fn in EXTRA.items():
        table[np_func] = (fn, f"fnad's {np_func.__name__}")
    return {np_func: Counterpart(np_func, fn, fnad_name)
            for np_func, (fn, fnad_name) in table.items()}


def _on_numpy_copies(problem, numpy_fn, args, kwargs):
    """A call fnad cannot run as numpy would (`problem` says why). On concrete Arrays
    numpy's own function runs on numpy copies: nothing is being transformed, so
    nothing is lost (JAX's arrays behave so). A traced value raises."""
    tracer = next((a for a in _operands((args, tuple(kwargs.values())))
                   if isinstance(a, Tracer)), None)
    if tracer is None:
        values = _numpy_copies(list(kwargs.values()))
        return numpy_fn(*_numpy_copies(args), **dict(zip(kwargs, values)))
    raise NumpyFunctionError(
        f"{problem}, so it cannot run on a value traced by {tracer._trace.name} "
        f"({tracer.aval}): numpy's own function would see a plain array and the "
        f"transform would lose it. Write it with fnad.numpy or fnad.lax operations, or "
        f"apply it to the transform's result (outside transforms, numpy's function "
        f"runs on a numpy copy of concrete Arrays).")


def _operands(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _operands(a)
        else:
            yield a


def _numpy_copies(args):
    return type(args)(_numpy_copies(a) if isinstance(a, (list, tuple)) else
                      np.asarray(a) if isinstance(a, Array) else a for a in args)


@functools.cache
def _parameters(fn):
    return inspect.signature(fn).parameters


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
    name = f"{func.__module__}.{func.__name__}"
    kwargs = _drop_out(name, kwargs)
    counterpart = counterparts().get(func)
    call = counterpart.translate(args, kwargs) if counterpart is not None else \
        f"{name} has no fnad counterpart"
    if not isinstance(call, str):
        return counterpart.fn(*call[0], **call[1])
    return _on_numpy_copies(call, func, args, kwargs)


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NEP 13: numpy ufunc (or one of its methods) applied with fnad operands."""
    if not _ours(type(x) for x in inputs + kwargs.get("out", ())
                 if hasattr(type(x), "__array_ufunc__")):
        return NotImplemented
    name = f"numpy.{ufunc.__name__}"
    kwargs = _drop_out(name if method == "__call__" else f"{name}.{method}", kwargs)
    if method == "at":
        raise ImmutableArrayError(
            f"{name}.at on fnad arrays: fnad arrays are immutable; use "
            f"x.at[idx].add(v) (or .set, .multiply, .min, .max), which returns an "
            f"updated copy")
    counterpart = counterparts().get(ufunc)
    if method == "__call__":
        problem = _ufunc_problem(name, kwargs, ())
        if counterpart is None:
            problem = f"{name} has no fnad counterpart"
        elif problem is None:
            return counterpart.fn(*inputs)
    elif method in ("reduce", "accumulate") and ufunc.__name__ in TABLES[method]:
        fn = _namespaces[np][TABLES[method][ufunc.__name__]]
        accepted = _parameters(fn)
        problem = _ufunc_problem(f"{name}.{method}", kwargs, accepted)
        if problem is None:
            # numpy's default axis for reduce and accumulate is 0, not None
            return fn(inputs[0], axis=kwargs.pop("axis", 0),
                      **{k: v for k, v in kwargs.items() if k in accepted})
    elif method == "outer" and counterpart is not None:
        problem = _ufunc_problem(f"{name}.outer", kwargs, ())
        if problem is None:
            a, b = (_core.as_operand(x) for x in inputs)
            return counterpart.fn(_shapes.reshape(a, a.shape + (1,) * b.ndim), b)
    else:
        problem = f"{name}.{method} has no fnad counterpart"
    return _on_numpy_copies(problem, getattr(ufunc, method), inputs, kwargs)


_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "subok": True,
                   "dtype": None, "signature": None}


def _ufunc_problem(name, kwargs, accepted):
    for key, value in kwargs.items():
        if key not in accepted and not _ignorable(key, value, _UFUNC_DEFAULTS.get(key)):
            return f"{name}(..., {key}={_describe(value)}): fnad's counterpart has no " \
                   f"{key!r} argument (cast with x.astype(dtype), select with " \
                   f"fnad.numpy.where)"
    return None
