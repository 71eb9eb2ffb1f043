"""Test session setup. The cuda tests (marker `cuda`) run on numba's CUDA simulator
unless FNAD_TEST_CUDA=gpu asks for a real GPU; the simulator must be chosen before
numba.cuda is first imported, hence here."""
import os

if os.environ.get("FNAD_TEST_CUDA") != "gpu":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
