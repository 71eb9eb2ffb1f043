"""Device versions of the scalar functions the primitives' scalar expressions call:
``kernels.<name>`` (Numba cpu functions on the cpu) and the builtins ``max``/``min``,
which numba.cuda does not type for two arguments. Generated kernels import these
under those names."""
import math

from .runtime import cuda


@cuda().jit(device=True)
def logistic_scalar(x):
    # Branch so that exp never overflows: for x < 0 use e^x / (1 + e^x).
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


# NaN wins, as in numpy's maximum and minimum (x != x only for NaN).
@cuda().jit(device=True)
def maximum(a, b):
    if a != a or a > b:
        return a
    return b


@cuda().jit(device=True)
def minimum(a, b):
    if a != a or a < b:
        return a
    return b
