"""ONNX lowerings: the convention, the small kit every family uses, and the rules of
the elementwise, structural and reduction families (one-operator rules mostly, so they
read as a table). Convolutions, windows, indexing, sort, dot_general and the staged
primitives (jit_call, custom_call, cond, while, scan) keep theirs beside their
declarations.

A rule is ``rule(b, *inputs, **params) -> output name (a list for several)``: `b` is
fnad.onnx's Builder (passed in at export time, so no primitive module imports onnx),
`inputs` the ONNX names of the operands. Each rule keeps numpy's semantics where
ONNX's operator differs (NaN through max/min, the sign of a remainder, rounding halves
away from zero), so the exported model computes what fnad computes.
"""
import numpy as np

from ..dtypes import kind_of

INT64_MAX = np.iinfo(np.int64).max


def node(op_type, **attrs):
    """The rule of a primitive that is one ONNX operator."""
    def rule(b, *xs, **params):
        return b.op(op_type, *xs, **attrs)
    rule.__name__ = op_type
    return rule


def is_float(b, x):
    return kind_of(b.dtype(x)) == "f"          # bfloat16 too (numpy's kind is "V")


# --------------------------------------------------------------------------- elementwise

def _nan_through(b, out, *xs):
    """NaN in, NaN out, as numpy gives for sign and rounding; ONNX leaves it open."""
    for x in reversed(xs):
        if is_float(b, x):
            out = b.op("Where", b.op("IsNaN", x), x, out)
    return out


def _nonzero(b, x, dtype, nan=False):
    """x != 0 (and true for NaN with nan=True), for a Where that keeps a -0.0 in its
    last operand: ONNX Runtime drops the sign of a -0.0 taken from the middle one, and
    its optimizer swaps the operands of a Where whose condition is a Not."""
    out = b.op("Greater", b.op("Abs", x), b.scalar(0, dtype))
    return b.op("Or", out, b.op("IsNaN", x)) if nan else out


def _pick(b, x, y, compare, dtype):
    """numpy's maximum/minimum exactly: x where x is NaN or x `compare` y, else y (so
    NaN wins and maximum(0.0, -0.0) is -0.0, as numpy's kernels give)."""
    take = b.op(compare, x, y)
    if kind_of(dtype) == "f":
        take = b.op("Or", b.op("IsNaN", x), take)
    return b.op("Where", take, x, y)


def maximum(b, x, y):
    return _pick(b, x, y, "Greater", b.dtype(x))


def minimum(b, x, y):
    return _pick(b, x, y, "Less", b.dtype(x))


def clamp(b, lo, x, hi):
    return _pick(b, _pick(b, x, lo, "Greater", b.dtype(x)), hi, "Less", b.dtype(x))


def relu(b, x):
    # ONNX's Relu leaves NaN and -0.0 to the runtime; fnad's relu is where(x <= 0, 0, x)
    zero = b.scalar_like(0, x)
    return b.op("Where", b.op("LessOrEqual", x, zero), zero, x)


def sign(b, x):
    return _nan_through(b, b.op("Sign", x), x)


def log1p(b, x):
    """log(u) * (x / (u - 1)) with u = 1 + x (Goldberg, "What every computer scientist
    should know about floating-point arithmetic", thm. 4): log(1 + x) alone loses every
    digit of a small x (1e-7 gave 1.19e-7). x itself where u - 1 is 0 (so -0.0 stays)."""
    u = b.op("Add", b.scalar_like(1, x), x)
    d = b.op("Sub", u, b.scalar_like(1, x))
    log = b.op("Log", u)
    general = b.op("Where", b.op("IsInf", u), log, b.op("Mul", log, b.op("Div", x, d)))
    return b.op("Where", _nonzero(b, d, b.dtype(x)), general, x)


def expm1(b, x):
    """(u - 1) * (x / log(u)) with u = exp(x) (Kahan's trick): exp(x) - 1 alone loses
    every digit of a small x. x where u is 1, -1 where u - 1 is -1, inf where u is."""
    one = b.scalar_like(1, x)
    u = b.op("Exp", x)
    d = b.op("Sub", u, one)
    general = b.op("Mul", d, b.op("Div", x, b.op("Log", u)))
    general = b.op("Where", b.op("IsInf", u), u, general)
    general = b.op("Where", b.op("Equal", d, b.scalar_like(-1, x)), b.scalar_like(-1, x),
                   general)
    return b.op("Where", _nonzero(b, d, b.dtype(x)), general, x)


def rsqrt(b, x):
    return b.op("Reciprocal", b.op("Sqrt", x))


def cbrt(b, x):
    """|x| ** (1/3) (1/3 rounded to float32 is off by 1e-8: 7 ulp at 1e-30), then one
    Newton step (2r + a / r / r) / 3, written so r**3 never overflows; the sign put
    back; x itself for ±0 and ±inf."""
    a = b.op("Abs", x)
    r = b.op("Pow", a, b.scalar_like(1 / 3, x))
    newton = b.op("Div", b.op("Add", b.op("Add", r, r), b.op("Div", b.op("Div", a, r), r)),
                  b.scalar_like(3, x))
    signed = b.op("Where", b.op("Less", x, b.scalar_like(0, x)), b.op("Neg", newton), newton)
    finite = b.op("And", _nonzero(b, x, b.dtype(x), nan=True),
                  b.op("Not", b.op("IsInf", x)))
    return b.op("Where", finite, signed, x)


def atan2(b, y, x):
    """numpy's arctan2(y, x): atan(y / x) moved into the quadrant of (x, y)."""
    zero = b.scalar_like(0, x)
    pi = b.scalar_like(np.pi, x)
    base = b.op("Atan", b.op("Div", y, x))
    y_neg = b.op("Or", b.op("Less", y, zero),
                 b.op("And", b.op("Equal", y, zero), _negative_zero(b, y)))
    shift = b.op("Where", y_neg, b.op("Neg", pi), pi)
    x_neg = b.op("Or", b.op("Less", x, zero),
                 b.op("And", b.op("Equal", x, zero), _negative_zero(b, x)))
    out = b.op("Where", x_neg, b.op("Add", base, shift), base)
    # atan(±0 / ±0) is NaN: the quadrant's zero (or ±pi) instead
    both_zero = b.op("And", b.op("Equal", x, zero), b.op("Equal", y, zero))
    at_zero = b.op("Where", x_neg, shift, b.op("Mul", y, b.scalar_like(1, y)))
    return b.op("Where", both_zero, at_zero, out)


def _negative_zero(b, x):
    """x is -0.0 (or negative): 1 / x is -inf for -0.0."""
    return b.op("Less", b.op("Div", b.scalar_like(1, x), x), b.scalar_like(0, x))


def hypot(b, x, y):
    """m * sqrt(1 + (n / m)^2) with m, n the larger and smaller magnitude, so squares
    neither overflow (hypot(1e20, 1e20) in float32) nor underflow; inf wins over NaN
    (numpy's hypot(inf, nan) is inf)."""
    a, c = b.op("Abs", x), b.op("Abs", y)
    m = _pick(b, a, c, "Greater", b.dtype(x))
    n = _pick(b, a, c, "Less", b.dtype(x))
    r = b.op("Div", n, m)
    h = b.op("Mul", m, b.op("Sqrt", b.op("Add", b.scalar_like(1, x), b.op("Mul", r, r))))
    h = b.op("Where", b.op("Equal", m, b.scalar_like(0, x)), m, h)
    return b.op("Where", b.op("Or", b.op("IsInf", a), b.op("IsInf", c)),
                b.scalar_like(np.inf, x), h)


def round_(b, x, rounding_method):
    if rounding_method == 1:        # to nearest even: ONNX's Round
        return b.op("Round", x)
    a = b.op("Abs", x)
    t = b.op("Floor", a)
    up = b.op("GreaterOrEqual", b.op("Sub", a, t), b.scalar_like(0.5, x))
    r = b.op("Where", up, b.op("Add", t, b.scalar_like(1, x)), t)
    return _nan_through(b, b.op("Mul", b.op("Sign", x), r), x)


def is_finite(b, x):
    return b.op("Not", b.op("Or", b.op("IsInf", x), b.op("IsNaN", x)))


def _logical(bool_op, bitwise_op):
    def rule(b, *xs):
        if b.dtype(xs[0]) == np.bool_:
            return b.op(bool_op, *xs)
        if b.opset < 18:
            b.fail(f"bitwise {bitwise_op} on integers needs opset 18 or later")
        return b.op(bitwise_op, *xs)
    return rule


not_ = _logical("Not", "BitwiseNot")
and_ = _logical("And", "BitwiseAnd")
or_ = _logical("Or", "BitwiseOr")
xor = _logical("Xor", "BitwiseXor")


def ne(b, x, y):
    return b.op("Not", b.op("Equal", x, y))


def integer_pow(b, x, y):
    if y == 0:
        return b.op("ConstantOfShape", b.op("Shape", x),
                    value=b.tensor(np.ones(1, b.dtype(x))))
    if y < 0 and not is_float(b, x):
        b.fail("a negative integer power of an integer")
    # Square and multiply, as numpy's integer powers: exact for the small exponents
    # models use (x*x for y=2), no exp/log round trip.
    acc, base, n = None, x, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else b.op("Mul", acc, base)
        n >>= 1
        if n:
            base = b.op("Mul", base, base)
    return b.op("Reciprocal", acc) if y < 0 else acc


def rem(b, x, y):
    return b.op("Mod", x, y, fmod=1)


def remainder(b, x, y):
    if not is_float(b, x):
        return b.op("Mod", x, y, fmod=0)
    r = b.op("Mod", x, y, fmod=1)
    zero = b.scalar_like(0, x)
    nonzero = _nonzero(b, r, b.dtype(x), nan=True)
    fix = b.op("And", nonzero, b.op("Xor", b.op("Less", r, zero), b.op("Less", y, zero)))
    # numpy: a zero remainder has the divisor's sign (-3.0 % 1.5 is 0.0, not -0.0)
    return b.op("Where", nonzero, b.op("Where", fix, b.op("Add", r, y), r),
                b.op("Mul", b.op("Sign", y), zero))


def floor_divide(b, x, y):
    if is_float(b, x):
        return _floor_divide_float(b, x, y)
    q = b.op("Div", x, y)
    zero = b.scalar_like(0, x)
    inexact = b.op("Not", b.op("Equal", b.op("Mod", x, y, fmod=1), zero))
    signs = b.op("Xor", b.op("Less", x, zero), b.op("Less", y, zero))
    return b.op("Sub", q, b.cast(b.op("And", inexact, signs), b.dtype(x)))


def _floor_divide_float(b, x, y):
    """numpy's npy_divmod: (x - fmod(x, y)) / y, one less when the remainder's sign
    differs from y's, then rounded to the nearest whole number. floor(x / y) differs
    where x / y rounds up to a whole number (1.0 // 0.1 is 9.0, floor(1.0 / 0.1) is
    10.0). x / y where y is 0; a zero quotient has x / y's sign."""
    zero, one = b.scalar_like(0, x), b.scalar_like(1, x)
    mod = b.op("Mod", x, y, fmod=1)
    div = b.op("Div", b.op("Sub", x, mod), y)
    fix = b.op("And", b.op("Not", b.op("Equal", mod, zero)),
               b.op("Xor", b.op("Less", mod, zero), b.op("Less", y, zero)))
    div = b.op("Where", fix, b.op("Sub", div, one), div)
    floor = b.op("Floor", div)
    up = b.op("Greater", b.op("Sub", div, floor), b.scalar_like(0.5, x))
    floor = b.op("Where", up, b.op("Add", floor, one), floor)
    quotient = b.op("Div", x, y)
    out = b.op("Where", _nonzero(b, div, b.dtype(x), nan=True), floor,
               b.op("Mul", quotient, zero))
    return b.op("Where", b.op("Equal", y, zero), quotient, out)


def convert_element_type(b, x, new_dtype):
    return b.cast(x, new_dtype)


def select(b, pred, on_true, on_false):
    # Where is exact in ONNX; ONNX Runtime 1.32's CPU kernel returns +0.0 for a -0.0
    # taken from its second operand (checked against onnx.reference, which keeps it).
    return b.op("Where", pred, on_true, on_false)


# --------------------------------------------------------------------------- structure

def broadcast_in_dim(b, x, shape, broadcast_dimensions):
    order = sorted(range(len(broadcast_dimensions)), key=lambda i: broadcast_dimensions[i])
    same = (order == list(range(len(order))) and len(shape) == b.aval(x).ndim
            and tuple(shape) == tuple(b.aval(x).shape))
    if same and b.dims_of(x) == b.out_dims():
        return b.op("Identity", x)
    if order != list(range(len(order))):
        x = b.op("Transpose", x, perm=order)
    kept = sorted(broadcast_dimensions)
    new_axes = [i for i in range(len(shape)) if i not in kept]
    if new_axes:
        x = b.op("Unsqueeze", x, b.ints(new_axes))
    return b.op("Expand", x, b.out_shape(covers=("shape",)))


def reshape(b, x, new_sizes):
    zero = any(d == 0 for d in b.out_dims() if isinstance(d, int))
    return b.op("Reshape", x, b.out_shape(covers=("new_sizes",)),
                allowzero=1 if zero else None)


def transpose(b, x, permutation):
    return b.op("Transpose", x, perm=list(permutation))


def squeeze(b, x, dimensions):
    return b.op("Squeeze", x, b.ints(dimensions)) if dimensions else b.op("Identity", x)


def expand_dims(b, x, dimensions):
    return b.op("Unsqueeze", x, b.ints(dimensions)) if dimensions else b.op("Identity", x)


def rev(b, x, dimensions):
    if not dimensions:
        return b.op("Identity", x)
    n = len(dimensions)
    return b.op("Slice", x, b.ints([-1] * n), b.ints([np.iinfo(np.int64).min] * n),
                b.ints(dimensions), b.ints([-1] * n))


def slice_(b, x, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    dims, shape = b.dims_of(x), b.aval(x).shape
    # Limits that move with a dynamic size reach the end of their axis; a limit that
    # does not move is a number (x[:4] stays 4 rows, even when the example has 4).
    moving = b.moves("limit_indices")
    axes, starts, ends, steps = [], [], [], []
    symbolic_limits_full = True
    for k, (s, e, st) in enumerate(zip(start_indices, limit_indices, strides)):
        symbolic = b.is_symbolic(dims[k]) and moving
        if s == 0 and e == shape[k] and st == 1 and (symbolic or not b.is_symbolic(dims[k])):
            continue            # the whole axis: whatever its size at run time
        if symbolic and e == shape[k]:
            e = INT64_MAX       # up to the end, whatever the size
        elif symbolic:
            symbolic_limits_full = False
        axes.append(k)
        starts.append(s)
        ends.append(e)
        steps.append(st)
    if symbolic_limits_full:
        b.cover("limit_indices")
    if not axes:
        return b.op("Identity", x)
    return b.op("Slice", x, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps))


def concatenate(b, *xs, dimension):
    return b.op("Concat", *xs, axis=int(dimension))


def pad(b, x, padding_value, padding_config):
    if any(interior for _, _, interior in padding_config):
        b.fail("interior (dilating) padding has no ONNX Pad form")
    lo = [int(p[0]) for p in padding_config]
    hi = [int(p[1]) for p in padding_config]
    return b.op("Pad", x, b.ints(lo + hi), padding_value, mode="constant")


def iota(b, dtype, shape, dimension):
    n = b.op("Squeeze", b.size(b.out_dims()[dimension]), b.ints([0]))
    if np.dtype(dtype) in (np.float32, np.float64, np.int16, np.int32, np.int64):
        r = b.op("Range", b.scalar(0, dtype), b.cast(n, dtype), b.scalar(1, dtype))
    else:
        r = b.cast(b.op("Range", b.scalar(0, np.int64), n, b.scalar(1, np.int64)), dtype)
    ones = [i for i in range(len(shape)) if i != dimension]
    if ones:
        r = b.op("Unsqueeze", r, b.ints(ones))
    return b.op("Expand", r, b.out_shape(covers=("shape",)))


# --------------------------------------------------------------------------- reductions

def reduction(op_type):
    def rule(b, x, axes):
        return b.reduce(op_type, x, axes)
    rule.__name__ = op_type
    return rule


def arg_reduction(op_type):
    def rule(b, x, axis, index_dtype):
        found = b.op(op_type, x, axis=int(axis), keepdims=0)
        if is_float(b, x):     # numpy: the first NaN wins
            nan = b.op("IsNaN", x)
            first_nan = b.op("ArgMax", b.cast(nan, np.int32), axis=int(axis), keepdims=0)
            any_nan = b.op("ReduceMax", b.cast(nan, np.int32), b.ints([axis]), keepdims=0)
            found = b.op("Where", b.cast(any_nan, np.bool_), first_nan, found)
        return b.cast(found, index_dtype)
    rule.__name__ = op_type
    return rule


def cumsum(b, x, axis, reverse):
    return b.op("CumSum", x, b.const(np.int64(axis)), reverse=int(bool(reverse)))


def cumulative(combine, identity):
    """cumprod/cummax/cummin by doubling (Hillis-Steele): log2(n) rounds of combining
    each entry with the one `shift` before it, over an axis of static length."""
    def rule(b, x, axis, reverse):
        if b.is_symbolic(b.dims_of(x)[axis]):
            b.fail("a cumulative product/extremum along a dynamic axis")
        n = b.aval(x).shape[axis]
        y = rev(b, x, (axis,)) if reverse else x
        fill = b.scalar(identity(b.dtype(x)), b.dtype(x))
        shift = 1
        while shift < n:
            pads = [0] * (2 * b.aval(x).ndim)
            pads[axis] = shift
            moved = b.op("Pad", y, b.ints(pads), fill, mode="constant")
            moved = b.op("Slice", moved, b.ints([0]), b.ints([n]), b.ints([axis]))
            y = combine(b, y, moved, b.dtype(x))
            shift *= 2
        return rev(b, y, (axis,)) if reverse else y
    return rule


def _lowest(dtype):
    return -np.inf if kind_of(dtype) == "f" else np.iinfo(dtype).min if dtype.kind in "iu" \
        else False


def _highest(dtype):
    return np.inf if kind_of(dtype) == "f" else np.iinfo(dtype).max if dtype.kind in "iu" \
        else True


def _combine(op_type):
    def combine(b, y, earlier, dtype):
        if op_type == "Mul":
            return b.op("Mul", earlier, y)
        # numpy's accumulate computes maximum(earlier, y): the same tie and NaN rule
        return _pick(b, earlier, y, "Greater" if op_type == "Max" else "Less", dtype)
    return combine


cumprod = cumulative(_combine("Mul"), lambda dtype: 1)
cummax = cumulative(_combine("Max"), _lowest)
cummin = cumulative(_combine("Min"), _highest)


def unsupported(why):
    """The rule of a primitive ONNX cannot express: export raises, saying why."""
    def rule(b, *args, **params):
        b.fail(why)
    return rule
