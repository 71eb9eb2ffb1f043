"""A Program lowered for the GPU: its fusion groups become generated numba.cuda
kernels (fused.py) and every other equation runs its primitive's cuda kernel, in
order, on device arrays. Values move between steps in GPU memory only; literals and
host constants are copied to the device once, when the program is lowered.

The grouping is the cpu compiler's, except that reductions are steps of their own
(a block tree reduction reads the group's materialized output)."""
import weakref

import numpy as np

from ...cache import register
from ...program import Literal
from ..fusion import Group, materialized, check_sizes, partition
from . import runtime
from .registry import impl_for, check_real
from .fused import GroupKernel

# Program -> Executable, which holds no reference to its Program (so an entry goes
# when the Program does).
_executables = weakref.WeakKeyDictionary()
register(_executables.clear)


def compiled(program):
    exe = _executables.get(program)
    if exe is None:
        exe = _executables[program] = Executable(program)
    return exe


class Executable:
    def __init__(self, program):
        self.invars = list(program.invars)
        steps = partition(program, fuse_reductions=False)
        materialize = materialized(program, steps)
        check_sizes(program)
        for e in program.eqns:
            check_real(e.prim, [a.aval for a in list(e.inputs) + list(e.outputs)])
        self.steps = []
        self.kernel_sources = []
        for step in steps:
            if isinstance(step, Group):
                kernel = GroupKernel(step, materialize[step])
                self.kernel_sources.append(kernel.source)
                self.steps.append((kernel, [self._atom(a) for a in kernel.inputs],
                                   kernel.outputs, {}, False))
            else:
                self.steps.append((impl_for(step.prim), [self._atom(a) for a in step.inputs],
                                   step.outputs, step.params, step.prim.multiple_results))
        self.outputs = [self._atom(a) for a in program.outputs]

    def _atom(self, a):
        return _Constant(a.value) if isinstance(a, Literal) else a

    def __call__(self, *args):
        env = dict(zip(self.invars, args))

        def read(a):
            return a.device_value() if type(a) is _Constant else env[a]

        for fn, ins, outs, params, multiple in self.steps:
            result = fn(*[read(a) for a in ins], **params)
            if type(fn) is GroupKernel or multiple:
                env.update(zip(outs, result))
            else:
                env[outs[0]] = result
        return [read(a) for a in self.outputs]


class _Constant:
    """A literal, uploaded on first use and kept on the device."""
    __slots__ = ("value", "on_device")

    def __init__(self, value):
        self.value = np.asarray(value)
        self.on_device = None

    def device_value(self):
        if self.on_device is None:
            self.on_device = runtime.to_device(self.value)
        return self.on_device
