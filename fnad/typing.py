"""Types for annotating code that uses fnad, as jax.typing does for JAX.

- `Array`: fnad.Array, an immutable array (traced values pass isinstance(x, Array) too).
- `ArrayLike`: what fnad's functions accept as an array: an Array, a numpy array or
  scalar, or a Python bool, int, float or complex.
- `DTypeLike`: what a `dtype=` argument accepts: a numpy dtype, a scalar type or a name.
- `Shape`: a tuple of ints.
- `PyTree`: a pytree (nested tuples, lists, dicts, namedtuples, None and registered
  nodes with leaves). It is `Any`: registered node types make pytrees open-ended.

>>> from fnad.typing import ArrayLike
>>> def double(x: ArrayLike) -> fnad.Array:
...     return fnp.asarray(x) * 2
>>> double(3.0)
Array(6., dtype=float32)
"""
from typing import Union

import numpy as np

from .array import Array
from .tree_util import PyTree

ArrayLike = Union[Array, np.ndarray, np.generic, bool, int, float, complex]
DTypeLike = Union[str, type, np.dtype]
Shape = tuple[int, ...]

__all__ = ["Array", "ArrayLike", "DTypeLike", "Shape", "PyTree"]
