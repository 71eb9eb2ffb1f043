"""The cpu backend (always present): fused loop nests generated and compiled with
Numba (lowering.py, fusion groups from ../fusion.py), blocked numpy execution for
math-heavy groups (chunked.py), whole control-flow loops in one Numba function
(loops.py)."""
from ...backend import register
from ...staged.call import jit_call_p
from . import control  # noqa: F401  (registers the control-flow kernels)
from .backend import CpuBackend, implements
from .lowering import compiled


@implements(jit_call_p.name)
def _jit_call(*args, program):
    return compiled(program)(*args)


register(CpuBackend())
