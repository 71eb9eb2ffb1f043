"""Array: fnad's immutable concrete value, and the devices it can live on.

An Array owns a numpy buffer that nothing ever writes to: kernels return fresh
buffers and views of existing ones, and `np.asarray(x)` hands out read-only views.
(A jitted call an Array was donated to may reuse its buffer; the Array is deleted.)
Other backends (fnad/backends) subclass Array for values in their own memory (a GPU
array, say), which `np.asarray` copies to the host.
The numpy-style methods and operators (``x + y``, ``x.sum()``, ``x.at[i].set(v)``)
are attached by `fnad.numpy`, which owns their semantics for Arrays and tracers alike;
so are numpy's protocols ``__array_ufunc__`` and ``__array_function__``, through which
``np.exp(x)`` or ``np.sum(x)`` run fnad.numpy's functions (fnad/numpy/_interop.py).
"""
import abc
from typing import TYPE_CHECKING, Any

import numpy as np

from .abstract import ShapedArray
from .errors import DeletedArrayError, ImmutableArrayError


class Device:
    """A device arrays live on: `platform` ('cpu' or 'cuda') and `id`; list them with
    fnad.devices() and move data with fnad.device_put."""
    __slots__ = ("platform", "id")

    def __init__(self, platform, id=0):
        self.platform = platform
        self.id = id

    def __repr__(self):
        return f"{self.platform.capitalize()}Device(id={self.id})"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform,
                                                                          other.id)

    def __hash__(self):
        return hash((self.platform, self.id))


CPU = Device("cpu")
_DLPACK_CPU = 1     # DLPack's device type code for host memory (kDLCPU)


def immutable_error():
    return ImmutableArrayError(
        "fnad Arrays are immutable and do not support item assignment; "
        "use x.at[idx].set(value) (or .add, .multiply, .min, .max), which returns "
        "an updated copy")


class DonatedBuffer:
    """What an Array holds once its buffer was donated to a jitted call (or deleted
    with `Array.delete()`): every use of it raises DeletedArrayError, numpy conversion
    included, so no kernel ever reads a buffer that may hold another value now."""
    __slots__ = ("description",)

    def __init__(self, description):
        self.description = description

    def _error(self, *args, **kwargs):
        return DeletedArrayError(
            f"this Array ({self.description}) was deleted: it was donated to a jitted "
            f"function (donate_argnums / donate_argnames) or deleted with .delete(), and "
            f"its buffer may hold one of that call's results now. Use the function's "
            f"outputs instead, or do not donate arrays you still need.")

    def __getattr__(self, name):
        raise self._error()

    def __array__(self, dtype=None, copy=None):
        raise self._error()

    def __len__(self):
        raise self._error()

    def __bool__(self):
        raise self._error()

    def __float__(self):
        raise self._error()

    __int__ = __index__ = __complex__ = __float__


_new_array = object.__new__


def wrap(value):
    """An Array owning numpy `value` (any numpy scalar is made a 0-d array): how
    kernels' results become Arrays, without Array.__init__'s checks."""
    a = _new_array(Array)
    a._value = value if type(value) is np.ndarray else np.asarray(value)
    return a


def weakly_typed(value):
    """An Array of `value` (a 0-d numpy array made from a Python scalar) marked weak."""
    out = Array(value)
    out._weak = True
    return out


class Array(metaclass=abc.ABCMeta):
    """fnad's immutable n-dimensional array (jax.Array's counterpart), on one device.

    Made by fnad.numpy's functions (`fnp.asarray`, `fnp.zeros`, ...) and returned by
    every fnad operation. It has numpy's attributes and operators (`shape`, `dtype`,
    `x @ y`, `x[i]`, `x.sum()`, ...) but no in-place writes: `x.at[i].set(v)` returns
    an updated copy, and `x[i] = v` raises ImmutableArrayError. `np.asarray(x)` shares
    its memory on the cpu. isinstance(x, fnad.Array) also holds for the traced values a
    transform passes to your function.

    >>> x = fnp.asarray([1.0, 2.0])
    >>> x.at[0].set(5.0)
    Array([5., 2.], dtype=float32)
    """
    # An abstract base class only so that fnad.core can register Tracer as a virtual
    # subclass: isinstance(x, fnad.Array) holds for traced values too, as for JAX's
    # Array. `type(x) is Array` (the eager hot path's test) is untouched by it, and so
    # is isinstance on an Array, which Python answers before asking the metaclass.
    # _committed: set (only) on arrays device_put to the cpu by name. Other cpu
    # Arrays, like JAX's uncommitted ones, follow a GPU operand onto its device.
    # _weak: set (only) by weakly_typed(), for arrays made from one Python scalar.
    __slots__ = ("_value", "_committed", "_weak")
    __array_priority__ = 100

    if TYPE_CHECKING:
        # fnad.numpy attaches the numpy-style operators, methods and properties at import
        # (fnad/numpy/_methods.py); declared here for type checkers only.
        def __getattr__(self, name: str) -> Any: ...
        def __getitem__(self, index: Any) -> "Array": ...
        def __neg__(self) -> "Array": ...
        def __pos__(self) -> "Array": ...
        def __abs__(self) -> "Array": ...
        def __invert__(self) -> "Array": ...
        def __add__(self, other: Any) -> "Array": ...
        def __radd__(self, other: Any) -> "Array": ...
        def __sub__(self, other: Any) -> "Array": ...
        def __rsub__(self, other: Any) -> "Array": ...
        def __mul__(self, other: Any) -> "Array": ...
        def __rmul__(self, other: Any) -> "Array": ...
        def __truediv__(self, other: Any) -> "Array": ...
        def __rtruediv__(self, other: Any) -> "Array": ...
        def __floordiv__(self, other: Any) -> "Array": ...
        def __rfloordiv__(self, other: Any) -> "Array": ...
        def __mod__(self, other: Any) -> "Array": ...
        def __rmod__(self, other: Any) -> "Array": ...
        def __pow__(self, other: Any) -> "Array": ...
        def __rpow__(self, other: Any) -> "Array": ...
        def __matmul__(self, other: Any) -> "Array": ...
        def __rmatmul__(self, other: Any) -> "Array": ...
        def __and__(self, other: Any) -> "Array": ...
        def __rand__(self, other: Any) -> "Array": ...
        def __or__(self, other: Any) -> "Array": ...
        def __ror__(self, other: Any) -> "Array": ...
        def __xor__(self, other: Any) -> "Array": ...
        def __rxor__(self, other: Any) -> "Array": ...
        def __lt__(self, other: Any) -> "Array": ...
        def __le__(self, other: Any) -> "Array": ...
        def __gt__(self, other: Any) -> "Array": ...
        def __ge__(self, other: Any) -> "Array": ...
        def __eq__(self, other: Any) -> "Array": ...  # type: ignore[override]
        def __ne__(self, other: Any) -> "Array": ...  # type: ignore[override]

    def __init__(self, value):
        # Internal constructor: takes ownership of a numpy value without copying.
        # Users build arrays with fnad.numpy.asarray / array, which copy.
        self._value = np.asarray(value)

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def size(self):
        return self._value.size

    @property
    def aval(self):
        return ShapedArray(self._value.shape, self._value.dtype)

    @property
    def weak_type(self):
        """True for an array made from a Python scalar (fnad.numpy.asarray(0.0)), as in
        JAX: it promotes like that scalar, and as a loop's initial carry it takes the
        dtype the body gives it. Results of operations are never weak."""
        return getattr(self, "_weak", False)       # (unset unless weakly_typed set it)

    @property
    def device(self):
        return CPU

    def devices(self):
        return {CPU}

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self._value, dtype=dtype, copy=True)
        view = self._value.view()
        view.flags.writeable = False
        if dtype is not None and np.dtype(dtype) != view.dtype:
            return view.astype(dtype)
        return view

    def __setitem__(self, idx, value):
        raise immutable_error()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export for torch.from_dlpack, np.from_dlpack, ...: the host buffer itself
        (no copy) marked read-only where the consumer speaks DLPack 1.0 or later. An
        older consumer cannot be told, and gets the buffer unmarked (as from JAX):
        writing into it would change this immutable Array."""
        value = self.host_value()
        if dl_device is not None and tuple(dl_device) != (_DLPACK_CPU, 0):
            raise BufferError(f"fnad Arrays export host memory (DLPack device "
                              f"({_DLPACK_CPU}, 0)); {tuple(dl_device)} was asked for")
        kwargs = {} if copy is None else {"copy": copy}
        view = value.view()
        view.flags.writeable = False
        try:
            return view.__dlpack__(max_version=max_version, **kwargs)
        except BufferError:
            if max_version is not None and tuple(max_version) >= (1, 0):
                raise
            return value.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return _DLPACK_CPU, 0

    def host_value(self):
        """The value in host memory (a copy for arrays on a GPU)."""
        return self._value

    def __repr__(self):
        body = np.array2string(self.host_value(), separator=", ", prefix="Array(")
        where = "" if self.device is CPU else f", device={self.device}"
        return f"Array({body}, dtype={self.dtype.name}{where})"

    def __str__(self):
        return str(self.host_value())

    def __format__(self, spec):
        # numpy's rules for a spec: it formats a 0-d value (f"{loss:.4f}") and raises
        # TypeError on other shapes. An empty spec is str(), as for Python's numbers
        # (numpy's 0-d arrays would print a float32 as its float64 digits).
        return format(self.host_value(), spec) if spec else str(self)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError("len() of a 0-d array")
        return len(self._value)

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._value)))

    def __bool__(self):
        return bool(self.host_value())

    def __float__(self):
        return float(self.host_value())

    def __int__(self):
        return int(self.host_value())

    def __index__(self):
        return self.host_value().__index__()

    def __complex__(self):
        return complex(self.host_value())

    def item(self, *args):
        return self.host_value().item(*args)

    def tolist(self):
        return self.host_value().tolist()

    def block_until_ready(self):
        """Computation is synchronous on the cpu; kept for JAX compatibility."""
        return self

    def delete(self):
        """Free this Array's buffer now; any later use raises DeletedArrayError."""
        value = self._value
        if type(value) is not DonatedBuffer:
            self._value = DonatedBuffer(f"{value.dtype.name}{list(value.shape)}")

    def is_deleted(self):
        return type(self._value) is DonatedBuffer

    def __reduce__(self):
        # Pickles hold host data: unpickling gives a cpu Array.
        return (Array, (np.array(self.host_value()),))

    __hash__ = None  # type: ignore[assignment]  # unhashable, as numpy arrays
