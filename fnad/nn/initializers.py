"""Parameter initializers: functions (key, shape, dtype) -> array, as in JAX.

The variance-scaling family draws with variance scale / fan, where fan is the
number of inputs (fan_in), outputs (fan_out) or their mean (fan_avg) of a weight
whose last axis is the output axis and second-to-last the input axis; any leading
axes are the receptive field (convolution kernels in HWIO layout)."""
import math

import numpy as np

from .. import numpy as fnp
from .. import random


def zeros(key, shape, dtype=np.float32):
    return fnp.zeros(shape, dtype)


def ones(key, shape, dtype=np.float32):
    return fnp.ones(shape, dtype)


def constant(value, dtype=np.float32):
    def init(key, shape, dtype=dtype):
        return fnp.full(shape, value, dtype)
    return init


def normal(stddev=1e-2, dtype=np.float32):
    def init(key, shape, dtype=dtype):
        return random.normal(key, shape, dtype) * stddev
    return init


def uniform(scale=1e-2, dtype=np.float32):
    def init(key, shape, dtype=dtype):
        return random.uniform(key, shape, dtype) * scale
    return init


def _fans(shape, in_axis=-2, out_axis=-1):
    if len(shape) < 2:
        n = shape[0] if shape else 1
        return n, n
    receptive = math.prod(d for i, d in enumerate(shape)
                          if i not in (in_axis % len(shape), out_axis % len(shape)))
    return shape[in_axis] * receptive, shape[out_axis] * receptive


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, dtype=np.float32):
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise ValueError(f"variance_scaling: mode must be fan_in, fan_out or fan_avg, got {mode!r}")

    def init(key, shape, dtype=dtype):
        fan_in, fan_out = _fans(tuple(shape), in_axis, out_axis)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = scale / max(fan, 1)
        if distribution == "uniform":
            limit = math.sqrt(3 * variance)
            return random.uniform(key, shape, dtype, -limit, limit)
        if distribution == "normal":
            return random.normal(key, shape, dtype) * math.sqrt(variance)
        if distribution == "truncated_normal":
            # the std of a standard normal truncated to [-2, 2]
            std = math.sqrt(variance) / 0.87962566103423978
            return random.truncated_normal(key, -2.0, 2.0, shape, dtype) * std
        raise ValueError(f"variance_scaling: unknown distribution {distribution!r}")
    return init


def glorot_uniform(**kw):
    return variance_scaling(1.0, "fan_avg", "uniform", **kw)


def glorot_normal(**kw):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", **kw)


def he_uniform(**kw):
    return variance_scaling(2.0, "fan_in", "uniform", **kw)


def he_normal(**kw):
    return variance_scaling(2.0, "fan_in", "truncated_normal", **kw)


def lecun_uniform(**kw):
    return variance_scaling(1.0, "fan_in", "uniform", **kw)


def lecun_normal(**kw):
    return variance_scaling(1.0, "fan_in", "truncated_normal", **kw)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal
