"""fnad's dtype rule, stated once (docs/dtypes.md has the tables).

The rule is JAX's type-promotion lattice, with one deliberate difference: fnad never
silently narrows, so float64 (and int64) inputs keep their width whether or not x64
is on. Python scalars are weakly typed: they take the dtype of the arrays they meet
unless their kind is higher (`x32 * 2.0` is float32, `int_array * 2.5` the default
float). Values made only from Python scalars, and the creation functions, get the
default dtypes: float32/int32, or float64/int64 with `config.enable_x64`.
"""
from typing import Any

import ml_dtypes
import numpy as np

from . import config
from .errors import DTypeError

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t)
                                 for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# bfloat16 (float32's exponent, 8 significant bits) is ml_dtypes' numpy dtype, as in JAX.
# Its numpy kind is "V", not "f": ask is_float/is_inexact/kind here, not dtype.kind.
bfloat16 = np.dtype(ml_dtypes.bfloat16)

SUPPORTED = frozenset({bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                       float16, bfloat16, float32, float64, complex64, complex128})
# The floats narrower than float32: stored as 16 bits, computed in float32.
LOW_PRECISION = (float16, bfloat16)

# The weak types: the lattice's places for Python ints, floats and complex numbers (and
# arrays made from them), which resolve to the default dtypes once no array fixes a width.
WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "int*", "float*", "complex*"

# JAX's lattice: each type's immediate supertypes. The least upper bound of two types
# is their promotion. The two 16-bit floats meet in float32 (neither holds the other:
# bfloat16 has the range, float16 the precision). A float meets a complex in the
# complex of its width (float64 with complex64 is complex128: nothing narrows).
_LATTICE = {
    bool_: [WEAK_INT],
    WEAK_INT: [uint8, int8],
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64],
    uint64: [WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [WEAK_FLOAT],
    WEAK_FLOAT: [float16, bfloat16, WEAK_COMPLEX], float16: [float32], bfloat16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    WEAK_COMPLEX: [complex64], complex64: [complex128], complex128: [],
}


def _upper_bounds():
    ups = {}

    def visit(t):
        if t not in ups:
            ups[t] = {t}.union(*(visit(s) for s in _LATTICE[t]))
        return ups[t]
    for t in _LATTICE:
        visit(t)
    return ups


def _join_table():
    ups = _upper_bounds()
    table = {}
    for a in _LATTICE:
        for b in _LATTICE:
            common = ups[a] & ups[b]
            least = [t for t in common if ups[t] == common]
            assert len(least) == 1, (a, b)      # a lattice: every pair has one join
            table[a, b] = least[0]
    return table


_JOIN = _join_table()

# Two arrays: a weak float only comes out of uint64 with a signed integer, where JAX's
# promote_types says float64 (in both modes), the one float that holds both ranges best.
_PROMOTE = {(a, b): float64 if j == WEAK_FLOAT else j
            for (a, b), j in _JOIN.items() if a in SUPPORTED and b in SUPPORTED}


def moment_dtype(dtype):
    """The float means and variances accumulate in: float32 for float16 and bfloat16
    (rounded once at the end, as numpy and JAX do: a float16 sum overflows past 65504,
    so the mean of 1e5 ones would be inf; a bfloat16 running sum stops growing at 256
    ones), the dtype itself otherwise."""
    return float32 if dtype in LOW_PRECISION else dtype


def is_low_precision(dtype):
    """float16 or bfloat16: a float stored in 16 bits that kernels compute in float32."""
    return dtype == float16 or dtype == bfloat16


def kind_of(dtype):
    """numpy's kind character, with bfloat16 a float ("f"; numpy says "V")."""
    k = dtype.kind if isinstance(dtype, np.dtype) else np.dtype(dtype).kind
    # (on every grad input and tape entry: one attribute read for the common dtypes)
    return "f" if k == "V" and np.dtype(dtype) == bfloat16 else k


def is_float(dtype):
    """A real floating-point dtype, bfloat16 included."""
    return kind_of(dtype) == "f"


def finfo(dtype):
    """numpy's finfo, which does not know bfloat16 (ml_dtypes' finfo does)."""
    try:
        is_bfloat16 = np.dtype(dtype) == bfloat16
    except TypeError:       # a Python float or other value numpy's finfo reads
        is_bfloat16 = False
    return ml_dtypes.finfo(bfloat16) if is_bfloat16 else np.finfo(dtype)


def default_float():
    return float64 if config.enable_x64 else float32


def default_complex():
    return complex128 if config.enable_x64 else complex64


def is_inexact(dtype):
    """Floats (bfloat16 included) and complex numbers: the dtypes that carry
    derivatives."""
    return dtype.kind in "fc" or dtype == bfloat16


def real_dtype(dtype):
    """The float of a complex dtype's parts (complex64 -> float32); other dtypes as
    they are."""
    return _REAL.get(dtype, dtype)


def complex_dtype(dtype):
    """The complex dtype whose parts are `dtype` (float32 -> complex64); float16 and
    non-float dtypes go to complex64 (float64 and 64-bit integers to complex128)."""
    if dtype.kind == "c":
        return dtype
    return complex128 if dtype.itemsize == 8 else complex64


_REAL = {complex64: float32, complex128: float64}


def default_int():
    return int64 if config.enable_x64 else int32


def index_dtype(size):
    """The dtype of indices (and counts) into `size` elements: argmax, argsort, nonzero,
    count_nonzero, ... give the default int, as in JAX, but int64 where a value could
    pass int32's range (size >= 2**31): a static choice from the shape, never a silent
    wrap-around."""
    return int64 if int(size) >= 2 ** 31 else default_int()


def _resolve(t):
    if t is WEAK_FLOAT:
        return default_float()
    if t is WEAK_INT:
        return default_int()
    if t is WEAK_COMPLEX:
        return default_complex()
    return t


def check_supported(dtype, what="array"):
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED:
        raise DTypeError(
            f"fnad does not support dtype {dtype} (for {what}); supported dtypes are "
            + ", ".join(sorted(str(d) for d in SUPPORTED)))
    return dtype


def promote_types(a: str | type | np.dtype, b: str | type | np.dtype) -> np.dtype:
    """The dtype two arrays of dtypes a and b combine to (jax.numpy.promote_types)."""
    a, b = check_supported(a), check_supported(b)
    return _PROMOTE[a, b]


def lattice_type(x):
    """x's place in the lattice: a weak type for Python ints, floats and complex
    numbers, the Python types int, float and complex, and weakly typed arrays;
    otherwise a dtype."""
    if x is int or type(x) is int:
        return WEAK_INT
    if x is float or type(x) is float:
        return WEAK_FLOAT
    if x is complex or type(x) is complex:
        return WEAK_COMPLEX
    if x is bool or type(x) is bool:
        return bool_
    if getattr(x, "weak_type", False):
        k = kind_of(x.dtype)
        return WEAK_FLOAT if k == "f" else WEAK_COMPLEX if k == "c" else WEAK_INT
    return check_supported(x.dtype if hasattr(x, "dtype") else x)


def result_type(*args: Any) -> np.dtype:
    """The dtype of combining args (arrays, dtypes, Python scalars), as
    jax.numpy.result_type: arrays promote on the lattice, Python scalars are weak."""
    if not args:
        raise ValueError("result_type: at least one array or dtype is required")
    strong = weak = None
    for x in args:
        t = lattice_type(x)
        # identity, not `in`: a dtype compared with the weak types' strings parses them
        if t is WEAK_FLOAT or t is WEAK_INT or t is WEAK_COMPLEX:
            weak = t if weak is None else _JOIN[weak, t]
        else:
            strong = t if strong is None else _JOIN[strong, t]
    if strong is None:
        return _resolve(weak)
    if strong is WEAK_FLOAT:        # uint64 with a signed integer (see _PROMOTE)
        return float64
    return strong if weak is None else _resolve(_JOIN[strong, weak])


def to_inexact(dtype):
    """The float an integer or bool dtype computes in (true division, exp, mean):
    float32 for up to 32 bits, the default float for 64-bit integers, as in JAX.
    Complex dtypes are inexact already."""
    if is_inexact(dtype):
        return dtype
    return default_float() if dtype.itemsize == 8 else float32


def canonical_python_dtype(value):
    """The dtype a Python scalar becomes when it is the only source of a dtype."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return default_int()
    if isinstance(value, float):
        return default_float()
    if isinstance(value, complex):
        return default_complex()
    raise DTypeError(f"cannot make an fnad array from a {type(value).__name__}")
