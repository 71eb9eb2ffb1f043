"""Staged programs and control flow on the GPU: a jitted call runs its program's
cuda executable; cond, while and scan run their compiled sub-programs from a Python
loop (the loop's predicate and branch index are read back to the host, one scalar
per iteration; everything else stays on the device)."""
from ...staged import control as C
from ...staged.call import jit_call_p
from ...staged.staging import custom_call_p
from . import runtime
from .registry import device_value, implements
from .lowering import compiled


@implements(jit_call_p, bfloat16_ok=True)
def _jit_call(*args, program):
    return compiled(program)(*args)


@implements(custom_call_p, bfloat16_ok=True)
def _custom_call(*args, rules, program):
    consts = [device_value(c) for c in program.consts]
    return compiled(program.program)(*consts, *args)


@implements(C.cond_p, bfloat16_ok=True)
def _cond(index, *operands, branches):
    return C.run_cond(index, operands, branches, compiled)


@implements(C.while_p, bfloat16_ok=True)
def _while(*args, cond, body, cond_nconsts, body_nconsts):
    return C.run_while(list(args), cond, body, cond_nconsts, body_nconsts, compiled)


@implements(C.scan_p, bfloat16_ok=True)
def _scan(*args, body, num_consts, num_carry, length, reverse):
    return C.run_scan(list(args), body, num_consts, num_carry, length, reverse, compiled,
                      runtime.empty)
