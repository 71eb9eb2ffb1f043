"""numpy's polynomial functions on coefficient arrays, highest power first. Each is a
short composition (Horner's rule, convolution, companion-matrix eigenvalues, least
squares); lengths are static, so all of them run under jit, vmap and grad except where
numpy trims zeros, which needs concrete values (as in JAX)."""
import operator
from typing import Any

import numpy as np

from .. import dtypes
from ..array import Array
from ..errors import ShapeError
from . import linalg
from ._core import as_operand, astype, promote, promote_inexact
from ._creation import zeros
from ._complex import real
from ._elementwise import sqrt
from ._nonzero import concrete_or_raise
from ._products import dot, outer
from ._reductions import cumprod, sum as _sum
from ._shapes import (atleast_1d, broadcast_to, concatenate, expand_dims, flip, reshape,
                      stack, take_range)
from ._signal import convolve
from ..typing import ArrayLike

__all__ = ["vander", "polyval", "polyadd", "polysub", "polymul", "polyder", "polyint",
           "polydiv", "polyfit", "poly", "roots"]


def _coefficients(name, p):
    p = atleast_1d(as_operand(p))
    if p.ndim != 1:
        raise ShapeError(f"{name}: coefficients must be 1-d, got shape {tuple(p.shape)}")
    return p


def vander(x: ArrayLike, N: Any = None, increasing: bool = False) -> Array:  # noqa: N803
    """Columns x**(N-1), ..., x, 1 (reversed with increasing=True), the powers as
    running products, as numpy computes them."""
    x = as_operand(x)
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be 1-d, got shape {tuple(x.shape)}")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    x, = promote(x)
    if x.dtype.kind == "b":
        x = astype(x, dtypes.default_int())
    ones = Array(np.ones((x.shape[0], min(n, 1)), x.dtype))
    if n <= 1:
        out = ones
    else:
        powers = cumprod(broadcast_to(expand_dims(x, 1), (x.shape[0], n - 1)), axis=1,
                         dtype=x.dtype)
        out = concatenate([ones, powers], 1)
    return out if increasing else flip(out, 1)


def polyval(p: ArrayLike, x: ArrayLike, *, unroll: int = 16) -> Array:
    """p[0] x**(n-1) + ... + p[n-1] by Horner's rule (numpy's order of operations)."""
    p = _coefficients("polyval", p)
    p, x = promote(p, x)
    y = x * 0
    for i in range(p.shape[0]):
        y = y * x + reshape(take_range(p, i, i + 1, 0), ())
    return y


def _aligned(a1, a2):
    """The two coefficient arrays padded in front to one length."""
    a1, a2 = promote(_coefficients("poly", a1), _coefficients("poly", a2))
    n = max(a1.shape[0], a2.shape[0])
    pad = [Array(np.zeros(n - a.shape[0], a.dtype)) for a in (a1, a2)]
    return [concatenate([z, a], 0) if z.shape[0] else a for z, a in zip(pad, (a1, a2))]


def polyadd(a1: Any, a2: Any) -> Array:
    a1, a2 = _aligned(a1, a2)
    return a1 + a2


def polysub(a1: Any, a2: Any) -> Array:
    a1, a2 = _aligned(a1, a2)
    return a1 - a2


def _trim_leading_zeros(name, p):
    value = concrete_or_raise(p, name)
    nonzero = np.flatnonzero(value)
    start = nonzero[0] if nonzero.size else value.shape[0] - 1
    return take_range(p, int(start), p.shape[0], 0)


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Array:
    a1, a2 = promote(_coefficients("polymul", a1), _coefficients("polymul", a2))
    if trim_leading_zeros:
        a1, a2 = _trim_leading_zeros("polymul", a1), _trim_leading_zeros("polymul", a2)
    return convolve(a1, a2)


def polyder(p: ArrayLike, m: Any = 1) -> Array:
    """The m-th derivative's coefficients."""
    p, = promote_inexact(_coefficients("polyder", p))     # JAX's dtype rule
    m = operator.index(m)
    if m < 0:
        raise ValueError(f"polyder: order m must be non-negative, got {m}")
    for _ in range(m):
        n = p.shape[0] - 1
        if n <= 0:
            return Array(np.zeros(1, p.dtype))
        p = take_range(p, 0, n, 0) * Array(np.arange(n, 0, -1).astype(p.dtype))
    return p


def polyint(p: Any, m: Any = 1, k: Any = None) -> Any:
    """The m-th antiderivative's coefficients, the integration constants k (0 by
    default; one per order, or one for all)."""
    p, = promote_inexact(_coefficients("polyint", p))
    m = operator.index(m)
    if m < 0:
        raise ValueError(f"polyint: order m must be non-negative, got {m}")
    if k is None:
        k = np.zeros(m, p.dtype)
    k = atleast_1d(as_operand(k))
    if k.shape[0] == 1 and m > 1:
        k = broadcast_to(k, (m,))
    if k.shape[0] != m:
        raise ValueError(f"polyint: k must have one constant per order ({m}), got "
                         f"{k.shape[0]}")
    for i in range(m):
        n = p.shape[0]
        p, ki = promote_inexact(p, take_range(k, i, i + 1, 0))
        p = concatenate([p / Array(np.arange(n, 0, -1).astype(p.dtype)), ki], 0)
    return p


def polydiv(u: Any, v: ArrayLike, *, trim_leading_zeros: bool = False) -> Any:
    """(quotient, remainder) of u / v by long division. The remainder keeps u's length
    (JAX's static shape) unless trim_leading_zeros, which drops its leading zeros as
    numpy does (concrete values only)."""
    u, v = promote_inexact(_coefficients("polydiv", u), _coefficients("polydiv", v))
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1 / reshape(take_range(v, 0, 1, 0), ())
    r = [reshape(take_range(u, i, i + 1, 0), ()) for i in range(m + 1)]
    vs = [reshape(take_range(v, i, i + 1, 0), ()) for i in range(n + 1)]
    q = []
    for k in range(max(m - n + 1, 0)):
        d = scale * r[k]
        q.append(d)
        for j in range(n + 1):
            r[k + j] = r[k + j] - d * vs[j]
    quotient = stack(q) if q else Array(np.zeros(1, u.dtype))
    remainder = stack(r)
    if trim_leading_zeros:
        value = concrete_or_raise(remainder, "polydiv")
        start = 0
        while start < value.shape[0] - 1 and np.allclose(value[start], 0, rtol=1e-14):
            start += 1
        remainder = take_range(remainder, start, value.shape[0], 0)
    return quotient, remainder


def polyfit(x: ArrayLike, y: ArrayLike, deg: Any, rcond: Any = None, full: bool = False,
            w: ArrayLike | None = None, cov: bool = False) -> Any:
    """The least-squares polynomial of degree deg through (x, y) (numpy's column
    scaling of the Vandermonde matrix, optional weights w); full=True adds
    (residuals, rank, singular values, rcond), cov=True the coefficients' covariance."""
    x, y = promote_inexact(x, y)
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError(f"polyfit: deg must be non-negative, got {deg}")
    if x.ndim != 1 or y.ndim not in (1, 2) or x.shape[0] != y.shape[0]:
        raise ShapeError(f"polyfit: x must be 1-d and y 1-d or 2-d of x's length, got "
                         f"shapes {tuple(x.shape)} and {tuple(y.shape)}")
    order = deg + 1
    if rcond is None:
        rcond = x.shape[0] * float(np.finfo(x.dtype).eps)
    lhs, rhs = vander(x, order), y
    if w is not None:
        w, = promote_inexact(w)
        lhs = lhs * expand_dims(w, 1)
        rhs = rhs * (expand_dims(w, 1) if rhs.ndim == 2 else w)
    scale = sqrt(_sum(lhs * lhs, 0))
    lhs = lhs / scale
    c, residuals, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, residuals, rank, s, rcond
    if cov:
        base = linalg.inv(dot(lhs.T, lhs)) / outer(scale, scale)
        if cov == "unscaled":
            factor = 1.0
        else:
            if x.shape[0] <= order:
                raise ValueError("polyfit: the data need more points than the order of "
                                 "the fit to scale the covariance")
            factor = residuals / (x.shape[0] - order)
        if c.ndim == 1:
            return c, base * factor
        return c, expand_dims(base, -1) * factor
    return c


def poly(seq_of_zeros: Any) -> Array:
    """The monic polynomial with the given roots (of a square matrix: its eigenvalues,
    the characteristic polynomial, real for a real matrix)."""
    z = atleast_1d(as_operand(seq_of_zeros))
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] > 0:
        matrix_is_real = z.dtype.kind != "c"
        z = linalg.eigvals(z)
        out = poly(z)
        return real(out) if matrix_is_real else out
    if z.ndim != 1:
        raise ValueError(f"poly: input must be 1-d or a square 2-d array, got shape "
                         f"{tuple(z.shape)}")
    z, = promote_inexact(z)
    a = Array(np.ones(1, z.dtype))
    for i in range(z.shape[0]):
        a = convolve(a, concatenate([Array(np.ones(1, z.dtype)),
                                     -take_range(z, i, i + 1, 0)], 0))
    return a


def roots(p: ArrayLike, *, strip_zeros: bool = True) -> Any:
    """The roots of p, the eigenvalues of its companion matrix (complex). numpy's
    stripping of leading zeros and its zero roots for trailing zeros need concrete
    coefficients (strip_zeros=False skips them: p[0] must then be non-zero)."""
    p, = promote_inexact(_coefficients("roots", p))
    zero_roots = 0
    if strip_zeros:
        value = concrete_or_raise(p, "roots")
        nonzero = np.flatnonzero(value)
        if nonzero.size == 0:
            return linalg.eigvals(Array(np.zeros((0, 0), p.dtype)))
        zero_roots = value.shape[0] - 1 - int(nonzero[-1])
        p = take_range(p, int(nonzero[0]), int(nonzero[-1]) + 1, 0)
    n = p.shape[0] - 1
    if n < 1:
        found = linalg.eigvals(Array(np.zeros((0, 0), p.dtype)))
    else:
        head = reshape(take_range(p, 0, 1, 0), ())
        first_row = -take_range(p, 1, n + 1, 0) / head
        below = Array(np.eye(n - 1, n, dtype=p.dtype))
        companion = concatenate([reshape(first_row, (1, n)), below], 0)
        found = linalg.eigvals(companion)
    if zero_roots:
        found = concatenate([found, zeros(zero_roots, found.dtype)], 0)
    return found
