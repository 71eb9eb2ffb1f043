"""The fusion plan every backend compiles from: a Program cut into steps, each either a
group of elementwise and index-map equations (with the reductions that consume them)
over one loop nest, or one equation left to a library kernel; which values each group
must write to memory; and a group's loop nest as Numba-flavoured Python source
(`KernelSource`), which the cpu backend compiles with numba.njit and the cuda backend
turns into a grid-stride kernel. Primitives take part through their declared rules
(scalar, reduction, index_map), never by name."""
import math
import os

import numpy as np

from ..dtypes import bfloat16
from ..errors import ResourceError
from ..program import Literal

# The combines Numba's prange turns into parallel reductions by itself. A parallel loop
# nest with another scalar accumulator splits its outer loop into at most
# PARALLEL_CHUNKS chunks (several per thread, so that uneven progress still balances).
NUMBA_REDUCTIONS = ("{acc} + {x}", "{acc} * {x}")
PARALLEL_CHUNKS = 64


# --------------------------------------------------------------------------- grouping

def _is_elementwise(e):
    return e.prim.scalar is not None and not e.prim.multiple_results


def _is_fusible_reduction(e):
    return e.prim.reduction is not None


class Group:
    def __init__(self, shape):
        self.shape = shape
        self.eqns = []
        self.reduced = set()    # outputs of this group's reductions

    def accepts(self, e, produced_in):
        if _is_elementwise(e) or e.prim.index_map is not None:
            if tuple(e.outputs[0].aval.shape) != self.shape:
                return False
            # A value reduced in this loop nest is only complete after it.
            return not any(a in self.reduced for a in e.inputs if not isinstance(a, Literal))
        if _is_fusible_reduction(e):
            src = e.inputs[0]
            return not isinstance(src, Literal) and produced_in.get(src) is self \
                and src not in self.reduced
        return False


def partition(program, fuse_reductions=True):
    """A list of steps: Group objects and single library equations, in order.
    Without fuse_reductions, reductions are library steps of their own."""
    steps, current, produced_in = [], None, {}
    for e in program.eqns:
        fusible = _is_elementwise(e) or e.prim.index_map is not None
        if not fuse_reductions and _is_fusible_reduction(e):
            current = None
            steps.append(e)
            continue
        if current is not None and current.accepts(e, produced_in):
            pass
        elif fusible:
            current = Group(tuple(e.outputs[0].aval.shape))
            steps.append(current)
        else:
            current = None
            steps.append(e)
            continue
        current.eqns.append(e)
        for o in e.outputs:
            produced_in[o] = current
        if _is_fusible_reduction(e):
            current.reduced.update(e.outputs)
    return steps


# --------------------------------------------------------------------------- sizes

# No array holds this many bytes or more (numpy's sizes are signed 64-bit), and a loop
# over as many elements may count past int64.
MAX_BYTES = 1 << 63


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):    # not a POSIX system
        return None


PHYSICAL_MEMORY = _physical_memory()


def check_sizes(program, allocated=(), memory=None):
    """Refuse a program with a value too large to exist, or one allocating a value of
    `allocated` larger than `memory` bytes, before anything runs: a fused loop over a
    broadcast that is never materialized would otherwise start, and run for years."""
    def size(v):
        return math.prod(v.aval.shape) * np.dtype(v.aval.dtype).itemsize

    def describe(v, made_by):
        where = f" made by {made_by.prim.name}" if made_by is not None else " (an argument)"
        n = math.prod(v.aval.shape)
        return (f"a value of shape {tuple(v.aval.shape)} and dtype {v.aval.dtype}{where}: "
                f"{n} elements, {size(v)} bytes (2**{math.log2(max(size(v), 1)):.1f})")

    made_by = {o: e for e in program.eqns for o in e.outputs}
    for v in list(program.invars) + list(made_by):
        if size(v) >= MAX_BYTES:
            raise ResourceError(f"jit cannot compute {describe(v, made_by.get(v))}; no "
                                "array holds 2**63 bytes or more, and a loop over that "
                                "many elements could overflow its int64 count")
    for v in allocated:
        if memory is not None and size(v) > memory:
            raise ResourceError(f"jit would allocate {describe(v, made_by.get(v))}, more "
                                f"than this machine's {memory} bytes of memory")


# --------------------------------------------------------------------------- kernels

def literal(value, half=False):
    """Source for a numpy scalar of the value's dtype. With half, a float16 value is
    written as the float32 that kernels compute it in (see half.py); a bfloat16 value
    always is (no target has a bfloat16 type)."""
    value = np.asarray(value)
    dtype = value.dtype
    if dtype == _BFLOAT16:
        return f"np.float32({_float(float(value))})"
    v = value.item()
    if dtype.kind == "b":
        return repr(bool(v))
    if dtype.kind == "f":
        return f"np.{'float32' if half and dtype == np.float16 else dtype.name}({_float(v)})"
    if dtype.kind == "c":
        return f"np.{dtype.name}(complex({_float(v.real)}, {_float(v.imag)}))"
    return f"np.{dtype.name}({int(v)})"


def dtype_source(dtype):
    """Source naming a dtype in generated drivers: numpy has no np.bfloat16 attribute,
    but knows the name once ml_dtypes is imported."""
    dtype = np.dtype(dtype)
    return "np.dtype('bfloat16')" if dtype == _BFLOAT16 else f"np.{dtype.name}"


def _float(v):
    if np.isnan(v):
        return "np.nan"
    if np.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(float(v))


def _param(value, half=False):
    if isinstance(value, np.dtype):
        # a conversion to a 16-bit float rounds to its precision, kept in a float32
        if value == _BFLOAT16 or (half and value == _FLOAT16):
            return f"half.{CODECS[value][2]}"
        return f"np.{value.name}"
    return repr(value)


def accumulator_dtype(reduction, dtype):
    """The dtype a reduction declared as `reduction` keeps its partial results in, for
    an output of `dtype` (the output's own unless the declaration says otherwise)."""
    return np.dtype(reduction[2](dtype)) if len(reduction) > 2 else np.dtype(dtype)


_FLOAT16 = np.dtype(np.float16)
_BFLOAT16 = bfloat16
_COMPLEX64 = np.dtype(np.complex64)
# The 16-bit floats kernels hold as uint16 bits: half.py's (decode, encode, round).
CODECS = {_FLOAT16: ("to_float", "to_bits", "round"),
          _BFLOAT16: ("bfloat16_to_float", "bfloat16_to_bits", "bfloat16_round")}


# Python allows 20 nested blocks in a function, and each dimension of a loop nest is
# one: past this depth, the outer dimensions are walked by one flat index instead.
MAX_NEST = 8


class LoopNest:
    """How a kernel walks an iteration space of `shape`: the index expression of each
    dimension (`index`), the loop variable `outer` that threads split, over `count`
    iterations, and the dimensions looped inside it (`inner`).

    Up to MAX_NEST dimensions this is the plain nest `for i0 in range(n0): for i1 ...`.
    Deeper spaces (numpy allows 64 dimensions) loop over no size-1 dimension (its index
    is 0), and when more than MAX_NEST dimensions remain, the outer ones are walked by
    one flat index `o`, turned back into their indices (`unflatten`) once per run of
    the inner loops, so the nest is never deeper than MAX_NEST. Nests of up to MAX_NEST
    dimensions keep their source, so their kernels stay shared by every size."""

    def __init__(self, shape):
        rank = len(shape)
        fixed = {d for d in range(rank) if rank > MAX_NEST and shape[d] == 1}
        self.index = ["0" if d in fixed else f"i{d}" for d in range(rank)]
        looped = [d for d in range(rank) if d not in fixed]
        self.looped = [f"i{d}" for d in looped]
        self.prologue, self.unflatten = [], []
        self.outer, self.count, self.outer_dims, self.inner = None, None, [], []
        if len(looped) > MAX_NEST:
            flat = looped[:len(looped) - MAX_NEST + 1]
            self.outer, self.count, self.outer_dims = "o", "no", flat
            self.inner = looped[len(flat):]
            self.prologue = ["no = " + " * ".join(f"n{d}" for d in flat)]
            self.unflatten = unflatten("o", [f"n{d}" for d in flat], [f"i{d}" for d in flat])
        elif looped:
            self.outer, self.count = f"i{looped[0]}", f"n{looped[0]}"
            self.outer_dims, self.inner = looped[:1], looped[1:]


def unflatten(flat, dims, names):
    """Lines turning the row-major flat index `flat` over `dims` into indices `names`.
    Each quotient gets a name of its own: Numba refuses a parallel loop whose index is
    copied to a variable that is then reassigned."""
    lines, rest = [], flat
    for k in reversed(range(1, len(dims))):
        lines += [f"{names[k]} = {rest} % {dims[k]}", f"{flat}_{k} = {rest} // {dims[k]}"]
        rest = f"{flat}_{k}"
    return lines + [f"{names[0]} = {rest}"] if dims else lines


class KernelSource:
    """The loop nest of one group, with the wiring the driver needs.

    Reductions accumulate in their declared accumulator dtype. A reduction over every
    axis keeps its accumulator in a register and stores it once, rounded to the output
    dtype (or, with keep_accumulators, unrounded, for a caller combining partial
    results). A partial reduction accumulates in the cells of its output array, whose
    dtype (`output_dtypes`) is then the accumulator's: the caller allocates it so,
    filled with `reduce_identity`, and rounds it to the output dtype afterwards.

    With half (the cpu target, which has no float16), float16 arrays are passed as
    their uint16 bits (the argument positions in `half_args`) and float16 values are
    float32 in the kernel, rounded to float16 precision where computed. bfloat16
    arrays are always passed so (no target has a bfloat16 type)."""

    def __init__(self, group, materialize, *, keep_accumulators=False, half=False):
        self.shape, self.rank = group.shape, len(group.shape)
        self.nest = LoopNest(group.shape)
        self.half, self.keep_accumulators = half, keep_accumulators
        self.inputs = []            # external Vars, in argument order
        self.outputs = []           # (Var, axes reduced or None)
        self.output_dtypes = []     # dtype of each output array
        self.reduce_identity = {}   # output slot -> initial value of a partial reduction
        self.reads = {}             # external Var -> the index tuples it is read at
        self.index = tuple(self.nest.index)     # where every output is stored
        self.names, self.index_of = {}, {}
        # The loop body's pieces (backends may wrap them in their own iteration): reads
        # independent of the loop indices, reads at each iteration, the computation.
        self.hoisted, self.loads, self.body = [], [], []
        self.acc_init, self.acc_final = [], []
        self.accumulators = []      # (name, combine, dtype) of the scalar accumulators
        for e in group.eqns:
            if e.prim.index_map is not None:
                self._index_map(e, materialize)
            elif _is_fusible_reduction(e):
                self._reduction(e)
            else:
                self._elementwise(e, materialize)
        self.half_args = [k for k, v in enumerate(self.inputs) if self._is_half(v.aval.dtype)] \
            + [len(self.inputs) + k for k, d in enumerate(self.output_dtypes)
               if self._is_half(d)]
        self.source = self._source(False)
        # Threads split the outer loop unless two iterations of it could write the
        # same cell of a partial reduction.
        safe = self.nest.outer is not None and all(
            axes is None or len(axes) == self.rank or not set(self.nest.outer_dims) & set(axes)
            for _, axes in self.outputs)
        self.parallel_source = self._source(True) if safe else None

    # ------------------------------------------------------------------ values

    def _is_half(self, dtype):
        return dtype == _BFLOAT16 or (self.half and dtype == _FLOAT16)

    def _codec(self, dtype, which):
        return "half." + CODECS[np.dtype(dtype)][which]

    def _in_kernel(self, dtype):
        return np.dtype(np.float32) if self._is_half(dtype) else np.dtype(dtype)

    def _load(self, a):
        """Read an external value at the current iteration point."""
        idx, shape = self.nest.index, self.shape
        if a in self.index_of:
            src, sub = self.index_of[a]
        else:
            src, lead = a, self.rank - len(a.aval.shape)
            # numpy broadcasting: align right; size-1 axes read index 0
            sub = ["0" if n == 1 and shape[lead + k] != 1 else idx[lead + k]
                   for k, n in enumerate(src.aval.shape)]
        key = (src, tuple(sub))
        self.reads.setdefault(src, set()).add(tuple(sub))
        names = self.names
        if key not in names:
            if src not in self.inputs:
                self.inputs.append(src)
            arg = f"in{self.inputs.index(src)}"
            names[key] = f"x{len(names)}"
            read = f"{arg}[{', '.join(sub) if sub else '()'}]"
            if self._is_half(src.aval.dtype):
                read = f"{self._codec(src.aval.dtype, 0)}({read})"
            line = f"{names[key]} = {read}"
            # Reads that do not depend on the loop indices happen once, up front
            # (this also keeps 0-d arrays out of Numba's parallel loop bodies).
            looped = any(i in self.nest.looped for i in sub)
            (self.loads if looped else self.hoisted).append(line)
        return names[key]

    def _value(self, a):
        if isinstance(a, Literal):
            return literal(a.value, self.half)
        return self.names[a] if a in self.names else self._load(a)

    def _add_output(self, var, axes, dtype):
        self.outputs.append((var, axes))
        self.output_dtypes.append(np.dtype(dtype))
        return len(self.outputs) - 1

    def _store(self, var, t):
        slot = self._add_output(var, None, var.aval.dtype)
        idx = self.nest.index
        stored = f"{self._codec(var.aval.dtype, 1)}({t})" if self._is_half(var.aval.dtype) \
            else t
        self.body.append(f"out{slot}[{', '.join(idx) if idx else '()'}] = {stored}")

    # ------------------------------------------------------------------ equations

    def _index_map(self, e, materialize):
        out, src = e.outputs[0], e.inputs[0]
        if src in self.names:   # computed in this loop nest: same shape, same index
            self.names[out] = self.names[src]
            if out in materialize:
                self._store(out, self.names[out])
            return
        self.index_of[out] = (src, e.prim.index_map(self.nest.index, src.aval.shape,
                                                    **e.params))
        if out in materialize:
            self.names[out] = self._load(out)
            self._store(out, self.names[out])

    def _reduction(self, e):
        out, idx, rank = e.outputs[0], self.nest.index, self.rank
        identity, combine = e.prim.reduction[:2]
        axes = tuple(e.params["axes"])
        dtype = out.aval.dtype
        acc_dtype = self._in_kernel(accumulator_dtype(e.prim.reduction, dtype))
        start = np.asarray(identity(dtype), acc_dtype)
        x = self._value(e.inputs[0])
        if len(axes) == rank:   # a scalar accumulator, stored once at the end
            kept = acc_dtype if self.keep_accumulators else dtype
            slot = self._add_output(out, axes, kept)
            acc = f"acc{slot}"
            self.acc_init.append(f"{acc} = {literal(start)}")
            self.body.append(f"{acc} = " + combine.format(acc=acc, x=x))
            self.accumulators.append((acc, combine, acc_dtype))
            if self._is_half(kept):
                final = f"{self._codec(kept, 1)}({acc})"   # one rounding, from acc_dtype
            else:
                final = acc if kept == acc_dtype else f"np.{kept.name}({acc})"
            self.acc_final.append(f"out{slot}[()] = {final}")
        else:
            slot = self._add_output(out, axes, acc_dtype)
            kept = ", ".join(idx[d] for d in range(rank) if d not in axes)
            cell = f"out{slot}[{kept}]"
            self.reduce_identity[slot] = start[()]
            self.body.append(f"{cell} = " + combine.format(acc=cell, x=x))

    def _elementwise(self, e, materialize):
        out = e.outputs[0]
        args = [self._value(a) for a in e.inputs]
        params = {k: _param(v, self.half) for k, v in e.params.items()}
        t = self.names[out] = f"t{len(self.body)}"
        expr = e.prim.scalar.format(*args, **params)
        if out.aval.dtype.kind in "iu" or out.aval.dtype == _COMPLEX64:
            # Numba widens integer arithmetic; wrap around in the result's own width,
            # as numpy does. complex() and mixed operations make complex128: round a
            # complex64 result to its own width at each step, as numpy does.
            expr = f"np.{out.aval.dtype.name}({expr})"
        elif self._is_half(out.aval.dtype):
            expr = f"{self._codec(out.aval.dtype, 2)}({expr})"
        self.body.append(f"{t} = {expr}")
        if out in materialize:
            self._store(out, t)

    # ------------------------------------------------------------------ source

    def _source(self, parallel):
        # Numba's parallel reductions recognize only some forms (a NaN-propagating max
        # came back as its identity): other scalar accumulators make threads take
        # chunks of the outer loop, each with its own accumulators, combined in order
        # afterwards by the declared combine. Where Numba's reduction applies, a prange
        # over the outer loop itself vectorizes better (the chunked loop ran up to
        # twice as slow).
        nest, accumulators, acc_init = self.nest, self.accumulators, self.acc_init
        chunked = parallel and any(c not in NUMBA_REDUCTIONS for _, c, _ in accumulators)
        args = [f"in{k}" for k in range(len(self.inputs))] + \
            [f"out{k}" for k in range(len(self.outputs))] + [f"n{d}" for d in range(self.rank)]
        lines = [f"def kernel({', '.join(args)}):"] + \
            ["    " + a for a in nest.prologue + self.hoisted]
        pad = "    "
        outer, count = nest.outer, nest.count
        if chunked:
            lines.append(f"{pad}chunks = min({count}, {PARALLEL_CHUNKS})")
            lines += [f"{pad}{acc}_part = np.empty(chunks, np.{dtype.name})"
                      for acc, _, dtype in accumulators]
            lines.append(f"{pad}for chunk in numba.prange(chunks):")
            pad += "    "
            lines += [pad + a for a in acc_init]
            lines.append(f"{pad}for {outer} in range(chunk * {count} // chunks, "
                         f"(chunk + 1) * {count} // chunks):")
        else:
            lines += [pad + a for a in acc_init]
            if outer:
                loop = "numba.prange" if parallel else "range"
                lines.append(f"{pad}for {outer} in {loop}({count}):")
        inner = pad + "    " if outer else pad
        lines += [inner + line for line in nest.unflatten]
        for d in nest.inner:
            lines.append(f"{inner}for i{d} in range(n{d}):")
            inner += "    "
        lines += [inner + line for line in self.loads + self.body]
        if chunked:
            lines += [f"{pad}{acc}_part[chunk] = {acc}" for acc, _, _ in accumulators]
            lines += ["    " + a for a in acc_init] + ["    for chunk in range(chunks):"]
            lines += [f"        {acc} = " + combine.format(acc=acc, x=f"{acc}_part[chunk]")
                      for acc, combine, _ in accumulators]
        lines += ["    " + a for a in self.acc_final]
        return "\n".join(lines) + "\n"


def materialized(program, steps):
    """For each group, the values it must write to memory: those used by a later
    step or returned. Everything else stays in registers."""
    owner = {}
    for step in steps:
        if isinstance(step, Group):
            for e in step.eqns:
                for o in e.outputs:
                    owner[o] = step
    needed = {step: set() for step in steps if isinstance(step, Group)}

    def use(a, by):
        g = None if isinstance(a, Literal) else owner.get(a)
        if g is not None and g is not by:
            needed[g].add(a)

    for step in steps:
        for e in (step.eqns if isinstance(step, Group) else [step]):
            for a in e.inputs:
                use(a, step)
    for a in program.outputs:
        use(a, None)
    return needed
