"""numpy's shape manipulation over the structural primitives."""
import builtins
import operator

import numpy as np

from ..errors import ShapeError
from ..primitives import shape as S
from ._core import as_operand, promote, normalize_axis, normalize_axes, stack  # noqa: F401


def shape(a):
    return tuple(as_operand(a).shape)


def ndim(a):
    return len(shape(a))


def size(a):
    return int(np.prod(shape(a), dtype=np.int64))


def reshape(a, newshape, order="C"):
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


def ravel(a):
    a = as_operand(a)
    return reshape(a, (a.size,))


def transpose(a, axes=None):
    a = as_operand(a)
    if axes is None:
        axes = tuple(reversed(range(a.ndim)))
    axes = tuple(normalize_axis(ax, a.ndim) for ax in axes)
    if axes == tuple(range(a.ndim)):
        return a
    return S.transpose(a, axes)


def matrix_transpose(a):
    a = as_operand(a)
    return swapaxes(a, -1, -2)


def swapaxes(a, axis1, axis2):
    a = as_operand(a)
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source, destination):
    a = as_operand(a)
    source = [normalize_axis(s, a.ndim) for s in np.atleast_1d(source)]
    destination = [normalize_axis(d, a.ndim) for d in np.atleast_1d(destination)]
    if len(source) != len(destination):
        raise ValueError("moveaxis: source and destination need the same number of axes")
    order = [n for n in range(a.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(a, order)


def expand_dims(a, axis):
    a = as_operand(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out_ndim = a.ndim + len(axes)
    return S.expand_dims(a, tuple(normalize_axis(ax, out_ndim) for ax in axes))


def squeeze(a, axis=None):
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


def atleast_1d(a):
    a = as_operand(a)
    return reshape(a, (1,)) if a.ndim == 0 else a


def atleast_2d(a):
    a = atleast_1d(a)
    return reshape(a, (1,) + tuple(a.shape)) if a.ndim == 1 else a


def concatenate(arrays, axis=0):
    arrays = promote(*arrays)
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    first = arrays[0]
    if first.ndim == 0:
        raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, first.ndim)
    if len(arrays) == 1:
        return first
    return S.concatenate(arrays, axis)


def hstack(arrays):
    arrays = [atleast_1d(a) for a in arrays]
    return concatenate(arrays, 0 if arrays[0].ndim == 1 else 1)


def vstack(arrays):
    return concatenate([atleast_2d(a) for a in arrays], 0)


row_stack = vstack


def column_stack(arrays):
    arrays = [as_operand(a) for a in arrays]
    return concatenate([reshape(a, (-1, 1)) if a.ndim == 1 else a for a in arrays], 1)


def split(a, indices_or_sections, axis=0):
    a = as_operand(a)
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        if n % indices_or_sections:
            raise ShapeError(f"split: array split along axis {axis} of size {n} does not "
                             f"result in {indices_or_sections} equal parts")
        step = n // indices_or_sections
        bounds = [i * step for i in range(indices_or_sections + 1)]
    else:
        bounds = [0] + [builtins.min(builtins.max(int(i), 0), n)
                        for i in indices_or_sections] + [n]
    return [take_range(a, lo, builtins.max(lo, hi), axis) for lo, hi in zip(bounds, bounds[1:])]


def array_split(a, sections, axis=0):
    a = as_operand(a)
    n = a.shape[normalize_axis(axis, a.ndim)]
    small, extra = divmod(n, sections)
    sizes = [small + 1] * extra + [small] * (sections - extra)
    return split(a, list(np.cumsum(sizes)[:-1]), axis)


def take_range(a, start, stop, axis, step=1):
    """a[start:stop:step] along one axis."""
    starts = [0] * a.ndim
    limits = list(a.shape)
    strides = [1] * a.ndim
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return S.slice(a, starts, limits, strides)


def broadcast_to(a, shape):
    a = as_operand(a)
    shape = tuple(shape)
    if tuple(a.shape) == shape:
        return a
    lead = len(shape) - a.ndim
    if lead < 0 or any(n not in (1, m) for n, m in zip(a.shape, shape[lead:])):
        raise ShapeError(f"cannot broadcast an array of shape {tuple(a.shape)} to shape {shape}")
    return S.broadcast_in_dim(a, shape, tuple(range(lead, len(shape))))


def broadcast_shapes(*shapes):
    return np.broadcast_shapes(*shapes)


def broadcast_arrays(*arrays):
    arrays = [as_operand(a) for a in arrays]
    shape = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def tile(a, reps):
    a = as_operand(a)
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


def flip(a, axis=None):
    a = as_operand(a)
    return S.rev(a, normalize_axes(axis, a.ndim))


def fliplr(a):
    return flip(a, 1)


def flipud(a):
    return flip(a, 0)


def roll(a, shift, axis=None):
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


def broadcast_along(a, axis, n):
    """Repeat a size-1 axis n times."""
    shape = list(a.shape)
    shape[axis] = n
    return S.broadcast_in_dim(a, tuple(shape), tuple(range(a.ndim)))
