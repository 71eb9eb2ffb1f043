"""Lowering a Program to cpu code.

The equations are partitioned into fusion groups: maximal runs of elementwise
primitives over one iteration shape, the broadcasts that feed them (as index
arithmetic) and the reductions that consume them. Each group becomes ONE generated
Numba loop nest; values used only inside a group live in registers, never in
arrays. Everything else (dot_general, linear algebra, sorting, data movement) runs
its primitive's own kernel. A generated Python driver calls these in order.

Kernels are keyed by their source, which holds dtypes, ranks and the broadcast
pattern but no sizes (those are arguments), so a new batch size reuses them. Each
kernel is written to a module file in the cache directory and compiled with
Numba's on-disk cache, so a second process loads machine code instead of compiling.
"""
import threading
import weakref

import numba

import numpy as np

from ... import config, events
from ...dtypes import is_low_precision
from ...cache import register
from ...program import Literal
from ...kernels.disk_cache import helpers_digest, import_generated
from ...kernels.cpu import elementwise, half
from .njit import bit_views, load_kernel
from ..fusion import (Group, KernelSource, PHYSICAL_MEMORY, check_sizes, dtype_source,
                      materialized, partition)
from . import chunked

# Program -> Executable. An Executable refers to nothing that holds its Program, so an
# entry goes when its Program does.
_executables = weakref.WeakKeyDictionary()
register(_executables.clear)
# Loop nests at least this large are split across threads. Measured on 2 cores inside
# whole jitted steps (W2's MLP, W4's LeNet), splitting nests of 2^17-2^20 elements
# made the step no faster or slower (waking the other core between kernels costs
# more than it saves there); W3's 10M-element nest gains.
PARALLEL_MIN_ELEMENTS = 1 << 22
# Groups calling exp, sin, tanh... on at least this many elements run block by block
# through numpy's SIMD ufuncs, which beat Numba's scalar libm calls from here on
# (each ufunc call costs about a microsecond, each scalar libm call 10-20 ns).
BLOCKED_MIN_ELEMENTS = 1 << 12
stats = {"kernels_compiled": 0, "kernels_loaded": 0, "kernels_failed": 0,
         "programs_lowered": 0}


def compiled(program, donated=()):
    """The program's Executable. With `donated` (input positions), one whose driver
    may write results into those inputs' buffers when it is called with them in its
    `donated` argument (jit's donate_argnums); see Executable."""
    if donated:
        table = _donating.setdefault(program, {})
        exe = table.get(donated)
        if exe is None:
            exe = table[donated] = Executable(program, donated)
        return exe
    exe = _executables.get(program)
    if exe is None:
        with events.span(f"lower a program of {len(program.eqns)} equations", "compile"):
            exe = _executables[program] = Executable(program)
    return exe


_donating = weakref.WeakKeyDictionary()     # Program -> {donated positions: Executable}
register(_donating.clear)


# Numba's workqueue threading layer (its fallback where neither TBB nor OpenMP is
# installed) terminates the process when two threads run parallel kernels at once.
# A parallel kernel already keeps every core busy: running them one at a time costs
# other threads little, and a lock per kernel of >= 2^22 elements costs nothing.
_parallel_kernel_lock = threading.Lock()


def _one_at_a_time(call):
    def locked(*args):
        with _parallel_kernel_lock:
            return call(*args)
    return locked


class _FirstKernelCall:
    """Stands in a driver's namespace for a fused kernel until Numba has it ready.

    Compiling a loop nest takes Numba a fraction of a second; loading it from the disk
    cache, milliseconds. With config.background_compile (the default) the first call
    starts that work on a thread and, until it is done, runs the group through its
    primitives' own numpy kernels: the first call of a jitted function costs about
    what an eager call does instead of waiting for the compiler. Once the kernel is
    ready it takes its place in the driver."""

    def __init__(self, kernel, namespace, name, group, kernel_source):
        self.kernel = kernel
        self.call = bit_views(kernel, kernel_source.half_args)
        if kernel.targetoptions.get("parallel"):
            self.call = _one_at_a_time(self.call)
        self.half_args = kernel_source.half_args
        self.namespace = namespace
        self.name = name
        self.group = group
        self.inputs = kernel_source.inputs
        self.outputs = kernel_source.outputs
        self.thread = None

    def __call__(self, *args):
        signature = tuple(numba.typeof(a.view(np.uint16) if k in self.half_args else a)
                          for k, a in enumerate(args))
        if signature in self.kernel.overloads:
            # Compiled already, for another program of this structure (a new shape of a
            # function, or another function): no compile, and no thread to start.
            self.namespace[self.name] = self.call
            return self.call(*args)
        if not config.background_compile:
            self._compile(signature)
            return self.call(*args)
        if self.thread is None:
            self.thread = threading.Thread(target=self._compile_in_background,
                                           args=(signature,),
                                           name=f"fnad compile {self.name}")
            # Started when the driver returns: Numba compiles under one global lock, and
            # the library kernels this run may still need must not queue behind it.
            _pending.append(self.thread)
        return self.run_unfused(*args)

    def _compile(self, signature):
        """Compile (or load) the kernel for these argument types, count which it was,
        and put the kernel in the driver."""
        stats_ = self.kernel.stats
        misses, hits = sum(stats_.cache_misses.values()), sum(stats_.cache_hits.values())
        with events.span(f"compile {self.name}", "compile"):
            self.kernel.compile(signature)
        new_misses = sum(stats_.cache_misses.values()) - misses
        stats["kernels_compiled"] += new_misses
        stats["kernels_loaded"] += sum(stats_.cache_hits.values()) - hits
        if new_misses and config.log_compiles:
            events.logger.warning("fnad: compiled fused kernel %s",
                                  self.kernel.py_func.__module__)
        self.namespace[self.name] = self.call

    def _compile_in_background(self, signature):
        # A compile that fails on the thread leaves this object in the driver, which
        # then keeps running the group through the primitives' own kernels: the same
        # numbers, never a traceback printed from a thread. (Without background
        # compiles the error is raised at the call instead.)
        try:
            self._compile(signature)
        except Exception as err:
            stats["kernels_failed"] += 1
            if config.log_compiles:
                events.logger.warning("fnad: fused kernel %s left to numpy (%s: %s)",
                                      self.name, type(err).__name__, str(err)[:2000])

    def run_unfused(self, *args):
        """The group, one primitive kernel at a time, into the kernel's output arrays."""
        env = dict(zip(self.inputs, args))
        for e in self.group.eqns:
            values = [a.value if isinstance(a, Literal) else env[a] for a in e.inputs]
            env[e.outputs[0]] = e.prim.impl(*values, **e.params)
        outs = args[len(self.inputs):len(self.inputs) + len(self.outputs)]
        results = [env[var] for var, _ in self.outputs]
        if any(np.may_share_memory(out, x) for out in outs for x in args[:len(self.inputs)]):
            # An output is the buffer of a donated input, which another result may be a
            # view of: every result is copied out before any is stored.
            results = [np.array(r) for r in results]
        for out, result in zip(outs, results):
            out[...] = result


_pending = []


def start_pending_compiles():
    """Start the kernel compiles requested during the last driver run, one after the
    other on one thread."""
    if not _pending:
        return
    # Taken one by one (list.pop is atomic): a driver in another thread may append
    # meanwhile, and a compile lost between a copy and a clear would never start.
    threads = []
    while _pending:
        try:
            threads.append(_pending.pop(0))
        except IndexError:      # another thread took the last one
            break

    def compile_all():
        for t in threads:
            t.run()
    threading.Thread(target=compile_all, name="fnad compile queue").start()


def wait_for_compiles():
    """Block until every background kernel compile has finished (used by tests)."""
    for thread in threading.enumerate():
        if thread.name.startswith("fnad compile"):
            thread.join()


# --------------------------------------------------------------------------- driver

class Executable:
    """A Program lowered to a Python driver over fused kernels and library calls.

    Inputs at the `donated` positions may lend their buffers to the results of a fused
    kernel of the same shape and dtype: the driver writes a result into an input it is
    given in its `donated` argument when nothing after that kernel reads the input and
    the kernel itself reads it only at the element it writes (a loop nest loads every
    value of an iteration before it stores any)."""

    def __init__(self, program, donated=()):
        stats["programs_lowered"] += 1
        self.namespace = {"np": np}
        steps = partition(program)
        materialize = materialized(program, steps)
        self.lenders = _lenders(program, steps, donated)
        check_sizes(program, [o for step in steps if isinstance(step, Group)
                              for e in step.eqns for o in e.outputs
                              if o in materialize[step] or e.prim.reduction is not None],
                    PHYSICAL_MEMORY)
        lines, names, kernel_sources = [], {}, []

        def name(a):
            if isinstance(a, Literal):
                key = f"c{len(self.namespace)}"
                self.namespace[key] = a.value
                return key
            return names[a]

        for i, v in enumerate(program.invars):
            names[v] = f"a{i}"
            if not v.aval.shape:    # numpy hands out scalars for 0-d results
                lines.append(f"a{i} = np.asarray(a{i})")
        self.timed_steps = [("", list(lines))]   # (profiler event name, driver lines)
        for step in steps:
            if isinstance(step, Group):
                step_lines = self._kernel_call(step, materialize[step], name, names,
                                               kernel_sources)
            else:
                step_lines = self._library_call(step, name, names)
            lines += step_lines
            self.timed_steps.append((_step_name(step, len(kernel_sources) - 1), step_lines))
        outs = ", ".join(name(a) for a in program.outputs)
        args = ", ".join([f"a{i}" for i in range(len(program.invars))]
                         + (["donated=()"] if donated else []))
        self.driver_head = f"def run({args}):"
        self.driver_tail = f"    return [{outs}]"
        self.driver_source = _driver(self.driver_head, lines, self.driver_tail)
        self.profiled_run = None
        exec(compile(self.driver_source, "<fnad driver>", "exec"), self.namespace)
        self.run = self.namespace["run"]
        self.kernel_sources = kernel_sources
        self.source = "\n\n".join(["# driver", self.driver_source] + [
            f"# fused kernel k{i}\n{s}" for i, s in enumerate(kernel_sources)])
        if config.log_compiles:
            events.logger.warning(
                "fnad: lowered a program of %d equations to %d fused kernels and %d "
                "library calls", len(program.eqns), len(kernel_sources),
                sum(1 for s in steps if not isinstance(s, Group)))

    def _kernel_call(self, group, materialize, name, names, kernel_sources):
        kernel = KernelSource(group, materialize, half=True)
        k = f"k{len(kernel_sources)}"
        size = int(np.prod(group.shape, dtype=np.int64))
        large = size >= PARALLEL_MIN_ELEMENTS
        blocked = size >= BLOCKED_MIN_ELEMENTS and chunked.eligible(group)
        lenders = [] if blocked else [
            (i, v, aliases) for i, v, aliases in self.lenders.get(group, ())
            if kernel.reads.get(v, {kernel.index}) == {kernel.index}]
        if blocked:
            # Math-library-heavy: numpy's SIMD ufuncs over cache-sized blocks.
            source = chunked.chunked_source(group, kernel, materialize, self.namespace, k,
                                            parallel=large)
            exec(compile(source, f"<fnad blocked group {k}>", "exec"), self.namespace)
        else:
            # Large loop nests run on all cores; the parallel variant is compiled only
            # when a program needs it.
            source = kernel.parallel_source if large and kernel.parallel_source \
                else kernel.source
            self.namespace[k] = _FirstKernelCall(load_kernel(source), self.namespace, k,
                                                 group, kernel)
        kernel_sources.append(source)
        lines, outs, rounding = [], [], []
        for slot, (var, axes) in enumerate(kernel.outputs):
            v = names[var] = f"v{len(names)}"
            shape, dtype = var.aval.shape, kernel.output_dtypes[slot]
            lender = next((lent for lent in lenders if lent[1].aval == var.aval), None)
            if slot in kernel.reduce_identity:
                self.namespace[f"fill_{v}"] = kernel.reduce_identity[slot]
                lines.append(f"{v} = np.full({shape!r}, fill_{v}, {dtype_source(dtype)})")
            elif lender is not None and dtype == var.aval.dtype:
                lenders.remove(lender)
                i, _, aliases = lender
                # A view of the input taken earlier must not see the result.
                free = "".join(f" and not np.may_share_memory(a{i}, {names[a]})"
                               for a in aliases)
                lines.append(f"{v} = a{i} if {i} in donated{free} else "
                             f"np.empty({shape!r}, {dtype_source(dtype)})")
            else:
                lines.append(f"{v} = np.empty({shape!r}, {dtype_source(dtype)})")
            if dtype != var.aval.dtype:     # partial sums kept wider: round them once
                rounding.append(f"{v} = {v}.astype({dtype_source(var.aval.dtype)})")
            outs.append(v)
        ins = [name(a) for a in kernel.inputs]
        sizes = [str(n) for n in group.shape]
        lines.append(f"{k}({', '.join(ins + outs + sizes)})")
        return lines + rounding

    def _library_call(self, e, name, names):
        fn = f"f{len(self.namespace)}"

        def call(*args, _impl=e.prim.impl, _params=e.params):
            return _impl(*args, **_params)
        self.namespace[fn] = call
        outs = [f"v{len(names) + i}" for i in range(len(e.outputs))]
        for v, o in zip(e.outputs, outs):
            names[v] = o
        ins = ", ".join(name(a) for a in e.inputs)
        if e.prim.multiple_results and not outs:    # (an effect: a host callback)
            lines = [f"{fn}({ins})"]
        elif e.prim.multiple_results:
            lines = [f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {fn}({ins})"]
        else:
            lines = [f"{outs[0]} = {fn}({ins})"]
        return lines + [f"{o} = np.asarray({o})" for o, v in zip(outs, e.outputs)
                        if not v.aval.shape]

    def __call__(self, *args, donated=()):
        if events.recording is not None:
            return self._call_profiled(args, donated)
        out = self.run(*args, donated=donated) if donated else self.run(*args)
        if _pending:
            start_pending_compiles()
        return out

    def _call_profiled(self, args, donated):
        """A call while fnad.profiler records: a second driver, made on first use,
        that records each kernel and library call as an event."""
        if self.profiled_run is None:
            self.namespace["_now"], self.namespace["_record"] = events.now, events.record
            body = []
            for label, step_lines in self.timed_steps:
                if not label:
                    body += step_lines
                    continue
                key = f"_label{len(body)}"
                self.namespace[key] = label
                body += ["_t = _now()"] + step_lines + [f"_record({key}, 'kernel', _t)"]
            source = _driver(self.driver_head, body, self.driver_tail)
            exec(compile(source, "<fnad profiled driver>", "exec"), self.namespace)
            self.profiled_run = self.namespace["run"]
            self.namespace["run"] = self.run
        start = events.now()
        out = self.profiled_run(*args, donated=donated) if donated \
            else self.profiled_run(*args)
        events.record("driver", "driver", start)
        if _pending:
            start_pending_compiles()
        return out


def _driver(head, lines, tail):
    return "\n".join([head] + ["    " + line for line in lines] + [tail]) + "\n"


def _step_name(step, kernel_index):
    """The profiler's name for a driver step: a fused kernel by the primitives it
    fuses and its loop shape, a library call by its primitive and operand shapes."""
    if isinstance(step, Group):
        prims = "+".join(dict.fromkeys(e.prim.name for e in step.eqns))
        return f"k{kernel_index} fused[{prims}] {list(step.shape)}"
    shapes = ", ".join(str(list(a.aval.shape)) for a in step.inputs)
    return f"{step.prim.name}({shapes})"


def _lenders(program, steps, donated):
    """{group: [(input position, Var, aliases)]}: the donated inputs whose buffer a
    group may write a result into. Library kernels may return views of their operands,
    so an input's possible aliases are the outputs of library steps reading it or one
    of them; the group must be the last step reading the input or any of these, and
    the driver checks at run time that none of them shares the input's memory.
    Whether the group reads the input only element by element is for its KernelSource
    to say. 16-bit float inputs are left alone (the cpu kernels see them as their
    bits)."""
    if not donated:
        return {}
    returned = {a for a in program.outputs if not isinstance(a, Literal)}
    lenders = {}
    for i in donated:
        v = program.invars[i]
        if is_low_precision(v.aval.dtype) or not v.aval.shape or v in returned:
            continue
        aliases, last = [], None
        for k, step in enumerate(steps):
            eqns = step.eqns if isinstance(step, Group) else [step]
            if any(a is v or a in aliases for e in eqns for a in e.inputs):
                last = k
                if not isinstance(step, Group):
                    aliases += step.outputs
        if last is not None and isinstance(steps[last], Group):
            lenders.setdefault(steps[last], []).append((i, v, aliases))
    return lenders
