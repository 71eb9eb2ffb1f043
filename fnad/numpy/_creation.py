"""Array creation. Results are concrete Arrays (constants to every transform)."""
import numpy as np
from typing import Any, Sequence

import operator

from ..array import Array
from ..core import Tracer
from .. import dtypes
from ..primitives import shape as S
from ._core import as_operand, astype, promote_inexact
from ._elementwise import abs, floor, log10, power, where
from ._shapes import (broadcast_arrays, broadcast_to, concatenate, moveaxis, reshape,
                      take_range)
from ..typing import Array, ArrayLike, DTypeLike

__all__ = ["zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
           "full_like", "arange", "linspace", "eye", "identity", "tri", "meshgrid",
           "logspace", "geomspace", "fromfunction", "fromiter", "frombuffer", "fromstring",
           "fromfile", "copy"]


def _dtype(dtype, fill=0.0):
    """An explicit dtype, else the default one for a Python `fill` (float32/int32, or
    float64/int64 with x64)."""
    if dtype is None:
        if isinstance(fill, (np.generic, np.ndarray)):
            return dtypes.check_supported(fill.dtype)
        return dtypes.canonical_python_dtype(fill)
    return dtypes.check_supported(dtype)


def _shape(shape):
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)


def zeros(shape: int | Sequence[int], dtype: DTypeLike | None = None) -> Array:
    return Array(np.zeros(_shape(shape), _dtype(dtype)))


def ones(shape: int | Sequence[int], dtype: DTypeLike | None = None) -> Array:
    return Array(np.ones(_shape(shape), _dtype(dtype)))


def empty(shape: int | Sequence[int], dtype: DTypeLike | None = None) -> Array:
    return zeros(shape, dtype)


def full(shape: int | Sequence[int], fill_value: ArrayLike,
         dtype: DTypeLike | None = None) -> Array:
    if dtype is None and hasattr(fill_value, "dtype"):
        dtype = fill_value.dtype
    if not isinstance(fill_value, (int, float, bool, np.generic, np.ndarray)):
        value = as_operand(fill_value)
        return broadcast_to(astype(value, dtype or value.dtype), _shape(shape))
    return Array(np.full(_shape(shape), fill_value, _dtype(dtype, fill_value)))


def _like_dtype(a, dtype):
    return dtypes.check_supported(dtype) if dtype is not None else as_operand(a).dtype


def zeros_like(a: ArrayLike, dtype: DTypeLike | None = None,
               shape: int | Sequence[int] | None = None) -> Array:
    return Array(np.zeros(as_operand(a).shape if shape is None else _shape(shape),
                          _like_dtype(a, dtype)))


def ones_like(a: ArrayLike, dtype: DTypeLike | None = None,
              shape: int | Sequence[int] | None = None) -> Array:
    return Array(np.ones(as_operand(a).shape if shape is None else _shape(shape),
                         _like_dtype(a, dtype)))


def empty_like(a: ArrayLike, dtype: DTypeLike | None = None,
               shape: int | Sequence[int] | None = None) -> Array:
    return zeros_like(a, dtype, shape)


def full_like(a: ArrayLike, fill_value: ArrayLike, dtype: DTypeLike | None = None,
              shape: int | Sequence[int] | None = None) -> Array:
    return full(as_operand(a).shape if shape is None else shape, fill_value,
                _like_dtype(a, dtype))


def arange(start: Any, stop: Any = None, step: int = 1, dtype: DTypeLike | None = None) -> Array:
    if dtype is None:
        # As JAX: the bounds' result type, Python numbers weak (arange(5) is the
        # default int, arange(0.5) the default float, arange(np.int8(5)) int8).
        dtype = dtypes.result_type(*[v for v in (start, stop, step) if v is not None])
    return Array(np.arange(start, stop, step, dtype=dtypes.check_supported(dtype)))


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: DTypeLike | None = None, axis: int = 0) -> Any:
    """numpy's points. Python and numpy bounds give numpy's exact values (a constant);
    fnad bounds (traced ones included) give the same formula composed of fnad ops, so
    the points are differentiable in start and stop."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    if not (_is_fnad(start) or _is_fnad(stop)):
        dtype = _bounds_dtype(start, stop) if dtype is None else _dtype(dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.linspace(start, stop, num, endpoint=endpoint, retstep=True, axis=axis)
        values = Array(np.asarray(out[0]).astype(dtype))
        return (values, out[1]) if retstep else values
    return _traced_linspace(start, stop, num, endpoint, retstep, dtype, axis)


def _is_fnad(x):
    return isinstance(x, (Array, Tracer))


def _bounds_dtype(*bounds):
    """The float (or complex) dtype host bounds give, by fnad's lattice: Python numbers
    are weak (the default float), numpy float64 values stay float64."""
    inexact = 0j if any(np.iscomplexobj(b) for b in bounds) else 0.0
    return dtypes.result_type(*bounds, inexact)


def _traced_linspace(start, stop, num, endpoint, retstep, dtype, axis):
    start, stop = promote_inexact(start, stop)
    start, stop = broadcast_arrays(start, stop)
    work = start.dtype
    div = num - 1 if endpoint else num
    ramp = reshape(Array(np.arange(num, dtype=work)), (num,) + (1,) * start.ndim)
    delta = stop - start
    # numpy's formula: index * step + start, and the endpoint exactly stop
    if div > 0:
        step = delta / np.asarray(div, work)
        out = ramp * step + start
    else:       # one point (or none): numpy's step is NaN, the point start
        step = delta * np.asarray(np.nan, work)
        out = ramp * delta + start
    if endpoint and num > 1:
        last = S.expand_dims(stop, (0,))
        out = concatenate([take_range(out, 0, num - 1, 0), last], 0)
    out = moveaxis(out, 0, axis)
    if dtype is not None:
        dtype = dtypes.check_supported(dtype)
        if dtype.kind in "iu":
            out = floor(out)
        out = astype(out, dtype)
    return (out, step) if retstep else out


def eye(N: Any, M: Any = None, k: int = 0, dtype: DTypeLike | None = None) -> Array:
    return Array(np.eye(N, M, k, dtype=_dtype(dtype)))


def identity(n: Any, dtype: DTypeLike | None = None) -> Array:
    return eye(n, dtype=dtype)


def tri(N: Any, M: Any = None, k: int = 0, dtype: DTypeLike | None = None) -> Array:
    return Array(np.tri(N, M, k, dtype=_dtype(dtype)))


def meshgrid(*xi: Any, indexing: str = "xy") -> list[Array]:
    arrays = [as_operand(x) for x in xi]
    n = len(arrays)
    shapes = [x.size for x in arrays]
    if indexing == "xy" and n >= 2:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    out = []
    for i, x in enumerate(arrays):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        view = [1] * n
        view[axis] = x.size
        out.append(broadcast_to(reshape(x, view), shapes))
    return out


def _python_type_dtype(dtype):
    """float, int, bool as dtypes mean fnad's defaults (float32/int32 without x64), as
    JAX reads them; anything else is checked as given."""
    if dtype in (float, int, bool, complex):
        return dtypes.result_type(dtype)
    return dtypes.check_supported(dtype)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: DTypeLike | None = None, axis: int = 0) -> Any:
    """base ** linspace(start, stop): Python bounds are spaced in float64, as numpy's."""
    host_dtype = None if _is_fnad(start) or _is_fnad(stop) or _is_fnad(base) \
        else _bounds_dtype(start, stop, base)
    if host_dtype is None:
        exponents = linspace(start, stop, num, endpoint, axis=axis)
        base, exponents = promote_inexact(base, exponents)
    else:
        exponents = linspace(start, stop, num, endpoint, dtype=np.float64, axis=axis)
        base = np.asarray(base, np.float64)
    out = power(base, exponents)
    if dtype is not None:
        return astype(out, _dtype(dtype))
    return astype(out, out.dtype if host_dtype is None else host_dtype)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: Any = 0) -> Any:
    """Points evenly spaced on a log scale from start to stop (both of one sign, not
    zero); the ends are start and stop exactly."""
    fnad_bounds = _is_fnad(start) or _is_fnad(stop)
    if not fnad_bounds:
        host_dtype = _bounds_dtype(start, stop)
        if start == 0 or stop == 0:
            raise ValueError("geomspace: start and stop must be non-zero")
        if (start < 0) != (stop < 0):
            raise ValueError("geomspace: start and stop must have one sign (fnad has no "
                             "complex path between them)")
        start, stop = np.asarray(start, np.float64), np.asarray(stop, np.float64)
    start, stop = promote_inexact(start, stop)
    sign = where(start < 0, -1.0, 1.0)
    magnitude = logspace(log10(abs(start)), log10(abs(stop)), num, endpoint,
                         base=np.asarray(10.0, start.dtype), axis=0)
    out = sign * magnitude
    # the ends exactly, as numpy sets them
    if num > 0:
        first = S.expand_dims(start, (0,))
        if endpoint and num > 1:
            last = S.expand_dims(stop, (0,))
            out = concatenate([first, take_range(out, 1, num - 1, 0), last], 0)
        else:
            out = concatenate([first, take_range(out, 1, num, 0)], 0)
    out = moveaxis(out, 0, axis)
    if dtype is not None:
        return astype(out, _python_type_dtype(dtype))
    return out if fnad_bounds else astype(out, host_dtype)


def fromfunction(function: Any, shape: Any, *, dtype: DTypeLike = float, **kwargs: Any) -> Array:
    """function(*indices), the indices of every axis as arrays of dtype broadcast
    against each other (shape's entries are static)."""
    shape = _shape(shape)
    dtype = _python_type_dtype(dtype)
    grids = []
    for axis, n in enumerate(shape):
        view = [1] * len(shape)
        view[axis] = n
        grids.append(broadcast_to(Array(np.arange(n, dtype=dtype).reshape(view)), shape))
    return function(*grids, **kwargs)


def fromiter(iterable: Any, dtype: DTypeLike | None, count: int = -1) -> Array:
    """An Array of the values of a Python iterable (read on the host)."""
    return Array(np.fromiter(iterable, dtypes.check_supported(dtype), count))


def frombuffer(buffer: Any, dtype: DTypeLike = float, count: int = -1, offset: int = 0) -> Array:
    """An Array of the buffer's bytes read as dtype (float is float64 here: it names
    the bytes' layout, not a default)."""
    return Array(np.frombuffer(buffer, dtypes.check_supported(dtype), count, offset).copy())


def fromstring(string: Any, dtype: DTypeLike = float, count: int = -1, *, sep: Any) -> Array:
    """An Array of the numbers in a text string separated by sep."""
    if not sep:
        raise ValueError("fromstring: sep must be given (binary mode is numpy's "
                         "deprecated form; use frombuffer)")
    return Array(np.fromstring(string, dtypes.check_supported(dtype), count, sep=sep))


def fromfile(file: Any, dtype: DTypeLike = float, count: int = -1, sep: str = "",
             offset: int = 0) -> Array:
    """An Array of the numbers in a file, raw bytes of dtype (sep="") or text separated
    by sep (read on the host; float is float64 here, the bytes' layout)."""
    return Array(np.fromfile(file, dtypes.check_supported(dtype), count, sep, offset))


def copy(a: ArrayLike, order: Any = None) -> Array:
    """a as an fnad value: Arrays are immutable, so a copy is the array itself; numpy
    arrays are copied in."""
    return as_operand(a)
