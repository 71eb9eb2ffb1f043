"""Reductions over axes (sum, max, min, prod, argmax, argmin) and cumulative ops
along one axis (cumsum, cumprod, cummax, cummin). reduce_sum, which every family's
cotangents use, is declared in structural.py and imported here."""
import math
from typing import Sequence

import numpy as np

from ..dtypes import bfloat16, kind_of as dtype_kind, moment_dtype
from ..abstract import ShapedArray
from ..core import Primitive
from ..typing import Array
from ..errors import ShapeError, DTypeError
from ._rules import axes_reduction, check_axes
from . import shape as S
from ..kernels.cpu.elementwise import real_operands
from .elementwise import select_p, convert_element_type_p, eq_p
# reduce_sum is declared with the kit every rule uses, below every family; it belongs
# to this family's namespace all the same.
from .structural import reduce_sum_p, reduce_sum, expand_to  # noqa: F401
from . import onnx_rules as onnx


def keepdims_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _as(mask, like):
    return convert_element_type_p.bind(mask, new_dtype=like.dtype)


def _along_axis(name, *, reduces, **slots):
    """A primitive along one `axis` param, which it reduces (argmax) or keeps (cumsum).
    Its vmap rule keeps the batch axis where it is and renumbers `axis` around it."""
    def batch(args, batch_dims, axis, **params):
        (x,), (d,) = args, batch_dims
        out = prim.bind(x, axis=axis + (axis >= d), **params)
        return out, d - (reduces and axis < d)

    prim = Primitive(name, batch=batch, **slots)
    return prim


# --------------------------------------------------------------------------- max, min

def _extremum(name, impl, reduction, onnx=None):
    # Ties share the derivative equally, so the rule is symmetric and exact where
    # the extremum is unique.
    def weights(x, out, axes):
        mask = _as(eq_p.bind(x, expand_to(out, x.shape, axes)), x)
        return mask / expand_to(reduce_sum(mask, axes), x.shape, axes)

    def jvp(primals, tangents, axes):
        x, = primals
        out = prim.bind(x, axes=axes)
        return out, reduce_sum(tangents[0] * weights(x, out, axes), axes)

    def vjp(g, out, x, axes):
        return (expand_to(g, x.shape, axes) * weights(x, out, axes),)

    def checked_impl(x, axes):
        real_operands(x)        # numpy orders complex numbers; the kernels do not
        if x.size == 0 and any(x.shape[a] == 0 for a in axes):
            raise ShapeError(f"{name} of an empty axis has no identity "
                             f"(operand shape {x.shape}, axes {axes})")
        return impl(x, axis=axes)

    prim = axes_reduction(name, kinds="biuf", impl=checked_impl, jvp=jvp, vjp=vjp,
                          reduction=reduction, onnx=onnx)
    return prim


def _lowest(dtype):
    k = dtype_kind(dtype)
    return -np.inf if k == "f" else (np.iinfo(dtype).min if k in "iu" else False)


def _highest(dtype):
    k = dtype_kind(dtype)
    return np.inf if k == "f" else (np.iinfo(dtype).max if k in "iu" else True)


# NaN wins, as in numpy (Python's max and min in compiled code keep whichever operand
# comes first: max(1.0, nan) is 1.0): a NaN x fails every comparison and is taken, a
# NaN acc (only NaN differs from itself) is kept. Ties take x, as numpy's maximum does
# (np.max([0.0, -0.0]) is -0.0). Written as selects on the loop-carried accumulator:
# the branches of a helper function made the compiled max 3x slower than Python's.
reduce_max_p = _extremum("reduce_max", np.max, (
    _lowest, "(({x} if not {x} < {acc} else {acc}) if {acc} == {acc} else {acc})",
    lambda dtype: dtype), onnx=onnx.reduction("ReduceMax"))
reduce_min_p = _extremum("reduce_min", np.min, (
    _highest, "(({x} if not {x} > {acc} else {acc}) if {acc} == {acc} else {acc})",
    lambda dtype: dtype), onnx=onnx.reduction("ReduceMin"))


# --------------------------------------------------------------------------- prod

def _product_of_others(x, axes):
    """For each element, the product of the other elements of its reduction group,
    computed without division so zeros are handled exactly."""
    if x.size == 0:
        return x        # no elements, nothing to compute (and the scans below need one)
    kept = [i for i in range(x.ndim) if i not in axes]
    perm = kept + list(axes)
    moved = S.transpose(x, perm)
    lead = moved.shape[:len(kept)]
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    flat = S.reshape(moved, lead + (n,))
    last = len(lead)
    one = np.ones((), x.dtype)
    # others_k = (x_0 ... x_{k-1}) * (x_{k+1} ... x_{n-1}): shifted inclusive scans.
    left = S.pad(S.slice(cumprod(flat, last), (0,) * (last + 1), lead + (max(n - 1, 0),)),
                 one, [(0, 0, 0)] * last + [(1, 0, 0)])
    right = S.pad(S.slice(cumprod(flat, last, reverse=True), (0,) * last + (min(1, n),),
                          lead + (n,)),
                  one, [(0, 0, 0)] * last + [(0, 1, 0)])
    others = S.reshape(left * right, moved.shape)
    return S.transpose(others, tuple(np.argsort(perm)))


def _prod_impl(x, axes):
    # 16-bit floats multiply in float32 and round once (a bfloat16 running product
    # drifts by an ulp per factor), as sums and the GPU's kernel do
    return np.multiply.reduce(x, axis=axes, dtype=moment_dtype(x.dtype)).astype(
        x.dtype, copy=False)


reduce_prod_p = axes_reduction(
    "reduce_prod",
    impl=_prod_impl,
    jvp=lambda primals, tangents, axes: (
        reduce_prod(primals[0], axes),
        reduce_sum(tangents[0] * _product_of_others(primals[0], axes), axes)),
    vjp=lambda g, out, x, axes: (expand_to(g, x.shape, axes) * _product_of_others(x, axes),),
    onnx=onnx.reduction("ReduceProd"),
    precision="float32")


def reduce_prod(x: Array | np.ndarray, axes: Sequence[int]) -> Array:
    return reduce_prod_p.bind(x, axes=tuple(axes))


# --------------------------------------------------------------------------- argmax, argmin

def _arg_shape(name):
    def abstract_eval(x, axis, index_dtype):
        check_axes(name, x, (axis,))
        if dtype_kind(x.dtype) == "c":
            raise DTypeError(f"{name} does not accept dtype {x.dtype} (operand {x})")
        if x.shape[axis] == 0:
            raise ShapeError(f"{name} of an empty axis (operand shape {tuple(x.shape)})")
        return ShapedArray(tuple(n for i, n in enumerate(x.shape) if i != axis), index_dtype)
    return abstract_eval


def _arg_reduction(name, impl, onnx=None):
    prim = _along_axis(
        name, reduces=True, abstract_eval=_arg_shape(name),
        impl=lambda x, axis, index_dtype: (real_operands(x)
                                           or impl(x, axis=axis).astype(index_dtype)),
        jvp=lambda primals, tangents, **params: (prim.bind(*primals, **params), None),
        vjp=lambda g, out, x, **params: (None,), onnx=onnx)
    return prim


argmax_p = _arg_reduction("argmax", np.argmax, onnx=onnx.arg_reduction("ArgMax"))
argmin_p = _arg_reduction("argmin", np.argmin, onnx=onnx.arg_reduction("ArgMin"))


# --------------------------------------------------------------------------- cumulative

def _numba_running(name):
    """The loop compiler's Numba code (fnad/backends/cpu/loops.py) for a running
    reduction: the operand as (before, n, after), run along the middle axis."""
    def source(args, in_avals, out, axis, reverse):
        shape = tuple(out.shape)
        if not shape or dtype_kind(out.dtype) not in "biufc":
            return None
        view = (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]))
        return (f"loop_arrays.{name}(np.ascontiguousarray({args[0]}).reshape({view!r}), "
                f"{bool(reverse)}).reshape({shape!r})")
    return source


def _cumulative_shape(name, kinds="biufc"):
    def abstract_eval(x, axis, reverse):
        check_axes(name, x, (axis,))
        if dtype_kind(x.dtype) not in kinds:
            raise DTypeError(f"{name} does not accept dtype {x.dtype}")
        return ShapedArray(x.shape, x.dtype)
    return abstract_eval


def _along(impl):
    # dtype: numpy widens small integers in cumsum/cumprod; the primitive keeps the
    # operand's dtype, as its shape rule (and the compiled and GPU kernels) say.
    # 16-bit floats accumulate in float32, each output rounded once (a float16 or
    # bfloat16 running sum drifts by an ulp per step), as the fused loops do.
    def run(x, axis, reverse):
        acc = np.float32 if x.dtype == np.float16 or x.dtype == bfloat16 else x.dtype
        if reverse:
            out = np.flip(impl(np.flip(x, axis), axis=axis, dtype=acc), axis)
        else:
            out = impl(x, axis=axis, dtype=acc)
        return out.astype(x.dtype, copy=False)
    return run


def _pairwise(x, axis, reverse):
    """Move `axis` last and return (moved x, masks) where upto[..., k, i] says that
    output i of the scan includes input k."""
    n = x.shape[axis]
    moved = S.transpose(x, [i for i in range(x.ndim) if i != axis] + [axis])
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    upto = (k >= i) if reverse else (k <= i)
    return moved, upto, np.eye(n, dtype=bool)


def _restore_axis(y, axis):
    perm = list(range(y.ndim - 1))
    perm.insert(axis, y.ndim - 1)
    return S.transpose(y, perm)


def _cumprod_partials(x, axis, reverse):
    """D[..., k, i] = d out_i / d x_k = prod over the scan up to i, skipping k."""
    moved, upto, diagonal = _pairwise(x, axis, reverse)
    n = moved.shape[-1]
    rows = S.broadcast_in_dim(moved, moved.shape[:-1] + (n, n),
                              tuple(range(moved.ndim - 1)) + (moved.ndim,))
    one = np.ones((), x.dtype)
    skipped = select_p.bind(diagonal, one, rows)
    scanned = cumprod(skipped, moved.ndim, reverse)
    return select_p.bind(upto, scanned, np.zeros((), x.dtype))


def _cumprod_jvp(primals, tangents, axis, reverse):
    x, = primals
    moved_t = _pairwise(tangents[0], axis, reverse)[0]
    d = _cumprod_partials(x, axis, reverse)
    t_out = reduce_sum(S.expand_dims(moved_t, (moved_t.ndim,)) * d, (moved_t.ndim - 1,))
    return cumprod(x, axis, reverse), _restore_axis(t_out, axis)


def _cumprod_vjp(g, out, x, axis, reverse):
    moved_g = _pairwise(g, axis, reverse)[0]
    d = _cumprod_partials(x, axis, reverse)
    ct = reduce_sum(S.expand_dims(moved_g, (moved_g.ndim - 1,)) * d, (moved_g.ndim,))
    return (_restore_axis(ct, axis),)


def _extremum_source(x, out, axis, reverse):
    """one_hot[..., k, i]: output i of the running max/min is input k (the latest
    position, in scan order, where the running value was attained)."""
    moved, upto, _ = _pairwise(x, axis, reverse)
    moved_out = _pairwise(out, axis, reverse)[0]
    n = moved.shape[-1]
    position = np.arange(n) if not reverse else np.arange(n)[::-1].copy()
    hit = eq_p.bind(moved, moved_out)
    ranked = select_p.bind(hit, position.astype(np.int64), np.zeros((), np.int64))
    latest = cummax(ranked, moved.ndim - 1, reverse)
    if reverse:
        latest = (n - 1) - latest
    source = eq_p.bind(S.expand_dims(latest, (latest.ndim - 1,)),
                       np.arange(n)[:, None].astype(np.int64))
    return _as(source, x)


def _cum_extremum(name, ufunc, onnx=None):
    def jvp(primals, tangents, axis, reverse):
        x, = primals
        out = prim.bind(x, axis=axis, reverse=reverse)
        moved_t = _pairwise(tangents[0], axis, reverse)[0]
        one_hot = _extremum_source(x, out, axis, reverse)
        t_out = reduce_sum(S.expand_dims(moved_t, (moved_t.ndim,)) * one_hot,
                           (moved_t.ndim - 1,))
        return out, _restore_axis(t_out, axis)

    def vjp(g, out, x, axis, reverse):
        moved_g = _pairwise(g, axis, reverse)[0]
        one_hot = _extremum_source(x, out, axis, reverse)
        ct = reduce_sum(S.expand_dims(moved_g, (moved_g.ndim - 1,)) * one_hot,
                        (moved_g.ndim,))
        return (_restore_axis(ct, axis),)

    def impl(x, axis, reverse):
        real_operands(x)
        return _along(ufunc.accumulate)(x, axis, reverse)

    prim = _along_axis(name, reduces=False, abstract_eval=_cumulative_shape(name, "biuf"),
                       impl=impl, jvp=jvp, vjp=vjp, onnx=onnx,
                       numba_source=_numba_running(name))
    return prim


cumsum_p = _along_axis(
    "cumsum", reduces=False, abstract_eval=_cumulative_shape("cumsum"),
    impl=_along(np.cumsum),
    jvp=lambda primals, tangents, axis, reverse: (cumsum(primals[0], axis, reverse),
                                                  cumsum(tangents[0], axis, reverse)),
    vjp=lambda g, out, x, axis, reverse: (cumsum(g, axis, not reverse),), onnx=onnx.cumsum,
    numba_source=_numba_running("cumsum"),
    precision="float32")
cumprod_p = _along_axis("cumprod", reduces=False, abstract_eval=_cumulative_shape("cumprod"),
                        impl=_along(np.cumprod), jvp=_cumprod_jvp, vjp=_cumprod_vjp,
                        numba_source=_numba_running("cumprod"),
                        precision="float32", onnx=onnx.cumprod)
cummax_p = _cum_extremum("cummax", np.maximum, onnx=onnx.cummax)
cummin_p = _cum_extremum("cummin", np.minimum, onnx=onnx.cummin)


def cumsum(x: Array | np.ndarray, axis: int, reverse: bool = False) -> Array:
    return cumsum_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cumprod(x: Array | np.ndarray, axis: int, reverse: bool = False) -> Array:
    return cumprod_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cummax(x: Array | np.ndarray, axis: int, reverse: bool = False) -> Array:
    return cummax_p.bind(x, axis=int(axis), reverse=bool(reverse))


def cummin(x: Array | np.ndarray, axis: int, reverse: bool = False) -> Array:
    return cummin_p.bind(x, axis=int(axis), reverse=bool(reverse))
