"""The backend registry: which devices exist, and which backend computes on an array.

A backend is an object registered here with:

    platform                       its name: 'cpu', 'cuda', ...
    array_type                     the Array class holding its values
    devices()                      its devices (array.Device), empty where it has none
    put(value, device, committed)  -> an array_type holding a copy of `value` on
                                      `device` (committed: placed there by name)
    evaluate(prim, args, params)   -> `prim` applied to operands of which at least one
                                      is its array (host operands copied over)
    compile(program)               -> run(*values) -> list of values: a Program compiled
                                      for values of its own
    executable(closed, out_tree, device, donated=()) -> call(args) -> the output
                                      pytree, or OTHER_DEVICE: jit's fast path for
                                      Arrays on `device`; the arguments at the `donated`
                                      positions may lend their buffers to the results

The cpu backend is the host: its arrays are plain `Array`s over numpy buffers, and
`Primitive.eval` runs a primitive's `impl` on them without consulting this registry.
It also has `own_kernel(name)`: the kernels of primitives whose impl is
`host_kernel(name)`. Operands of any other type reach `evaluate` below, which hands
them to the backend owning them. core, Array and jit name no backend: a new one is a
folder under fnad/backends/ that calls `register`, plus the line in
fnad/backends/__init__.py importing it.
"""
import numpy as np

from .array import CPU, Array, Device
from .errors import DeviceError

_backends = {}              # platform -> backend, in order of registration
_by_array_type = {}         # Array subclass -> backend

# What an executable returns for arguments on another device than its own (jit's fast
# path keys on types, shapes and dtypes, not devices): the call takes the general path.
OTHER_DEVICE = object()


def register(backend):
    """Make `backend` available to devices(), device_put, eager evaluation and jit."""
    if backend.platform in _backends:
        raise ValueError(f"a backend for platform {backend.platform!r} is registered "
                         f"already")
    _backends[backend.platform] = backend
    _by_array_type[backend.array_type] = backend
    return backend


def unregister(platform):
    backend = _backends.pop(platform)
    _by_array_type.pop(backend.array_type, None)


def get(platform):
    try:
        return _backends[platform]
    except KeyError:
        raise ValueError(f"unknown platform {platform!r}; the backends are "
                         f"{', '.join(map(repr, _backends))}") from None


def host():
    """The cpu backend: the one that owns plain Arrays."""
    return _backends["cpu"]


def of(x):
    """The backend owning array `x` (the host for plain Arrays and numpy values)."""
    return _by_array_type.get(type(x)) or _backends["cpu"]


def devices(platform=None):
    """The devices fnad can place arrays on: the cpu first, then each backend's (for
    cuda: the GPUs numba.cuda finds, or the simulated one under
    NUMBA_ENABLE_CUDASIM=1). A platform with no device gives an empty list."""
    if platform == "gpu":
        platform = "cuda"
    if platform is not None:
        return list(get(platform).devices())
    return [d for backend in _backends.values() for d in backend.devices()]


def device_put(x, device=None):
    """A copy of one array's value on `device`, as an Array. Without a device: on the
    cpu, uncommitted (free to follow an operand on another device), as in JAX."""
    committed = device is not None
    device = CPU if device is None else device
    if not isinstance(device, Device) or device.platform not in _backends \
            or device not in devices(device.platform):
        raise DeviceError(f"device_put: {device!r} is not one of fnad.devices() "
                          f"({devices()})")
    return get(device.platform).put(x, device, committed)


def evaluate(prim, args, params):
    """Eager evaluation of `prim` on operands not all in host memory: the backend of
    the first operand that is no plain Array runs it."""
    for a in args:
        backend = _by_array_type.get(type(a))
        if backend is not None and backend.platform != "cpu":
            return backend.evaluate(prim, args, params)
    bad = next(a for a in args if not isinstance(a, (Array, np.ndarray, np.generic)))
    raise TypeError(f"{prim.name}: operand of type {type(bad).__name__} is not an array")


def host_kernel(name):
    """The `impl` of a primitive whose cpu kernel belongs to the cpu backend (staged
    programs and control flow, which compile through it): looked up when called, so
    primitives are declared before any backend is registered."""
    def impl(*values, **params):
        return _backends["cpu"].own_kernel(name)(*values, **params)
    impl.__name__ = f"{name}_host_kernel"
    return impl


def mixed_devices_error(what, operands):
    """The error for an operation whose operands live on different devices."""
    placed = ", ".join(f"{a.dtype}{list(a.shape)} on {a.device}" for a in operands
                       if isinstance(a, Array))
    return DeviceError(f"{what}: operands are on different devices ({placed}); move them "
                       f"to one device with fnad.device_put(x, device) first")
