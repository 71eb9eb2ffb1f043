"""Work split among threads: numpy and Numba's nogil kernels release the GIL, so row
blocks of one operation run on every core at once."""
import os
from concurrent.futures import ThreadPoolExecutor

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
