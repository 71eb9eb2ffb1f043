"""stax, the minimal layer library of jax.example_libraries, on fnad.

A layer is a pair (init_fun, apply_fun):

    init_fun(rng, input_shape) -> (output_shape, params)
    apply_fun(params, inputs, rng=None, **kwargs) -> outputs

Same names, signatures, parameter layouts and random-key use as JAX's stax, so a
model written for it (and its parameters) works here. fnad.nn is the richer version
(explicit BatchNorm state, train=False, clear shape errors); where the two agree
this module hands out fnad.nn's layers. Differences from fnad.nn kept for JAX's
sake: Dropout's `rate` is the probability of *keeping* a value, BatchNorm always
normalizes with the batch's statistics and its params are (beta, gamma), a
convolution's bias has the output's rank (ones but on the channel axis: (1, 1, 1, C)
for NHWC), and random keys go in `rng=`.
"""
import math
from typing import Any, Callable, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from .. import random
from ..nn import layers as nn_layers
from ..nn.activations import (  # noqa: F401
    relu, log_softmax, softmax, softplus, sigmoid, elu, leaky_relu, selu, gelu, standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros
from ..staged.eval_shape import eval_shape, ShapeDtypeStruct
from ..typing import ApplyFn, InitFn, Initializer, Shape

# JAX's aliases
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

_Pair = tuple[InitFn, ApplyFn]      # (init_fun, apply_fun)
_Padding = str | Sequence[tuple[int, int]]


def _shape_of(fun, input_shape, *args):
    """The shape of fun(*args, x) for x of input_shape, found by abstract evaluation.
    Unknown sizes (-1, the batch) are tried as 1 and 2; output sizes that follow them
    come out -1 again."""
    def shape_with(n):
        x = ShapeDtypeStruct(tuple(n if d == -1 else d for d in input_shape),
                             np.dtype(np.float32))
        return tuple(eval_shape(fun, *args, x).shape)
    one = shape_with(1)
    if -1 not in tuple(input_shape):
        return one
    return tuple(-1 if a != b else a for a, b in zip(one, shape_with(2)))


# --------------------------------------------------------------------------- dense, conv

def Dense(out_dim: int, W_init: Initializer = glorot_normal(),
          b_init: Initializer = normal()) -> _Pair:
    """x @ W + b over the last axis (fnad.nn.Dense with JAX's default initializers)."""
    return nn_layers.Dense(out_dim, W_init=W_init, b_init=b_init)


def _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape):
    lhs_spec, rhs_spec, _ = dimension_numbers
    spatial = iter(filter_shape)
    return tuple(out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                 else next(spatial) for c in rhs_spec)


def _general_conv_layer(convolve, dimension_numbers, out_chan, filter_shape, W_init, b_init):
    _, rhs_spec, out_spec = dimension_numbers
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, kernel_shape), b_init(k2, bias_shape)
        output_shape = _shape_of(convolve, input_shape, W)
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return convolve(W, inputs) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                padding: _Padding = "VALID", W_init: Initializer | None = None,
                b_init: Initializer = normal(1e-6)) -> _Pair:
    """A convolution with any layouts, e.g. ('NCHW', 'OIHW', 'NCHW')."""
    strides = tuple(strides or (1,) * len(filter_shape))
    return _general_conv_layer(
        lambda W, x: lax.conv_general_dilated(x, W, strides, padding,
                                              dimension_numbers=dimension_numbers),
        dimension_numbers, out_chan, filter_shape, W_init, b_init)


def Conv(out_chan: int, filter_shape: Sequence[int], strides: Sequence[int] | None = None,
         padding: _Padding = "VALID", W_init: Initializer | None = None,
         b_init: Initializer = normal(1e-6)) -> _Pair:
    """A 2-d convolution layer on NHWC inputs with HWIO weights (GeneralConv with those
    dimension numbers), as stax.Conv."""
    return GeneralConv(("NHWC", "HWIO", "NHWC"), out_chan, filter_shape, strides, padding,
                       W_init, b_init)


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                         padding: _Padding = "VALID", W_init: Initializer | None = None,
                         b_init: Initializer = normal(1e-6)) -> _Pair:
    """The transposed convolution (the gradient of GeneralConv with respect to its input)."""
    strides = tuple(strides or (1,) * len(filter_shape))
    return _general_conv_layer(
        lambda W, x: lax.conv_transpose(x, W, strides, padding,
                                        dimension_numbers=dimension_numbers),
        dimension_numbers, out_chan, filter_shape, W_init, b_init)


def Conv1DTranspose(out_chan: int, filter_shape: Sequence[int],
                    strides: Sequence[int] | None = None, padding: _Padding = "VALID",
                    W_init: Initializer | None = None,
                    b_init: Initializer = normal(1e-6)) -> _Pair:
    """A 1-d transposed convolution layer on NHC inputs, as stax.Conv1DTranspose."""
    return GeneralConvTranspose(("NHC", "HIO", "NHC"), out_chan, filter_shape, strides,
                                padding, W_init, b_init)


def ConvTranspose(out_chan: int, filter_shape: Sequence[int],
                  strides: Sequence[int] | None = None, padding: _Padding = "VALID",
                  W_init: Initializer | None = None,
                  b_init: Initializer = normal(1e-6)) -> _Pair:
    """A 2-d transposed convolution layer on NHWC inputs, as stax.ConvTranspose."""
    return GeneralConvTranspose(("NHWC", "HWIO", "NHWC"), out_chan, filter_shape, strides,
                                padding, W_init, b_init)


# --------------------------------------------------------------------------- normalization

def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5,
              center: bool = True, scale: bool = True, beta_init: Initializer = zeros,
              gamma_init: Initializer = ones) -> _Pair:
    """Normalize with the statistics of the batch over `axis`, then gamma * z + beta.
    No running statistics (fnad.nn.BatchNorm keeps them)."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        n = len(input_shape)
        shape = tuple(d for i, d in enumerate(input_shape) if i not in {a % n for a in axis})
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        reduced = {a % x.ndim for a in axis}
        # the feature-shaped params, with the reduced axes put back as ones
        expand = tuple(1 if i in reduced else n for i, n in enumerate(x.shape))
        z = standardize(x, tuple(sorted(reduced)), epsilon=epsilon)
        if scale:
            z = jnp.reshape(gamma, expand) * z
        if center:
            z = z + jnp.reshape(beta, expand)
        return z
    return init_fun, apply_fun


# --------------------------------------------------------------------------- elementwise

elementwise = nn_layers.elementwise
Tanh = nn_layers.Tanh
Relu = nn_layers.Relu
Exp = elementwise(jnp.exp)
LogSoftmax = nn_layers.LogSoftmax
Softmax = nn_layers.Softmax
Softplus = nn_layers.Softplus
Sigmoid = nn_layers.Sigmoid
Elu = nn_layers.Elu
LeakyRelu = nn_layers.LeakyRelu
Selu = nn_layers.Selu
Gelu = nn_layers.Gelu


# --------------------------------------------------------------------------- pooling

def _full_window(window_shape, strides, spec, ndim_hint=None):
    """Window and strides over every axis: ones on the batch and channel axes (spec's
    'N' and 'C'; batch first and channels last without a spec)."""
    strides = tuple(strides or (1,) * len(window_shape))
    window_shape = tuple(window_shape)
    if spec is None:
        non_spatial = (0, len(window_shape) + 1)
    else:
        non_spatial = (spec.index("N"), spec.index("C"))
    for i in sorted(non_spatial):
        window_shape = window_shape[:i] + (1,) + window_shape[i:]
        strides = strides[:i] + (1,) + strides[i:]
    return window_shape, strides, non_spatial


def _pooling_layer(computation, init_value, average=False, doc=None):
    def PoolingLayer(window_shape: Sequence[int], strides: Sequence[int] | None = None,
                     padding: _Padding = "VALID", spec: str | None = None) -> _Pair:
        spatial_window = tuple(window_shape)
        spatial_strides = tuple(strides or (1,) * len(spatial_window))
        window, full_strides, non_spatial = _full_window(window_shape, strides, spec)

        def pool(x):
            out = lax.reduce_window(x, init_value, computation, window, full_strides,
                                    padding)
            if not average:
                return out
            # divide by the number of input values in each window: padding not counted
            spatial = tuple(n for i, n in enumerate(x.shape) if i not in non_spatial)
            counts = lax.reduce_window(jnp.ones(spatial, x.dtype), 0.0, "add",
                                       spatial_window, spatial_strides, padding)
            for i in sorted(non_spatial):
                counts = jnp.expand_dims(counts, i)
            return out / counts

        def init_fun(rng, input_shape):
            return _shape_of(pool, input_shape), ()

        def apply_fun(params, inputs, **kwargs):
            return pool(inputs)
        return init_fun, apply_fun
    PoolingLayer.__doc__ = doc
    return PoolingLayer


_POOL_DOC = ("A layer taking the {} over windows of `window_shape`, as stax.{}: `strides` "
             "default to 1, `spec` names the layout (default NHWC).")
MaxPool = _pooling_layer("max", -math.inf, doc=_POOL_DOC.format("maximum", "MaxPool"))
SumPool = _pooling_layer("add", 0.0, doc=_POOL_DOC.format("sum", "SumPool"))
AvgPool = _pooling_layer("add", 0.0, average=True,
                         doc=_POOL_DOC.format("average (padding not counted)", "AvgPool"))


# --------------------------------------------------------------------------- structure

Flatten = nn_layers.Flatten
Identity = nn_layers.Identity
FanInSum = nn_layers.FanInSum
FanInConcat = nn_layers.FanInConcat


def FanOut(num: int) -> _Pair:
    """num copies of the input, in a list."""
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


def Dropout(rate: float, mode: str = "train") -> _Pair:
    """In mode 'train', keep each value with probability `rate` (scaled by 1 / rate)
    and zero the others; in any other mode, the identity. Needs rng= when training."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("stax.Dropout needs a random key: call apply_fun(params, "
                             "inputs, rng=key) with a key from fnad.random.key")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)
    return (lambda rng, input_shape: (input_shape, ())), apply_fun


# --------------------------------------------------------------------------- combinators

def serial(*layers: _Pair) -> _Pair:
    """Layers applied one after the other; each gets its own key."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, p = init(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else [None] * len(layers)
        for fun, p, r in zip(apply_funs, params, rngs):
            inputs = fun(p, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers: _Pair) -> _Pair:
    """Layer i applied to input i of a sequence of inputs."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(layers))
        outs = [init(r, s) for init, r, s in zip(init_funs, rngs, input_shape)]
        return [o[0] for o in outs], [o[1] for o in outs]

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else [None] * len(layers)
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Shape], _Pair]) -> _Pair:
    """A layer built by make_layer(input_shape) once the input shape is known."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
