"""Device versions of the scalar functions the primitives' scalar expressions call:
``kernels.<name>`` (Numba cpu functions on the cpu) and the builtins ``max``/``min``,
which numba.cuda does not type for two arguments. Generated kernels import these
under those names.

numpy's rules on one element (NaN in maximum/minimum, integer floor division and
remainder) are written once, as the Python functions of kernels/cpu/elementwise.py;
here they are compiled as device functions (the simulator runs them as Python)."""
import math

from numba import types
from numba.extending import overload

from ..cpu import elementwise as _cpu
from .runtime import cuda, simulated

_device = cuda().jit(device=True)


@_device
def logistic_scalar(x):
    # Branch so that exp never overflows: for x < 0 use e^x / (1 + e^x).
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


maximum_scalar = _device(_cpu.maximum_scalar.py_func)
minimum_scalar = _device(_cpu.minimum_scalar.py_func)
floor_divide_scalar = _device(_cpu.floor_divide_scalar.py_func)
# NaN wins, as in numpy's maximum and minimum; the generated kernels' `max` and `min`.
maximum, minimum = maximum_scalar, minimum_scalar

# fmod dispatches on the operand type: integers in integer arithmetic, floats through
# the device's fmod. The simulator calls the Python function, which dispatches itself.
fmod_scalar = _cpu.fmod_scalar
if not simulated():
    @overload(_cpu.fmod_scalar, target="cuda")
    def _fmod_scalar(x, y):
        if isinstance(x, types.Integer) and isinstance(y, types.Integer):
            return _cpu.integer_fmod
        return lambda x, y: math.fmod(x, y)
