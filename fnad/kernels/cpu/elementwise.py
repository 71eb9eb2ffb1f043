"""Elementwise kernels numpy lacks or needs several passes for.

Compiled lazily, once per dtype, and cached on disk by Numba, so importing fnad
costs no compile and a second process loads the machine code."""
import math

import numba
import numpy as np
from numba import types
from numba.extending import overload


@numba.njit(cache=True)
def logistic_scalar(x):
    # Branch so that exp never overflows: for x < 0 use e^x / (1 + e^x).
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


# The helpers here that call the math library (exp, ...): on many elements numpy's SIMD
# ufuncs beat a fused loop calling them (kernels/cpu/chunked.py). The others are a few
# comparisons or arithmetic operations, cheaper inline than a pass through memory.
MATH_LIBRARY = frozenset({"logistic_scalar"})


# ---- numpy's rules on one element, where Numba's operators or functions differ.
# The fusing compiler inlines these through the primitives' scalar expressions; the
# cuda backend compiles the same Python functions as device functions
# (kernels/cuda/scalar_functions.py), and its simulator runs them as Python.

@numba.njit(cache=True)
def maximum_scalar(a, b):
    # NaN wins, as in numpy (a != a only for NaN); Python's max(1.0, nan) is 1.0. Equal
    # operands give b, as numpy's maximum(0.0, -0.0) is -0.0.
    if a != a or a > b:
        return a
    return b


@numba.njit(cache=True)
def minimum_scalar(a, b):
    if a != a or a < b:
        return a
    return b


@numba.njit(cache=True)
def floor_divide_scalar(x, y):
    # Numba's // is numpy's floor_divide on integers (x // 0 is 0) and floats (inf,
    # nan, -0.0 included), but for iinfo(int64).min // -1 it gives 0 where numpy wraps
    # around to the minimum: the one negative integer equal to its negation.
    if y == -1 and x < 0 and x == -x:
        return x
    return x // y


def integer_fmod(x, y):
    """C's remainder on integers (the sign of x; x fmod 0 is 0, as in numpy), in
    integer arithmetic. Numba's np.fmod gets negative integers wrong."""
    if y == 0:
        return x - x
    r = x % y                   # Python's remainder: the sign of y
    if r != 0 and (r < 0) != (x < 0):
        r = r - y
    return r


def fmod_scalar(x, y):
    """numpy's fmod of one element: exact for integers of any width and floats."""
    if isinstance(x, (int, np.integer)):
        return integer_fmod(x, y)
    return np.fmod(x, y)


@overload(fmod_scalar)
def _fmod_scalar(x, y):
    if isinstance(x, types.Integer) and isinstance(y, types.Integer):
        return integer_fmod
    return lambda x, y: np.fmod(x, y)


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
