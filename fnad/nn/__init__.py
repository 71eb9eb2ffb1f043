"""fnad.nn: activations, initializers, layers as (init_fn, apply_fn) pairs, losses, attention."""
from .activations import (  # noqa: F401
    relu, sigmoid, softplus, log_sigmoid, silu, swish, gelu, softmax, log_softmax,
    logsumexp, one_hot, hard_tanh, relu6, leaky_relu, elu, celu, selu, standardize,
    identity, tanh, hard_sigmoid, hard_silu, hard_swish, mish, soft_sign, squareplus,
    sparse_plus, sparse_sigmoid, glu, log1mexp, logmeanexp)
from .attention import dot_product_attention  # noqa: F401
from . import initializers  # noqa: F401
from .layers import (  # noqa: F401
    Layer, Dense, Conv, GeneralConv, ConvTranspose, MaxPool, AvgPool, Flatten, Dropout,
    LayerNorm, BatchNorm, Embedding, serial, parallel, FanOut, FanInSum, FanInConcat,
    Identity, elementwise, Relu, Relu6, Tanh, Sigmoid, Softplus, Gelu, Silu, Elu, Selu,
    LeakyRelu, LogSoftmax, Softmax)
from .losses import (  # noqa: F401
    mse, softmax_cross_entropy, nll, binary_cross_entropy_with_logits, huber)
