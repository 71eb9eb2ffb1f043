"""Fused elementwise kernels for the GPU, generated from the primitives' scalar
expressions and index maps.

The loop body is the cpu compiler's (`KernelSource`: loads with broadcasting as index
arithmetic, the scalar expressions, the stores); here it runs once per element in a
grid-stride loop, each thread turning its flat index into the multi-index. An eager
elementwise op is a group of one equation; a jitted program's groups come from the
cpu backend's partition. Kernels are keyed by source (no sizes) and cached on disk
like the cpu ones."""
import functools

import numpy as np

from ...abstract import ShapedArray
from ...program import Equation, Var
from ...kernels.cpu import (elementwise as cpu_elementwise, half as cpu_half,
                            special as cpu_special)
from ..fusion import Group, KernelSource, unflatten
from ...kernels.disk_cache import helpers_digest, import_generated
from . import device_numpy, runtime, scalar_functions

# The names scalar expressions use, bound to device functions: `np` is
# device_numpy, `kernels` and `max`/`min` come from scalar_functions.
HEADER = """import math
import numba
from numba import cuda
from fnad.backends.cuda import device_numpy as np
from fnad.backends.cuda import scalar_functions as kernels
from fnad.backends.cuda.scalar_functions import maximum as max, minimum as min
from fnad.backends.cuda.scalar_functions import half
from fnad.kernels.cpu import special
"""
# The modules whose functions generated kernels call (scalar_functions compiles the
# cpu elementwise helpers as device functions, and binds `half` to the bfloat16 codecs).
HELPERS = (device_numpy, scalar_functions, cpu_elementwise, cpu_half, cpu_special)


def kernel_header():
    """The imports of a generated kernel, and the digest of the helpers it calls, so
    that a kernel of another helper version is another module."""
    return f"{HEADER}# helpers {helpers_digest(HELPERS)}\n\n\n"


def decompose(flat, dims, names, pad):
    """Lines turning the flat index `flat` into indices over `dims` (row-major)."""
    return [pad + line for line in unflatten(flat, dims, names)]


def cuda_source(kernel, shape):
    """The grid-stride kernel around a KernelSource's loop body (no reductions) over
    an iteration space of `shape`."""
    rank = len(shape)
    args = [f"in{k}" for k in range(len(kernel.inputs))] + \
        [f"out{k}" for k in range(len(kernel.outputs))] + [f"n{d}" for d in range(rank)]
    total = " * ".join(f"n{d}" for d in range(rank)) or "1"
    lines = [f"def kernel({', '.join(args)}):"] + ["    " + h for h in kernel.hoisted]
    lines += ["    flat = cuda.grid(1)", "    stride = cuda.gridsize(1)",
              f"    total = {total}", "    while flat < total:"]
    lines += decompose("flat", [f"n{d}" for d in range(rank)], [f"i{d}" for d in range(rank)],
                       " " * 8)
    lines += ["        " + line for line in kernel.loads + kernel.body]
    lines.append("        flat += stride")
    return "\n".join(lines) + "\n"


def load(source):
    return import_generated(kernel_header() + "@cuda.jit(cache=True)\n" + source,
                            "fnad_cuda_kernel").kernel


class GroupKernel:
    """A fusion group compiled for the GPU: call it with the group's input device
    arrays; it returns the device arrays of the values the group materializes."""

    def __init__(self, group, materialize):
        kernel = KernelSource(group, materialize)
        if any(axes is not None for _, axes in kernel.outputs):
            raise ValueError("cuda fusion groups hold no reductions (partition them out)")
        self.inputs = kernel.inputs
        self.outputs = [var for var, _ in kernel.outputs]
        self.shape = group.shape
        self.size = int(np.prod(group.shape, dtype=np.int64))
        self.source = cuda_source(kernel, group.shape)
        self.kernel = load(self.source)

    def __call__(self, *ins):
        # bfloat16 arrays go in as their bits, which the kernel decodes and encodes
        outs = [runtime.empty(v.aval.shape, v.aval.dtype) for v in self.outputs]
        runtime.launch(self.kernel, self.size, *map(runtime.bits_of, ins),
                       *map(runtime.bits_of, outs), *self.shape)
        return outs


@functools.lru_cache(maxsize=4096)
def _single(prim, in_avals, params_key):
    params = dict(params_key)
    ins = [Var(a) for a in in_avals]
    out_aval = prim.abstract_eval(*in_avals, **params)
    out = Var(out_aval)
    group = Group(tuple(out_aval.shape))
    group.eqns.append(Equation(prim, ins, [out], params))
    kernel = GroupKernel(group, {out})
    order = [ins.index(v) for v in kernel.inputs]
    return kernel, order


def elementwise_impl(prim):
    """The eager cuda implementation of a primitive with a scalar expression or an
    index map: a fused kernel of one equation."""
    def impl(*values, **params):
        in_avals = tuple(ShapedArray(v.shape, v.dtype) for v in values)
        kernel, order = _single(prim, in_avals, tuple(sorted(params.items())))
        return kernel(*[values[i] for i in order])[0]
    return impl
