"""Numba cpu kernels for the primitives numpy cannot do in one call."""
