"""Small helpers the transforms share: input checks, zeros, argnums handling."""
import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..array import Array
from ..core import Tracer
from ..dtypes import canonical_python_dtype, check_supported
from ..errors import ArgnumsError, GradientError, HasAuxError, ShapeError
from ..tree_util import tree_flatten
from ..primitives._rules import zeros


def as_value(x, what):
    """Arrays and tracers pass through; numpy arrays and Python scalars become Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        check_supported(x.dtype, what)
        return Array(np.array(x))
    if isinstance(x, (bool, int, float, complex)):
        return Array(np.asarray(x, canonical_python_dtype(x)))
    raise TypeError(f"{what}: expected an array or a Python scalar, got {type(x).__name__}")


def check_float_input(x, transform, what):
    x = as_value(x, f"{transform} {what}")
    if dtype_kind(x.dtype) not in "fc":
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


def check_argnums(argnums, transform, what="argnums", allow_empty=False):
    """A transform's argnums (or static_argnums, donate_argnums, nondiff_argnums) ->
    (single, nums): single when it is one int. Checked when the transform is made,
    so a mistake is reported where it was written; the positions are checked against
    each call by resolve_argnums. A bool is refused: `argnums=True` is a slip (for
    has_aux=True, say), not a request for argument 1."""
    if allow_empty and argnums is None:
        return False, ()
    if _is_position(argnums):
        return True, (int(argnums),)
    if not isinstance(argnums, (tuple, list)):
        raise ArgnumsError(
            f"{transform}: {what} must be an int or a tuple of ints (positions of "
            f"positional arguments), got {argnums!r} of type {type(argnums).__name__}")
    for n in argnums:
        if not _is_position(n):
            raise ArgnumsError(
                f"{transform}: {what} must hold ints (positions of positional "
                f"arguments), but {what}={argnums!r} holds {n!r} of type "
                f"{type(n).__name__}")
    nums = tuple(int(n) for n in argnums)
    if not nums and not allow_empty:
        raise ArgnumsError(f"{transform}: {what}=() names no argument; give the position "
                           f"of at least one argument to differentiate")
    _check_distinct(nums, argnums, transform, what)
    return False, nums


def resolve_argnums(nums, nargs, transform, what="argnums"):
    """nums (from check_argnums) as non-negative positions in a call with nargs
    positional arguments."""
    out = []
    for n in nums:
        if not -nargs <= n < nargs:
            plural = "" if nargs == 1 else "s"
            valid = f"0..{nargs - 1} or -{nargs}..-1" if nargs else "none"
            raise ArgnumsError(
                f"{transform}: {what} names argument {n}, but the function was called "
                f"with {nargs} positional argument{plural} (valid positions: {valid})")
        out.append(n % nargs)
    out = tuple(out)
    _check_distinct(out, nums, transform, what)
    return out


def _is_position(n):
    return isinstance(n, (int, np.integer)) and not isinstance(n, bool)


def _check_distinct(positions, given, transform, what):
    seen = set()
    for p in positions:
        if p in seen:
            raise ArgnumsError(f"{transform}: {what}={tuple(given)!r} names argument {p} "
                               f"more than once")
        seen.add(p)


def split_aux(out, transform):
    """(output, aux) from what a has_aux=True function returned."""
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return out[0], out[1]
    raise HasAuxError(f"{transform}: has_aux=True requires the function to return a pair "
                      f"(output, aux); got {_describe(out)}")


def _describe(x):
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)} elements"
    if isinstance(x, (Array, Tracer, np.ndarray, np.generic)):
        return f"an array of shape {tuple(x.shape)} and dtype {x.dtype}"
    return f"a value of type {type(x).__name__}"
