"""Layers as (init_fn, apply_fn) pairs, in the style of stax.

    init_fn(key, input_shape) -> (output_shape, params)
    apply_fn(params, inputs, *, key=None, train=True) -> outputs

Shapes use -1 for the batch size. Layers with randomness (Dropout) take a `key`;
`train=False` switches them (and BatchNorm) to evaluation behaviour. Layers with
running statistics (BatchNorm) keep them as explicit state: `layer.init_state(
input_shape)` makes it, and `apply_fn(params, inputs, state=state, train=...)`
returns `(outputs, new_state)`. Combinators thread the state of their children, so
a whole network's state is one pytree that goes in and comes out of the step.
"""
import numpy as np
from typing import Any, Callable, Sequence

from .. import hooks
from .. import numpy as fnp
from .. import random
from ..lax import convolution as lax_conv
from ..staged.eval_shape import eval_shape, ShapeDtypeStruct
from ..errors import ShapeError
from . import activations as A
from . import initializers as init
from ..typing import InitFn, ApplyFn, Initializer


class Layer(tuple[InitFn, ApplyFn]):
    """An (init_fn, apply_fn) pair; `stateful` layers also have `init_state`."""

    def __new__(cls, init_fn, apply_fn, init_state=None):
        layer = super().__new__(cls, (init_fn, apply_fn))
        layer.init_state = init_state or (lambda input_shape: None)
        layer.stateful = init_state is not None
        return layer

    @property
    def init(self) -> InitFn:
        return self[0]

    @property
    def apply(self) -> ApplyFn:
        return self[1]


def _split(key, n):
    if key is None:
        return [None] * n
    return list(random.split(key, n))


def _as_layer(layer):
    return layer if isinstance(layer, Layer) else Layer(*layer)


def _call(layer, params, x, state, key, train, index=0):
    """Apply a child layer; returns (outputs, new_state). A stateful child called
    without state (training without running statistics) returns outputs only. Under
    fnad.hooks.intercept the child is applied through the interceptor, as child
    `index` of its combinator."""
    if hooks.active_interceptor() is not None:
        return _call_intercepted(layer, params, x, state, key, train, index)
    if layer.stateful and state is not None:
        return layer.apply(params, x, key=key, train=train, state=state)
    return layer.apply(params, x, key=key, train=train), state


def _call_intercepted(layer, params, x, state, key, train, index):
    new_state = [state]

    def apply(params, x):
        if layer.stateful and state is not None:
            y, new_state[0] = layer.apply(params, x, key=key, train=train, state=state)
            return y
        return layer.apply(params, x, key=key, train=train)
    y = hooks.call_layer(index, hooks.layer_name(layer.apply), apply, params, x)
    return y, new_state[0]


# --------------------------------------------------------------------------- elementwise

def elementwise(fun: Callable[..., Any], **fun_kwargs: Any) -> Layer:
    """A parameter-free layer applying fun to its input."""
    def apply_fn(params, x, **kw):
        return fun(x, **fun_kwargs)
    # (named after fun in fnad.hooks' layer paths)
    apply_fn.__qualname__ = f"{getattr(fun, '__name__', 'elementwise')}.apply_fn"
    return Layer(lambda key, input_shape: (input_shape, ()), apply_fn)


Relu = elementwise(A.relu)
Relu6 = elementwise(A.relu6)
Tanh = elementwise(fnp.tanh)
Sigmoid = elementwise(A.sigmoid)
Softplus = elementwise(A.softplus)
Gelu = elementwise(A.gelu)
Silu = elementwise(A.silu)
Elu = elementwise(A.elu)
Selu = elementwise(A.selu)
LeakyRelu = elementwise(A.leaky_relu)
LogSoftmax = elementwise(A.log_softmax, axis=-1)
Softmax = elementwise(A.softmax, axis=-1)
def _identity_apply(params, x, **kw):
    return x


_identity_apply.__qualname__ = "Identity.apply_fn"     # (fnad.hooks' paths)
Identity = Layer(lambda key, input_shape: (input_shape, ()), _identity_apply)


# --------------------------------------------------------------------------- dense, conv

def Dense(out_dim: int, W_init: Initializer | None = None,
          b_init: Initializer | None = None) -> Layer:
    """y = x @ W + b over the last axis."""
    W_init = W_init or init.glorot_normal()
    b_init = b_init or init.normal(1e-6)

    def init_fn(key, input_shape):
        if not input_shape or input_shape[-1] <= 0:
            raise ShapeError(f"nn.Dense({out_dim}) needs inputs with features on the last "
                             f"axis, (..., features), features > 0; got input shape "
                             f"{tuple(input_shape)}")
        k1, k2 = _split(key, 2)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), (W, b)

    def apply_fn(params, x, **kw):
        W, b = params
        if not x.ndim or x.shape[-1] != W.shape[0]:
            raise ShapeError(f"nn.Dense({out_dim}) was initialized for {W.shape[0]} input "
                             f"features (weight {tuple(W.shape)}) but got an input of shape "
                             f"{tuple(x.shape)}; features go on the last axis")
        return fnp.matmul(x, W) + b
    return Layer(init_fn, apply_fn)


def _output_shape(apply_fn, params, input_shape, dtype=np.float32):
    """The output shape of apply_fn on an input of input_shape (-1: any batch size),
    found by staging it with abstract values."""
    batch = [i for i, n in enumerate(input_shape) if n == -1]
    concrete = tuple(1 if n == -1 else n for n in input_shape)
    out = eval_shape(lambda p, x: apply_fn(p, x, train=False), params,
                     ShapeDtypeStruct(concrete, np.dtype(dtype))).shape
    return tuple(-1 if i in batch else n for i, n in enumerate(out))


def _channels_last(spatial_rank):
    return {1: "NWC", 2: "NHWC", 3: "NDHWC"}.get(spatial_rank, "N" + "S" * spatial_rank + "C")


def _check_spatial(name, layout, input_shape, output_shape):
    """A clear error where a channels-last layer meets an input whose rank differs from
    its layout's, or whose spatial size comes out zero or negative -- which is what a
    channels-first (NCHW, PyTorch's) input usually does."""
    input_shape = tuple(input_shape)
    hint = (f"{name} expects {layout} inputs (batch, spatial..., channels); got input "
            f"shape {input_shape}")
    if len(input_shape) != len(layout):
        raise ShapeError(f"{hint}, of rank {len(input_shape)} instead of {len(layout)}")
    if output_shape is not None and any(n <= 0 for n in tuple(output_shape)[1:-1]):
        raise ShapeError(f"{hint}, which leaves an output of spatial size "
                         f"{tuple(output_shape)[1:-1]}. For channels-first (NCHW) data, "
                         f"move the channels last, e.g. fnad.numpy.transpose(x, (0, 2, 3, 1))")


def _conv_layer(name, layout, convolve, out_chan, filter_shape, W_init, b_init):
    """A layer y = convolve(x, W) + b with an HWIO kernel W and a bias per channel."""
    W_init = W_init or init.he_normal()
    b_init = b_init or init.normal(1e-6)

    def init_fn(key, input_shape):
        _check_spatial(name, layout, input_shape, None)
        if input_shape[-1] <= 0:
            raise ShapeError(f"{name} got an input of shape {tuple(input_shape)}, with no "
                             f"channels on the last axis ({layout})")
        k1, k2 = _split(key, 2)
        W = W_init(k1, tuple(filter_shape) + (input_shape[-1], out_chan))
        b = b_init(k2, (out_chan,))
        output_shape = _output_shape(apply_fn, (W, b), input_shape)
        return output_shape, (W, b)

    def apply_fn(params, x, **kw):
        W, b = params
        _check_spatial(name, layout, x.shape, None)
        if x.shape[-1] != W.shape[-2]:
            raise ShapeError(f"{name} was initialized for {W.shape[-2]} input channels "
                             f"(kernel {tuple(W.shape)}) but got an input of shape "
                             f"{tuple(x.shape)}, with {x.shape[-1]} channels on the last axis "
                             f"({layout})")
        y = convolve(x, W)
        _check_spatial(name, layout, x.shape, y.shape)
        return y + b
    apply_fn.__qualname__ = f"{name.rpartition('.')[2]}.apply_fn"   # (fnad.hooks' paths)
    return Layer(init_fn, apply_fn)


def GeneralConv(dimension_numbers: Any, out_chan: int, filter_shape: Sequence[int],
                strides: Sequence[int] | None = None,
                padding: str | Sequence[tuple[int, int]] = "VALID",
                W_init: Initializer | None = None, b_init: Initializer | None = None) -> Layer:
    """A convolution with explicit dimension numbers, e.g. ('NHWC', 'HWIO', 'NHWC')."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if (lhs_spec, rhs_spec, out_spec) != ("NHWC", "HWIO", "NHWC") and \
            (lhs_spec[0], lhs_spec[-1], rhs_spec[-2:], out_spec) != ("N", "C", "IO", lhs_spec):
        raise ValueError(f"fnad.nn convolutions use channels-last layouts such as "
                         f"('NHWC', 'HWIO', 'NHWC'); got {dimension_numbers}")
    strides = tuple(strides or (1,) * len(filter_shape))
    return _conv_layer(
        "nn.Conv", lhs_spec,
        lambda x, W: lax_conv.conv_general_dilated(x, W, strides, padding,
                                                 dimension_numbers=dimension_numbers),
        out_chan, filter_shape, W_init, b_init)


def Conv(out_chan: int, filter_shape: Sequence[int], strides: Sequence[int] | None = None,
         padding: str | Sequence[tuple[int, int]] = "VALID", W_init: Initializer | None = None,
         b_init: Initializer | None = None) -> Layer:
    """2-D convolution over NHWC inputs with an HWIO kernel, as stax.Conv."""
    return GeneralConv(("NHWC", "HWIO", "NHWC"), out_chan, filter_shape, strides, padding,
                       W_init, b_init)


def ConvTranspose(out_chan: int, filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                  padding: str | Sequence[tuple[int, int]] = "VALID",
                  W_init: Initializer | None = None, b_init: Initializer | None = None) -> Layer:
    """The transpose (gradient) of Conv, over NHWC inputs with an HWIO kernel."""
    strides = tuple(strides or (1,) * len(filter_shape))
    return _conv_layer(
        "nn.ConvTranspose", _channels_last(len(filter_shape)),
        lambda x, W: lax_conv.conv_transpose(x, W, strides, padding,
                                           dimension_numbers=("NHWC", "HWIO", "NHWC")),
        out_chan, filter_shape, W_init, b_init)


# --------------------------------------------------------------------------- pooling, reshaping

def _pool(kind, window_shape, strides=None, padding="VALID"):
    strides = tuple(strides or window_shape)
    window = (1,) + tuple(window_shape) + (1,)
    full_strides = (1,) + strides + (1,)

    name = "nn.MaxPool" if kind == "max" else "nn.AvgPool"
    layout = _channels_last(len(window_shape))

    def init_fn(key, input_shape):
        return _output_shape(apply_fn, (), input_shape), ()

    def apply_fn(params, x, **kw):
        _check_spatial(name, layout, x.shape, None)
        if kind == "max":
            y = lax_conv.max_pool(x, window, full_strides, padding)
        else:
            y = lax_conv.avg_pool(x, window, full_strides, padding)
        _check_spatial(name, layout, x.shape, y.shape)
        return y
    apply_fn.__qualname__ = f"{name.rpartition('.')[2]}.apply_fn"   # (fnad.hooks' paths)
    return Layer(init_fn, apply_fn)


def MaxPool(window_shape: Sequence[int], strides: Sequence[int] | None = None,
            padding: str | Sequence[tuple[int, int]] = "VALID") -> Layer:
    """A layer taking the maximum over windows of `window_shape` on channels-last inputs;
    `strides` default to the window (non-overlapping windows)."""
    return _pool("max", window_shape, strides, padding)


def AvgPool(window_shape: Sequence[int], strides: Sequence[int] | None = None,
            padding: str | Sequence[tuple[int, int]] = "VALID") -> Layer:
    """A layer averaging over windows of `window_shape` on channels-last inputs; `strides`
    default to the window."""
    return _pool("avg", window_shape, strides, padding)


def _flatten_init(key, input_shape):
    return (input_shape[0], int(np.prod(input_shape[1:]))), ()


def _flatten_apply(params, x, **kw):
    return fnp.reshape(x, (x.shape[0], -1))


_flatten_apply.__qualname__ = "Flatten.apply_fn"     # (fnad.hooks' paths)
Flatten = Layer(_flatten_init, _flatten_apply)


# --------------------------------------------------------------------------- regularization, norms

def Dropout(rate: float) -> Layer:
    """Zero each input with probability `rate` during training (and scale the others by
    1 / (1 - rate)); the identity with train=False. Needs a key when training."""
    if not 0 <= rate < 1:
        raise ValueError(f"Dropout rate must be in [0, 1), got {rate}")

    def apply_fn(params, x, key=None, train=True, **kw):
        if not train or rate == 0:
            return x
        if key is None:
            raise ValueError("Dropout needs a random key when train=True: pass key=...")
        keep = random.bernoulli(key, 1.0 - rate, x.shape)
        return fnp.where(keep, x / (1.0 - rate), 0)
    return Layer(lambda key, input_shape: (input_shape, ()), apply_fn)


def LayerNorm(axis: int | Sequence[int] = -1, epsilon: float = 1e-5, center: bool = True,
              scale: bool = True) -> Layer:
    """Normalize over `axis` per example, then a learned scale and shift."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)

    def init_fn(key, input_shape):
        shape = tuple(input_shape[a] for a in axes)
        return input_shape, (fnp.ones(shape) if scale else (), fnp.zeros(shape) if center else ())

    def apply_fn(params, x, **kw):
        gamma, beta = params
        y = A.standardize(x, axis=axes, epsilon=epsilon)
        if scale:
            y = y * _along(gamma, axes, x.ndim)
        if center:
            y = y + _along(beta, axes, x.ndim)
        return y
    return Layer(init_fn, apply_fn)


def _along(p, axes, ndim):
    """p (shaped like the axes) broadcastable against an ndim array."""
    axes = tuple(a % ndim for a in axes)
    return fnp.reshape(p, tuple(p.shape[axes.index(d)] if d in axes else 1 for d in range(ndim)))


def BatchNorm(axis: int | Sequence[int] = (0, 1, 2), epsilon: float = 1e-5, momentum: float = 0.9,
              center: bool = True, scale: bool = True) -> Layer:
    """Normalize with batch statistics over `axis` in training, with running statistics
    in evaluation. The running mean and variance are state: create it with
    `layer.init_state(input_shape)`, pass it as state=..., get the new one back."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)

    def feature_shape(input_shape):
        n = len(input_shape)
        return tuple(d for i, d in enumerate(input_shape) if i % n not in
                     {a % n for a in axes})

    def init_fn(key, input_shape):
        shape = feature_shape(input_shape)
        return input_shape, (fnp.ones(shape) if scale else (), fnp.zeros(shape) if center else ())

    def init_state(input_shape):
        shape = feature_shape(input_shape)
        return {"mean": fnp.zeros(shape), "var": fnp.ones(shape)}

    def apply_fn(params, x, train=True, state=None, **kw):
        gamma, beta = params
        kept = tuple(a % x.ndim for a in axes)
        features = tuple(d for d in range(x.ndim) if d not in kept)
        if train:
            mean = fnp.mean(x, axis=kept)
            var = fnp.var(x, axis=kept)
        elif state is None:
            raise ValueError("BatchNorm in evaluation mode (train=False) needs its running "
                             "statistics: pass state=...")
        else:
            mean, var = state["mean"], state["var"]
        y = (x - _along(mean, features, x.ndim)) * fnp.rsqrt(
            _along(var, features, x.ndim) + epsilon)
        if scale:
            y = y * _along(gamma, features, x.ndim)
        if center:
            y = y + _along(beta, features, x.ndim)
        if state is None:
            return y
        if train:
            state = {"mean": momentum * state["mean"] + (1 - momentum) * mean,
                     "var": momentum * state["var"] + (1 - momentum) * var}
        return y, state
    return Layer(init_fn, apply_fn, init_state)


def Embedding(vocab_size: int, features: int, embedding_init: Initializer | None = None) -> Layer:
    """Rows of a learned table, indexed by integer ids."""
    embedding_init = embedding_init or init.normal(1.0)

    def init_fn(key, input_shape):
        return tuple(input_shape) + (features,), embedding_init(key, (vocab_size, features))

    def apply_fn(table, ids, **kw):
        return fnp.take(table, ids, axis=0)
    return Layer(init_fn, apply_fn)


# --------------------------------------------------------------------------- combinators

def serial(*layers: tuple[InitFn, ApplyFn]) -> Layer:
    """Apply layers one after another: the combined (init_fn, apply_fn) layer.

    init_fn(key, input_shape) -> (output_shape, params) splits `key` among the layers
    and returns their params as a list; apply_fn(params, x, **kwargs) passes keyword
    arguments (rng=, mode=) to every layer. As stax.serial.

    >>> init, apply = nn.serial(nn.Dense(4), nn.Relu, nn.Dense(2))
    >>> out_shape, params = init(random.key(0), (-1, 3))
    >>> out_shape, apply(params, fnp.ones((5, 3))).shape
    ((-1, 2), (5, 2))
    """
    children = [_as_layer(layer) for layer in layers]

    def init_fn(key, input_shape):
        params = []
        for layer, k in zip(children, _split(key, len(children))):
            input_shape, p = layer.init(k, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fn(params, x, key=None, train=True, state=None):
        states = state if state is not None else [None] * len(children)
        new_states = []
        for layer, p, k, s in zip(children, params, _split(key, len(children)), states):
            x, s = _call(layer, p, x, s, k, train, len(new_states))
            new_states.append(s)
        return (x, new_states) if state is not None else x

    return Layer(init_fn, apply_fn, _combined_state(children, sequential=True))


def parallel(*layers: tuple[InitFn, ApplyFn]) -> Layer:
    """Apply layer i to input i of a tuple of inputs."""
    children = [_as_layer(layer) for layer in layers]

    def init_fn(key, input_shape):
        out = [layer.init(k, s) for layer, k, s in
               zip(children, _split(key, len(children)), input_shape)]
        return tuple(o[0] for o in out), [o[1] for o in out]

    def apply_fn(params, xs, key=None, train=True, state=None):
        states = state if state is not None else [None] * len(children)
        outs, new_states = [], []
        for layer, p, x, k, s in zip(children, params, xs, _split(key, len(children)), states):
            y, s = _call(layer, p, x, s, k, train, len(outs))
            outs.append(y)
            new_states.append(s)
        return (tuple(outs), new_states) if state is not None else tuple(outs)

    return Layer(init_fn, apply_fn, _combined_state(children, sequential=False))


def _combined_state(layers, sequential):
    """init_state of a combinator: its children's states, in a list."""
    if not any(layer.stateful for layer in layers):
        return None

    def init_state(input_shape):
        if not sequential:
            return [layer.init_state(s) for layer, s in zip(layers, input_shape)]
        states = []
        for layer in layers:
            states.append(layer.init_state(input_shape))
            input_shape = layer.init(random.key(0), input_shape)[0]
        return states
    return init_state


def FanOut(num: int) -> Layer:
    """Copy the input num times."""
    return Layer(lambda key, input_shape: ((input_shape,) * num, ()),
                 lambda params, x, **kw: (x,) * num)


def _fan_in_sum_apply(params, xs, **kw):
    return sum(xs[1:], xs[0])


_fan_in_sum_apply.__qualname__ = "FanInSum.apply_fn"   # (fnad.hooks' paths)
FanInSum = Layer(lambda key, input_shapes: (input_shapes[0], ()), _fan_in_sum_apply)


def FanInConcat(axis: int = -1) -> Layer:
    """Concatenate a tuple of inputs along axis."""
    def init_fn(key, input_shapes):
        ax = axis % len(input_shapes[0])
        shape = list(input_shapes[0])
        shape[ax] = sum(s[ax] for s in input_shapes)
        return tuple(shape), ()
    return Layer(init_fn, lambda params, xs, **kw: fnp.concatenate(xs, axis))
