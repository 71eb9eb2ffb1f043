"""numpy's scalar type names (float32, int32, bool_, ...) as fnad values.

Each name is a class that is both a dtype and a converter: numpy reads its `dtype`
attribute wherever it takes a dtype (`dtype=fnp.float32`, `np.dtype(fnp.float32)`,
`issubdtype(x.dtype, fnp.floating)`, `x.dtype == fnp.float32`), and calling it gives an
fnad Array of that dtype, so `fnp.float32(x)` works on tracers under jit, grad and vmap
as well as on Python numbers and arrays. The abstract classes of numpy's type tree
(floating, integer, ...) are numpy's own: they are only ever dtype arguments."""
import builtins
from typing import Any, Literal

import numpy as np

from .. import dtypes
from ..array import Array
from ..core import Tracer
from ._core import asarray
from ..typing import ArrayLike, DTypeLike

__all__ = ["bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "csingle",
           "cdouble", "complex_", "double", "single", "float_", "int_",
           "uint", "generic", "number", "inexact", "floating", "integer", "signedinteger",
           "unsignedinteger", "complexfloating", "character", "flexible", "object_",
           "ComplexWarning", "euler_gamma", "can_cast", "isdtype", "isscalar", "iterable"]


class _ScalarMeta(type):
    """The metaclass: calling the class converts, isinstance accepts numpy scalars of
    the type, and the class compares equal to its dtype (as numpy's type objects do
    from the dtype's side)."""

    def __call__(cls, x=0):
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, x):
        return isinstance(x, cls.dtype.type)

    def __eq__(cls, other):
        if isinstance(other, _ScalarMeta):
            return cls is other
        if other is None:       # np.dtype(None) is float64: float64 == None must be False
            return False
        try:
            return np.dtype(other) == cls.dtype
        except TypeError:
            return NotImplemented

    def __hash__(cls):
        return hash(cls.dtype)

    def __repr__(cls):
        return f"fnad.numpy.{cls.__name__}"


def _scalar_type(name, dtype):
    return _ScalarMeta(name, (), {"dtype": dtypes.check_supported(dtype),
                                  "__module__": __name__,
                                  "__doc__": f"The {np.dtype(dtype).name} dtype; calling it converts a "
                                             f"value to an fnad Array of that dtype."})


bool_ = _scalar_type("bool_", np.bool_)
int8, int16, int32, int64 = (_scalar_type(n, n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (_scalar_type(n, n)
                                 for n in ("uint8", "uint16", "uint32", "uint64"))
float16, float32, float64 = (_scalar_type(n, n) for n in ("float16", "float32", "float64"))
bfloat16 = _scalar_type("bfloat16", dtypes.bfloat16)     # ml_dtypes' bfloat16, as in JAX
complex64, complex128 = (_scalar_type(n, n) for n in ("complex64", "complex128"))
csingle, cdouble, complex_ = complex64, complex128, complex128

# numpy's C-type aliases, at the width numpy gives them (fnad keeps float64 and int64
# without x64, so float_(x) is a float64, not JAX's canonicalized float32)
bool = bool_  # noqa: A001  (numpy 2's name)
double, single, float_ = float64, float32, float64
int_, uint = int64, uint64

generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
complexfloating, character, flexible, object_ = (np.complexfloating, np.character,
                                                 np.flexible, np.object_)
ComplexWarning = np.exceptions.ComplexWarning
euler_gamma = np.euler_gamma


def _as_dtype(x):
    """A dtype from a dtype-like or from a value's dtype (can_cast takes either)."""
    if isinstance(x, (Array, Tracer, np.ndarray, np.generic)):
        return x.dtype
    return np.dtype(x)


def can_cast(from_: ArrayLike | DTypeLike, to: DTypeLike,
             casting: Literal["no", "equiv", "safe", "same_kind", "unsafe"] = "safe"
             ) -> builtins.bool:
    """numpy's casting rule between dtypes (values are judged by their dtype, as
    numpy 2 does)."""
    return bool(np.can_cast(_as_dtype(from_), np.dtype(to), casting))


def isdtype(dtype: DTypeLike, kind: DTypeLike | tuple[DTypeLike, ...]) -> builtins.bool:
    """The array API's dtype-kind test ('bool', 'signed integer', 'real floating',
    'numeric', ... or dtypes, or a tuple of them)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    kinds = tuple(k if isinstance(k, str) else np.dtype(k) for k in kinds)
    return bool(np.isdtype(np.dtype(dtype), kinds))


def isscalar(element: Any) -> builtins.bool:
    """True for numbers, strings and 0-d arrays (fnad's, traced ones and numpy's), as
    jax.numpy.isscalar."""
    if isinstance(element, (Array, Tracer, np.ndarray)):
        return element.ndim == 0
    return np.isscalar(element)


iterable = np.iterable
