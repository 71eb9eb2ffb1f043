"""dot_general: contraction over paired axes with batch axes, the one primitive
behind dot, matmul, tensordot, einsum and inner/outer products.

Output axes are ordered (batch..., lhs free..., rhs free...), as in XLA. The VJP
for each operand is another dot_general of the cotangent with the other operand,
followed by a transpose back to the operand's axis order.
"""

from typing import Any

import numpy as np

from ..core import Primitive
from ..dtypes import bfloat16
from ..abstract import ShapedArray, check_same_dtype
from ..program import Equation
from ..errors import ShapeError
from ..typing import Array
from . import shape as S
from ._rules import add_tangents, batched_axes
from ..kernels.cpu import matmul as matmul_kernels
from ..kernels.cpu import loop_linalg


def _free(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _shape_rule(lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    dtype = check_same_dtype("dot_general", [lhs, rhs])
    ok = (len(lc) == len(rc) and len(lb) == len(rb)
          and all(0 <= d < lhs.ndim for d in lc + lb) and all(0 <= d < rhs.ndim for d in rc + rb)
          and all(lhs.shape[a] == rhs.shape[b] for a, b in zip(lc + lb, rc + rb))
          and len(set(lc + lb)) == len(lc + lb) and len(set(rc + rb)) == len(rc + rb))
    if not ok:
        raise ShapeError(
            f"dot_general: shapes {tuple(lhs.shape)} and {tuple(rhs.shape)} do not match "
            f"for contracting dimensions {tuple(lc)}/{tuple(rc)} and batch dimensions "
            f"{tuple(lb)}/{tuple(rb)}")
    shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in _free(lhs.ndim, lc, lb)]
             + [rhs.shape[d] for d in _free(rhs.ndim, rc, rb)])
    return ShapedArray(shape, dtype)


_NARROW = (np.dtype(np.float16), np.dtype(bfloat16))


def _impl(lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    if lhs.dtype in _NARROW:
        # 16-bit floats through float32 BLAS (accumulating there), rounded once
        return _impl(lhs.astype(np.float32), rhs.astype(np.float32),
                     dimension_numbers).astype(lhs.dtype)
    if not lb and lhs.ndim <= 2 and rhs.ndim <= 2 and len(lc) == 1:
        # Matrix and vector products: np.dot on (transposed) views, straight to BLAS.
        a = lhs if lc[0] == lhs.ndim - 1 else lhs.T
        b = rhs if rc[0] == 0 else rhs.T
        return np.dot(a, b)
    return matmul_kernels.dot_general(lhs, rhs, lc, rc, lb, rb)


def _jvp(primals, tangents, dimension_numbers):
    lhs, rhs = primals
    t_lhs, t_rhs = tangents
    out = dot_general(lhs, rhs, dimension_numbers)
    return out, add_tangents(
        None if t_lhs is None else dot_general(t_lhs, rhs, dimension_numbers),
        None if t_rhs is None else dot_general(lhs, t_rhs, dimension_numbers))


def _transpose_operand(g, other, x_ndim, x_contract, x_batch, o_contract, o_batch):
    """Cotangent of operand x from g and the other operand: contract g's axes that
    came from `other`'s free axes with those axes, batch over the batch axes.

    Of the two operand orders, g first or other first, the one whose result already
    has x's axis order is used, so the cotangent comes out contiguous rather than as
    a transposed view (a weight gradient x^T g, not (g^T x)^T)."""
    nb = len(x_batch)
    x_free = _free(x_ndim, x_contract, x_batch)
    o_free = _free(other.ndim, o_contract, o_batch)
    g_other_axes = tuple(range(nb + len(x_free), nb + len(x_free) + len(o_free)))
    batch = tuple(range(nb))
    # Where each of x's axes lands: batch first, then the free axes of whichever
    # operand comes first; other's remaining axes are its contracting ones, in order.
    rank_in_other = {od: k for k, od in enumerate(sorted(o_contract))}
    from_other = {xd: rank_in_other[od] for xd, od in zip(x_contract, o_contract)}

    def permutation(g_first):
        position = {d: i for i, d in enumerate(x_batch)}
        offset_free = nb if g_first else nb + len(x_contract)
        offset_other = nb + len(x_free) if g_first else nb
        for j, d in enumerate(x_free):
            position[d] = offset_free + j
        for xd, k in from_other.items():
            position[xd] = offset_other + k
        return tuple(position[d] for d in range(x_ndim))

    identity = tuple(range(x_ndim))
    if permutation(True) == identity or permutation(False) != identity:
        ct = dot_general(g, other, ((g_other_axes, tuple(o_free)), (batch, tuple(o_batch))))
        perm = permutation(True)
    else:
        ct = dot_general(other, g, ((tuple(o_free), g_other_axes), (tuple(o_batch), batch)))
        perm = permutation(False)
    return S.transpose(ct, perm) if perm != identity else ct


def _vjp(g, out, lhs, rhs, dimension_numbers, needed=(True, True)):
    (lc, rc), (lb, rb) = dimension_numbers
    ct_lhs = _transpose_operand(g, rhs, lhs.ndim, lc, lb, rc, rb) if needed[0] else None
    if not needed[1]:       # e.g. x @ W with W a constant: skip W's (outer-product) cotangent
        return ct_lhs, None
    # For rhs, g's axes are (batch, lhs free, rhs free): swap the roles by moving the
    # rhs free axes ahead of the lhs free ones.
    nb, nlf = len(lb), len(_free(lhs.ndim, lc, lb))
    nrf = g.ndim - nb - nlf
    g_swapped = S.transpose(g, tuple(range(nb)) + tuple(range(nb + nlf, nb + nlf + nrf))
                            + tuple(range(nb, nb + nlf)))
    ct_rhs = _transpose_operand(g_swapped, lhs, rhs.ndim, rc, rb, lc, lb)
    return ct_lhs, ct_rhs


def _batch(args, batch_dims, dimension_numbers):
    """Both operands batched: the batch axes pair up as one more dot_general batch
    dimension (leading in the output). One batched: its batch axis is just one more
    free axis, found in the output among that operand's free axes."""
    lhs, rhs = args
    ld, rd = batch_dims
    (lc, rc), (lb, rb) = dimension_numbers
    if ld is not None:
        lc, lb = batched_axes(lc, ld), batched_axes(lb, ld)
    if rd is not None:
        rc, rb = batched_axes(rc, rd), batched_axes(rb, rd)
    if ld is not None and rd is not None:
        return dot_general(lhs, rhs, ((lc, rc), ((ld,) + lb, (rd,) + rb))), 0
    if ld is not None:
        out_d = len(lb) + _free(lhs.ndim, lc, lb).index(ld)
    else:
        out_d = (len(lb) + len(_free(lhs.ndim, lc, lb))
                 + _free(rhs.ndim, rc, rb).index(rd))
    return dot_general(lhs, rhs, ((lc, rc), (lb, rb))), out_d


def _numba_source(args, in_avals, out, dimension_numbers):
    """Matrix and vector products in the loop compiler's Numba code: BLAS's gemm
    (numpy's own BLAS, transposed views passed as flags, not copied) for float32 and
    float64, else fnad's own matmul loops (fnad/kernels/cpu/loop_linalg.py)."""
    (lc, rc), (lb, rb) = dimension_numbers
    if lb or len(lc) != 1 or not out.shape or max(a.ndim for a in in_avals) > 2:
        return None
    (a, b), (la, ra) = args, in_avals
    lhs = a if la.ndim == 1 or lc[0] == 1 else f"{a}.T"
    rhs = b if ra.ndim == 1 or rc[0] == 0 else f"{b}.T"
    if la.dtype == ra.dtype == out.dtype and out.dtype in loop_linalg.BLAS_DTYPES:
        gemm = f"loop_linalg.gemm_{out.dtype.name.replace('float', 'f')}"
        if la.ndim == 1:
            return f"{gemm}({lhs}[np.newaxis, :], {rhs})[0]"
        if ra.ndim == 1:
            return f"{gemm}({lhs}, {rhs}[:, np.newaxis])[:, 0]"
        return f"{gemm}({lhs}, {rhs})"
    product = {(2, 2): "mm", (2, 1): "mv", (1, 2): "vm"}[(la.ndim, ra.ndim)]
    return f"loop_linalg.{product}({lhs}, {rhs})"


def _fold_transposes(e, producer_of):
    """dot_general of a transposed operand -> dot_general of the operand itself, with
    the dimension numbers mapped through the permutation, when the operand's free axes
    keep their order (the result's axis order is unchanged). The kernel reads any
    strided layout, so the transpose need never exist."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    inputs, dims, changed = list(e.inputs), [[lc, lb], [rc, rb]], False
    for k in (0, 1):
        p = producer_of(inputs[k])
        if p is None or p.prim is not S.transpose_p:
            continue
        perm = p.params["permutation"]
        contract, batch = dims[k]
        free = [perm[d] for d in _free(len(perm), contract, batch)]
        if free != sorted(free):
            continue
        inputs[k] = p.inputs[0]
        dims[k] = [tuple(perm[d] for d in contract), tuple(perm[d] for d in batch)]
        changed = True
    if not changed:
        return None
    (lc, lb), (rc, rb) = dims
    return Equation(e.prim, inputs, e.outputs, {**e.params,
                                                "dimension_numbers": ((lc, rc), (lb, rb))})


# The ONNX lowering: MatMul where the dimension numbers are matmul's, else Einsum.
def _onnx_dot_general(b, lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    nl, nr = b.aval(lhs).ndim, b.aval(rhs).ndim
    nb = len(lb)
    leading = tuple(range(nb))
    if tuple(lb) == leading and tuple(rb) == leading and len(lc) == 1 and \
            lc[0] == nl - 1 and nl >= nb + 1 and nr in (nb + 1, nb + 2) and \
            rc[0] == nb and (nb == 0 or nl == nb + 2):
        return b.op("MatMul", lhs, rhs)
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lsub = [None] * nl
    rsub = [None] * nr
    batch = []
    for i, j in zip(lb, rb):
        lsub[i] = rsub[j] = next(letters)
        batch.append(lsub[i])
    for i, j in zip(lc, rc):
        lsub[i] = rsub[j] = next(letters)
    lfree = [lsub.__setitem__(i, next(letters)) or lsub[i]
             for i in range(nl) if lsub[i] is None]
    rfree = [rsub.__setitem__(i, next(letters)) or rsub[i]
             for i in range(nr) if rsub[i] is None]
    eq = f"{''.join(lsub)},{''.join(rsub)}->{''.join(batch + lfree + rfree)}"
    return b.op("Einsum", lhs, rhs, equation=eq)


dot_general_p = Primitive("dot_general", abstract_eval=_shape_rule, impl=_impl, jvp=_jvp,
                          vjp=_vjp, batch=_batch, numba_source=_numba_source,
                          selective_vjp=True, simplify=_fold_transposes, onnx=_onnx_dot_general,
                          # autocast runs matrix products in its low-precision dtype
                          precision="low",
                          # 16-bit floats through float32 BLAS, rounded once (_impl)
                          on_16bit="float32")


def dot_general(lhs: Array | np.ndarray, rhs: Array | np.ndarray,
                dimension_numbers: Any) -> Array:
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(d) for d in lc), tuple(int(d) for d in rc)),
          (tuple(int(d) for d in lb), tuple(int(d) for d in rb)))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dn)
