"""The cuda backend's kernel table: a numba.cuda implementation of every primitive.

Where a primitive's declaration already says what it computes per element, the
kernel is generated from it: a scalar expression or an index map gives a fused
elementwise kernel (fused.py), a `reduction` a block tree reduction (reduce.py). The
other primitives register a kernel written for them with `implements`, in the module
of their family; those written for float32 get bfloat16 operands through one wrapper
(bfloat16.py). `CudaBackend.evaluate` is what `Primitive.bind` runs, through the
registry, for operands on a GPU.

Nothing here is imported until a cuda device is asked for, so fnad on a machine
without numba.cuda never pays for it."""
import importlib

import numpy as np

from ... import backend
from ...abstract import ShapedArray
from ...array import Array
from ...errors import DTypeError
from . import runtime
from .array import CudaArray

_impls = {}             # primitive -> the kernel registered for it
_ready = {}             # primitive -> what impl_for gives (bfloat16 handled)
_complex_ok = set()     # primitives whose kernel handles complex operands
_bfloat16_ok = set()    # primitives whose kernel takes bfloat16 arrays as they are
_FAMILIES = ("shape", "dot", "conv", "index", "cumulative", "sort", "random", "linalg",
             "fft", "control", "callbacks", "collectives")
_loaded = False


def implements(*prims, complex_ok=False, bfloat16_ok=False):
    """Register the decorated function as the cuda kernel of `prims`: called with the
    operands as device arrays and the primitive's params, it returns a device array
    (a list of them for primitives with several results). complex_ok: the kernel
    computes complex operands correctly (other kernels are refused them).
    bfloat16_ok: the kernel takes bfloat16 arrays (runtime.Bfloat16Array) as they are
    (it runs programs, or copies to the host); other kernels see them as float32, and
    their bfloat16 results are rounded (bfloat16.with_bfloat16)."""
    def register(fn):
        for p in prims:
            _impls[p] = fn
            if complex_ok:
                _complex_ok.add(p)
            if bfloat16_ok:
                _bfloat16_ok.add(p)
        return fn
    return register


def check_real(prim, avals):
    """The generated kernels and most written ones compute real numbers only: a
    complex operand or result is a DTypeError here, never a wrong number there."""
    if prim in _complex_ok:
        return
    for a in avals:
        if a.dtype.kind == "c":
            raise DTypeError(
                f"{prim.name}: the cuda backend does not compute with complex numbers "
                f"(dtype {a.dtype}); move the values to the cpu with "
                f"fnad.device_put(x, fnad.devices('cpu')[0])")


def impl_for(prim):
    fn = _ready.get(prim)
    if fn is None:
        fn = _ready[prim] = _prepared(prim)
    return fn


def _prepared(prim):
    """prim's kernel as evaluate and the lowering call it. (bfloat16.py compiles its
    kernels on import: it is imported here, once numba.cuda is in use.)"""
    from .bfloat16 import with_bfloat16
    _load_families()
    fn = _impls.get(prim)
    if fn is not None:
        return fn if prim in _bfloat16_ok else with_bfloat16(prim, fn)
    if prim.scalar is not None or prim.index_map is not None:
        from .fused import elementwise_impl
        return elementwise_impl(prim)     # (decodes and rounds bfloat16 itself)
    if prim.reduction is not None:
        from .reduce import reduction_impl
        return with_bfloat16(prim, reduction_impl(prim))
    raise NotImplementedError(f"the cuda backend has no kernel for {prim.name}")


def _load_families():
    global _loaded
    if not _loaded:
        # Marked loaded only once every family is registered: another thread must not
        # see a half-filled table (importing twice is harmless).
        for name in _FAMILIES:
            importlib.import_module(f"{__package__}.{name}")
        _loaded = True


def device_value(value, device_id=0):
    """The device array of a CudaArray, or a host value (Array, numpy) copied to GPU
    `device_id`."""
    if type(value) is CudaArray:
        return value._value
    return runtime.to_device(np.asarray(value), device_id)


def evaluate(prim, args, params):
    """Run `prim` on operands of which at least one is a CudaArray. Host values
    (constants, Arrays made without a device) are copied to its device; an Array
    placed on the cpu with device_put beside a GPU one is an error, as are arrays of
    two GPUs."""
    device = next(a._device for a in args if type(a) is CudaArray)
    values, avals = [], []
    for a in args:
        if not isinstance(a, (Array, np.ndarray, np.generic)):
            raise TypeError(f"{prim.name}: operand of type {type(a).__name__} is not an "
                            f"array")
        if (a._device != device if type(a) is CudaArray
                else isinstance(a, Array) and (type(a) is not Array
                                               or getattr(a, "_committed", False))):
            raise backend.mixed_devices_error(prim.name, args)
        values.append(device_value(a, device.id))
        avals.append(ShapedArray(a.shape, a.dtype))
    # The shape rule runs first: a kernel given mismatched shapes would read out of
    # bounds instead of raising.
    out_avals = prim.abstract_eval(*avals, **params)
    _load_families()
    check_real(prim, avals + (list(out_avals) if prim.multiple_results else [out_avals]))
    if device.id:   # kernels launch on the current GPU: make it the operands' one
        with runtime.cuda().gpus[device.id]:
            out = impl_for(prim)(*values, **params)
    else:
        out = impl_for(prim)(*values, **params)
    if prim.multiple_results:
        return [CudaArray(o, device) for o in out]
    return CudaArray(out, device)
