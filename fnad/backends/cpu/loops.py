"""A scan as one Numba loop: the body Program compiled into an njit function and
called from a compiled loop, so no iteration goes back to Python.

A body is compilable when each of its fusion groups is (they are the same loop
nests jit generates) and each remaining primitive declares `numba_source`, the
Numba expression that computes it (matrix products, reshapes, transposes, indexing,
running reductions, random bits, sort...; a tuple for a multiple-result primitive),
calling the helpers in fnad/kernels/cpu/loop_*.py. Otherwise, or until Numba has compiled it, the scan runs its body's compiled driver
from a Python loop; compilation happens on a background thread, as for kernels.

float16 and bfloat16 values (Numba's cpu target has neither) live in a compiled loop
as their uint16 bit patterns, viewed so at its boundary, as the fused kernels' drivers
pass them: its fused kernels are the ones jit generates for bit-pattern operands
(computing in float32, rounding once per primitive); a primitive that only moves
values runs on the bits; a matrix product decodes its operands to float32 and encodes
its result once, as its eager kernel does; any other library call on 16-bit values
keeps the loop in Python.
"""
import hashlib
import math
import threading
import weakref

import numpy as np

from ... import config, events
from ...cache import register
from ...program import Literal
from ...staged.control import cond_p
from ...kernels.disk_cache import helpers_digest
from ...kernels.cpu import elementwise, half, loop_arrays, loop_index, loop_linalg, special
from ...kernels.cpu import random as threefry
from ...kernels.disk_cache import import_generated
from ..fusion import CODECS, Group, KernelSource, dtype_source, literal, materialized, \
    partition
from . import chunked
from . import njit

_loops = weakref.WeakKeyDictionary()    # a loop's body Program -> {key: _Loop}
register(_loops.clear)


class _Unsupported(Exception):
    pass



def _is_16bit(dtype):
    return np.dtype(dtype) in CODECS


def _held(dtype):
    """Source naming the dtype a compiled loop holds values of `dtype` in."""
    return "np.uint16" if _is_16bit(dtype) else f"np.{np.dtype(dtype).name}"


def _decode(name, dtype):
    return f"{_CODEC_FUNCTIONS[np.dtype(dtype)][0]}({name})"


def _encode(name, dtype):
    return f"{_CODEC_FUNCTIONS[np.dtype(dtype)][1]}({name})"


def body_source(program, name="body", kernel_prefix="k", nested=None):
    """(source of `def <name>(args) -> tuple`, the kernel sources it calls, which the
    source names <kernel_prefix>0, <kernel_prefix>1, ...). A cond in the program
    calls one function per branch: (name, branch program) pairs appended to
    `nested`, for the caller to define (without `nested`, a cond is unsupported)."""
    steps, via_numpy = _math_through_numpy([_own_group(s) for s in partition(program)])
    materialize = materialized(program, steps)
    names, lines, kernels = {}, [], []
    args = [f"a{i}" for i in range(len(program.invars))]
    for v, a in zip(program.invars, args):
        names[v] = a

    def value(a):
        if isinstance(a, Literal):
            if a.value.ndim:
                raise _Unsupported("array literal")
            if _is_16bit(a.value.dtype):     # held as its bits, as arrays are
                return f"np.uint16({int(a.value.view(np.uint16))})"
            return literal(a.value)
        return names[a]

    for step in steps:
        if isinstance(step, Group):
            # float16 as bits too: the kernels jit's drivers call (lowering.py)
            kernel = KernelSource(step, materialize[step], half=True)
            k = f"{kernel_prefix}{len(kernels)}"
            kernels.append(kernel.source)
            outs, rounding = [], []
            for slot, (var, axes) in enumerate(kernel.outputs):
                o = names[var] = f"v{len(names)}"
                shape, dtype = var.aval.shape, kernel.output_dtypes[slot]
                if slot in kernel.reduce_identity:
                    fill = literal(np.asarray(kernel.reduce_identity[slot], dtype))
                    lines.append(f"{o} = np.full({shape!r}, {fill}, {_held(dtype)})")
                else:
                    lines.append(f"{o} = np.empty({shape!r}, {_held(dtype)})")
                if dtype != var.aval.dtype:     # partial sums kept wider: round them once
                    rounding.append(f"{o} = {_rounded(o, dtype, var.aval.dtype)}")
                outs.append(o)
            # A kernel reads its operands as arrays, a scalar literal as a 0-d one.
            ins = [f"np.asarray({value(a)})" if isinstance(a, Literal) else value(a)
                   for a in kernel.inputs]
            lines.append(f"{k}({', '.join(ins + outs + [str(n) for n in step.shape])})")
            lines += rounding
            continue
        e = step
        if e in via_numpy:
            lines += _numpy_lines(e, value, names)
            continue
        if e.prim in _STRUCTURED and nested is not None:
            lines += _STRUCTURED[e.prim](e, name, nested, value, names)
            continue
        make = e.prim.numba_source
        operands, avals, out_aval = [value(a) for a in e.inputs], \
            [a.aval for a in e.inputs], e.outputs[0].aval
        narrow = [v.aval.dtype for v in list(e.inputs) + list(e.outputs)
                  if _is_16bit(v.aval.dtype)]
        # each primitive declares how it runs on 16-bit values (its on_16bit slot)
        decoded = narrow and e.prim.on_16bit == "float32"
        if narrow and not decoded and e.prim.on_16bit != "bits":
            raise _Unsupported(f"{e.prim.name} of {narrow[0]} values")
        if decoded:
            wide = np.dtype(np.float32)
            operands = [_decode(n, a.dtype) if _is_16bit(a.dtype) else n
                        for n, a in zip(operands, avals)]
            avals = [_widened(a, wide) for a in avals]
            out_aval = _widened(out_aval, wide)
        expr = make(operands, avals, out_aval, **e.params) if make is not None else None
        if expr is None:
            raise _Unsupported(e.prim.name)
        if decoded:
            if e.prim.multiple_results:
                raise _Unsupported(f"{e.prim.name} of {narrow[0]} values")
            expr = _encode(expr, e.outputs[0].aval.dtype)
        outs = []
        for v in e.outputs:     # a multiple-result primitive's expression is a tuple
            outs.append(f"v{len(names)}")
            names[v] = outs[-1]
        tail = "," if e.prim.multiple_results and len(outs) == 1 else ""
        lines.append(f"{', '.join(outs)}{tail} = {expr}")
    outs = [value(a) for a in program.outputs]
    source = "\n".join([f"def {name}({', '.join(args)}):"] + ["    " + line for line in lines]
                       + [f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"])
    return source + "\n", kernels


def _rounded(name, wide, dtype):
    """Source rounding the array `name` of dtype `wide` to `dtype` as numpy's astype
    does (jit's drivers round so): ml_dtypes takes a float64 to bfloat16 through
    float32, numpy a float64 to float16 at once."""
    if not _is_16bit(dtype):
        return f"{name}.astype(np.{dtype.name})"
    if np.dtype(dtype) != np.float16 and wide != np.float32:
        name = f"{name}.astype(np.float32)"
    return _encode(name, dtype)


def _widened(aval, dtype):
    return type(aval)(aval.shape, dtype) if _is_16bit(aval.dtype) else aval


def _cond_lines(e, name, nested, value, names):
    """A cond as an if/elif chain over calls of its branches' functions."""
    branches = e.params["branches"]
    calls = []
    for b in branches:
        calls.append(f"{name}_branch{len(nested)}")
        nested.append((calls[-1], b))
    outs = []
    for v in e.outputs:
        outs.append(f"v{len(names)}")
        names[v] = outs[-1]
    target = f"{', '.join(outs)}, = " if outs else ""
    ops = ", ".join(value(a) for a in e.inputs[1:])
    choice = f"c{len(names)}"
    lines = [f"{choice} = min(max(np.int64(np.asarray({value(e.inputs[0])}).item()), 0), "
             f"{len(branches) - 1})"]
    for k, call in enumerate(calls):
        if len(calls) > 1:
            lines.append("else:" if k == len(calls) - 1 else
                         f"{'if' if k == 0 else 'elif'} {choice} == {k}:")
        lines.append(("    " if len(calls) > 1 else "") + f"{target}{call}({ops})")
    return lines


# Control-flow primitives this compiler writes as structured Python (the loop's own
# if/elif over functions it defines), the way a backend registers its kernels.
_STRUCTURED = {cond_p: _cond_lines}


# A fused group calling exp, tanh... on at least this many elements runs one equation
# at a time, the math-library calls through numpy's SIMD ufuncs in object mode: the
# fused loop's scalar libm calls cost ~9 ns an element (a 32x128 float32 tanh: 36 us),
# numpy's ufunc plus the switch to object mode a few microseconds. (jit's driver does
# the same for such groups, fnad/backends/cpu/chunked.py.)
NUMPY_MATH_MIN_ELEMENTS = 1 << 12


def _math_through_numpy(steps):
    """(steps with each large math-heavy group split into one step per equation, the
    equations among them to run through numpy)."""
    out, via_numpy = [], set()
    for step in steps:
        if not (isinstance(step, Group) and math.prod(step.shape) >= NUMPY_MATH_MIN_ELEMENTS
                and chunked.eligible(step)):
            out.append(step)
            continue
        current, produced_in = None, {}
        for e in step.eqns:     # the arithmetic between the math calls stays fused
            if e.prim.scalar and not e.params and chunked.calls_math_library(e):
                via_numpy.add(e)
                out.append(e)
                current = None
                continue
            if current is None or not current.accepts(e, produced_in):
                current = Group(tuple((e.inputs[0] if e.prim.reduction else
                                       e.outputs[0]).aval.shape))
                out.append(current)
            current.eqns.append(e)
            produced_in.update((o, current) for o in e.outputs)
            if e.prim.reduction is not None:
                current.reduced.update(e.outputs)
    return out, via_numpy


def _numpy_lines(e, value, names):
    """An elementwise math call as its primitive's own numpy kernel, in object mode."""
    out = e.outputs[0]
    o = names[out] = f"v{len(names)}"
    ndim, dtype = len(out.aval.shape), out.aval.dtype
    layout = ", ".join([":"] * (ndim - 1) + ["::1"])
    # 16-bit values are bits in the loop: seen as their dtype by the numpy kernel
    args = ", ".join(f"{value(a)}.view({dtype_source(a.aval.dtype)})"
                     if not isinstance(a, Literal) and _is_16bit(a.aval.dtype) else value(a)
                     for a in e.inputs)
    result = f"np.ascontiguousarray(PRIMITIVES[{e.prim.name!r}].impl({args}), " \
        f"{dtype_source(dtype)})"
    if _is_16bit(dtype):
        return [f"with numba.objmode({o}='uint16[{layout}]'):",
                f"    {o} = {result}.view(np.uint16)"]
    return [f"with numba.objmode({o}='{dtype.name}[{layout}]'):", f"    {o} = {result}"]


def _own_group(step):
    """A reduction the partition left alone (its operand made by a library call, say a
    gather) as a loop nest of its own: the loop has no numpy to call."""
    if isinstance(step, Group) or step.prim.reduction is None \
            or isinstance(step.inputs[0], Literal):
        return step
    group = Group(tuple(step.inputs[0].aval.shape))
    group.eqns.append(step)
    group.reduced.update(step.outputs)
    return group


def loop_source(program, num_consts, num_carry, length, reverse):
    n_in = len(program.invars)
    consts = [f"c{i}" for i in range(num_consts)]
    carry = [f"h{i}" for i in range(num_carry)]
    xs = [f"x{i}" for i in range(n_in - num_consts - num_carry)]
    ys = [f"y{i}" for i in range(len(program.outputs) - num_carry)]
    y_avals = [a.aval for a in program.outputs[num_carry:]]
    lines = [f"def loop({', '.join(consts + carry + xs)}):"]
    lines += [f"    {h} = {h}.copy()" for h in carry]
    lines += [f"    {y} = np.empty(({length},) + {tuple(a.shape)!r}, {_held(a.dtype)})"
              for y, a in zip(ys, y_avals)]
    lines.append(f"    for k in range({length}):")
    lines.append(f"        i = {length - 1} - k" if reverse else "        i = k")
    new = [f"n{j}" for j in range(len(program.outputs))]
    x_avals = [v.aval for v in program.invars[num_consts + num_carry:]]
    # A 0-d slice of xs must stay an array for the kernels: np.asarray of the scalar.
    slices = [f"{x}[i]" if a.shape else f"np.asarray({x}[i])" for x, a in zip(xs, x_avals)]
    lines.append(f"        {', '.join(new)}{',' if len(new) == 1 else ''} = body("
                 + ", ".join(consts + carry + slices) + ")")
    lines += [f"        {h} = {n}" for h, n in zip(carry, new)]
    for y, n, a in zip(ys, new[num_carry:], y_avals):
        lines.append(f"        {y}[i] = {n}[()]" if not a.shape else f"        {y}[i] = {n}")
    outs = carry + ys
    lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    return "\n".join(lines) + "\n"


HEADER = """import math
import numba
import numpy as np
from fnad.kernels.cpu import elementwise as kernels
from fnad.backends.cpu.njit import load_kernel
from fnad.core import PRIMITIVES
from fnad.kernels.cpu import loop_arrays, loop_index, loop_linalg
from fnad.kernels.cpu import special
from fnad.kernels.cpu import half
"""


def _codec_source(name, scalar, out_dtype):
    """A loop-module function applying half.<scalar> to every element of an array."""
    return f"""

@numba.njit(cache=True, nogil=True)
def {name}(array):
    flat = np.ascontiguousarray(array).ravel()
    out = np.empty(flat.size, np.{out_dtype})
    for i in range(flat.size):
        out[i] = half.{scalar}(flat[i])
    return out.reshape(array.shape)
"""


HEADER += "".join(_codec_source(*c) for c in (
    ("float16_decoded", "to_float", "float32"), ("float16_encoded", "to_bits", "uint16"),
    ("bfloat16_decoded", "bfloat16_to_float", "float32"),
    ("bfloat16_encoded", "bfloat16_to_bits", "uint16")))
# The 16-bit floats' (decode to float32 arrays, encode to bits) in HEADER.
_CODEC_FUNCTIONS = {np.dtype(np.float16): ("float16_decoded", "float16_encoded"),
                    **{d: ("bfloat16_decoded", "bfloat16_encoded")
                       for d in CODECS if d != np.dtype(np.float16)}}
# The modules whose functions a loop calls (and Numba compiles into it).
HELPERS = (elementwise, half, loop_arrays, loop_index, loop_linalg, special, threefry)


JIT = '@numba.njit(cache=True, nogil=True, error_model="numpy")\n'
JIT_GIL = '@numba.njit(cache=True, error_model="numpy")\n'


def _functions(programs):
    """Source defining one njit function per (name, program), and their kernels."""
    parts, kernel_lines, programs = [], [], list(programs)
    i = 0
    while i < len(programs):        # the list grows by the branches of nested conds
        name, program = programs[i]
        source, kernel_sources = body_source(program, name, f"k{i}_", programs)
        kernel_lines += [f"k{i}_{j} = load_kernel({s!r})\n" for j, s in enumerate(kernel_sources)]
        # (A function that enters object mode holds the GIL there: no nogil promise.)
        parts.append((JIT_GIL if "numba.objmode" in source else JIT) + source)
        i += 1
    return "".join(kernel_lines) + "\n\n" + "\n\n".join(parts)


def _module(text):
    # A loop's cached machine code names the modules of the kernels it calls, and their
    # names hash the kernel header as well as the kernel sources written here: a new
    # kernel header must make a new loop module, not one whose cache names modules
    # that no longer exist.
    # Numba compiles the kernels and helpers a loop calls into the loop's machine code:
    # a new version of any of them must make a new loop module as well.
    header = hashlib.sha1(njit.kernel_header().encode()).hexdigest()[:20]
    return import_generated(f"{HEADER}# kernel header {header}\n"
                            f"# helpers {helpers_digest(HELPERS)}\n\n{text}", "fnad_loop")


def _one_blas_thread(functions, loop):
    """The loop run with BLAS on one thread (see loop_linalg.blas_threads) when its
    bodies call BLAS: `loop` is renamed, and `loop` calls it between the switches."""
    if "loop_linalg.gemm_" not in functions:
        return loop
    header = loop.split("\n", 1)[0]
    params = header[len("def loop("):-2]
    return (loop.replace("def loop(", "def inner_loop(", 1) + "\n\n" + JIT
            + f"def loop({params}):\n"
            + "    threads = loop_linalg.blas_threads(1)\n"
            + f"    out = inner_loop({params})\n"
            + "    loop_linalg.blas_threads(threads)\n"
            + "    return out\n")


def scan_text(program, num_consts, num_carry, length, reverse):
    functions = _functions([("body", program)])
    return functions + "\n\n" + JIT + _one_blas_thread(
        functions, loop_source(program, num_consts, num_carry, length, reverse))


def while_text(cond, body, cond_nconsts, body_nconsts):
    n_carry = len(body.outputs)
    cc = [f"c{i}" for i in range(cond_nconsts)]
    bc = [f"b{i}" for i in range(body_nconsts)]
    h = [f"h{i}" for i in range(n_carry)]
    tail = "," if n_carry == 1 else ""
    lines = [f"def loop({', '.join(cc + bc + h)}):"]
    lines += [f"    {x} = {x}.copy()" for x in h]
    lines.append(f"    while test({', '.join(cc + h)})[0][()]:")
    lines.append(f"        {', '.join(h)}{tail} = step({', '.join(bc + h)})")
    lines.append(f"    return ({', '.join(h)}{tail})")
    functions = _functions([("test", cond), ("step", body)])
    return functions + "\n\n" + JIT + _one_blas_thread(functions, "\n".join(lines) + "\n")


def cond_text(branches):
    n = len(branches)
    ops = [f"o{i}" for i in range(len(branches[0].invars))]
    lines = [f"def loop(index, {', '.join(ops)}):" if ops else "def loop(index):",
             f"    i = min(max(index[()], 0), {n - 1})"]
    for k in range(n):
        lines.append(f"    {'if' if k == 0 else 'elif'} i == {k}:" if k < n - 1 else "    else:")
        lines.append(f"        return branch{k}({', '.join(ops)})")
    return _functions([(f"branch{k}", b) for k, b in enumerate(branches)]) + "\n\n" + JIT + \
        "\n".join(lines) + "\n"


class _Loop:
    """The compiled loop of one scan, once Numba has it; None while it compiles or if
    the body cannot be compiled."""

    def __init__(self, text, programs):
        self.text = text            # a function of the programs returning the source
        # Weakly: the table holding this _Loop is keyed by programs[0].
        self.programs = [weakref.ref(p) for p in programs]
        self.ready = None
        self.thread = None
        self.calls = 0
        self.reason = None          # why the body stays a Python loop, if it does

    def get(self, args):
        self.calls += 1
        # In the background, compile a loop only once it runs a second time: a loop
        # run once is not worth seconds of compiler time.
        if self.thread is None and (self.calls > 1 or not config.background_compile):
            self.thread = threading.Thread(target=self._build, args=(args,),
                                           name="fnad compile loop")
            if config.background_compile:
                self.thread.start()     # meanwhile the scan runs its Python loop
            else:
                self.thread.run()
        return self.ready or None

    def for_programs(self, programs):
        return all(r() is p for r, p in zip(self.programs, programs))

    def _build(self, args):
        programs = [r() for r in self.programs]
        if any(p is None for p in programs):    # gone before the thread started
            self.ready = False
            return
        try:
            module = _module(self.text(*programs))
            loop = _bit_views(module.loop, [a.dtype for a in args],
                              [v.aval.dtype for v in programs[0].outputs])
            loop(*args)                 # compile (or load) for these argument types
            self.ready = loop
        except Exception as err:        # an unsupported body keeps the Python loop
            self.ready = False
            self.reason = f"{type(err).__name__}: {err}"
            if config.log_compiles:
                events.logger.warning("fnad: loop body left to a Python loop (%s: %s)",
                                      type(err).__name__, str(err)[:3000])


def _bit_views(loop, arg_dtypes, out_dtypes):
    """loop, taking and giving its 16-bit float arrays as their uint16 bits inside."""
    if not any(_is_16bit(d) for d in list(arg_dtypes) + list(out_dtypes)):
        return loop
    out_dtypes = [np.dtype(d) for d in out_dtypes]

    def call(*args):
        outs = loop(*[a.view(np.uint16) if _is_16bit(a.dtype) else a for a in args])
        return tuple(o.view(d) if _is_16bit(d) else o for o, d in zip(outs, out_dtypes))
    return call


def compiled_loop(programs, key, text, args):
    """The njit `loop` of the module `text(*programs)` builds, once compiled for args'
    types, or None (then the caller runs its Python loop). Cached per (programs, key)
    while programs[0] lives; `text` must not hold the programs (the cache would then
    keep them alive)."""
    table = _loops.setdefault(programs[0], {})
    key = (key,) + tuple(id(p) for p in programs[1:])
    loop = table.get(key)
    if loop is None or not loop.for_programs(programs):    # (an id reused)
        loop = table[key] = _Loop(text, programs)
    return loop.get(args)
