"""fnad.random: JAX's random API over splittable, counter-based keys. No global state.

A key is a uint32 array of shape (2,), made by `key(seed)` (or `PRNGKey(seed)`); it is
a plain array, so keys go through jit, vmap and pytrees like any value. A function
given a key returns the same numbers every time -- eagerly, under jit and under vmap.
To draw again, `split` the key (never reuse one for two draws) or `fold_in` a counter.

Everything is built on the Threefry-2x32-20 hash (fnad.primitives.random_bits) with
JAX's "partitionable" layout (JAX's current default): keys, `split`, `fold_in`, `bits`,
`uniform` on [0, 1), `bernoulli`, `randint`, `permutation` and `choice` without `p`
give JAX's numbers bit for bit (checked against JAX 0.10); `normal`,
`truncated_normal`, `gumbel`, `exponential` and `uniform` with other bounds agree to
within a few ulps (XLA's log and its fused multiply-adds round differently), and the
draws built on them (`categorical`, `choice` with `p`) agree but for such roundings.

Differences from JAX, on purpose:
- keys are always raw uint32[2] arrays; `key` and `PRNGKey` are the same (no typed
  key arrays), and `key_data` / `wrap_key_data` are identities.
- dtypes follow fnad: the default float and int (float32 and int32; float64 and int64
  with fnad.config.update("jax_enable_x64", True)), others on request.
- a Python int seed keeps all 64 bits: key(2**40 + 5) is [256, 5] (JAX with x64);
  an integer array seed of 32 bits or fewer gives [0, seed].
- `fold_in` takes Python ints modulo 2**32.
- `truncated_normal` keeps its samples strictly inside (lower, upper) by moving the
  bounds inward by one or two ulps (JAX: exactly one, with nextafter).
"""
import math

import numpy as np

from . import numpy as jnp
from . import lax
from . import dtypes
from .array import Array
from .core import Tracer
from .errors import DTypeError, ShapeError
from .primitives.random_bits import random_bits, random_split, threefry2x32  # noqa: F401

__all__ = ["key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "threefry2x32",
           "bits", "uniform", "normal", "truncated_normal", "bernoulli", "randint", "permutation",
           "choice", "categorical", "gumbel", "exponential"]

UINT32 = np.dtype(np.uint32)


# --------------------------------------------------------------------------- keys

def key(seed):
    """A key from an integer seed: [high 32 bits, low 32 bits] of the seed."""
    if isinstance(seed, int) and not isinstance(seed, bool):
        if not -2 ** 63 <= seed < 2 ** 64:
            raise OverflowError(f"key: seed {seed} does not fit in 64 bits")
        seed %= 2 ** 64
        return Array(np.array([seed >> 32, seed & 0xFFFFFFFF], UINT32))
    dtype = getattr(seed, "dtype", None)
    if dtype is None or np.dtype(dtype).kind not in "iu":
        raise DTypeError(f"key: the seed must be an integer, got {_describe(seed)}")
    seed = jnp.asarray(seed)
    if seed.shape:
        raise ShapeError(f"key: the seed must be a scalar, got shape {tuple(seed.shape)}; "
                         f"vmap over seeds to make several keys")
    if seed.dtype.itemsize < 8:
        low, high = jnp.astype(seed, UINT32), jnp.zeros((), UINT32)
    else:
        wide = jnp.astype(seed, np.uint64)
        low64 = wide & 0xFFFFFFFF
        # (wide - low64) is a multiple of 2**32: the division is exact in any arithmetic.
        high = jnp.astype(jnp.floor_divide(wide - low64, np.uint64(2 ** 32)), UINT32)
        low = jnp.astype(low64, UINT32)
    return jnp.stack([high, low])


PRNGKey = key


def key_data(keys):
    """The uint32 words of keys: fnad keys are already raw arrays."""
    return keys


def wrap_key_data(data):
    return _check_key("wrap_key_data", data)


def _describe(x):
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        return f"{np.dtype(x.dtype)}{list(x.shape)}"
    return f"{type(x).__name__} {x!r}"


def _check_key(name, k):
    """The key as an fnad value, or an error naming what was passed instead."""
    if isinstance(k, (Array, Tracer)):
        value = k
    elif isinstance(k, (np.ndarray, np.generic)):
        value = jnp.asarray(k)
    else:
        raise DTypeError(f"{name}: expected a key (uint32 array of shape (2,), from "
                         f"fnad.random.key(seed)), got {_describe(k)}")
    if value.dtype != UINT32:
        raise DTypeError(f"{name}: a key is a uint32 array of shape (2,), got "
                         f"{_describe(value)}; make keys with fnad.random.key(seed)")
    if tuple(value.shape) != (2,):
        hint = (" (an array of keys: vmap over it)" if value.shape[-1:] == (2,) else "")
        raise ShapeError(f"{name}: a key is a uint32 array of shape (2,), got "
                         f"{_describe(value)}{hint}")
    return value


def split(key, num=2):
    """`num` new keys (an int, or a shape: keys of shape (*num, 2)) from one key."""
    key = _check_key("split", key)
    return random_split(key, _shape("split", num))


def fold_in(key, data):
    """A new key from a key and an integer (e.g. a step number): a different key for
    each data value, as independent of the others as split keys are."""
    key = _check_key("fold_in", key)
    if isinstance(data, int) and not isinstance(data, bool):
        data = Array(np.array(data % 2 ** 32, UINT32))
    else:
        data = jnp.asarray(data)
        if data.dtype.kind not in "iu" or data.shape:
            raise DTypeError(f"fold_in: data must be an integer scalar, got "
                             f"{_describe(data)}")
        data = jnp.astype(data, UINT32)
    # The counter (0, data): fold_in(key, i) is split(key, i + 1)[i], as in JAX.
    y0, y1 = threefry2x32(lax.slice(key, (0,), (1,)), lax.slice(key, (1,), (2,)),
                          np.zeros(1, UINT32), jnp.reshape(data, (1,)))
    return jnp.concatenate([y0, y1])


# --------------------------------------------------------------------------- helpers

def _shape(name, shape, *param_shapes):
    """A static shape tuple; parameters must broadcast to exactly this shape."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in shape):
        raise ShapeError(f"{name}: negative dimension in shape {shape}")
    if param_shapes:
        try:
            joint = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            joint = None
        if joint != shape:
            raise ShapeError(
                f"{name}: parameter shapes {', '.join(map(str, param_shapes))} must "
                f"broadcast to the requested shape {shape}")
    return shape


def _float_dtype(name, dtype):
    dtype = np.dtype(dtypes.default_float() if dtype is None else dtype)
    if dtype.kind != "f":
        raise DTypeError(f"{name} draws floating-point values; dtype {dtype} is not one "
                         f"(use float32 or float64)")
    return dtype


def _as(x, dtype):
    """x as a value of `dtype`: Python numbers convert exactly, arrays by casting."""
    if isinstance(x, (Array, Tracer)):
        return jnp.astype(x, dtype)
    return jnp.asarray(np.asarray(x, dtype))


def _uniform(key, shape, dtype, minval, maxval):
    """JAX's uniform: the top `nmant` bits m of a draw give m * 2**-nmant in [0, 1).
    Masking the low bits and scaling by 2**-nbits is the same number, exactly (no
    shift or bitcast needed: the masked integer converts to float without rounding)."""
    info = np.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    raw = random_bits(key, shape, nbits)
    top = raw & ((2 ** nbits - 1) ^ (2 ** (nbits - nmant) - 1))
    compute = np.float32 if dtype == np.float16 else dtype
    floats = jnp.astype(jnp.astype(top, compute) * (2.0 ** -nbits), dtype)
    minval, maxval = _as(minval, dtype), _as(maxval, dtype)
    return jnp.maximum(minval, floats * (maxval - minval) + minval)


# Giles, "Approximating the erfinv function", GPU Computing Gems Jade (2011): with
# w = -log(1 - x^2), erfinv(x) = x * p(w) for a polynomial p in w (or in sqrt(w) in
# the tails). The single-precision fit has two branches, the double-precision three.
# These are XLA's ErfInv, so normal() agrees with JAX's to within rounding.
_ERFINV32 = (
    (5.0, 2.5, False, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                       0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                       1.50140941)),
    (math.inf, 3.0, True, (-0.000200214257, 0.000100950558, 0.00134934322,
                           -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                           1.00167406, 2.83297682)),
)
_ERFINV64 = (
    (6.25, 3.125, False, (
        -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
        1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
        6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
        2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
        4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
        0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
        0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, True, (
        2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
        1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
        2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
        6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
        0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
        -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
        3.0838856104922207635)),
    (math.inf, 5.0, True, (
        -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
        -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
        2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
        -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
        7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
        1.0103004648645343977, 4.8499064014085844221)),
)


def _log(x, log=jnp.log):
    """log in float64, rounded back. numpy's SIMD float32 log and the libm one in jit's
    fused kernels often differ in the last bit (a quarter of values, measured); two
    float64 logs within an ulp of each other round to the same float32 but for about
    one value in 2**29, so a float32 draw is the same eagerly and under jit."""
    if x.dtype == np.float64:
        return log(x)
    return jnp.astype(log(jnp.astype(x, np.float64)), x.dtype)


def _erfinv(x):
    """The inverse error function on (-1, 1), +-inf at +-1; float16 via float32."""
    dtype = x.dtype
    if dtype == np.float16:
        return jnp.astype(_erfinv(jnp.astype(x, np.float32)), dtype)
    w = -_log((1 - x) * (1 + x))
    result = None
    for bound, center, in_sqrt, coeffs in reversed(_ERFINV64 if dtype == np.float64
                                                   else _ERFINV32):
        t = (jnp.sqrt(w) if in_sqrt else w) - center
        p = coeffs[0] * t + coeffs[1]
        for c in coeffs[2:]:
            p = p * t + c
        result = p if result is None else jnp.where(w < bound, p, result)
    edge = jnp.where(x > 0, math.inf, -math.inf)
    return jnp.where(jnp.abs(x) == 1, edge, result * x)


def _inward(bound, direction):
    """`bound` moved by one or two ulps toward the inside of the interval (direction
    +1 for a lower bound, -1 for an upper one); infinite bounds become finite."""
    info = np.finfo(bound.dtype)
    infinite = jnp.isinf(bound)
    finite = jnp.where(infinite, 0.0, bound)
    moved = finite + direction * jnp.maximum(jnp.abs(finite) * info.eps, info.tiny)
    return jnp.where(infinite, -direction * float(info.max), moved)


# --------------------------------------------------------------------------- draws

def bits(key, shape=(), dtype=None):
    """Uniformly random unsigned integers (uint32 by default; uint8..uint64)."""
    key = _check_key("bits", key)
    dtype = np.dtype(np.uint32 if dtype is None else dtype)
    if dtype.kind != "u":
        raise DTypeError(f"bits: dtype must be an unsigned integer dtype, got {dtype}")
    return random_bits(key, _shape("bits", shape), dtype.itemsize * 8)


def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
    """Uniform floats in [minval, maxval)."""
    key = _check_key("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = _shape("uniform", shape, np.shape(minval), np.shape(maxval))
    return _uniform(key, shape, dtype, minval, maxval)


def normal(key, shape=(), dtype=None):
    """Standard normal floats: sqrt(2) * erfinv(u) for u uniform in (-1, 1), as JAX
    (inverse-CDF sampling: one uniform per value and no rejection)."""
    key = _check_key("normal", key)
    dtype = _float_dtype("normal", dtype)
    shape = _shape("normal", shape)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(key, shape, dtype, lo, 1.0)
    return _erfinv(u) * np.array(math.sqrt(2), dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal values conditioned on lower < x < upper: the inverse CDF of a
    uniform between erf(lower / sqrt 2) and erf(upper / sqrt 2)."""
    key = _check_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = np.broadcast_shapes(np.shape(lower), np.shape(upper))
    shape = _shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    lower, upper = _as(lower, dtype), _as(upper, dtype)
    sqrt2 = np.array(math.sqrt(2), dtype)
    a, b = lax.erf(lower / sqrt2), lax.erf(upper / sqrt2)
    out = _erfinv(_uniform(key, shape, dtype, a, b)) * sqrt2
    lower, upper = lax.stop_gradient(lower), lax.stop_gradient(upper)
    return jnp.clip(out, _inward(lower, 1), _inward(upper, -1))


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability p (p: float or float array)."""
    key = _check_key("bernoulli", key)
    p = p if isinstance(p, (Array, Tracer)) else jnp.asarray(p)
    if p.dtype.kind != "f":
        raise DTypeError(f"bernoulli: the probability p must have a floating dtype, "
                         f"got {_describe(p)}")
    shape = _shape("bernoulli", tuple(p.shape) if shape is None else shape, tuple(p.shape))
    return _uniform(key, shape, p.dtype, 0.0, 1.0) < p


def _int_bound(x, wide):
    """An integer bound as a value of `wide` (int64 or uint64); floats are truncated
    and Python numbers outside `wide` saturate (the dtype's clip comes next anyway)."""
    if isinstance(x, (Array, Tracer)):
        return jnp.astype(x if x.dtype.kind in "iu" else jnp.trunc(x), wide)
    info = np.iinfo(wide)
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return Array(np.array(max(info.min, min(info.max, math.trunc(x))), wide))
    value = np.asarray(x)
    if value.dtype.kind == "f":
        value = np.clip(np.trunc(value), -2.0 ** 63, 2.0 ** 63 - 1024)
    elif value.dtype.kind not in "iu":
        raise DTypeError(f"randint: bounds must be integers, got {_describe(value)}")
    return Array(value.astype(wide))


def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform in [minval, maxval) (maxval may exceed the dtype: randint(key,
    s, 0, 256, uint8) covers every uint8). As JAX: two draws of the dtype's width
    combined modulo the span, so the bias is about span**2 / 2**(2 * bits)."""
    key = _check_key("randint", key)
    dtype = np.dtype(dtypes.default_int() if dtype is None else dtype)
    if dtype.kind not in "iu" or dtype.itemsize * 8 not in (8, 16, 32, 64):
        raise DTypeError(f"randint: dtype must be an 8, 16, 32 or 64-bit integer dtype, "
                         f"got {dtype}")
    shape = _shape("randint", shape, np.shape(minval), np.shape(maxval))
    if dtype.itemsize < 4:
        # As JAX: narrow dtypes are drawn as int32 (less bias), then cast.
        info = np.iinfo(dtype)
        minval = jnp.clip(_int_bound(minval, np.int64), info.min, info.max)
        maxval = jnp.clip(_int_bound(maxval, np.int64), info.min, info.max + 1)
        return jnp.astype(randint(key, shape, minval, maxval, np.int32), dtype)
    info, nbits = np.iinfo(dtype), dtype.itemsize * 8
    # Arithmetic happens in 64 bits, where nothing overflows for nbits <= 32; JAX's
    # nbits-wide wrap-around is reproduced with masks, so the numbers are JAX's.
    wide = np.dtype(np.uint64 if dtype.kind == "u" else np.int64)
    minval, maxval = _int_bound(minval, wide), _int_bound(maxval, wide)
    too_big = maxval > info.max
    lo = jnp.clip(minval, info.min, info.max)
    hi = jnp.clip(maxval, info.min, info.max)
    k1, k2 = random_split(key, (2,))
    u64 = np.uint64
    higher = jnp.astype(random_bits(k1, shape, nbits), u64)
    lower = jnp.astype(random_bits(k2, shape, nbits), u64)
    span = jnp.astype(hi - lo, u64)
    span = jnp.where(hi <= lo, u64(1), span)
    span = jnp.where(too_big & (hi > lo), span + u64(1), span)  # 0 means 2**64
    full = span == 0
    safe = jnp.where(full, u64(1), span)
    mask = u64(2 ** nbits - 1)

    def wrap(x):
        return x if nbits == 64 else x & mask
    multiplier = lax.rem(u64(2 ** (nbits // 2)), safe)
    multiplier = lax.rem(wrap(multiplier * multiplier), safe)
    offset = wrap(lax.rem(higher, safe) * multiplier + lax.rem(lower, safe))
    offset = jnp.where(full, lower, lax.rem(offset, safe))
    return jnp.astype(lo + jnp.astype(offset, wide), dtype)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of range(x) (x an int), or of x along `axis` (with
    independent=True, each slice along `axis` is shuffled on its own). Sorting by
    random 32-bit keys, repeated so that ties (which keep their order) are rare: a
    true permutation always, uniformly random up to the tie rate."""
    key = _check_key("permutation", key)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return _shuffle(key, jnp.arange(int(x)), 0)
    x = jnp.asarray(x)
    if not x.shape:
        if x.dtype.kind not in "iu":
            raise DTypeError(f"permutation: x must be an integer or an array of at least "
                             f"one dimension, got {_describe(x)}")
        return _shuffle(key, jnp.arange(int(x)), 0)
    axis = _axis("permutation", axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, order, axis=axis)


def _axis(name, axis, ndim):
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{name}: axis {axis} is out of range for an array of rank {ndim}")
    return axis % ndim


def _shuffle(key, x, axis):
    # JAX's round count: collisions among n 32-bit sort keys stay below ~n**3 / 2**32
    # per round.
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = random_split(key, (2,))
        key, subkey = keys[0], keys[1]
        _, x = lax.sort_key_val(random_bits(subkey, tuple(x.shape), 32), x, axis)
    return x


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Samples of `a` (an array: along `axis`; an int n: of range(n)), with or without
    replacement, uniformly or with probabilities p."""
    key = _check_key("choice", key)
    shape = _shape("choice", shape)
    arr = a if isinstance(a, (Array, Tracer)) else jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(a)
    else:
        axis = _axis("choice", axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, arr.dtype)
    if n_inputs <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"choice: cannot take a larger sample (size {n_draws}) than the "
                         f"population (size {n_inputs}) when replace=False")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = jnp.take_range(perm, 0, n_draws, axis if arr.ndim else 0)
    else:
        p = p if isinstance(p, (Array, Tracer)) else jnp.asarray(p)
        if p.dtype.kind != "f":
            p = jnp.astype(p, dtypes.default_float())
        if tuple(p.shape) != (n_inputs,):
            raise ShapeError(f"choice: p must be None or a vector of the population size "
                             f"({n_inputs},), got shape {tuple(p.shape)}")
        if replace:
            cumulative = jnp.cumsum(p)
            r = cumulative[-1] * (1 - _uniform(key, shape, p.dtype, 0.0, 1.0))
            # searchsorted(cumulative, r): how many cumulative sums lie below r.
            ind = jnp.sum(jnp.expand_dims(r, -1) > cumulative, axis=-1)
        else:
            # Gumbel top-k: the n_draws largest of log p + Gumbel noise.
            g = gumbel(key, (n_inputs,), p.dtype) + _log(p)
            ind = jnp.argsort(-g)[:n_draws]
        ind = jnp.astype(ind, dtypes.default_int())
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else \
        tuple(arr.shape[:axis]) + shape + tuple(arr.shape[axis + 1:])
    return jnp.reshape(result, out_shape)


def categorical(key, logits, axis=-1, shape=None):
    """Indices drawn with probabilities softmax(logits) along `axis` (the Gumbel-max
    trick: argmax of logits + Gumbel noise)."""
    key = _check_key("categorical", key)
    logits = logits if isinstance(logits, (Array, Tracer)) else jnp.asarray(logits)
    if logits.dtype.kind != "f":
        logits = jnp.astype(logits, dtypes.default_float())
    axis = _axis("categorical", axis, logits.ndim)
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = batch_shape if shape is None else _shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    noise_shape = list(shape[len(shape) - len(batch_shape):])
    noise_shape.insert(axis, logits.shape[axis])
    noise = gumbel(key, prefix + tuple(noise_shape), logits.dtype)
    expanded = jnp.reshape(logits, (1,) * len(prefix) + tuple(logits.shape))
    return jnp.argmax(noise + expanded, axis=axis - logits.ndim)


def gumbel(key, shape=(), dtype=None):
    """Standard Gumbel values: -log(-log(u)), u uniform in [tiny, 1)."""
    key = _check_key("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    u = _uniform(key, _shape("gumbel", shape), dtype, float(np.finfo(dtype).tiny), 1.0)
    return -_log(-_log(u))


def exponential(key, shape=(), dtype=None):
    """Standard exponential values: -log(1 - u)."""
    key = _check_key("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    return -_log(-_uniform(key, _shape("exponential", shape), dtype, 0.0, 1.0), jnp.log1p)
