"""Array: fnad's immutable concrete value, and the devices it can live on.

An Array owns a numpy buffer that nothing ever writes to: kernels return fresh
buffers and views of existing ones, and `np.asarray(x)` hands out read-only views.
The numpy-style methods and operators (``x + y``, ``x.sum()``, ``x.at[i].set(v)``)
are attached by `fnad.numpy`, which owns their semantics for Arrays and tracers alike.
"""
import numpy as np

from .errors import ImmutableArrayError


class Device:
    __slots__ = ("platform", "id")

    def __init__(self, platform, id=0):
        self.platform = platform
        self.id = id

    def __repr__(self):
        return f"{self.platform.capitalize()}Device(id={self.id})"


CPU = Device("cpu")


def devices(platform=None):
    """The devices fnad can place arrays on (``"cpu"`` today)."""
    if platform in (None, "cpu"):
        return [CPU]
    if platform in ("cuda", "gpu"):
        return []
    raise ValueError(f"unknown platform {platform!r}; expected 'cpu' or 'cuda'")


def immutable_error():
    return ImmutableArrayError(
        "fnad Arrays are immutable and do not support item assignment; "
        "use x.at[idx].set(value) (or .add, .multiply, .min, .max), which returns "
        "an updated copy")


class Array:
    __slots__ = ("_value",)
    __array_priority__ = 100

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
        from .core import ShapedArray
        return ShapedArray(self._value.shape, self._value.dtype)

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

    def __repr__(self):
        body = np.array2string(self._value, separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self._value.dtype.name})"

    def __str__(self):
        return str(self._value)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError("len() of a 0-d array")
        return len(self._value)

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._value)))

    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __index__(self):
        return self._value.__index__()

    def __complex__(self):
        return complex(self._value)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def block_until_ready(self):
        """Computation is synchronous on the cpu; kept for JAX compatibility."""
        return self

    def __reduce__(self):
        return (Array, (np.array(self._value),))

    __hash__ = None
