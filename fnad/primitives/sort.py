"""sort: a stable sort of several same-shaped operands along one dimension, ordered
lexicographically by the first `num_keys` of them; the others ride along.

Carrying operands is what makes the rules cheap. argsort is sort(x, iota). The JVP
sorts the tangents as extra carried operands. The VJP needs the inverse of the
permutation: it recovers the permutation p by sorting (keys, iota), then sorts
(p, g) by p, which puts g[j] back at position p[j] -- no gather or scatter, and the
rule is itself a sort, so it differentiates again.
"""
import math
from typing import Any, Sequence

import numpy as np

from ..core import Primitive
from ..typing import Array, DTypeLike
from ..abstract import ShapedArray
from ..dtypes import bfloat16
from ..errors import ShapeError
from ._rules import batch_size
from . import shape as S
from .structural import move_batch_axes


def _sort_shape(*operands, dimension, num_keys):
    shape = operands[0].shape
    if any(op.shape != shape for op in operands):
        raise ShapeError("sort: operands must have one shape, got "
                         + ", ".join(map(str, operands)))
    if not 0 <= dimension < len(shape):
        raise ShapeError(f"sort: dimension {dimension} is out of range for operands of "
                         f"shape {tuple(shape)}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys must be between 1 and the number of operands "
                         f"({len(operands)}), got {num_keys}")
    return [ShapedArray(op.shape, op.dtype) for op in operands]


def _sort_impl(*operands, dimension, num_keys):
    shape = operands[0].shape
    if (num_keys > len(operands) or not 0 <= dimension < len(shape)
            or any(op.shape != shape for op in operands)):
        # numpy would broadcast or ignore these: let the shape rule explain.
        raise ValueError("sort: invalid operands")
    keys = [_orderable(k) for k in operands[:num_keys]]
    if len(operands) == 1 and keys[0] is operands[0]:
        return [np.sort(operands[0], axis=dimension, kind="stable")]
    if num_keys == 1:
        perm = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        # lexsort's primary key is its last.
        perm = np.lexsort(keys[::-1], axis=dimension)
    if len(shape) == 1:
        return [op[perm] for op in operands]
    return [np.take_along_axis(op, perm, axis=dimension) for op in operands]


def _orderable(key):
    """A key numpy sorts in numpy's float order (NaN last). ml_dtypes' bfloat16 sorts
    through a generic comparison that leaves NaNs where they fall; widening to float32
    is exact and keeps the order."""
    return key.astype(np.float32) if key.dtype == bfloat16 else key


def _sort_jvp(primals, tangents, dimension, num_keys):
    carried = [t for t in tangents if t is not None]
    out = sort_p.bind(*primals, *carried, dimension=dimension, num_keys=num_keys)
    sorted_tangents = iter(out[len(primals):])
    return (out[:len(primals)],
            [None if t is None else next(sorted_tangents) for t in tangents])


def permutation(keys, dimension):
    """The stable sorting permutation of `keys` along `dimension`, as int64."""
    iota = S.iota(np.int64, keys[0].shape, dimension)
    return sort_p.bind(*keys, iota, dimension=dimension, num_keys=len(keys))[-1]


def _sort_vjp(cts, outs, *operands, dimension, num_keys):
    wanted = [i for i, g in enumerate(cts) if g is not None]
    if not wanted:
        return [None] * len(operands)
    perm = permutation(operands[:num_keys], dimension)
    restored = sort_p.bind(perm, *(cts[i] for i in wanted), dimension=dimension,
                           num_keys=1)[1:]
    result = [None] * len(operands)
    for i, g in zip(wanted, restored):
        result[i] = g
    return result


def _sort_batch(args, batch_dims, dimension, num_keys):
    moved = move_batch_axes(args, batch_dims, 0, batch_size(args, batch_dims))
    out = sort_p.bind(*moved, dimension=dimension + 1, num_keys=num_keys)
    return out, [0] * len(out)


# ONNX lowerings (see fnad/primitives/onnx_rules.py for the builder convention)

def _onnx_sort(b, *operands, dimension, num_keys):
    if num_keys != 1:
        b.fail("sorting by more than one key has no ONNX form (TopK takes one)")
    k = b.size(b.dims_of(operands[0])[dimension])
    values, perm = b.op("TopK", operands[0], k, axis=int(dimension), largest=0, sorted=1,
                        outputs=2)
    return [values] + [b.op("GatherElements", x, perm, axis=int(dimension))
                       for x in operands[1:]]


def _numba_sort(args, in_avals, out, dimension, num_keys):
    """The loop compiler's Numba code (fnad/backends/cpu/loops.py): a tuple of the
    sorted operands, a stable sort along `dimension` as the eager kernel's; one key and
    at most one operand carried along (np.sort, argsort)."""
    shape = tuple(in_avals[0].shape)
    if num_keys != 1 or len(args) > 2 or any(a.dtype.kind not in "biuf" for a in in_avals):
        return None
    view = (math.prod(shape[:dimension]), shape[dimension], math.prod(shape[dimension + 1:]))
    ops = ", ".join(f"np.ascontiguousarray({a}).reshape({view!r})" for a in args)
    return f"loop_arrays.sort{len(args)}({ops}, {shape!r})"


sort_p = Primitive("sort", abstract_eval=_sort_shape, impl=_sort_impl,
                   jvp=_sort_jvp, vjp=_sort_vjp, batch=_sort_batch, multiple_results=True,
                   numba_source=_numba_sort, onnx=_onnx_sort)


def _dimension(dimension, ndim):
    if not -ndim <= dimension < ndim:
        raise ShapeError(f"sort: dimension {dimension} is out of range for operands of "
                         f"rank {ndim}")
    return dimension % ndim


def sort_multi(operands, dimension=-1, num_keys=1):
    """Sort same-shaped operands along `dimension` by the first num_keys of them
    (lexicographically, stably); returns a list, one sorted array per operand."""
    operands = list(operands)
    if not operands:
        raise ValueError("sort: needs at least one operand")
    dimension = _dimension(int(dimension), len(operands[0].shape))
    return sort_p.bind(*operands, dimension=dimension, num_keys=int(num_keys))


def sort(operand: Array | np.ndarray | Sequence[Array | np.ndarray], dimension: int = -1,
         is_stable: bool = True, num_keys: int = 1) -> Any:
    """lax.sort: an array, or a tuple of arrays sorted by the first num_keys.
    The sort is always stable."""
    if isinstance(operand, (list, tuple)):
        return tuple(sort_multi(operand, dimension, num_keys))
    return sort_multi([operand], dimension, num_keys)[0]


def sort_key_val(keys: Array | np.ndarray, values: Array | np.ndarray, dimension: int = -1,
                 is_stable: bool = True) -> tuple[Array, Array]:
    """lax.sort_key_val: keys sorted, values permuted with them."""
    k, v = sort_multi([keys, values], dimension, 1)
    return k, v


def argsort(operand: Array | np.ndarray, dimension: int = -1,
            index_dtype: DTypeLike = np.int64) -> Array:
    """The stable sorting permutation along `dimension`."""
    dimension = _dimension(int(dimension), len(operand.shape))
    iota = S.iota(index_dtype, operand.shape, dimension)
    return sort_p.bind(operand, iota, dimension=dimension, num_keys=1)[1]
