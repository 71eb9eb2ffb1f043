"""Optimizers as gradient transformations, in the style of optax.

A GradientTransformation is a pair of pure functions::

    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = apply_updates(params, updates)

Small transformations (Adam's moment scaling, momentum, clipping, weight decay,
learning-rate schedules) are `chain`-ed, and the named optimizers (`sgd`, `adam`,
`adamw`, `rmsprop`, `adagrad`) are nothing but chains. State is a pytree of named
tuples of arrays (step counts are int32 scalars), so a whole update jits:
``fnad.jit(lambda g, s, p: opt.update(g, s, p))``. Every computation on arrays uses
fnad.numpy and no Python branch looks at an array's value.

A learning rate may be a number or a schedule: a function from the int32 step count
to a scalar (`exponential_decay`, `cosine_decay_schedule`, `linear_schedule`, ...).
"""
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import numpy as jnp
from .array import Array
from .tree_util import PyTree, tree_map, tree_leaves

_INT32_MAX = np.iinfo(np.int32).max

# For annotations: a schedule maps the int32 step count to a scalar; a learning rate is
# a number or a schedule.
Schedule = Callable[[Any], Any]
ScalarOrSchedule = float | Schedule


class GradientTransformation(NamedTuple):
    """init(params) -> state; update(updates, state, params=None) -> (updates, state)."""
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


class ScaleByAdamState(NamedTuple):
    count: Any      # int32 scalar: the number of updates made so far
    mu: Any         # first moments, shaped like params
    nu: Any         # second moments, shaped like params


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByStddevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


class TraceState(NamedTuple):
    trace: Any


class ScaleByScheduleState(NamedTuple):
    count: Any


# --------------------------------------------------------------------------- helpers

def _zero_count():
    return jnp.zeros([], jnp.int32)


def _increment(count):
    # Saturates instead of wrapping to a negative count after 2**31 - 1 steps.
    return jnp.where(count < _INT32_MAX, count + 1, _INT32_MAX)


def _abs_square(g):
    """|g|^2: the square of a real gradient, conj(g) g of a complex one (a second moment
    or a norm of complex values is real and non-negative, as optax computes it)."""
    g = jnp.asarray(g)
    return jnp.real(g * jnp.conj(g)) if g.dtype.kind == "c" else jnp.square(g)


def _scale_leaf(factor, g):
    """g * factor, keeping g's dtype whether factor is a Python number or an array."""
    if type(factor) in (int, float):
        return g * factor
    return g * jnp.astype(jnp.asarray(factor), jnp.asarray(g).dtype)


def _hyper(value):
    """A hyperparameter as a Python float when it is a concrete number, so that it is
    weakly typed: a numpy float64 scalar must not turn float32 params into float64."""
    if isinstance(value, (int, float, np.generic)) or \
            (isinstance(value, (np.ndarray, Array)) and value.ndim == 0):
        return float(value)
    return value


def _require_params(params, name):
    if params is None:
        raise ValueError(f"{name} needs the current params: call "
                         f"update(grads, state, params), not update(grads, state)")


def global_norm(tree: PyTree) -> Array:
    """The l2 norm of all the leaves of `tree` taken together, as one vector."""
    leaves = tree_leaves(tree)
    if not leaves:
        return jnp.zeros([], jnp.float32)
    return jnp.sqrt(sum(jnp.sum(_abs_square(x)) for x in leaves))


def apply_updates(params: PyTree, updates: PyTree) -> PyTree:
    """params + updates, leaf by leaf, each result keeping its parameter's dtype."""
    def add(p, u):
        p = jnp.asarray(p)
        return jnp.astype(p + u, p.dtype)
    return tree_map(add, params, updates)


# --------------------------------------------------------------------------- combinators

def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply `transforms` in order; the state is the tuple of their states.

    >>> opt = optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(0.5))
    >>> params = {"w": fnp.asarray([1.0, -2.0])}
    >>> updates, state = opt.update({"w": fnp.asarray([2.0, -4.0])}, opt.init(params))
    >>> updates["w"]        # the gradient clipped to norm 1, times -0.5
    Array([-0.2236068,  0.4472136], dtype=float32)
    """
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if len(state) != len(transforms):
            raise ValueError(f"chain: the state holds {len(state)} entries for "
                             f"{len(transforms)} transformations; was it made by this "
                             f"chain's init?")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def identity() -> GradientTransformation:
    """Leave updates unchanged."""
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (updates, state))


# --------------------------------------------------------------------------- transformations

def scale(step_size: float) -> GradientTransformation:
    """Multiply every update by the constant `step_size`."""
    step_size = _hyper(step_size)
    def update(updates, state, params=None):
        return tree_map(lambda g: _scale_leaf(step_size, g), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiply updates by ``step_size_fn(count)``, count being the number of updates
    made before this one (0 on the first)."""
    def init(params):
        return ScaleByScheduleState(_zero_count())

    def update(updates, state, params=None):
        step_size = step_size_fn(state.count)
        updates = tree_map(lambda g: _scale_leaf(step_size, g), updates)
        return updates, ScaleByScheduleState(_increment(state.count))
    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: ScalarOrSchedule, flip_sign: bool = True
                           ) -> GradientTransformation:
    """Scale by -learning_rate (descent), a number or a schedule."""
    sign = -1.0 if flip_sign else 1.0
    learning_rate = _hyper(learning_rate)
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0
                  ) -> GradientTransformation:
    """Adam's scaling (Kingma & Ba, 2015, Algorithm 1):
    m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
    update = m_hat / (sqrt(v_hat + eps_root) + eps), with the bias corrections
    m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t) at step t = 1, 2, ..."""
    b1, b2, eps, eps_root = map(_hyper, (b1, b2, eps, eps_root))
    def init(params):
        return ScaleByAdamState(_zero_count(), tree_map(jnp.zeros_like, params),
                                tree_map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: (1 - b1) * g + b1 * m, updates, state.mu)
        nu = tree_map(lambda g, v: (1 - b2) * _abs_square(g) + b2 * v, updates, state.nu)
        count = _increment(state.count)

        def direction(m, v):
            t = jnp.astype(count, m.dtype)
            m_hat = m / (1 - b1 ** t)
            v_hat = v / (1 - b2 ** t)
            return m_hat / (jnp.sqrt(v_hat + eps_root) + eps)
        return tree_map(direction, mu, nu), ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0
                 ) -> GradientTransformation:
    """RMSProp's scaling (Hinton's lecture 6e): v = decay v + (1-decay) g^2;
    update = g / sqrt(v + eps)."""
    decay, eps, initial_scale = map(_hyper, (decay, eps, initial_scale))
    def init(params):
        return ScaleByRmsState(tree_map(lambda p: jnp.full_like(p, initial_scale), params))

    def update(updates, state, params=None):
        nu = tree_map(lambda g, v: (1 - decay) * _abs_square(g) + decay * v,
                      updates, state.nu)
        updates = tree_map(lambda g, v: g * jnp.rsqrt(v + eps), updates, nu)
        return updates, ScaleByRmsState(nu)
    return GradientTransformation(init, update)


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0
                    ) -> GradientTransformation:
    """Centered RMSProp's scaling: divide by an estimate of the gradient's standard
    deviation, sqrt(E[g^2] - E[g]^2 + eps)."""
    decay, eps, initial_scale = map(_hyper, (decay, eps, initial_scale))
    def init(params):
        return ScaleByStddevState(tree_map(jnp.zeros_like, params),
                                  tree_map(lambda p: jnp.full_like(p, initial_scale), params))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: (1 - decay) * g + decay * m, updates, state.mu)
        nu = tree_map(lambda g, v: (1 - decay) * _abs_square(g) + decay * v,
                      updates, state.nu)
        updates = tree_map(lambda g, m, v: g * jnp.rsqrt(v - _abs_square(m) + eps),
                           updates, mu, nu)
        return updates, ScaleByStddevState(mu, nu)
    return GradientTransformation(init, update)


def scale_by_rss(initial_accumulator_value: float = 0.1, eps: float = 1e-7
                 ) -> GradientTransformation:
    """Adagrad's scaling (Duchi et al., 2011): s = s + g^2; update = g / sqrt(s + eps)
    (0 where s is 0)."""
    initial_accumulator_value, eps = map(_hyper, (initial_accumulator_value, eps))
    def init(params):
        return ScaleByRssState(
            tree_map(lambda p: jnp.full_like(p, initial_accumulator_value), params))

    def update(updates, state, params=None):
        sos = tree_map(lambda g, s: _abs_square(g) + s, updates, state.sum_of_squares)
        updates = tree_map(
            lambda g, s: jnp.where(s > 0, jnp.rsqrt(s + eps), 0.0) * g, updates, sos)
        return updates, ScaleByRssState(sos)
    return GradientTransformation(init, update)


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: t = g + decay t; the update is t, or g + decay t with nesterov."""
    decay = _hyper(decay)
    def init(params):
        return TraceState(tree_map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        new_trace = tree_map(lambda g, t: g + decay * t, updates, state.trace)
        if nesterov:
            updates = tree_map(lambda g, t: g + decay * t, updates, new_trace)
        else:
            updates = new_trace
        return updates, TraceState(new_trace)
    return GradientTransformation(init, update)


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Rescale all updates together so that their global norm is at most `max_norm`."""
    max_norm = _hyper(max_norm)
    def update(updates, state, params=None):
        norm = global_norm(updates)
        # max_norm / max(norm, max_norm) is exactly 1 when no clipping is needed, and
        # never divides by zero.
        factor = max_norm / jnp.maximum(norm, max_norm)
        return tree_map(lambda g: _scale_leaf(factor, g), updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def add_decayed_weights(weight_decay: float = 0.0, mask: Any = None) -> GradientTransformation:
    """updates + weight_decay * params (decoupled weight decay, as in AdamW).
    `mask`: a pytree of bools shaped like params (or a function params -> that
    pytree); params whose mask is False are not decayed."""
    weight_decay = _hyper(weight_decay)
    def update(updates, state, params=None):
        _require_params(params, "add_decayed_weights")
        if mask is None:
            return tree_map(lambda u, p: u + weight_decay * p, updates, params), state
        m = mask(params) if callable(mask) else mask
        decay = lambda u, p, keep: u + weight_decay * p if keep else u  # noqa: E731
        return tree_map(decay, updates, params, m), state
    return GradientTransformation(lambda params: EmptyState(), update)


# --------------------------------------------------------------------------- optimizers

def sgd(learning_rate: ScalarOrSchedule, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum."""
    return chain(trace(momentum, nesterov) if momentum is not None else identity(),
                 scale_by_learning_rate(learning_rate))


def adam(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8, eps_root: float = 0.0) -> GradientTransformation:
    """Adam (Kingma & Ba, 2015): scale_by_adam, then the learning rate (a number or a schedule).

    Returns a GradientTransformation; the update is -learning_rate * m_hat / (sqrt(v_hat +
    eps_root) + eps), as optax.adam.

    >>> params = {"w": fnp.asarray([1.0, -2.0])}
    >>> opt = optim.adam(0.1)
    >>> state = opt.init(params)
    >>> grads = fnad.grad(lambda p: fnp.sum(p["w"] ** 2))(params)
    >>> updates, state = opt.update(grads, state, params)
    >>> optim.apply_updates(params, updates)
    {'w': Array([ 0.9000007, -1.9000007], dtype=float32)}
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root), scale_by_learning_rate(learning_rate))


def adamw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, eps_root: float = 0.0, weight_decay: float = 1e-4,
          mask: Any = None) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): the decay is added
    after Adam's scaling, then both are scaled by the learning rate.

    `mask` (a pytree of bools like params, or a function of params giving one) limits
    the decay to some parameters, as in optax.

    >>> params = {"w": fnp.asarray([1.0, -2.0])}
    >>> opt = optim.adamw(0.1, weight_decay=0.01)
    >>> grads = {"w": fnp.asarray([2.0, -4.0])}
    >>> updates, state = opt.update(grads, opt.init(params), params)
    >>> updates["w"]
    Array([-0.10099933,  0.10199933], dtype=float32)
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate: ScalarOrSchedule, decay: float = 0.9, eps: float = 1e-8,
            initial_scale: float = 0.0, centered: bool = False,
            momentum: float | None = None, nesterov: bool = False) -> GradientTransformation:
    """RMSProp: updates divided by the root of a moving average of squared gradients (centered:
    of their variance), then the learning rate and optional momentum (optax.rmsprop)."""
    scaling = (scale_by_stddev if centered else scale_by_rms)(decay, eps, initial_scale)
    return chain(scaling, scale_by_learning_rate(learning_rate),
                 trace(momentum, nesterov) if momentum is not None else identity())


def adagrad(learning_rate: ScalarOrSchedule, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformation:
    """Adagrad: updates divided by the root of the running sum of squared gradients, then
    scaled by the learning rate (optax.adagrad)."""
    return chain(scale_by_rss(initial_accumulator_value, eps),
                 scale_by_learning_rate(learning_rate))


# --------------------------------------------------------------------------- schedules
# A schedule maps the step count (a Python int or an int32 array) to a float32 scalar.

def _steps(count):
    return jnp.astype(jnp.asarray(count), jnp.float32)


def constant_schedule(value: float) -> Schedule:
    """A schedule that is `value` at every step (a float32 scalar)."""
    return lambda count: jnp.full([], value, jnp.float32)


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Schedule:
    """init_value * decay_rate ** ((count - transition_begin) / transition_steps),
    init_value before transition_begin; with `staircase` the exponent is floored;
    `end_value` bounds the value (below when decaying, above when growing)."""
    if transition_steps <= 0:
        raise ValueError(f"exponential_decay: transition_steps must be positive, "
                         f"got {transition_steps}")

    def schedule(count):
        steps = _steps(count) - transition_begin
        p = steps / transition_steps
        if staircase:
            p = jnp.floor(p)
        value = jnp.where(steps <= 0, init_value, init_value * decay_rate ** p)
        if end_value is not None:
            bound = jnp.maximum if decay_rate < 1 else jnp.minimum
            value = bound(value, end_value)
        return jnp.astype(value, jnp.float32)
    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """Cosine decay (Loshchilov & Hutter, SGDR, 2017) from init_value to
    alpha * init_value over decay_steps, constant afterwards."""
    if decay_steps <= 0:
        raise ValueError(f"cosine_decay_schedule: decay_steps must be positive, "
                         f"got {decay_steps}")

    def schedule(count):
        steps = jnp.minimum(_steps(count), decay_steps)
        cosine = 0.5 * (1 + jnp.cos(np.pi * steps / decay_steps))
        return jnp.astype(init_value * ((1 - alpha) * cosine ** exponent + alpha),
                          jnp.float32)
    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """init_value until transition_begin, then linearly to end_value over
    transition_steps, end_value afterwards."""
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count):
        steps = jnp.clip(_steps(count) - transition_begin, 0, transition_steps)
        frac = steps / transition_steps
        return jnp.astype(init_value + (end_value - init_value) * frac, jnp.float32)
    return schedule


def warmup(peak_value: float, warmup_steps: int, init_value: float = 0.0) -> Schedule:
    """Linear warmup from init_value to peak_value over warmup_steps, then constant."""
    return linear_schedule(init_value, peak_value, warmup_steps)


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """schedules[0] before boundaries[0], then schedules[i + 1] from boundaries[i],
    each called with the count relative to the boundary where it starts."""
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules: {len(schedules)} schedules need "
                         f"{len(schedules) - 1} boundaries, got {len(boundaries)}")

    def schedule(count):
        count = jnp.asarray(count)
        value = schedules[0](count)
        for boundary, later in zip(boundaries, schedules[1:]):
            value = jnp.where(count < boundary, value, later(count - boundary))
        return value
    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Schedule:
    """Linear warmup to peak_value, then cosine decay to end_value; decay_steps counts
    the warmup, as in optax."""
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         cosine_decay_schedule(peak_value, max(decay_steps - warmup_steps, 1), alpha,
                               exponent)],
        [warmup_steps])
