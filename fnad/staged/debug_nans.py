"""config.debug_nans: when a jitted function returns a NaN, find the primitive that
made it.

The compiled program cannot say which kernel produced a NaN (a fused loop computes
many primitives at once), so, as JAX does, the function is run again eagerly, one
primitive at a time, under an interpreter that checks each result: the first
primitive whose result holds a NaN while its operands hold none is the culprit. The
NaNError names it and the line of user code that applied it.
"""
import linecache
import sys

import numpy as np

from .. import config
from ..array import Array
from ..core import EVAL, Trace, use_trace
from ..errors import NaNError
from ..tracebacks import user_frame
from ..tree_util import tree_leaves


def has_nan(value):
    v = value._value if type(value) is Array else value
    if not isinstance(v, (np.ndarray, np.generic, float, complex)):
        return False
    v = np.asarray(v)
    return v.dtype.kind in "fc" and bool(np.isnan(v).any())


class NaNCheck(Trace):
    """Evaluates each primitive at once, raising NaNError at the first that turns
    operands without NaN into a result with one."""
    name = "debug_nans"

    def process(self, prim, args, params):
        out = prim.eval(args, params)
        outs = out if prim.multiple_results else [out]
        if any(has_nan(o) for o in outs) and not any(has_nan(a) for a in args):
            raise NaNError(_message(prim, args))
        return out

    def process_custom(self, rules, args):
        return rules.fun(list(args))


def _message(prim, args):
    frame = user_frame(sys._getframe(2))
    where = ""
    if frame is not None:
        code = frame.f_code
        line = linecache.getline(code.co_filename, frame.f_lineno).strip()
        where = (f" at {code.co_filename}:{frame.f_lineno} (in {code.co_name})"
                 + (f": {line}" if line else ""))
    operands = ", ".join(f"{np.asarray(a._value if type(a) is Array else a).dtype}"
                         f"{list(np.shape(a._value if type(a) is Array else a))}"
                         for a in args)
    return (f"NaN produced by primitive {prim.name!r}{where}; its operands ({operands}) "
            f"held no NaN. (config.debug_nans found it by running the jitted function "
            f"again eagerly.)")


def check(fun, name, out, args, kwargs):
    """Raise NaNError if a jitted function's outputs `out` hold a NaN: at the primitive
    that made it, found by running fun(*args, **kwargs) again eagerly."""
    if not any(has_nan(leaf) for leaf in tree_leaves(out)):
        return
    previous = config.disable_jit
    config.disable_jit = True       # nested jits run their Python too
    try:
        with use_trace(NaNCheck(EVAL)), np.errstate(all="ignore"):
            fun(*args, **kwargs)
    finally:
        config.disable_jit = previous
    raise NaNError(f"jit({name}) returned a NaN, but running it again eagerly produced "
                   f"none: the NaN came from an argument or a non-deterministic step")
