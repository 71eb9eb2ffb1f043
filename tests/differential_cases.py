"""The differential suite's tables: one entry per public function (or per setting of
its static parameters), each naming the fnad call, its float64 numpy reference, the
input domain, the dtypes it accepts and the dtype rule of its result.

tests/test_differential.py runs every entry through every mode (eager, jit's first
call and compiled call, vmap, jvp/vjp, JAX) with one generic checker. A case's inputs
come from `inputs(dtype)`: a list of Inputs (a label and the positional arguments),
generated from the case's kind and domain, so special values, 0-d, empty, broadcast
and non-contiguous arguments are the same for every function of a kind.
"""
import math
import zlib
from dataclasses import dataclass
from typing import Callable, Optional

import ml_dtypes
import numpy as np

from fnad.dtypes import finfo as dfinfo, kind_of as dkind

BOOL, I32, I64 = np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
# bfloat16 runs every case that accepts float16 (test_differential's bfloat16 tests)
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = (BOOL, I32, I64, F16, F32, F64)
FLOATS = (F16, F32, F64)
INTS = (I32, I64)
NUM = INTS + FLOATS
ALL = (BOOL,) + NUM
LOGIC = (BOOL,) + INTS

# --------------------------------------------------------------------------- domains


@dataclass(frozen=True)
class Domain:
    """Where a function's regular inputs live (floats and ints), and which special
    values its special input set adds (None: the dtype's full list)."""
    name: str
    floats: Callable        # (rng, n) -> float64 values
    ints: Callable          # (rng, n) -> int64 values
    int_specials: Optional[tuple] = None
    float_specials: Optional[tuple] = None


REAL = Domain("real", lambda r, n: r.normal(0, 2, n), lambda r, n: r.integers(-20, 21, n))
POS = Domain("pos", lambda r, n: r.uniform(0.1, 4, n), lambda r, n: r.integers(1, 21, n))
UNIT = Domain("unit", lambda r, n: r.uniform(-0.95, 0.95, n), lambda r, n: r.integers(-1, 2, n))
UNIT01 = Domain("unit01", lambda r, n: r.uniform(0.05, 0.95, n), lambda r, n: r.integers(0, 2, n))
SMALL = Domain("small", lambda r, n: r.uniform(-3, 3, n), lambda r, n: r.integers(-3, 4, n))
ANGLE = Domain("angle", lambda r, n: r.uniform(-1.4, 1.4, n), lambda r, n: r.integers(-1, 2, n))
NONZERO = Domain("nonzero", lambda r, n: r.choice([-1, 1], n) * r.uniform(0.5, 3, n),
                 lambda r, n: r.choice([-1, 1], n) * r.integers(1, 9, n))
# integer exponents stay non-negative: numpy raises for negative integer powers
ABOVE1 = Domain("above1", lambda r, n: r.uniform(1.1, 4, n), lambda r, n: r.integers(1, 21, n))
EXPONENT = Domain("exponent", lambda r, n: r.uniform(-2, 2, n), lambda r, n: r.integers(0, 5, n),
                  int_specials=(0, 1, 2, 3, 7))


def float_specials(dtype):
    info = dfinfo(dtype)
    return [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0,
            float(info.max), -float(info.max), float(info.tiny)]


def int_specials(dtype):
    info = np.iinfo(dtype)
    return [info.min, info.max, info.min + 1, -7, -1, 0, 1, 2, 7]


def seed(*parts):
    """A reproducible seed (Python's hash() of a string changes between processes)."""
    return zlib.crc32(repr(tuple(str(p) for p in parts)).encode())


def values(dtype, domain, rng, n, specials):
    """n regular values of `domain` as `dtype`, preceded by the special values."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        regular = rng.integers(0, 2, n).astype(bool)
        return np.concatenate([[False, True], regular]) if specials else regular
    if dkind(dtype) in "iu":
        regular = domain.ints(rng, n)
        extra = domain.int_specials if domain.int_specials is not None else int_specials(dtype)
        out = np.concatenate([np.asarray(extra, np.int64), regular]) if specials else regular
        return out.astype(dtype)
    regular = domain.floats(rng, n)
    extra = domain.float_specials if domain.float_specials is not None else float_specials(dtype)
    with np.errstate(over="ignore"):
        return (np.concatenate([extra, regular]) if specials else regular).astype(dtype)


def random_array(dtype, domain, rng, shape):
    return values(dtype, domain, rng, int(np.prod(shape, dtype=np.int64)), False).reshape(shape)


def python_scalar(dtype, rng, domain):
    """A weakly typed Python scalar of dtype's kind (JAX: it takes the array's dtype)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return True
    if dkind(dtype) in "iu":
        return int(domain.ints(rng, 1)[0]) or 3
    return float(np.round(domain.floats(rng, 1)[0], 2)) or 1.5


# --------------------------------------------------------------------------- inputs


@dataclass
class Inputs:
    label: str
    args: tuple
    special: bool = False       # holds NaN/inf/extremes: JAX and gradients skip it


@dataclass
class Case:
    """One differential case. `fn(*args)` is fnad's call, `ref(*args)` numpy's (given
    float64 copies of float arguments), `jax(J)(*args)` JAX's, where J is the jax
    namespace (None: JAX has no counterpart). `out` is the result dtype rule used
    when JAX is not installed (see test_differential.rule_dtype)."""
    module: str                 # key of MODULES in test_differential: numpy, lax, ...
    name: str
    fn: Callable
    ref: Callable
    inputs: Callable            # dtype -> [Inputs]; the first holds the jit/vmap shapes
    dtypes: tuple
    out: str = "same"
    jax: Optional[Callable] = None
    label: str = ""
    grad: bool = True           # check jvp/vjp for float inputs
    tol: float = 4.0            # in units of the result dtype's epsilon
    scale: str = "value"        # tolerance scale: "value" (|ref|), "abs" (ref(|x|))
    signed_zero: bool = True    # -0.0 must land where numpy puts it
    vmap: bool = True
    jit: bool = True
    batched: tuple = ()         # argument positions vmap batches (default: all arrays)
    data_args: tuple = ()       # argument positions of the case's dtype (grad wrt these)
    float_ref_args: bool = True  # cast bool/int arguments to float64 for a float result
    native_ref: bool = False    # the reference runs in the input dtype (dtype-dependent results)
    skip: tuple = ()            # labels of input sets that do not apply (say why in the table)

    @property
    def id(self):
        return f"{self.module}.{self.name}" + (f"[{self.label}]" if self.label else "")


def _jax_same(module, name, *pos, **kw):
    """The same-named JAX function, called like fnad's."""
    def get(J):
        f = getattr(getattr(J, module), name)
        return lambda *a: f(*a, *pos, **kw)
    return get


def _partial(f, pos, kw):
    return lambda *a: f(*a, *pos, **kw)


# --------------------------------------------------------------------------- elementwise

def unary_inputs(domain):
    def make(dtype):
        rng = np.random.default_rng(seed(domain.name, dtype))
        a = lambda *s: random_array(dtype, domain, rng, s)  # noqa: E731
        return [Inputs("special", (values(dtype, domain, rng, 12, True),), special=True),
                Inputs("0-d", (a(),)),
                Inputs("empty", (a(0, 3),)),
                Inputs("transposed", (a(4, 3).T,)),
                Inputs("strided", (a(6, 8)[::2, ::-3],)),
                Inputs("regular", (a(2, 5),))]
    return make


def binary_inputs(d1, d2, weak=True):
    def make(dtype):
        rng = np.random.default_rng(seed(d1.name, d2.name, dtype))
        a = lambda d, *s: random_array(dtype, d, rng, s)  # noqa: E731
        out = [Inputs("special grid", (values(dtype, d1, rng, 6, True)[:, None],
                                       values(dtype, d2, rng, 6, True)[None, :]), special=True),
               Inputs("0-d", (a(d1), a(d2))),
               Inputs("0-d with 1-d", (a(d1), a(d2, 3))),
               Inputs("empty", (a(d1, 0, 3), a(d2, 3))),
               Inputs("transposed", (a(d1, 4, 3).T, a(d2, 6, 8)[::2, ::-2])),
               Inputs("broadcast", (a(d1, 2, 1, 3), a(d2, 4, 1))),
               Inputs("regular", (a(d1, 2, 5), a(d2, 2, 5)))]
        if weak:
            out += [Inputs("python scalar right", (a(d1, 5), python_scalar(dtype, rng, d2))),
                    Inputs("python scalar left", (python_scalar(dtype, rng, d1), a(d2, 5)))]
        return out
    return make


def unary(module, fnad_module, name, domain, dtypes, out="same", ref=None, jax=True,
          label="", **options):
    f = getattr(fnad_module, name)
    return Case(module, name, f, ref or getattr(np, name), unary_inputs(domain), dtypes, out,
                jax=_jax_same(module, name) if jax is True else jax, label=label, **options)


def binary(module, fnad_module, name, d1, d2, dtypes, out="same", ref=None, jax=True,
           weak=True, label="", **options):
    f = getattr(fnad_module, name)
    return Case(module, name, f, ref or getattr(np, name), binary_inputs(d1, d2, weak), dtypes,
                out, jax=_jax_same(module, name) if jax is True else jax, label=label,
                **options)


# --------------------------------------------------------------------------- general calls

@dataclass(frozen=True)
class Data:
    """An argument of the case's dtype: a random array of this shape in the domain,
    optionally viewed through `view` (transposes, strides)."""
    shape: tuple
    domain: Domain = REAL
    view: Optional[Callable] = None


def fixed(value):
    """An argument that does not follow the case's dtype (indices, masks)."""
    return lambda dtype, rng: value


def call_inputs(*variants, specials=None):
    """Inputs from argument specs: each variant is (label, [Data | fixed | value])."""
    def make(dtype):
        rng = np.random.default_rng(seed(*(v[0] for v in variants), dtype))
        out = []
        for label, specs in variants:
            args = []
            for s in specs:
                if isinstance(s, Data):
                    x = random_array(dtype, s.domain, rng, s.shape)
                    args.append(s.view(x) if s.view else x)
                elif callable(s):
                    args.append(s(dtype, rng))
                else:
                    args.append(s)
            out.append(Inputs(label, tuple(args)))
        if specials is not None:
            out.append(Inputs("special", tuple(specials(dtype)), special=True))
        return out
    return make


def call(module, fnad_module, name, variants, dtypes, out="same", ref=None, pos=(), kw=None,
         jax=True, label="", specials=None, adapt=None, np_name=None, **options):
    """A case for f(*arrays, *pos, **kw) whose numpy reference (unless given) is the
    same-named numpy function called the same way; `adapt(f)` instead builds the call
    from the library function for fnad, numpy and JAX alike."""
    kw = kw or {}
    numpy_module = np.linalg if module == "linalg" else np
    if adapt is None:
        f = _partial(getattr(fnad_module, name), pos, kw)
        ref = ref or _partial(getattr(numpy_module, np_name or name), pos, kw)
        if jax is True:
            jax = _jax_same(module, name, *pos, **kw)
    else:
        f = adapt(fnad_module)
        ref = ref or adapt(numpy_module)
        if jax is True:
            jax = lambda J: adapt(getattr(J, module))  # noqa: E731
    data = tuple(i for i, s in enumerate(variants[0][1]) if isinstance(s, Data))
    options.setdefault("data_args", data)
    options.setdefault("batched", data)
    return Case(module, name, f, ref, call_inputs(*variants, specials=specials), dtypes, out,
                jax=jax, label=label, **options)


def np_vectorize(scalar_fn):
    """A float64 numpy reference from a scalar math function (math.erf, ...)."""
    vec = np.frompyfunc(scalar_fn, 1, 1)
    return lambda x: np.asarray(vec(np.asarray(x, np.float64)), np.float64)


erf = np_vectorize(lambda v: math.erf(v) if not math.isnan(v) else math.nan)
erfc = np_vectorize(lambda v: math.erfc(v) if not math.isnan(v) else math.nan)


def sigmoid(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))),
                        np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def softplus(x):
    with np.errstate(over="ignore"):
        return np.logaddexp(x, 0.0)


def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def logsumexp(x, axis=None, keepdims=False, b=None):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m) if b is None else b * np.exp(x - m)
    out = np.log(np.sum(e, axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)




# =========================================================================== the tables
import fnad.lax as flax  # noqa: E402
import fnad.nn as fnn  # noqa: E402
import fnad.numpy as fnp  # noqa: E402
import fnad.scipy.special as fspecial  # noqa: E402

PIECEWISE = dict(grad=False)     # derivative zero or undefined at the points tested
ANY_ZERO = dict(signed_zero=False)  # IEEE lets max/min/clip of -0.0 and 0.0 give either
# numpy's sinc(x) computes pi * x in x's dtype: it overflows at the largest finite value
NO_MAX = Domain("no max", REAL.floats, REAL.ints, float_specials=(
    np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e4, -1e4))

# fnad.numpy, one argument: name, domain, dtypes, result rule, options
NUMPY_UNARY = [
    ("abs", REAL, ALL, "same", {}),
    ("absolute", REAL, ALL, "same", {}),
    ("arccos", UNIT, ALL, "float", {}),
    ("arcsin", UNIT, ALL, "float", {}),
    ("arcsinh", REAL, ALL, "float", {}),
    ("arctan", REAL, ALL, "float", {}),
    ("arctanh", UNIT, ALL, "float", {}),
    ("bitwise_not", REAL, LOGIC, "same", {}),
    ("invert", REAL, LOGIC, "same", {}),
    ("cbrt", REAL, ALL, "float", {}),
    ("ceil", REAL, ALL, "same", PIECEWISE),
    ("floor", REAL, ALL, "same", PIECEWISE),
    ("trunc", REAL, ALL, "same", PIECEWISE),
    ("cos", REAL, ALL, "float", {}),
    ("cosh", SMALL, ALL, "float", {}),
    ("deg2rad", REAL, ALL, "float", {}),
    ("degrees", REAL, ALL, "float", {}),
    ("rad2deg", REAL, ALL, "float", {}),
    ("radians", REAL, ALL, "float", {}),
    ("exp", SMALL, ALL, "float", {}),
    ("exp2", SMALL, ALL, "float", {}),
    ("expm1", SMALL, ALL, "float", {}),
    ("isfinite", REAL, ALL, "bool", {}),
    ("isinf", REAL, ALL, "bool", {}),
    ("isnan", REAL, ALL, "bool", {}),
    ("signbit", REAL, ALL, "bool", {}),
    ("logical_not", REAL, ALL, "bool", {}),
    ("log", POS, ALL, "float", {}),
    ("log10", POS, ALL, "float", {}),
    ("log1p", POS, ALL, "float", {}),
    ("log2", POS, ALL, "float", {}),
    ("negative", REAL, NUM, "same", {}),
    ("positive", REAL, NUM, "same", {}),
    # the complex-number functions on real inputs (complex ones: tests/test_complex.py)
    ("real", REAL, ALL, "same", {}),
    ("imag", REAL, ALL, "same", PIECEWISE),
    ("conj", REAL, ALL, "same", {}),
    ("conjugate", REAL, ALL, "same", {}),
    ("angle", REAL, ALL, "float", PIECEWISE),
    ("iscomplex", REAL, ALL, "bool", {}),
    ("isreal", REAL, ALL, "bool", {}),
    ("arccosh", ABOVE1, ALL, "float", {}),
    ("acosh", ABOVE1, ALL, "float", {}),
    ("reciprocal", NONZERO, FLOATS, "same", {}),
    ("sign", REAL, NUM, "same", PIECEWISE),
    ("sin", REAL, ALL, "float", {}),
    ("sinc", NO_MAX, ALL, "float", {}),
    ("sinh", SMALL, ALL, "float", {}),
    ("sqrt", POS, ALL, "float", {}),
    ("rsqrt", POS, ALL, "float", dict(ref=lambda x: 1 / np.sqrt(x),
                                      jax=lambda J: lambda x: 1 / J.numpy.sqrt(x))),
    ("square", REAL, NUM, "same", {}),
    ("tan", ANGLE, ALL, "float", {}),
    ("tanh", REAL, ALL, "float", {}),
    ("round", REAL, NUM, "same", PIECEWISE),
    ("around", REAL, NUM, "same", dict(PIECEWISE, jax=lambda J: J.numpy.round)),
]

# fnad.numpy, two arguments: name, domain of each, dtypes, result rule, options
NUMPY_BINARY = [
    ("add", REAL, REAL, ALL, "same", dict(scale="abs")),
    ("subtract", REAL, REAL, NUM, "same", dict(scale="abs")),
    ("multiply", REAL, REAL, ALL, "same", {}),
    ("divide", REAL, NONZERO, ALL, "float", {}),
    ("true_divide", REAL, NONZERO, ALL, "float", {}),
    ("floor_divide", REAL, NONZERO, NUM, "same", PIECEWISE),
    ("mod", REAL, NONZERO, NUM, "same", PIECEWISE),
    ("remainder", REAL, NONZERO, NUM, "same", PIECEWISE),
    ("fmod", REAL, NONZERO, NUM, "same", PIECEWISE),
    ("divmod", REAL, NONZERO, NUM, "same", PIECEWISE),
    ("power", POS, EXPONENT, NUM, "same", {}),
    ("maximum", REAL, REAL, ALL, "same", ANY_ZERO),
    ("minimum", REAL, REAL, ALL, "same", ANY_ZERO),
    ("arctan2", REAL, REAL, ALL, "float", {}),
    ("hypot", REAL, REAL, ALL, "float", {}),
    ("logaddexp", REAL, REAL, ALL, "float", {}),
    ("copysign", REAL, REAL, ALL, "float", PIECEWISE),
    ("heaviside", REAL, REAL, ALL, "float", PIECEWISE),
    ("bitwise_and", REAL, REAL, LOGIC, "same", {}),
    ("bitwise_or", REAL, REAL, LOGIC, "same", {}),
    ("bitwise_xor", REAL, REAL, LOGIC, "same", {}),
    ("equal", REAL, REAL, ALL, "bool", {}),
    ("not_equal", REAL, REAL, ALL, "bool", {}),
    ("greater", REAL, REAL, ALL, "bool", {}),
    ("greater_equal", REAL, REAL, ALL, "bool", {}),
    ("less", REAL, REAL, ALL, "bool", {}),
    ("less_equal", REAL, REAL, ALL, "bool", {}),
    ("logical_and", REAL, REAL, ALL, "bool", {}),
    ("logical_or", REAL, REAL, ALL, "bool", {}),
    ("logical_xor", REAL, REAL, ALL, "bool", {}),
]


def _lax_round(x):
    """lax.round rounds halfway cases away from zero (numpy's round: to even)."""
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _c_quotient(a, b):
    """C's integer division of Python ints: toward zero; x / 0 is -1 (XLA, JAX)."""
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _trunc_div(x, y):
    """lax.div: C division, rounding toward zero, for integers too (computed in Python
    ints, wrapped to the dtype: iinfo.min / -1 is iinfo.min)."""
    if dkind(np.asarray(x).dtype) in "iu":
        dtype = np.result_type(x, y)
        q = np.frompyfunc(lambda a, b: _c_quotient(int(a), int(b)), 2, 1)(x, y)
        bits = 8 * dtype.itemsize
        low = -(2 ** (bits - 1)) if dkind(dtype) == "i" else 0
        wrapped = [(int(v) - low) % 2 ** bits + low for v in np.ravel(q)]
        return np.array(wrapped, dtype).reshape(np.shape(q))
    return np.divide(x, y)


# fnad.lax, one argument (lax does not promote: floats unless the op is exact)
LAX_UNARY = [
    ("abs", REAL, NUM, np.abs, {}),
    ("acos", UNIT, FLOATS, np.arccos, {}),
    ("asin", UNIT, FLOATS, np.arcsin, {}),
    ("asinh", REAL, FLOATS, np.arcsinh, {}),
    ("atan", REAL, FLOATS, np.arctan, {}),
    ("atanh", UNIT, FLOATS, np.arctanh, {}),
    ("ceil", REAL, FLOATS, np.ceil, PIECEWISE),
    ("floor", REAL, FLOATS, np.floor, PIECEWISE),
    ("round", REAL, FLOATS, _lax_round, PIECEWISE),
    ("cos", REAL, FLOATS, np.cos, {}),
    ("cosh", SMALL, FLOATS, np.cosh, {}),
    ("sin", REAL, FLOATS, np.sin, {}),
    ("sinh", SMALL, FLOATS, np.sinh, {}),
    ("tan", ANGLE, FLOATS, np.tan, {}),
    ("tanh", REAL, FLOATS, np.tanh, {}),
    ("exp", SMALL, FLOATS, np.exp, {}),
    ("expm1", SMALL, FLOATS, np.expm1, {}),
    ("log", POS, FLOATS, np.log, {}),
    ("log1p", POS, FLOATS, np.log1p, {}),
    ("acosh", ABOVE1, FLOATS, np.arccosh, {}),
    ("logistic", REAL, FLOATS, sigmoid, {}),
    ("erf", REAL, FLOATS, erf, {}),
    ("sqrt", POS, FLOATS, np.sqrt, {}),
    ("rsqrt", POS, FLOATS, lambda x: 1 / np.sqrt(x), {}),
    ("square", REAL, NUM, np.square, {}),
    ("neg", REAL, NUM, np.negative, {}),
    ("sign", REAL, NUM, np.sign, PIECEWISE),
    ("is_finite", REAL, FLOATS, np.isfinite, dict(out="bool")),
    ("bitwise_not", REAL, LOGIC, np.bitwise_not, {}),
    ("stop_gradient", REAL, ALL, lambda x: x, dict(grad=False)),
]

LAX_BINARY = [
    ("add", REAL, REAL, NUM, np.add, dict(scale="abs")),
    ("sub", REAL, REAL, NUM, np.subtract, dict(scale="abs")),
    ("mul", REAL, REAL, NUM, np.multiply, {}),
    ("div", REAL, NONZERO, NUM, _trunc_div, {}),
    ("rem", REAL, NONZERO, NUM, np.fmod, PIECEWISE),
    ("pow", POS, REAL, FLOATS, np.power, {}),
    ("max", REAL, REAL, ALL, np.maximum, ANY_ZERO),
    ("min", REAL, REAL, ALL, np.minimum, ANY_ZERO),
    ("atan2", REAL, REAL, FLOATS, np.arctan2, {}),
    ("bitwise_and", REAL, REAL, LOGIC, np.bitwise_and, {}),
    ("bitwise_or", REAL, REAL, LOGIC, np.bitwise_or, {}),
    ("bitwise_xor", REAL, REAL, LOGIC, np.bitwise_xor, {}),
    ("eq", REAL, REAL, ALL, np.equal, dict(out="bool")),
    ("ne", REAL, REAL, ALL, np.not_equal, dict(out="bool")),
    ("gt", REAL, REAL, ALL, np.greater, dict(out="bool")),
    ("ge", REAL, REAL, ALL, np.greater_equal, dict(out="bool")),
    ("lt", REAL, REAL, ALL, np.less, dict(out="bool")),
    ("le", REAL, REAL, ALL, np.less_equal, dict(out="bool")),
]


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    with np.errstate(over="ignore"):
        return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


# fnad.nn activations: name, domain, reference, options
NN_UNARY = [
    ("relu", REAL, lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)), {}),
    ("relu6", REAL, lambda x: np.clip(x, 0, 6), {}),
    ("hard_tanh", REAL, lambda x: np.clip(x, -1, 1), {}),
    ("sigmoid", REAL, sigmoid, {}),
    ("softplus", REAL, softplus, {}),
    ("log_sigmoid", REAL, lambda x: -softplus(-x), {}),
    ("silu", REAL, lambda x: x * sigmoid(x), {}),
    ("swish", REAL, lambda x: x * sigmoid(x), {}),
    ("gelu", REAL, _gelu_tanh, {}),
    ("elu", REAL, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), {}),
    ("celu", REAL, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), {}),
    ("selu", REAL, _selu, {}),
    ("leaky_relu", REAL, lambda x: np.where(x >= 0, x, 0.01 * x), {}),
    ("identity", REAL, lambda x: x, {}),
    ("tanh", REAL, np.tanh, {}),
    ("hard_sigmoid", REAL, lambda x: np.clip(x + 3, 0, 6) / 6, {}),
    ("hard_silu", REAL, lambda x: x * (np.clip(x + 3, 0, 6) / 6), {}),
    ("hard_swish", REAL, lambda x: x * (np.clip(x + 3, 0, 6) / 6), {}),
    ("mish", REAL, lambda x: x * np.tanh(softplus(x)), {}),
    ("soft_sign", REAL, lambda x: x / (1 + np.abs(x)), {}),
    # written so that x^2 cannot overflow and x < 0 does not cancel: 0 at -inf (the
    # textbook formula, and JAX, give NaN there; inf at the largest float64)
    ("squareplus", REAL, lambda x: np.where(x >= 0, 0.5 * x + 0.5 * np.hypot(x, 2),
                                            2 / (np.hypot(x, 2) - x)), {}),
    ("sparse_plus", REAL, lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
     {}),
    ("sparse_sigmoid", REAL, lambda x: np.clip((x + 1) / 2, 0, 1), {}),
]

SPECIAL_UNARY = [
    ("erf", REAL, erf, {}),
    ("erfc", REAL, erfc, {}),
    ("expit", REAL, sigmoid, {}),
    ("logit", UNIT01, lambda x: np.log(x) - np.log1p(-x), {}),
]


def _xlogy(x, y):
    with np.errstate(all="ignore"):
        return np.where(x == 0, 0.0, x * np.log(y))


def _xlog1py(x, y):
    with np.errstate(all="ignore"):
        return np.where(x == 0, 0.0, x * np.log1p(y))


def elementwise_cases():
    cases = []
    for name, dom, dtypes, out, opt in NUMPY_UNARY:
        cases.append(unary("numpy", fnp, name, dom, dtypes, out, **opt))
    for name, d1, d2, dtypes, out, opt in NUMPY_BINARY:
        cases.append(binary("numpy", fnp, name, d1, d2, dtypes, out, **opt))
    for name, dom, dtypes, ref, opt in LAX_UNARY:
        cases.append(unary("lax", flax, name, dom, dtypes, opt.pop("out", "same"), ref=ref,
                           **opt))
    for name, d1, d2, dtypes, ref, opt in LAX_BINARY:
        cases.append(binary("lax", flax, name, d1, d2, dtypes, opt.pop("out", "same"), ref=ref,
                            weak=False, **opt))
    for name, dom, ref, opt in NN_UNARY:
        cases.append(unary("nn", fnn, name, dom, FLOATS, "float", ref=ref, **ANY_ZERO, **opt))
    for name, dom, ref, opt in SPECIAL_UNARY:
        cases.append(unary("special", fspecial, name, dom, FLOATS, "float", ref=ref, **opt))
    cases.append(binary("special", fspecial, "xlogy", REAL, POS, FLOATS, "float", ref=_xlogy))
    cases.append(binary("special", fspecial, "xlog1py", REAL, POS, FLOATS, "float",
                        ref=_xlog1py))
    return cases


CASES = elementwise_cases()


# --------------------------------------------------------------------------- reductions

NEAR1 = Domain("near1", lambda r, n: r.uniform(0.6, 1.6, n), lambda r, n: r.integers(-3, 4, n))
UNIFORM = Domain("uniform01", lambda r, n: r.uniform(0, 1, n), lambda r, n: r.integers(0, 100, n))


def reduction_inputs(domain, long=True):
    """2-D inputs: special values planted where a sequential loop would meet them as
    its second operand, regular and transposed ones, 0-d and empty ones, and a long
    row for the accuracy of the accumulation."""
    def make(dtype):
        rng = np.random.default_rng(seed("reduce", domain.name, dtype))
        a = lambda d, *s: random_array(dtype, d, rng, s)  # noqa: E731
        special = a(domain, 4, 6)
        if dkind(dtype) == "f":
            special[0, 1], special[1, 2], special[2, 0], special[3, 3] = \
                np.nan, np.inf, -np.inf, -0.0
            special[3, :] = -0.0 if dkind(dtype) == "f" else 0
            special[3, 5] = -1.0
        elif dkind(dtype) in "iu":
            info = np.iinfo(dtype)
            special[0, 1], special[1, 2], special[2, 0] = info.max, info.min, -1
        out = [Inputs("special", (special,), special=True),
               Inputs("regular", (a(domain, 3, 5),)),
               Inputs("transposed", (a(domain, 5, 3).T,)),
               Inputs("empty", (a(domain, 0, 4),)),
               Inputs("one row", (a(domain, 1, 7),))]
        if long:
            out.append(Inputs("long", (a(UNIFORM, 2, 5000)[:, ::-1],)))
        return out
    return make


AXES = [("axis=None", {}), ("axis=1", dict(axis=1)),
        ("axis=0 keepdims", dict(axis=0, keepdims=True))]
AXES_NO_KEEPDIMS = [("axis=None", {}), ("axis=1", dict(axis=1)), ("axis=-2", dict(axis=-2))]

# name, domain, dtypes, result rule, axis settings, options
NUMPY_REDUCTIONS = [
    ("sum", REAL, ALL, "acc", AXES, dict(scale="abs")),
    ("prod", NEAR1, ALL, "acc", AXES, dict(long=False)),
    ("mean", REAL, ALL, "float", AXES, dict(scale="abs")),
    ("var", REAL, ALL, "float", AXES, dict(tol=32)),
    ("std", REAL, ALL, "float", AXES, dict(tol=32)),
    ("max", REAL, ALL, "same", AXES, {}),
    ("min", REAL, ALL, "same", AXES, {}),
    ("amax", REAL, ALL, "same", AXES, {}),
    ("amin", REAL, ALL, "same", AXES, {}),
    ("all", REAL, ALL, "bool", AXES, {}),
    ("any", REAL, ALL, "bool", AXES, {}),
    ("argmax", REAL, ALL, "index", AXES, {}),
    ("argmin", REAL, ALL, "index", AXES, {}),
    ("count_nonzero", REAL, ALL, "index", AXES, {}),
    ("median", REAL, ALL, "float", AXES, {}),
    # numpy's average of an empty axis raises ZeroDivisionError, its mean gives NaN
    ("average", REAL, ALL, "float", AXES_NO_KEEPDIMS[:2], dict(scale="abs", skip=("empty",))),
    ("cumsum", REAL, ALL, "acc", AXES_NO_KEEPDIMS, dict(scale="abs", long=False)),
    ("cumprod", NEAR1, ALL, "acc", AXES_NO_KEEPDIMS, dict(long=False)),
]


def _lax_cumulative(np_fn):
    def ref(x, axis, reverse=False):
        x = np.flip(x, axis) if reverse else x
        out = np_fn(x, axis=axis)
        return np.flip(out, axis) if reverse else out
    return ref


def _np_cummax(x, axis):
    return np.maximum.accumulate(x, axis=axis) if dkind(x.dtype) != "f" else \
        np.fmax.accumulate(x, axis=axis) + np.where(
            np.logical_or.accumulate(np.isnan(x), axis=axis), np.nan, 0)


def _np_cummin(x, axis):
    return np.minimum.accumulate(x, axis=axis) if dkind(x.dtype) != "f" else \
        np.fmin.accumulate(x, axis=axis) + np.where(
            np.logical_or.accumulate(np.isnan(x), axis=axis), np.nan, 0)


def _over_axes(np_fn):
    return lambda x, axes: np_fn(x, axis=axes)


# cumulative sums are sequential in numpy too, so no "long" input for them
# fnad.lax reductions: name, dtypes, reference, params, options
LAX_REDUCTIONS = [
    ("reduce_sum", NUM, _over_axes(np.sum), dict(axes=(1,)), dict(scale="abs")),
    ("reduce_sum", NUM, _over_axes(np.sum), dict(axes=(0, 1)), dict(scale="abs")),
    ("reduce_prod", NUM, _over_axes(np.prod), dict(axes=(0,)), dict(long=False, domain=NEAR1)),
    ("reduce_max", ALL, _over_axes(np.max), dict(axes=(1,)), {}),
    ("reduce_max", ALL, _over_axes(np.max), dict(axes=(0, 1)), {}),
    ("reduce_min", ALL, _over_axes(np.min), dict(axes=(0,)), {}),
    ("argmax", NUM, lambda x, axis, index_dtype: np.argmax(x, axis).astype(index_dtype),
     dict(axis=1, index_dtype=np.int32), dict(out=I32)),
    ("argmin", NUM, lambda x, axis, index_dtype: np.argmin(x, axis).astype(index_dtype),
     dict(axis=0, index_dtype=np.int32), dict(out=I32)),
    ("cumsum", NUM, _lax_cumulative(np.cumsum), dict(axis=1), dict(scale="abs", long=False)),
    ("cumsum", NUM, _lax_cumulative(np.cumsum), dict(axis=0, reverse=True),
     dict(scale="abs", long=False)),
    ("cumprod", NUM, _lax_cumulative(np.cumprod), dict(axis=1), dict(long=False, domain=NEAR1)),
    ("cummax", NUM, _lax_cumulative(_np_cummax), dict(axis=1), {}),
    ("cummin", NUM, _lax_cumulative(_np_cummin), dict(axis=0, reverse=True), {}),
]


def _label(params):
    return " ".join(f"{k}={v}" for k, v in params.items()) or "default"


def reduction_cases():
    cases = []
    for name, dom, dtypes, out, axes, opt in NUMPY_REDUCTIONS:
        opt = dict(opt)
        long = opt.pop("long", True)
        for label, kw in axes:
            cases.append(Case("numpy", name, _partial(getattr(fnp, name), (), kw),
                              _partial(getattr(np, name), (), kw), reduction_inputs(dom, long),
                              dtypes, out, jax=_jax_same("numpy", name, **kw), label=label,
                              signed_zero=False, tol=opt.pop("tol", 16), **opt))
    for name, dtypes, ref, kw, opt in LAX_REDUCTIONS:
        opt = dict(opt)
        long, dom = opt.pop("long", True), opt.pop("domain", REAL)
        cases.append(Case("lax", name, _partial(getattr(flax, name), (), kw),
                          _partial(ref, (), kw), reduction_inputs(dom, long), dtypes,
                          opt.pop("out", "same"), jax=_jax_same("lax", name, **kw),
                          label=_label(kw), signed_zero=False, tol=16, **opt))
    return cases


# fnad.nn / scipy.special functions over an axis: module, name, reference, params, options
AXIS_FUNCTIONS = [
    ("nn", "softmax", lambda x, axis: np.exp(log_softmax(x, axis)), dict(axis=-1), {}),
    ("nn", "softmax", lambda x, axis: np.exp(log_softmax(x, axis)), dict(axis=0), {}),
    ("nn", "log_softmax", log_softmax, dict(axis=-1), {}),
    ("nn", "logsumexp", logsumexp, dict(axis=-1), {}),
    ("nn", "logsumexp", logsumexp, dict(axis=None), {}),
    ("nn", "standardize", lambda x, axis: (x - x.mean(axis, keepdims=True)) / np.sqrt(
        x.var(axis, keepdims=True) + 1e-5), dict(axis=-1), dict(tol=32)),
    ("special", "softmax", lambda x, axis: np.exp(log_softmax(x, axis)), dict(axis=-1), {}),
    ("special", "log_softmax", log_softmax, dict(axis=0), {}),
    ("special", "logsumexp", logsumexp, dict(axis=1, keepdims=True), {}),
]

_FNAD = {"numpy": fnp, "lax": flax, "nn": fnn, "special": fspecial}


def axis_function_cases():
    cases = []
    for module, name, ref, kw, opt in AXIS_FUNCTIONS:
        opt = dict(opt)
        cases.append(Case(module, name, _partial(getattr(_FNAD[module], name), (), kw),
                          _partial(ref, (), kw), reduction_inputs(SMALL, long=False), FLOATS,
                          "float", jax=_jax_same(module, name, **kw), label=_label(kw),
                          signed_zero=False, tol=opt.pop("tol", 16), **opt))
    return cases


CASES += reduction_cases() + axis_function_cases()
