"""numpy's shape manipulation over the structural primitives."""
import builtins
import operator
from typing import Any, Sequence

import numpy as np

from ..errors import ConcretizationError as _ConcretizationError, ShapeError
from ..primitives import shape as S
from ..array import Array as _Array
from ..core import Tracer as _Tracer
from ._core import as_operand, astype, promote, normalize_axis, normalize_axes, stack  # noqa: F401
from ..typing import Array, ArrayLike, DTypeLike


def shape(a: ArrayLike) -> Any:
    return tuple(as_operand(a).shape)


def ndim(a: ArrayLike) -> Any:
    return len(shape(a))


def size(a: ArrayLike, axis: int | Sequence[int] | None = None) -> Any:
    dims = shape(a)
    if axis is None:
        return int(np.prod(dims, dtype=np.int64))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return int(np.prod([dims[normalize_axis(ax, len(dims))] for ax in axes], dtype=np.int64))


def reshape(a: ArrayLike, shape: int | Sequence[int] | None = None, order: str = "C", *,
            newshape: Any = None, copy: Any = None) -> Array:
    """a with the given shape (one entry may be -1); order "F" reads and writes in
    column-major order. `newshape` is numpy's older name for shape. copy has no
    effect: an fnad array cannot change, so a copy and a view are the same value."""
    if (shape is None) == (newshape is None):
        raise TypeError("reshape: pass exactly one of shape and newshape")
    newshape = shape if newshape is None else newshape
    a = as_operand(a)
    if isinstance(newshape, (int, np.integer)):
        newshape = (newshape,)
    if order == "F":
        return transpose(reshape(transpose(a), tuple(reversed(tuple(newshape)))))
    if order != "C":
        raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")
    newshape = [operator.index(n) for n in newshape]
    if newshape.count(-1) > 1:
        raise ShapeError(f"reshape: can only specify one unknown dimension, got {newshape}")
    if -1 in newshape:
        known = int(np.prod([n for n in newshape if n != -1], dtype=np.int64))
        if known == 0 or a.size % known:
            raise ShapeError(f"cannot reshape array of shape {tuple(a.shape)} into "
                             f"shape {tuple(newshape)}")
        newshape[newshape.index(-1)] = a.size // known
    if int(np.prod(newshape, dtype=np.int64)) != a.size:
        raise ShapeError(f"cannot reshape array of shape {tuple(a.shape)} (size {a.size}) "
                         f"into shape {tuple(newshape)}")
    if tuple(newshape) == tuple(a.shape):
        return a
    return S.reshape(a, newshape)


def ravel(a: ArrayLike, order: str = "C") -> Array:
    a = as_operand(a)
    if order == "F":
        a = transpose(a)
    elif order not in ("C", "A", "K"):
        raise ValueError(f"ravel: order must be 'C' or 'F', got {order!r}")
    return reshape(a, (a.size,))


def transpose(a: ArrayLike, axes: Any = None) -> Array:
    a = as_operand(a)
    if axes is None:
        axes = tuple(reversed(range(a.ndim)))
    axes = tuple(normalize_axis(ax, a.ndim) for ax in axes)
    if axes == tuple(range(a.ndim)):
        return a
    return S.transpose(a, axes)


def matrix_transpose(x: ArrayLike, /) -> Array:
    x = as_operand(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose needs an array of at least 2 dimensions, got "
                         f"shape {tuple(x.shape)}")
    return swapaxes(x, -1, -2)


def swapaxes(a: ArrayLike, axis1: Any, axis2: Any) -> Array:
    a = as_operand(a)
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a: ArrayLike, source: Any, destination: Any) -> Array:
    a = as_operand(a)
    source = [normalize_axis(s, a.ndim) for s in np.atleast_1d(source)]
    destination = [normalize_axis(d, a.ndim) for d in np.atleast_1d(destination)]
    if len(source) != len(destination):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [n for n in range(a.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(a, order)


def expand_dims(a: ArrayLike, axis: int | Sequence[int]) -> Array:
    a = as_operand(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = a.ndim + len(axes)
    return S.expand_dims(a, tuple(normalize_axis(ax, out_ndim) for ax in axes))


def squeeze(a: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    a = as_operand(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(a.shape) if n == 1)
    else:
        axes = normalize_axes(axis, a.ndim)
        bad = [ax for ax in axes if a.shape[ax] != 1]
        if bad:
            raise ShapeError(f"squeeze: cannot select axis {bad[0]} of shape "
                             f"{tuple(a.shape)}: its size is not 1")
    return S.squeeze(a, axes) if axes else a


def _each(one):
    """numpy's atleast_Nd(*arys): one array for one argument, a list for several."""
    def call(*arys: ArrayLike) -> Any:
        out = [one(a) for a in arys]
        return out[0] if len(out) == 1 else out
    call.__name__ = call.__qualname__ = one.__name__.lstrip("_")
    call.__doc__ = one.__doc__
    return call


def _atleast_1d(a):
    """a with at least one dimension: a 0-d array becomes shape (1,)."""
    a = as_operand(a)
    return reshape(a, (1,)) if a.ndim == 0 else a


def _atleast_2d(a):
    """a with at least two dimensions, added in front: (N,) becomes (1, N)."""
    a = _atleast_1d(a)
    return reshape(a, (1,) + tuple(a.shape)) if a.ndim == 1 else a


def _atleast_3d(a):
    """a with at least three dimensions: (N,) becomes (1, N, 1), (M, N) (M, N, 1)."""
    a = as_operand(a)
    if a.ndim >= 3:
        return a
    shape = tuple(a.shape)
    return reshape(a, {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[a.ndim])


atleast_1d, atleast_2d, atleast_3d = _each(_atleast_1d), _each(_atleast_2d), _each(_atleast_3d)


def concatenate(arrays: Any, axis: int | None = 0, dtype: DTypeLike | None = None) -> Array:
    if isinstance(arrays, _Tracer) or type(arrays) is _Array or isinstance(arrays, np.ndarray):
        arrays = list(unstack(arrays))      # numpy iterates over the leading axis
    if not len(arrays):
        raise ValueError("concatenate: needs at least one array")
    arrays = promote(*arrays)
    if dtype is not None:
        arrays = [astype(a, dtype) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    first = arrays[0]
    if first.ndim == 0:
        raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, first.ndim)
    if len(arrays) == 1:
        return first
    return S.concatenate(arrays, axis)


def concat(arrays: Any, /, *, axis: int = 0) -> Array:
    """The array API's name for concatenate."""
    return concatenate(arrays, axis)


def hstack(tup: Any, dtype: DTypeLike | None = None) -> Array:
    arrays = [_atleast_1d(a) for a in tup]
    return concatenate(arrays, 0 if arrays[0].ndim == 1 else 1, dtype)


def vstack(tup: Any, dtype: DTypeLike | None = None) -> Array:
    return concatenate([_atleast_2d(a) for a in tup], 0, dtype)


def dstack(tup: Any, dtype: DTypeLike | None = None) -> Array:
    """The arrays, made at least 3-d, joined along the third axis."""
    return concatenate([_atleast_3d(a) for a in tup], 2, dtype)


row_stack = vstack


def column_stack(tup: Any) -> Array:
    arrays = [as_operand(a) for a in tup]
    return concatenate([reshape(a, (-1, 1)) if a.ndim == 1 else a for a in arrays], 1)


def split(ary: ArrayLike, indices_or_sections: Any, axis: int = 0) -> Any:
    a = as_operand(ary)
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ShapeError(f"split: array split along axis {axis} of size {n} does not "
                             f"result in {sections} equal parts")
        step = n // sections
        bounds = [i * step for i in range(sections + 1)]
    else:
        # each point bounds a Python slice: negative ones count from the end
        bounds = [0] + [builtins.min(builtins.max(i + n if i < 0 else i, 0), n)
                        for i in _static_indices(indices_or_sections, "split")] + [n]
    return [take_range(a, lo, builtins.max(lo, hi), axis) for lo, hi in zip(bounds, bounds[1:])]


def array_split(ary: ArrayLike, indices_or_sections: Any, axis: int = 0) -> Any:
    """split, where an int need not divide the axis: the first n % sections parts
    are one longer."""
    a = as_operand(ary)
    if not isinstance(indices_or_sections, (int, np.integer)):
        return split(a, _static_indices(indices_or_sections, "array_split"), axis)
    sections = int(indices_or_sections)
    if sections <= 0:
        raise ValueError(f"array_split: the number of sections must be positive, got "
                         f"{sections}")
    n = a.shape[normalize_axis(axis, a.ndim)]
    small, extra = divmod(n, sections)
    sizes = [small + 1] * extra + [small] * (sections - extra)
    return split(a, list(np.cumsum(sizes)[:-1]), axis)


def _static_indices(indices, name):
    """Split points as Python ints: they fix the parts' shapes, so they must be known."""
    if isinstance(indices, _Tracer):
        try:
            indices = np.asarray(indices.concrete())
        except Exception:
            raise _ConcretizationError(
                f"{name}: the split points must be concrete (they fix the shapes of the "
                f"parts), but they are traced by {indices._trace.name}; pass them as a "
                f"Python list or a static argument") from None
    elif type(indices) is _Array:
        indices = indices._value
    values = np.asarray(indices)
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        raise TypeError(f"{name}: split points must be a 1-d sequence of integers, got "
                        f"{indices!r}")
    return [int(i) for i in values]


def _axis_split(name, ary, indices_or_sections, axis, min_ndim):
    a = as_operand(ary)
    if a.ndim < min_ndim:
        raise ShapeError(f"{name} only works on arrays of {min_ndim} or more dimensions, "
                         f"got shape {tuple(a.shape)}")
    return split(a, indices_or_sections, axis)


def hsplit(ary: ArrayLike, indices_or_sections: Any) -> Any:
    """split along the second axis (the first for 1-d arrays)."""
    a = as_operand(ary)
    return _axis_split("hsplit", a, indices_or_sections, 1 if a.ndim > 1 else 0, 1)


def vsplit(ary: ArrayLike, indices_or_sections: Any) -> Any:
    """split along the first axis of an array of at least 2 dimensions."""
    return _axis_split("vsplit", ary, indices_or_sections, 0, 2)


def dsplit(ary: ArrayLike, indices_or_sections: Any) -> Any:
    """split along the third axis of an array of at least 3 dimensions."""
    return _axis_split("dsplit", ary, indices_or_sections, 2, 3)


def unstack(x: ArrayLike, /, *, axis: int = 0) -> Any:
    """The slices of x along axis, as a tuple (stack's inverse)."""
    x = as_operand(x)
    if x.ndim == 0:
        raise ShapeError("unstack needs an array of at least 1 dimension, got a 0-d one")
    axis = normalize_axis(axis, x.ndim)
    return tuple(S.squeeze(take_range(x, i, i + 1, axis), (axis,))
                 for i in range(x.shape[axis]))


def permute_dims(a: ArrayLike, /, axes: Any) -> Array:
    """The array API's name for transpose (axes required)."""
    a = as_operand(a)
    axes = tuple(axes)
    if sorted(normalize_axis(ax, a.ndim) for ax in axes) != list(range(a.ndim)):
        raise ValueError(f"permute_dims: axes {axes} are not a permutation of the "
                         f"{a.ndim} axes of an array of shape {tuple(a.shape)}")
    return transpose(a, axes)


def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """numpy's older moveaxis: axis is moved to lie before position start."""
    a = as_operand(a)
    axis = normalize_axis(axis, a.ndim)
    if not -a.ndim <= start <= a.ndim:
        raise ShapeError(f"rollaxis: start {start} is out of range for an array of "
                         f"dimension {a.ndim}")
    if start < 0:
        start += a.ndim
    if axis < start:
        start -= 1      # the axis itself no longer counts once it is taken out
    return a if axis == start else moveaxis(a, axis, start)


def rot90(m: ArrayLike, k: int = 1, axes: Any = (0, 1)) -> Array:
    """m rotated by 90 degrees k times, from the first of axes towards the second."""
    m = as_operand(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must name exactly 2 axes, got {axes}")
    if m.ndim < 2:
        raise ShapeError(f"rot90 needs an array of at least 2 dimensions, got shape "
                         f"{tuple(m.shape)}")
    a0, a1 = (normalize_axis(ax, m.ndim) for ax in axes)
    if a0 == a1:
        raise ValueError(f"rot90: the two axes must differ, got {axes}")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(m, (a0, a1))
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = a1, a0
    # a quarter turn is a flip and a transpose, in one order or the other
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


def resize(a: ArrayLike, new_shape: Any) -> Array:
    """An array of new_shape filled by repeating a's values in order (zeros if a is
    empty), as numpy.resize."""
    a = as_operand(a)
    new_shape = (operator.index(new_shape),) if isinstance(new_shape, (int, np.integer)) \
        else tuple(operator.index(n) for n in new_shape)
    if any(n < 0 for n in new_shape):
        raise ValueError(f"resize: all dimensions must be non-negative, got {new_shape}")
    size = int(np.prod(new_shape, dtype=np.int64))
    if a.size == 0 or size == 0:
        return S.broadcast_in_dim(np.zeros((), a.dtype), new_shape, ())
    flat = ravel(a)
    reps = -(-size // a.size)
    repeated = tile(flat, reps) if reps > 1 else flat
    return reshape(take_range(repeated, 0, size, 0), new_shape)


def take_range(a: Any, start: Any, stop: Any, axis: int, step: int = 1) -> Array:
    """a[start:stop:step] along one axis."""
    starts = [0] * a.ndim
    limits = list(a.shape)
    strides = [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return S.slice(a, starts, limits, strides)


def broadcast_to(array: Any, shape: Any) -> Array:
    a = as_operand(array)
    shape = tuple(shape)
    if tuple(a.shape) == shape:
        return a
    lead = len(shape) - a.ndim
    if lead < 0 or any(n not in (1, m) for n, m in zip(a.shape, shape[lead:])):
        raise ShapeError(f"cannot broadcast an array of shape {tuple(a.shape)} to shape {shape}")
    return S.broadcast_in_dim(a, shape, tuple(range(lead, len(shape))))


def broadcast_shapes(*shapes: Any) -> Any:
    return np.broadcast_shapes(*shapes)


def broadcast_arrays(*args: Any) -> Any:
    arrays = [as_operand(a) for a in args]
    shape = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def tile(A: Any, reps: Any) -> Array:
    a = as_operand(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    ndim = builtins.max(a.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    a = reshape(a, (1,) * (ndim - a.ndim) + tuple(a.shape))
    # Broadcast each axis to (rep, n) and merge the two.
    interleaved = []
    for r, n in zip(reps, a.shape):
        interleaved += [r, n]
    expanded = S.broadcast_in_dim(a, tuple(interleaved), tuple(range(1, 2 * ndim, 2)))
    return reshape(expanded, tuple(r * n for r, n in zip(reps, a.shape)))


def flip(m: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    a = as_operand(m)
    axes = normalize_axes(axis, a.ndim)
    return S.rev(a, axes) if axes else a


def fliplr(m: ArrayLike) -> Array:
    return flip(m, 1)


def flipud(m: ArrayLike) -> Array:
    return flip(m, 0)


def roll(a: Any, shift: Any, axis: Any = None) -> Array:
    a = as_operand(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if n == 0:
        return a
    shift = int(shift) % n
    if shift == 0:
        return a
    return concatenate([take_range(a, n - shift, n, axis), take_range(a, 0, n - shift, axis)],
                       axis)


def broadcast_along(a: Any, axis: int, n: Any) -> Array:
    """Repeat a size-1 axis n times."""
    shape = list(a.shape)
    shape[axis] = n
    return S.broadcast_in_dim(a, tuple(shape), tuple(range(a.ndim)))
