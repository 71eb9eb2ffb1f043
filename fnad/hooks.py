"""Hooks: see or change a gradient as it flows back, and intercept fnad.nn layers.

Gradient hooks (PyTorch's `tensor.register_hook`, as a function):

    y = fnad.hooks.grad_hook(x, lambda g: 2 * g)   # y == x; grad through y is doubled
    y = fnad.hooks.grad_hook(x, print_or_check)    # returning None keeps the cotangent
    y = fnad.hooks.observe_grad(x, fn)             # fn(numpy cotangent) on the host

grad_hook's function runs where the backward pass runs: on concrete values in eager
mode, on traced values while jit stages the backward pass (so write it with
fnad.numpy, or use observe_grad, whose function is called with the numbers at every
run, under jit and, once per example, under vmap).

Layer interceptors (PyTorch's `register_forward_hook`, as a function): `intercept`
runs a layer's apply_fn so that a function sees, and may replace, each child layer's
inputs and outputs of every `serial`/`parallel` combinator inside it. Each child is
named by its path: its position and kind in each enclosing combinator, e.g.
``"2:serial/0:Dense"`` (the Dense layer first in the serial layer third in the model).
"""
import contextvars
import functools
from typing import Any, Callable

from . import debug
from .transforms.custom import custom_vjp

__all__ = ["grad_hook", "observe_grad", "intercept", "forward_hook",
           "capture_activations", "layer_name"]


# --------------------------------------------------------------------------- gradients

@functools.partial(custom_vjp, nondiff_argnums=(0,))
def _hooked(fn, x):
    return x


def _hooked_fwd(fn, x):
    return x, None


def _hooked_bwd(fn, _, cotangent):
    replaced = fn(cotangent)
    return (cotangent if replaced is None else replaced,)


_hooked.defvjp(_hooked_fwd, _hooked_bwd)


def grad_hook(x: Any, fn: Callable[..., Any]) -> Any:
    """x itself (a pytree of arrays); in reverse mode the cotangent reaching x's uses
    is `fn(cotangent)` (a pytree like x), or the cotangent unchanged when fn returns
    None. Forward mode (jvp) passes tangents through untouched."""
    if not callable(fn):
        raise TypeError(f"grad_hook: fn must be callable, got {type(fn).__name__}")
    return _hooked(fn, x)


def observe_grad(x: Any, fn: Callable[..., Any]) -> Any:
    """x itself; in reverse mode fn(cotangent) is called with the cotangent's numpy
    value(s) when it is computed, under every transform (fnad.debug.callback)."""
    return grad_hook(x, lambda cotangent: debug.callback(fn, cotangent))


# --------------------------------------------------------------------------- layers

# (interceptor, path prefix of the layer being applied) while `intercept` runs one.
_active = contextvars.ContextVar("fnad layer interceptor", default=None)


def active_interceptor():
    """The interceptor `intercept` installed, or None: combinators ask before they
    pay for calling a child through `call_layer`."""
    return _active.get()


def layer_name(apply_fn: Callable[..., Any]) -> str:
    """The kind of layer an apply_fn belongs to: the function that made it (Dense,
    serial, relu, ...)."""
    qualname = getattr(apply_fn, "__qualname__", None) or type(apply_fn).__name__
    return qualname.split(".")[0]


def call_layer(index, kind, apply, params, inputs):
    """Child `index` of a combinator, applied as apply(params, inputs) -> outputs,
    through the active interceptor under its path."""
    interceptor, prefix = _active.get()
    path = f"{prefix}{index}:{kind}"

    def run(params, inputs):
        token = _active.set((interceptor, path + "/"))
        try:
            return apply(params, inputs)
        finally:
            _active.reset(token)
    return interceptor(path, run, params, inputs)


def intercept(apply_fn: Callable[..., Any], interceptor: Callable[..., Any]) -> Callable[..., Any]:
    """apply_fn, but every child layer of its serial/parallel combinators (at any
    depth) is applied as ``interceptor(path, apply, params, inputs)``: `apply(params,
    inputs)` runs the child (and its own children, intercepted too) and the
    interceptor's return value is the child's output. It may change the inputs, the
    params or the outputs, or only look. Works under jit, grad and vmap (the
    interceptor then sees traced values while the function is traced)."""
    @functools.wraps(apply_fn)
    def intercepted(params, inputs, **kwargs):
        token = _active.set((interceptor, ""))
        try:
            return apply_fn(params, inputs, **kwargs)
        finally:
            _active.reset(token)
    return intercepted


def forward_hook(apply_fn: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """apply_fn with fn(path, inputs, outputs) called after each child layer; a return
    value other than None replaces that layer's outputs."""
    def interceptor(path, apply, params, inputs):
        outputs = apply(params, inputs)
        replaced = fn(path, inputs, outputs)
        return outputs if replaced is None else replaced
    return intercept(apply_fn, interceptor)


def capture_activations(apply_fn: Callable[..., Any]) -> Callable[..., Any]:
    """apply_fn returning (outputs, {path: that layer's outputs}) for every child
    layer: returned values, so it works under jit too (where the dict comes back with
    its keys sorted, as pytrees flatten dicts)."""
    @functools.wraps(apply_fn)
    def capturing(params, inputs, **kwargs):
        seen = {}

        def keep(path, inputs, outputs):
            seen[path] = outputs
        return forward_hook(apply_fn, keep)(params, inputs, **kwargs), seen
    return capturing
