"""bfloat16 for the kernels written for float32: numba.cuda has no bfloat16 type, so
a bfloat16 array lives on the GPU as its uint16 bit patterns (runtime.Bfloat16Array).

The generated elementwise kernels decode and encode those bits themselves, one
rounding per operation (fused.py). Every other kernel gets bfloat16 from one
mechanism, `with_bfloat16`: its bfloat16 operands are widened to float32 on the
device (exactly), bfloat16 in its dtype params becomes float32, it computes as it
does in float32 (so reductions, matmul and convolution accumulate in float32 or
wider), and each result the primitive's shape rule declares bfloat16 is rounded to
nearest even, once. That is the cpu backend's rule for bfloat16: compute in float32,
round each operation's result."""
import numpy as np

from ...abstract import ShapedArray
from ...dtypes import bfloat16
from . import runtime
from .runtime import Bfloat16Array
from .scalar_functions import half

_cuda = runtime.cuda()
_FLOAT32 = np.dtype(np.float32)


@_cuda.jit(cache=True)
def _decode(bits, out):
    i = _cuda.grid(1)
    while i < out.size:
        out[i] = half.bfloat16_to_float(bits[i])
        i += _cuda.gridsize(1)


@_cuda.jit(cache=True)
def _encode(values, bits):
    i = _cuda.grid(1)
    while i < bits.size:
        bits[i] = half.bfloat16_to_bits(values[i])
        i += _cuda.gridsize(1)


def _flat(x):
    return x if tuple(x.shape) == (x.size,) else x.reshape(x.size)


def widen(value):
    """A float32 device array of a bfloat16 one's values (exact); others unchanged."""
    if type(value) is not Bfloat16Array:
        return value
    out = runtime.empty(value.shape, _FLOAT32)
    if value.size:
        runtime.launch(_decode, value.size, _flat(value.bits), _flat(out))
    return out


def narrow(value):
    """A real device array rounded to bfloat16 (nearest, ties to even; NaN, inf and
    -0.0 kept)."""
    if type(value) is Bfloat16Array:
        return value
    out = runtime.empty(value.shape, bfloat16)
    if value.size:
        runtime.launch(_encode, value.size, _flat(value), _flat(out.bits))
    return out


def _is_bfloat16(param):
    return isinstance(param, np.dtype) and param == bfloat16


def _widened_param(param):
    return _FLOAT32 if _is_bfloat16(param) else param


def with_bfloat16(prim, kernel):
    """`kernel` (the cuda kernel of `prim`, written for the dtypes numba.cuda has) made
    to take and give bfloat16 arrays, as the module docstring says. Operands of other
    dtypes go straight through."""
    def impl(*values, **params):
        if not (any(type(v) is Bfloat16Array for v in values)
                or any(_is_bfloat16(p) for p in params.values())):
            return kernel(*values, **params)
        out_avals = prim.abstract_eval(*[ShapedArray(v.shape, v.dtype) for v in values],
                                       **params)
        outs = kernel(*[widen(v) for v in values],
                      **{k: _widened_param(p) for k, p in params.items()})
        if not prim.multiple_results:
            return narrow(outs) if out_avals.dtype == bfloat16 else outs
        return [narrow(o) if a.dtype == bfloat16 else o for o, a in zip(outs, out_avals)]
    return impl
