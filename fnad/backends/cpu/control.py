"""The cpu kernels of control flow: a whole cond, while loop or scan compiled into
one Numba function (fnad/backends/cpu/loops.py) where its sub-programs allow it,
otherwise a Python loop over their compiled programs."""
import numpy as np

from ...staged import control as C
from .loops import compiled_loop, cond_text, scan_text, while_text
from .lowering import compiled
from .backend import implements


@implements("cond")
def _cond(index, *operands, branches):
    args = [np.asarray(index)] + [np.asarray(o) for o in operands]
    branch = compiled_loop(branches, "cond", lambda *bs: cond_text(bs), args)
    if branch:      # the branches and the choice in one compiled function
        return [np.asarray(o) for o in branch(*args)]
    return [np.asarray(o) for o in C.run_cond(index, operands, branches, compiled)]


@implements("while")
def _while(*args, cond, body, cond_nconsts, body_nconsts):
    args = [np.asarray(a) for a in args]
    loop = compiled_loop((body, cond), ("while", cond_nconsts, body_nconsts),
                         lambda b, c: while_text(c, b, cond_nconsts, body_nconsts), args)
    if loop:        # the whole loop in one compiled Numba function
        return [np.asarray(c) for c in loop(*args)]
    return [np.asarray(c)
            for c in C.run_while(args, cond, body, cond_nconsts, body_nconsts, compiled)]


@implements("scan")
def _scan(*args, body, num_consts, num_carry, length, reverse):
    args = [np.asarray(a) for a in args]
    params = (num_consts, num_carry, length, reverse)
    loop = compiled_loop((body,), params, lambda b: scan_text(b, *params), args)
    if loop:        # the whole scan in one compiled Numba loop
        return [np.asarray(o) for o in loop(*args)]
    outs = C.run_scan(args, body, num_consts, num_carry, length, reverse, compiled, np.empty)
    return [np.asarray(o) for o in outs]
