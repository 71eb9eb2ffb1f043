"""jit_call: a staged Program applied as one primitive.

`jit` makes every jitted function a jit_call whose param is its Program, so a jitted
function under grad, jvp, vmap or another jit is one equation whose rules transform
the Program (staged/programs.py) and call the result: vmap(jit(f)) and grad(jit(f))
stay single compiled calls. Its cpu kernel is the cpu backend's compiled program.
"""
from ..dtypes import kind_of as dtype_kind
from ..backend import host_kernel
from ..core import Primitive
from ..primitives._rules import batch_size
from ..primitives.structural import move_batch_axes
from .programs import batched_program_as_traced, jvp_program, vjp_program


def call(closed, *args):
    """Apply a ClosedProgram to `args`, in the current interpreter."""
    return jit_call_p.bind(*closed.consts, *args, program=closed.program)


def _jit_call_jvp(primals, tangents, program):
    in_mask = tuple(t is not None and dtype_kind(a.dtype) in "fc"
                    for t, a in zip(tangents, program.in_avals))
    m = len(program.outputs)
    if not any(in_mask):
        return jit_call_p.bind(*primals, program=program), [None] * m
    given = [t for t, wanted in zip(tangents, in_mask) if wanted]
    outs = call(jvp_program(program, in_mask, (True,) * m), *primals, *given)
    return outs[:m], outs[m:]


def _jit_call_vjp(cts, outs, *args, program):
    ct_mask = tuple(c is not None for c in cts)
    float_cts = call(vjp_program(program, ct_mask), *args, *[c for c in cts if c is not None])
    result = [None] * len(args)
    floats = [i for i, a in enumerate(program.in_avals) if dtype_kind(a.dtype) in "fc"]
    for i, c in zip(floats, float_cts):
        result[i] = c
    return result


def _jit_call_batch(args, batch_dims, program):
    # vmap(jit(f)) stays one compiled call: jit the vmapped program.
    size = batch_size(args, batch_dims)
    in_batched = tuple(d is not None for d in batch_dims)
    closed, out_batched = batched_program_as_traced(program, in_batched, size)
    moved = move_batch_axes(args, batch_dims, 0)
    return call(closed, *moved), [0 if b else None for b in out_batched]


def _onnx_inline(b, *args, program):
    # ONNX has no call: a nested jit's program is written in place.
    return b.lower(program, list(args))


jit_call_p = Primitive(
    "jit_call",
    abstract_eval=lambda *avals, program: program.out_avals,
    impl=host_kernel("jit_call"), jvp=_jit_call_jvp, vjp=_jit_call_vjp,
    batch=_jit_call_batch, multiple_results=True, onnx=_onnx_inline)
