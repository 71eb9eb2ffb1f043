"""Array: fnad's immutable concrete value, and the devices it can live on.

An Array owns a numpy buffer that nothing ever writes to: kernels return fresh
buffers and views of existing ones, and `np.asarray(x)` hands out read-only views.
A `CudaArray` is an Array whose buffer is a numba.cuda device array; `np.asarray`
copies it to the host.
The numpy-style methods and operators (``x + y``, ``x.sum()``, ``x.at[i].set(v)``)
are attached by `fnad.numpy`, which owns their semantics for Arrays and tracers alike;
so are numpy's protocols ``__array_ufunc__`` and ``__array_function__``, through which
``np.exp(x)`` or ``np.sum(x)`` run fnad.numpy's functions (fnad/numpy/_interop.py).
"""
import numpy as np

from .errors import DeviceError, ImmutableArrayError


class Device:
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
_cuda_devices = None


def devices(platform=None):
    """The devices fnad can place arrays on: the cpu, then the GPUs numba.cuda finds
    (the simulated one under NUMBA_ENABLE_CUDASIM=1). ``devices("cuda")`` is empty
    where numba.cuda is missing or finds no GPU."""
    global _cuda_devices
    if platform not in (None, "cpu", "cuda", "gpu"):
        raise ValueError(f"unknown platform {platform!r}; expected 'cpu' or 'cuda'")
    if platform == "cpu":
        return [CPU]
    if _cuda_devices is None:
        from .kernels.cuda.runtime import device_count
        _cuda_devices = [Device("cuda", i) for i in range(device_count())]
    return list(_cuda_devices) if platform else [CPU] + _cuda_devices


def device_put(x, device=None):
    """A copy of one array's value on `device`, as an Array. Without a device: on the
    cpu, uncommitted (free to follow a GPU operand), as in JAX."""
    committed = device is not None
    device = CPU if device is None else device
    if not isinstance(device, Device) or device not in devices(device.platform):
        raise DeviceError(f"device_put: {device!r} is not one of fnad.devices() "
                          f"({devices()})")
    if device.platform == "cpu":
        out = Array(np.array(x))     # copies from the host or the GPU
        if committed:
            out._committed = True
        return out
    from .kernels.cuda.runtime import to_device
    if type(x) is CudaArray and x.device == device:
        return x
    return CudaArray(to_device(np.asarray(x), device.id), device)


def immutable_error():
    return ImmutableArrayError(
        "fnad Arrays are immutable and do not support item assignment; "
        "use x.at[idx].set(value) (or .add, .multiply, .min, .max), which returns "
        "an updated copy")


def weakly_typed(value):
    """An Array of `value` (a 0-d numpy array made from a Python scalar) marked weak."""
    out = Array(value)
    out._weak = True
    return out


class Array:
    # _committed: set (only) on arrays device_put to the cpu by name. Other cpu
    # Arrays, like JAX's uncommitted ones, follow a GPU operand onto its device.
    # _weak: set (only) by weakly_typed(), for arrays made from one Python scalar.
    __slots__ = ("_value", "_committed", "_weak")
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
    def weak_type(self):
        """True for an array made from a Python scalar (fnad.numpy.asarray(0.0)), as in
        JAX: it promotes like that scalar, and as a loop's initial carry it takes the
        dtype the body gives it. Results of operations are never weak."""
        try:
            return self._weak
        except AttributeError:
            return False

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

    def _host(self):
        """The value in host memory (a copy for arrays on a GPU)."""
        return self._value

    def __repr__(self):
        body = np.array2string(self._host(), separator=", ", prefix="Array(")
        where = "" if self.device is CPU else f", device={self.device}"
        return f"Array({body}, dtype={self.dtype.name}{where})"

    def __str__(self):
        return str(self._host())

    def __format__(self, spec):
        # numpy's rules for a spec: it formats a 0-d value (f"{loss:.4f}") and raises
        # TypeError on other shapes. An empty spec is str(), as for Python's numbers
        # (numpy's 0-d arrays would print a float32 as its float64 digits).
        return format(self._host(), spec) if spec else str(self)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError("len() of a 0-d array")
        return len(self._value)

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._value)))

    def __bool__(self):
        return bool(self._host())

    def __float__(self):
        return float(self._host())

    def __int__(self):
        return int(self._host())

    def __index__(self):
        return self._host().__index__()

    def __complex__(self):
        return complex(self._host())

    def item(self, *args):
        return self._host().item(*args)

    def tolist(self):
        return self._host().tolist()

    def block_until_ready(self):
        """Computation is synchronous on the cpu; kept for JAX compatibility."""
        return self

    def __reduce__(self):
        # Pickles hold host data: unpickling gives a cpu Array.
        return (Array, (np.array(self._host()),))

    __hash__ = None


class CudaArray(Array):
    """An Array in a GPU's memory. Primitives on CudaArrays run numba.cuda kernels
    (fnad.kernels.cuda) and return CudaArrays on the same device; anything that needs
    the value on the host (printing, ``np.asarray``, ``float(x)``) copies it."""
    __slots__ = ("_device",)

    def __init__(self, value, device):
        self._value = value
        self._device = device

    @property
    def shape(self):
        return tuple(self._value.shape)    # (the simulator's shapes are not tuples)

    @property
    def device(self):
        return self._device

    def devices(self):
        return {self._device}

    def _host(self):
        return self._value.copy_to_host()

    def __array__(self, dtype=None, copy=None):
        value = self._host()
        return value if dtype is None else value.astype(dtype, copy=False)

    def block_until_ready(self):
        from .kernels.cuda.runtime import synchronize
        synchronize()
        return self


def mixed_devices_error(what, operands):
    """The error for an operation whose operands live on different devices."""
    placed = ", ".join(f"{getattr(a, 'dtype', '?')}{list(getattr(a, 'shape', ()))} on "
                       f"{getattr(a, 'device', CPU)}" for a in operands
                       if isinstance(a, Array))
    return DeviceError(f"{what}: operands are on different devices ({placed}); move them "
                       f"to one device with fnad.device_put(x, device) first")
