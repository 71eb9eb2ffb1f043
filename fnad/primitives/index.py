"""Indexing primitives: gather, the scatter family, dynamic_slice, dynamic_update_slice.

Addressing, shared by gather and every scatter: `indices` has shape batch + (k,)
with k <= operand.ndim, and the index vector indices[b] names a position in the k
leading axes of the operand:

    gather(operand, indices)[b, ...] = operand[indices[b, 0], ..., indices[b, k-1], ...]
    scatter_<op>(operand, indices, updates): out = a copy of operand, then for each b
        in order, out[indices[b, 0], ..., indices[b, k-1], ...] <op>= updates[b, ...]

so gather's output and scatter's `updates` have shape batch + operand.shape[k:].
fnad.numpy reaches numpy's advanced indexing, take, take_along_axis and `.at[]` by
moving axes around these two primitives.

An index in [-n, 0) counts from the end, as in numpy. Other out-of-range indices
follow `mode`: "clip" clamps them into range; "fill" reads zeros (gather) and drops
the update (scatters). A clip gather transposes to a clip scatter_add and a fill
gather to a dropping one, so the derivatives hold for any index.

With repeated indices, `scatter` (replace) keeps the last update in index order; its
JVP and VJP credit that same update. scatter_min/max share the derivative equally
among the values that attain the extremum (like reduce_max); scatter_mul's
derivatives are exact with repeated indices and zero updates.

dynamic_slice and dynamic_update_slice take one scalar integer start per axis as
positional operands (so they may be traced); a start in [-n, 0) counts from the end
and the slice is then shifted to lie inside the operand, as in JAX.
"""
import math
from typing import Sequence

import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..array import Array
from ..core import Primitive
from ..abstract import ShapedArray
from ..errors import ShapeError, DTypeError
from ..kernels.cpu import index as kernels
from ._rules import instantiate, add_tangents, batch_size
from . import shape as S
from .elementwise import select_p, convert_element_type_p, eq_p, lt_p, add_p, clamp_p
from .structural import move_batch_axis

_MODES = {"clip": "clip", "promise_in_bounds": "clip", "fill": "fill", "drop": "fill"}


def _mode(mode):
    try:
        return _MODES[mode]
    except KeyError:
        raise ValueError(f"unknown index mode {mode!r}; expected 'clip' or 'fill' "
                         f"(alias 'drop')") from None


def _full(shape, value, dtype):
    # A broadcast scalar: no memory until a scatter writes into a copy of it.
    return Array(np.broadcast_to(np.asarray(value, dtype), tuple(shape)))


def _zeros(shape, dtype):
    return _full(shape, 0, dtype)


def _writable_copy(x):
    if x.size > 1 and not any(x.strides):   # a broadcast scalar, e.g. from _zeros
        value = x.flat[0]
        return np.zeros(x.shape, x.dtype) if value == 0 else np.full(x.shape, value)
    return np.array(x, order="C", copy=True)


def _as(mask, like):
    return convert_element_type_p.bind(mask, new_dtype=like.dtype)


# --------------------------------------------------------------------------- batching helpers

def _with_batch_coordinate(indices):
    """Indices (B, batch..., k) -> (B, batch..., 1 + k), the first coordinate b."""
    shape = tuple(indices.shape)
    if np.iinfo(indices.dtype).max < shape[0]:
        indices = convert_element_type_p.bind(indices, new_dtype=np.dtype(np.int64))
    iota = S.iota(indices.dtype, shape[:-1] + (1,), 0)
    return S.concatenate([iota, indices], len(shape) - 1)


# --------------------------------------------------------------------------- shape rules

def _split_indices(name, operand, indices):
    """(batch shape, k) of an index array, checked against the operand."""
    if dtype_kind(indices.dtype) not in "iu":
        raise DTypeError(f"{name}: indices must be integers, got {indices.dtype} "
                         f"{tuple(indices.shape)}")
    if len(indices.shape) < 1 or indices.shape[-1] > len(operand.shape):
        raise ShapeError(f"{name}: indices of shape {tuple(indices.shape)} must have a last "
                         f"axis of length k <= {len(operand.shape)}, the rank of the operand "
                         f"{tuple(operand.shape)}")
    return tuple(indices.shape[:-1]), indices.shape[-1]


def _gather_shape(operand, indices, mode):
    batch, k = _split_indices("gather", operand, indices)
    return ShapedArray(batch + tuple(operand.shape[k:]), operand.dtype)


def _scatter_shape(name, kinds):
    def abstract_eval(operand, indices, updates, mode, unique_indices):
        batch, k = _split_indices(name, operand, indices)
        if operand.dtype != updates.dtype or dtype_kind(operand.dtype) not in kinds:
            raise DTypeError(f"{name} needs operand and updates of one dtype among kinds "
                             f"{kinds!r}, got {operand.dtype} and {updates.dtype}")
        expected = batch + tuple(operand.shape[k:])
        if tuple(updates.shape) != expected:
            raise ShapeError(f"{name}: updates of shape {tuple(updates.shape)} do not fit "
                             f"indices {tuple(indices.shape)} into an operand of shape "
                             f"{tuple(operand.shape)}; expected {expected}")
        return ShapedArray(operand.shape, operand.dtype)
    return abstract_eval


# --------------------------------------------------------------------------- kernels

_KERNEL_INDEX_TYPES = {np.dtype(np.int32).char, np.dtype(np.int64).char}


def _kernel_rows(operand_shape, indices, mode):
    """(row numbers in the operand's table, the kernel mode to read them with)."""
    k = indices.shape[-1]
    dims = np.asarray(operand_shape[:k], np.int64)
    vectors = indices.reshape(math.prod(indices.shape[:-1]), k)
    if vectors.dtype.char not in _KERNEL_INDEX_TYPES:
        vectors = vectors.astype(np.int64)
    if mode == "clip" and vectors.shape[0] and not dims.all():
        raise IndexError(f"cannot index into an axis of size 0 (operand shape "
                         f"{tuple(operand_shape)})")
    kernel_mode = kernels.CLIP if mode == "clip" else kernels.FILL
    if k == 1:
        return vectors[:, 0], kernel_mode
    return kernels.flat_rows(vectors, dims, kernel_mode), kernels.FILL


def _as_table(x, k):
    """x as (rows, row length): the k leading axes flattened, and the rest."""
    return x.reshape(math.prod(x.shape[:k]), math.prod(x.shape[k:]))


def _gather_impl(operand, indices, mode):
    shape = _gather_shape(operand, indices, mode).shape
    rows, kernel_mode = _kernel_rows(operand.shape, indices, mode)
    out = np.empty(shape, operand.dtype)
    kernels.gather_rows(_as_table(operand, indices.shape[-1]), rows, kernel_mode,
                        _as_table(out, indices.ndim - 1))
    return out


def _scatter_impl(name, op, kinds):
    check = _scatter_shape(name, kinds)

    def impl(operand, indices, updates, mode, unique_indices):
        check(operand, indices, updates, mode, unique_indices)
        rows, kernel_mode = _kernel_rows(operand.shape, indices, mode)
        out = _writable_copy(operand)
        kernels.scatter_rows(_as_table(out, indices.shape[-1]), rows, kernel_mode,
                             _as_table(updates, indices.ndim - 1), op)
        return out
    return impl


# --------------------------------------------------------------------------- in compiled loops
# How the loop compiler (fnad/backends/cpu/loops.py) writes these in Numba code: the
# helpers of fnad/kernels/cpu/loop_index.py on the same table view as the kernels.
# None (the loop stays in Python) where the eager kernel would raise: a clip index
# into an axis of size 0.

def _numba_table(name, aval, k):
    return (f"np.ascontiguousarray({name}).reshape("
            f"({math.prod(aval.shape[:k])}, {math.prod(aval.shape[k:])}))")


def _numba_addressing(in_avals, mode):
    """(number of index vectors, their length k, the k indexed axes, mode code) of a
    gather or scatter, or None where the loop compiler should not take it."""
    operand, indices = in_avals[:2]
    k, count = indices.shape[-1], math.prod(indices.shape[:-1])
    if any(dtype_kind(a.dtype) not in "biufc" for a in in_avals) or (
            mode == "clip" and count and not all(operand.shape[:k])):
        return None
    return count, k, tuple(operand.shape[:k]), "loop_index.CLIP" if mode == "clip" \
        else "loop_index.FILL"


def _numba_gather(args, in_avals, out, mode):
    found = _numba_addressing(in_avals, mode)
    if found is None:
        return None
    count, k, dims, code = found
    index = f"np.ascontiguousarray({args[1]}).reshape(({count}, {k}))"
    return (f"loop_index.gather({_numba_table(args[0], in_avals[0], k)}, {index}, "
            f"{dims!r}, {code}).reshape({tuple(out.shape)!r})")


def _numba_scatter(name):
    def source(args, in_avals, out, mode, unique_indices):
        found = _numba_addressing(in_avals, mode)
        if found is None:
            return None
        count, k, dims, code = found
        index = f"np.ascontiguousarray({args[1]}).reshape(({count}, {k}))"
        updates = (f"np.ascontiguousarray({args[2]}).reshape("
                   f"({count}, {math.prod(in_avals[0].shape[k:])}))")
        return (f"loop_index.{name}({_numba_table(args[0], in_avals[0], k)}, {index}, "
                f"{dims!r}, {code}, {updates}).reshape({tuple(out.shape)!r})")
    return source


def _numba_windows(starts, shape, sizes):
    return ", ".join(f"loop_index.window({s}, {n}, {m})"
                     for s, n, m in zip(starts, shape, sizes))


def _numba_dynamic_slice(args, in_avals, out, slice_sizes):
    if not out.shape:
        return None
    windows = _numba_windows(args[1:], in_avals[0].shape, slice_sizes)
    return f"np.ascontiguousarray({args[0]}[{windows}])"


def _numba_dynamic_update_slice(args, in_avals, out):
    if not out.shape:
        return None
    windows = _numba_windows(args[2:], out.shape, in_avals[1].shape)
    return f"loop_index.updated({args[0]}, {args[1]}, ({windows},))"


# --------------------------------------------------------------------------- gather

def _gather_jvp(primals, tangents, mode):
    operand, indices = primals
    t = tangents[0]
    out = gather_p.bind(operand, indices, mode=mode)
    return out, None if t is None else gather_p.bind(t, indices, mode=mode)


def _gather_vjp(g, out, operand, indices, mode):
    return (scatter_add_p.bind(_zeros(operand.shape, g.dtype), indices, g, mode=mode,
                               unique_indices=False), None)


def _gather_batch(args, batch_dims, mode):
    operand, indices = args
    operand_dim, indices_dim = batch_dims
    if indices_dim is None:     # the batch axis rides along as part of each row
        k = indices.shape[-1]
        operand = move_batch_axis(operand, operand_dim, k, None)
        return gather_p.bind(operand, indices, mode=mode), len(indices.shape) - 1
    indices = move_batch_axis(indices, indices_dim, 0, None)
    if operand_dim is None:
        return gather_p.bind(operand, indices, mode=mode), 0
    operand = move_batch_axis(operand, operand_dim, 0, None)
    return gather_p.bind(operand, _with_batch_coordinate(indices), mode=mode), 0


# ONNX lowerings (see fnad/primitives/onnx_rules.py for the builder convention)

def _onnx_index_rows(b, operand, indices, mode):
    """GatherND/ScatterND indices with numpy's negatives and fnad's `mode` applied:
    (int64 indices inside the operand, a boolean mask of the in-range rows or None)."""
    k = b.aval(indices).shape[-1]
    idx = b.cast(indices, np.int64)
    sizes = b.op("Shape", operand, start=0, end=k)
    zero = b.const(np.int64(0))
    idx = b.op("Where", b.op("Less", idx, zero), b.op("Add", idx, sizes), idx)
    inside = None
    if mode == "fill":
        ok = b.op("And", b.op("GreaterOrEqual", idx, zero), b.op("Less", idx, sizes))
        inside = b.op("ReduceMin", b.cast(ok, np.int32), b.ints([-1]), keepdims=0)
        inside = b.cast(inside, np.bool_)
    idx = b.op("Max", b.op("Min", idx, b.op("Sub", sizes, b.const(np.int64(1)))), zero)
    return idx, inside


def _onnx_rows_mask(b, inside, indices, like_rank):
    """The in-range mask of the index rows, with an axis per trailing value axis."""
    extra = like_rank - (b.aval(indices).ndim - 1)
    return b.op("Unsqueeze", inside, b.ints([-1 - i for i in range(extra)])) if extra else inside


def _onnx_gather(b, operand, indices, mode):
    idx, inside = _onnx_index_rows(b, operand, indices, mode)
    out = b.op("GatherND", operand, idx)
    if inside is not None:
        out = b.op("Where", _onnx_rows_mask(b, inside, indices, b.out_avals[0].ndim), out,
                   b.scalar(0, b.out_avals[0].dtype))
    return out


def _onnx_scatter(name):
    """scatter_<op> as ScatterND with that reduction. A "fill" scatter drops the updates
    of out-of-range rows: they become the reduction's identity at a clamped row, or,
    for a replacing scatter (which has none), land in an extra row sliced off after."""
    reduction = {"scatter": "none", "scatter_add": "add", "scatter_mul": "mul",
                 "scatter_min": "min", "scatter_max": "max"}[name]

    def rule(b, operand, indices, updates, mode, unique_indices=False):
        idx, inside = _onnx_index_rows(b, operand, indices, mode)
        if inside is not None:
            if reduction == "none":
                return _onnx_scatter_dropping(b, operand, indices, updates, idx, inside)
            dtype = b.dtype(updates)
            neutral = {"add": 0, "mul": 1}.get(reduction)
            if neutral is None:
                info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
                neutral = info.max if reduction == "min" else info.min
                if dtype.kind == "f":
                    neutral = np.inf if reduction == "min" else -np.inf
            updates = b.op("Where", _onnx_rows_mask(b, inside, indices, b.aval(updates).ndim),
                           updates, b.scalar(neutral, dtype))
        if reduction in ("min", "max") and b.opset < 18:
            b.fail(f"ScatterND with reduction {reduction!r} needs opset 18 or later")
        return b.op("ScatterND", operand, idx, updates,
                    reduction=None if reduction == "none" else reduction)
    rule.__name__ = name
    return rule


def _onnx_scatter_dropping(b, operand, indices, updates, idx, inside):
    """A replacing ScatterND whose out-of-range rows write to an extra row past the end
    of axis 0, which is sliced off afterwards."""
    k, rank = b.aval(indices).shape[-1], b.aval(operand).ndim
    padded = b.op("Pad", operand, b.ints([0] * rank + [1] + [0] * (rank - 1)),
                  b.scalar(0, b.dtype(operand)), mode="constant")
    first = b.op("Slice", idx, b.ints([0]), b.ints([1]), b.ints([-1]))
    past_end = b.op("Shape", operand, start=0, end=1)
    first = b.op("Where", b.op("Unsqueeze", inside, b.ints([-1])), first, past_end)
    if k > 1:
        first = b.op("Concat", first, b.op("Slice", idx, b.ints([1]), b.ints([k]),
                                           b.ints([-1])), axis=-1)
    out = b.op("ScatterND", padded, first, updates)
    return b.op("Slice", out, b.ints([0]), b.ints([-1]), b.ints([0]))


def _onnx_clamped_starts(b, operand, starts, sizes):
    """dynamic_slice's starts: negatives from the end, then shifted to fit `sizes`."""
    begin = b.op("Concat", *[b.op("Unsqueeze", b.cast(s, np.int64), b.ints([0]))
                             for s in starts], axis=0)
    shape = b.op("Shape", operand)
    zero = b.const(np.int64(0))
    begin = b.op("Where", b.op("Less", begin, zero), b.op("Add", begin, shape), begin)
    return b.op("Max", b.op("Min", begin, b.op("Sub", shape, sizes)), zero), shape


def _onnx_dynamic_update_slice(b, operand, update, *starts):
    """The update padded out to the operand's shape, chosen where a padded mask is set."""
    sizes = b.op("Shape", update)
    begin, shape = _onnx_clamped_starts(b, operand, starts, sizes)
    pads = b.op("Concat", begin, b.op("Sub", b.op("Sub", shape, begin), sizes), axis=0)
    placed = b.op("Pad", update, pads, mode="constant")
    ones = b.op("ConstantOfShape", sizes, value=b.tensor(np.ones(1, np.bool_)))
    mask = b.op("Pad", ones, pads, b.const(np.bool_(False)), mode="constant")
    return b.op("Where", mask, placed, operand)


def _onnx_dynamic_slice(b, operand, *starts, slice_sizes):
    width = b.ints(slice_sizes)
    begin, _ = _onnx_clamped_starts(b, operand, starts, width)
    return b.op("Slice", operand, begin, b.op("Add", begin, width),
                b.ints(list(range(len(starts)))))


gather_p = Primitive("gather", abstract_eval=_gather_shape, impl=_gather_impl,
                     jvp=_gather_jvp, vjp=_gather_vjp, batch=_gather_batch,
                     numba_source=_numba_gather, onnx=_onnx_gather)


# --------------------------------------------------------------------------- scatter rules

def _along_batch(mask, indices, like):
    """A mask over the index batch, broadcast over the rows it addresses, in like's dtype."""
    batch = tuple(indices.shape[:-1])
    return S.broadcast_in_dim(_as(mask, like), tuple(like.shape), tuple(range(len(batch))))


def _winners(operand, indices, mode):
    """For each index vector: is its update the one a replacing scatter keeps?"""
    batch, k = tuple(indices.shape[:-1]), indices.shape[-1]
    ids = Array(np.arange(math.prod(batch), dtype=np.int64).reshape(batch))
    slots = _full(operand.shape[:k], -1, np.int64)
    kept = scatter_p.bind(slots, indices, ids, mode=mode, unique_indices=False)
    return eq_p.bind(gather_p.bind(kept, indices, mode=mode), ids)


def _set_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    out = scatter_p.bind(operand, indices, updates, **params)
    if t_op is None and t_up is None:
        return out, None
    return out, scatter_p.bind(instantiate(t_op, operand), indices,
                               instantiate(t_up, updates), **params)


def _set_vjp(g, out, operand, indices, updates, mode, unique_indices):
    g_operand = scatter_p.bind(g, indices, _zeros(updates.shape, g.dtype), mode=mode,
                               unique_indices=unique_indices)
    g_updates = gather_p.bind(g, indices, mode=mode)
    if not unique_indices:
        g_updates = g_updates * _along_batch(_winners(operand, indices, mode), indices,
                                             g_updates)
    return g_operand, None, g_updates


def _add_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    out = scatter_add_p.bind(operand, indices, updates, **params)
    if t_up is None:
        return out, t_op
    return out, scatter_add_p.bind(instantiate(t_op, operand), indices, t_up, **params)


def _add_vjp(g, out, operand, indices, updates, mode, unique_indices):
    return g, None, gather_p.bind(g, indices, mode=mode)


def _mul_partials(operand, indices, updates, params):
    """(d out / d operand, the product of the *other* updates to each update's slot).

    Computed without dividing by a zero update: the product of the nonzero updates
    and the count of zero updates per slot decide each case exactly."""
    dtype = operand.dtype
    zero, one = np.zeros((), dtype), np.ones((), dtype)
    is_zero = eq_p.bind(updates, zero)
    safe = select_p.bind(is_zero, one, updates)
    nonzero_product = scatter_mul_p.bind(_full(operand.shape, 1, dtype), indices, safe,
                                         **params)
    zero_count = scatter_add_p.bind(_zeros(operand.shape, dtype), indices,
                                    _as(is_zero, updates), **params)
    d_operand = select_p.bind(eq_p.bind(zero_count, zero), nonzero_product, zero)
    product_at = gather_p.bind(nonzero_product, indices, mode=params["mode"])
    count_at = gather_p.bind(zero_count, indices, mode=params["mode"])
    others = select_p.bind(
        is_zero, select_p.bind(eq_p.bind(count_at, one), product_at, zero),
        select_p.bind(eq_p.bind(count_at, zero), product_at / safe, zero))
    return d_operand, others


def _mul_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    d_operand, others = _mul_partials(operand, indices, updates, params)
    t = None if t_op is None else t_op * d_operand
    if t_up is not None:
        spread = scatter_add_p.bind(_zeros(operand.shape, operand.dtype), indices,
                                    others * t_up, **params)
        t = add_tangents(t, operand * spread)
    return out, t


def _mul_vjp(g, out, operand, indices, updates, **params):
    d_operand, others = _mul_partials(operand, indices, updates, params)
    return (g * d_operand, None,
            gather_p.bind(g * operand, indices, mode=params["mode"]) * others)


def _extremum_weights(out, operand, indices, updates, params):
    """Ties share: each value equal to the result gets 1 / (number of such values)."""
    hit_operand = _as(eq_p.bind(operand, out), out)
    hit_updates = _as(eq_p.bind(updates, gather_p.bind(out, indices, mode=params["mode"])),
                      out)
    count = hit_operand + scatter_add_p.bind(_zeros(out.shape, out.dtype), indices,
                                             hit_updates, **params)
    safe_count = count + _as(eq_p.bind(count, np.zeros((), out.dtype)), count)
    return hit_operand / safe_count, hit_updates, safe_count


def _extremum_rules(name):
    def jvp(primals, tangents, **params):
        operand, indices, updates = primals
        t_op, _, t_up = tangents
        out = SCATTERS[name].bind(operand, indices, updates, **params)
        w_operand, hit_updates, count = _extremum_weights(out, operand, indices, updates,
                                                          params)
        t = None if t_op is None else t_op * w_operand
        if t_up is not None:
            t = add_tangents(t, scatter_add_p.bind(_zeros(out.shape, out.dtype), indices,
                                                   hit_updates * t_up, **params) / count)
        return out, t

    def vjp(g, out, operand, indices, updates, **params):
        w_operand, hit_updates, count = _extremum_weights(out, operand, indices, updates,
                                                          params)
        return (g * w_operand, None,
                gather_p.bind(g / count, indices, mode=params["mode"]) * hit_updates)
    return jvp, vjp


def _scatter_batch(name):
    def batch(args, batch_dims, **params):
        operand, indices, updates = args
        operand_dim, indices_dim, updates_dim = batch_dims
        size = batch_size(args, batch_dims)
        prim = SCATTERS[name]
        if indices_dim is None:     # the batch axis rides along as part of each row
            k, nb = indices.shape[-1], len(indices.shape) - 1
            operand = move_batch_axis(operand, operand_dim, k, size)
            updates = move_batch_axis(updates, updates_dim, nb, size)
            return prim.bind(operand, indices, updates, **params), k
        indices = _with_batch_coordinate(move_batch_axis(indices, indices_dim, 0, size))
        operand = move_batch_axis(operand, operand_dim, 0, size)
        updates = move_batch_axis(updates, updates_dim, 0, size)
        return prim.bind(operand, indices, updates, **params), 0
    return batch


# --------------------------------------------------------------------------- the scatter table

_min_jvp, _min_vjp = _extremum_rules("scatter_min")
_max_jvp, _max_vjp = _extremum_rules("scatter_max")

#            name           kernel op      kinds   jvp       vjp       16-bit loops
_SCATTERS = [("scatter",     kernels.SET, "biufc", _set_jvp, _set_vjp, "bits"),
             ("scatter_add", kernels.ADD, "iufc",  _add_jvp, _add_vjp, None),
             ("scatter_mul", kernels.MUL, "iufc",  _mul_jvp, _mul_vjp, None),
             ("scatter_min", kernels.MIN, "biuf", _min_jvp, _min_vjp, None),
             ("scatter_max", kernels.MAX, "biuf", _max_jvp, _max_vjp, None)]

SCATTERS = {name: Primitive(name, abstract_eval=_scatter_shape(name, kinds),
                            impl=_scatter_impl(name, op, kinds), jvp=jvp, vjp=vjp,
                            batch=_scatter_batch(name),
                            numba_source=_numba_scatter(name), onnx=_onnx_scatter(name),
                            on_16bit=on_16bit)
            for name, op, kinds, jvp, vjp, on_16bit in _SCATTERS}
scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p = SCATTERS.values()


# --------------------------------------------------------------------------- dynamic_slice

def _check_starts(name, operand, starts, sizes):
    if len(starts) != len(operand.shape) or any(
            s.shape != () or dtype_kind(s.dtype) not in "iu" for s in starts):
        raise ShapeError(f"{name}: needs one scalar integer start per axis of the operand "
                         f"{tuple(operand.shape)}, got "
                         f"{[f'{s.dtype}{list(s.shape)}' for s in starts]}")
    if len(sizes) != len(operand.shape) or any(
            not 0 <= m <= n for m, n in zip(sizes, operand.shape)):
        raise ShapeError(f"{name}: sizes {tuple(sizes)} do not fit in the operand "
                         f"{tuple(operand.shape)}")


def _clamped(shape, sizes, starts):
    """numpy slices for the starts: negative ones count from the end, then each
    window is shifted to lie inside the operand."""
    out = []
    for n, m, s in zip(shape, sizes, starts):
        s = int(s)
        s = min(max(s + n if s < 0 else s, 0), n - m)
        out.append(slice(s, s + m))
    return tuple(out)


def _dynamic_slice_shape(operand, *starts, slice_sizes):
    _check_starts("dynamic_slice", operand, starts, slice_sizes)
    return ShapedArray(slice_sizes, operand.dtype)


def _dynamic_slice_impl(operand, *starts, slice_sizes):
    _check_starts("dynamic_slice", operand, starts, slice_sizes)
    return operand[_clamped(operand.shape, slice_sizes, starts)]


def _dynamic_slice_jvp(primals, tangents, slice_sizes):
    operand, *starts = primals
    t = tangents[0]
    out = dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
    return out, None if t is None else dynamic_slice_p.bind(t, *starts,
                                                            slice_sizes=slice_sizes)


def _dynamic_slice_vjp(g, out, operand, *starts, slice_sizes):
    g_operand = dynamic_update_slice_p.bind(_zeros(operand.shape, g.dtype), g, *starts)
    return (g_operand,) + (None,) * len(starts)


def _window_indices(shape, sizes, starts, start_dims, size):
    """Coordinates (size, *sizes, 1 + len(shape)) of every element of each example's
    window, with the starts normalized and clamped as dynamic_slice does."""
    out_shape = (size,) + tuple(sizes)
    int64 = np.dtype(np.int64)
    zero = np.zeros((), int64)
    columns = [S.iota(int64, out_shape, 0)]
    for j, (n, m, start, d) in enumerate(zip(shape, sizes, starts, start_dims)):
        start = convert_element_type_p.bind(move_batch_axis(start, d, 0, size),
                                            new_dtype=int64)
        start = select_p.bind(lt_p.bind(start, zero), add_p.bind(start, np.asarray(n, int64)),
                              start)
        start = clamp_p.bind(zero, start, np.asarray(n - m, int64))
        columns.append(add_p.bind(S.broadcast_in_dim(start, out_shape, (0,)),
                                  S.iota(int64, out_shape, j + 1)))
    last = len(out_shape)
    return S.concatenate([S.expand_dims(c, (last,)) for c in columns], last)


def _dynamic_slice_batch(args, batch_dims, slice_sizes):
    operand, *starts = args
    operand_dim, *start_dims = batch_dims
    size = batch_size(args, batch_dims)
    operand = move_batch_axis(operand, operand_dim, 0, size)
    if all(d is None for d in start_dims):
        return dynamic_slice_p.bind(operand, np.zeros((), np.int64), *starts,
                                    slice_sizes=(size,) + tuple(slice_sizes)), 0
    indices = _window_indices(operand.shape[1:], slice_sizes, starts, start_dims, size)
    return gather_p.bind(operand, indices, mode="clip"), 0


dynamic_slice_p = Primitive("dynamic_slice", abstract_eval=_dynamic_slice_shape,
                            impl=_dynamic_slice_impl, jvp=_dynamic_slice_jvp,
                            vjp=_dynamic_slice_vjp, batch=_dynamic_slice_batch,
                            numba_source=_numba_dynamic_slice, onnx=_onnx_dynamic_slice,
                            on_16bit="bits")


def _dynamic_update_slice_shape(operand, update, *starts):
    if operand.dtype != update.dtype or len(update.shape) != len(operand.shape):
        raise ShapeError(f"dynamic_update_slice: update {update} must have the dtype and "
                         f"rank of the operand {operand}")
    _check_starts("dynamic_update_slice", operand, starts, update.shape)
    return ShapedArray(operand.shape, operand.dtype)


def _dynamic_update_slice_impl(operand, update, *starts):
    _dynamic_update_slice_shape(operand, update, *starts)
    out = _writable_copy(operand)
    out[_clamped(operand.shape, update.shape, starts)] = update
    return out


def _dynamic_update_slice_jvp(primals, tangents):
    operand, update, *starts = primals
    t_op, t_up = tangents[:2]
    out = dynamic_update_slice_p.bind(operand, update, *starts)
    if t_op is None and t_up is None:
        return out, None
    return out, dynamic_update_slice_p.bind(instantiate(t_op, operand),
                                            instantiate(t_up, update), *starts)


def _dynamic_update_slice_vjp(g, out, operand, update, *starts):
    g_operand = dynamic_update_slice_p.bind(g, _zeros(update.shape, g.dtype), *starts)
    g_update = dynamic_slice_p.bind(g, *starts, slice_sizes=tuple(update.shape))
    return (g_operand, g_update) + (None,) * len(starts)


def _dynamic_update_slice_batch(args, batch_dims):
    operand, update, *starts = args
    operand_dim, update_dim, *start_dims = batch_dims
    size = batch_size(args, batch_dims)
    operand = move_batch_axis(operand, operand_dim, 0, size)
    update = move_batch_axis(update, update_dim, 0, size)
    if all(d is None for d in start_dims):
        return dynamic_update_slice_p.bind(operand, update, np.zeros((), np.int64),
                                           *starts), 0
    indices = _window_indices(operand.shape[1:], update.shape[1:], starts, start_dims, size)
    return scatter_p.bind(operand, indices, update, mode="clip", unique_indices=True), 0


dynamic_update_slice_p = Primitive(
    "dynamic_update_slice", abstract_eval=_dynamic_update_slice_shape,
    impl=_dynamic_update_slice_impl, jvp=_dynamic_update_slice_jvp,
    vjp=_dynamic_update_slice_vjp, batch=_dynamic_update_slice_batch,
    numba_source=_numba_dynamic_update_slice, onnx=_onnx_dynamic_update_slice,
    on_16bit="bits")


# --------------------------------------------------------------------------- lax-style functions

def _index_operand(x):
    """Python ints become int64 scalars; arrays and tracers pass through."""
    return np.asarray(x, np.int64) if isinstance(x, (int, np.integer)) else x


def gather(operand: Array | np.ndarray, indices: Array | np.ndarray | int,
           mode: str = "clip") -> Array:
    """operand[indices[..., 0], ..., indices[..., k-1]] over the k leading axes."""
    return gather_p.bind(operand, _index_operand(indices), mode=_mode(mode))


def _scatter_fn(prim):
    def scatter_fn(operand: Array | np.ndarray, indices: Array | np.ndarray | int,
                   updates: Array | np.ndarray, mode: str = "fill",
                   unique_indices: bool = False) -> Array:
        return prim.bind(operand, _index_operand(indices), updates, mode=_mode(mode),
                         unique_indices=bool(unique_indices))
    scatter_fn.__name__ = prim.name
    scatter_fn.__doc__ = (f"{prim.name}(operand, indices, updates): a copy of operand "
                          f"updated at the k leading axes named by indices[..., :k] (see "
                          f"fnad.primitives.index); mode 'fill' drops out-of-range updates.")
    return scatter_fn


scatter = _scatter_fn(scatter_p)
scatter_add = _scatter_fn(scatter_add_p)
scatter_mul = _scatter_fn(scatter_mul_p)
scatter_min = _scatter_fn(scatter_min_p)
scatter_max = _scatter_fn(scatter_max_p)


def dynamic_slice(operand: Array | np.ndarray,
                  start_indices: Sequence[Array | np.ndarray | int],
                  slice_sizes: Sequence[int]) -> Array:
    """operand[s0:s0 + m0, ...] with (possibly traced) starts, clamped into range."""
    return dynamic_slice_p.bind(operand, *map(_index_operand, start_indices),
                                slice_sizes=tuple(int(m) for m in slice_sizes))


def dynamic_update_slice(operand: Array | np.ndarray, update: Array | np.ndarray,
                         start_indices: Sequence[Array | np.ndarray | int]) -> Array:
    """A copy of operand with `update` written at (possibly traced) starts, clamped."""
    return dynamic_update_slice_p.bind(operand, update, *map(_index_operand, start_indices))


def _starts_in_dim(ndim, start, axis):
    starts = [0] * ndim
    starts[axis] = start
    return starts


def dynamic_slice_in_dim(operand: Array | np.ndarray, start_index: Array | np.ndarray | int,
                         slice_size: int, axis: int = 0) -> Array:
    sizes = list(operand.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, _starts_in_dim(len(sizes), start_index, axis), sizes)


def dynamic_index_in_dim(operand: Array | np.ndarray, index: Array | np.ndarray | int,
                         axis: int = 0, keepdims: bool = True) -> Array:
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else S.squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand: Array | np.ndarray, update: Array | np.ndarray,
                                start_index: Array | np.ndarray | int, axis: int) -> Array:
    return dynamic_update_slice(operand, update,
                                _starts_in_dim(len(operand.shape), start_index, axis))


def dynamic_update_index_in_dim(operand: Array | np.ndarray, update: Array | np.ndarray,
                                index: Array | np.ndarray | int, axis: int) -> Array:
    if len(update.shape) == len(operand.shape) - 1:
        update = S.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)
