"""bfloat16 and float16 end to end: the bit-level codecs the generated kernels use,
every primitive family eager and under jit against float32 computed by numpy and
rounded once, special values (NaN, inf, -0.0, overflow), derivatives, and the
float32 accumulation of reductions and matrix products.

The promotion table against JAX's is in test_dtypes.py (bfloat16 is one of its
dtypes); fnad.amp is tested in test_amp.py."""
import ml_dtypes
import numpy as np
import pytest

import fnad
import fnad.nn
import fnad.numpy as fnp
from fnad import lax
from fnad.kernels.cpu import half

BF16, F16, F32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)
LOW = [BF16, F16]


def eps(dtype):
    return float(ml_dtypes.finfo(dtype).eps)


# --------------------------------------------------------------------------- codecs

def _float32_specials():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    # ties (lower 16 bits exactly 0x8000, kept part even and odd), around the largest
    # finite bfloat16, subnormals, zeros, infinities and NaNs of both signs
    ties = (rng.integers(0, 2 ** 16, 200).astype(np.uint32) << 16) | 0x8000
    edges = np.array([0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0x7f800000, 0xff800000,
                      0x7fc00000, 0xffc00001, 0x7f800001, 0x00000001, 0x00008000,
                      0x00018000, 0x80000000, 0x00000000, 0x3f808000, 0x3f818000],
                     np.uint32)
    return np.concatenate([bits, ties, edges]).view(np.float32)


def test_bfloat16_encoding_rounds_to_nearest_even_like_ml_dtypes():
    x = _float32_specials()
    got = np.array([half.bfloat16_to_bits(v) for v in x], np.uint16)
    with np.errstate(invalid="ignore"):
        want = x.astype(BF16).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    # NaN stays NaN (quiet), with its sign
    decoded = got[nan].view(BF16).astype(np.float32)
    assert np.isnan(decoded).all()
    assert np.array_equal(np.signbit(decoded), np.signbit(x[nan]))


def test_bfloat16_decoding_is_exact():
    bits = np.arange(2 ** 16, dtype=np.uint16)
    want = bits.view(BF16).astype(np.float32)
    got = np.array([half.bfloat16_to_float(b) for b in bits[::7]], np.float32)
    want = want[::7]
    nan = np.isnan(want)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    # a NaN decodes to a NaN of the same sign (converters may set the quiet bit)
    assert np.isnan(got[nan]).all() and np.array_equal(np.signbit(got[nan]),
                                                       np.signbit(want[nan]))


def test_float64_rounds_once_to_bfloat16():
    # 1 + 2**-8 + 2**-30: through float32 it would become the tie 1 + 2**-8 and round
    # to even (1.0); rounded once it is above the tie: 1 + 2**-7.
    x = 1 + 2.0 ** -8 + 2.0 ** -30
    assert float(half.bfloat16_round(np.float64(x))) == 1 + 2.0 ** -7
    assert float(half.bfloat16_round(np.float64(-x))) == -(1 + 2.0 ** -7)
    # the largest finite value and the overflow threshold
    top = float(ml_dtypes.finfo(BF16).max)
    assert float(half.bfloat16_round(np.float64(top))) == top
    assert float(half.bfloat16_round(np.float64(2.0 ** 128 * (1 - 2.0 ** -9)))) == np.inf
    f = fnad.jit(lambda v: v.astype(BF16))
    assert float(np.asarray(f(np.array([x]))).astype(np.float64)[0]) == 1 + 2.0 ** -7


# --------------------------------------------------------------------------- primitives

rng = np.random.default_rng(1)
X = rng.standard_normal((3, 4)).astype(np.float32)
Y = rng.standard_normal((3, 4)).astype(np.float32)
POS = np.abs(X) + 0.5

UNARY = ["exp", "log", "sin", "cos", "tanh", "sqrt", "abs", "negative", "floor", "ceil",
         "sign", "expm1", "log1p", "square", "reciprocal", "arctan", "sinh", "arcsinh",
         "rint", "cbrt", "isfinite"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "arctan2",
          "hypot", "fmod", "copysign", "greater", "equal", "nextafter"]
REDUCTIONS = ["sum", "max", "min", "mean", "prod", "argmax", "cumsum"]


def _cases():
    for n in UNARY:
        yield n, getattr(fnp, n), getattr(np, n), (POS if n in ("log", "sqrt") else X,)
    for n in BINARY:
        if n == "nextafter":
            continue
        yield n, getattr(fnp, n), getattr(np, n), (POS if n == "power" else X, Y)
    for n in REDUCTIONS:
        yield n, getattr(fnp, n), getattr(np, n), (X,)
    yield "sum axis 0", lambda a: fnp.sum(a, 0), lambda a: np.sum(a, 0), (X,)
    yield "matmul", fnp.matmul, np.matmul, (X, Y.T)
    yield "where", lambda a, b: fnp.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b), \
        (X, Y)
    # several operations: each rounds to the 16-bit dtype, as numpy's ufuncs on
    # 16-bit arrays do (PER_OP below), also inside one fused loop
    yield "fused chain", lambda a, b: fnp.tanh(a * b + 1.5) * 3 - b, \
        lambda a, b: np.tanh(a * b + np.float32(1.5).astype(a.dtype)) * a.dtype.type(3) - b, \
        (X, Y)
    yield "transpose", lambda a: a.T * 2, lambda a: a.T * 2, (X,)
    yield "slice", lambda a: a[1:, ::2] + 1, lambda a: a[1:, ::2] + 1, (X,)
    yield "gather", lambda a: a[np.array([2, 0])], lambda a: a[np.array([2, 0])], (X,)
    yield "concatenate", lambda a, b: fnp.concatenate([a, b]), \
        lambda a, b: np.concatenate([a, b]), (X, Y)
    yield "sort", fnp.sort, np.sort, (X,)
    yield "softmax", fnad.nn.softmax, \
        lambda a: np.exp(a - a.max(-1, keepdims=True)) / np.exp(
            a - a.max(-1, keepdims=True)).sum(-1, keepdims=True), (X,)
    yield "relu", fnad.nn.relu, lambda a: np.maximum(a, 0), (X,)
    yield "to float32", lambda a: a.astype(F32), lambda a: a, (X,)
    yield "conv", lambda a, b: lax.conv(a[None, None], b[None, None, :2, :2], (1, 1), "VALID"), \
        lambda a, b: np.array([[[[np.sum(a[i:i + 2, j:j + 2] * b[:2, :2]) for j in range(3)]
                                 for i in range(2)]]]), (X, Y)


CASES = list(_cases())
PER_OP = {"fused chain"}


def _reference(name, numpy_fn, args, dtype):
    """float32 numpy on the (already rounded) 16-bit inputs, rounded once to dtype
    (for PER_OP cases: numpy's own ufuncs on the 16-bit arrays, one rounding per
    operation)."""
    if name in PER_OP:
        return np.asarray(numpy_fn(*args))
    out = np.asarray(numpy_fn(*[a.astype(np.float32) for a in args]))
    return out.astype(dtype) if out.dtype == F32 else out


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name,fn,numpy_fn,args", CASES, ids=[c[0] for c in CASES])
def test_primitive_in_16_bit_float_eager_and_jit(name, fn, numpy_fn, args, dtype):
    args = [a.astype(dtype) for a in args]
    want = _reference(name, numpy_fn, args, dtype)
    if name == "to float32":
        want = args[0].astype(np.float32)
    jitted = fnad.jit(fn)
    for mode, f in [("eager", fn), ("jit first call", jitted), ("jit compiled", jitted)]:
        # fnad Arrays in: numpy's own operators would otherwise run first on numpy
        # bfloat16 arrays (and ml_dtypes promotes bfloat16 + 1.5 to float32)
        got = np.asarray(f(*[fnp.asarray(a) for a in args]))
        if want.dtype.kind in "iu":       # indices: fnad's default int, as in JAX
            assert got.dtype == fnad.dtypes.default_int() and np.array_equal(got, want)
            continue
        assert got.dtype == want.dtype, (mode, got.dtype, want.dtype)
        if got.dtype.kind == "b":
            assert np.array_equal(got, want), mode
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        # one unit in the last place of the 16-bit result (float32 libm and numpy's
        # SIMD functions may differ in the last float32 bit, which can move a rounding)
        tol = eps(dtype) * np.maximum(np.abs(w), 1e-3 if name not in ("sum", "mean",
                                                                      "matmul", "conv")
                                      else np.sum(np.abs(args[0].astype(np.float64))))
        assert np.all((np.abs(g - w) <= tol) | (np.isnan(g) & np.isnan(w))), (mode, g, w)


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_special_values_survive_jit(dtype):
    big = float(ml_dtypes.finfo(dtype).max)
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, big, -big, 1.0], dtype)

    def f(v):
        return v * 2, fnp.negative(v), v + 0.0, fnp.sqrt(v), fnp.maximum(v, 0)
    eager = [np.asarray(o) for o in f(fnp.asarray(x))]
    f = fnad.jit(f)
    f(x)
    for mode_out in (f(x), f(x)):
        for e, j in zip(eager, mode_out):
            j = np.asarray(j)
            assert j.dtype == dtype
            # bit for bit: NaN, the signs of zeros, and overflow to inf all agree
            ok = (e.view(np.uint16) == j.view(np.uint16)) | (np.isnan(e.astype(np.float32))
                                                             & np.isnan(j.astype(np.float32)))
            assert ok.all(), (e, j)
    doubled = np.asarray(f(x)[0]).astype(np.float32)
    assert doubled[5] == np.inf and doubled[6] == -np.inf
    assert np.signbit(np.asarray(f(x)[1]).astype(np.float32)[4])


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_reductions_and_products_accumulate_wider(dtype):
    # 4096 ones: a 16-bit running sum would stop at 256 (bfloat16) or 2048 (float16)
    ones = np.ones(4096, dtype)
    for f in (fnp.sum, fnad.jit(fnp.sum)):
        assert float(np.asarray(f(ones)).astype(np.float32)) == 4096
    a = np.ones((1, 4096), dtype)
    for f in (fnp.matmul, fnad.jit(fnp.matmul)):
        assert float(np.asarray(f(a, a.T)).astype(np.float32)[0, 0]) == 4096
    assert float(np.asarray(fnp.mean(ones)).astype(np.float32)) == 1.0


def test_bfloat16_keeps_float32_range():
    # float16 would overflow to inf and flush to zero here; bfloat16 has float32's range
    x = np.array([1e30, 1e-30], BF16)
    y = np.asarray(fnad.jit(lambda v: v * np.asarray(1e5, BF16))(x)).astype(np.float64)
    want = (x.astype(np.float32) * np.float32(np.asarray(1e5, BF16))).astype(BF16)
    assert np.array_equal(y, want.astype(np.float64)) and np.all(np.isfinite(y) & (y > 0))


def test_finfo_knows_bfloat16_and_is_numpys_for_the_others():
    info = fnp.finfo(fnp.bfloat16)
    want = ml_dtypes.finfo(BF16)
    assert (info.bits, float(info.eps), float(info.max), float(info.tiny), info.nmant) == \
        (16, 2.0 ** -7, float(want.max), 2.0 ** -126, 7)
    for dtype in (np.float16, np.float32, np.float64):
        assert fnp.finfo(dtype) == np.finfo(dtype)


def test_bfloat16_with_float16_is_float32_and_python_scalars_are_weak():
    a, b = fnp.ones(3, BF16), fnp.ones(3, F16)
    assert (a + b).dtype == F32
    assert (a * 2.0).dtype == BF16 and (b * 2).dtype == F16
    assert (a + np.ones(3, np.int32)).dtype == BF16
    assert fnp.bfloat16 == BF16 and fnp.asarray(1.5, fnp.bfloat16).dtype == BF16
    assert fnp.finfo(fnp.bfloat16).bits == 16


# --------------------------------------------------------------------------- derivatives

def _mlp(params, x):
    (w1, b1), (w2, b2) = params
    h = fnp.tanh(x @ w1 + b1)
    return fnp.mean((h @ w2 + b2) ** 2)


def test_grad_of_bfloat16_mlp_matches_float32():
    r = np.random.default_rng(2)
    params = [(r.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)),
              (r.standard_normal((16, 4)).astype(np.float32) * 0.3, np.zeros(4, np.float32))]
    x = r.standard_normal((32, 8)).astype(np.float32)
    want = fnad.grad(_mlp)(params, x)
    low = fnad.tree_util.tree_map(lambda p: fnp.asarray(p).astype(BF16), params)
    for g in (fnad.grad(_mlp), fnad.jit(fnad.grad(_mlp))):
        got = g(low, x.astype(BF16))
        for a, b in zip(fnad.tree_util.tree_leaves(got), fnad.tree_util.tree_leaves(want)):
            assert a.dtype == BF16
            a, b = np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)
            # rounding inputs, activations and products to 8 bits: a few bf16 ulps of
            # the gradient's scale
            assert np.max(np.abs(a - b)) <= 8 * eps(BF16) * np.max(np.abs(b))


def test_grad_through_a_cast_to_bfloat16_is_not_dropped():
    f = lambda w: fnp.sum((w.astype(BF16) * fnp.asarray(3.0, BF16)).astype(np.float32))
    for g in (fnad.grad(f), fnad.jit(fnad.grad(f))):
        out = g(np.ones(3, np.float32))
        assert out.dtype == F32 and np.array_equal(np.asarray(out), [3, 3, 3])
    assert np.array_equal(np.asarray(fnad.vmap(fnad.grad(f))(np.ones((2, 3), np.float32))),
                          np.full((2, 3), 3.0))

