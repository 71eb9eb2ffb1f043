"""fnad.debug: see the values inside a transformed function, as JAX's jax.debug.

    fnad.debug.print("x={x} loss={}", loss, x=x)   # the values, under any transform
    fnad.debug.callback(fn, *args)                # fn(*numpy values) when they exist
    fnad.debug.breakpoint()                       # pdb over the arrays in scope

Each is a `debug_callback` equation (fnad.primitives.callbacks): under jit it runs
from the compiled program between kernels, in program order, at every call; under
grad and jvp it sees the primal values; under vmap it runs once per example (one
printed line per example, in batch order); inside scan and while_loop bodies once per
iteration. The optimizer never removes or reorders it.
"""
import pdb
import sys
from typing import Any, Callable

import numpy as np

from .array import Array
from .core import Tracer
from .primitives.callbacks import HostFunction, debug_callback_p, pure_callback_p
from .abstract import ShapedArray
from .errors import CallbackError
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["print", "callback", "breakpoint"]

_builtin_print = print


def _is_array(leaf):
    return isinstance(leaf, (Array, Tracer, np.ndarray, np.generic))


def _split_leaves(tree):
    """(the array leaves, a function rebuilding `tree` from their numpy values): other
    leaves (strings, Python numbers) stay as they are."""
    leaves, treedef = tree_flatten(tree)
    positions = [i for i, leaf in enumerate(leaves) if _is_array(leaf)]

    def rebuild(values):
        filled = list(leaves)
        for i, v in zip(positions, values):
            filled[i] = v
        return tree_unflatten(treedef, filled)
    return [leaves[i] for i in positions], rebuild


def callback(callback: Callable[..., Any], *args: Any, ordered: bool = False, **kwargs: Any
            ) -> None:
    """Call `callback(*args, **kwargs)` with the arrays of the pytrees `args` and
    `kwargs` as numpy values, when they are computed; returns None. Under jit the call
    happens at every run of the compiled function. (Every callback runs in program
    order, so `ordered` changes nothing; it is accepted for code written for JAX.)"""
    if not callable(callback):
        raise CallbackError(f"debug.callback: the first argument must be callable, got "
                            f"{type(callback).__name__}")
    arrays, rebuild = _split_leaves((args, kwargs))

    def call(*values):
        a, k = rebuild([np.asarray(v) for v in values])
        callback(*a, **k)
    debug_callback_p.bind(*arrays, callback=HostFunction(call, getattr(
        callback, "__name__", type(callback).__name__)))


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Print `fmt.format(*args, **kwargs)` with the arrays' values, under any transform
    (one line per example under vmap). Arrays format as numpy arrays do."""
    if not isinstance(fmt, str):
        raise CallbackError(f"debug.print: the format must be a str, got "
                            f"{type(fmt).__name__}")

    def show(*a, **k):
        sys.stdout.write(fmt.format(*a, **k) + "\n")
    show.__name__ = "debug.print"
    callback(show, *args, **kwargs)


def breakpoint(*, ordered: bool = False, **kwargs: Any) -> None:
    """Stop in pdb when the values exist, with the caller's arrays (their numpy values)
    and its other local variables in scope; `c` continues. Under jit this happens at
    every call of the compiled function, under vmap once per example. fnad's host
    callbacks always run in program order, so `ordered` changes nothing; JAX's other
    options (backend, filter_frames, num_frames, token) are refused."""
    if kwargs:
        raise CallbackError(f"debug.breakpoint: fnad takes none of JAX's options "
                            f"{', '.join(sorted(kwargs))} (its breakpoint opens pdb on the "
                            f"caller's frame)")
    frame = sys._getframe(1)
    scope = dict(frame.f_globals)
    scope.update(frame.f_locals)
    names = [n for n, v in frame.f_locals.items() if _is_array(v)]
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"

    def stop(*values):
        namespace = dict(scope)
        namespace.update(zip(names, values))
        _builtin_print(f"fnad.debug.breakpoint at {where}; arrays: {', '.join(names)}")
        pdb.Pdb().run("pass", namespace, namespace)
    callback(stop, *[scope[n] for n in names])


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any) -> Any:
    """callback(*args, **kwargs) computed on the host with numpy values, returning
    arrays of the shapes and dtypes `result_shape_dtypes` declares (a pytree of
    ShapeDtypeStruct or arrays); usable under jit. The function must be pure: fnad may
    call it fewer times or more (the optimizer may merge or drop calls).

    Under vmap, `vmap_method` says how it is called: 'sequential' once per example,
    'expand_dims' once with the batch axis in front (unbatched operands get an axis
    of length 1), 'broadcast_all' once with every operand broadcast to the batch.
    It has no derivative of its own: differentiate through fnad.custom_jvp or
    fnad.custom_vjp, whose rules may call pure_callback too. Results are cast to the
    declared dtypes within a kind (float64 to float32); another kind is a
    CallbackError. `sharding` is JAX's; fnad runs a computation on one device, so only
    None is accepted."""
    if sharding is not None:
        raise CallbackError("pure_callback: fnad runs each computation on one device and "
                            f"takes no sharding (got {sharding!r}); leave it None")
    if not callable(callback):
        raise CallbackError(f"pure_callback: the first argument must be callable, got "
                            f"{type(callback).__name__}")
    specs, out_tree = tree_flatten(result_shape_dtypes)
    try:
        avals = tuple(ShapedArray(tuple(s.shape), np.dtype(s.dtype)) for s in specs)
    except (AttributeError, TypeError) as err:
        raise CallbackError(f"pure_callback: result_shape_dtypes must be a pytree of "
                            f"objects with .shape and .dtype (fnad.ShapeDtypeStruct), "
                            f"got {result_shape_dtypes!r} ({err})") from None
    arrays, rebuild = _split_leaves((args, kwargs))
    name = getattr(callback, "__name__", type(callback).__name__)

    def call(*values):
        a, k = rebuild([np.asarray(v) for v in values])
        result = callback(*a, **k)
        leaves, tree = tree_flatten(result)
        if tree != out_tree:
            raise CallbackError(f"pure_callback: {name} returned a {tree}, where "
                                f"result_shape_dtypes is a {out_tree}")
        return leaves
    outs = pure_callback_p.bind(*arrays, callback=HostFunction(call, name),
                                result_avals=avals, vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)
