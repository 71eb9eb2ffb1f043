"""Compile recorded kernel launches for a real GPU (run without the simulator).

    python tests/compile_for_gpu.py launches.json

Each record is (module, qualified name, module file, argument types) as
tests/conftest.py writes them. Prints one line per kernel that fails and a summary;
exits 1 if any failed, 2 if numba.cuda cannot compile here (no NVVM)."""
import importlib
import importlib.util
import json
import sys

import numba
import numpy as np
from numba import cuda, types


def numba_type(t):
    kind = t[0]
    if kind == "array":
        return types.Array(numba.from_dtype(np.dtype(t[1])), t[2], t[3])
    if kind == "tuple":
        return types.BaseTuple.from_types([numba_type(x) for x in t[1]])
    return types.boolean if t[1] == "bool" else getattr(types, t[1])


def function(module, qualname, path):
    mod = sys.modules.get(module)
    if mod is None:
        try:
            mod = importlib.import_module(module)
        except ImportError:     # a generated kernel module in the cache directory
            spec = importlib.util.spec_from_file_location(module, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules[module] = mod
    fn = getattr(mod, qualname.split(".")[-1])
    return getattr(fn, "py_func", fn)


class _NoDevice:
    """Device functions ask the current device for its compute capability while they
    compile; with no GPU (and no driver) here, answer for the target instead."""

    def __init__(self, cc):
        self.compute_capability = cc


def main(path, cc=(9, 0)):
    import numba.cuda.dispatcher
    numba.cuda.dispatcher.get_current_device = lambda: _NoDevice(cc)
    try:
        cuda.compile_ptx(lambda a: None, (types.float32[:],), cc=cc)
    except Exception as err:    # no NVVM: nothing can be checked here
        print(f"cannot compile for a GPU here: {type(err).__name__}: {err}")
        return 2
    failed = 0
    records = json.load(open(path))
    for module, qualname, file, arg_types in records:
        signature = tuple(numba_type(t) for t in arg_types)
        try:
            cuda.compile_ptx(function(module, qualname, file), signature, cc=cc)
        except Exception as err:
            failed += 1
            lines = [line for line in str(err).splitlines() if line.strip()]
            print(f"FAILED {module}.{qualname}{signature}: " + " | ".join(lines[:6]))
    print(f"{len(records) - failed} of {len(records)} kernel launches compile for "
          f"compute capability {cc[0]}.{cc[1]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
