"""JAX's smaller top-level functions, as fnad offers them: derived transforms
(linearize, linear_transpose, closure_convert), device queries, and the context
managers that switch a config flag for a block of code.

Some are kept for code written against JAX and do nothing here, on purpose:
named_call and named_scope name the computations of a block in JAX's profiles and
HLO; fnad has neither, so they run the code unchanged.
"""
import contextlib
import functools

import numpy as np

from .dtypes import kind_of as dtype_kind
from . import backend, config
from .abstract import get_aval
from .array import Array
from .core import EVAL, Trace, Tracer, current_trace, use_trace
from .errors import GradientError
from .program import evaluate
from .staged.staging import stage_flat
from .transforms.jvp import jvp
from .transforms.vjp import vjp
from .transforms._util import as_value
from .tree_util import tree_flatten, tree_map, tree_unflatten

# The dtype of the cotangents of integer inputs (JAX's name): an array of it holds no
# numbers, only a shape.
float0 = np.dtype([("float0", np.void, 0)])


# --------------------------------------------------------------------------- transforms

def linearize(fun, *primals, has_aux=False):
    """(fun(*primals), f_jvp) where f_jvp(*tangents) is the JVP of fun at `primals`
    (with has_aux: (out, f_jvp, aux)). Each f_jvp call runs jvp at the stored point,
    so it costs a forward pass; the numbers are exactly jvp's."""
    zeros = tuple(tree_map(lambda x: np.zeros_like(np.asarray(x)), p) for p in primals)
    result = jvp(fun, primals, zeros, has_aux=has_aux)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"linearize: the function takes {len(primals)} tangents (one "
                            f"per primal), got {len(tangents)}")
        return jvp(fun, primals, tangents, has_aux=has_aux)[1]
    if has_aux:
        out, _, aux = result
        return out, f_jvp, aux
    return result[0], f_jvp


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of `fun`, which must be linear in its (floating-point) arguments:
    f_t(out_cotangent) -> a tuple of one cotangent per argument. `primals` give the
    arguments' shapes and dtypes (arrays or ShapeDtypeStructs); their values are unused."""
    del reduce_axes     # (JAX's named-axis reduction; fnad has no named axes here)
    leaves, in_tree = tree_flatten(primals)
    for leaf in leaves:
        if dtype_kind(np.dtype(leaf.dtype)) not in "fc":
            raise GradientError(f"linear_transpose: arguments must be floating point, got "
                                f"one of dtype {leaf.dtype} and shape {tuple(leaf.shape)}")
    zero_leaves = [Array(np.zeros(leaf.shape, leaf.dtype)) for leaf in leaves]

    def transposed(out_cotangent):
        _, pullback = vjp(fun, *tree_unflatten(in_tree, zero_leaves))
        return tuple(pullback(out_cotangent))
    return transposed


def closure_convert(fun, *example_args):
    """(converted, consts): the arrays `fun` closes over (captured when it is traced at
    `example_args`) made explicit, so converted(*args, *consts) == fun(*args). Their
    derivatives then flow through custom_vjp/custom_jvp, which see only arguments."""
    flat, in_tree = tree_flatten(example_args)
    out_tree = []

    def flat_fun(*leaves):
        out_leaves, tree = tree_flatten(fun(*tree_unflatten(in_tree, list(leaves))))
        out_tree.append(tree)
        return out_leaves
    closed = stage_flat(flat_fun, [get_aval(as_value(x, "closure_convert argument"))
                                   for x in flat])
    n = len(example_args)

    def converted(*args_and_consts):
        args, consts = args_and_consts[:n], args_and_consts[n:]
        leaves, tree = tree_flatten(args)
        if tree != in_tree:
            raise TypeError(f"closure_convert: arguments of structure {tree}, where the "
                            f"example arguments had {in_tree}")
        out = evaluate(closed.program, [*consts, *[as_value(x, "argument") for x in leaves]])
        return tree_unflatten(out_tree[0], out)
    return converted, list(closed.consts)


# --------------------------------------------------------------------------- devices

def device_get(x):
    """The arrays of pytree `x` as numpy arrays in host memory (other leaves as they
    are). A value being transformed cannot leave its transform: it raises."""
    return tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def default_backend():
    """The platform of the default device: 'cpu' (fnad's arrays are created there)."""
    return backend.host().platform


def device_count(backend_name=None):
    """len(fnad.devices(backend_name)): every backend's devices when None, as
    jax.device_count."""
    return len(backend.devices(backend_name))


def local_devices(process_index=None, backend_name=None):
    """Every device of this process (fnad's processes see only their own)."""
    return backend.devices(backend_name)


def local_device_count(backend_name=None):
    """The number of devices this process can address, as jax.local_device_count."""
    return len(backend.devices(backend_name))


def process_count():
    """The number of processes in this run, as jax.process_count."""
    return 1


def process_index():
    """This process's index among process_count() processes, as jax.process_index."""
    return 0


def typeof(x):
    """The abstract value of `x` (its ShapedArray), for arrays and traced values alike."""
    return get_aval(x)


# --------------------------------------------------------------------------- context managers

@contextlib.contextmanager
def _flag(name, value):
    previous = getattr(config, name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, previous)


def disable_jit(disable=True):
    """with fnad.disable_jit(): jitted functions run eagerly (print, breakpoints)."""
    return _flag("disable_jit", disable)


def enable_x64(new_val=True):
    """with fnad.enable_x64(): Python scalars and new arrays default to 64 bits."""
    return _flag("enable_x64", new_val)


def log_compiles(enable=True):
    """with fnad.log_compiles(): say when jit stages a function or Numba compiles a kernel."""
    return _flag("log_compiles", enable)


def explain_cache_misses(enable=True):
    """with fnad.explain_cache_misses(): say why jit traced a function again."""
    return _flag("explain_cache_misses", enable)


def debug_nans(enable=True):
    """with fnad.debug_nans(): a jitted function returning a NaN raises NaNError at the
    primitive that made it (config.debug_nans)."""
    return _flag("debug_nans", enable)


def named_call(fun, *, name=None):
    """`fun` under a name in JAX's profiles; fnad has no such profiles, so it is `fun`
    itself, run unchanged."""
    if not callable(fun):
        raise TypeError(f"named_call: expected a function, got {type(fun).__name__}")
    return functools.wraps(fun)(lambda *args, **kwargs: fun(*args, **kwargs))


@contextlib.contextmanager
def named_scope(name):
    """A name for the computations of a block in JAX's profiles; a no-op in fnad."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope: the name must be a str, got {type(name).__name__}")
    yield


class _EagerWhereConcrete(Trace):
    """Evaluates operations on concrete values at once (inside jit too); operations on
    traced values go on to the transform that was current."""
    name = "ensure_compile_time_eval"

    def process(self, prim, args, params):
        if any(isinstance(a, Tracer) for a in args):
            return self.parent.process(prim, args, params)
        return prim.eval(args, params)

    def process_custom(self, rules, args):
        if any(isinstance(a, Tracer) for a in args):
            return self.parent.process_custom(rules, args)
        return rules.fun(list(args))


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside the block, operations whose operands are all concrete run right away,
    even while jit is staging: their results are concrete Arrays usable in Python
    control flow (``if fnp.sum(table) > 0:``). Traced values are still traced."""
    parent = current_trace()
    if parent is EVAL:
        yield
        return
    with use_trace(_EagerWhereConcrete(parent)):
        yield
