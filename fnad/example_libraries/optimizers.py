"""The classic minimal optimizers of jax.example_libraries.optimizers, on fnad.

Each optimizer is a triple of functions::

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)
    opt_state = opt_update(i, grads, opt_state)      # i: the step number, 0, 1, ...
    params = get_params(opt_state)

An optimizer is written for one array (`init(x) -> state`, `update(i, g, state) ->
state`, `get_params(state) -> x`, where a state is a small pytree) and the `optimizer`
decorator lifts it to pytrees of parameters; the lifted state is an `OptimizerState`
pytree, so `opt_update` jits. Unlike fnad.optim (optax's design, where parameters
stay outside the state), these states hold the parameters themselves, as in JAX.
For new code fnad.optim composes better; this module exists so that code written
against JAX's example library runs unchanged.
"""
from collections import namedtuple
import functools
from typing import Any, Callable, NamedTuple, ParamSpec

import numpy as np

from .. import numpy as jnp
from .. import optim
from ..tree_util import register_pytree_node, tree_flatten, tree_unflatten, tree_map
from ..typing import Array, PyTree

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# The tree structures are static: only the flat list of per-leaf states holds arrays,
# so jit traces over the arrays and keys its cache on the structures.
register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(NamedTuple):
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


_P = ParamSpec("_P")
# An optimizer for one array: (init, update, get_params), as `optimizer` takes it.
ArrayOptimizer = tuple[Callable, Callable, Callable]


def optimizer(opt_maker: Callable[_P, ArrayOptimizer]) -> Callable[_P, Optimizer]:
    """Decorator: an optimizer made of per-array (init, update, get_params) becomes one
    over pytrees of arrays (all leaves are updated independently)."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: _P.args, **kwargs: _P.kwargs) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(x0_tree):
            leaves, tree_def = tree_flatten(x0_tree)
            flats = [tree_flatten(init(x0)) for x0 in leaves]
            return OptimizerState([f[0] for f in flats], tree_def, tuple(f[1] for f in flats))

        def tree_update(i, grad_tree, opt_state):
            states_flat, tree_def, subtree_defs = opt_state
            grads, grad_def = tree_flatten(grad_tree)
            if grad_def != tree_def:
                raise TypeError(f"optimizer update: the gradient tree {grad_def} does not "
                                f"match the parameter tree {tree_def} the optimizer was "
                                f"initialized with")
            new_flat, new_defs = [], []
            for g, flat, sub in zip(grads, states_flat, subtree_defs):
                leaves, new_sub = tree_flatten(update(i, g, tree_unflatten(sub, flat)))
                if new_sub != sub:
                    raise TypeError(f"optimizer update returned a state of structure "
                                    f"{new_sub} for one of structure {sub}")
                new_flat.append(leaves)
                new_defs.append(new_sub)
            return OptimizerState(new_flat, tree_def, tuple(new_defs))

        def tree_get_params(opt_state):
            states_flat, tree_def, subtree_defs = opt_state
            return tree_unflatten(tree_def, [get_params(tree_unflatten(sub, flat))
                                             for flat, sub in zip(states_flat, subtree_defs)])
        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


def _first(state):
    return state[0]


def _decay(rate, i, like):
    """rate ** (i + 1) in like's dtype: the bias correction after step i (0-based)."""
    return rate ** (jnp.astype(jnp.asarray(i), like.dtype) + 1)


# --------------------------------------------------------------------------- optimizers

@optimizer
def sgd(step_size: optim.ScalarOrSchedule) -> ArrayOptimizer:
    """x <- x - step_size(i) g."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0,
            lambda i, g, x: x - step_size(i) * g,
            lambda x: x)


@optimizer
def momentum(step_size: optim.ScalarOrSchedule, mass: float) -> ArrayOptimizer:
    """Heavy ball: v <- mass v + g; x <- x - step_size(i) v."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return lambda x0: (x0, jnp.zeros_like(x0)), update, _first


@optimizer
def nesterov(step_size: optim.ScalarOrSchedule, mass: float) -> ArrayOptimizer:
    """Nesterov momentum: v <- mass v + g; x <- x - step_size(i) (mass v + g)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return lambda x0: (x0, jnp.zeros_like(x0)), update, _first


def _inv_sqrt_or_zero(s):
    # 0 where nothing has accumulated yet: a zero gradient makes no step, not a NaN.
    return jnp.where(s > 0, 1.0 / jnp.sqrt(jnp.where(s > 0, s, 1)), 0.0)


@optimizer
def adagrad(step_size: optim.ScalarOrSchedule, momentum: float = 0.9) -> ArrayOptimizer:
    """Adagrad (Duchi et al., 2011) with momentum on the scaled gradient."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        m = (1.0 - momentum) * (g * _inv_sqrt_or_zero(g_sq)) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


@optimizer
def rmsprop(step_size: optim.ScalarOrSchedule, gamma: float = 0.9,
            eps: float = 1e-8) -> ArrayOptimizer:
    """RMSProp: a <- gamma a + (1 - gamma) g^2; x <- x - step_size(i) g / sqrt(a + eps)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq + eps), avg_sq
    return lambda x0: (x0, jnp.zeros_like(x0)), update, _first


@optimizer
def rmsprop_momentum(step_size: optim.ScalarOrSchedule, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> ArrayOptimizer:
    """RMSProp whose scaled steps feed a momentum buffer."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq, mom = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq + eps)
        return x - mom, avg_sq, mom
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


@optimizer
def adam(step_size: optim.ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> ArrayOptimizer:
    """Adam (Kingma & Ba, 2015), bias-corrected with the step number i + 1."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / (1 - _decay(b1, i, m))
        v_hat = v / (1 - _decay(b2, i, v))
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


@optimizer
def adamax(step_size: optim.ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> ArrayOptimizer:
    """AdaMax (Kingma & Ba, 2015, section 7): Adam with the infinity norm."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        return x - (step_size(i) / (1 - _decay(b1, i, m))) * m / (u + eps), m, u
    return lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _first


@optimizer
def sm3(step_size: optim.ScalarOrSchedule, momentum: float = 0.9) -> ArrayOptimizer:
    """SM3 (Anil et al., 2019): Adagrad whose accumulator is covered by one vector per
    axis, the minimum over axes bounding each entry's sum of squared gradients."""
    step_size = make_schedule(step_size)

    def init(x0):
        # a scalar is covered like a vector of one entry
        covers = [jnp.zeros((n,), x0.dtype) for n in (x0.shape or (1,))]
        return x0, jnp.zeros_like(x0), covers

    def update(i, g, state):
        x, m, covers = state
        shape = tuple(x.shape)
        x, m, g = (jnp.atleast_1d(a) for a in (x, m, g))
        ndim = x.ndim
        along = [jnp.reshape(v, tuple(-1 if d == a else 1 for d in range(ndim)))
                 for a, v in enumerate(covers)]
        accum = functools.reduce(jnp.minimum, along) + jnp.square(g)
        m = (1.0 - momentum) * (g * _inv_sqrt_or_zero(accum)) + momentum * m
        x = x - step_size(i) * m
        covers = [jnp.max(accum, axis=tuple(d for d in range(ndim) if d != a))
                  for a in range(ndim)]
        return jnp.reshape(x, shape), jnp.reshape(m, shape), covers

    return init, update, _first


# --------------------------------------------------------------------------- schedules

def constant(step_size: float) -> optim.Schedule:
    """The schedule that is `step_size` at every step, as
    example_libraries.optimizers.constant."""
    return lambda i: step_size


def exponential_decay(step_size: float, decay_steps: int, decay_rate: float) -> optim.Schedule:
    """step_size * decay_rate ** (i / decay_steps)."""
    return optim.exponential_decay(step_size, decay_steps, decay_rate)


def inverse_time_decay(step_size: float, decay_steps: float, decay_rate: float,
                       staircase: bool = False) -> optim.Schedule:
    """step_size / (1 + decay_rate * i / decay_steps), the ratio floored with staircase."""
    def schedule(i):
        t = jnp.asarray(i) / decay_steps
        return step_size / (1 + decay_rate * (jnp.floor(t) if staircase else t))
    return schedule


def polynomial_decay(step_size: float, decay_steps: float, final_step_size: float,
                     power: float = 1.0) -> optim.Schedule:
    """From step_size to final_step_size along (1 - i / decay_steps) ** power, then
    final_step_size."""
    def schedule(i):
        frac = 1 - jnp.minimum(jnp.asarray(i), decay_steps) / decay_steps
        return frac ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> optim.Schedule:
    """values[0] up to boundaries[0] (inclusive), values[k] after boundaries[k - 1]."""
    boundaries, values = np.asarray(boundaries), np.asarray(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError(f"piecewise_constant: boundaries and values must be sequences, "
                         f"got shapes {boundaries.shape} and {values.shape}")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError(f"piecewise_constant: {values.shape[0]} values need "
                         f"{values.shape[0] - 1} boundaries, got {boundaries.shape[0]}")
    boundaries, values = jnp.asarray(boundaries), jnp.asarray(values)
    return lambda i: values[jnp.sum(jnp.asarray(i) > boundaries)]


def make_schedule(scalar_or_schedule: optim.ScalarOrSchedule) -> optim.Schedule:
    """A schedule from a number (constant) or a schedule (returned as is)."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"a step size is a scalar or a function of the step number, got "
                    f"{type(scalar_or_schedule).__name__} of shape "
                    f"{np.shape(scalar_or_schedule)}")


# --------------------------------------------------------------------------- utilities

def l2_norm(tree: PyTree) -> Array:
    """The l2 norm of all the leaves of a pytree together."""
    return optim.global_norm(tree)


def clip_grads(grad_tree: PyTree, max_norm: float) -> PyTree:
    """Scale the gradients down to global norm max_norm when their norm exceeds it."""
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                    grad_tree)


class JoinPoint:
    """A leaf of an unpacked optimizer state: holds the state of one parameter."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> PyTree:
    """The state as a pytree shaped like the parameters with JoinPoint leaves (for
    serialization: it holds no tree definitions)."""
    states_flat, tree_def, subtree_defs = opt_state
    return tree_unflatten(tree_def, [JoinPoint(tree_unflatten(sub, flat))
                                     for flat, sub in zip(states_flat, subtree_defs)])


def pack_optimizer_state(marked_pytree: PyTree) -> OptimizerState:
    """The inverse of unpack_optimizer_state."""
    joins, tree_def = tree_flatten(marked_pytree)
    if not all(isinstance(j, JoinPoint) for j in joins):
        raise TypeError("pack_optimizer_state: every leaf must be a JoinPoint, as made by "
                        "unpack_optimizer_state")
    flats = [tree_flatten(j.subtree) for j in joins]
    return OptimizerState([f[0] for f in flats], tree_def, tuple(f[1] for f in flats))
