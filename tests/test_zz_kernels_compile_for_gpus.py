"""Every kernel the cuda tests launched in the simulator compiles for a real GPU.

Runs after the other test files (pytest orders files by name) and reads the launches
tests/conftest.py recorded; compiling needs numba.cuda with NVVM but no GPU, and is
skipped where NVVM is missing or when no cuda test ran in this session."""
import json
import os
import subprocess
import sys

import pytest

import conftest

pytestmark = pytest.mark.cuda


def test_recorded_kernel_launches_compile_for_a_gpu(tmp_path):
    if not conftest.LAUNCHES:
        pytest.skip("no cuda test ran in this session (or it ran on a real GPU)")
    records = tmp_path / "launches.json"
    records.write_text(json.dumps(sorted(conftest.LAUNCHES, key=repr)))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    run = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                       "compile_for_gpu.py"), str(records)],
                         env=env, capture_output=True, text=True, timeout=900)
    if run.returncode == 2:
        pytest.skip(run.stdout.strip() or run.stderr.strip()[-500:])
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
