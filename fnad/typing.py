"""Types for annotating code that uses fnad, as jax.typing does for JAX.

- `Array`: fnad.Array, an immutable array (traced values pass isinstance(x, Array) too).
- `ArrayLike`: what fnad's functions accept as an array: an Array, a numpy array or
  scalar, or a Python bool, int, float or complex.
- `DTypeLike`: what a `dtype=` argument accepts: a numpy dtype, a scalar type or a name.
- `Shape`: a tuple of ints.
- `PyTree`: a pytree (nested tuples, lists, dicts, namedtuples, None and registered
  nodes with leaves). It is `Any`: registered node types make pytrees open-ended.
- `InitFn`, `ApplyFn`: the two halves of a layer of fnad.nn (stax's pair), that is
  init_fn(key, input_shape) -> (output_shape, params) and
  apply_fn(params, inputs, ...) -> outputs. fnad.nn's layers are `fnad.nn.layers.Layer`,
  a tuple[InitFn, ApplyFn], so unpacking `nn.serial(...)` types both halves.
- `Initializer`: what fnad.nn.initializers' factories return, a function
  (key, shape, dtype=None) -> Array.

>>> from fnad.typing import ArrayLike
>>> def double(x: ArrayLike) -> fnad.Array:
...     return fnp.asarray(x) * 2
>>> double(3.0)
Array(6., dtype=float32)
"""
from typing import Any, Callable, Union

import numpy as np

from .array import Array
from .tree_util import PyTree

ArrayLike = Union[Array, np.ndarray, np.generic, bool, int, float, complex]
DTypeLike = Union[str, type, np.dtype]
Shape = tuple[int, ...]
InitFn = Callable[[Array, Any], tuple[Any, PyTree]]
ApplyFn = Callable[..., Any]
Initializer = Callable[..., Array]

__all__ = ["Array", "ArrayLike", "DTypeLike", "Shape", "PyTree", "InitFn", "ApplyFn",
           "Initializer"]
