"""Test session setup. The cuda tests (marker `cuda`) run on numba's CUDA simulator
unless FNAD_TEST_CUDA=gpu asks for a real GPU; the simulator must be chosen before
numba.cuda is first imported, hence here.

The simulator runs kernels as Python, so it accepts code that numba.cuda cannot
compile for a GPU. Every kernel launch is therefore recorded (function and argument
types), and tests/test_zz_kernels_compile_for_gpus.py, which runs last, compiles each
for a real GPU architecture (this needs only NVVM, no GPU)."""
import os

import numpy as np
import pytest

SIMULATED = os.environ.get("FNAD_TEST_CUDA") != "gpu"
if SIMULATED:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

# (module, qualified name, module file, argument types) of each simulated kernel launch
LAUNCHES = set()


def _argument_type(a):
    """A JSON-able description of a kernel argument's numba type."""
    from numba import typeof
    a = getattr(a, "_ary", a)      # the simulator's device arrays wrap numpy arrays
    if isinstance(a, np.ndarray):
        return ("array", a.dtype.str, a.ndim, "C" if a.flags.c_contiguous else "A")
    if isinstance(a, tuple):
        return ("tuple", tuple(_argument_type(x) for x in a))
    return ("scalar", str(typeof(a)))


def pytest_configure(config):
    if not SIMULATED or os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        return
    import sys
    try:
        from numba.cuda.simulator import kernel as simulated
    except ImportError:     # no numba.cuda at all: the cuda tests skip
        return
    launch = simulated.FakeCUDAKernel.__call__

    def recording_launch(self, *args):
        if not self._device:
            fn = self.fn
            module = getattr(fn, "__module__", None)
            LAUNCHES.add((module, fn.__qualname__,
                          getattr(sys.modules.get(module), "__file__", None),
                          tuple(_argument_type(a) for a in args)))
        return launch(self, *args)
    simulated.FakeCUDAKernel.__call__ = recording_launch


def pytest_terminal_summary(terminalreporter):
    """The differential suite's count (tests/test_differential.py), when it ran."""
    import sys
    suite = sys.modules.get("test_differential")
    if suite is not None and suite.CHECKED:
        terminalreporter.write_line(suite.summary_line())


@pytest.fixture(autouse=True)
def jax_x64_restored():
    """Tests that compare with JAX may switch its x64 mode on; the next test (often in
    another file) must find JAX as it was, or its dtypes silently change."""
    import sys
    jax = sys.modules.get("jax")
    before = bool(jax.config.jax_enable_x64) if jax is not None else None
    yield
    jax = sys.modules.get("jax")
    if jax is not None and bool(jax.config.jax_enable_x64) != bool(before):
        jax.config.update("jax_enable_x64", bool(before))


@pytest.fixture
def compiled_loops(monkeypatch):
    """Loops compile synchronously (no background thread); yields this test's table of
    them (fnad/backends/cpu/loops.py), so a test can check that each one compiled."""
    import weakref

    import fnad
    from fnad.backends.cpu import loops
    monkeypatch.setattr(fnad.config, "background_compile", False)
    table = weakref.WeakKeyDictionary()
    monkeypatch.setattr(loops, "_loops", table)
    return table
