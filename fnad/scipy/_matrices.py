"""scipy.linalg's special matrices. Those built from an array (toeplitz, hankel,
circulant, companion, fiedler, fiedler_companion, leslie, convolution_matrix) gather
its entries through a constant index matrix, so they are differentiable in that array
and map over its leading axes; the others are constants of a size."""
import math

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from .. import numpy as jnp
from ..typing import Array, ArrayLike, DTypeLike


def _vector(name: str, a: Any) -> Array:
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ShapeError(f"{name}: expected an array with at least one axis, got a scalar")
    return a


def _common_lead(*vectors: Array) -> list[Array]:
    """The vectors with their leading axes broadcast together and one dtype."""
    lead = np.broadcast_shapes(*[tuple(v.shape[:-1]) for v in vectors])
    dtype = jnp.result_type(*vectors)
    return [jnp.broadcast_to(v, lead + tuple(v.shape[-1:])).astype(dtype) for v in vectors]


def _from(values: Array, index: Any) -> Array:
    """values[..., index]: a matrix of entries of the last axis of values."""
    return jnp.take(values, np.asarray(index), axis=-1)


def _padded(a: Array, *constants: Any) -> Array:
    """[0, constants..., a...] along the last axis: index 0 reads a zero, 1... the
    constants, and len(constants) + 1 + k reads a[..., k]."""
    lead = tuple(a.shape[:-1])
    heads = [jnp.full(lead + (1,), c, dtype=a.dtype) for c in (0,) + constants]
    return jnp.concatenate(heads + [a], axis=-1)


def toeplitz(c: ArrayLike, r: ArrayLike | None = None) -> Array:
    """T[i, j] = c[i - j] below the diagonal, r[j - i] above it (r defaults to conj(c));
    c[0] is the diagonal."""
    c = _vector("toeplitz", c)
    r = jnp.conj(c) if r is None else _vector("toeplitz", r)
    c, r = _common_lead(c, r)
    m, n = c.shape[-1], r.shape[-1]
    values = jnp.concatenate([jnp.flip(c, axis=-1), r[..., 1:]], axis=-1)
    i, j = np.indices((m, n))
    return _from(values, m - 1 - i + j)


def hankel(c: ArrayLike, r: ArrayLike | None = None) -> Array:
    """H[i, j] = c[i + j] while i + j < len(c), then r[i + j - len(c) + 1]; r (default
    zeros) gives the last row, its first entry ignored."""
    c = _vector("hankel", c)
    r = jnp.zeros_like(c) if r is None else _vector("hankel", r)
    c, r = _common_lead(c, r)
    m, n = c.shape[-1], r.shape[-1]
    i, j = np.indices((m, n))
    return _from(jnp.concatenate([c, r[..., 1:]], axis=-1), i + j)


def circulant(c: ArrayLike) -> Array:
    """C[i, j] = c[(i - j) mod n]: c is the first column."""
    c = _vector("circulant", c)
    n = c.shape[-1]
    i, j = np.indices((n, n))
    return _from(c, (i - j) % n)


def companion(a: ArrayLike) -> Array:
    """The companion matrix of the polynomial with coefficients a (highest first):
    first row -a[1:] / a[0], ones below the diagonal."""
    a = _vector("companion", a)
    if a.shape[-1] < 2:
        raise ValueError(f"companion: a needs at least two coefficients, got {a.shape[-1]}")
    n = a.shape[-1] - 1
    row = -a[..., 1:] / a[..., :1]
    index = np.zeros((n, n), int)
    index[0] = np.arange(n) + 2
    index[np.arange(1, n), np.arange(n - 1)] = 1
    return _from(_padded(row, 1), index)


def fiedler(a: ArrayLike) -> Array:
    """F[i, j] = |a[i] - a[j]|."""
    a = _vector("fiedler", a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a: ArrayLike) -> Array:
    """Fiedler's (2003) pentadiagonal companion matrix of the polynomial a (highest
    coefficient first): the same eigenvalues as companion(a)."""
    a = _vector("fiedler_companion", a)
    m = a.shape[-1] - 1
    if m < 1:
        raise ValueError("fiedler_companion: a needs at least two coefficients")
    c = -a[..., 1:] / a[..., :1]
    index = np.zeros((m, m), int)       # 0: zero, 1: one, k + 2: c[k]
    index[0, 0] = 2
    for k in range(1, m):
        index[(k - 1, k) if k % 2 else (k, k - 1)] = k + 2
    for r in range(m):
        col = r + 2 if r % 2 == 0 else (0 if r == 1 else r - 2)
        if col < m:
            index[r, col] = 1
    return _from(_padded(c, 1), index)


def leslie(f: ArrayLike, s: ArrayLike) -> Array:
    """The Leslie matrix: fecundities f in the first row, survival rates s below the
    diagonal (len(s) = len(f) - 1)."""
    f, s = _vector("leslie", f), _vector("leslie", s)
    n = f.shape[-1]
    if s.shape[-1] != n - 1:
        raise ShapeError(f"leslie: s needs len(f) - 1 = {n - 1} entries, got {s.shape[-1]}")
    f, s = _common_lead(f, s)
    index = np.zeros((n, n), int)
    index[0] = np.arange(n) + 1
    index[np.arange(1, n), np.arange(n - 1)] = np.arange(n - 1) + n + 1
    return _from(_padded(jnp.concatenate([f, s], axis=-1)), index)


def convolution_matrix(a: ArrayLike, n: int, mode: str = 'full') -> Array:
    """A with A @ v = np.convolve(a, v, mode) for every v of length n."""
    a = _vector("convolution_matrix", a)
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid', "
                         f"got {mode!r}")
    m = a.shape[-1]
    if n <= 0 or m == 0:
        raise ValueError(f"convolution_matrix: needs n > 0 and a non-empty a, got n={n} "
                         f"and len(a)={m}")
    i, j = np.indices((m + n - 1, n))
    k = i - j
    index = np.where((k >= 0) & (k < m), k + 1, 0)
    short = min(m, n)
    if mode == "same":
        index = index[(short - 1) // 2:(short - 1) // 2 + max(m, n)]
    elif mode == "valid":
        index = index[short - 1:max(m, n)]
    return _from(_padded(a), index)


# --------------------------------------------------------------------------- constants

def dft(n: int, scale: Any = None, *, dtype: DTypeLike | None = None) -> Array:
    """W[j, k] = exp(-2 pi i j k / n), divided by sqrt(n) (scale 'sqrtn') or n ('n')."""
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
    jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)
    w = np.exp(-2j * np.pi * jk / max(n, 1))
    w = w / {None: 1, "sqrtn": math.sqrt(n), "n": n}[scale] if n else w
    return jnp.asarray(w, dtype=dtype if dtype is not None else dtypes.default_complex())


def hadamard(n: int, dtype: DTypeLike = int) -> Array:
    """Sylvester's Hadamard matrix of order n, a power of 2."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtype=dtypes.default_int() if dtype is int else dtype)


def helmert(n: int, full: bool = False) -> Array:
    """The Helmert matrix: (n - 1) x n rows orthonormal and orthogonal to the ones
    vector, with the normalized ones vector first when full."""
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    norms = np.sqrt(np.arange(n) * np.arange(1, n + 1))
    h[1:] /= norms[1:, None]
    h[0] = 1 / math.sqrt(n)
    return jnp.asarray(h if full else h[1:], dtype=dtypes.default_float())


def hilbert(n: int) -> Array:
    """H[i, j] = 1 / (i + j + 1)."""
    i, j = np.indices((n, n))
    return jnp.asarray(1.0 / (i + j + 1), dtype=dtypes.default_float())


def invhilbert(n: int) -> Array:
    """The inverse of hilbert(n), from its closed form (integers, exact below n = 14;
    floats here)."""
    out = np.empty((n, n))
    for (r, c) in np.ndindex(n, n):
        out[r, c] = ((-1) ** (r + c) * (r + c + 1) * math.comb(n + r, n - c - 1)
                     * math.comb(n + c, n - r - 1) * math.comb(r + c, r) ** 2)
    return jnp.asarray(out, dtype=dtypes.default_float())


def pascal(n: int, kind: str = 'symmetric') -> Array:
    """Binomial coefficients: 'symmetric' C(i + j, i), 'lower' C(i, j), 'upper' C(j, i)."""
    if kind == "symmetric":
        table = [[math.comb(a + b, a) for b in range(n)] for a in range(n)]
    elif kind in ("lower", "upper"):
        table = [[math.comb(a, b) for b in range(n)] for a in range(n)]
    else:
        raise ValueError(f"pascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    out = np.array(table, dtype=np.int64).reshape(n, n)
    return jnp.asarray(out.T if kind == "upper" else out, dtype=dtypes.default_int())


def invpascal(n: int, kind: str = 'symmetric') -> Array:
    """The inverse of pascal(n, kind), integers: lower (-1)^(i+j) C(i, j); symmetric
    invL^T invL, since pascal(n) = L L^T."""
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"invpascal: kind must be 'symmetric', 'lower' or 'upper', got "
                         f"{kind!r}")
    low = np.array([[(-1) ** (a + b) * math.comb(a, b) for b in range(n)] for a in range(n)],
                   dtype=np.int64).reshape(n, n)
    out = {"lower": low, "upper": low.T, "symmetric": low.T @ low}[kind]
    return jnp.asarray(out, dtype=dtypes.default_int())
