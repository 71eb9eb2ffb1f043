"""Host callbacks: Python functions called from a program with the values it computed.

    debug_callback  an effect: calls a function for what it sees (printing, logging,
                    a breakpoint) and returns nothing. It runs where it stands in
                    program order, under every transform: jvp and grad call it on the
                    primal values, vmap once per example, jit from the compiled
                    driver between kernels, loops at each iteration. It has no
                    `numba_source`, so a loop body holding one runs from Python.
    pure_callback   a pure function of its operands computed on the host (numpy,
                    scipy): the optimizer may fold, merge or drop it like any pure
                    primitive. It has no derivative of its own (wrap it in
                    custom_jvp/custom_vjp), and vmap calls it as `vmap_method` says.

The function travels in the `callback` param as a HostFunction, called with numpy
values. Both record a profiler event per call.
"""
import numpy as np

from .. import events
from ..abstract import ShapedArray
from ..core import Primitive, no_derivative
from ..errors import CallbackError, GradientError
from .structural import broadcast_batch, moveaxis_to


class HostFunction:
    """`fun` called with numpy values: the param a callback primitive carries. Equal
    only to itself, so two callbacks are never merged as one."""
    __slots__ = ("fun", "name")

    def __init__(self, fun, name=None):
        self.fun = fun
        self.name = name or getattr(fun, "__name__", type(fun).__name__)

    def __call__(self, *values):
        start = events.now() if events.recording is not None else None
        try:
            return self.fun(*values)
        finally:
            if start is not None:
                events.record(f"callback {self.name}", "callback", start)

    def __repr__(self):
        return self.name


class PerExample(HostFunction):
    """A callback vmap has batched: called once per example, with that example's slice
    of each batched operand (batch axes moved to the front) and unbatched ones whole.
    With `out_avals` (a pure_callback's batched results) the examples' results are
    stacked along a new leading axis."""
    __slots__ = ("inner", "batched", "size", "out_avals")

    def __init__(self, inner, batched, size, out_avals=None):
        super().__init__(self._each if out_avals is None else self._stacked, inner.name)
        self.inner, self.batched, self.size = inner, tuple(batched), size
        self.out_avals = out_avals

    def _each(self, *values):
        return [self.inner.fun(*[v[i] if b else v for v, b in zip(values, self.batched)])
                for i in range(self.size)]

    def _stacked(self, *values):
        per_example = self._each(*values)
        return [np.stack([np.asarray(r[k]) for r in per_example]) if per_example
                else np.empty(aval.shape, aval.dtype)
                for k, aval in enumerate(self.out_avals)]


# --------------------------------------------------------------------------- debug_callback

def _debug_abstract_eval(*avals, callback):
    return []


def _debug_impl(*values, callback):
    callback(*values)
    return []


def _debug_jvp(primals, tangents, callback):
    # The function sees the primal values, as it would without the jvp.
    return debug_callback_p.bind(*primals, callback=callback), []


def _debug_batch(args, batch_dims, callback):
    size = next(a.shape[d] for a, d in zip(args, batch_dims) if d is not None)
    moved = [a if d is None else moveaxis_to(a, d, 0) for a, d in zip(args, batch_dims)]
    per_example = PerExample(callback, [d is not None for d in batch_dims], size)
    return debug_callback_p.bind(*moved, callback=per_example), []


debug_callback_p = Primitive(
    "debug_callback", abstract_eval=_debug_abstract_eval, impl=_debug_impl,
    jvp=_debug_jvp, vjp=no_derivative, batch=_debug_batch, effect=True,
    multiple_results=True)


# --------------------------------------------------------------------------- pure_callback

VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all")


def _pure_abstract_eval(*avals, callback, result_avals, vmap_method):
    return list(result_avals)


def _pure_impl(*values, callback, result_avals, vmap_method):
    results = callback(*values)
    if len(results) != len(result_avals):
        raise CallbackError(f"pure_callback: {callback.name} returned {len(results)} "
                            f"arrays where result_shape_dtypes declares {len(result_avals)}")
    outs = []
    for i, (r, aval) in enumerate(zip(results, result_avals)):
        r = np.asarray(r)
        if r.shape != tuple(aval.shape):
            raise CallbackError(f"pure_callback: {callback.name} returned result {i} of "
                                f"shape {r.shape} where result_shape_dtypes declares "
                                f"{tuple(aval.shape)} ({aval})")
        if r.dtype != aval.dtype and not np.can_cast(r.dtype, aval.dtype, "same_kind"):
            raise CallbackError(f"pure_callback: {callback.name} returned result {i} of "
                                f"dtype {r.dtype} where result_shape_dtypes declares "
                                f"{aval.dtype}")
        outs.append(np.ascontiguousarray(r, dtype=aval.dtype))
    return outs


def _pure_jvp(primals, tangents, callback, result_avals, vmap_method):
    raise GradientError(
        f"pure_callback({callback.name}) has no derivative: fnad cannot see inside the "
        f"host function. Give it one by wrapping the call in fnad.custom_jvp or "
        f"fnad.custom_vjp (the rule may call pure_callback again for the derivative).")


def _pure_vjp(cotangent, out, *args, callback, result_avals, vmap_method):
    _pure_jvp(None, None, callback, result_avals, vmap_method)


def _pure_batch(args, batch_dims, callback, result_avals, vmap_method):
    size = next(a.shape[d] for a, d in zip(args, batch_dims) if d is not None)
    if vmap_method not in VMAP_METHODS:
        raise CallbackError(
            f"vmap of pure_callback({callback.name}) needs vmap_method= one of "
            f"{', '.join(map(repr, VMAP_METHODS))} (it was {vmap_method!r}): 'sequential' "
            f"calls the function once per example, 'expand_dims' once with a leading "
            f"batch axis (of length 1 on unbatched operands), 'broadcast_all' once with "
            f"every operand broadcast to the batch")
    moved = [a if d is None else moveaxis_to(a, d, 0) for a, d in zip(args, batch_dims)]
    batched = [d is not None for d in batch_dims]
    out_avals = tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
    if vmap_method == "sequential":
        fun = PerExample(callback, batched, size, out_avals)
    else:
        fill = 1 if vmap_method == "expand_dims" else size
        moved = [a if b else broadcast_batch(a, fill) for a, b in zip(moved, batched)]
        fun = callback
    outs = pure_callback_p.bind(*moved, callback=fun, result_avals=out_avals,
                                vmap_method=vmap_method)
    return outs, [0] * len(outs)


pure_callback_p = Primitive(
    "pure_callback", abstract_eval=_pure_abstract_eval, impl=_pure_impl, jvp=_pure_jvp,
    vjp=_pure_vjp, batch=_pure_batch, multiple_results=True)
