"""Elementwise kernels numpy lacks or needs several passes for.

Compiled lazily, once per dtype, and cached on disk by Numba, so importing fnad
costs no compile and a second process loads the machine code."""
import math

import numba
import numpy as np


@numba.njit(cache=True)
def logistic_scalar(x):
    # Branch so that exp never overflows: for x < 0 use e^x / (1 + e^x).
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@numba.vectorize(cache=True)
def _logistic(x):
    return logistic_scalar(x)


@numba.vectorize(cache=True)
def _erf(x):
    return math.erf(x)


def _widened(x):
    # Numba has no float16 arithmetic: compute in float32 and round back.
    return x.astype(np.float32) if x.dtype == np.float16 else x


def logistic(x):
    return _logistic(_widened(x)).astype(x.dtype, copy=False)


def erf(x):
    return _erf(_widened(x)).astype(x.dtype, copy=False)
