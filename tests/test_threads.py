"""Transforms from many threads at once.

The current interpreter is per thread: a thread that is tracing (grad, vmap, jit,
make_jaxpr) must never see another thread's operations, and another thread's eager
ops must never become its tracers. Every result here is compared with the one the
same computation gives alone, in the main thread. Worker threads are daemons joined
with a deadline, so a deadlock fails the test instead of hanging it."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import Array
from fnad.core import Tracer, current_trace, EVAL
from fnad.errors import EscapedTracerError
from fnad.backends.cpu import lowering

TIMEOUT = 120.0         # seconds: a deadline for joins and events, never reached when fine
THREADS = 8
ITERATIONS = 500        # per thread

X = np.linspace(-1.5, 1.25, 7)                  # float64 throughout
XS = np.linspace(-1.0, 2.0, 4 * 7).reshape(4, 7)
C = np.linspace(0.5, 2.0, 7)


def loss(a):
    return fnp.sum(fnp.sin(a) * a ** 2)


def loss_grad(a):       # by hand: d/da sum(sin(a) a^2) = cos(a) a^2 + 2 a sin(a)
    return np.cos(a) * a ** 2 + 2 * a * np.sin(a)


def eager(a):
    return fnp.tanh(a) * 2 + fnp.sin(a) * a


def per_row(r):
    return fnp.dot(r, r) + fnp.sum(fnp.cos(r))


def affine_tanh(a, b):
    return fnp.tanh(a) * b + 1.0


def run_in_thread(fn):
    """fn() in a daemon thread; (result, exception)."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as err:     # reported by the caller
            box["error"] = err
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), "the thread did not finish: deadlock?"
    return box.get("result"), box.get("error")


# --------------------------------------------------------------------------- stress

def _workload(shared):
    """name -> callable; each returns an Array, a tuple of Arrays or a program's text."""
    x, xs, c = fnp.asarray(X), fnp.asarray(XS), fnp.asarray(C)
    return {
        "eager": lambda: eager(x),
        "grad": lambda: fnad.grad(loss)(x),
        "vmap": lambda: fnad.vmap(per_row)(xs),
        "vmap_grad": lambda: fnad.vmap(fnad.grad(loss))(xs),
        # one jitted function called by every thread, first traced by whichever is first
        "jit_cached": lambda: shared["affine"](x, c),
        "jit_new": lambda: fnad.jit(lambda a: fnp.exp(-a * a) * c)(x),
        "grad_of_jit": lambda: fnad.grad(lambda a: fnp.sum(shared["affine"](a, c) ** 2))(x),
        "jit_of_grad": lambda: shared["jit_grad"](x),
        "value_and_grad": lambda: fnad.value_and_grad(loss)(x),
        "make_jaxpr": lambda: str(fnad.make_jaxpr(loss)(x)),
    }


def _shared():
    return {"affine": fnad.jit(affine_tanh), "jit_grad": fnad.jit(fnad.grad(loss))}


def _leaves(result):
    return list(result) if isinstance(result, tuple) else [result]


def _compare(got, want):
    """None when got is want's value, else what is wrong with it."""
    if isinstance(want, str):
        return None if got == want else f"program text differs:\n{got}"
    got, want = _leaves(got), _leaves(want)
    if len(got) != len(want):
        return f"{len(got)} results, expected {len(want)}"
    for g, w in zip(got, want):
        if isinstance(g, Tracer):
            return f"a tracer: {g!r}"
        if type(g) is not Array:
            return f"a {type(g).__name__}, not an Array"
        # jit's first call runs numpy's kernels, later ones Numba's: a few ulps apart
        if g.dtype != w.dtype or not np.allclose(np.asarray(g), np.asarray(w),
                                                 rtol=1e-9, atol=1e-12):
            return f"wrong value {np.asarray(g)!r}, expected {np.asarray(w)!r}"
    return None


@pytest.mark.slow_sweep
def test_threads_get_what_they_get_alone():
    # 8 threads x 500 iterations, each running all ten workloads in a random order.
    reference = {name: fn() for name, fn in _workload(_shared()).items()}
    np.testing.assert_allclose(np.asarray(reference["grad"]), loss_grad(X), rtol=1e-12)
    work = _workload(_shared())     # fresh jitted functions: their first trace races too
    tally = {"calls": 0, "wrong": [], "tracers": 0}
    lock = threading.Lock()
    start = threading.Barrier(THREADS, timeout=TIMEOUT)

    def worker(seed):
        order = list(work)
        rng = np.random.default_rng(seed)
        start.wait()
        for _ in range(ITERATIONS):
            rng.shuffle(order)
            for name in order:
                try:
                    got = work[name]()
                    problem = _compare(got, reference[name])
                except Exception as err:
                    got, problem = None, f"raised {type(err).__name__}: {err}"
                with lock:
                    tally["calls"] += 1
                    if problem is not None:
                        tally["wrong"].append(f"{name}: {problem}")
                        tally["tracers"] += any(isinstance(g, Tracer) for g in _leaves(got))

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)     # switch threads often, so traces do interleave
    try:
        threads = [threading.Thread(target=worker, args=(k,), daemon=True)
                   for k in range(THREADS)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + TIMEOUT
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = sum(t.is_alive() for t in threads)
    finally:
        sys.setswitchinterval(previous)
    assert alive == 0, f"{alive} threads still running after {TIMEOUT} s: deadlock?"
    wrong = tally["wrong"]
    assert not wrong, (f"{len(wrong)} wrong of {tally['calls']} ({tally['tracers']} "
                       f"tracers); first: " + "\n".join(wrong[:3]))
    assert tally["calls"] == THREADS * ITERATIONS * len(work)
    # and the main thread is still outside any transform
    assert current_trace() is EVAL
    out = fnp.sin(fnp.zeros(3))
    assert type(out) is Array
    np.testing.assert_array_equal(np.asarray(out), np.zeros(3, np.float32))


# --------------------------------------------------------------------------- interleavings

def _stage_in_thread(stage, inside, release):
    """Start a thread that stages `held` (a function that stops, mid-trace, until
    `release`) with `stage`; returns the thread and its result box."""
    box = {}

    def held(a):
        b = fnp.sin(a) * 3
        inside.set()
        assert release.wait(TIMEOUT)
        return fnp.cos(b) + a

    def target():
        try:
            box["result"] = stage(held)
        except BaseException as err:
            box["error"] = err
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box, held


STAGERS = {
    "make_jaxpr": lambda f: str(fnad.make_jaxpr(f)(fnp.asarray(X))),
    "jit": lambda f: fnad.jit(f)(fnp.asarray(X)),
    "grad": lambda f: fnad.grad(lambda a: fnp.sum(f(a)))(fnp.asarray(X)),
}


@pytest.mark.parametrize("stager", sorted(STAGERS))
def test_ops_while_another_thread_is_mid_transform(stager):
    """While a thread is stopped inside a transform, the main thread's grad and eager
    ops give their own results, and the stopped thread's result is untouched."""
    stage = STAGERS[stager]
    inside, release = threading.Event(), threading.Event()
    t, box, held = _stage_in_thread(stage, inside, release)
    try:
        assert inside.wait(TIMEOUT), "the thread never reached its trace"
        x = fnp.asarray(X)
        g = fnad.grad(loss)(x)
        y = fnp.tanh(x) * 2
        program = fnad.make_jaxpr(loss)(x)
    finally:
        release.set()
    t.join(TIMEOUT)
    assert not t.is_alive()
    assert type(g) is Array and type(y) is Array
    np.testing.assert_allclose(np.asarray(g), loss_grad(X), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(y), np.tanh(X) * 2, rtol=1e-12)
    assert str(program) == str(fnad.make_jaxpr(loss)(x))
    # the stopped thread's result is what it is alone
    assert "error" not in box, box.get("error")
    alone = stage(held)     # `release` is set: no waiting now
    if isinstance(alone, str):
        assert box["result"] == alone
    else:
        assert type(box["result"]) is Array
        np.testing.assert_allclose(np.asarray(box["result"]), np.asarray(alone),
                                   rtol=1e-12)


def test_thread_started_inside_a_trace_starts_outside_any_transform():
    x = fnp.asarray(X)
    seen = []

    def f(a):
        seen.append(run_in_thread(lambda: (current_trace() is EVAL, fnp.tanh(x) * 2)))
        return a * 2
    out = fnad.jit(f)(x)
    (at_eval, y), error = seen[0]
    assert error is None, error
    assert at_eval
    assert type(y) is Array
    np.testing.assert_allclose(np.asarray(y), np.tanh(X) * 2, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(out), X * 2)


def test_a_tracer_handed_to_another_thread_is_an_escaped_tracer():
    x = fnp.asarray(X)
    seen = []

    def f(a):
        seen.append(run_in_thread(lambda: fnp.sin(a)))     # a: this thread's tracer
        return a
    fnad.grad(lambda a: fnp.sum(f(a)))(x)
    result, error = seen[0]
    assert isinstance(error, EscapedTracerError), (result, error)


def test_an_error_inside_a_transform_leaves_the_thread_outside_any_transform():
    def fails(a):
        raise KeyError("inside")

    def in_thread():
        with pytest.raises(KeyError):
            fnad.grad(fails)(fnp.asarray(X))
        return current_trace() is EVAL, fnp.sin(fnp.zeros(3))
    (at_eval, out), error = run_in_thread(in_thread)
    assert error is None, error
    assert at_eval and type(out) is Array


# --------------------------------------------------------------------------- compiles

class _AppendsWhileDrained(list):
    """A compile queue into which 'another thread' appends one request at the moment
    the queue is being drained (read whole, or popped)."""

    def __init__(self, items, late):
        super().__init__(items)
        self.late = late

    def _arrive(self):
        if self.late is not None:
            super().append(self.late)
            self.late = None

    def __iter__(self):
        items = list(super().__iter__())
        self._arrive()
        return iter(items)

    def pop(self, *index):
        item = super().pop(*index)
        self._arrive()
        return item


class _Request:
    def __init__(self):
        self.ran = threading.Event()

    def run(self):
        self.ran.set()


def test_a_compile_requested_while_the_queue_is_drained_still_runs(monkeypatch):
    first, late = _Request(), _Request()
    queue = _AppendsWhileDrained([first], late)
    monkeypatch.setattr(lowering, "_pending", queue)
    lowering.start_pending_compiles()
    lowering.start_pending_compiles()   # a later driver run drains what is left
    lowering.wait_for_compiles()
    assert first.ran.wait(TIMEOUT)
    assert late.ran.wait(TIMEOUT), "a compile request was dropped"


PARALLEL_KERNELS_FROM_THREADS = """
import threading
import numpy as np
import fnad, fnad.numpy as fnp
from fnad.backends.cpu import lowering
fnad.config.update("background_compile", False)
n = lowering.PARALLEL_MIN_ELEMENTS          # large enough for a parallel loop nest
a = fnp.asarray(np.linspace(-1.0, 1.0, n, dtype=np.float32))
b = fnp.asarray(np.linspace(2.0, 3.0, n, dtype=np.float32))
f = fnad.jit(lambda a, b: a * b + a)        # arithmetic only: one Numba loop nest
want = np.asarray(a) * np.asarray(b) + np.asarray(a)
np.testing.assert_array_equal(np.asarray(f(a, b)), want)
wrong = []

def run():
    for _ in range(8):
        if not np.array_equal(np.asarray(f(a, b)), want):
            wrong.append(1)
threads = [threading.Thread(target=run) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
import numba
print("layer", numba.threading_layer(), "wrong", len(wrong))
"""


def test_parallel_kernels_from_several_threads_with_numbas_workqueue_layer():
    """Numba's fallback threading layer aborts the process when two threads run
    parallel kernels at once; fnad runs its parallel kernels one at a time."""
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    done = subprocess.run([sys.executable, "-c", PARALLEL_KERNELS_FROM_THREADS], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.split()[-4:] == ["layer", "workqueue", "wrong", "0"], done.stdout
