"""Reductions over axes on the GPU: one block per output cell, its threads striding
over the reduced elements, then a tree reduction in shared memory.

Generated from a primitive's `reduction` declaration (identity, combine expression),
so every fusible reduction of the cpu compiler has its GPU kernel from the same text,
accumulating (per thread and in the shared tree) in the declared accumulator dtype and
rounded to the output dtype once, at the end."""
import functools

import numpy as np

from ...abstract import ShapedArray
from ..fusion import accumulator_dtype, literal
from . import fused, runtime


def reduction_source(combine, identity, rank, axes, threads, acc_dtype, out_dtype):
    kept = [d for d in range(rank) if d not in axes]
    idx = [f"i{d}" for d in range(rank)]
    dims = [f"n{d}" for d in range(rank)]
    cells = " * ".join(dims[d] for d in kept) or "1"
    count = " * ".join(dims[d] for d in axes) or "1"
    out_index = ", ".join(idx[d] for d in kept) or "()"
    acc_dtype, out_dtype = np.dtype(acc_dtype), np.dtype(out_dtype)
    result = "buf[0]" if out_dtype == acc_dtype else f"np.{out_dtype.name}(buf[0])"
    lines = [f"def kernel(in0, out0, {', '.join(dims)}):" if rank else
             "def kernel(in0, out0):",
             f"    buf = cuda.shared.array({threads}, np.{acc_dtype.name})",
             "    tid = cuda.threadIdx.x",
             "    cell = cuda.blockIdx.x",
             f"    cells = {cells}",
             f"    count = {count}",
             "    while cell < cells:"]
    lines += fused.decompose("cell", [dims[d] for d in kept], [idx[d] for d in kept], " " * 8)
    lines += [f"        acc = {identity}",
              "        j = tid",
              "        while j < count:"]
    lines += fused.decompose("j", [dims[d] for d in axes], [idx[d] for d in axes], " " * 12)
    lines += [f"            x = in0[{', '.join(idx) or '()'}]",
              "            acc = " + combine.format(acc="acc", x="x"),
              f"            j += {threads}",
              "        buf[tid] = acc",
              "        cuda.syncthreads()",
              f"        step = {threads // 2}",
              "        while step > 0:",
              "            if tid < step:",
              "                buf[tid] = " + combine.format(acc="buf[tid]", x="buf[tid + step]"),
              "            cuda.syncthreads()",
              "            step //= 2",
              "        if tid == 0:",
              f"            out0[{out_index}] = {result}",
              "        cuda.syncthreads()",
              "        cell += cuda.gridDim.x"]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=1024)
def _kernel(reduction, dtype, rank, axes):
    identity_of, combine = reduction[:2]
    acc_dtype = accumulator_dtype(reduction, dtype)
    identity = literal(np.asarray(identity_of(dtype), acc_dtype))
    return fused.load(reduction_source(combine, identity, rank, axes, runtime.THREADS,
                                       acc_dtype, dtype))


def reduce(prim, x, axes, out_dtype, reduction=None):
    """x reduced over `axes` by `reduction` ((identity(dtype), combine format string over
    {acc} and {x}[, accumulator(dtype)]); default: prim's own declaration) into a new
    device array."""
    reduction = reduction or prim.reduction
    axes = tuple(sorted(axes))
    shape = tuple(x.shape)
    out_shape = tuple(n for d, n in enumerate(shape) if d not in axes)
    out = runtime.empty(out_shape, out_dtype)
    cells = int(np.prod(out_shape, dtype=np.int64))
    if cells == 0:
        return out
    if x.size == 0:     # the cpu kernel's answer (or its error) for an empty operand
        return runtime.to_device(np.asarray(prim.impl(np.empty(shape, x.dtype), axes=axes),
                                            out_dtype))
    kernel = _kernel(reduction, np.dtype(out_dtype), len(shape), axes)
    blocks = min(cells, runtime.MAX_BLOCKS)
    kernel[blocks, runtime.THREADS](x, out, *shape)
    return out


def reduction_impl(prim):
    """The eager cuda implementation of a reduction primitive with an `axes` param."""
    def impl(x, **params):
        out_aval = prim.abstract_eval(_aval(x), **params)
        return reduce(prim, x, params["axes"], out_aval.dtype)
    return impl


def _aval(x):
    return ShapedArray(x.shape, x.dtype)
