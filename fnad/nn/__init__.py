"""fnad.nn: activations (and, later, layers) as pure functions."""
from .activations import (  # noqa: F401
    relu, sigmoid, softplus, log_sigmoid, silu, swish, gelu, softmax, log_softmax,
    logsumexp, one_hot, hard_tanh)
