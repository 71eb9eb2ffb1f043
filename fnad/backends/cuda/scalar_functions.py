"""Device versions of the scalar functions the primitives' scalar expressions call:
``kernels.<name>`` (Numba cpu functions on the cpu) and the builtins ``max``/``min``,
which numba.cuda does not type for two arguments. Generated kernels import these
under those names.

numpy's rules on one element (NaN in maximum/minimum, integer floor division and
remainder) are written once, as the Python functions of kernels/cpu/elementwise.py;
here they are compiled as device functions (the simulator runs them as Python)."""
import math
from types import SimpleNamespace

import numpy as np
from numba import types
from numba.extending import overload

from ...kernels.cpu import elementwise as _cpu, half as _half
from . import device_numpy as _np
from .runtime import cuda, simulated

_cuda = cuda()
_device = _cuda.jit(device=True)


@_device
def logistic_scalar(x):
    # Branch so that exp never overflows: for x < 0 use e^x / (1 + e^x).
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


maximum_scalar = _device(_cpu.maximum_scalar.py_func)
minimum_scalar = _device(_cpu.minimum_scalar.py_func)
relu_scalar = _device(_cpu.relu_scalar.py_func)
floor_divide_scalar = _device(_cpu.floor_divide_scalar.py_func)
truncate_divide_scalar = _device(_cpu.truncate_divide_scalar.py_func)
integer_power_scalar = _device(_cpu.integer_power_scalar.py_func)
sign_scalar = _device(_cpu.sign_real.py_func)     # complex never reaches the GPU
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


# libdevice's cbrt is within an ulp; the simulator runs the cpu helper (half an ulp).
if simulated():
    cbrt_scalar = _cpu.cbrt_scalar
else:
    cbrt_scalar = _device(lambda x: _cuda.cbrt(x))


@_device
def round_scalar(x, rounding_method):
    # kernels/cpu/elementwise.py's round_scalar, with the device's floor and rint (numpy's
    # functions are not typed on scalars here)
    if rounding_method == 1:
        return _np.round(x)
    if x == 0 or x != x:
        return x
    a = abs(x)
    t = _np.floor(a)
    if a - t >= 0.5:
        t = t + a ** 0
    return -t if x < 0 else t


# bfloat16 in generated kernels (`half.<name>`): the cpu kernels' codecs (half.py),
# which numba.cuda compiles for the device. The simulator calls the cpu functions from
# Python, where their float32 results come back as Python floats: made float32 again,
# so that the kernel goes on computing in float32, as on a GPU.
half: object
if simulated():
    half = SimpleNamespace(
        bfloat16_to_float=lambda bits: np.float32(_half.bfloat16_to_float(bits)),
        bfloat16_to_bits=_half.bfloat16_to_bits,
        bfloat16_round=lambda x: np.float32(_half.bfloat16_round(x)))
else:
    half = _half
