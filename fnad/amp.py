"""Mixed precision: precision policies, autocast, and loss scaling.

Two ways to train in a 16-bit float, as the two communities do:

- A **Policy** (the JAX way, jmp's names): params are stored in `param_dtype`, cast to
  `compute_dtype` for the forward and backward passes, and outputs (the loss) cast to
  `output_dtype`. Every op then runs in the dtype its inputs have.
- **autocast** (the PyTorch way): a function transform that decides per primitive.
  Each primitive declares its rule in its own `precision=` slot (the table lives with
  the primitives, not here):

  ``"low"``      matrix products and convolutions: float32 inputs are cast to the
                 autocast dtype (they accumulate in float32 inside the kernel anyway);
                 and relu, whose result feeds the next product (rounding commutes with
                 relu, so its values are unchanged, and the backward pass keeps one
                 16-bit output instead of a float32 one and a 16-bit copy);
  ``"float32"``  sums, products, cumulative sums, exp, log, log1p, expm1, pow, rsqrt
                 (the pieces of softmax, log-softmax, normalizations and losses):
                 16-bit float inputs are cast to float32;
  ``None``       everything else runs in the widest float of its inputs (a bfloat16
                 matmul result plus a float32 bias is float32), as torch.autocast does.

  Float64 values are never cast. Because autocast is an interpreter of `bind`, it
  composes with grad, jit and vmap; under grad, the backward pass of an op runs in
  the dtype its forward ran in (the cotangent of a cast is cast back). Differentiate
  the autocast function, `grad(autocast(f))`, as with torch.autocast around the forward
  only: `autocast(grad(f))` casts outside the derivative, so its gradients come out in
  the dtype the products ran in. Functions with custom derivative rules
  (custom_jvp/custom_vjp) run as written, uncast inside, and so do the bodies of
  control-flow primitives (cond, while_loop, scan), which are staged programs.

Loss scaling keeps small float16 gradients from flushing to zero: multiply the loss
by a scale before differentiating, divide the gradients by it, and skip the step when
they overflowed. `DynamicLossScale` follows torch.amp.GradScaler's rule and defaults
(start at 2**16; halve on a non-finite step; double after 2000 finite steps in a row);
its state is a pytree, so a whole training step jits.
"""
import functools
from typing import Any, Callable, NamedTuple

import numpy as np

from . import dtypes
from . import numpy as fnp
from .core import Trace, bind_custom, current_trace, use_trace
from .errors import DTypeError
from .optim import GradientTransformation
from .primitives.structural import convert_element_type_p
from .tree_util import register_pytree_node_class, tree_leaves, tree_map
from .typing import Array, DTypeLike, PyTree

__all__ = ["Policy", "get_policy", "cast_floats", "autocast", "all_finite", "select_tree",
           "DynamicLossScale", "StaticLossScale", "NoOpLossScale", "apply_if_finite",
           "ApplyIfFiniteState", "LOW", "FLOAT32"]

# The values of a primitive's `precision=` slot.
LOW, FLOAT32 = "low", "float32"

_CASTABLE = (dtypes.float16, dtypes.bfloat16, dtypes.float32)


def _floating(dtype):
    return dtypes.is_float(dtype)


def cast_floats(tree: PyTree, dtype: DTypeLike) -> PyTree:
    """Every real floating-point leaf of `tree` converted to `dtype`; integer, bool and
    complex leaves (and non-arrays) as they are."""
    dtype = dtypes.check_supported(dtype, "a mixed-precision cast")

    def cast(x):
        d = getattr(x, "dtype", None)
        if d is None or not _floating(d) or np.dtype(d) == dtype:
            return x
        return fnp.asarray(x).astype(dtype)
    return tree_map(cast, tree)


class Policy(NamedTuple):
    """Which dtype parameters are kept in, computation runs in, and outputs come out
    in (jmp.Policy). Casts touch floating-point leaves only."""
    param_dtype: Any
    compute_dtype: Any
    output_dtype: Any

    def cast_to_param(self, tree):
        return cast_floats(tree, self.param_dtype)

    def cast_to_compute(self, tree):
        return cast_floats(tree, self.compute_dtype)

    def cast_to_output(self, tree):
        return cast_floats(tree, self.output_dtype)

    def with_output_dtype(self, dtype):
        return self._replace(output_dtype=dtype)


_DTYPE_NAMES = {"float16": dtypes.float16, "f16": dtypes.float16, "half": dtypes.float16,
                "bfloat16": dtypes.bfloat16, "bf16": dtypes.bfloat16,
                "float32": dtypes.float32, "f32": dtypes.float32, "full": dtypes.float32,
                "float64": dtypes.float64, "f64": dtypes.float64}


def get_policy(spec: str) -> "Policy":
    """A Policy from a string: one dtype for all three ("float32"), or
    "params=float32,compute=bfloat16,output=float32" (jmp.get_policy's syntax; keys
    p/c/o and dtype names such as bf16, f16, half and full are accepted)."""
    def dtype(name):
        try:
            return _DTYPE_NAMES[name.strip().lower()]
        except KeyError:
            raise ValueError(f"get_policy: unknown dtype {name!r} in {spec!r}; known: "
                             + ", ".join(sorted(_DTYPE_NAMES))) from None
    if "=" not in spec:
        d = dtype(spec)
        return Policy(d, d, d)
    fields = {"p": "param_dtype", "params": "param_dtype", "c": "compute_dtype",
              "compute": "compute_dtype", "o": "output_dtype", "output": "output_dtype"}
    given = {}
    for part in spec.split(","):
        key, _, value = part.partition("=")
        if key.strip().lower() not in fields:
            raise ValueError(f"get_policy: unknown field {key!r} in {spec!r}; use "
                             "params=, compute= and output=")
        given[fields[key.strip().lower()]] = dtype(value)
    missing = [f for f in Policy._fields if f not in given]
    if missing:
        raise ValueError(f"get_policy: {spec!r} does not give {', '.join(missing)}")
    return Policy(**given)


# --------------------------------------------------------------------------- autocast

class AutocastTrace(Trace):
    """Casts the inputs of each primitive as its precision rule says, then binds it in
    the enclosing interpreter. It makes no tracers of its own: it only has to be the
    current interpreter while the function runs."""
    name = "autocast"

    def __init__(self, parent, dtype):
        super().__init__(parent)
        self.dtype = dtype

    def _cast(self, x, dtype):
        return self.bind_in_parent(convert_element_type_p, [x], {"new_dtype": dtype})

    def _targets(self, prim, in_dtypes):
        """The dtype each input is cast to (None: left alone)."""
        floats = [d for d in in_dtypes if d is not None and d in _CASTABLE]
        if prim.precision == LOW:
            return [self.dtype if d in _CASTABLE else None for d in in_dtypes]
        if prim.precision == FLOAT32:
            return [dtypes.float32 if d in dtypes.LOW_PRECISION else None
                    for d in in_dtypes]
        if len(set(floats)) < 2:
            return [None] * len(in_dtypes)
        widest = functools.reduce(dtypes.promote_types, floats)
        return [widest if d in _CASTABLE else None for d in in_dtypes]

    def process(self, prim, args, params):
        in_dtypes = [getattr(a, "dtype", None) if not isinstance(a, (int, float, complex))
                     else None for a in args]
        in_dtypes = [None if d is None else np.dtype(d) for d in in_dtypes]
        targets = self._targets(prim, in_dtypes)
        args = [a if t is None or t == d else self._cast(a, t)
                for a, d, t in zip(args, in_dtypes, targets)]
        return self.bind_in_parent(prim, args, params)

    def process_custom(self, rules, args):
        with use_trace(self.parent):
            return bind_custom(rules, args)


def autocast(fun: Callable[..., Any], dtype: DTypeLike = dtypes.bfloat16) -> Callable[..., Any]:
    """fun, with matrix products and convolutions run in `dtype` (bfloat16 or float16)
    and precision-sensitive ops in float32, decided per primitive by its `precision`
    rule (see the module docstring). Composes with grad, jit and vmap."""
    dtype = dtypes.check_supported(dtype, "autocast")
    if dtype not in dtypes.LOW_PRECISION and dtype != dtypes.float32:
        raise DTypeError(f"autocast computes in float16, bfloat16 or float32, not {dtype}")

    @functools.wraps(fun)
    def autocast_fun(*args, **kwargs):
        trace = AutocastTrace(current_trace(), dtype)
        try:
            with use_trace(trace):
                return fun(*args, **kwargs)
        finally:
            trace.alive = False
    return autocast_fun


# --------------------------------------------------------------------------- finiteness

def all_finite(tree: PyTree) -> Array:
    """A bool scalar Array: whether every element of every leaf is finite."""
    leaves = [fnp.asarray(x) for x in tree_leaves(tree)]
    result = fnp.asarray(True)
    for x in leaves:
        if x.size:
            result = fnp.logical_and(result, fnp.all(fnp.isfinite(x)))
    return result


def select_tree(pred: Any, on_true: PyTree, on_false: PyTree) -> PyTree:
    """Leaf by leaf, on_true where the bool scalar `pred` holds, else on_false (both
    trees of one structure); a jit-friendly `on_true if pred else on_false`."""
    return tree_map(lambda a, b: fnp.where(pred, a, b), on_true, on_false)


# --------------------------------------------------------------------------- loss scales

def _scaled_loss(loss, scale):
    # A float16 loss times 2**16 would overflow float16 itself: scale in float32.
    loss = fnp.asarray(loss)
    wide = dtypes.promote_types(loss.dtype, dtypes.float32) if dtypes.is_float(loss.dtype) \
        else dtypes.float32
    return loss.astype(wide) * scale.astype(wide)


def _unscaled(grads, scale):
    inv = 1 / scale.astype(dtypes.float32)

    def unscale(g):
        g = fnp.asarray(g)
        wide = dtypes.promote_types(g.dtype, dtypes.float32)
        return (g.astype(wide) * inv.astype(wide)).astype(g.dtype)
    return tree_map(unscale, grads)


@register_pytree_node_class
class DynamicLossScale:
    """A loss scale that adapts, with torch.amp.GradScaler's rule: after a step with
    non-finite gradients the scale is multiplied by `backoff_factor` (and the step is
    to be skipped); after `growth_interval` finite steps in a row, by `growth_factor`
    (unless that overflows float32). State: `loss_scale` (float32 scalar) and
    `counter` (int32 scalar, the finite steps since the last change); the factors and
    the interval are static.

        loss_scale = DynamicLossScale()
        grads = grad(lambda p: loss_scale.scale(loss(p)))(params)
        grads = loss_scale.unscale(grads)
        finite = all_finite(grads)
        loss_scale = loss_scale.adjust(finite)
        params = select_tree(finite, apply(params, grads), params)
    """

    def __init__(self, loss_scale=2.0 ** 16, counter=0, *, growth_interval=2000,
                 growth_factor=2.0, backoff_factor=0.5):
        if growth_factor <= 1 or not 0 < backoff_factor < 1 or growth_interval < 1:
            raise ValueError(
                f"DynamicLossScale needs growth_factor > 1, 0 < backoff_factor < 1 and "
                f"growth_interval >= 1; got {growth_factor}, {backoff_factor}, "
                f"{growth_interval}")
        self.loss_scale = fnp.asarray(loss_scale, dtypes.float32)
        self.counter = fnp.asarray(counter, dtypes.int32)
        self.growth_interval = int(growth_interval)
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)

    def tree_flatten(self):
        return (self.loss_scale, self.counter), (self.growth_interval, self.growth_factor,
                                                 self.backoff_factor)

    @classmethod
    def tree_unflatten(cls, aux, children):
        new = object.__new__(cls)
        new.loss_scale, new.counter = children
        new.growth_interval, new.growth_factor, new.backoff_factor = aux
        return new

    def _with(self, loss_scale, counter):
        return self.tree_unflatten(self.tree_flatten()[1], (loss_scale, counter))

    def scale(self, loss):
        """loss * loss_scale, in float32 (or wider)."""
        return _scaled_loss(loss, self.loss_scale)

    def unscale(self, grads):
        """grads / loss_scale, leaf by leaf, each in its own dtype (computed in
        float32)."""
        return _unscaled(grads, self.loss_scale)

    def adjust(self, grads_finite):
        """The next state, given whether this step's gradients were all finite."""
        finite = fnp.asarray(grads_finite)
        counter = self.counter + 1
        grow = finite & (counter >= self.growth_interval)
        # growing past float32's largest value would give inf: keep the scale there
        limit = np.float32(np.finfo(np.float32).max / self.growth_factor)
        grown = fnp.where(self.loss_scale <= limit,
                          fnp.minimum(self.loss_scale, limit) * np.float32(self.growth_factor),
                          self.loss_scale)
        scale = fnp.where(finite, fnp.where(grow, grown, self.loss_scale),
                          self.loss_scale * np.float32(self.backoff_factor))
        counter = fnp.where(finite & ~grow, counter, 0).astype(dtypes.int32)
        return self._with(scale, counter)

    def __repr__(self):
        return (f"DynamicLossScale(loss_scale={self.loss_scale}, counter={self.counter}, "
                f"growth_interval={self.growth_interval})")


@register_pytree_node_class
class StaticLossScale:
    """A fixed loss scale: scale and unscale as DynamicLossScale, adjust keeps it."""

    def __init__(self, loss_scale):
        self.loss_scale = fnp.asarray(loss_scale, dtypes.float32)

    def tree_flatten(self):
        return (self.loss_scale,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        new = object.__new__(cls)
        new.loss_scale, = children
        return new

    def scale(self, loss):
        return _scaled_loss(loss, self.loss_scale)

    def unscale(self, grads):
        return _unscaled(grads, self.loss_scale)

    def adjust(self, grads_finite):
        return self


def NoOpLossScale() -> "StaticLossScale":  # noqa: N802  (a constructor, named as jmp names it)
    """The loss scale of 1: scaling code that runs unchanged without scaling."""
    return StaticLossScale(1.0)


# --------------------------------------------------------------------------- optimizer

class ApplyIfFiniteState(NamedTuple):
    inner_state: Any
    notfinite_count: Any    # int32 scalar: the steps skipped so far
    last_finite: Any        # bool scalar: whether the last step's gradients were finite


def apply_if_finite(inner: GradientTransformation) -> GradientTransformation:
    """A GradientTransformation that runs `inner` only when every gradient is finite:
    otherwise the updates are zero and `inner`'s state is kept as it was (optax's
    apply_if_finite, with no limit on consecutive skips)."""
    def init(params):
        return ApplyIfFiniteState(inner.init(params), fnp.asarray(0, dtypes.int32),
                                  fnp.asarray(True))

    def update(grads, state, params=None):
        finite = all_finite(grads)
        # Non-finite gradients must not reach inner's state even through a select
        # (0 * inf is NaN in a moment estimate): zero them first.
        safe = select_tree(finite, grads, tree_map(fnp.zeros_like, grads))
        updates, inner_state = inner.update(safe, state.inner_state, params)
        updates = select_tree(finite, updates, tree_map(fnp.zeros_like, updates))
        inner_state = select_tree(finite, inner_state, state.inner_state)
        skipped = state.notfinite_count + fnp.where(finite, 0, 1).astype(dtypes.int32)
        return updates, ApplyIfFiniteState(inner_state, skipped, finite)
    return GradientTransformation(init, update)
