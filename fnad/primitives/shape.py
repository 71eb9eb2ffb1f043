"""Structural primitives: they move data without arithmetic.

All are linear, so each JVP applies the primitive itself to the tangent and each
VJP is the transpose map (reshape back, sum over broadcast axes, pad a slice...).
"""
import builtins

import numpy as np

from ..core import Primitive
from ..abstract import ShapedArray, check_same_dtype
from ..errors import ShapeError
from ._rules import instantiate, compose_with_producer


def linear(name, impl, abstract_eval, transpose, **kw):
    """A primitive linear in its (single) array operand: jvp applies it to the tangent."""
    def jvp(primals, tangents, **params):
        return prim.bind(*primals, **params), prim.bind(*tangents, **params)

    prim = Primitive(name, abstract_eval=abstract_eval, impl=impl, jvp=jvp,
                     vjp=lambda g, out, x, **params: (transpose(g, x, **params),), **kw)
    return prim


def _shape_error(name, msg, *avals):
    return ShapeError(f"{name}: {msg} (operand{'s' if len(avals) > 1 else ''} "
                      + ", ".join(map(str, avals)) + ")")


def batched_axes(axes, batch_dim):
    """Per-example axis numbers as axes of the batched array, whose batch axis is
    batch_dim: the axes at or after it move up by one."""
    return tuple(a + (a >= batch_dim) for a in axes)


def _unary_batch(rule):
    """A vmap rule for a one-operand primitive: rule(x, batch_dim, **params) ->
    (out, out_batch_dim)."""
    def batch(args, batch_dims, **params):
        return rule(args[0], batch_dims[0], **params)
    return batch


def _batch_size(args, batch_dims):
    return next(x.shape[d] for x, d in zip(args, batch_dims) if d is not None)


# --------------------------------------------------------------------------- broadcast_in_dim

def _broadcast_in_dim_shape(x, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim or any(
            not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d])
            for i, d in enumerate(broadcast_dimensions)):
        raise _shape_error("broadcast_in_dim", f"cannot broadcast to shape {tuple(shape)} "
                           f"along dimensions {tuple(broadcast_dimensions)}", x)
    return ShapedArray(shape, x.dtype)


def _broadcast_in_dim_impl(x, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    x = x.reshape(expanded)
    if _size(shape) > 1 << 16:
        return np.broadcast_to(x, shape)    # a view: no copy of a large array
    out = np.empty(shape, x.dtype)          # for small arrays copying beats the
    np.copyto(out, x)                       # several-microsecond cost of broadcast_to
    return out


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _broadcast_in_dim_transpose(g, x, shape, broadcast_dimensions):
    from .reduce import reduce_sum
    kept = set(broadcast_dimensions)
    summed = tuple(d for d in range(len(shape)) if d not in kept) + tuple(
        d for i, d in enumerate(broadcast_dimensions) if x.shape[i] == 1 and shape[d] != 1)
    if summed:
        g = reduce_sum(g, tuple(sorted(summed)))
    return reshape(g, x.shape) if tuple(g.shape) != tuple(x.shape) else g


def _broadcast_in_dim_index(out_indices, in_shape, shape, broadcast_dimensions):
    return ["0" if in_shape[i] == 1 and shape[d] != 1 else out_indices[d]
            for i, d in enumerate(broadcast_dimensions)]


@_unary_batch
def _broadcast_in_dim_batch(x, d, shape, broadcast_dimensions):
    # The batch axis lands right after the output axis of the example axis before
    # it, so broadcast_dimensions stays increasing.
    out_d = broadcast_dimensions[d - 1] + 1 if d else 0
    dims = batched_axes(broadcast_dimensions, out_d)
    dims = dims[:d] + (out_d,) + dims[d:]
    shape = tuple(shape[:out_d]) + (x.shape[d],) + tuple(shape[out_d:])
    return broadcast_in_dim(x, shape, dims), out_d


broadcast_in_dim_p = linear("broadcast_in_dim", _broadcast_in_dim_impl,
                            _broadcast_in_dim_shape, _broadcast_in_dim_transpose,
                            index_map=_broadcast_in_dim_index, batch=_broadcast_in_dim_batch)


def broadcast_in_dim(x, shape, broadcast_dimensions):
    return broadcast_in_dim_p.bind(x, shape=tuple(shape),
                                   broadcast_dimensions=tuple(broadcast_dimensions))


# --------------------------------------------------------------------------- reshape, transpose, squeeze, expand_dims

def _reshape_shape(x, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size or any(n < 0 for n in new_sizes):
        raise _shape_error("reshape", f"cannot reshape to {tuple(new_sizes)}", x)
    return ShapedArray(new_sizes, x.dtype)


@_unary_batch
def _reshape_batch(x, d, new_sizes):
    # Row-major reshapes act separately on the axes before and after the batch
    # axis if the new shape splits at the same size; otherwise move it to the front.
    lead = _size(x.shape[:d])
    out_d = next((p for p in range(len(new_sizes) + 1) if _size(new_sizes[:p]) == lead), None)
    if out_d is None:
        from ..transforms.batching import moveaxis_to
        x, d, out_d = moveaxis_to(x, d, 0), 0, 0
    return reshape(x, tuple(new_sizes[:out_d]) + (x.shape[d],) + tuple(new_sizes[out_d:])), out_d


reshape_p = linear("reshape", lambda x, new_sizes: x.reshape(new_sizes), _reshape_shape,
                   lambda g, x, new_sizes: reshape(g, x.shape), batch=_reshape_batch)


def reshape(x, new_sizes):
    return reshape_p.bind(x, new_sizes=tuple(int(n) for n in new_sizes))


def _transpose_shape(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise _shape_error("transpose", f"{tuple(permutation)} is not a permutation of "
                           f"the axes", x)
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype)


@_unary_batch
def _transpose_batch(x, d, permutation):
    perm = batched_axes(permutation, d)         # the batch axis stays where it is
    return transpose(x, perm[:d] + (d,) + perm[d:]), d


transpose_p = linear("transpose", lambda x, permutation: x.transpose(permutation),
                     _transpose_shape,
                     lambda g, x, permutation: transpose(g, tuple(np.argsort(permutation))),
                     batch=_transpose_batch)


def transpose(x, permutation):
    return transpose_p.bind(x, permutation=tuple(int(p) for p in permutation))


def _squeeze_shape(x, dimensions):
    if any(not 0 <= d < x.ndim or x.shape[d] != 1 for d in dimensions):
        raise _shape_error("squeeze", f"dimensions {tuple(dimensions)} are not all of size 1",
                           x)
    return ShapedArray(tuple(n for i, n in enumerate(x.shape) if i not in dimensions),
                       x.dtype)


@_unary_batch
def _squeeze_batch(x, d, dimensions):
    return (squeeze(x, batched_axes(dimensions, d)),
            d - builtins.sum(a < d for a in dimensions))


squeeze_p = linear("squeeze", lambda x, dimensions: x.reshape(
                       tuple(n for i, n in enumerate(x.shape) if i not in dimensions)),
                   _squeeze_shape, lambda g, x, dimensions: reshape(g, x.shape),
                   batch=_squeeze_batch)


def squeeze(x, dimensions):
    return squeeze_p.bind(x, dimensions=tuple(sorted(dimensions)))


def _expanded_shape(shape, dimensions):
    out = list(shape)
    for d in sorted(dimensions):
        out.insert(d, 1)
    return tuple(out)


def _expand_dims_shape(x, dimensions):
    ndim = x.ndim + len(dimensions)
    if any(not 0 <= d < ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise _shape_error("expand_dims", f"invalid new axes {tuple(dimensions)}", x)
    return ShapedArray(_expanded_shape(x.shape, dimensions), x.dtype)


@_unary_batch
def _expand_dims_batch(x, d, dimensions):
    # The batch axis follows the output axis of the example axis before it.
    kept = [a for a in range(x.ndim - 1 + len(dimensions)) if a not in dimensions]
    out_d = kept[d - 1] + 1 if d else 0
    return expand_dims(x, batched_axes(dimensions, out_d)), out_d


expand_dims_p = linear("expand_dims",
                       lambda x, dimensions: x.reshape(_expanded_shape(x.shape, dimensions)),
                       _expand_dims_shape, lambda g, x, dimensions: reshape(g, x.shape),
                       batch=_expand_dims_batch)


def expand_dims(x, dimensions):
    return expand_dims_p.bind(x, dimensions=tuple(sorted(dimensions)))


# --------------------------------------------------------------------------- rev, slice

def _rev_shape(x, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise _shape_error("rev", f"dimensions {tuple(dimensions)} out of range", x)
    return ShapedArray(x.shape, x.dtype)


@_unary_batch
def _rev_batch(x, d, dimensions):
    return rev(x, batched_axes(dimensions, d)), d


rev_p = linear("rev", lambda x, dimensions: np.flip(x, dimensions), _rev_shape,
               lambda g, x, dimensions: rev(g, dimensions), batch=_rev_batch)


def rev(x, dimensions):
    return rev_p.bind(x, dimensions=tuple(dimensions))


def _slice_shape(x, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim) or any(
            not 0 <= s <= l <= n or st < 1 for s, l, n, st in
            zip(start_indices, limit_indices, x.shape, strides)):
        raise _shape_error("slice", f"invalid bounds start={tuple(start_indices)} "
                           f"limit={tuple(limit_indices)} strides={tuple(strides)}", x)
    return ShapedArray(tuple(-(-(l - s) // st) for s, l, st in
                             zip(start_indices, limit_indices, strides)), x.dtype)


def _slice_impl(x, start_indices, limit_indices, strides):
    # numpy clamps out-of-range bounds; the primitive raises (via the shape rule), as
    # it does under jit
    if not all(0 <= s <= l <= n for s, l, n in zip(start_indices, limit_indices, x.shape)):
        raise ValueError("slice bounds outside the operand")
    return x[tuple(builtins.slice(s, l, st)
                   for s, l, st in zip(start_indices, limit_indices, strides))]


def _slice_transpose(g, x, start_indices, limit_indices, strides):
    zero = np.zeros((), x.dtype)
    config = []
    for s, n, st, m in zip(start_indices, x.shape, strides, g.shape):
        config.append((s, n - _span_end(s, m, st), st - 1 if m else 0))
    return pad(g, zero, tuple(config))


@_unary_batch
def _slice_batch(x, d, start_indices, limit_indices, strides):
    def whole(bounds, value):
        return tuple(bounds[:d]) + (value,) + tuple(bounds[d:])
    return slice(x, whole(start_indices, 0), whole(limit_indices, x.shape[d]),
                 whole(strides, 1)), d


slice_p = linear("slice", _slice_impl, _slice_shape, _slice_transpose, batch=_slice_batch)


def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001 (lax's name)
    strides = (1,) * len(start_indices) if strides is None else strides
    return slice_p.bind(x, start_indices=tuple(map(int, start_indices)),
                        limit_indices=tuple(map(int, limit_indices)),
                        strides=tuple(map(int, strides)))


# --------------------------------------------------------------------------- pad

def _padded_size(n, lo, hi, interior):
    return lo + hi + n + max(n - 1, 0) * interior


def _pad_shape(x, padding_value, padding_config):
    check_same_dtype("pad", [x, padding_value])
    if padding_value.shape != () or len(padding_config) != x.ndim or any(
            i < 0 or _padded_size(n, lo, hi, i) < 0
            for n, (lo, hi, i) in zip(x.shape, padding_config)):
        raise _shape_error("pad", f"invalid padding_config {tuple(padding_config)} "
                           f"(padding value must be a scalar)", x, padding_value)
    return ShapedArray(tuple(_padded_size(n, *c) for n, c in zip(x.shape, padding_config)),
                       x.dtype)


def _pad_impl(x, padding_value, padding_config):
    # Pad with the non-negative parts first, then crop where lo/hi are negative.
    grown = [_padded_size(n, max(lo, 0), max(hi, 0), i)
             for n, (lo, hi, i) in zip(x.shape, padding_config)]
    out = np.full(grown, padding_value, dtype=x.dtype)
    out[tuple(builtins.slice(max(lo, 0), _span_end(max(lo, 0), n, i + 1), i + 1)
              for n, (lo, hi, i) in zip(x.shape, padding_config))] = x
    crop = tuple(builtins.slice(-min(lo, 0), g + min(hi, 0))
                 for g, (lo, hi, _) in zip(grown, padding_config))
    return out[crop]


def _span_end(start, n, step):
    """One past the last of n positions start, start + step, ..."""
    return start + (n - 1) * step + 1 if n else start


def _pad_operand_part(g, x, padding_config):
    """The entries of the padded cotangent that came from the operand."""
    # Undo negative padding by padding the cotangent with zeros first.
    zero = np.zeros((), g.dtype)
    g = pad(g, zero, tuple((max(-lo, 0), max(-hi, 0), 0) for lo, hi, _ in padding_config))
    starts = [max(lo, 0) for lo, _, _ in padding_config]
    steps = [i + 1 for _, _, i in padding_config]
    limits = [_span_end(s, n, st) for s, n, st in zip(starts, x.shape, steps)]
    return slice(g, starts, limits, steps)


def _pad_jvp(primals, tangents, padding_config):
    x, v = primals
    tx, tv = (instantiate(t, p) for t, p in zip(tangents, primals))
    return pad(x, v, padding_config), pad(tx, tv, padding_config)


def _pad_vjp(g, out, x, v, padding_config):
    from .reduce import reduce_sum
    g_x = _pad_operand_part(g, x, padding_config)
    all_axes = tuple(range(g.ndim))
    g_v = reduce_sum(g, all_axes) - reduce_sum(g_x, all_axes)
    return g_x, g_v


def _pad_batch(args, batch_dims, padding_config):
    x, v = args
    x_dim, v_dim = batch_dims
    if v_dim is None:                           # pad around the batch axis
        config = tuple(padding_config[:x_dim]) + ((0, 0, 0),) + tuple(padding_config[x_dim:])
        return pad(x, v, config), x_dim
    # A padding value per example: pad with zeros, then put each example's value
    # where the operand's entries are not.
    from ..transforms.batching import moveaxis_to
    from .elementwise import select_p
    example, config = tuple(x.shape), tuple(padding_config)
    if x_dim is not None:
        x = moveaxis_to(x, x_dim, 0)
        example, config = example[:x_dim] + example[x_dim + 1:], ((0, 0, 0),) + config
    padded = pad(x, np.zeros((), x.dtype), config)
    from_operand = pad(np.ones(example, bool), np.zeros((), bool), padding_config)
    v = reshape(v, (v.shape[0],) + (1,) * len(example))
    return select_p.bind(from_operand, padded, v), 0


pad_p = Primitive("pad", abstract_eval=_pad_shape, impl=_pad_impl, jvp=_pad_jvp,
                  vjp=_pad_vjp, batch=_pad_batch)


def pad(x, padding_value, padding_config):
    return pad_p.bind(x, padding_value,
                      padding_config=tuple(tuple(map(int, c)) for c in padding_config))


# --------------------------------------------------------------------------- concatenate

def _concatenate_shape(*xs, dimension):
    check_same_dtype("concatenate", xs)
    first = xs[0]
    if not 0 <= dimension < first.ndim or any(
            x.ndim != first.ndim or any(a != b for i, (a, b) in
                                        enumerate(zip(x.shape, first.shape)) if i != dimension)
            for x in xs):
        raise _shape_error("concatenate", f"shapes do not agree off dimension {dimension}",
                           *xs)
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, first.dtype)


def _concatenate_jvp(primals, tangents, dimension):
    tangents = [instantiate(t, p) for t, p in zip(tangents, primals)]
    return concatenate(primals, dimension), concatenate(tangents, dimension)


def _concatenate_vjp(g, out, *xs, dimension):
    cts, start = [], 0
    for x in xs:
        n = x.shape[dimension]
        starts = [0] * g.ndim
        limits = list(g.shape)
        starts[dimension], limits[dimension] = start, start + n
        cts.append(slice(g, starts, limits))
        start += n
    return cts


def _concatenate_batch(args, batch_dims, dimension):
    # Every operand gets the batch axis of the first batched one (unbatched
    # operands are broadcast: concatenation has to copy them anyway).
    from ..transforms.batching import moveaxis_to, broadcast_batch
    size = _batch_size(args, batch_dims)
    d = next(d for d in batch_dims if d is not None)
    xs = [broadcast_batch(x, size, d) if xd is None else moveaxis_to(x, xd, d)
          for x, xd in zip(args, batch_dims)]
    return concatenate(xs, dimension + (dimension >= d)), d


concatenate_p = Primitive("concatenate", abstract_eval=_concatenate_shape,
                          impl=lambda *xs, dimension: np.concatenate(xs, dimension),
                          jvp=_concatenate_jvp, vjp=_concatenate_vjp, batch=_concatenate_batch)


def concatenate(xs, dimension):
    return concatenate_p.bind(*xs, dimension=int(dimension))


# --------------------------------------------------------------------------- iota

def _iota_impl(dtype, shape, dimension):
    idx = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(idx.reshape(view), shape)


iota_p = Primitive("iota",
                   abstract_eval=lambda dtype, shape, dimension: ShapedArray(shape, dtype),
                   impl=_iota_impl,
                   jvp=lambda primals, tangents, **params: (iota_p.bind(**params), None),
                   vjp=lambda g, out, **params: (),
                   # No operands, so never batched: vmap only reaches it unbatched.
                   batch=lambda args, batch_dims, **params: (iota_p.bind(**params), None))


def iota(dtype, shape, dimension=0):
    return iota_p.bind(dtype=np.dtype(dtype), shape=tuple(shape), dimension=int(dimension))


# How the loop compiler (fnad/kernels/cpu/loops.py) writes these in Numba code.
def _numba_reshape(args, in_avals, out, **params):
    if not out.shape:
        return None
    return f"np.ascontiguousarray({args[0]}).reshape({tuple(out.shape)!r})"


for _prim in (reshape_p, squeeze_p, expand_dims_p):
    _prim.numba_source = _numba_reshape
transpose_p.numba_source = lambda args, in_avals, out, permutation: (
    f"np.ascontiguousarray(np.transpose({args[0]}, {tuple(permutation)!r}))")
slice_p.numba_source = lambda args, in_avals, out, start_indices, limit_indices, strides: (
    "np.ascontiguousarray({}[{}])".format(args[0], ", ".join(
        f"{s}:{l}:{st}" for s, l, st in zip(start_indices, limit_indices, strides)))
    if out.shape else None)
concatenate_p.numba_source = lambda args, in_avals, out, dimension: (
    f"np.concatenate(({', '.join(args)},), axis={dimension})")
rev_p.numba_source = lambda args, in_avals, out, dimensions: (
    "np.ascontiguousarray({}[{}])".format(args[0], ", ".join(
        "::-1" if d in dimensions else ":" for d in range(out.ndim))) if out.shape else None)


# Chains the jit optimizer folds into one op (and identities it removes).
reshape_p.simplify = compose_with_producer(lambda inner, outer: outer)
def _identity_permutation(e):
    perm = tuple(e.params["permutation"])
    return perm == tuple(range(len(perm)))


transpose_p.simplify = compose_with_producer(
    lambda inner, outer: {"permutation": tuple(inner["permutation"][i]
                                               for i in outer["permutation"])},
    is_identity=_identity_permutation)
broadcast_in_dim_p.simplify = compose_with_producer(lambda inner, outer: {
    "shape": outer["shape"],
    "broadcast_dimensions": tuple(outer["broadcast_dimensions"][d]
                                  for d in inner["broadcast_dimensions"])})
