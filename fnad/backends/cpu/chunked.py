"""Blocked execution of a fusion group through numpy's SIMD ufuncs.

Numba's loops call scalar libm for exp, sin, tanh and friends (the PyPI llvmlite has
no vector math library), which runs several times slower than numpy's own SIMD
ufuncs. For large groups heavy in such functions, the group instead runs as a
sequence of primitive kernels over blocks of rows small enough to stay in cache:
no intermediate of the full size is ever materialized, the math is vectorized,
and the blocks are shared among threads (numpy releases the GIL).
"""
import re

import numpy as np

from ...program import Literal
from ...kernels.cpu import elementwise
from ...kernels.threads import run_blocks
from ..fusion import Group, KernelSource, dtype_source
from .njit import bit_views, load_kernel

BLOCK_ELEMENTS = 1 << 15        # per block: 128 KiB of float32 per live temporary


# A function called by a scalar expression: np.exp(...), math.erf(...), kernels.<helper>(...)
_CALL = re.compile(r"\b(np|math|kernels)\.(\w+)\(")
# numpy functions Numba compiles to an instruction or two, not a math-library call: a
# fused loop beat the blocked ufuncs on 1e7 float32 elements (abs 10 vs 14-36 ms,
# floor 14-23 vs 16-31 ms). (sqrt too, 13-23 vs 40-44 ms, but tests rely on it to
# select the blocked path.)
INSTRUCTIONS = frozenset({"abs", "floor", "ceil", "isfinite"})


def calls_math_library(e):
    """Whether the primitive's scalar expression calls a math-library function (exp,
    sin, ...): the case where numpy's ufuncs win. Of fnad's own helpers (`kernels.`),
    only those elementwise.py declares as calling one count; the others are a few
    comparisons or arithmetic operations, best left in the fused loop."""
    for module, name in _CALL.findall(e.prim.scalar or ""):
        if module == "kernels":
            if name in elementwise.MATH_LIBRARY:
                return True
        elif not (module == "np" and name in INSTRUCTIONS):
            return True
    return False


def eligible(group):
    return (len(group.shape) >= 1 and group.shape[0] > 1
            and all(e.prim.index_map is None for e in group.eqns)
            and any(calls_math_library(e) for e in group.eqns if e.prim.scalar))


def _schedule(eqns):
    """Order the group as alternating stages: a run of arithmetic (and reductions),
    then the math-library calls whose inputs are ready. A value's level counts the
    math calls on its longest path, so each arithmetic run is as long as possible
    and becomes one loop."""
    level = {}

    def lv(a):
        return 0 if isinstance(a, Literal) else level.get(a, 0)
    stages = {}
    for e in eqns:
        base = max([lv(a) for a in e.inputs], default=0)
        math = calls_math_library(e)
        for o in e.outputs:
            level[o] = base + 1 if math else base
        stages.setdefault((base, math), []).append(e)
    return [(key[1], stages[key]) for key in sorted(stages)]


def chunked_source(group, kernel, materialize, namespace, prefix, parallel=True):
    """Python source of a function with the kernel's signature that runs the group
    block by block; helpers it needs are added to namespace under `prefix`.

    Inside a block, each math-library call is one numpy call; each stage of
    arithmetic and reductions between them is one small generated Numba loop, so
    the arithmetic makes one pass over the block instead of one per operator."""
    shape = group.shape
    rank = len(shape)
    slot_of = {var: k for k, (var, _) in enumerate(kernel.outputs)}
    names = {}
    body, partial, finals = [], [], []
    rows = ["r1 - r0"] + [f"n{d}" for d in range(1, rank)]

    def helper(obj):
        key = f"{prefix}_{len(namespace)}"
        namespace[key] = obj
        return key

    for k, var in enumerate(kernel.inputs):
        lead = rank - len(var.aval.shape)
        full = lead == 0 and var.aval.shape[0] == shape[0]
        names[var] = f"in{k}[r0:r1]" if full else f"in{k}"

    def value(a):
        return helper(a.value) if isinstance(a, Literal) else names[a]

    stages = _recompute_arithmetic(_schedule(group.eqns), group.eqns)
    for position, (math, stage) in enumerate(stages):
        if math:
            for e in stage:
                t = names[e.outputs[0]] = f"t{len(body)}"
                body.append(f"{t} = {helper(_bound(e.prim.impl, e.params))}"
                            f"({', '.join(value(a) for a in e.inputs)})")
                if e.outputs[0] in materialize:
                    body.append(f"out{slot_of[e.outputs[0]]}[r0:r1] = {t}")
            continue
        run = Group(shape)
        run.eqns = stage
        read_later = {a for later_math, later in stages[position + 1:] if later_math
                      for e in later for a in e.inputs}
        keep = {o for e in stage for o in e.outputs
                if o in read_later or o in materialize or e.prim.reduction is not None}
        # Block partials of reductions stay in their accumulator dtype until combined.
        sub = KernelSource(run, keep, keep_accumulators=True, half=True)
        outs = []
        for k, (var, axes) in enumerate(sub.outputs):
            t = names[var] = f"t{len(body)}_{k}"
            outs.append(t)
            if axes is None:
                dims = rows
            else:
                dims = [r for d, r in enumerate(rows) if d not in axes]
            shp = "(" + "".join(d + ", " for d in dims) + ")"
            dtype = dtype_source(sub.output_dtypes[k])
            if k in sub.reduce_identity:
                body.append(f"{t} = np.full({shp}, {helper(sub.reduce_identity[k])}, {dtype})")
            else:
                body.append(f"{t} = np.empty({shp}, {dtype})")
        body.append(f"{helper(bit_views(load_kernel(sub.source), sub.half_args))}"
                    f"({', '.join([value(v) for v in sub.inputs] + outs + rows)})")
        for var, axes in sub.outputs:
            if var not in slot_of:
                continue
            slot = slot_of[var]
            if axes is not None and 0 in axes:     # block partials, combined afterwards
                acc = f"acc{slot}"
                reduce_impl = _producer(stage, var).prim.impl
                partial.append(acc)
                body.append(f"{acc} = {names[var]} if {acc} is None else "
                            f"{helper(_combiner(reduce_impl))}({acc}, {names[var]})")
                finals.append((slot, reduce_impl))
            elif var in materialize or axes is not None:
                body.append(f"out{slot}[r0:r1] = {names[var]}")
    args = [f"in{k}" for k in range(len(kernel.inputs))] + \
        [f"out{k}" for k in range(len(kernel.outputs))] + [f"n{d}" for d in range(rank)]
    inner = " * ".join(f"n{d}" for d in range(1, rank)) or "1"
    lines = [f"def {prefix}({', '.join(args)}):",
             f"    step = max(1, {BLOCK_ELEMENTS} // max(1, {inner}))",
             "    def work(start, stop):"]
    lines += [f"        {acc} = None" for acc in partial]
    lines += ["        for r0 in range(start, stop, step):",
              "            r1 = min(r0 + step, stop)"]
    lines += ["            " + b for b in body]
    lines += [f"        return ({', '.join(partial)}{',' if partial else ''})",
              f"    results = {helper(run_blocks)}(work, n0, {parallel})"]
    for k, (slot, impl) in enumerate(finals):
        comb = helper(_combiner(impl))
        lines.append(f"    total = results[0][{k}]")
        lines.append("    for r in results[1:]:")
        lines.append(f"        total = {comb}(total, r[{k}])")
        lines.append(f"    out{slot}[...] = total")
    return "\n".join(lines) + "\n"


def _producer(eqns, var):
    return next(e for e in eqns if var in e.outputs)


def _recompute_arithmetic(stages, eqns):
    """Let each arithmetic stage recompute the arithmetic values it reads from earlier
    arithmetic stages, rather than reading them back from memory: only the inputs
    of math calls and the group's results are then written to block arrays."""
    position = {e: i for i, e in enumerate(eqns)}
    producer = {o: e for e in eqns for o in e.outputs}
    out = []
    for math, stage in stages:
        if not math:
            own = set(stage)
            todo = list(stage)
            while todo:
                e = todo.pop()
                for a in e.inputs:
                    p = None if isinstance(a, Literal) else producer.get(a)
                    if p is not None and p not in own and not calls_math_library(p) \
                            and p.prim.reduction is None:
                        own.add(p)
                        todo.append(p)
            stage = sorted(own, key=position.get)
        out.append((math, stage))
    return out


def _bound(impl, params):
    if not params:
        return impl
    return lambda *args: impl(*args, **params)


def _combiner(reduce_impl):
    """Combine two partial reductions with the reduction itself."""
    return lambda a, b: reduce_impl(np.stack([a, b]), axes=(0,))
