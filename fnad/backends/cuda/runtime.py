"""numba.cuda, imported only when a GPU is asked for, and what every cuda kernel
module shares: allocation, transfers and launch shapes.

numba.cuda comes from the `numba-cuda` package (the `cuda` extra) or, in older
releases, from numba itself; either provides the same module. Memory is allocated on
demand through numba's allocator: nothing is reserved up front."""
import math

import numpy as np

from ...dtypes import bfloat16
from ...errors import DTypeError

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


def _check_dtype(dtype):
    # numba.cuda has no bfloat16 type: neither its arrays nor its kernels can hold
    # one, so say so here rather than let numba fail to type it somewhere later
    if np.dtype(dtype) == bfloat16:
        raise DTypeError("the cuda backend does not support bfloat16 yet (numba.cuda has "
                         "no bfloat16 arrays); compute in float16 or float32 on the GPU, "
                         "or keep bfloat16 values on the cpu")


def empty(shape, dtype):
    _check_dtype(dtype)
    return cuda().device_array(tuple(shape), np.dtype(dtype))


def to_device(value, device_id=0):
    value = np.asarray(value)
    _check_dtype(value.dtype)
    if not value.flags.c_contiguous:    # (np.ascontiguousarray would make 0-d 1-d)
        value = value.copy(order="C")
    module = cuda()
    if device_id == 0:
        return module.to_device(value)
    with module.gpus[device_id]:
        return module.to_device(value)


def synchronize():
    cuda().synchronize()
