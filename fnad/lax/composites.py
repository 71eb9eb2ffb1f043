"""The lax functions JAX defines over its primitives: shape and slicing helpers,
selection among several cases, bit counts and shifts with lax's rules for shifts past
the width, top_k, cumlogsumexp. Like the rest of fnad.lax, they do not promote dtypes."""
from typing import Any, Sequence, TypeVar

import numpy as np

from ..abstract import broadcast_shapes as _broadcast_shapes
from ..dtypes import moment_dtype
from ..errors import DTypeError, ShapeError
from ..primitives import shape as S
from ..primitives.structural import broadcast_in_dim
from ..numpy import _creation, _elementwise as E, _indexing, _products, _shapes, _sorting
from ..numpy import _float_bits, _integer_math
from ..numpy._reductions import all as _all, any as _any
from ..numpy._core import as_operand
from .control_flow import scan
from .operators import convert_element_type, select
from ..typing import Array, ArrayLike, DTypeLike, Shape

__all__ = ["full", "full_like", "broadcast", "broadcast_to_rank", "broadcast_shapes",
           "index_in_dim", "slice_in_dim", "index_take", "split", "collapse", "tile",
           "select_n", "top_k", "cbrt", "exp2", "reciprocal", "nextafter", "shift_left",
           "shift_right_logical", "shift_right_arithmetic", "population_count", "clz",
           "reduce_and", "reduce_or", "reduce_xor", "cumlogsumexp", "batch_matmul",
           "optimization_barrier"]

_T = TypeVar("_T")


# --------------------------------------------------------------------------- shapes

def full(shape: Sequence[int], fill_value: ArrayLike, dtype: DTypeLike | None = None) -> Array:
    return _creation.full(shape, fill_value, dtype)


def full_like(x: Array | np.ndarray, fill_value: ArrayLike, dtype: DTypeLike | None = None,
              shape: Sequence[int] | None = None) -> Array:
    return _creation.full(tuple(x.shape) if shape is None else shape, fill_value,
                          x.dtype if dtype is None else dtype)


def broadcast(operand: ArrayLike, sizes: Sequence[int]) -> Array:
    """operand with new leading axes of the given sizes."""
    operand = as_operand(operand)
    sizes = tuple(int(s) for s in sizes)
    return broadcast_in_dim(operand, sizes + tuple(operand.shape),
                            tuple(range(len(sizes), len(sizes) + operand.ndim)))


def broadcast_to_rank(x: ArrayLike, rank: int) -> Array:
    """x with leading axes of size 1 up to `rank` axes."""
    x = as_operand(x)
    return S.reshape(x, (1,) * max(0, rank - x.ndim) + tuple(x.shape))


def broadcast_shapes(*shapes: Sequence[int]) -> Shape:
    return _broadcast_shapes("broadcast_shapes", *[tuple(s) for s in shapes])


def index_in_dim(operand: ArrayLike, index: int, axis: int = 0, keepdims: bool = True) -> Array:
    operand = as_operand(operand)
    n = operand.shape[axis]
    if not -n <= index < n:
        raise IndexError(f"index_in_dim: index {index} is out of range for axis {axis} of "
                         f"size {n} (operand shape {tuple(operand.shape)})")
    out = slice_in_dim(operand, index % n, index % n + 1, 1, axis)
    return out if keepdims else S.squeeze(out, (axis % operand.ndim,))


def slice_in_dim(operand: ArrayLike, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Array:
    operand = as_operand(operand)
    axis = axis % operand.ndim
    n = operand.shape[axis]
    start, limit, _ = slice(start_index, limit_index).indices(n)
    starts = [0] * operand.ndim
    limits = list(operand.shape)
    strides = [1] * operand.ndim
    starts[axis], limits[axis], strides[axis] = start, max(start, limit), int(stride)
    return S.slice(operand, starts, limits, strides)


def index_take(src: ArrayLike, idxs: Sequence[ArrayLike], axes: Sequence[int]) -> Array:
    """src indexed by one index array per axis in `axes` (numpy's advanced indexing)."""
    src = as_operand(src)
    key: list[Any] = [slice(None)] * src.ndim
    for index, axis in zip(idxs, axes):
        key[axis] = as_operand(index)
    return src[tuple(key)]


def split(operand: ArrayLike, sizes: Sequence[int], axis: int = 0) -> list[Array]:
    """Consecutive pieces of operand along axis, of the given sizes (which must add
    up to the axis' length)."""
    operand = as_operand(operand)
    sizes = [int(s) for s in sizes]
    if sum(sizes) != operand.shape[axis] or min(sizes, default=0) < 0:
        raise ShapeError(f"split: sizes {sizes} do not add up to axis {axis}'s length "
                         f"{operand.shape[axis]} (operand shape {tuple(operand.shape)})")
    points = np.cumsum(sizes)[:-1]
    return _shapes.split(operand, [int(p) for p in points], axis)


def collapse(operand: ArrayLike, start_dimension: int, stop_dimension: int | None = None) -> Array:
    """operand with axes start_dimension .. stop_dimension - 1 merged into one."""
    operand = as_operand(operand)
    stop = operand.ndim if stop_dimension is None else stop_dimension % (operand.ndim + 1)
    start = start_dimension % operand.ndim if operand.ndim else 0
    shape = tuple(operand.shape)
    merged = int(np.prod(shape[start:stop], dtype=np.int64))
    return S.reshape(operand, shape[:start] + (merged,) + shape[stop:])


def tile(operand: ArrayLike, reps: Sequence[int]) -> Array:
    return _shapes.tile(operand, reps)


# --------------------------------------------------------------------------- selection

def select_n(which: ArrayLike, *cases: ArrayLike) -> Array:
    """cases[which] elementwise: `which` is a bool (two cases) or an integer array."""
    if not cases:
        raise ValueError("select_n: needs at least one case")
    which = as_operand(which)
    if len(cases) == 1:
        return as_operand(cases[0])
    if which.dtype.kind == "b":
        if len(cases) != 2:
            raise ValueError(f"select_n: a boolean `which` picks between 2 cases, got "
                             f"{len(cases)}")
        return select(which, cases[1], cases[0])
    out = as_operand(cases[-1])
    for i in range(len(cases) - 2, -1, -1):
        out = select(E.less_equal(which, i), as_operand(cases[i]), out)
    return out


def top_k(operand: ArrayLike, k: int) -> tuple[Array, Array]:
    """The k largest entries along the last axis, largest first (ties: the lower index
    first), and their indices."""
    operand = as_operand(operand)
    if not 0 <= int(k) <= operand.shape[-1]:
        raise ValueError(f"top_k: k={k} is outside [0, {operand.shape[-1]}] for operand "
                         f"shape {tuple(operand.shape)}")
    order = _sorting.argsort(operand, axis=-1, stable=True, descending=True)
    index = order[..., :int(k)]
    return _indexing.take_along_axis(operand, index, axis=-1), index


# --------------------------------------------------------------------------- arithmetic

def cbrt(x: ArrayLike) -> Array:
    return E.cbrt(x)


def exp2(x: ArrayLike) -> Array:
    return E.exp2(x)


def reciprocal(x: ArrayLike) -> Array:
    x = as_operand(x)
    if x.dtype.kind not in "fc":
        raise DTypeError(f"reciprocal needs a float or complex operand, got {x.dtype}")
    return E.divide(np.ones((), x.dtype), x)


def nextafter(x1: ArrayLike, x2: ArrayLike) -> Array:
    return _float_bits.nextafter(x1, x2)


def batch_matmul(lhs: ArrayLike, rhs: ArrayLike, precision: Any = None) -> Array:
    lhs, rhs = as_operand(lhs), as_operand(rhs)
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim:
        raise ShapeError(f"batch_matmul: operands need the same rank of at least 2, got "
                         f"shapes {tuple(lhs.shape)} and {tuple(rhs.shape)}")
    return _products.matmul(lhs, rhs, precision=precision)


def optimization_barrier(operand: _T) -> _T:
    """Its operand: fnad's compiler neither moves computations across calls nor merges
    them in a way the barrier would prevent, so nothing is needed."""
    return operand


def cumlogsumexp(operand: ArrayLike, axis: int = 0, reverse: bool = False) -> Array:
    """log(cumsum(exp(operand))) along axis, without overflow: a running logaddexp."""
    operand = as_operand(operand)
    if operand.dtype.kind not in "fc":
        raise DTypeError(f"cumlogsumexp needs a float operand, got {operand.dtype}")
    dtype = operand.dtype
    # float16 runs in float32 and rounds once (a float16 running sum drifts an ulp)
    moved = convert_element_type(_shapes.moveaxis(operand, axis, 0), moment_dtype(dtype))

    def step(total, x):
        total = E.logaddexp(total, x)
        return total, total
    start = _creation.full(tuple(moved.shape[1:]), -np.inf, moved.dtype)
    _, out = scan(step, start, moved, reverse=reverse)
    return convert_element_type(_shapes.moveaxis(out, 0, axis), dtype)


# --------------------------------------------------------------------------- bits

def _integer(x: Any, what: str) -> Array:
    x = as_operand(x)
    if x.dtype.kind not in "iu":
        raise DTypeError(f"{what} needs an integer operand, got {x.dtype} "
                         f"(shape {tuple(x.shape)})")
    return x


def _unsigned(dtype):
    return np.dtype(f"u{dtype.itemsize}")


def shift_left(x: ArrayLike, y: ArrayLike) -> Array:
    """x << y; 0 where y is negative or at least x's width (lax's rule)."""
    x, y = _integer(x, "shift_left"), _integer(y, "shift_left")
    bits = x.dtype.itemsize * 8
    out = _integer_math.left_shift(x, E.clip(y, 0, bits - 1))
    return E.where((y < 0) | (y >= bits), np.zeros((), x.dtype), out)


def shift_right_logical(x: ArrayLike, y: ArrayLike) -> Array:
    """x >> y filling with zeros (x's bits read as unsigned); 0 past the width."""
    x, y = _integer(x, "shift_right_logical"), _integer(y, "shift_right_logical")
    bits = x.dtype.itemsize * 8
    u = convert_element_type(x, _unsigned(x.dtype))
    out = convert_element_type(_integer_math.right_shift(u, convert_element_type(
        E.clip(y, 0, bits - 1), u.dtype)), x.dtype)
    return E.where((y < 0) | (y >= bits), np.zeros((), x.dtype), out)


def shift_right_arithmetic(x: ArrayLike, y: ArrayLike) -> Array:
    """x >> y filling with the sign bit; past the width, all sign bits."""
    x, y = _integer(x, "shift_right_arithmetic"), _integer(y, "shift_right_arithmetic")
    bits = x.dtype.itemsize * 8
    if x.dtype.kind == "u":     # lax reads the bits as signed
        signed = convert_element_type(x, np.dtype(f"i{x.dtype.itemsize}"))
        return convert_element_type(shift_right_arithmetic(signed, y), x.dtype)
    return _integer_math.right_shift(x, E.where((y < 0) | (y >= bits), bits - 1, y))


def population_count(x: ArrayLike) -> Array:
    x = _integer(x, "population_count")
    # of the two's-complement bits (numpy's bitwise_count counts |x|'s)
    u = convert_element_type(x, _unsigned(x.dtype))
    return convert_element_type(_integer_math.bitwise_count(u), x.dtype)


def clz(x: ArrayLike) -> Array:
    """The number of leading zero bits: a binary search over halves of the width."""
    x = _integer(x, "clz")
    bits = x.dtype.itemsize * 8
    u = convert_element_type(x, _unsigned(x.dtype))
    count = np.zeros((), x.dtype)
    step = bits // 2
    while step:
        top_clear = _integer_math.right_shift(u, np.asarray(bits - step, u.dtype)) == 0
        count = E.where(top_clear, count + np.asarray(step, x.dtype), count)
        u = E.where(top_clear, _integer_math.left_shift(u, np.asarray(step, u.dtype)), u)
        step //= 2
    return E.where(u == 0, np.asarray(bits, x.dtype), count)


def _bitwise_reduce(name, op, identity, operand, axes):
    """op folded over axes by halving: log2(n) elementwise steps, not n."""
    operand = as_operand(operand)
    if operand.dtype.kind not in "biu":
        raise DTypeError(f"{name} needs a boolean or integer operand, got {operand.dtype}")
    for axis in sorted((a % operand.ndim for a in axes), reverse=True):
        if operand.shape[axis] == 0:
            operand = _creation.full(tuple(operand.shape[:axis] + operand.shape[axis + 1:]),
                                     identity, operand.dtype)
            continue
        while operand.shape[axis] > 1:
            n = operand.shape[axis]
            if n % 2:
                pad = _creation.full(tuple(1 if d == axis else s for d, s in
                                           enumerate(operand.shape)), identity, operand.dtype)
                operand = _shapes.concatenate([operand, pad], axis)
                n += 1
            operand = op(slice_in_dim(operand, 0, n, 2, axis),
                         slice_in_dim(operand, 1, n, 2, axis))
        operand = S.squeeze(operand, (axis,))
    return operand


def reduce_and(operand: ArrayLike, axes: Sequence[int]) -> Array:
    operand = as_operand(operand)
    if operand.dtype.kind == "b":
        return _all(operand, axis=tuple(axes))
    every_bit = np.array(-1).astype(operand.dtype)      # all ones in any integer width
    return _bitwise_reduce("reduce_and", E.bitwise_and, every_bit, operand, axes)


def reduce_or(operand: ArrayLike, axes: Sequence[int]) -> Array:
    operand = as_operand(operand)
    if operand.dtype.kind == "b":
        return _any(operand, axis=tuple(axes))
    return _bitwise_reduce("reduce_or", E.bitwise_or, 0, operand, axes)


def reduce_xor(operand: ArrayLike, axes: Sequence[int]) -> Array:
    return _bitwise_reduce("reduce_xor", E.bitwise_xor, 0, operand, axes)
