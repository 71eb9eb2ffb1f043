"""numba.cuda, imported only when a GPU is asked for, and what every cuda kernel
module shares: allocation, transfers and launch shapes.

numba.cuda comes from the `numba-cuda` package (the `cuda` extra) or, in older
releases, from numba itself; either provides the same module. Memory is allocated on
demand through numba's allocator: nothing is reserved up front."""
import math

import numpy as np

from ...dtypes import bfloat16

_cuda = None


def cuda():
    """The numba.cuda module, or None where it cannot be imported."""
    global _cuda
    if _cuda is None:
        try:
            from numba import cuda as module
        except ImportError:     # numba without its CUDA target, or a broken toolkit
            module = False
        _cuda = module
    return _cuda or None


def simulated():
    from numba import config
    return bool(config.ENABLE_CUDASIM)


def device_count():
    module = cuda()
    try:
        return len(module.gpus) if module is not None and module.is_available() else 0
    except Exception:   # a driver that is present but broken counts as no GPU
        return 0


# The simulator runs every thread as a Python thread: few threads keep it fast enough
# for tests. On a GPU, 256 threads per block keeps every scheduler busy.
THREADS = 32 if simulated() else 256
MAX_BLOCKS = 2 if simulated() else 1 << 16


def grid(n, threads=None):
    """(blocks, threads) for a grid-stride loop over n items."""
    threads = threads or THREADS
    return max(1, min(MAX_BLOCKS, math.ceil(n / threads))), threads


def launch(kernel, n, *args):
    """Run a grid-stride kernel over n items (nothing for n = 0)."""
    if n:
        blocks, threads = grid(n)
        kernel[blocks, threads](*args)


class Bfloat16Array:
    """A bfloat16 array on the GPU: numba.cuda has no bfloat16 type, so the device
    buffer holds the values' bit patterns as uint16 (`bits`), while this array's
    dtype, and the host copy, are bfloat16. Generated kernels decode and encode the
    bits themselves (fused.py); other kernels see float32 copies (bfloat16.py)."""
    __slots__ = ("bits",)
    dtype = bfloat16

    def __init__(self, bits):
        self.bits = bits

    @property
    def shape(self):
        return tuple(self.bits.shape)

    @property
    def ndim(self):
        return len(self.bits.shape)

    @property
    def size(self):
        return self.bits.size

    def copy_to_host(self):
        return self.bits.copy_to_host().view(bfloat16)

    def reshape(self, *shape):
        return Bfloat16Array(self.bits.reshape(*shape))

    def __getitem__(self, index):
        bits = self.bits[index]
        if not hasattr(bits, "copy_to_host"):   # one element, which numba reads to the host
            bits = to_device(np.asarray(bits, np.uint16))
        return Bfloat16Array(bits)

    def __setitem__(self, index, value):
        self.bits[index] = value.bits if type(value) is Bfloat16Array else value


def bits_of(value):
    """What a kernel is passed for a device array: a bfloat16 one's uint16 bits."""
    return value.bits if type(value) is Bfloat16Array else value


def empty(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == bfloat16:
        return Bfloat16Array(cuda().device_array(tuple(shape), np.uint16))
    return cuda().device_array(tuple(shape), dtype)


def to_device(value, device_id=0):
    value = np.asarray(value)
    if value.dtype == bfloat16:
        return Bfloat16Array(to_device(value.view(np.uint16), device_id))
    if not value.flags.c_contiguous:    # (np.ascontiguousarray would make 0-d 1-d)
        value = value.copy(order="C")
    module = cuda()
    if device_id == 0:
        return module.to_device(value)
    with module.gpus[device_id]:
        return module.to_device(value)


def synchronize():
    cuda().synchronize()
