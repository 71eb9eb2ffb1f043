"""Turning user values into fnad values, and applying fnad's promotion rule
(fnad.dtypes: JAX's lattice, Python scalars weak, float64 never narrowed)."""
import math

import numpy as np

from ..array import Array, weakly_typed
from ..core import Tracer
from .. import dtypes
from ..errors import ShapeError
from ..primitives import shape as S
from ..primitives.elementwise import convert_element_type_p


def asarray(a, dtype=None, copy=None):
    """An fnad value for `a`. numpy arrays are copied, so later writes to them cannot
    change the fnad Array; Python floats and ints take the default dtypes (float32 and
    int32, float64 and int64 with x64), and a lone Python scalar gives a weakly typed
    array, as in JAX."""
    if isinstance(a, (Array, Tracer)):
        if dtype is None:
            return a
        out = astype(a, dtype)
        # An explicit dtype makes the value strongly typed, as in JAX.
        return Array(out._value) if out is a and type(a) is Array and a.weak_type else out
    if isinstance(a, (np.ndarray, np.generic)):
        value = np.array(a, dtype=dtype)
    elif type(a) in (int, float):
        if dtype is None:
            return weakly_typed(np.asarray(a, dtypes.canonical_python_dtype(a)))
        value = np.asarray(a, dtype)
    elif isinstance(a, (bool, int, float)):
        value = np.asarray(a, dtype if dtype is not None else dtypes.canonical_python_dtype(a))
    elif isinstance(a, (list, tuple)):
        if any(isinstance(x, (Array, Tracer)) for x in a):
            return stack([asarray(x, dtype) for x in a])
        value = np.array(a, dtype=dtype if dtype is not None else _sequence_dtype(a))
    else:
        raise TypeError(f"cannot convert a {type(a).__name__} to an fnad array")
    dtypes.check_supported(value.dtype)
    return Array(value)


array = asarray


def _sequence_dtype(seq):
    """The dtype of a nested sequence: the promotion of its leaves, the Python scalars
    among them weak (so [1, 2.5] is the default float). None for leaves fnad cannot
    place (numpy then picks a dtype, which check_supported judges)."""
    leaves = []
    stack = [seq]
    while stack:
        for x in stack.pop():
            if isinstance(x, (list, tuple)):
                stack.append(x)
            elif isinstance(x, (np.ndarray, np.generic, Array)) or type(x) in (int, float,
                                                                               bool):
                leaves.append(x)
            else:
                return None
    if not leaves:
        return dtypes.default_float()       # numpy's empty lists are float
    return dtypes.result_type(*leaves)


def as_operand(x):
    """Cheap conversion for operands: fnad values pass through untouched."""
    if isinstance(x, (Array, Tracer)):
        return x
    return asarray(x)


def dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.result_type(x)


def astype(x, dtype):
    x = as_operand(x)
    if x.dtype == dtype:
        return x
    dtype = dtypes.check_supported(dtype)
    return convert_element_type_p.bind(x, new_dtype=dtype)


def _is_python_scalar(x):
    return type(x) in (int, float, bool)


def promote(*args):
    """Operands converted to their common dtype (fnad.dtypes.result_type). Python
    scalars and weakly typed arrays take the dtype of the others unless their kind is
    higher (a float with integers gives the default float)."""
    ops = [a if _is_python_scalar(a) else as_operand(a) for a in args]
    if ops and all(_is_python_scalar(a) for a in ops):
        ops[0] = asarray(ops[0])
    dtype = dtypes.result_type(*ops)
    out = []
    for a in ops:
        if _is_python_scalar(a):
            out.append(np.asarray(a, dtype))
        elif type(a) is Array and a.weak_type and a.dtype != dtype:
            # converts like the Python scalar it was made from: one that does not fit
            # the dtype raises OverflowError instead of wrapping around
            out.append(Array(np.asarray(np.asarray(a).item(), dtype)))
        else:
            out.append(astype(a, dtype))
    return out


_constants = {}     # dtype -> {Python value -> read-only 0-d array}


def scalar_constant(value, dtype):
    """A read-only 0-d array for a Python scalar: numpy combines 0-d arrays with arrays
    faster than numpy scalars, and the small cache saves building one per op. Equal
    Python values (1, 1.0, True) give the same array in one dtype; -0.0 is kept apart."""
    table = _constants.get(dtype)
    if table is None:
        table = _constants[dtype] = {}
    c = table.get(value)
    if c is None or (value == 0 and math.copysign(1.0, value) < 0):
        c = np.array(value, dtype)
        c.flags.writeable = False
        if value == 0 and math.copysign(1.0, value) < 0:
            return c
        if len(table) > 256:
            table.clear()
        table[value] = c
    return c


def promote_pair(x, y):
    """promote for two operands, with fast paths for the common cases: two values of
    one dtype, and a value with a Python scalar of a kind its dtype can hold."""
    # numpy operands take the slow path, which copies them into Arrays.
    tx, ty = type(x), type(y)
    if tx is Array and ty is Array:
        if x._value.dtype == y._value.dtype:
            return x, y
    elif ty is float or ty is int:
        if tx is Array or isinstance(x, Tracer):
            dtype = x.dtype
            if dtype.kind == "f" or (ty is int and dtype.kind in "iu"):
                return x, scalar_constant(y, dtype)
    elif tx is float or tx is int:
        if ty is Array or isinstance(y, Tracer):
            dtype = y.dtype
            if dtype.kind == "f" or (tx is int and dtype.kind in "iu"):
                return scalar_constant(x, dtype), y
    elif (tx is Array or isinstance(x, Tracer)) and (ty is Array or isinstance(y, Tracer)):
        if x.dtype == y.dtype:
            return x, y
    return promote(x, y)


def promote_inexact(*args):
    """promote, then to floating point for true division, exp, mean, ...: integers and
    bools compute in float32, 64-bit integers in the default float (as JAX)."""
    out = promote(*args)
    dtype = out[0].dtype
    if dtype.kind != "f":
        dtype = dtypes.to_inexact(dtype)
        out = [astype(o, dtype) if isinstance(o, (Array, Tracer)) else o.astype(dtype)
               for o in out]
    return out


def normalize_axis(axis, ndim, name="axis"):
    if not -ndim <= axis < max(ndim, 1):
        raise ShapeError(f"{name} {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis in {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def stack(arrays, axis=0):
    """The arrays, of one shape, stacked along a new axis (here rather than with the
    other shape functions because asarray of a list of arrays is a stack)."""
    arrays = [as_operand(a) for a in arrays]
    shapes = {tuple(a.shape) for a in arrays}
    if len(shapes) != 1:
        raise ShapeError(f"stack: all input arrays must have the same shape, got "
                         f"{sorted(shapes)}")
    axis = normalize_axis(axis, arrays[0].ndim + 1)
    # expand_dims first, then promote, as concatenate does with the expanded arrays
    expanded = promote(*[S.expand_dims(a, (axis,)) for a in arrays])
    return expanded[0] if len(expanded) == 1 else S.concatenate(expanded, axis)
