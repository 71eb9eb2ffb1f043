"""Turning user values into fnad values, and applying fnad's promotion rule
(fnad.dtypes: JAX's lattice, Python scalars weak, float64 never narrowed)."""
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..array import Array, weakly_typed
from ..core import Tracer
from .. import backend, dtypes
from ..errors import ShapeError
from ..typing import ArrayLike, DTypeLike
from ..primitives import shape as S
from ..primitives.elementwise import convert


def asarray(a: Any, dtype: DTypeLike | None = None, order: str | None = None,
            copy: bool | None = None, *, device: Any = None) -> Array:
    """An fnad value for `a`: an fnad value, a numpy array or scalar, a Python scalar,
    a (nested) list or tuple of any of these, or an object numpy can read through
    `__dlpack__` or `__array__` (a PyTorch tensor, a JAX array, ...).

    Python floats and ints take the default dtypes (float32 and int32, float64 and
    int64 with x64), and a lone Python scalar gives a weakly typed array, as in JAX.
    A list holding fnad values (at any depth) is stacked with fnad's own operations,
    so a derivative or a batch dimension flowing through its entries is kept.

    copy=None copies numpy arrays, so later writes to them cannot change the fnad
    Array, but shares the memory of a `__dlpack__` producer where the layout allows
    (as torch.from_numpy shares numpy's): writing to that tensor later shows through.
    copy=True always copies; copy=False never does, and raises where it must.
    order is accepted as numpy's ("C", "K", "A", None: fnad arrays are C-ordered, and
    the values do not depend on it); device puts the result there (fnad.devices())."""
    if order not in (None, "C", "K", "A", "F"):
        raise ValueError(f"asarray: order must be 'C', 'F', 'K' or 'A', got {order!r}")
    if device is not None:
        return _on_device(asarray(a, dtype, order, copy), device)
    if isinstance(a, (Array, Tracer)):
        if dtype is None:
            return a
        out = astype(a, dtype)
        # An explicit dtype makes the value strongly typed, as in JAX.
        return Array(out._value) if out is a and type(a) is Array and a.weak_type else out
    if isinstance(a, (np.ndarray, np.generic)):
        value = _from_numpy(a, dtype, copy if copy is not None else True)
    elif type(a) in (int, float, complex):
        if dtype is None:
            return weakly_typed(np.asarray(a, dtypes.canonical_python_dtype(a)))
        value = np.asarray(a, dtype)
    elif isinstance(a, (bool, int, float, complex)):
        value = np.asarray(a, dtype if dtype is not None else dtypes.canonical_python_dtype(a))
    elif isinstance(a, (list, tuple)):
        if _holds_fnad_value(a):
            return _stack_nested(a, dtypes.result_type(*_leaves(a)) if dtype is None
                                 else dtypes.check_supported(dtype))
        value = np.array(a, dtype=dtype if dtype is not None else _sequence_dtype(a))
    elif hasattr(a, "__dlpack__") or hasattr(a, "__array__"):
        value = _from_numpy(_foreign(a), dtype, copy if copy is not None else False)
    else:
        raise TypeError(f"cannot convert a {type(a).__name__} to an fnad array")
    dtypes.check_supported(value.dtype)
    return Array(value)


def array(object: Any, dtype: DTypeLike | None = None, copy: bool = True,  # noqa: A002
          order: str = "K", ndmin: int = 0, *, device: Any = None) -> Array:
    """asarray, copying by default (numpy's and JAX's array), with at least `ndmin`
    dimensions (ones are added in front)."""
    out = asarray(object, dtype, order, copy, device=device)
    if out.ndim < ndmin:
        shape = (1,) * (ndmin - out.ndim) + tuple(out.shape)
        out = S.reshape(out, shape)
    return out


def _from_numpy(value, dtype, copy):
    """value (numpy) as an Array buffer in dtype: a copy, or a read-only view of it."""
    if copy:
        return np.array(value, dtype=dtype)
    if dtype is not None and np.dtype(dtype) != value.dtype:
        if copy is False:
            raise ValueError(f"asarray(copy=False): converting {value.dtype} to "
                             f"{np.dtype(dtype)} needs a copy")
        return value.astype(dtype)
    view = np.asarray(value).view()
    view.flags.writeable = False    # fnad never writes into memory it does not own
    return view


def _foreign(a):
    """A numpy view (or copy) of an object from another array library."""
    if hasattr(a, "__dlpack__"):
        try:
            return np.from_dlpack(a)
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass            # not on the cpu, or a layout numpy cannot view: try __array__
    if hasattr(a, "__array__"):
        try:
            return np.asarray(a)
        except (RuntimeError, TypeError, ValueError) as e:
            raise TypeError(f"cannot convert a {type(a).__name__} to an fnad array: "
                            f"{e}") from None
    raise TypeError(f"cannot convert a {type(a).__name__} to an fnad array: its "
                    f"__dlpack__ gives memory numpy cannot read (another device?); "
                    f"move it to the cpu first")


def _holds_fnad_value(seq):
    return any(isinstance(x, (Array, Tracer)) or
               (isinstance(x, (list, tuple)) and _holds_fnad_value(x)) for x in seq)


def _leaves(seq):
    out = []
    for x in seq:
        if isinstance(x, (list, tuple)):
            out.extend(_leaves(x))
        elif isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in (
                int, float, complex, bool):
            out.append(x)
        else:
            raise TypeError(f"cannot convert a {type(x).__name__} inside a list to an "
                            f"fnad array")
    return out


def _stack_nested(seq, dtype):
    """A nested list holding fnad values as one array of dtype, built by stacking, so
    every entry's derivative and batch dimension flows into the result."""
    if not seq:
        return Array(np.zeros((0,), dtype))
    parts = [(_stack_nested(x, dtype) if _holds_fnad_value(x) else asarray(x, dtype))
             if isinstance(x, (list, tuple)) else asarray(x, dtype) for x in seq]
    shapes = {tuple(p.shape) for p in parts}
    if len(shapes) != 1:
        raise ShapeError(f"array: the entries of a list must all have one shape, got "
                         f"{sorted(shapes)}")
    return stack(parts)


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
            elif isinstance(x, (np.ndarray, np.generic, Array)) or type(x) in (
                    int, float, complex, bool):
                leaves.append(x)
            else:
                return None
    if not leaves:
        return dtypes.default_float()       # numpy's empty lists are float
    return dtypes.result_type(*leaves)


def as_operand(x: Any) -> Array:
    """Cheap conversion for operands: fnad values pass through untouched."""
    if isinstance(x, (Array, Tracer)):
        return x
    return asarray(x)


def dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.result_type(x)


def _on_device(x, device):
    if isinstance(x, Tracer):
        raise ValueError(f"device={device!r} for a value traced by {x._trace.name}: place "
                         f"the inputs with fnad.device_put before the transform instead")
    return backend.device_put(x, device)


def astype(x: ArrayLike, dtype: DTypeLike, copy: bool = False, device: Any = None) -> Array:
    """x converted to dtype (JAX's astype: copy has no effect on immutable arrays)."""
    if device is not None:
        return _on_device(astype(x, dtype), device)
    x = as_operand(x)
    if x.dtype == dtype:
        return x
    dtype = dtypes.check_supported(dtype)
    return convert(x, dtype)


def _is_python_scalar(x):
    return type(x) in (int, float, complex, bool)


# promote, promote_pair and promote_inexact are typed as giving Arrays: where Python scalars
# meet arrays they give 0-d numpy arrays, which stand in for Arrays (same attributes and
# operators) in the callers' arithmetic.
def promote(*args: Any) -> list[Array]:
    """Operands converted to their common dtype (fnad.dtypes.result_type). Python
    scalars and weakly typed arrays take the dtype of the others unless their kind is
    higher (a float with integers gives the default float)."""
    ops = [a if _is_python_scalar(a) else as_operand(a) for a in args]
    if ops and all(_is_python_scalar(a) for a in ops):
        ops[0] = asarray(ops[0])
    dtype = dtypes.result_type(*ops)
    out: list[Any] = []
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


def promote_pair(x: Any, y: Any) -> tuple[Array, Array]:
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
            if dtype.kind in "fc" or (ty is int and dtype.kind in "iu"):
                return x, scalar_constant(y, dtype)
    elif tx is float or tx is int:
        if ty is Array or isinstance(y, Tracer):
            dtype = y.dtype
            if dtype.kind in "fc" or (tx is int and dtype.kind in "iu"):
                return scalar_constant(x, dtype), y
    elif (tx is Array or isinstance(x, Tracer)) and (ty is Array or isinstance(y, Tracer)):
        if x.dtype == y.dtype:
            return x, y
    a, b = promote(x, y)
    return a, b


def promote_inexact(*args: Any) -> list[Array]:
    """promote, then to floating point for true division, exp, mean, ...: integers and
    bools compute in float32, 64-bit integers in the default float (as JAX)."""
    out = promote(*args)
    dtype = out[0].dtype
    if dtype.kind not in "fc":
        dtype = dtypes.to_inexact(dtype)
        out = [astype(o, dtype) if isinstance(o, (Array, Tracer)) else o.astype(dtype)
               for o in out]
    return out


def unary_inexact(prim: Any, name: str | None = None, doc: str | None = None
                  ) -> Callable[[ArrayLike], Array]:
    """The library function binding a one-operand primitive that computes in floats:
    integer and bool operands are promoted first (JAX's rule), float and complex
    Arrays go straight to the primitive."""
    def op(x: ArrayLike) -> Array:
        if not (type(x) is Array or isinstance(x, Tracer)) or x.dtype.kind not in "fc":
            x, = promote_inexact(x)
        return prim.bind(x)
    op.__name__ = op.__qualname__ = name or prim.name
    op.__doc__ = doc
    return op


def normalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ShapeError(f"{name} {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis in {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def stack(arrays: Sequence[ArrayLike], axis: int = 0, out: None = None,
          dtype: DTypeLike | None = None) -> Array:
    """The arrays, of one shape, stacked along a new axis (here rather than with the
    other shape functions because asarray of a list of arrays is a stack)."""
    if out is not None:
        raise ValueError("stack: out= is not supported; fnad arrays are immutable")
    operands = [as_operand(a) if dtype is None else astype(a, dtype) for a in arrays]
    if not operands:
        raise ValueError("stack: needs at least one array")
    shapes = {tuple(a.shape) for a in operands}
    if len(shapes) != 1:
        raise ShapeError(f"stack: all input arrays must have the same shape, got "
                         f"{sorted(shapes)}")
    axis = normalize_axis(axis, operands[0].ndim + 1)
    # expand_dims first, then promote, as concatenate does with the expanded arrays
    expanded = promote(*[S.expand_dims(a, (axis,)) for a in operands])
    return expanded[0] if len(expanded) == 1 else S.concatenate(expanded, axis)
