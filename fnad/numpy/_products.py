"""Products and contractions, all over dot_general."""
import enum
from typing import Any, Sequence

import numpy as np

from ..errors import DTypeError, ShapeError
from ..primitives import shape as S
from ..primitives import dot as _dot
from ._core import as_operand, astype, promote
from ._shapes import (broadcast_arrays, concatenate, reshape, moveaxis,
                      take_range, ravel)
from ._reductions import sum as _sum
from ._complex import conj
from ..typing import Array, ArrayLike, DTypeLike

# what fnad.numpy exports from here (Precision and preferred_operands serve lax and einsum)
__all__ = ["matmul", "dot", "tensordot", "vdot", "inner", "outer", "diagonal", "trace",
           "diag", "kron", "cross", "dot_general"]


def dot_general(lhs: ArrayLike, rhs: ArrayLike, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: DTypeLike | None = None) -> Array:
    """The general tensor contraction (lax.dot_general): dimension_numbers =
    ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch));
    `preferred_element_type` converts the operands first, so the product accumulates in,
    and returns, that dtype."""
    lhs, rhs = preferred_operands(as_operand(lhs), as_operand(rhs), precision,
                                  preferred_element_type, "dot_general")
    return _dot.dot_general(lhs, rhs, dimension_numbers)


def _promoted(a: Any, b: Any) -> tuple[Array, Array]:
    a, b = promote(a, b)
    return a, b


class Precision(enum.Enum):
    """How precisely a product is computed (JAX's lax.Precision). On accelerators JAX
    may multiply float32 in bfloat16 or tensorfloat32 passes; fnad's kernels always
    multiply in the operands' own dtype, so every setting gives HIGHEST's numbers. The
    settings are accepted and checked, so JAX code runs unchanged."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def check(cls, precision, what):
        """Validate a `precision=` argument: None, a Precision, one of its names (or
        JAX's aliases), or a pair of those (one per operand)."""
        names = {"default", "high", "highest", "fastest", "bfloat16", "tensorfloat32",
                 "float32"}
        items = precision if isinstance(precision, (tuple, list)) else (precision,)
        if isinstance(precision, (tuple, list)) and len(items) != 2:
            raise ValueError(f"{what}: precision pairs must have 2 entries, got {precision!r}")
        for p in items:
            if not (p is None or isinstance(p, cls) or
                    (isinstance(p, str) and p.lower() in names)):
                raise ValueError(f"{what}: precision={precision!r} is not a lax.Precision, "
                                 f"one of {sorted(names)}, or a pair of them")


def preferred_operands(a: Array, b: Array, precision: Any,
                       preferred_element_type: DTypeLike | None, what: str) -> tuple[Array, Array]:
    """(a, b) converted to `preferred_element_type`, so the product accumulates and
    returns in it (JAX's meaning: float16 operands with float32 accumulate in float32).
    A type narrower than the operands', or an integer type for floats, is an error:
    it would drop precision the caller has."""
    Precision.check(precision, what)
    if preferred_element_type is None:
        return a, b
    dtype = np.dtype(preferred_element_type)
    for x in (a, b):
        have = np.dtype(x.dtype)
        narrower = (have.kind == dtype.kind and dtype.itemsize < have.itemsize) \
            or (have.kind in "fc" and dtype.kind not in "fc") \
            or (have.kind == "c" and dtype.kind == "f")
        if narrower:
            raise DTypeError(f"{what}: preferred_element_type={dtype.name} is narrower than "
                             f"the operand dtype {have.name} (shape {tuple(x.shape)}); "
                             f"give a type at least as wide, or convert the operands first")
    return astype(a, dtype), astype(b, dtype)


def matmul(a: ArrayLike, b: ArrayLike, *, precision: Any = None,
           preferred_element_type: DTypeLike | None = None) -> Array:
    a, b = preferred_operands(*_promoted(a, b), precision, preferred_element_type, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must not be scalars, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a = reshape(a, (1,) + tuple(a.shape))
    if b_vec:
        b = reshape(b, tuple(b.shape) + (1,))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} are not "
                         f"aligned: {a.shape[-1]} (last axis of the first) != "
                         f"{b.shape[-2]} (second-to-last axis of the second)")
    out = _stacked_matmul(a, b)
    if a_vec:
        out = reshape(out, tuple(out.shape[:-2]) + (out.shape[-1],))
    if b_vec:
        out = reshape(out, tuple(out.shape[:-1]))
    return out


def _stacked_matmul(a, b):
    """matmul of (..., M, K) and (..., K, N) stacks as one dot_general, without
    broadcasting either operand: a stack axis both operands have (same size) is a batch
    axis; one only an operand has (the other lacks it or has size 1) is a free axis of
    that operand, so `x @ W` with x (B, S, K) is one (B*S, K) x (K, N) GEMM and W's
    gradient one contraction over (B, S), not B products summed afterwards."""
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    nb = len(batch)
    pad_a, pad_b = nb - (a.ndim - 2), nb - (b.ndim - 2)
    # labels of each operand's kept axes: a stack position i, or "m"/"k"/"n"
    a_labels, b_labels, a_keep, b_keep, shared = [], [], [], [], []
    for i in range(nb):
        sa = a.shape[i - pad_a] if i >= pad_a else None
        sb = b.shape[i - pad_b] if i >= pad_b else None
        if sa is not None and sa == sb:
            shared.append(i)
        in_a = sa is not None and (sa == sb or sb is None or sb == 1)
        in_b = sb is not None and (sa == sb or not in_a)
        if sa is not None:
            a_keep.append(in_a)
            if in_a:
                a_labels.append(i)
        if sb is not None:
            b_keep.append(in_b)
            if in_b:
                b_labels.append(i)
    a = _squeezed(a, a_keep)
    b = _squeezed(b, b_keep)
    a_labels += ["m", "k"]
    b_labels += ["k", "n"]
    dims = (((a_labels.index("k"),), (b_labels.index("k"),)),
            (tuple(a_labels.index(i) for i in shared), tuple(b_labels.index(i) for i in shared)))
    out = _dot.dot_general(a, b, dims)
    out_labels = shared + [x for x in a_labels if x not in shared and x != "k"] \
        + [x for x in b_labels if x not in shared and x != "k"]
    perm = tuple(out_labels.index(x) for x in list(range(nb)) + ["m", "n"])
    return S.transpose(out, perm) if perm != tuple(range(len(perm))) else out


def _squeezed(x, keep_stack):
    """x without the size-1 stack axes not kept (keep_stack: one flag per stack axis)."""
    if all(keep_stack):
        return x
    shape = [d for d, k in zip(x.shape, keep_stack) if k] + list(x.shape[-2:])
    return reshape(x, tuple(shape))


def dot(a: ArrayLike, b: ArrayLike, *, precision: Any = None,
        preferred_element_type: DTypeLike | None = None) -> Array:
    a, b = preferred_operands(*_promoted(a, b), precision, preferred_element_type, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim == 1:
        return tensordot(a, b, ((a.ndim - 1,), (0,)))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"dot: shapes {tuple(a.shape)} and {tuple(b.shape)} not aligned: "
                         f"{a.shape[-1]} (last axis) != {b.shape[-2]} (second-to-last axis)")
    return tensordot(a, b, ((a.ndim - 1,), (b.ndim - 2,)))


def tensordot(a: ArrayLike, b: ArrayLike, axes: int | Sequence[Any] = 2, *, precision: Any = None,
              preferred_element_type: DTypeLike | None = None) -> Array:
    a, b = preferred_operands(*_promoted(a, b), precision, preferred_element_type,
                              "tensordot")
    if isinstance(axes, (int, np.integer)):
        axes = (tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes)))
    lhs, rhs = axes
    lhs = (lhs,) if isinstance(lhs, (int, np.integer)) else tuple(lhs)
    rhs = (rhs,) if isinstance(rhs, (int, np.integer)) else tuple(rhs)
    lhs = tuple(d % a.ndim for d in lhs)
    rhs = tuple(d % b.ndim for d in rhs)
    if len(lhs) != len(rhs) or any(a.shape[i] != b.shape[j] for i, j in zip(lhs, rhs)):
        raise ShapeError(f"tensordot: shapes {tuple(a.shape)} and {tuple(b.shape)} do not "
                         f"match along axes {lhs} and {rhs}")
    return _dot.dot_general(a, b, ((lhs, rhs), ((), ())))


def vdot(a: ArrayLike, b: ArrayLike) -> Array:
    return dot(ravel(conj(a)), ravel(b))    # numpy's vdot conjugates its first operand


def inner(a: Any, b: Any) -> Array:
    a, b = _promoted(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ((a.ndim - 1,), (b.ndim - 1,)))


def outer(a: ArrayLike, b: ArrayLike) -> Array:
    a, b = _promoted(ravel(a), ravel(b))
    return _dot.dot_general(reshape(a, (-1, 1)), reshape(b, (1, -1)), (((1,), (0,)), ((), ())))


def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The diagonal as a strided slice of the two axes flattened together."""
    a, = promote(a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = a.shape[-2], a.shape[-1]
    start = offset if offset >= 0 else -offset * m
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    flat = reshape(a, tuple(a.shape[:-2]) + (n * m,))
    if length == 0:
        return take_range(flat, 0, 0, flat.ndim - 1)
    return take_range(flat, start, start + (length - 1) * (m + 1) + 1, flat.ndim - 1, m + 1)


def trace(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1)


def diag(v: ArrayLike, k: int = 0) -> Array:
    v, = promote(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ShapeError(f"diag: input must be 1-d or 2-d, got shape {tuple(v.shape)}")
    n = v.shape[0] + abs(k)
    # Lay v out with n zeros between entries (interior padding), then fold into rows.
    zero = np.zeros((), v.dtype)
    spread = S.pad(v, zero, [(0, 0, n)])
    lead = k if k >= 0 else -k * n
    flat = S.pad(spread, zero, [(lead, n * n - lead - spread.shape[0], 0)])
    return reshape(flat, (n, n))


def kron(a: Any, b: Any) -> Array:
    """The Kronecker product: block (i, j, ...) is a[i, j, ...] * b (the shorter
    shape padded with leading ones)."""
    a, b = _promoted(a, b)
    ndim = max(a.ndim, b.ndim)
    a_shape = (1,) * (ndim - a.ndim) + tuple(a.shape)
    b_shape = (1,) * (ndim - b.ndim) + tuple(b.shape)
    # interleave the axes, (a0, 1, a1, 1, ...) times (1, b0, 1, b1, ...), then merge pairs
    spread_a = reshape(a, tuple(n for m in a_shape for n in (m, 1)))
    spread_b = reshape(b, tuple(n for m in b_shape for n in (1, m)))
    return reshape(spread_a * spread_b, tuple(m * n for m, n in zip(a_shape, b_shape)))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: Any = None) -> Array:
    """The cross product of 3-vectors (or 2-vectors, taken with a zero third part)
    along axisa of a and axisb of b, placed along axisc; two 2-vectors give the
    scalar z part. axis, when given, sets all three."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _promoted(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("cross: operands must be vectors, not scalars")
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for a cross product, got vectors "
                         f"of length {a.shape[-1]} and {b.shape[-1]} (2 or 3 needed)")
    ai = [a[..., i] for i in range(a.shape[-1])]
    bi = [b[..., i] for i in range(b.shape[-1])]
    z = ai[0] * bi[1] - ai[1] * bi[0]
    if len(ai) == 2 and len(bi) == 2:
        return z
    # numpy's formulas for each pairing, so signed zeros land where numpy puts them
    if len(ai) == 2:
        x, y = ai[1] * bi[2], -(ai[0] * bi[2])
    elif len(bi) == 2:
        x, y = -(ai[2] * bi[1]), ai[2] * bi[0]
    else:
        x, y = ai[1] * bi[2] - ai[2] * bi[1], ai[2] * bi[0] - ai[0] * bi[2]
    parts = broadcast_arrays(x, y, z)
    out = concatenate([reshape(p, tuple(p.shape) + (1,)) for p in parts], -1)
    return moveaxis(out, -1, axisc)
