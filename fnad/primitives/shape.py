"""Structural primitives: they move data without arithmetic.

All are linear, so each JVP applies the primitive itself to the tangent and each
VJP is the transpose map (reshape back, sum over broadcast axes, pad a slice...).
broadcast_in_dim, reshape and transpose, which every family's rules use, are declared
in structural.py, below every family, and imported here, where users find them.
"""
import builtins
from typing import Sequence

import numpy as np

from ..abstract import ShapedArray, check_same_dtype
from ..core import Primitive
from ..typing import Array
from ._rules import batch_size, batched_axes, instantiate, linear, shape_error, unary_batch
from .elementwise import select_p
# broadcast_in_dim, reshape and transpose are declared with the kit every rule uses,
# below every family; they belong to this family's namespace all the same.
from .structural import (  # noqa: F401
    broadcast_in_dim, broadcast_in_dim_p, move_batch_axes, moveaxis_to, numba_reshape,
    reduce_sum, reshape, reshape_p, transpose, transpose_p)
from . import onnx_rules as onnx


# --------------------------------------------------------------------------- squeeze, expand_dims

def _squeeze_shape(x, dimensions):
    if any(not 0 <= d < x.ndim or x.shape[d] != 1 for d in dimensions):
        raise shape_error("squeeze", f"dimensions {tuple(dimensions)} are not all of size 1",
                          x)
    return ShapedArray(tuple(n for i, n in enumerate(x.shape) if i not in dimensions),
                       x.dtype)


@unary_batch
def _squeeze_batch(x, d, dimensions):
    return (squeeze(x, batched_axes(dimensions, d)),
            d - builtins.sum(a < d for a in dimensions))


squeeze_p = linear("squeeze", lambda x, dimensions: x.reshape(
                       tuple(n for i, n in enumerate(x.shape) if i not in dimensions)),
                   _squeeze_shape, lambda g, x, dimensions: reshape(g, x.shape),
                   batch=_squeeze_batch, numba_source=numba_reshape, onnx=onnx.squeeze,
                   on_16bit="bits")


def squeeze(x: Array | np.ndarray, dimensions: Sequence[int]) -> Array:
    return squeeze_p.bind(x, dimensions=tuple(sorted(dimensions)))


def expanded_shape(shape, dimensions):
    out = list(shape)
    for d in sorted(dimensions):
        out.insert(d, 1)
    return tuple(out)


def _expand_dims_shape(x, dimensions):
    ndim = x.ndim + len(dimensions)
    if any(not 0 <= d < ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise shape_error("expand_dims", f"invalid new axes {tuple(dimensions)}", x)
    return ShapedArray(expanded_shape(x.shape, dimensions), x.dtype)


@unary_batch
def _expand_dims_batch(x, d, dimensions):
    # The batch axis follows the output axis of the example axis before it.
    kept = [a for a in range(x.ndim - 1 + len(dimensions)) if a not in dimensions]
    out_d = kept[d - 1] + 1 if d else 0
    return expand_dims(x, batched_axes(dimensions, out_d)), out_d


expand_dims_p = linear("expand_dims",
                       lambda x, dimensions: x.reshape(expanded_shape(x.shape, dimensions)),
                       _expand_dims_shape, lambda g, x, dimensions: reshape(g, x.shape),
                       batch=_expand_dims_batch, numba_source=numba_reshape,
                       onnx=onnx.expand_dims, on_16bit="bits")


def expand_dims(x: Array | np.ndarray, dimensions: Sequence[int]) -> Array:
    return expand_dims_p.bind(x, dimensions=tuple(sorted(dimensions)))


# --------------------------------------------------------------------------- rev, slice

def _rev_shape(x, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise shape_error("rev", f"dimensions {tuple(dimensions)} out of range", x)
    return ShapedArray(x.shape, x.dtype)


@unary_batch
def _rev_batch(x, d, dimensions):
    return rev(x, batched_axes(dimensions, d)), d


rev_p = linear(
    "rev", lambda x, dimensions: np.flip(x, dimensions), _rev_shape,
    lambda g, x, dimensions: rev(g, dimensions), batch=_rev_batch,
    numba_source=lambda args, in_avals, out, dimensions: (
        "np.ascontiguousarray({}[{}])".format(args[0], ", ".join(
            "::-1" if d in dimensions else ":" for d in range(out.ndim)))
        if out.shape else None), onnx=onnx.rev, on_16bit="bits")


def rev(x: Array | np.ndarray, dimensions: Sequence[int]) -> Array:
    return rev_p.bind(x, dimensions=tuple(dimensions))


def _slice_shape(x, start_indices, limit_indices, strides):
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim) or any(
            not 0 <= s <= l <= n or st < 1 for s, l, n, st in
            zip(start_indices, limit_indices, x.shape, strides)):
        raise shape_error("slice", f"invalid bounds start={tuple(start_indices)} "
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


@unary_batch
def _slice_batch(x, d, start_indices, limit_indices, strides):
    def whole(bounds, value):
        return tuple(bounds[:d]) + (value,) + tuple(bounds[d:])
    return slice(x, whole(start_indices, 0), whole(limit_indices, x.shape[d]),
                 whole(strides, 1)), d


slice_p = linear(
    "slice", _slice_impl, _slice_shape, _slice_transpose, batch=_slice_batch,
    numba_source=lambda args, in_avals, out, start_indices, limit_indices, strides: (
        "np.ascontiguousarray({}[{}])".format(args[0], ", ".join(
            f"{s}:{l}:{st}" for s, l, st in zip(start_indices, limit_indices, strides)))
        if out.shape else None), onnx=onnx.slice_, on_16bit="bits")


def slice(x: Array | np.ndarray, start_indices: Sequence[int],  # noqa: A001 (lax's name)
          limit_indices: Sequence[int], strides: Sequence[int] | None = None) -> Array:
    strides = (1,) * len(start_indices) if strides is None else strides
    return slice_p.bind(x, start_indices=tuple(map(int, start_indices)),
                        limit_indices=tuple(map(int, limit_indices)),
                        strides=tuple(map(int, strides)))


# --------------------------------------------------------------------------- pad

def padded_size(n, lo, hi, interior):
    return lo + hi + n + max(n - 1, 0) * interior


def _pad_shape(x, padding_value, padding_config):
    check_same_dtype("pad", [x, padding_value])
    if padding_value.shape != () or len(padding_config) != x.ndim or any(
            i < 0 or padded_size(n, lo, hi, i) < 0
            for n, (lo, hi, i) in zip(x.shape, padding_config)):
        raise shape_error("pad", f"invalid padding_config {tuple(padding_config)} "
                          f"(padding value must be a scalar)", x, padding_value)
    return ShapedArray(tuple(padded_size(n, *c) for n, c in zip(x.shape, padding_config)),
                       x.dtype)


def _pad_impl(x, padding_value, padding_config):
    # Pad with the non-negative parts first, then crop where lo/hi are negative.
    grown = [padded_size(n, max(lo, 0), max(hi, 0), i)
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
    example, config = tuple(x.shape), tuple(padding_config)
    if x_dim is not None:
        x = moveaxis_to(x, x_dim, 0)
        example, config = example[:x_dim] + example[x_dim + 1:], ((0, 0, 0),) + config
    padded = pad(x, np.zeros((), x.dtype), config)
    from_operand = pad(np.ones(example, bool), np.zeros((), bool), padding_config)
    v = reshape(v, (v.shape[0],) + (1,) * len(example))
    return select_p.bind(from_operand, padded, v), 0


pad_p = Primitive("pad", abstract_eval=_pad_shape, impl=_pad_impl, jvp=_pad_jvp,
                  vjp=_pad_vjp, batch=_pad_batch, onnx=onnx.pad)


def pad(x: Array | np.ndarray, padding_value: Array | np.ndarray,
        padding_config: Sequence[tuple[int, int, int]]) -> Array:
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
        raise shape_error("concatenate", f"shapes do not agree off dimension {dimension}",
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
    d = next(d for d in batch_dims if d is not None)
    xs = move_batch_axes(args, batch_dims, d, batch_size(args, batch_dims))
    return concatenate(xs, dimension + (dimension >= d)), d


concatenate_p = Primitive("concatenate", abstract_eval=_concatenate_shape,
                          impl=lambda *xs, dimension: np.concatenate(xs, dimension),
                          jvp=_concatenate_jvp, vjp=_concatenate_vjp, batch=_concatenate_batch,
                          numba_source=lambda args, in_avals, out, dimension: (
                              f"np.concatenate(({', '.join(args)},), axis={dimension})"),
                          onnx=onnx.concatenate, on_16bit="bits")


def concatenate(xs: Sequence[Array | np.ndarray], dimension: int) -> Array:
    return concatenate_p.bind(*xs, dimension=int(dimension))


# --------------------------------------------------------------------------- iota

def _iota_impl(dtype, shape, dimension):
    idx = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(idx.reshape(view), shape)


def _numba_iota(args, in_avals, out, dtype, shape, dimension):
    # The loop compiler's Numba code (fnad/backends/cpu/loops.py).
    if not shape or np.dtype(dtype).kind not in "biuf":
        return None
    return (f"loop_arrays.iota(np.empty({tuple(shape)!r}, np.{np.dtype(dtype).name}), "
            f"{dimension})")


iota_p = Primitive("iota",
                   abstract_eval=lambda dtype, shape, dimension: ShapedArray(shape, dtype),
                   impl=_iota_impl,
                   jvp=lambda primals, tangents, **params: (iota_p.bind(**params), None),
                   vjp=lambda g, out, **params: (),
                   # No operands, so never batched: vmap only reaches it unbatched.
                   batch=lambda args, batch_dims, **params: (iota_p.bind(**params), None),
                   numba_source=_numba_iota,
                   onnx=onnx.iota)


def iota(dtype, shape, dimension=0):
    return iota_p.bind(dtype=np.dtype(dtype), shape=tuple(shape), dimension=int(dimension))
