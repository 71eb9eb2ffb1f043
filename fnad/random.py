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

The other distributions (laplace, logistic, cauchy, ..., gamma and its family,
poisson, binomial, multinomial) sample the same distributions as JAX's but not its
numbers; `orthogonal` and `multivariate_normal` give JAX's numbers up to rounding.

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
from typing import Any, Sequence

import numpy as np

from . import numpy as jnp
from . import lax
from . import dtypes
from .array import Array
from .core import Tracer
from .errors import DTypeError, ShapeError
from .primitives.random_bits import random_bits, random_split, threefry2x32  # noqa: F401
from .scipy import special
from .transforms.custom import custom_jvp
from .transforms.jvp import jvp as _jvp
from .typing import ArrayLike, DTypeLike

__all__ = ["key", "PRNGKey", "key_data", "wrap_key_data", "split", "fold_in", "threefry2x32",
           "bits", "uniform", "normal", "truncated_normal", "bernoulli", "randint", "permutation",
           "choice", "categorical", "gumbel", "exponential", "clone", "laplace", "logistic",
           "cauchy", "rademacher", "rayleigh", "maxwell", "double_sided_maxwell", "weibull_min",
           "lognormal", "pareto", "wald", "triangular", "geometric", "gamma", "loggamma", "beta",
           "dirichlet", "chisquare", "t", "f", "generalized_normal", "ball", "poisson",
           "binomial", "multinomial", "orthogonal", "multivariate_normal"]

UINT32 = np.dtype(np.uint32)


# --------------------------------------------------------------------------- keys

def key(seed: Any) -> Array:
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


def key_data(keys: Any) -> Array:
    """The uint32 words of keys: fnad keys are already raw arrays."""
    return keys


def wrap_key_data(data: ArrayLike) -> Array:
    """`data` (uint32 words of shape (..., 2)) as keys; an identity on valid data, since fnad
    keys are raw arrays (JAX makes typed keys)."""
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


def split(key: Array, num: int | Sequence[int] = 2) -> Array:
    """`num` new keys (an int, or a shape: keys of shape (*num, 2)) from one key.

    Use each key for one draw only; split again for more. JAX's numbers, bit for bit.

    >>> key, subkey = random.split(random.key(0))
    >>> subkey
    Array([ 928981903, 3453687069], dtype=uint32)
    >>> random.split(key, 3).shape
    (3, 2)
    """
    key = _check_key("split", key)
    return random_split(key, _shape("split", num))


def fold_in(key: Array, data: Any) -> Array:
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

def bits(key: Array, shape: Sequence[int] = (), dtype: DTypeLike | None = None) -> Array:
    """Uniformly random unsigned integers (uint32 by default; uint8..uint64)."""
    key = _check_key("bits", key)
    dtype = np.dtype(np.uint32 if dtype is None else dtype)
    if dtype.kind != "u":
        raise DTypeError(f"bits: dtype must be an unsigned integer dtype, got {dtype}")
    return random_bits(key, _shape("bits", shape), dtype.itemsize * 8)


def uniform(key: Array, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.,
            maxval: Any = 1.) -> Array:
    """Uniform floats in [minval, maxval)."""
    key = _check_key("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = _shape("uniform", shape, np.shape(minval), np.shape(maxval))
    return _uniform(key, shape, dtype, minval, maxval)


def normal(key: Array, shape: Sequence[int] = (), dtype: Any = None) -> Array:
    """Standard normal floats: sqrt(2) * erfinv(u) for u uniform in (-1, 1), as JAX
    (inverse-CDF sampling: one uniform per value and no rejection). A complex dtype
    gives (re + i im) / sqrt(2) from two split keys, as JAX: E|z|^2 = 1.

    >>> key, subkey = random.split(random.key(0))
    >>> random.normal(subkey, (3,))
    Array([-2.4424558 , -2.0356805 ,  0.20554423], dtype=float32)
    """
    key = _check_key("normal", key)
    if dtype is not None and np.dtype(dtype).kind == "c":
        dtype = np.dtype(dtype)
        key_re, key_im = random_split(key, (2,))
        parts = [normal(k, shape, dtypes.real_dtype(dtype)) for k in (key_re, key_im)]
        return lax.complex(*parts) / np.array(math.sqrt(2), dtype)
    dtype = _float_dtype("normal", dtype)
    shape = _shape("normal", shape)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(key, shape, dtype, lo, 1.0)
    return _erfinv(u) * np.array(math.sqrt(2), dtype)


def truncated_normal(key: Array, lower: ArrayLike, upper: ArrayLike,
                     shape: Sequence[int] | None = None, dtype: DTypeLike | None = None) -> Array:
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


def bernoulli(key: Array, p: Any = 0.5, shape: Sequence[int] | None = None) -> Array:
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


def randint(key: Array, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None
            ) -> Array:
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


def permutation(key: Array, x: ArrayLike, axis: int = 0, independent: bool = False) -> Array:
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


def choice(key: Array, a: Any, shape: Any = (), replace: bool = True,
           p: ArrayLike | None = None, axis: int = 0) -> Array:
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


def categorical(key: Array, logits: ArrayLike, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True) -> Array:
    """Indices drawn with probabilities softmax(logits) along `axis` (the Gumbel-max
    trick: argmax of logits + Gumbel noise). With replace=False, the draws that
    `shape` adds in front of the batch are distinct: the top k of one set of noisy
    logits (Gumbel top-k), so each draw follows softmax over the categories left."""
    key = _check_key("categorical", key)
    logits = logits if isinstance(logits, (Array, Tracer)) else jnp.asarray(logits)
    if logits.dtype.kind != "f":
        logits = jnp.astype(logits, dtypes.default_float())
    axis = _axis("categorical", axis, logits.ndim)
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = batch_shape if shape is None else _shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    if not replace:
        return _categorical_distinct(key, logits, axis, prefix, batch_shape)
    noise_shape = list(shape[len(shape) - len(batch_shape):])
    noise_shape.insert(axis, logits.shape[axis])
    noise = gumbel(key, prefix + tuple(noise_shape), logits.dtype)
    expanded = jnp.reshape(logits, (1,) * len(prefix) + tuple(logits.shape))
    return jnp.argmax(noise + expanded, axis=axis - logits.ndim)


def _categorical_distinct(key, logits, axis, prefix, batch_shape):
    draws, classes = math.prod(prefix), logits.shape[axis]
    if draws > classes:
        raise ValueError(f"categorical: cannot take {draws} distinct samples (shape "
                         f"prefix {prefix}) from {classes} categories with replace=False")
    scores = gumbel(key, tuple(logits.shape), logits.dtype) + logits
    order = jnp.argsort(-scores, axis=axis)
    top = jnp.moveaxis(jnp.take_range(order, 0, draws, axis), axis, 0)
    return jnp.reshape(top, prefix + batch_shape)


def gumbel(key: Array, shape: Sequence[int] = (), dtype: DTypeLike | None = None) -> Array:
    """Standard Gumbel values: -log(-log(u)), u uniform in [tiny, 1)."""
    key = _check_key("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    u = _uniform(key, _shape("gumbel", shape), dtype, float(np.finfo(dtype).tiny), 1.0)
    return -_log(-_log(u))


def exponential(key: Array, shape: Sequence[int] = (), dtype: DTypeLike | None = None) -> Array:
    """Standard exponential values: -log(1 - u)."""
    key = _check_key("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    return -_log(-_uniform(key, _shape("exponential", shape), dtype, 0.0, 1.0), jnp.log1p)


# --------------------------------------------------------------------------- more distributions
# Each is a transformation of uniform, normal or exponential draws with an exact
# distribution (inverse CDFs, sums and ratios of gammas); the gamma and Poisson
# samplers are rejection loops, run as one lax.while_loop over the whole array that
# redraws only the values not yet accepted.

_MAX_ROUNDS = 1000  # rejection rounds; each accepts a value with probability > 0.5


def _open_uniform(key, shape, dtype):
    """Uniform in (0, 1): the smallest normal number instead of 0."""
    return _uniform(key, shape, dtype, float(np.finfo(dtype).tiny), 1.0)


def _param_shape(name, shape, *params):
    joint = np.broadcast_shapes(*(tuple(p.shape) for p in params))
    return joint if shape is None else _shape(name, shape, joint)


def _compute_dtype(dtype):
    # float16 draws are made in float32, then rounded
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def clone(key: Array) -> Array:
    """The same key: fnad keys are values, never consumed, so a clone is the key."""
    return _check_key("clone", key)


def laplace(key: Array, shape: Sequence[int] = (), dtype: DTypeLike | None = None) -> Array:
    """Standard Laplace values (density exp(-|x|) / 2): inverse CDF of a uniform."""
    key = _check_key("laplace", key)
    dtype = _float_dtype("laplace", dtype)
    u = _uniform(key, _shape("laplace", shape), dtype,
                 float(np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))), 1.0)
    return jnp.sign(u) * -_log(-jnp.abs(u), jnp.log1p)


def logistic(key: Array, shape: Sequence[int] = (), dtype: DTypeLike | None = None) -> Array:
    """Standard logistic values: log(u / (1 - u))."""
    key = _check_key("logistic", key)
    dtype = _float_dtype("logistic", dtype)
    u = _open_uniform(key, _shape("logistic", shape), dtype)
    return _log(u) - _log(-u, jnp.log1p)


def cauchy(key: Array, shape: Sequence[int] = (), dtype: DTypeLike | None = None) -> Array:
    """Standard Cauchy values: tan(pi (u - 1/2))."""
    key = _check_key("cauchy", key)
    dtype = _float_dtype("cauchy", dtype)
    u = _uniform(key, _shape("cauchy", shape), dtype, float(np.finfo(dtype).eps), 1.0)
    return jnp.tan(np.array(math.pi, dtype) * (u - np.array(0.5, dtype)))


def rademacher(key: Array, shape: Sequence[int] = (), dtype: DTypeLike | None = None) -> Array:
    """-1 or +1 with equal probability (integers)."""
    key = _check_key("rademacher", key)
    dtype = np.dtype(dtypes.default_int() if dtype is None else dtype)
    heads = bernoulli(key, 0.5, _shape("rademacher", shape))
    return jnp.astype(2 * jnp.astype(heads, dtype) - 1, dtype)


def rayleigh(key: Array, scale: ArrayLike, shape: Sequence[int] | None = None,
             dtype: DTypeLike | None = None) -> Array:
    """Rayleigh values: scale * sqrt(2 E), E standard exponential."""
    key = _check_key("rayleigh", key)
    dtype = _float_dtype("rayleigh", dtype)
    scale = _as(scale, dtype)
    shape = _param_shape("rayleigh", shape, scale)
    return jnp.sqrt(2 * exponential(key, shape, dtype)) * scale


def maxwell(key: Array, shape: Any = (), dtype: DTypeLike | None = None) -> Array:
    """Maxwell values: the length of a standard normal vector in three dimensions."""
    key = _check_key("maxwell", key)
    dtype = _float_dtype("maxwell", dtype)
    shape = _shape("maxwell", shape)
    return jnp.sqrt(jnp.sum(jnp.square(normal(key, shape + (3,), dtype)), axis=-1))


def double_sided_maxwell(key: Array, loc: Any, scale: Any, shape: Any = (),
                         dtype: DTypeLike | None = None) -> Array:
    """loc + scale * (a Maxwell value with a random sign)."""
    key = _check_key("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    loc, scale = _as(loc, dtype), _as(scale, dtype)
    shape = _shape("double_sided_maxwell", shape, tuple(loc.shape), tuple(scale.shape))
    k1, k2 = random_split(key, (2,))
    sign = jnp.astype(rademacher(k2, shape), dtype)
    return maxwell(k1, shape, dtype) * sign * scale + loc


def weibull_min(key: Array, scale: Any, concentration: ArrayLike, shape: Any = (),
                dtype: DTypeLike | None = None) -> Array:
    """Weibull values: scale * E ** (1 / concentration), E standard exponential."""
    key = _check_key("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    scale, conc = _as(scale, dtype), _as(concentration, dtype)
    shape = _shape("weibull_min", shape, tuple(scale.shape), tuple(conc.shape))
    return scale * exponential(key, shape, dtype) ** (1 / conc)


def lognormal(key: Array, sigma: ArrayLike = 1.0, shape: Sequence[int] | None = None,
              dtype: DTypeLike | None = None) -> Array:
    """exp(sigma * N), N standard normal."""
    key = _check_key("lognormal", key)
    dtype = _float_dtype("lognormal", dtype)
    sigma = _as(sigma, dtype)
    shape = _param_shape("lognormal", shape, sigma)
    return jnp.exp(normal(key, shape, dtype) * sigma)


def pareto(key: Array, b: ArrayLike, shape: Sequence[int] | None = None,
           dtype: DTypeLike | None = None) -> Array:
    """Pareto values on [1, inf) with shape b: exp(E / b)."""
    key = _check_key("pareto", key)
    dtype = _float_dtype("pareto", dtype)
    b = _as(b, dtype)
    shape = _param_shape("pareto", shape, b)
    return jnp.exp(exponential(key, shape, dtype) / b)


def wald(key: Array, mean: Any, shape: Sequence[int] | None = None,
         dtype: DTypeLike | None = None) -> Array:
    """Wald (inverse Gaussian, scale 1) values: Michael, Schucany and Haas's method,
    one normal and one uniform per value."""
    key = _check_key("wald", key)
    dtype = _float_dtype("wald", dtype)
    mean = _as(mean, dtype)
    shape = _param_shape("wald", shape, mean)
    k1, k2 = random_split(key, (2,))
    y = jnp.square(normal(k1, shape, dtype))
    my = mean * y
    x = mean + mean * my / 2 - mean / 2 * jnp.sqrt(4 * my + jnp.square(my))
    u = _uniform(k2, shape, dtype, 0.0, 1.0)
    return jnp.where(u <= mean / (mean + x), x, jnp.square(mean) / x)


def triangular(key: Array, left: Any, mode: Any, right: Any,
               shape: Sequence[int] | None = None, dtype: DTypeLike | None = None) -> Array:
    """Triangular values on [left, right] peaking at mode: inverse CDF of a uniform."""
    key = _check_key("triangular", key)
    dtype = _float_dtype("triangular", dtype)
    left, mode, right = (_as(p, dtype) for p in (left, mode, right))
    shape = _param_shape("triangular", shape, left, mode, right)
    u = _uniform(key, shape, dtype, 0.0, 1.0)
    width = right - left
    below = left + jnp.sqrt(u * width * (mode - left))
    above = right - jnp.sqrt((1 - u) * width * (right - mode))
    return jnp.where(u < (mode - left) / width, below, above)


def geometric(key: Array, p: ArrayLike, shape: Sequence[int] | None = None,
              dtype: DTypeLike | None = None) -> Array:
    """The number of Bernoulli(p) trials up to and including the first success
    (1, 2, ...): 1 + floor(log(u) / log(1 - p)). Counts past the dtype's range (p at
    or near 0) saturate at its maximum; -1 where p is not in [0, 1]."""
    key = _check_key("geometric", key)
    dtype = np.dtype(dtypes.default_int() if dtype is None else dtype)
    if dtype.kind != "i":
        raise DTypeError(f"geometric: dtype must be a signed integer dtype (-1 marks an "
                         f"invalid p), got {dtype}")
    p = p if isinstance(p, (Array, Tracer)) else jnp.asarray(p)
    if p.dtype.kind != "f":
        p = jnp.astype(p, dtypes.default_float())
    shape = _param_shape("geometric", shape, p)
    u = _open_uniform(key, shape, p.dtype)
    valid = (p >= 0) & (p <= 1)
    safe = jnp.where(valid & (p > 0) & (p < 1), p, 0.5)
    trials = jnp.floor(_log(u) / _log(-safe, jnp.log1p)) + 1
    trials = jnp.where(p == 1, 1.0, jnp.where(p > 0, trials, np.inf))
    return _saturating_count(trials, valid, dtype)


def _saturating_count(counts, valid, dtype):
    """Float counts as `dtype`: those past its range become its maximum (a float cast
    would wrap them), -1 where invalid."""
    info = np.iinfo(dtype)
    # info.max + 1 is a power of two, exact in any float dtype; info.max may not be
    too_big = counts >= float(info.max) + 1
    safe = jnp.where(valid & ~too_big, counts, -1)
    out = jnp.where(too_big, info.max, jnp.astype(safe, dtype))
    return jnp.astype(jnp.where(valid, out, -1), dtype)


# --------------------------------------------------------------------------- gamma and friends

def _marsaglia_tsang(key, alpha, shape, dtype):
    """Gamma(alpha) draws for alpha >= 1 (Marsaglia & Tsang, 2000): d v with
    d = alpha - 1/3 and v = (1 + c x)^3 for a normal x, accepted when
    log u < x^2 / 2 + d - d v + d log v."""
    d = alpha - np.array(1 / 3, dtype)
    c = 1 / jnp.sqrt(9 * d)

    def cond(state):
        _, rounds, _, done = state
        return (rounds < _MAX_ROUNDS) & ~jnp.all(done)

    def body(state):
        k, rounds, v, done = state
        keys = random_split(k, (3,))
        x = normal(keys[1], shape, dtype)
        u = _open_uniform(keys[2], shape, dtype)   # log u finite: no 0 in the draws
        cube = (1 + c * x) ** 3
        positive = cube > 0
        safe = jnp.where(positive, cube, 1)
        accept = positive & (_log(u) < 0.5 * jnp.square(x) + d - d * safe + d * _log(safe))
        return keys[0], rounds + 1, jnp.where(accept & ~done, safe, v), done | accept

    start = (key, jnp.zeros((), np.int32), jnp.ones(shape, dtype), jnp.isnan(d))
    _, _, v, _ = lax.while_loop(cond, body, start)
    return d * v


def _log_gamma_draw(key, a, shape, dtype):
    """(log z, z) for draws z of Gamma(a), a already of `shape` and `dtype`."""
    return _gamma_sample(key, a)


@custom_jvp
def _gamma_sample(key, a):
    """(log z, z) for a draw z of Gamma(a): Marsaglia-Tsang for a >= 1; a < 1 is
    boosted to a + 1 and scaled by u ** (1 / a), in logs so that tiny a loses nothing
    to underflow.

    The derivative in a is the implicit reparameterization one (Figurnov et al.,
    2018), as JAX's: the z that keeps the CDF P(a, z) fixed moves by
    dz/da = -(dP/da) / density(z). (Differentiating the rejection loop itself, its
    normal and uniform held fixed, would give another, wrong derivative: the custom
    rule keeps every transform out of it.)"""
    shape, dtype = tuple(a.shape), a.dtype
    k1, k2 = random_split(key, (2,))
    small = a < 1
    boosted = jnp.where(small | jnp.isnan(a), a + 1, a)
    g = _marsaglia_tsang(k1, jnp.where(a > 0, boosted, 1.0), shape, dtype)
    log_u = _log(_open_uniform(k2, shape, dtype))
    log_g = _log(g) + jnp.where(small & (a > 0), log_u / jnp.where(a > 0, a, 1), 0.0)
    invalid = ~(a >= 0)
    log_g = jnp.where(invalid, np.nan, jnp.where(a == 0, -np.inf, log_g))
    return log_g, jnp.where(a >= 1, g, jnp.exp(log_g))


@_gamma_sample.defjvp
def _gamma_sample_jvp(primals, tangents):
    key, a = primals
    log_z, z = _gamma_sample(key, a)
    d_log_z = _dlog_gamma_sample_da(a, log_z, z) * tangents[1]
    return (log_z, z), (d_log_z, d_log_z * z)


def _dlog_gamma_sample_da(a, log_z, z):
    """d log z / da for a Gamma(a) sample z, computed in float64:
    -(dP/da)(a, z) / (z density(z)), with z density(z) = z^a e^-z / Gamma(a); where z
    is tiny, P(a, z) = z^a / Gamma(a + 1) (1 + O(z)) gives (digamma(a + 1) - log z) / a."""
    f64 = np.dtype(np.float64)
    a64, log_z64, z64 = (jnp.astype(lax.stop_gradient(v), f64) for v in (a, log_z, z))
    ok = (a64 > 0) & jnp.isfinite(a64)
    a_safe = jnp.where(ok, a64, 1.0)
    tiny = log_z64 < math.log(1e-10)
    z_safe = jnp.where(tiny | ~ok, 1.0, z64)
    log_safe = jnp.where(tiny | ~ok, 0.0, log_z64)
    _, dp_da = _jvp(lambda s: special.gammainc(s, z_safe), (a_safe,),
                        (jnp.ones_like(a_safe),))
    general = -dp_da * jnp.exp(special.gammaln(a_safe) - a_safe * log_safe + z_safe)
    small_z = (special.digamma(a_safe + 1) - jnp.where(ok, log_z64, 0.0)) / a_safe
    out = jnp.where(ok, jnp.where(tiny, small_z, general), np.nan)
    return jnp.astype(out, a.dtype)


def _gamma_args(name, key, a, shape, dtype):
    key = _check_key(name, key)
    dtype = _float_dtype(name, dtype)
    a = _as(a, _compute_dtype(dtype))
    shape = _param_shape(name, shape, a)
    return key, jnp.broadcast_to(a, shape), shape, dtype


def gamma(key: Array, a: ArrayLike, shape: Sequence[int] | None = None,
          dtype: DTypeLike | None = None) -> Array:
    """Gamma(a, 1) values (0 for a = 0, NaN for a < 0), differentiable in a (implicit
    reparameterization)."""
    key, a, shape, dtype = _gamma_args("gamma", key, a, shape, dtype)
    compute = _compute_dtype(dtype)
    return jnp.astype(_log_gamma_draw(key, a, shape, compute)[1], dtype)


def loggamma(key: Array, a: ArrayLike, shape: Sequence[int] | None = None,
             dtype: DTypeLike | None = None) -> Array:
    """log of Gamma(a, 1) values, accurate where the values themselves underflow
    (a << 1)."""
    key, a, shape, dtype = _gamma_args("loggamma", key, a, shape, dtype)
    return jnp.astype(_log_gamma_draw(key, a, shape, _compute_dtype(dtype))[0], dtype)


def beta(key: Array, a: ArrayLike, b: ArrayLike, shape: Sequence[int] | None = None,
         dtype: DTypeLike | None = None) -> Array:
    """Beta(a, b) values: X / (X + Y) for X ~ Gamma(a), Y ~ Gamma(b), formed from
    their logs so that small a and b give no 0 / 0."""
    key = _check_key("beta", key)
    dtype = _float_dtype("beta", dtype)
    compute = _compute_dtype(dtype)
    a, b = _as(a, compute), _as(b, compute)
    shape = _param_shape("beta", shape, a, b)
    ka, kb = random_split(key, (2,))
    log_x = loggamma(ka, jnp.broadcast_to(a, shape), shape, compute)
    log_y = loggamma(kb, jnp.broadcast_to(b, shape), shape, compute)
    top = jnp.maximum(log_x, log_y)
    x, y = jnp.exp(log_x - top), jnp.exp(log_y - top)
    return jnp.astype(x / (x + y), dtype)


def dirichlet(key: Array, alpha: Any, shape: Any = None,
              dtype: DTypeLike | None = None) -> Array:
    """Dirichlet(alpha) vectors along the last axis: normalized gammas (a softmax of
    log-gammas). `shape` is the batch shape; the result has alpha's last axis after it."""
    key = _check_key("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    compute = _compute_dtype(dtype)
    alpha = _as(alpha, compute)
    if alpha.ndim < 1:
        raise ShapeError(f"dirichlet: alpha must have at least one axis (the categories), "
                         f"got shape {tuple(alpha.shape)}")
    batch = tuple(alpha.shape[:-1]) if shape is None else \
        _shape("dirichlet", shape, tuple(alpha.shape[:-1]))
    full = batch + tuple(alpha.shape[-1:])
    log_g = loggamma(key, jnp.broadcast_to(alpha, full), full, compute)
    log_g = log_g - jnp.max(log_g, axis=-1, keepdims=True)
    g = jnp.exp(log_g)
    return jnp.astype(g / jnp.sum(g, axis=-1, keepdims=True), dtype)


def chisquare(key: Array, df: Any, shape: Any = None,
              dtype: DTypeLike | None = None) -> Array:
    """Chi-squared values with df degrees of freedom: 2 Gamma(df / 2)."""
    key, df, shape, dtype = _gamma_args("chisquare", key, df, shape, dtype)
    return jnp.astype(2 * gamma(key, df / 2, shape, _compute_dtype(dtype)), dtype)


def t(key: Array, df: Any, shape: Any = None,
      dtype: DTypeLike | None = None) -> Array:
    """Student's t values: N / sqrt(chi2(df) / df)."""
    key, df, shape, dtype = _gamma_args("t", key, df, shape, dtype)
    compute = _compute_dtype(dtype)
    k1, k2 = random_split(key, (2,))
    n = normal(k1, shape, compute)
    half = gamma(k2, df / 2, shape, compute)
    return jnp.astype(n * jnp.sqrt(df / (2 * half)), dtype)


def f(key: Array, dfnum: Any, dfden: Any, shape: Any = None,
      dtype: DTypeLike | None = None) -> Array:
    """F values: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)."""
    key = _check_key("f", key)
    dtype = _float_dtype("f", dtype)
    compute = _compute_dtype(dtype)
    dfnum, dfden = _as(dfnum, compute), _as(dfden, compute)
    shape = _param_shape("f", shape, dfnum, dfden)
    k1, k2 = random_split(key, (2,))
    num = gamma(k1, jnp.broadcast_to(dfnum / 2, shape), shape, compute) / dfnum
    den = gamma(k2, jnp.broadcast_to(dfden / 2, shape), shape, compute) / dfden
    return jnp.astype(num / den, dtype)


def generalized_normal(key: Array, p: Any, shape: Any = (),
                       dtype: DTypeLike | None = None) -> Array:
    """Values with density proportional to exp(-|x| ** p): a random sign times
    Gamma(1 / p) ** (1 / p)."""
    key = _check_key("generalized_normal", key)
    dtype = _float_dtype("generalized_normal", dtype)
    shape = _shape("generalized_normal", shape)
    k1, k2 = random_split(key, (2,))
    g = gamma(k1, jnp.full(shape, 1 / p, _compute_dtype(dtype)), shape, dtype)
    return jnp.astype(rademacher(k2, shape), dtype) * g ** (1 / p)


def ball(key: Array, d: int, p: float = 2, shape: Any = (),
         dtype: DTypeLike | None = None) -> Array:
    """Points uniform in the d-dimensional unit p-norm ball (Barthe et al., 2005):
    g / (|g|_p^p + E) ** (1 / p) for generalized-normal g and exponential E."""
    key = _check_key("ball", key)
    dtype = _float_dtype("ball", dtype)
    shape = _shape("ball", shape)
    if not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"ball: the dimension d must be a positive int, got {d!r}")
    k1, k2 = random_split(key, (2,))
    g = generalized_normal(k1, p, shape + (int(d),), dtype)
    e = exponential(k2, shape, dtype)
    radius = (jnp.sum(jnp.abs(g) ** p, axis=-1) + e) ** (1 / p)
    return g / jnp.expand_dims(radius, -1)


# --------------------------------------------------------------------------- counts

def _log_factorial(k):
    """log(k!) for k >= 0 (float64): Stirling's series at k + 9, shifted back down
    by the product (k + 1)...(k + 8); its error is below 1e-11."""
    z = k + 9
    series = ((z - 0.5) * jnp.log(z) - z + 0.5 * math.log(2 * math.pi)
              + 1 / (12 * z) - 1 / (360 * z ** 3) + 1 / (1260 * z ** 5))
    shift = jnp.log((k + 1) * (k + 2) * (k + 3) * (k + 4)) + \
        jnp.log((k + 5) * (k + 6) * (k + 7) * (k + 8))
    return series - shift


def _rejection_loop(key, shape, start_value, propose):
    """Redraw the values not yet accepted: propose(key) -> (values, accepted)."""
    def cond(state):
        return (state[1] < _MAX_ROUNDS * 10) & ~jnp.all(state[3])

    def body(state):
        k, rounds, value, done = state
        keys = random_split(k, (2,))
        proposal, accept = propose(keys[1])
        return keys[0], rounds + 1, jnp.where(accept & ~done, proposal, value), done | accept
    start = (key, jnp.zeros((), np.int32), start_value, jnp.zeros(shape, bool))
    return lax.while_loop(cond, body, start)[2]


def _poisson_small(key, lam, shape):
    """Knuth's method in logs: count uniforms until their log-sum drops below -lam."""
    def cond(state):
        return (state[1] < _MAX_ROUNDS * 10) & ~jnp.all(state[4])

    def body(state):
        k, rounds, count, total, done = state
        keys = random_split(k, (2,))
        total = total + jnp.where(done, 0.0, jnp.log(_open_uniform(keys[1], shape,
                                                                   np.dtype(np.float64))))
        now_done = done | (total < -lam)
        return keys[0], rounds + 1, count + jnp.where(done, 0, 1), total, now_done
    start = (key, jnp.zeros((), np.int32), jnp.zeros(shape, np.float64),
             jnp.zeros(shape, np.float64), jnp.zeros(shape, bool))
    return lax.while_loop(cond, body, start)[2] - 1


def _poisson_large(key, lam, shape):
    """Hormann's transformed rejection with squeeze (PTRS, 1993), for lam >= 10."""
    f64 = np.dtype(np.float64)
    b = 0.931 + 2.53 * jnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def propose(k):
        k1, k2 = random_split(k, (2,))
        u = _uniform(k1, shape, f64, 0.0, 1.0) - 0.5
        v = _open_uniform(k2, shape, f64)
        us = 0.5 - jnp.abs(u)
        n = jnp.floor((2 * a / us + b) * u + lam + 0.43)
        quick = (us >= 0.07) & (v <= v_r)
        bad = (n < 0) | ((us < 0.013) & (v > us))
        safe_n = jnp.maximum(n, 0)
        log_ratio = jnp.log(v * inv_alpha / (a / jnp.square(us) + b))
        slow = log_ratio <= -lam + safe_n * jnp.log(lam) - _log_factorial(safe_n)
        return n, quick | (~bad & slow)
    return _rejection_loop(key, shape, jnp.zeros(shape, f64), propose)


def poisson(key: Array, lam: Any, shape: Sequence[int] | None = None,
            dtype: DTypeLike | None = None) -> Array:
    """Poisson(lam) counts: Knuth's method below lam = 10, Hormann's PTRS above
    (computed in float64); counts past the dtype's range saturate at its maximum; -1
    where lam is negative or NaN."""
    key = _check_key("poisson", key)
    dtype = np.dtype(dtypes.default_int() if dtype is None else dtype)
    if dtype.kind != "i":
        raise DTypeError(f"poisson: dtype must be a signed integer dtype (-1 marks an "
                         f"invalid lam), got {dtype}")
    lam = _as(lam, np.float64)
    shape = _param_shape("poisson", shape, lam)
    lam = jnp.broadcast_to(lam, shape)
    valid = lam >= 0
    small = valid & (lam < 10)
    k1, k2 = random_split(key, (2,))
    few = _poisson_small(k1, jnp.where(small, lam, 0.0), shape)
    many = _poisson_large(k2, jnp.where(small | ~valid | jnp.isinf(lam), 1e5, lam), shape)
    counts = jnp.where(small, few, jnp.where(jnp.isinf(lam), np.inf, many))
    return _saturating_count(counts, valid, dtype)


def _binomial_small(key, n, q, shape):
    """Inversion by waiting times: the number of geometric(q) gaps between successes
    that fit in n trials."""
    f64 = np.dtype(np.float64)
    log_miss = jnp.log1p(-jnp.where(q > 0, q, 0.5))

    def cond(state):
        return (state[1] < _MAX_ROUNDS * 10) & ~jnp.all(state[4])

    def body(state):
        k, rounds, count, trials, done = state
        keys = random_split(k, (2,))
        gap = jnp.floor(jnp.log(_open_uniform(keys[1], shape, f64)) / log_miss) + 1
        trials = trials + jnp.where(done, 0.0, gap)
        now_done = done | (trials > n)
        return keys[0], rounds + 1, count + jnp.where(now_done, 0.0, 1.0), trials, now_done
    start = (key, jnp.zeros((), np.int32), jnp.zeros(shape, f64), jnp.zeros(shape, f64),
             q <= 0)
    return lax.while_loop(cond, body, start)[2]


def _binomial_large(key, n, q, shape):
    """Hormann's BTRS (transformed rejection with squeeze, 1993), for n q >= 10."""
    f64 = np.dtype(np.float64)
    spq = jnp.sqrt(n * q * (1 - q))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    alpha = (2.83 + 5.1 / b) * spq
    v_r = 0.92 - 4.2 / b
    m = jnp.floor((n + 1) * q)
    log_odds = jnp.log(q / (1 - q))
    h = _log_factorial(m) + _log_factorial(n - m)

    def propose(k):
        k1, k2 = random_split(k, (2,))
        u = _uniform(k1, shape, f64, 0.0, 1.0) - 0.5
        v = _open_uniform(k2, shape, f64)
        us = 0.5 - jnp.abs(u)
        draw = jnp.floor((2 * a / us + b) * u + c)
        quick = (us >= 0.07) & (v <= v_r)
        bad = (draw < 0) | (draw > n)
        safe = jnp.clip(draw, 0, n)
        log_v = jnp.log(v * alpha / (a / jnp.square(us) + b))
        slow = log_v <= h - _log_factorial(safe) - _log_factorial(n - safe) + \
            (safe - m) * log_odds
        return draw, quick | (~bad & slow)
    return _rejection_loop(key, shape, jnp.zeros(shape, f64), propose)


def binomial(key: Array, n: Any, p: Any, shape: Sequence[int] | None = None,
             dtype: DTypeLike | None = None) -> Array:
    """Binomial(n, p) counts, as floats (as JAX): waiting-time inversion when
    n min(p, 1 - p) < 10, Hormann's BTRS otherwise, computed in float64; NaN where n is
    negative or infinite or p is outside [0, 1]."""
    key = _check_key("binomial", key)
    dtype = _float_dtype("binomial", dtype)
    n, p = _as(n, np.float64), _as(p, np.float64)
    shape = _param_shape("binomial", shape, n, p)
    n, p = jnp.broadcast_to(jnp.floor(n), shape), jnp.broadcast_to(p, shape)
    valid = (n >= 0) & jnp.isfinite(n) & (p >= 0) & (p <= 1)
    q = jnp.where(valid, jnp.minimum(p, 1 - p), 0.0)
    n_ok = jnp.where(valid, n, 0.0)
    small = n_ok * q < 10
    k1, k2 = random_split(key, (2,))
    few = _binomial_small(k1, jnp.where(small, n_ok, 0.0), jnp.where(small, q, 0.0), shape)
    many = _binomial_large(k2, jnp.where(small, 100.0, n_ok), jnp.where(small, 0.5, q),
                           shape)
    k = jnp.where(small, few, many)
    k = jnp.where(p > 0.5, n_ok - k, k)
    return jnp.astype(jnp.where(valid, k, np.nan), dtype)


def multinomial(key: Array, n: Any, p: Any, *, shape: Any = None,
                dtype: DTypeLike | None = None) -> Array:
    """Counts of n draws among the categories of p (probabilities along the last axis,
    normalized here): category by category, each count binomial in what is left of n
    given the probability left."""
    key = _check_key("multinomial", key)
    dtype = _float_dtype("multinomial", dtype)
    n, p = _as(n, np.float64), _as(p, np.float64)
    if p.ndim < 1:
        raise ShapeError(f"multinomial: p must have a categories axis, got shape "
                         f"{tuple(p.shape)}")
    full = np.broadcast_shapes(tuple(n.shape) + tuple(p.shape[-1:]), tuple(p.shape))
    full = full if shape is None else _shape("multinomial", shape, full)
    batch, classes = full[:-1], full[-1]
    p = jnp.broadcast_to(p, full)
    # the probability of category i given that it is none of 0..i-1
    tail = jnp.flip(jnp.cumsum(jnp.flip(p, -1), axis=-1), -1)
    conditional = jnp.clip(p / jnp.where(tail > 0, tail, 1.0), 0.0, 1.0)
    left = jnp.broadcast_to(jnp.floor(n), batch)
    keys = random_split(key, (max(classes, 1),))
    counts = []
    for i in range(classes):
        k = left if i == classes - 1 else binomial(keys[i], left, conditional[..., i],
                                                   batch, np.float64)
        counts.append(k)
        left = left - k
    return jnp.astype(jnp.stack(counts, axis=-1), dtype)


# --------------------------------------------------------------------------- matrices

def orthogonal(key: Array, n: int, shape: Any = (), dtype: DTypeLike | None = None,
               m: int | None = None) -> Array:
    """Uniformly random (Haar) matrices of shape (*shape, n, m) (m = n by default)
    with orthonormal columns, or orthonormal rows when n < m."""
    key = _check_key("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype)
    shape = _shape("orthogonal", shape)
    m = n if m is None else m
    tall, wide = max(n, m), min(n, m)
    q, r = jnp.linalg.qr(normal(key, shape + (tall, wide), dtype))
    # QR is unique once diag(R) > 0; with that sign fixed, the Q of a Gaussian matrix
    # is Haar-distributed (Mezzadri, 2007)
    signs = jnp.where(jnp.diagonal(r, axis1=-2, axis2=-1) < 0, -1.0, 1.0)
    q = q * jnp.astype(jnp.expand_dims(signs, -2), dtype)
    return jnp.swapaxes(q, -1, -2) if n < m else q


def multivariate_normal(key: Array, mean: Any, cov: Any,
                        shape: Any = None, dtype: DTypeLike | None = None,
                        method: str = "cholesky") -> Array:
    """Normal vectors with the given mean (..., d) and covariance (..., d, d):
    mean + A z with cov = A A^T. method 'cholesky' (cov positive definite) takes A
    triangular; 'eigh' and 'svd' take A = U sqrt(S) and allow a singular cov."""
    key = _check_key("multivariate_normal", key)
    dtype = _float_dtype("multivariate_normal", dtype)
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"multivariate_normal: method must be 'cholesky', 'eigh' or "
                         f"'svd', got {method!r}")
    mean, cov = _as(mean, dtype), _as(cov, dtype)
    if mean.ndim < 1 or cov.ndim < 2 or tuple(cov.shape[-2:]) != (mean.shape[-1],) * 2:
        raise ShapeError(f"multivariate_normal: mean must be (..., d) and cov (..., d, d), "
                         f"got shapes {tuple(mean.shape)} and {tuple(cov.shape)}")
    batch = np.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    batch = batch if shape is None else _shape("multivariate_normal", shape, batch)
    if method == "cholesky":
        factor = jnp.linalg.cholesky(cov)
    elif method == "eigh":
        w, u = jnp.linalg.eigh(cov)
        factor = u * jnp.expand_dims(jnp.sqrt(jnp.maximum(w, 0)), -2)
    else:
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.expand_dims(jnp.sqrt(s), -2)
    z = normal(key, batch + tuple(mean.shape[-1:]), dtype)
    return mean + jnp.squeeze(jnp.matmul(factor, z[..., None]), -1)
