"""dot_general on the CPU: every contraction becomes one (stacked) GEMM that BLAS reads
in place.

An operand's axes fall in three groups: batch (paired with the other operand's),
free, and contracting. Each group is merged into one axis when the operand's strides
allow it (consecutive axes whose strides nest: stride[i] == stride[i+1] * size[i+1]),
which gives a strided (batch..., M, K) view without copying; numpy's dot/matmul then
passes a view whose rows or columns are unit-stride to BLAS with the transpose flag
and leading dimension it needs. A leading stack that is not a batch axis therefore
lands in M (x @ W with x (B, S, K) is one (B*S, K) GEMM), a transposed operand is a
transposed-contiguous view, and a slice of a wider array (q, k, v cut from one fused
projection) is read with the wide array's leading dimension. Only an operand whose
axes cannot be merged, or whose merged view has no unit-stride axis, is copied.

Batch axes stay separate axes of the stacked view (they need not merge), and
np.matmul runs one BLAS GEMM per stacked matrix.
"""
import math

import numpy as np


def dot_general(lhs, rhs, lc, rc, lb, rb):
    """The contraction of lhs and rhs over the paired axes (lc, rc), batched over the
    paired axes (lb, rb); result axes (batch..., lhs free..., rhs free...)."""
    lf = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    out_shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in lf]
                 + [rhs.shape[d] for d in rf])
    if math.prod(out_shape) == 0 or math.prod(lhs.shape[d] for d in lc) == 0:
        # empty result, or an empty sum (zeros, as numpy's matmul gives)
        return np.zeros(out_shape, np.result_type(lhs, rhs))
    a = _stacked_matrix(lhs, lb, lf, lc)
    b = _stacked_matrix(rhs, rb, rc, rf)
    if a.shape[-1] == 1:
        # Outer products: a broadcast multiply beats a GEMM with K = 1. A GEMM sums
        # from a +0.0 accumulator, so numpy's matmul gives +0.0 for a -0.0 product:
        # adding 0.0 does the same here.
        out = a * b
        if out.dtype.kind in "fc":
            out += 0
    elif a.ndim == 2:
        out = np.dot(a, b)
    else:
        out = np.matmul(a, b)
    return out.reshape(out_shape)


def _stacked_matrix(x, batch, rows, cols):
    """x as a (batch..., prod(rows), prod(cols)) array: a view of x when the row and the
    column axes each merge into one axis (numpy's reshape without copy, which succeeds
    exactly when their strides nest) and BLAS can read the merged matrix, else a
    contiguous copy."""
    perm = list(batch) + list(rows) + list(cols)
    t = x.transpose(perm) if perm != list(range(x.ndim)) else x
    shape = tuple(x.shape[d] for d in batch) + (math.prod(x.shape[d] for d in rows),
                                               math.prod(x.shape[d] for d in cols))
    try:
        view = t.reshape(shape, copy=False)
    except ValueError:
        view = None
    if view is not None and _blas_readable(view):
        return view
    return np.ascontiguousarray(t).reshape(shape)


def _blas_readable(m):
    """Whether the trailing matrix of m is row- or column-major with a leading
    dimension BLAS accepts (numpy's dot and matmul copy or loop slowly otherwise)."""
    item = m.itemsize
    (rows, cols), (s_row, s_col) = m.shape[-2:], m.strides[-2:]

    def major(s_unit, n_unit, s_lead, n_lead):
        return (s_unit == item or n_unit == 1) and (
            n_lead == 1 or (s_lead % item == 0 and s_lead >= max(n_unit, 1) * item))
    return major(s_col, cols, s_row, rows) or major(s_row, rows, s_col, cols)
