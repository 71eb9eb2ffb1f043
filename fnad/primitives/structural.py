"""The rule kit, part two: the structural primitives every rule is written with, and
the helpers that bind them.

A cotangent undoes broadcasting (reduce_sum, reshape), a reduction's rules broadcast
back (broadcast_in_dim), a vmap rule moves batch axes (transpose), and rules turn
masks into numbers (convert_element_type). Every family needs these, so they are
declared here, once, below all the families; fnad.primitives.shape, .reduce and
.elementwise import them back, and users find them there. All but the conversion are
linear: each JVP applies the primitive to the tangent and each VJP is the transpose
map (reshape back, sum over broadcast axes, broadcast back).
"""
import math
from typing import Sequence

import numpy as np

from ..dtypes import bfloat16, finfo, kind_of as dtype_kind
from ..kernels.cpu import half as half_kernels
from ..abstract import ShapedArray
from ..core import Primitive
from ..dtypes import is_inexact, real_dtype
from ..errors import DTypeError
from ..typing import Array
from ..kernels.cpu import reduce as reduce_kernels
from ..kernels.cpu.elementwise import complex_only
from ._rules import (batched_axes, unary_batch, linear, axes_reduction, shape_error,
                     compose_with_producer, identity_when_same_type)
from . import onnx_rules as onnx


# --------------------------------------------------------------------------- vmap helpers

def moveaxis_to(x, src, dst):
    """x with axis src moved to position dst (a transpose)."""
    if src == dst:
        return x
    perm = [d for d in range(x.ndim) if d != src]
    perm.insert(dst, src)
    return transpose(x, perm)


def broadcast_batch(x, size, dst=0):
    """An unbatched x given a batch axis of length size at dst."""
    shape = list(x.shape)
    shape.insert(dst, size)
    dims = [d for d in range(len(shape)) if d != dst]
    return broadcast_in_dim(x, tuple(shape), tuple(dims))


def move_batch_axis(x, src, dst=0, size=None):
    """x with its batch axis at dst: moved there from src, or, for an unbatched x
    (src None), a new axis of length `size` broadcast there; without `size` an
    unbatched x stays as it is."""
    if src is None:
        return x if size is None else broadcast_batch(x, size, dst)
    return moveaxis_to(x, src, dst)


def move_batch_axes(args, batch_dims, dst=0, size=None):
    """move_batch_axis for each operand of a vmap rule."""
    return [move_batch_axis(x, d, dst, size) for x, d in zip(args, batch_dims)]


def broadcast_batch_where(xs, batched, wanted, size):
    """xs (the batched ones with their batch axis at 0) with a batch axis at 0 also
    where `wanted`: those not batched yet are broadcast to a batch of `size`."""
    return [broadcast_batch(x, size) if w and not b else x
            for x, b, w in zip(xs, batched, wanted)]


def elementwise_primitive(name, **slots):
    """A primitive elementwise with numpy broadcasting. Its vmap rule moves each batch
    axis to the front and pads the example axes to a common rank, so numpy's
    right-aligned broadcasting pairs example axes with example axes."""
    def batch(args, batch_dims, **params):
        rank = max(x.ndim - (d is not None) for x, d in zip(args, batch_dims))
        moved = []
        for x, d in zip(args, batch_dims):
            if d is not None:
                x = moveaxis_to(x, d, 0)
                missing = rank - (x.ndim - 1)
                if missing:
                    x = reshape(x, (x.shape[0],) + (1,) * missing + tuple(x.shape[1:]))
            moved.append(x)
        out = prim.bind(*moved, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    prim = Primitive(name, batch=batch, **slots)
    return prim


# --------------------------------------------------------------------------- cotangent helpers

def sum_to_shape(x, shape):
    """Undo numpy broadcasting on a cotangent: sum over the broadcast axes."""
    if x.shape == shape:
        return x
    shape = tuple(shape)
    lead = len(x.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and x.shape[i + lead] != 1)
    if axes:
        x = reduce_sum(x, axes)
    if tuple(x.shape) != shape:
        x = reshape(x, shape)
    return x


def broadcast_to(x, shape):
    if x.shape == shape:
        return x
    shape = tuple(shape)
    lead = len(shape) - len(x.shape)
    return broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def expand_to(g, x_shape, axes):
    """Broadcast a reduced value back over the reduced axes of x_shape."""
    kept = tuple(i for i in range(len(x_shape)) if i not in axes)
    return broadcast_in_dim(g, tuple(x_shape), kept)


# --------------------------------------------------------------------------- broadcast_in_dim

def _broadcast_in_dim_shape(x, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim or any(
            not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d])
            for i, d in enumerate(broadcast_dimensions)):
        raise shape_error("broadcast_in_dim", f"cannot broadcast to shape {tuple(shape)} "
                          f"along dimensions {tuple(broadcast_dimensions)}", x)
    return ShapedArray(shape, x.dtype)


def _broadcast_in_dim_impl(x, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    x = x.reshape(expanded)
    if math.prod(shape) > 1 << 16:
        return np.broadcast_to(x, shape)    # a view: no copy of a large array
    out = np.empty(shape, x.dtype)          # for small arrays copying beats the
    np.copyto(out, x)                       # several-microsecond cost of broadcast_to
    return out


def _broadcast_in_dim_transpose(g, x, shape, broadcast_dimensions):
    kept = set(broadcast_dimensions)
    summed = tuple(d for d in range(len(shape)) if d not in kept) + tuple(
        d for i, d in enumerate(broadcast_dimensions) if x.shape[i] == 1 and shape[d] != 1)
    if summed:
        g = reduce_sum(g, tuple(sorted(summed)))
    return reshape(g, x.shape) if tuple(g.shape) != tuple(x.shape) else g


def _broadcast_in_dim_index(out_indices, in_shape, shape, broadcast_dimensions):
    return ["0" if in_shape[i] == 1 and shape[d] != 1 else out_indices[d]
            for i, d in enumerate(broadcast_dimensions)]


@unary_batch
def _broadcast_in_dim_batch(x, d, shape, broadcast_dimensions):
    # The batch axis lands right after the output axis of the example axis before
    # it, so broadcast_dimensions stays increasing.
    out_d = broadcast_dimensions[d - 1] + 1 if d else 0
    dims = batched_axes(broadcast_dimensions, out_d)
    dims = dims[:d] + (out_d,) + dims[d:]
    shape = tuple(shape[:out_d]) + (x.shape[d],) + tuple(shape[out_d:])
    return broadcast_in_dim(x, shape, dims), out_d


# broadcast(broadcast(x)) is one broadcast.
broadcast_in_dim_p = linear(
    "broadcast_in_dim", _broadcast_in_dim_impl, _broadcast_in_dim_shape,
    _broadcast_in_dim_transpose, index_map=_broadcast_in_dim_index,
    batch=_broadcast_in_dim_batch,
    simplify=compose_with_producer(lambda inner, outer: {
        "shape": outer["shape"],
        "broadcast_dimensions": tuple(outer["broadcast_dimensions"][d]
                                      for d in inner["broadcast_dimensions"])}),
                                      onnx=onnx.broadcast_in_dim)


def broadcast_in_dim(x: Array | np.ndarray, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int]) -> Array:
    return broadcast_in_dim_p.bind(x, shape=tuple(shape),
                                   broadcast_dimensions=tuple(broadcast_dimensions))


# --------------------------------------------------------------------------- reshape, transpose

def _reshape_shape(x, new_sizes):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size or any(n < 0 for n in new_sizes):
        raise shape_error("reshape", f"cannot reshape to {tuple(new_sizes)}", x)
    return ShapedArray(new_sizes, x.dtype)


@unary_batch
def _reshape_batch(x, d, new_sizes):
    # Row-major reshapes act separately on the axes before and after the batch
    # axis if the new shape splits at the same size; otherwise move it to the front.
    lead = math.prod(x.shape[:d])
    out_d = next((p for p in range(len(new_sizes) + 1)
                  if math.prod(new_sizes[:p]) == lead), None)
    if out_d is None:
        x, d, out_d = moveaxis_to(x, d, 0), 0, 0
    return reshape(x, tuple(new_sizes[:out_d]) + (x.shape[d],) + tuple(new_sizes[out_d:])), out_d


def numba_reshape(args, in_avals, out, **params):
    """How the loop compiler (fnad/backends/cpu/loops.py) writes a reshape, squeeze or
    expand_dims in Numba code."""
    return f"np.ascontiguousarray({args[0]}).reshape({tuple(out.shape)!r})"


# reshape(reshape(x)) is one reshape.
reshape_p = linear("reshape", lambda x, new_sizes: x.reshape(new_sizes), _reshape_shape,
                   lambda g, x, new_sizes: reshape(g, x.shape), batch=_reshape_batch,
                   simplify=compose_with_producer(lambda inner, outer: outer),
                   numba_source=numba_reshape, onnx=onnx.reshape, on_16bit="bits")


def reshape(x: Array | np.ndarray, new_sizes: Sequence[int]) -> Array:
    return reshape_p.bind(x, new_sizes=tuple(int(n) for n in new_sizes))


def _transpose_shape(x, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise shape_error("transpose", f"{tuple(permutation)} is not a permutation of "
                          f"the axes", x)
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype)


@unary_batch
def _transpose_batch(x, d, permutation):
    perm = batched_axes(permutation, d)         # the batch axis stays where it is
    return transpose(x, perm[:d] + (d,) + perm[d:]), d


def _identity_permutation(e):
    perm = tuple(e.params["permutation"])
    return perm == tuple(range(len(perm)))


# transpose(transpose(x)) is one transpose; the identity permutation is x.
transpose_p = linear(
    "transpose", lambda x, permutation: x.transpose(permutation), _transpose_shape,
    lambda g, x, permutation: transpose(g, tuple(np.argsort(permutation))),
    batch=_transpose_batch,
    simplify=compose_with_producer(
        lambda inner, outer: {"permutation": tuple(inner["permutation"][i]
                                                   for i in outer["permutation"])},
        is_identity=_identity_permutation),
    numba_source=lambda args, in_avals, out, permutation: (
        f"np.ascontiguousarray(np.transpose({args[0]}, {tuple(permutation)!r}))"),
        onnx=onnx.transpose, on_16bit="bits")


def transpose(x: Array | np.ndarray, permutation: Sequence[int]) -> Array:
    return transpose_p.bind(x, permutation=tuple(int(p) for p in permutation))


# --------------------------------------------------------------------------- reduce_sum

def _wide_float(dtype):
    """float16 and float32 sums accumulate in float64 (complex64 ones in complex128).
    Adding n values one at a time in float32 errs by up to n * 2**-24 of the sum of
    their magnitudes (about 6% for ten million); in float64 by n * 2**-53, far below
    the one rounding to float32 at the end. Every mode uses this accumulator (numpy
    here, the fused loops, the GPU reduction), so they agree to the last bit but for
    the order of float64 adds."""
    return _WIDER.get(dtype, dtype)


_WIDER = {np.dtype(np.float16): np.dtype(np.float64),
          bfloat16: np.dtype(np.float64),
          np.dtype(np.float32): np.dtype(np.float64),
          np.dtype(np.complex64): np.dtype(np.complex128)}


reduce_sum_p = axes_reduction(
    "reduce_sum",
    reduction=(lambda dtype: 0, "{acc} + {x}", _wide_float),
    impl=lambda x, axes: reduce_kernels.wide_sum(x, axes, _wide_float(x.dtype)),
    jvp=lambda primals, tangents, axes: (reduce_sum(primals[0], axes),
                                         reduce_sum(tangents[0], axes)),
    vjp=lambda g, out, x, axes: (expand_to(g, x.shape, axes),), onnx=onnx.reduction("ReduceSum"),
    precision="float32")


def reduce_sum(x: Array | np.ndarray, axes: Sequence[int]) -> Array:
    return reduce_sum_p.bind(x, axes=tuple(axes))


# --------------------------------------------------------------------------- convert_element_type

def _convert_jvp(primals, tangents, new_dtype):
    x, = primals
    t, = tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype)
    if not is_inexact(new_dtype) or t is None:
        return out, None
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype)


def _convert_vjp(g, out, x, new_dtype):
    if not is_inexact(x.dtype):
        return (None,)
    if dtype_kind(g.dtype) == "c" and dtype_kind(x.dtype) != "c":
        g = real_p.bind(g)      # real -> complex embeds; its transpose takes Re(g)
    return (convert_element_type_p.bind(g, new_dtype=x.dtype),)


def _convert_shape(x, new_dtype):
    # complex -> real drops the imaginary part: that is `real`, a primitive of its own
    # (elementwise.convert applies it), so the conversion itself stays a cast every
    # backend's scalar code can write.
    if dtype_kind(x.dtype) == "c" and new_dtype.kind != "c":
        raise DTypeError(f"convert_element_type cannot convert complex {x} to "
                         f"{new_dtype}; take its real part first (lax.real), or use "
                         f"fnad.numpy's astype")
    return ShapedArray(x.shape, new_dtype)


def _convert_impl(x, new_dtype):
    if dtype_kind(x.dtype) == "c" and new_dtype.kind != "c":
        raise TypeError("complex to real")     # numpy would drop the imaginary part
    if new_dtype == bfloat16:
        return half_kernels.to_bfloat16(x)      # one rounding (ml_dtypes' may take two)
    return x.astype(new_dtype)


def _holds_every_value_of(wide, narrow):
    """Whether converting from `narrow` to `wide` is exact for every value (NaN stays
    NaN, -0.0 stays -0.0), so converting back gives the value itself."""
    if narrow == np.bool_:
        return True
    kinds = dtype_kind(narrow), dtype_kind(wide)
    if kinds[0] in "iu" and kinds[1] in "iu":
        a, b = np.iinfo(narrow), np.iinfo(wide)
        return b.min <= a.min and a.max <= b.max
    if kinds[0] in "iu" and kinds[1] in "fc":
        return 8 * np.dtype(narrow).itemsize - (kinds[0] == "i") <= finfo(wide).nmant + 1
    if kinds[0] in "f" and kinds[1] in "fc" or kinds == ("c", "c"):
        a, b = finfo(narrow), finfo(wide)
        return (b.nmant >= a.nmant and b.maxexp >= a.maxexp
                and b.minexp - b.nmant <= a.minexp - a.nmant)     # subnormals too
    return False


def _simplify_convert(e, producer_of):
    """A conversion to the dtype the value has is the value; a round trip through a
    dtype that holds every value exactly (bfloat16 -> float32 -> bfloat16, which
    promotion before a matmul and autocast's cast to it leave behind) is the value."""
    x = e.inputs[0]
    if identity_when_same_type(e, producer_of) is not None:
        return x
    inner = producer_of(x)
    if inner is None or inner.prim is not convert_element_type_p:
        return None
    original = inner.inputs[0]
    if original.aval.dtype == e.outputs[0].aval.dtype \
            and _holds_every_value_of(x.aval.dtype, original.aval.dtype):
        return original
    return None


convert_element_type_p = elementwise_primitive(
    "convert_element_type",
    abstract_eval=_convert_shape,
    impl=_convert_impl,
    jvp=_convert_jvp, vjp=_convert_vjp, scalar="{new_dtype}({0})",
    simplify=_simplify_convert, onnx=onnx.convert_element_type)


# --------------------------------------------------------------------------- real
# The real part of a complex number; with the conversion real -> complex it is the
# pair of maps between real and complex values that rules and conversions need. Its
# cotangent pairs as Re(ct * t) = g Re(t) (JAX's convention), so ct = g + 0j.

def _real_shape(x):
    if dtype_kind(x.dtype) != "c":
        raise DTypeError(f"real needs a complex operand, got {x}")
    return ShapedArray(x.shape, real_dtype(x.dtype))


real_p = elementwise_primitive(
    "real", abstract_eval=_real_shape, impl=complex_only(np.real),
    jvp=lambda primals, tangents: (real_p.bind(*primals), real_p.bind(*tangents)),
    vjp=lambda g, out, x: (convert_element_type_p.bind(g, new_dtype=x.dtype),),
    scalar="{0}.real")
