"""ONNX lowerings: the `onnx=` rule of every primitive that has one, by family.

A rule is ``rule(b, *inputs, **params) -> output name (a list for several)``: `b` is
the builder of fnad.onnx (passed in at export time, so this module never imports
onnx), `inputs` the ONNX names of the operands. Each rule keeps numpy's semantics
where ONNX's operator differs (NaN through max/min, the sign of a remainder, rounding
halves away from zero), so the exported model computes what fnad computes.
"""
import numpy as np

INT64_MAX = np.iinfo(np.int64).max


def node(op_type, **attrs):
    """The rule of a primitive that is one ONNX operator."""
    def rule(b, *xs, **params):
        return b.op(op_type, *xs, **attrs)
    rule.__name__ = op_type
    return rule


def _is_float(b, x):
    return b.dtype(x).kind == "f"


# --------------------------------------------------------------------------- elementwise

def _nan_through(b, out, *xs):
    """numpy's maximum/minimum/sign give NaN for a NaN operand; ONNX leaves it open."""
    for x in reversed(xs):
        if _is_float(b, x):
            out = b.op("Where", b.op("IsNaN", x), x, out)
    return out


def _pick(b, x, y, compare, dtype):
    """numpy's maximum/minimum exactly: x where x is NaN or x `compare` y, else y (so
    NaN wins and maximum(0.0, -0.0) is -0.0, as numpy's kernels give)."""
    take = b.op(compare, x, y)
    if np.dtype(dtype).kind == "f":
        take = b.op("Or", b.op("IsNaN", x), take)
    return b.op("Where", take, x, y)


def maximum(b, x, y):
    return _pick(b, x, y, "Greater", b.dtype(x))


def minimum(b, x, y):
    return _pick(b, x, y, "Less", b.dtype(x))


def clamp(b, lo, x, hi):
    return _pick(b, _pick(b, x, lo, "Greater", b.dtype(x)), hi, "Less", b.dtype(x))


def sign(b, x):
    return _nan_through(b, b.op("Sign", x), x)


def log1p(b, x):
    return b.op("Log", b.op("Add", x, b.scalar_like(1, x)))


def expm1(b, x):
    return b.op("Sub", b.op("Exp", x), b.scalar_like(1, x))


def rsqrt(b, x):
    return b.op("Reciprocal", b.op("Sqrt", x))


def cbrt(b, x):
    return b.op("Mul", b.op("Sign", x),
                b.op("Pow", b.op("Abs", x), b.scalar_like(1 / 3, x)))


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
    return b.op("Sqrt", b.op("Add", b.op("Mul", x, x), b.op("Mul", y, y)))


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
    if y < 0 and not _is_float(b, x):
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
    if not _is_float(b, x):
        return b.op("Mod", x, y, fmod=0)
    r = b.op("Mod", x, y, fmod=1)
    zero = b.scalar_like(0, x)
    fix = b.op("And", b.op("Not", b.op("Equal", r, zero)),
               b.op("Xor", b.op("Less", r, zero), b.op("Less", y, zero)))
    return b.op("Where", fix, b.op("Add", r, y), r)


def floor_divide(b, x, y):
    if _is_float(b, x):
        return b.op("Floor", b.op("Div", x, y))
    q = b.op("Div", x, y)
    zero = b.scalar_like(0, x)
    inexact = b.op("Not", b.op("Equal", b.op("Mod", x, y, fmod=1), zero))
    signs = b.op("Xor", b.op("Less", x, zero), b.op("Less", y, zero))
    return b.op("Sub", q, b.cast(b.op("And", inexact, signs), b.dtype(x)))


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
    axes, starts, ends, steps = [], [], [], []
    symbolic_limits_full = True
    for k, (s, e, st) in enumerate(zip(start_indices, limit_indices, strides)):
        symbolic = b.is_symbolic(dims[k])
        if s == 0 and e == shape[k] and st == 1:
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
        if _is_float(b, x):     # numpy: the first NaN wins
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
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min if dtype.kind in "iu" \
        else False


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max if dtype.kind in "iu" \
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


# --------------------------------------------------------------------------- dot, conv

def dot_general(b, lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    nl, nr = b.aval(lhs).ndim, b.aval(rhs).ndim
    nb = len(lb)
    leading = tuple(range(nb))
    if tuple(lb) == leading and tuple(rb) == leading and len(lc) == 1 and \
            lc[0] == nl - 1 and nl >= nb + 1 and nr in (nb + 1, nb + 2) and \
            rc[0] == nb and (nb == 0 or nl == nb + 2):
        return b.op("MatMul", lhs, rhs)
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lsub = [None] * nl
    rsub = [None] * nr
    batch = []
    for i, j in zip(lb, rb):
        lsub[i] = rsub[j] = next(letters)
        batch.append(lsub[i])
    for i, j in zip(lc, rc):
        lsub[i] = rsub[j] = next(letters)
    lfree = [lsub.__setitem__(i, next(letters)) or lsub[i]
             for i in range(nl) if lsub[i] is None]
    rfree = [rsub.__setitem__(i, next(letters)) or rsub[i]
             for i in range(nr) if rsub[i] is None]
    eq = f"{''.join(lsub)},{''.join(rsub)}->{''.join(batch + lfree + rfree)}"
    return b.op("Einsum", lhs, rhs, equation=eq)


def conv_general_dilated(b, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                         feature_group_count, **params):
    if any(d != 1 for d in lhs_dilation):
        b.fail("a convolution with lhs_dilation (a transposed convolution) has no lowering")
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        b.fail(f"negative convolution padding {padding} has no ONNX Conv form")
    return b.op("Conv", lhs, rhs, strides=list(window_strides),
                pads=[lo for lo, _ in padding] + [hi for _, hi in padding],
                dilations=list(rhs_dilation), group=int(feature_group_count))


def _pool(b, x, window_dimensions, window_strides, padding, pool):
    """Pool over the axes with a window: the others (window 1, stride 1, no padding)
    become ONNX's N and C, moved in front by a transpose."""
    n = len(window_dimensions)
    plain = [k for k in range(n) if window_dimensions[k] == 1 and window_strides[k] == 1
             and tuple(padding[k]) == (0, 0)]
    spatial = [k for k in range(n) if k not in plain]
    if not spatial:
        return b.op("Identity", x)
    if len(plain) > 2:
        b.fail(f"a window over {n} axes with {len(plain)} unwindowed ones (ONNX pools "
               f"take at most a batch and a channel axis)")
    extra = 2 - len(plain)
    perm = plain + spatial
    y = b.op("Transpose", x, perm=perm) if perm != list(range(n)) else x
    if extra:
        y = b.op("Unsqueeze", y, b.ints(list(range(extra))))
    y = pool(y, kernel_shape=[window_dimensions[k] for k in spatial],
             strides=[window_strides[k] for k in spatial],
             pads=[padding[k][0] for k in spatial] + [padding[k][1] for k in spatial])
    if extra:
        y = b.op("Squeeze", y, b.ints(list(range(extra))))
    inverse = list(np.argsort(perm))
    return b.op("Transpose", y, perm=inverse) if perm != list(range(n)) else y


def reduce_window_max(b, x, window_dimensions, window_strides, padding):
    if not _is_float(b, x):
        b.fail("MaxPool takes floating-point values only")
    return _pool(b, x, window_dimensions, window_strides, padding,
                 lambda y, **a: b.op("MaxPool", y, **a))


def reduce_window_min(b, x, window_dimensions, window_strides, padding):
    if not _is_float(b, x):
        b.fail("MaxPool takes floating-point values only")
    return b.op("Neg", _pool(b, b.op("Neg", x), window_dimensions, window_strides, padding,
                             lambda y, **a: b.op("MaxPool", y, **a)))


def reduce_window_sum(b, x, window_dimensions, window_strides, padding):
    if not _is_float(b, x):
        b.fail("AveragePool takes floating-point values only")
    size = int(np.prod([d for d in window_dimensions]))
    avg = _pool(b, x, window_dimensions, window_strides, padding,
                lambda y, **a: b.op("AveragePool", y, count_include_pad=1, **a))
    return b.op("Mul", avg, b.scalar_like(size, x))


# --------------------------------------------------------------------------- sort, index

def sort(b, *operands, dimension, num_keys):
    if num_keys != 1:
        b.fail("sorting by more than one key has no ONNX form (TopK takes one)")
    k = b.size(b.dims_of(operands[0])[dimension])
    values, perm = b.op("TopK", operands[0], k, axis=int(dimension), largest=0, sorted=1,
                        outputs=2)
    return [values] + [b.op("GatherElements", x, perm, axis=int(dimension))
                       for x in operands[1:]]


def _index_rows(b, operand, indices, mode):
    """GatherND/ScatterND indices with numpy's negatives and fnad's `mode` applied:
    (int64 indices inside the operand, a boolean mask of the in-range rows or None)."""
    k = b.aval(indices).shape[-1]
    idx = b.cast(indices, np.int64)
    sizes = b.op("Shape", operand, start=0, end=k)
    zero = b.const(np.int64(0))
    idx = b.op("Where", b.op("Less", idx, zero), b.op("Add", idx, sizes), idx)
    inside = None
    if mode == "fill":
        ok = b.op("And", b.op("GreaterOrEqual", idx, zero), b.op("Less", idx, sizes))
        inside = b.op("ReduceMin", b.cast(ok, np.int32), b.ints([-1]), keepdims=0)
        inside = b.cast(inside, np.bool_)
    idx = b.op("Max", b.op("Min", idx, b.op("Sub", sizes, b.const(np.int64(1)))), zero)
    return idx, inside


def _rows_mask(b, inside, indices, like_rank):
    """The in-range mask of the index rows, with an axis per trailing value axis."""
    extra = like_rank - (b.aval(indices).ndim - 1)
    return b.op("Unsqueeze", inside, b.ints([-1 - i for i in range(extra)])) if extra else inside


def gather(b, operand, indices, mode):
    idx, inside = _index_rows(b, operand, indices, mode)
    out = b.op("GatherND", operand, idx)
    if inside is not None:
        out = b.op("Where", _rows_mask(b, inside, indices, b.out_avals[0].ndim), out,
                   b.scalar(0, b.out_avals[0].dtype))
    return out


def scatter(name):
    """scatter_<op> as ScatterND with that reduction. A "fill" scatter drops the updates
    of out-of-range rows: they become the reduction's identity at a clamped row (a
    replacing scatter has none, so that combination has no lowering)."""
    reduction = {"scatter": "none", "scatter_add": "add", "scatter_mul": "mul",
                 "scatter_min": "min", "scatter_max": "max"}[name]

    def rule(b, operand, indices, updates, mode, unique_indices=False):
        idx, inside = _index_rows(b, operand, indices, mode)
        if inside is not None:
            if reduction == "none":
                b.fail('a replacing scatter with mode="fill" (out-of-range rows dropped)')
            dtype = b.dtype(updates)
            neutral = {"add": 0, "mul": 1}.get(reduction)
            if neutral is None:
                info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
                neutral = info.max if reduction == "min" else info.min
                if dtype.kind == "f":
                    neutral = np.inf if reduction == "min" else -np.inf
            updates = b.op("Where", _rows_mask(b, inside, indices, b.aval(updates).ndim),
                           updates, b.scalar(neutral, dtype))
        if reduction in ("min", "max") and b.opset < 18:
            b.fail(f"ScatterND with reduction {reduction!r} needs opset 18 or later")
        return b.op("ScatterND", operand, idx, updates,
                    reduction=None if reduction == "none" else reduction)
    rule.__name__ = name
    return rule


def select_and_scatter_add(b, source, x, window_dimensions, window_strides, padding,
                           largest=True):
    """The max pool's transpose: each window's value of `source` is added where the
    window's extremum sits. MaxPool's second output gives those places as flat indices
    into its (N, C, spatial) input, so ScatterElements adds `source` there."""
    if not _is_float(b, x):
        b.fail("MaxPool takes floating-point values only")
    spots = []
    values = x if largest else b.op("Neg", x)

    def pool_with_indices(y, **attrs):
        out, where = b.op("MaxPool", y, outputs=2, **attrs)
        spots.append((y, where))
        return out

    # Run the pool for its indices in the layout _pool chooses, then scatter there.
    _pool(b, values, window_dimensions, window_strides, padding, pool_with_indices)
    if not spots:
        return b.op("Identity", source)
    pooled_input, where = spots[0]
    n = len(window_dimensions)
    plain = [k for k in range(n) if window_dimensions[k] == 1 and window_strides[k] == 1
             and tuple(padding[k]) == (0, 0)]
    spatial = [k for k in range(n) if k not in plain]
    perm = plain + spatial
    g = b.op("Transpose", source, perm=perm) if perm != list(range(n)) else source
    extra = 2 - len(plain)
    if extra:
        g = b.op("Unsqueeze", g, b.ints(list(range(extra))))
    flat = b.ints([-1])
    zeros = b.op("Reshape", b.op("ConstantOfShape", b.op("Shape", pooled_input),
                                 value=b.tensor(np.zeros(1, b.dtype(x)))), flat)
    summed = b.op("ScatterElements", zeros, b.op("Reshape", where, flat),
                  b.op("Reshape", g, flat), axis=0, reduction="add")
    y = b.op("Reshape", summed, b.op("Shape", pooled_input))
    if extra:
        y = b.op("Squeeze", y, b.ints(list(range(extra))))
    return b.op("Transpose", y, perm=[int(i) for i in np.argsort(perm)]) \
        if perm != list(range(n)) else y


def select_and_scatter_add_min(b, source, x, **params):
    return select_and_scatter_add(b, source, x, largest=False, **params)


def _clamped_starts(b, operand, starts, sizes):
    """dynamic_slice's starts: negatives from the end, then shifted to fit `sizes`."""
    begin = b.op("Concat", *[b.op("Unsqueeze", b.cast(s, np.int64), b.ints([0]))
                             for s in starts], axis=0)
    shape = b.op("Shape", operand)
    zero = b.const(np.int64(0))
    begin = b.op("Where", b.op("Less", begin, zero), b.op("Add", begin, shape), begin)
    return b.op("Max", b.op("Min", begin, b.op("Sub", shape, sizes)), zero), shape


def dynamic_update_slice(b, operand, update, *starts):
    """The update padded out to the operand's shape, chosen where a padded mask is set."""
    sizes = b.op("Shape", update)
    begin, shape = _clamped_starts(b, operand, starts, sizes)
    pads = b.op("Concat", begin, b.op("Sub", b.op("Sub", shape, begin), sizes), axis=0)
    placed = b.op("Pad", update, pads, mode="constant")
    ones = b.op("ConstantOfShape", sizes, value=b.tensor(np.ones(1, np.bool_)))
    mask = b.op("Pad", ones, pads, b.const(np.bool_(False)), mode="constant")
    return b.op("Where", mask, placed, operand)


def dynamic_slice(b, operand, *starts, slice_sizes):
    width = b.ints(slice_sizes)
    begin, _ = _clamped_starts(b, operand, starts, width)
    return b.op("Slice", operand, begin, b.op("Add", begin, width),
                b.ints(list(range(len(starts)))))


def unsupported(why):
    """The rule of a primitive ONNX cannot express: export raises, saying why."""
    def rule(b, *args, **params):
        b.fail(why)
    return rule


# --------------------------------------------------------------------------- calls, control

def jit_call(b, *args, program):
    return b.lower(program, list(args))


def custom_call(b, *args, rules, program):
    consts = [b.const(np.asarray(c)) for c in program.consts]
    return b.lower(program.program, consts + list(args))


def cond(b, index, *operands, branches):
    index = b.cast(index, np.int64)

    def branch(k):
        return b.graph(f"branch{k}", [], lambda sub: sub.typed(
            branches[k], sub.lower(branches[k], list(operands))))

    def chain(k):
        # Index k or below (clamped, as lax.switch) takes branch k, else the rest.
        if k == len(branches) - 1:
            return branch(k)
        return b.graph(f"switch{k}", [], lambda sub: sub.typed(branches[k], sub.op(
            "If", sub.op("LessOrEqual", index, sub.const(np.int64(k))),
            then_branch=branch(k), else_branch=chain(k + 1),
            outputs=len(branches[k].outputs), as_list=True)))

    if len(branches) == 1:
        return b.lower(branches[0], list(operands))
    return b.op("If", b.op("LessOrEqual", index, b.const(np.int64(0))),
                then_branch=branch(0), else_branch=chain(1),
                outputs=len(branches[0].outputs), as_list=True)


def _loop_inputs(b, carry_avals):
    it = (b.fresh("iter"), np.dtype(np.int64), ())
    keep = (b.fresh("cond"), np.dtype(np.bool_), ())
    carried = [(b.fresh("carry"), dt, dims) for dt, dims in carry_avals]
    return it, keep, carried


def while_(b, *args, cond, body, cond_nconsts, body_nconsts):
    cc, bc = list(args[:cond_nconsts]), list(args[cond_nconsts:cond_nconsts + body_nconsts])
    carry = list(args[cond_nconsts + body_nconsts:])
    first = b.lower(cond, cc + carry)[0]
    kinds = [(b.dtype(c), b.dims_of(c)) for c in carry]
    it, keep, carried = _loop_inputs(b, kinds)

    def build(sub):
        new = sub.lower(body, bc + [n for n, _, _ in carried])
        go = sub.lower(cond, cc + new)[0]
        return [(go, np.dtype(np.bool_), ())] + sub.typed(body, new)

    graph = b.graph("while_body", [it, keep] + carried, build)
    return b.op("Loop", None, first, *carry, body=graph, outputs=len(carry), as_list=True)


def scan(b, *args, body, num_consts, num_carry, length, reverse):
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = list(args[num_consts + num_carry:])
    b.cover("length")
    if xs:
        trips = b.op("Squeeze", b.op("Shape", xs[0], start=0, end=1), b.ints([0]))
    else:
        trips = b.const(np.int64(length))
    kinds = [(b.dtype(c), b.dims_of(c)) for c in carry]
    it, keep, carried = _loop_inputs(b, kinds)

    def build(sub):
        i = it[0]
        if reverse:
            i = sub.op("Sub", sub.op("Sub", trips, sub.const(np.int64(1))), i)
        slices = [sub.op("Gather", x, i, axis=0) for x in xs]
        outs = sub.lower(body, consts + [n for n, _, _ in carried] + slices)
        return [(sub.op("Identity", keep[0]), np.dtype(np.bool_), ())] + sub.typed(body, outs)

    graph = b.graph("scan_body", [it, keep] + carried, build)
    outs = b.op("Loop", trips, None, *carry, body=graph, outputs=len(body.outputs),
                as_list=True)
    ys = outs[num_carry:]
    if reverse:
        ys = [rev(b, y, (0,)) for y in ys]
    return outs[:num_carry] + ys
