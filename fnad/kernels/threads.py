"""Work split among threads: numpy and Numba's nogil kernels release the GIL, so row
blocks of one operation run on every core at once."""
import atexit
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import events

_pool = None


def thread_count():
    return os.cpu_count() or 1


def run_blocks(work, rows, parallel=True):
    """work(r0, r1) over [0, rows), split evenly among threads; a list of results."""
    global _pool
    n = min(thread_count(), rows) if parallel else 1
    if n <= 1:
        return [work(0, rows)]
    if _pool is None:
        _pool = ThreadPoolExecutor(thread_count(), thread_name_prefix="fnad")
    bounds = [rows * k // n for k in range(n + 1)]
    futures = [_pool.submit(work, a, b) for a, b in zip(bounds, bounds[1:])]
    return [f.result() for f in futures]


# --------------------------------------------------------------------------- exit

def compiles_running():
    """The background compile threads still at work (lowering.py and loops.py name
    theirs "fnad compile ...")."""
    return [t for t in threading.enumerate()
            if t.name.startswith("fnad compile") and t.is_alive()]


def announce_exit_wait():
    """Say, once, that the interpreter waits for background compiles before exiting:
    otherwise a finished script sits silent for seconds."""
    running = compiles_running()
    if running:
        events.logger.warning(
            "fnad: waiting for background kernel compiles (%d thread%s) to finish before "
            "exiting; they fill the kernel cache for the next run", len(running),
            "" if len(running) == 1 else "s")


# Python joins non-daemon threads before it runs atexit handlers, so the notice must
# come from threading's own exit hook (the one concurrent.futures uses), which runs
# before that join; atexit is the fallback where it does not exist.
_register = getattr(threading, "_register_atexit", None) or atexit.register
_register(announce_exit_wait)
