"""Activation functions, as composites of primitives, stable for large inputs."""
import math

import numpy as np

from .. import numpy as fnp
from ..numpy._core import promote_inexact, as_operand
# softmax and log_softmax are scipy.special's (their owner), as in JAX both namespaces
# have them.
from ..scipy.special import erf, expit, log_softmax, logsumexp as _logsumexp, softmax  # noqa: F401


def relu(x):
    # NaN passes through (x <= 0 is false for NaN), as in JAX and PyTorch, so a
    # diverging network shows; the derivative at 0 is 0, as in JAX.
    x = as_operand(x)
    return fnp.maximum(x, 0) if x.dtype.kind != "f" else fnp.where(x <= 0, 0, x)


def sigmoid(x):
    return expit(x)


def softplus(x):
    # log(1 + e^x) = max(x, 0) + log1p(e^{-|x|}): no overflow for large |x|.
    x, = promote_inexact(x)
    return fnp.maximum(x, 0) + fnp.log1p(fnp.exp(-fnp.abs(x)))


def log_sigmoid(x):
    return -softplus(-as_operand(x))


def silu(x):
    x, = promote_inexact(x)
    return x * sigmoid(x)


swish = silu


def gelu(x, approximate=True):
    """x * Phi(x); by default the tanh approximation, as in JAX."""
    x, = promote_inexact(x)
    if approximate:
        c = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + fnp.tanh(c * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def logsumexp(x, axis=None, keepdims=False):
    return _logsumexp(x, axis=axis, keepdims=keepdims)


def one_hot(x, num_classes, dtype=np.float32, axis=-1):
    x = as_operand(x)
    classes = fnp.arange(num_classes, dtype=x.dtype)
    out_ndim = x.ndim + 1
    axis = axis % out_ndim
    hits = fnp.expand_dims(x, axis) == fnp.reshape(
        classes, tuple(num_classes if i == axis else 1 for i in range(out_ndim)))
    return fnp.astype(hits, dtype)


def hard_tanh(x):
    return fnp.clip(x, -1, 1)


def relu6(x):
    return fnp.clip(x, 0, 6)


def leaky_relu(x, negative_slope=0.01):
    x, = promote_inexact(x)
    return fnp.where(x >= 0, x, negative_slope * x)


def elu(x, alpha=1.0):
    x, = promote_inexact(x)
    # expm1 of a clipped argument: the unused branch of where never overflows
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.minimum(x, 0)))


def celu(x, alpha=1.0):
    x, = promote_inexact(x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(fnp.minimum(x, 0) / alpha))


def selu(x):
    # the fixed-point constants of Klambauer et al., 2017
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5):
    """(x - mean) / sqrt(variance + epsilon), statistics over axis by default."""
    x, = promote_inexact(x)
    if mean is None:
        mean = fnp.mean(x, axis=axis, keepdims=True)
    if variance is None:
        variance = fnp.mean(fnp.square(x - mean), axis=axis, keepdims=True)
    return (x - mean) * fnp.rsqrt(variance + epsilon)
