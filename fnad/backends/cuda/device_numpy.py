"""The part of numpy's namespace that the primitives' scalar expressions use (``np.exp``,
``np.float32(...)``, ``np.nan``...), for GPU kernels: numba.cuda types numpy's
functions on arrays, not on scalars, so generated kernels import this module as
``np``. Each function follows numpy's semantics on one element (NaN propagation,
rounding half to even, floor and ceil staying floating point)."""
import builtins
import math

import numba

from .runtime import cuda, simulated

# dtypes: numba's types convert like numpy's scalar constructors
bool_ = numba.boolean
bool = numba.boolean  # noqa: A001  (np.bool, as numpy 2 spells it)
int8, int16, int32, int64 = numba.int8, numba.int16, numba.int32, numba.int64
uint8, uint16, uint32, uint64 = numba.uint8, numba.uint16, numba.uint32, numba.uint64
float16, float32, float64 = numba.types.float16, numba.float32, numba.float64
nan = math.nan
inf = math.inf

_device = cuda().jit(device=True)
if simulated():     # the simulator runs kernels as Python: numpy's own functions do
    import numpy as _libdevice
else:
    from numba.cuda import libdevice as _libdevice  # type: ignore[no-redef]


def _unary(fn):
    return _device(fn)


exp = _unary(lambda x: math.exp(x))
log = _unary(lambda x: math.log(x))
log1p = _unary(lambda x: math.log1p(x))
expm1 = _unary(lambda x: math.expm1(x))
sqrt = _unary(lambda x: math.sqrt(x))
sin = _unary(lambda x: math.sin(x))
cos = _unary(lambda x: math.cos(x))
tan = _unary(lambda x: math.tan(x))
tanh = _unary(lambda x: math.tanh(x))
sinh = _unary(lambda x: math.sinh(x))
cosh = _unary(lambda x: math.cosh(x))
arcsin = _unary(lambda x: math.asin(x))
arccos = _unary(lambda x: math.acos(x))
arctan = _unary(lambda x: math.atan(x))
arcsinh = _unary(lambda x: math.asinh(x))
arctanh = _unary(lambda x: math.atanh(x))
arccosh = _unary(lambda x: math.acosh(x))
arctan2 = _device(lambda x, y: math.atan2(x, y))
isfinite = _unary(lambda x: math.isfinite(x))
# floor, ceil and round keep the operand's floating type (math.floor gives an int)
floor = _unary(lambda x: _libdevice.floor(x))
ceil = _unary(lambda x: _libdevice.ceil(x))
round = _unary(lambda x: _libdevice.rint(x))    # noqa: A001  (halves to even)
fmod = _device(lambda x, y: _libdevice.fmod(x, y))


abs = _unary(lambda x: builtins.abs(x))  # noqa: A001


@_device
def sign(x):
    if x > 0:
        return x * 0 + 1
    if x < 0:
        return x * 0 - 1
    return x if x != x else x - x      # NaN stays NaN; -0.0 becomes 0.0
