"""Losses, mean-reduced over the batch unless said otherwise; numerically stable.

Integer class labels must lie in [0, num_classes). A concrete label outside raises
IndexError naming it; a traced one (under jit or vmap, where its value is unknown
until the kernels run) makes the loss of its example NaN, so the mean is NaN rather
than a silently smaller loss. JAX instead gives such an example a loss of 0.
"""
import numpy as np

from .. import numpy as fnp
from ..core import Tracer
from ..numpy._core import promote_inexact, as_operand
from .activations import log_softmax, one_hot, softplus
from ..typing import Array, ArrayLike


def mse(predictions: ArrayLike, targets: ArrayLike) -> Array:
    """The mean of (predictions - targets) ** 2 over every element.

    >>> nn.mse(fnp.asarray([1.0, 2.0]), fnp.asarray([1.0, 4.0]))
    Array(2., dtype=float32)
    """
    predictions, targets = promote_inexact(predictions, targets)
    return fnp.mean((predictions - targets) ** 2)


def _check_classes(labels, num_classes):
    """None for a concrete array of labels in range (IndexError for one outside), or
    for traced labels the mask of those in range."""
    if isinstance(labels, Tracer):
        return (labels >= 0) & (labels < num_classes)
    value = np.asarray(labels)
    bad = value[(value < 0) | (value >= num_classes)]
    if bad.size:
        raise IndexError(f"label {bad.flat[0]} is outside the {num_classes} classes "
                         f"[0, {num_classes}) of the logits ({bad.size} of {value.size} "
                         f"labels are)")
    return None


def _log_likelihood(log_probs, labels):
    """sum(targets * log_probs) over the last axis, one per example; labels are
    integer classes or one-hot / probability rows."""
    labels = as_operand(labels)
    if labels.dtype.kind not in "iu":
        return fnp.sum(labels.astype(log_probs.dtype) * log_probs, axis=-1)
    num_classes = log_probs.shape[-1]
    valid = _check_classes(labels, num_classes)
    targets = one_hot(labels, num_classes, dtype=log_probs.dtype)
    per_example = fnp.sum(targets * log_probs, axis=-1)
    return per_example if valid is None else fnp.where(valid, per_example, np.nan)


def softmax_cross_entropy(logits: ArrayLike, labels: ArrayLike) -> Array:
    """Mean of -sum(labels * log_softmax(logits)); labels are integer classes or
    one-hot / probability rows."""
    logits, = promote_inexact(logits)
    return -fnp.mean(_log_likelihood(log_softmax(logits, axis=-1), labels))


def nll(log_probs: ArrayLike, labels: ArrayLike) -> Array:
    """Negative log-likelihood of integer labels (or one-hot rows) under log_probs."""
    log_probs, = promote_inexact(log_probs)
    return -fnp.mean(_log_likelihood(log_probs, labels))


def binary_cross_entropy_with_logits(logits: ArrayLike, labels: ArrayLike) -> Array:
    """Mean of the log loss of sigmoid(logits): written as max(z, 0) - z y + log(1 + e^-|z|)
    so large |logits| neither overflow nor lose the gradient."""
    logits, labels = promote_inexact(logits, labels)
    return fnp.mean(softplus(logits) - logits * labels)


def huber(predictions: ArrayLike, targets: ArrayLike, delta: float = 1.0) -> Array:
    """The mean Huber loss: quadratic (0.5 e**2) for errors up to `delta`, linear beyond."""
    predictions, targets = promote_inexact(predictions, targets)
    err = fnp.abs(predictions - targets)
    quadratic = fnp.minimum(err, delta)
    return fnp.mean(0.5 * quadratic ** 2 + delta * (err - quadratic))
