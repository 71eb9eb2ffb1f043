"""Parameter initializers: functions (key, shape, dtype) -> array, as in JAX.

The variance-scaling family draws with variance scale / fan, where fan is the
number of inputs (fan_in), outputs (fan_out) or their mean (fan_avg) of a weight
whose last axis is the output axis and second-to-last the input axis; any leading
axes are the receptive field (convolution kernels in HWIO layout)."""
import math
from typing import Sequence

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from .. import random
from ..errors import ShapeError
from ..typing import Array, ArrayLike, DTypeLike, Initializer  # (init(key, shape, dtype))


def zeros(key: Array | None, shape: Sequence[int], dtype: DTypeLike | None = None) -> Array:
    """An initializer's result of zeros (`key` unused): zeros(key, shape, dtype), as
    jax.nn.initializers.zeros."""
    return fnp.zeros(shape, _dtype(dtype))


def ones(key: Array | None, shape: Sequence[int], dtype: DTypeLike | None = None) -> Array:
    """Ones of `shape` (`key` unused), as jax.nn.initializers.ones."""
    return fnp.ones(shape, _dtype(dtype))


def _dtype(dtype):
    return np.dtype(dtypes.default_float() if dtype is None else dtype)


def constant(value: ArrayLike, dtype: DTypeLike | None = None) -> Initializer:
    """An initializer giving arrays filled with `value`."""
    def init(key, shape, dtype=dtype):
        return fnp.full(shape, value, _dtype(dtype))
    return init


def normal(stddev: float = 1e-2, dtype: DTypeLike | None = None) -> Initializer:
    """An initializer drawing from a normal distribution with mean 0 and `stddev`.

    >>> init = nn.initializers.normal(0.1)
    >>> init(random.key(0), (2, 3)).shape
    (2, 3)
    """
    def init(key, shape, dtype=dtype):
        return random.normal(key, shape, _dtype(dtype)) * stddev
    return init


def uniform(scale: float = 1e-2, dtype: DTypeLike | None = None) -> Initializer:
    """An initializer drawing uniformly from [0, scale), as JAX's."""
    def init(key, shape, dtype=dtype):
        return random.uniform(key, shape, _dtype(dtype)) * scale
    return init


def truncated_normal(stddev: float = 1e-2, dtype: DTypeLike | None = None, lower: float = -2.0,
                     upper: float = 2.0) -> Initializer:
    """stddev times a standard normal truncated to [lower, upper] (stddev is the
    underlying normal's, not the truncated distribution's)."""
    def init(key, shape, dtype=dtype):
        return random.truncated_normal(key, lower, upper, shape, _dtype(dtype)) * stddev
    return init


def _size(shape, axes):
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[a] for a in axes)


def _fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out): the input or output size times the receptive field, which is
    every axis that is not an input, output or batch axis."""
    if len(shape) < 2 and isinstance(in_axis, int) and in_axis == -2:
        raise ShapeError(f"variance-scaling initializers need a weight of rank 2 or more "
                         f"to tell inputs from outputs (or an explicit in_axis); got "
                         f"shape {tuple(shape)}")
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    receptive = math.prod(shape) / max(in_size * out_size * _size(shape, batch_axis), 1)
    return in_size * receptive, out_size * receptive


_FAN = {"fan_in": lambda i, o: i, "fan_out": lambda i, o: o,
        "fan_avg": lambda i, o: (i + o) / 2, "fan_geo_avg": lambda i, o: math.sqrt(i * o)}
# the standard deviation of a standard normal truncated to [-2, 2]
_TRUNCATED_STD = 0.87962566103423978


def variance_scaling(scale: float, mode: str, distribution: str, in_axis: int | Sequence[int] = -2,
                     out_axis: int | Sequence[int] = -1, batch_axis: int | Sequence[int] = (),
                     dtype: DTypeLike | None = None) -> Initializer:
    """Draws with variance scale / fan (fan by `mode`), from `distribution`:
    'truncated_normal', 'normal' or 'uniform'."""
    if mode not in _FAN:
        raise ValueError(f"variance_scaling: mode must be one of {sorted(_FAN)}, "
                         f"got {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"variance_scaling: unknown distribution {distribution!r} (use "
                         f"'truncated_normal', 'normal' or 'uniform')")

    def init(key, shape, dtype=dtype):
        shape, dtype = tuple(shape), _dtype(dtype)
        fan = _FAN[mode](*_fans(shape, in_axis, out_axis, batch_axis))
        variance = scale / max(fan, 1)
        if distribution == "uniform":
            return random.uniform(key, shape, dtype, -1.0, 1.0) * math.sqrt(3 * variance)
        if distribution == "normal":
            return random.normal(key, shape, dtype) * math.sqrt(variance)
        std = math.sqrt(variance) / _TRUNCATED_STD
        return random.truncated_normal(key, -2.0, 2.0, shape, dtype) * std
    return init


def glorot_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                   batch_axis: int | Sequence[int] = (),
                   dtype: DTypeLike | None = None) -> Initializer:
    """variance_scaling(1, 'fan_avg', 'uniform'): a uniform initializer with variance 1 /
    fan_avg, as jax.nn.initializers.glorot_uniform."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (),
                  dtype: DTypeLike | None = None) -> Initializer:
    """variance_scaling(1, 'fan_avg', 'truncated_normal'): a truncated normal initializer with
    variance 1 / fan_avg, as jax.nn.initializers.glorot_normal."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


def he_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
               batch_axis: int | Sequence[int] = (), dtype: DTypeLike | None = None) -> Initializer:
    """variance_scaling(2, 'fan_in', 'uniform'): a uniform initializer with variance 2 /
    fan_in, as jax.nn.initializers.he_uniform."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
              batch_axis: int | Sequence[int] = (), dtype: DTypeLike | None = None) -> Initializer:
    """variance_scaling(2, 'fan_in', 'truncated_normal'): a truncated normal initializer with
    variance 2 / fan_in, as jax.nn.initializers.he_normal."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


def lecun_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (),
                  dtype: DTypeLike | None = None) -> Initializer:
    """variance_scaling(1, 'fan_in', 'uniform'): a uniform initializer with variance 1 /
    fan_in, as jax.nn.initializers.lecun_uniform."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                 batch_axis: int | Sequence[int] = (),
                 dtype: DTypeLike | None = None) -> Initializer:
    """variance_scaling(1, 'fan_in', 'truncated_normal'): a truncated normal initializer with
    variance 1 / fan_in, as jax.nn.initializers.lecun_normal."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis,
                            batch_axis, dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale: float = 1.0, column_axis: int = -1,
               dtype: DTypeLike | None = None) -> Initializer:
    """A weight whose columns (along column_axis) against the flattened other axes form
    an orthonormal set, times scale: the Q of a Gaussian matrix, uniformly random
    among such (Haar), as random.orthogonal."""
    def init(key, shape, dtype=dtype):
        shape, dtype = tuple(shape), _dtype(dtype)
        if len(shape) < 2:
            raise ShapeError(f"orthogonal initializer needs a shape of rank 2 or more, "
                             f"got {shape}")
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // max(n_cols, 1)
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        others = tuple(n for i, n in enumerate(shape) if i != column_axis % len(shape))
        q = fnp.reshape(q, others + (n_cols,))
        return fnp.moveaxis(q, -1, column_axis) * scale
    return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1,
                     dtype: DTypeLike | None = None) -> Initializer:
    """A convolution kernel (rank 3 to 5, ...IO) that is zero but at its spatial center,
    which holds an orthogonal in x out matrix (Xiao et al., 2018): the convolution
    starts as an orthogonal map of the channels."""
    def init(key, shape, dtype=dtype):
        shape, dtype = tuple(shape), _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ShapeError(f"delta_orthogonal initializer needs a kernel of rank 3, 4 "
                             f"or 5, got shape {shape}")
        if shape[-2] > shape[-1]:
            raise ShapeError(f"delta_orthogonal initializer needs input channels <= output "
                             f"channels, got shape {shape}")
        center = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        spatial = shape[:-2]
        hot = np.zeros(spatial, dtype)
        hot[tuple((n - 1) // 2 for n in spatial)] = 1
        return fnp.reshape(fnp.asarray(hot), spatial + (1, 1)) * center
    return init

