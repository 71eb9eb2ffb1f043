"""fnad's dtype rules: numpy's promotion, Python scalars weak, a fixed supported set."""
import numpy as np

from .errors import DTypeError

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

SUPPORTED = frozenset({
    bool_, np.dtype(np.int8), np.dtype(np.int16), int32, int64,
    np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64),
    np.dtype(np.float16), float32, float64,
})

# New arrays built from Python scalars (no dtype to inherit) take these, as in JAX.
DEFAULT_FOR_PYTHON = {bool: bool_, int: int32, float: float32}


def check_supported(dtype, what="array"):
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED:
        raise DTypeError(
            f"fnad does not support dtype {dtype} (for {what}); supported dtypes are "
            + ", ".join(sorted(str(d) for d in SUPPORTED)))
    return dtype


def is_float(dtype):
    return dtype.kind == "f"


def canonical_python_dtype(value):
    """The dtype a Python scalar becomes when it is the only source of a dtype."""
    try:
        return DEFAULT_FOR_PYTHON[type(value)]
    except KeyError:
        for base, dt in DEFAULT_FOR_PYTHON.items():
            if isinstance(value, base):
                return dt
        raise DTypeError(f"cannot make an fnad array from a {type(value).__name__}") from None


_weak_cache = {}


def weak_result_dtype(dtype, scalar):
    """numpy's (NEP 50) result of combining an array of `dtype` with a Python scalar:
    the scalar adopts the array's dtype unless its kind is higher (float with int)."""
    key = (dtype, type(scalar))
    out = _weak_cache.get(key)
    if out is None:
        out = _weak_cache[key] = np.result_type(dtype, type(scalar)(0))
    return out


def result_dtype(*dtypes):
    return np.result_type(*dtypes)
