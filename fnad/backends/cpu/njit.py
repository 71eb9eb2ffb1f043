"""Generated kernels as modules: the header every kernel's source starts with, and
loading one (from the on-disk cache when it is there) as a numba.njit function."""
import numba  # noqa: F401  (kernel sources name it)
import numpy as np

from ...kernels.cpu import elementwise, half, special
from ...kernels.disk_cache import helpers_digest, import_generated


_HEADER = """import math
import numba
import numpy as np
from fnad.kernels.cpu import elementwise as kernels
from fnad.kernels.cpu import half
from fnad.kernels.cpu import special
"""
# The modules whose functions generated kernels call (and Numba compiles into them).
HELPERS = (elementwise, half, special)


def kernel_header():
    """The text before every generated kernel: its imports, and the digest of the
    helpers it calls, so that a kernel of another helper version is another module."""
    return f"{_HEADER}# helpers {helpers_digest(HELPERS)}\n\n\n"


def load_kernel(source):
    """The njit function for a kernel's source, from the on-disk cache when present."""
    # error_model="numpy": a division by zero gives inf/nan as numpy does, instead of a
    # check per division that keeps LLVM from vectorizing the loop.
    options = 'cache=True, nogil=True, error_model="numpy"' + \
        (", parallel=True" if "prange" in source else "")
    return import_generated(kernel_header() + f"@numba.njit({options})\n" + source,
                            "fnad_kernel").kernel


def bit_views(kernel, positions):
    """kernel, called with its float16 arguments at `positions` seen as their uint16
    bits (KernelSource's half_args): Numba's cpu target cannot take float16 arrays."""
    if not positions:
        return kernel

    def call(*args):
        args = list(args)
        for p in positions:
            args[p] = args[p].view(np.uint16)
        return kernel(*args)
    return call
