"""Every example runs with --quick and exits 0; every notebook executes without a cell
error. Each example asserts its own success criterion (accuracy, recovered parameters,
loss drop) and exits non-zero when it misses it, so exit code 0 means it worked.

The notebooks run in a kernel on this interpreter (sys.executable), with this process's
environment (FNAD_CACHE_DIR included), in a temporary working directory. The notebook
tests are skipped when nbformat, nbclient or ipykernel is not installed.
"""
import glob
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
KERNEL_NAME = "fnad-test-python"


def test_examples_and_notebooks_are_there():
    names = {os.path.basename(p) for p in EXAMPLES + NOTEBOOKS}
    expected = {"regression.py", "mlp_digits.py", "per_example_gradients.py", "rnn_scan.py",
                "stax_digits.py", "gaussian_process.py",
                "01_autodiff_basics.ipynb", "02_composing_transforms.ipynb",
                "03_training.ipynb", "how_fnad_works.ipynb", "inside_a_program.ipynb"}
    assert expected <= names, f"missing: {sorted(expected - names)}"


# What some examples print, read back and checked here as well as by the script:
# name -> (pattern with one number, predicate on it)
PRINTED = {
    "stax_digits.py": (r"final test accuracy ([0-9.]+)", lambda acc: acc >= 0.8),  # chance 0.1
    "gaussian_process.py": (r"posterior mean vs numpy ([0-9.e+-]+)", lambda gap: gap < 1e-8),
}


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_runs_quick(path):
    result = subprocess.run([sys.executable, path, "--quick"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (
        f"{os.path.relpath(path, ROOT)} --quick exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}")
    if os.path.basename(path) in PRINTED:
        pattern, ok = PRINTED[os.path.basename(path)]
        found = re.search(pattern, result.stdout)
        assert found and ok(float(found.group(1))), result.stdout


@pytest.fixture(scope="module")
def kernel_spec_dir(tmp_path_factory):
    """A kernelspec that starts ipykernel on this very interpreter, whatever kernels
    (a `python3` pointing elsewhere, say) the machine has installed."""
    pytest.importorskip("ipykernel")
    spec_dir = tmp_path_factory.mktemp("kernels")
    (spec_dir / KERNEL_NAME).mkdir()
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "fnad tests", "language": "python"}
    (spec_dir / KERNEL_NAME / "kernel.json").write_text(json.dumps(spec))
    return str(spec_dir)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_executes(path, kernel_spec_dir, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    nb = nbformat.read(path, as_version=4)
    km = AsyncKernelManager(kernel_name=KERNEL_NAME,
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[kernel_spec_dir]))
    client = nbclient.NotebookClient(nb, km=km, kernel_name=KERNEL_NAME, timeout=300,
                                     resources={"metadata": {"path": str(tmp_path)}})
    # A client given a kernel manager leaves the kernel running unless told otherwise.
    # A failing cell raises CellExecutionError, whose message holds the traceback.
    client.execute(cleanup_kc=True)
    errors = [o for cell in nb.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{os.path.basename(path)}: {errors[0].get('ename')}: " \
                       f"{errors[0].get('evalue')}"
