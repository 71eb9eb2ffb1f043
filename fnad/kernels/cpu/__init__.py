"""Numba cpu kernels for the primitives numpy cannot do in one call."""

import os as _os

# Numba's parallel loops run on OpenMP here, whose threads spin while they wait; on a
# shared machine that spinning steals the cores the other threads need. Sleep instead
# (the user's own setting wins).
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
