"""The cpu backend: plain Arrays over numpy buffers.

Eager operations on them never come here (Primitive.eval runs each primitive's `impl`
directly); what does is jit, through `compile` and `executable`, and the primitives
whose cpu kernel is this backend's own (`implements`: staged programs and control flow,
which compile through it)."""
import sys

import numpy as np

from ...array import CPU, Array, wrap
from ...tree_util import tree_unflatten
from .lowering import compiled

_kernels = {}       # primitive name -> this backend's kernel of it


def implements(name):
    """Register the decorated function as the cpu kernel of the primitive `name`
    (whose declared impl is backend.host_kernel(name)): called with numpy values and
    the primitive's params."""
    def register(fn):
        _kernels[name] = fn
        return fn
    return register


class CpuBackend:
    platform = "cpu"
    array_type = Array

    def devices(self):
        return [CPU]

    def put(self, x, device, committed):
        out = Array(np.array(x))     # copies, from the host or from another device
        if committed:
            out._committed = True
        return out

    def evaluate(self, prim, args, params):
        return prim.eval(args, params)

    def own_kernel(self, name):
        """The kernel `implements` registered for the primitive `name`."""
        return _kernels[name]

    def compile(self, program):
        return compiled(program)

    def executable(self, closed, out_tree, device, donated=()):
        """jit's fast path: the compiled driver called on the Arrays' buffers, with
        no bind in between. The Arrays at the `donated` argument positions that are
        the sole holders of their buffers lend them to the results."""
        consts = [c._value if type(c) is Array else c for c in closed.consts]
        if donated:
            return _lending(closed, out_tree, consts, donated)
        run = compiled(closed.program)
        if out_tree.node_type is None:
            def call(args):
                return wrap(run(*consts, *[a._value for a in args])[0])
        else:
            def call(args):
                outs = run(*consts, *[a._value for a in args])
                return tree_unflatten(out_tree, [wrap(o) for o in outs])
        return call


def _lending(closed, out_tree, consts, donated):
    n = len(consts)
    run = compiled(closed.program, tuple(n + p for p in donated))

    def call(args):
        lent = {n + p for p in donated if _sole_holder(args[p])
                and not any(a is args[p] for q, a in enumerate(args) if q != p)}
        outs = run(*consts, *[a._value for a in args], donated=lent)
        return tree_unflatten(out_tree, [wrap(o) for o in outs])
    return call


def _buffer_references(array):
    buffer = array._value
    return sys.getrefcount(buffer), buffer


def _sole_holder(array):
    """Whether nothing but `array` refers to its buffer: no view of it (fnad's or one
    np.asarray handed out), no other Array, no captured constant. Its buffer can then
    be overwritten without anyone seeing it change."""
    if type(array) is not Array:
        return False
    count, buffer = _buffer_references(array)
    return (type(buffer) is np.ndarray and buffer.base is None and buffer.flags.writeable
            and buffer.flags.c_contiguous and count == _SOLE_HOLDER_COUNT)


# The count _buffer_references sees for a buffer only its Array holds: measured rather
# than assumed, since what the interpreter itself holds differs between versions.
_SOLE_HOLDER_COUNT = _buffer_references(Array(np.empty(2)))[0]
