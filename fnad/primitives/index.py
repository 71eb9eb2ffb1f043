"""Indexing primitives: gather, the scatter family, dynamic_slice, dynamic_update_slice.

Addressing, shared by gather and every scatter: `indices` has shape batch + (k,)
with k <= operand.ndim, and the index vector indices[b] names a position in the k
leading axes of the operand:

    gather(operand, indices)[b, ...]  =  operand[indices[b, 0], ..., indices[b, k-1], ...]
    scatter_<op>(operand, indices, updates):  out = copy of operand, then for b in order
                                              out[indices[b, 0], ..., indices[b, k-1], ...] <op>= updates[b, ...]

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
import numpy as np

from ..array import Array
from ..core import Primitive, ShapedArray
from ..errors import ShapeError, DTypeError
from ..kernels.cpu import index as kernels
from ._rules import instantiate, add_tangents
from . import shape as S
from .elementwise import select_p, convert_element_type_p, eq_p

_MODES = {"clip": "clip", "promise_in_bounds": "clip", "fill": "fill", "drop": "fill"}


def _mode(mode):
    try:
        return _MODES[mode]
    except KeyError:
        raise ValueError(f"unknown index mode {mode!r}; expected 'clip' or 'fill' "
                         f"(alias 'drop')") from None


def _prod(shape):
    return int(np.prod(shape, dtype=np.int64))


def _zeros(shape, dtype):
    return Array(np.zeros(shape, dtype))


def _as(mask, like):
    return convert_element_type_p.bind(mask, new_dtype=like.dtype)


# --------------------------------------------------------------------------- shape rules

def _split_indices(name, operand, indices):
    """(batch shape, k) of an index array, checked against the operand."""
    if indices.dtype.kind not in "iu":
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
        if operand.dtype != updates.dtype or operand.dtype.kind not in kinds:
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

def _rows(operand_shape, indices, mode):
    """Row numbers of the index vectors in the operand seen as (rows, row length)."""
    k = indices.shape[-1]
    dims = np.asarray(operand_shape[:k], np.int64)
    vectors = indices.reshape(_prod(indices.shape[:-1]), k)
    if vectors.dtype not in (np.int32, np.int64):
        vectors = vectors.astype(np.int64)
    if mode == "clip" and vectors.shape[0] and not dims.all():
        raise IndexError(f"cannot index into an axis of size 0 (operand shape "
                         f"{tuple(operand_shape)})")
    return kernels.flat_rows(vectors, dims, kernels.CLIP if mode == "clip" else kernels.FILL)


def _gather_impl(operand, indices, mode):
    out_aval = _gather_shape(operand, indices, mode)
    k = indices.shape[-1]
    rows = _rows(operand.shape, indices, mode)
    table = operand.reshape((_prod(operand.shape[:k]),) + operand.shape[k:])
    if mode == "fill":
        missing = rows < 0
        if missing.any():
            out = np.take(table, np.where(missing, 0, rows), axis=0) if len(table) else \
                np.zeros((len(rows),) + table.shape[1:], operand.dtype)
            out[missing] = 0
            return out.reshape(out_aval.shape)
    return np.take(table, rows, axis=0).reshape(out_aval.shape)


def _scatter_impl(name, op, kinds):
    check = _scatter_shape(name, kinds)

    def impl(operand, indices, updates, mode, unique_indices):
        check(operand, indices, updates, mode, unique_indices)
        k = indices.shape[-1]
        out = np.array(operand, order="C", copy=True)
        rows = _rows(operand.shape, indices, mode)
        length = _prod(operand.shape[k:])
        kernels.scatter_rows(out.reshape(_prod(operand.shape[:k]), length), rows,
                             np.ascontiguousarray(updates).reshape(len(rows), length), op)
        return out
    return impl


# --------------------------------------------------------------------------- gather

def _gather_jvp(primals, tangents, mode):
    operand, indices = primals
    t = tangents[0]
    out = gather_p.bind(operand, indices, mode=mode)
    return out, None if t is None else gather_p.bind(t, indices, mode=mode)


def _gather_vjp(g, out, operand, indices, mode):
    return (scatter_add_p.bind(_zeros(operand.shape, g.dtype), indices, g, mode=mode,
                               unique_indices=False), None)


gather_p = Primitive("gather", abstract_eval=_gather_shape, impl=_gather_impl,
                     jvp=_gather_jvp, vjp=_gather_vjp)


# --------------------------------------------------------------------------- scatter rules

def _along_batch(mask, indices, like):
    """A mask over the index batch, broadcast over the rows it addresses, in like's dtype."""
    batch = tuple(indices.shape[:-1])
    return S.broadcast_in_dim(_as(mask, like), tuple(like.shape), tuple(range(len(batch))))


def _winners(operand, indices, mode):
    """For each index vector: is its update the one a replacing scatter keeps?"""
    batch, k = tuple(indices.shape[:-1]), indices.shape[-1]
    ids = Array(np.arange(_prod(batch), dtype=np.int64).reshape(batch))
    slots = Array(np.full(tuple(operand.shape[:k]), -1, np.int64))
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
    nonzero_product = scatter_mul_p.bind(Array(np.ones(operand.shape, dtype)), indices, safe,
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
        out = PRIMITIVES[name].bind(operand, indices, updates, **params)
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


# --------------------------------------------------------------------------- the scatter table

_min_jvp, _min_vjp = _extremum_rules("scatter_min")
_max_jvp, _max_vjp = _extremum_rules("scatter_max")

#            name           kernel op      kinds   jvp       vjp
_SCATTERS = [("scatter",     kernels.SET, "biuf", _set_jvp, _set_vjp),
             ("scatter_add", kernels.ADD, "iuf",  _add_jvp, _add_vjp),
             ("scatter_mul", kernels.MUL, "iuf",  _mul_jvp, _mul_vjp),
             ("scatter_min", kernels.MIN, "biuf", _min_jvp, _min_vjp),
             ("scatter_max", kernels.MAX, "biuf", _max_jvp, _max_vjp)]

PRIMITIVES = {name: Primitive(name, abstract_eval=_scatter_shape(name, kinds),
                              impl=_scatter_impl(name, op, kinds), jvp=jvp, vjp=vjp)
              for name, op, kinds, jvp, vjp in _SCATTERS}
scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p = PRIMITIVES.values()


# --------------------------------------------------------------------------- dynamic_slice

def _check_starts(name, operand, starts, sizes):
    if len(starts) != len(operand.shape) or any(
            s.shape != () or s.dtype.kind not in "iu" for s in starts):
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


dynamic_slice_p = Primitive("dynamic_slice", abstract_eval=_dynamic_slice_shape,
                            impl=_dynamic_slice_impl, jvp=_dynamic_slice_jvp,
                            vjp=_dynamic_slice_vjp)


def _dynamic_update_slice_shape(operand, update, *starts):
    if operand.dtype != update.dtype or len(update.shape) != len(operand.shape):
        raise ShapeError(f"dynamic_update_slice: update {update} must have the dtype and "
                         f"rank of the operand {operand}")
    _check_starts("dynamic_update_slice", operand, starts, update.shape)
    return ShapedArray(operand.shape, operand.dtype)


def _dynamic_update_slice_impl(operand, update, *starts):
    _dynamic_update_slice_shape(operand, update, *starts)
    out = np.array(operand, copy=True)
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


dynamic_update_slice_p = Primitive(
    "dynamic_update_slice", abstract_eval=_dynamic_update_slice_shape,
    impl=_dynamic_update_slice_impl, jvp=_dynamic_update_slice_jvp,
    vjp=_dynamic_update_slice_vjp)


# --------------------------------------------------------------------------- lax-style functions

def _index_operand(x):
    """Python ints become int64 scalars; arrays and tracers pass through."""
    return np.asarray(x, np.int64) if isinstance(x, (int, np.integer)) else x


def gather(operand, indices, mode="clip"):
    """operand[indices[..., 0], ..., indices[..., k-1]] over the k leading axes."""
    return gather_p.bind(operand, _index_operand(indices), mode=_mode(mode))


def _scatter_fn(prim):
    def scatter_fn(operand, indices, updates, mode="fill", unique_indices=False):
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


def dynamic_slice(operand, start_indices, slice_sizes):
    """operand[s0:s0 + m0, ...] with (possibly traced) starts, clamped into range."""
    return dynamic_slice_p.bind(operand, *map(_index_operand, start_indices),
                                slice_sizes=tuple(int(m) for m in slice_sizes))


def dynamic_update_slice(operand, update, start_indices):
    """A copy of operand with `update` written at (possibly traced) starts, clamped."""
    return dynamic_update_slice_p.bind(operand, update, *map(_index_operand, start_indices))


def _starts_in_dim(ndim, start, axis):
    starts = [0] * ndim
    starts[axis] = start
    return starts


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    sizes = list(operand.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, _starts_in_dim(len(sizes), start_index, axis), sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else S.squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    return dynamic_update_slice(operand, update,
                                _starts_in_dim(len(operand.shape), start_index, axis))


def dynamic_update_index_in_dim(operand, update, index, axis):
    if len(update.shape) == len(operand.shape) - 1:
        update = S.expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)
