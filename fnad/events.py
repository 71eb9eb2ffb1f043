"""What fnad tells the outside about its own work: the `fnad` logger, and the events
the profiler records while one is active.

A leaf, so the compiler, the kernels and the callbacks at every layer can report
without knowing who listens. With no profiler active, `recording` is None and every
reporting site costs one attribute test; fnad.profiler turns it on and off and writes
what was recorded.
"""
import logging
import threading
import time
from typing import Any

logger = logging.getLogger("fnad")

# The events of the active profile, or None when no profiler is active. Each event is a
# Chrome trace-event "complete" event: (name, category, start ns, duration ns, thread
# id, args dict or None). A list's append is atomic, so threads record without a lock.
recording: list[Any] | None = None

# Thread id -> the thread's name, taken when the thread records its first event: a
# background compile thread has ended (and left threading.enumerate()) by the time
# the profile is written.
thread_names = {}

now = time.perf_counter_ns


def record(name, category, start, end=None, args=None):
    """Add one event that began at `start` (ns, from `now()`) and ends at `end` (now by
    default) to the active profile; nothing when none is active."""
    events = recording
    if events is not None:
        end = now() if end is None else end
        thread = threading.get_ident()
        if thread not in thread_names:
            thread_names[thread] = threading.current_thread().name
        events.append((name, category, start, end - start, thread, args))


class span:
    """with span(name, category): records the block as one event when profiling."""
    __slots__ = ("name", "category", "args", "start")

    def __init__(self, name, category, args=None):
        self.name, self.category, self.args = name, category, args

    def __enter__(self):
        self.start = now() if recording is not None else None
        return self

    def __exit__(self, *exc):
        if self.start is not None:
            record(self.name, self.category, self.start, args=self.args)
