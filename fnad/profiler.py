"""fnad.profiler: where the time of jitted code goes, as a Chrome trace.

    with fnad.profiler.trace("/tmp/fnad-trace"):
        for batch in batches:
            params, loss = step(params, batch)
    fnad.profiler.summary()          # the kernels that took longest, in total

While a trace is active fnad records, as trace events: each call of a jitted function
(`jit`), each fused kernel and library call of its compiled program (`kernel`), the
staging of a function (`staging`), the lowering of a program and the compiles of its
kernels, background ones included (`compile`), and every host callback (`callback`).
On exit they are written to ``<log_dir>/fnad-<time>-<pid>.trace.json.gz``, in the
trace-event format that https://ui.perfetto.dev and chrome://tracing open.

Nothing is recorded when no trace is active, and the compiled code is then the same
as without the profiler: each reporting site tests one module attribute.
"""
import collections
import contextlib
import functools
import gzip
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Iterator

from . import events

__all__ = ["trace", "start_trace", "stop_trace", "summary", "TraceAnnotation",
           "StepTraceAnnotation", "annotate_function", "last_trace"]

_lock = threading.Lock()
_state: dict[str, Any] = {"log_dir": None, "path": None, "events": None}


def start_trace(log_dir: str | os.PathLike[str], create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False) -> None:
    """Start recording; stop_trace() writes the trace into `log_dir` (made if needed).
    JAX's Perfetto options are refused: open the written .json.gz in ui.perfetto.dev."""
    if create_perfetto_link or create_perfetto_trace:
        raise ValueError("fnad.profiler: create_perfetto_link/create_perfetto_trace are "
                         "JAX's; fnad writes a Chrome trace-event .json.gz, which "
                         "ui.perfetto.dev and chrome://tracing open as it is")
    with _lock:
        if events.recording is not None:
            raise RuntimeError("fnad.profiler: a trace is already being recorded; "
                               "stop_trace() it first")
        os.makedirs(os.fspath(log_dir), exist_ok=True)
        _state["log_dir"] = os.fspath(log_dir)
        events.thread_names.clear()
        events.recording = []


def stop_trace() -> Any:
    """Stop recording and write the trace file; returns its path."""
    with _lock:
        recorded = events.recording
        if recorded is None:
            raise RuntimeError("fnad.profiler: no trace is being recorded")
        events.recording = None
    _state["events"] = list(recorded)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = os.path.join(_state["log_dir"], f"fnad-{stamp}-{os.getpid()}.trace.json.gz")
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(trace_events(_state["events"]), f)
    _state["path"] = path
    return path


@contextlib.contextmanager
def trace(log_dir: str | os.PathLike[str], create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False) -> Iterator[None]:
    """with trace(log_dir): record the block (see the module's docstring)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace)
    try:
        yield
    finally:
        stop_trace()


def last_trace() -> Any:
    """The path of the trace file the last trace wrote, or None."""
    return _state["path"]


def trace_events(recorded):
    """The Chrome trace-event JSON object of recorded events: "complete" events (ph X)
    in microseconds, one thread per Python thread that did the work."""
    pid = os.getpid()
    threads = {}
    out = []
    for name, category, start, duration, thread, args in recorded:
        tid = threads.setdefault(thread, len(threads) + 1)
        event = {"name": name, "cat": category, "ph": "X", "ts": start / 1e3,
                 "dur": duration / 1e3, "pid": pid, "tid": tid}
        if args:
            event["args"] = {k: str(v) for k, v in args.items()}
        out.append(event)
    names = dict(events.thread_names)
    names.update((t.ident, t.name) for t in threading.enumerate() if t.ident not in names)
    for thread, tid in threads.items():
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"name": names.get(thread, f"thread {tid}")}})
    out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                "args": {"name": f"fnad ({os.path.basename(sys.argv[0] or 'python')})"}})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def summary(top: int = 15, category: str = "kernel", file: Any = None) -> Any:
    """Print the `top` kernels (or events of `category`) of the last trace (or of the
    one being recorded) by total time: calls, total and mean ms, share of all. Returns
    the rows as (name, calls, total seconds)."""
    recorded = events.recording if events.recording is not None else _state["events"]
    if recorded is None:
        raise RuntimeError("fnad.profiler.summary: nothing recorded yet; run code "
                           "inside `with fnad.profiler.trace(log_dir):` first")
    totals = collections.defaultdict(lambda: [0, 0])
    for name, cat, _, duration, _, _ in list(recorded):
        if category is None or cat == category:
            totals[name][0] += 1
            totals[name][1] += duration
    rows = sorted(((n, c, t / 1e9) for n, (c, t) in totals.items()), key=lambda r: -r[2])
    everything = sum(r[2] for r in rows) or 1.0
    file = file or sys.stdout
    width = max([len(r[0]) for r in rows[:top]] + [10])
    print(f"{'name':<{width}}  {'calls':>6}  {'total ms':>9}  {'mean ms':>8}  {'share':>6}",
          file=file)
    for name, calls, total in rows[:top]:
        print(f"{name:<{width}}  {calls:>6}  {total * 1e3:>9.3f}  {total * 1e3 / calls:>8.4f}"
              f"  {total / everything:>6.1%}", file=file)
    return rows


class TraceAnnotation(events.span):
    """with TraceAnnotation("name"): the block as one event of the trace (JAX's name)."""

    def __init__(self, name, **kwargs):
        super().__init__(name, "annotation", kwargs or None)


class StepTraceAnnotation(TraceAnnotation):
    """with StepTraceAnnotation("train", step_num=i): one training step of the trace."""

    def __init__(self, name, **kwargs):
        super().__init__(name, **kwargs)
        self.category = "step"


def annotate_function(func: Callable[..., Any], name: str | None = None, **kwargs: Any
                     ) -> Callable[..., Any]:
    """func, recorded as one event per call while a trace is active."""
    label = name or getattr(func, "__qualname__", getattr(func, "__name__", "function"))

    @functools.wraps(func)
    def annotated(*args, **call_kwargs):
        with TraceAnnotation(label, **kwargs):
            return func(*args, **call_kwargs)
    return annotated
