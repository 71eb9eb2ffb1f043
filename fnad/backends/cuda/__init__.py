"""The cuda backend: numba.cuda kernels for every primitive, on GPUs (or numba's
simulator under NUMBA_ENABLE_CUDASIM=1).

Where a primitive's declaration already says what it computes per element, the
kernel is generated from it: a scalar expression or an index map gives a fused
elementwise kernel (fused.py), a `reduction` a block tree reduction (reduce.py). The
other primitives register a kernel written for them with `implements`
(registry.py), in the module of their family. A jitted program lowers to a sequence
of such kernels on device arrays (lowering.py).

Nothing of numba.cuda is imported until a cuda device is asked for, so fnad on a
machine without numba.cuda never pays for it."""
from ...backend import register
from .backend import CudaBackend

register(CudaBackend())
