"""Activation functions, as composites of primitives, stable for large inputs."""
import math
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..numpy._core import promote_inexact, as_operand
from ..errors import ShapeError
from ..primitives.elementwise import relu_p
# softmax and log_softmax are scipy.special's (their owner), as in JAX both namespaces
# have them.
from ..scipy.special import erf, expit, log_softmax, logsumexp as _logsumexp, softmax  # noqa: F401
from ..typing import Array, ArrayLike, DTypeLike


def relu(x: ArrayLike) -> Array:
    """max(x, 0), elementwise; NaN stays NaN and the derivative at 0 is 0, as in JAX.

    >>> nn.relu(fnp.asarray([-1.0, 0.0, 2.0]))
    Array([0., 0., 2.], dtype=float32)
    >>> fnad.grad(lambda x: nn.relu(x))(0.0)
    Array(0., dtype=float32)
    """
    # NaN passes through (x <= 0 is false for NaN), as in JAX and PyTorch, so a
    # diverging network shows; the derivative at 0 and at NaN is 0, as in JAX.
    x = as_operand(x)
    return fnp.maximum(x, 0) if not dtypes.is_float(x.dtype) else relu_p.bind(x)


def sigmoid(x: ArrayLike) -> Array:
    """The logistic sigmoid 1 / (1 + exp(-x)) (scipy.special.expit)."""
    return expit(x)


def softplus(x: ArrayLike) -> Array:
    """log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)) so that it never overflows."""
    # log(1 + e^x) = max(x, 0) + log1p(e^{-|x|}): no overflow for large |x|.
    x, = promote_inexact(x)
    return fnp.maximum(x, 0) + fnp.log1p(fnp.exp(-fnp.abs(x)))


def log_sigmoid(x: ArrayLike) -> Array:
    """log(sigmoid(x)) = -softplus(-x), without overflow for large |x|."""
    return -softplus(-as_operand(x))


def silu(x: ArrayLike) -> Array:
    """x * sigmoid(x) (also called swish)."""
    x, = promote_inexact(x)
    return x * sigmoid(x)


swish = silu


def gelu(x: ArrayLike, approximate: bool = True) -> Array:
    """x * Phi(x); by default the tanh approximation, as in JAX."""
    x, = promote_inexact(x)
    if approximate:
        c = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + fnp.tanh(c * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def logsumexp(a: ArrayLike, axis: int | Sequence[int] | None = None, b: ArrayLike | None = None,
              keepdims: bool = False, return_sign: bool = False,
              where: ArrayLike | None = None) -> Array | tuple[Array, Array]:
    """log(sum(b * exp(a))) over `axis` without overflow; the same function as
    fnad.scipy.special.logsumexp."""
    return _logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign,
                      where=where)


def one_hot(x: ArrayLike, num_classes: int, *, dtype: DTypeLike | None = None,
            axis: int = -1) -> Array:
    """The one-hot encoding of integer labels x: a new axis of size `num_classes` at `axis`.

    Labels outside [0, num_classes) give all-zero rows, as in JAX.

    >>> nn.one_hot(fnp.asarray([0, 2]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    x = as_operand(x)
    dtype = dtypes.default_float() if dtype is None else dtype
    classes = fnp.arange(num_classes, dtype=x.dtype)
    out_ndim = x.ndim + 1
    axis = axis % out_ndim
    hits = fnp.expand_dims(x, axis) == fnp.reshape(
        classes, tuple(num_classes if i == axis else 1 for i in range(out_ndim)))
    return fnp.astype(hits, dtype)


def hard_tanh(x: ArrayLike) -> Array:
    """x clipped to [-1, 1]."""
    return fnp.clip(x, -1, 1)


def relu6(x: ArrayLike) -> Array:
    """x clipped to [0, 6]."""
    return fnp.clip(x, 0, 6)


def leaky_relu(x: ArrayLike, negative_slope: ArrayLike = 0.01) -> Array:
    """x where x >= 0, negative_slope * x below."""
    x, = promote_inexact(x)
    return fnp.where(x >= 0, x, negative_slope * x)


def elu(x: ArrayLike, alpha: ArrayLike = 1.0) -> Array:
    """x where x > 0, alpha * (exp(x) - 1) below (the exponential linear unit)."""
    x, = promote_inexact(x)
    # expm1 of a clipped argument: the unused branch of where never overflows
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.minimum(x, 0)))


def celu(x: ArrayLike, alpha: ArrayLike = 1.0) -> Array:
    """x where x > 0, alpha * (exp(x / alpha) - 1) below (the continuously differentiable
    ELU)."""
    x, = promote_inexact(x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.minimum(x, 0) / alpha))


def selu(x: ArrayLike) -> Array:
    """scale * elu(x, alpha) with the self-normalizing constants of Klambauer et al. (2017)."""
    # the fixed-point constants of Klambauer et al., 2017
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def standardize(x: ArrayLike, axis: int | Sequence[int] | None = -1, mean: ArrayLike | None = None,
                variance: Any = None, epsilon: float = 1e-5,
                where: ArrayLike | None = None) -> Array:
    """(x - mean) / sqrt(variance + epsilon), statistics over axis by default (over
    the entries where `where` is True, when given)."""
    x, = promote_inexact(x)
    if where is None:
        average = lambda v: fnp.mean(v, axis=axis, keepdims=True)  # noqa: E731
    else:
        where = fnp.broadcast_to(as_operand(where), x.shape)
        count = fnp.sum(fnp.astype(where, x.dtype), axis=axis, keepdims=True)
        average = lambda v: fnp.sum(fnp.where(where, v, 0), axis=axis,  # noqa: E731
                                    keepdims=True) / count
    if mean is None:
        mean = average(x)
    if variance is None:
        variance = average(fnp.square(x - mean))
    return (x - mean) * fnp.rsqrt(variance + epsilon)


def identity(x: ArrayLike) -> Array:
    """x itself (as an Array)."""
    return as_operand(x)


def tanh(x: ArrayLike) -> Array:
    """The hyperbolic tangent (fnad.numpy.tanh)."""
    return fnp.tanh(x)


def hard_sigmoid(x: ArrayLike) -> Array:
    """relu6(x + 3) / 6: a piecewise-linear sigmoid."""
    x, = promote_inexact(x)
    return relu6(x + 3) / 6


def hard_silu(x: ArrayLike) -> Array:
    """x * hard_sigmoid(x) (also called hard_swish)."""
    x, = promote_inexact(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x: ArrayLike) -> Array:
    """x tanh(softplus(x)) (Misra, 2019)."""
    x, = promote_inexact(x)
    return x * fnp.tanh(softplus(x))


def soft_sign(x: ArrayLike) -> Array:
    """x / (|x| + 1)."""
    x, = promote_inexact(x)
    return x / (fnp.abs(x) + 1)


def squareplus(x: ArrayLike, b: float = 4) -> Array:
    """(x + sqrt(x^2 + b)) / 2 (So, 2021): a smooth relu from square roots alone."""
    x, = promote_inexact(x)
    # h = sqrt(x^2 + b) as a hypot, so x^2 cannot overflow; for x < 0 the sum cancels,
    # so it is written as b / (2 (h - x)) there (each branch fed only its own x values,
    # so the other's infinities never reach the derivative)
    root_b = fnp.sqrt(fnp.asarray(b, x.dtype))
    positive = x >= 0
    xp, xn = fnp.where(positive, x, 0), fnp.where(positive, -1, x)
    return fnp.where(positive, 0.5 * xp + 0.5 * fnp.hypot(xp, root_b),
                     (0.5 * b) / (fnp.hypot(xn, root_b) - xn))


def sparse_plus(x: ArrayLike) -> Array:
    """0 below -1, x above 1, (x + 1)^2 / 4 between: a softplus that is exactly 0 and
    exactly linear outside [-1, 1]."""
    x, = promote_inexact(x)
    return fnp.where(x <= -1, 0.0, fnp.where(x >= 1, x, fnp.square(x + 1) / 4))


def sparse_sigmoid(x: ArrayLike) -> Array:
    """The derivative of sparse_plus: (x + 1) / 2 clipped to [0, 1]."""
    x, = promote_inexact(x)
    return 0.5 * fnp.clip(x + 1.0, 0.0, 2.0)


def glu(x: ArrayLike, axis: int = -1) -> Array:
    """Gated linear unit: the first half along axis times the sigmoid of the second."""
    x = as_operand(x)
    if x.shape[axis] % 2:
        raise ShapeError(f"glu: axis {axis} of the input (shape {tuple(x.shape)}) must "
                         f"have an even size, to split into value and gate halves")
    value, gate = fnp.split(x, 2, axis=axis)
    return value * sigmoid(gate)


def log1mexp(x: ArrayLike) -> Array:
    """log(1 - exp(-x)) for x > 0, accurate at both ends (Maechler, 2012): log1p of
    -exp(-x) for x above log 2, log of -expm1(-x) below."""
    x, = promote_inexact(x)
    big = x > math.log(2)
    return fnp.where(big, fnp.log1p(-fnp.exp(-fnp.where(big, x, 1.0))),
                     fnp.log(-fnp.expm1(-fnp.where(big, 1.0, x))))


def logmeanexp(x: ArrayLike, axis: int | Sequence[int] | None = None,
               where: ArrayLike | None = None, keepdims: bool = False) -> Array:
    """log(mean(exp(x))) over axis, without overflow; `where` masks entries out."""
    x, = promote_inexact(x)
    if where is None:
        count = x.size if axis is None else math.prod(
            x.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
        return _logsumexp(x, axis=axis, keepdims=keepdims) - math.log(count)
    where = fnp.broadcast_to(as_operand(where), x.shape)
    masked = fnp.where(where, x, -np.inf)
    count = fnp.sum(fnp.astype(where, x.dtype), axis=axis, keepdims=keepdims)
    return _logsumexp(masked, axis=axis, keepdims=keepdims) - fnp.log(count)
