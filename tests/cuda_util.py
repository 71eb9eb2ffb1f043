"""What the cuda tests share: the device, transfers, and comparison of a primitive's
cuda kernel with its cpu kernel. The simulator runs each GPU thread as a Python
thread, so tests keep shapes small."""
import numpy as np
import pytest

import fnad
from fnad.backends.cuda.array import CudaArray

GPUS = fnad.devices("cuda")
needs_cuda = [pytest.mark.cuda,
              pytest.mark.skipif(not GPUS, reason="numba.cuda finds no GPU (nor simulator)")]


def gpu():
    return GPUS[0]


def to_gpu(x):
    return fnad.device_put(x, gpu())


def host(x):
    """A cuda result as numpy, checking it did stay on the GPU."""
    assert type(x) is CudaArray and x.device == gpu(), f"expected a GPU array, got {x!r}"
    return np.asarray(x)


def tolerance(dtype):
    return {"float16": 1e-2, "float32": 2e-5}.get(np.dtype(dtype).name, 1e-12)


def check_primitive(prim, *args, rtol=None, **params):
    """Bind prim on the cpu and on the GPU; the results must agree (exactly for
    integers and booleans)."""
    cpu_args = [fnad.numpy.asarray(a) for a in args]
    expected = prim.bind(*cpu_args, **params)
    got = prim.bind(*[to_gpu(a) for a in args], **params)
    if not prim.multiple_results:
        expected, got = [expected], [got]
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        e, g = np.asarray(e), host(g)
        assert g.shape == e.shape and g.dtype == e.dtype, (prim, g.shape, g.dtype, e.shape,
                                                             e.dtype)
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=rtol or tolerance(e.dtype),
                                       atol=rtol or tolerance(e.dtype), err_msg=str(prim))
        else:
            np.testing.assert_array_equal(g, e, err_msg=str(prim))
    return got
