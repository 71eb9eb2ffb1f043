"""CudaArray: an Array whose value is a numba.cuda device array on one GPU."""
from ...array import Array
from . import runtime


class CudaArray(Array):
    """An Array in a GPU's memory. Primitives on CudaArrays run numba.cuda kernels
    (fnad.backends.cuda) and return CudaArrays on the same device; anything that needs
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

    def host_value(self):
        return self._value.copy_to_host()

    def __array__(self, dtype=None, copy=None):
        value = self.host_value()
        return value if dtype is None else value.astype(dtype, copy=False)

    def block_until_ready(self):
        runtime.synchronize()
        return self
