"""Small helpers the transforms share: input checks, zeros, argnums handling."""
import numpy as np

from ..array import Array
from ..core import Tracer
from ..dtypes import canonical_python_dtype, check_supported
from ..errors import GradientError, ShapeError
from ..tree_util import tree_flatten
from ..primitives._rules import zeros, instantiate  # noqa: F401 (instantiate: used by jvp)


def as_value(x, what):
    """Arrays and tracers pass through; numpy arrays and Python scalars become Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        check_supported(x.dtype, what)
        return Array(np.array(x))
    if isinstance(x, (bool, int, float)):
        return Array(np.asarray(x, canonical_python_dtype(x)))
    raise TypeError(f"{what}: expected an array or a Python scalar, got {type(x).__name__}")


def check_float_input(x, transform, what):
    x = as_value(x, f"{transform} {what}")
    if x.dtype.kind != "f":
        raise GradientError(
            f"{transform} requires floating-point inputs, but {what} has dtype {x.dtype} "
            f"(shape {tuple(x.shape)}); differentiate with respect to a float array, or "
            f"make the integer input non-differentiated (argnums) or a closed-over value")
    return x


def check_tangent(primal, tangent, index):
    tangent = as_value(tangent, f"jvp tangent {index}")
    if tuple(tangent.shape) != tuple(primal.shape) or tangent.dtype != primal.dtype:
        raise ShapeError(
            f"jvp: tangent {index} has shape {tuple(tangent.shape)} and dtype "
            f"{tangent.dtype}, but its primal has shape {tuple(primal.shape)} and dtype "
            f"{primal.dtype}; they must match")
    return tangent


def zeros_like(x):
    return zeros(x.shape, x.dtype)


def flatten_fun_output(out):
    leaves, treedef = tree_flatten(out)
    return [as_value(l, "function output") for l in leaves], treedef


def normalize_argnums(argnums, nargs, transform):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for n in nums:
        if not isinstance(n, int) or not -nargs <= n < nargs:
            raise ValueError(f"{transform}: argnums {argnums!r} out of range for a "
                             f"function called with {nargs} positional arguments")
    return single, tuple(n % nargs for n in nums)
