"""The cuda backend as the registry sees it: GPUs as devices, CudaArrays as values."""
import numpy as np

from ... import backend
from ...array import Device
from ...tree_util import tree_unflatten
from . import runtime
from .array import CudaArray
from .registry import device_value, evaluate


class CudaBackend:
    platform = "cuda"
    array_type = CudaArray

    def __init__(self):
        self._devices = None

    def devices(self):
        if self._devices is None:
            self._devices = [Device("cuda", i) for i in range(runtime.device_count())]
        return list(self._devices)

    def put(self, x, device, committed):
        if type(x) is CudaArray and x.device == device:
            return x
        return CudaArray(runtime.to_device(np.asarray(x), device.id), device)

    def evaluate(self, prim, args, params):
        return evaluate(prim, args, params)

    def compile(self, program):
        from .lowering import compiled   # (numba.cuda is imported when first used)
        return compiled(program)

    def executable(self, closed, out_tree, device, donated=()):
        """jit's fast path for arguments on a GPU: the program's cuda executable on
        device arrays, its host constants uploaded once. (Donated arrays are deleted
        by jit after the call; their buffers are not reused here.)"""
        run = self.compile(closed.program)
        consts = [device_value(c, device.id) for c in closed.consts]

        def call(args):
            if any(a._device != device for a in args):
                return backend.OTHER_DEVICE
            outs = run(*consts, *[a._value for a in args])
            return tree_unflatten(out_tree, [CudaArray(o, device) for o in outs])
        return call
