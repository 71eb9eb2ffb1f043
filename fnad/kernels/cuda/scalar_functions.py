"""Device versions of the scalar helpers the primitives' scalar expressions call
(``kernels.<name>`` in an expression): the cpu's are Numba cpu functions."""
import math

from .runtime import cuda


@cuda().jit(device=True)
def logistic_scalar(x):
    # Branch so that exp never overflows: for x < 0 use e^x / (1 + e^x).
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
