"""Losses, mean-reduced over the batch unless said otherwise; numerically stable."""
from .. import numpy as fnp
from ..numpy._core import promote_inexact, as_operand
from .activations import log_softmax, one_hot, softplus


def mse(predictions, targets):
    predictions, targets = promote_inexact(predictions, targets)
    return fnp.mean((predictions - targets) ** 2)


def _as_one_hot(labels, num_classes, dtype):
    labels = as_operand(labels)
    if labels.dtype.kind in "iu":
        return one_hot(labels, num_classes, dtype=dtype)
    return labels.astype(dtype)


def softmax_cross_entropy(logits, labels):
    """Mean of -sum(labels * log_softmax(logits)); labels are integer classes or
    one-hot / probability rows."""
    logits, = promote_inexact(logits)
    targets = _as_one_hot(labels, logits.shape[-1], logits.dtype)
    return -fnp.mean(fnp.sum(targets * log_softmax(logits, axis=-1), axis=-1))


def nll(log_probs, labels):
    """Negative log-likelihood of integer labels (or one-hot rows) under log_probs."""
    log_probs, = promote_inexact(log_probs)
    targets = _as_one_hot(labels, log_probs.shape[-1], log_probs.dtype)
    return -fnp.mean(fnp.sum(targets * log_probs, axis=-1))


def binary_cross_entropy_with_logits(logits, labels):
    """Mean of the log loss of sigmoid(logits): written as max(z, 0) - z y + log(1 + e^-|z|)
    so large |logits| neither overflow nor lose the gradient."""
    logits, labels = promote_inexact(logits, labels)
    return fnp.mean(softplus(logits) - logits * labels)


def huber(predictions, targets, delta=1.0):
    predictions, targets = promote_inexact(predictions, targets)
    err = fnp.abs(predictions - targets)
    quadratic = fnp.minimum(err, delta)
    return fnp.mean(0.5 * quadratic ** 2 + delta * (err - quadratic))
