"""fnad.numpy, fnad.scipy.special and fnad.nn against numpy and hand-written references."""
import math

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.scipy.special import logsumexp
from fnad.test_util import check_grads

rng = np.random.default_rng(0)


def randn(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def assert_same(actual, expected, rtol=1e-12, atol=1e-12, dtype=True):
    """fnad result equals numpy's: shape, dtype and values."""
    expected = np.asarray(expected)
    assert isinstance(actual, fnad.Array), type(actual)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if dtype:
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- creation

def test_array_from_python_values():
    assert_same(fnp.array([1.0, 2.5]), np.array([1.0, 2.5], np.float32))
    assert_same(fnp.asarray([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
    assert_same(fnp.asarray(1.5), np.float32(1.5))
    assert_same(fnp.asarray(3), np.int32(3))
    assert_same(fnp.asarray(True), np.bool_(True))
    assert_same(fnp.asarray([True, False]), np.array([True, False]))
    assert_same(fnp.array([1, 2], dtype=np.float64), np.array([1.0, 2.0]))
    assert_same(fnp.asarray(2.0, dtype=fnp.float64), np.float64(2.0))


def test_array_from_sequences_of_numpy_values_keeps_their_dtype():
    # numpy values keep their dtype; Python scalars beside them are weak (as in JAX).
    assert_same(fnp.array([np.ones(2), np.zeros(2)]), np.array([np.ones(2), np.zeros(2)]))
    assert_same(fnp.array([np.float64(1.0), 2.0]), np.array([1.0, 2.0]))
    assert_same(fnp.array([[np.float64(1.0)], [2.0]]), np.array([[1.0], [2.0]]))
    assert_same(fnp.array([np.float32(1.0), 2.5]), np.array([1.0, 2.5], np.float32))
    # A weak float with an integer gives the default float (JAX's lattice).
    assert_same(fnp.array([np.int32(1), 2.5]), np.array([1.0, 2.5], np.float32))
    assert_same(fnp.array((np.int16(3), 4)), np.array([3, 4], np.int16))
    assert_same(fnp.array([np.ones(2, np.int64)]), np.ones((1, 2), np.int64))
    assert_same(fnp.array([fnp.ones(2, np.float64), np.zeros(2)]), np.array([[1.0, 1.0], [0, 0]]))


def test_array_from_numpy_keeps_dtype_and_copies():
    for dtype in (np.float64, np.float32, np.int32, np.int64, np.bool_):
        source = np.arange(6).reshape(2, 3).astype(dtype)
        assert_same(fnp.asarray(source), source)
    source = np.ones(3)
    a = fnp.array(source)
    source[0] = 7.0
    assert_same(a, np.ones(3))
    b = fnp.asarray(a)
    assert b is a
    assert_same(fnp.asarray(np.ones(3), dtype=np.float32), np.ones(3, np.float32))


@pytest.mark.parametrize("name", ["zeros", "ones"])
def test_zeros_ones(name):
    ours, theirs = getattr(fnp, name), getattr(np, name)
    assert_same(ours(3), theirs(3, np.float32))       # JAX's default float
    assert_same(ours((2, 3)), theirs((2, 3), np.float32))
    assert_same(ours((2, 3), np.float64), theirs((2, 3)))
    assert_same(ours([2, 0], dtype=fnp.int32), theirs((2, 0), np.int32))
    assert_same(ours(()), theirs((), np.float32))


def test_full():
    assert_same(fnp.full((2, 3), 1.5), np.full((2, 3), 1.5, np.float32))
    assert_same(fnp.full(4, 7), np.full(4, 7, np.int32))
    assert_same(fnp.full((2, 2), 2.0, dtype=np.float64), np.full((2, 2), 2.0))
    assert_same(fnp.full((2, 3), np.float64(0.5)), np.full((2, 3), 0.5))
    assert_same(fnp.full((2, 3), fnp.asarray([1.0, 2.0, 3.0])),
                np.broadcast_to(np.float32([1, 2, 3]), (2, 3)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_like_functions(dtype):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    assert_same(fnp.zeros_like(x), np.zeros_like(x))
    assert_same(fnp.ones_like(x), np.ones_like(x))
    assert_same(fnp.full_like(x, 3), np.full_like(x, 3))
    assert_same(fnp.zeros_like(fnp.asarray(x)), np.zeros_like(x))
    assert_same(fnp.ones_like(x, dtype=np.float64), np.ones_like(x, np.float64))
    assert_same(fnp.full_like(x, 2, shape=(4,)), np.full_like(x, 2, shape=(4,)))


def test_arange():
    assert_same(fnp.arange(5), np.arange(5, dtype=np.int32))
    assert_same(fnp.arange(2, 9, 3), np.arange(2, 9, 3, dtype=np.int32))
    assert_same(fnp.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25, dtype=np.float32))
    assert_same(fnp.arange(5, 0, -2), np.arange(5, 0, -2, dtype=np.int32))
    assert_same(fnp.arange(4, dtype=np.float64), np.arange(4.0))


def test_linspace():
    assert_same(fnp.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=np.float32), rtol=1e-6)
    assert_same(fnp.linspace(-2, 3, 7, dtype=np.float64), np.linspace(-2, 3, 7))
    assert_same(fnp.linspace(0, 1, 4, endpoint=False, dtype=np.float64),
                np.linspace(0, 1, 4, endpoint=False))
    values, step = fnp.linspace(0, 2, 5, retstep=True)
    assert step == pytest.approx(0.5)
    assert_same(values, np.linspace(0, 2, 5, dtype=np.float32))


def test_eye_identity():
    assert_same(fnp.eye(3), np.eye(3, dtype=np.float32))
    assert_same(fnp.eye(3, 4, k=1, dtype=np.float64), np.eye(3, 4, k=1))
    assert_same(fnp.eye(4, 3, k=-2, dtype=np.int32), np.eye(4, 3, k=-2, dtype=np.int32))
    assert_same(fnp.identity(2, dtype=np.float64), np.identity(2))


# --------------------------------------------------------------------------- elementwise math

def _positive(*s):
    return rng.uniform(0.2, 3.0, s)


def _unit(*s):
    return rng.uniform(-0.9, 0.9, s)


def _halfway_free(*s):
    return rng.integers(-3, 3, s) + rng.uniform(0.1, 0.4, s) * rng.choice([-1, 1], s)


UNARY = {
    "exp": randn, "log": _positive, "log1p": _positive, "expm1": randn, "sqrt": _positive,
    "sin": randn, "cos": randn, "tan": _unit, "tanh": randn, "arcsin": _unit,
    "arccos": _unit, "arctan": randn, "sinh": randn, "cosh": randn, "arcsinh": randn,
    "arctanh": _unit, "abs": randn, "absolute": randn, "sign": randn, "floor": randn,
    "ceil": randn, "round": _halfway_free, "around": _halfway_free, "trunc": randn,
    "negative": randn, "positive": randn, "square": randn, "reciprocal": _positive,
    "cbrt": randn, "exp2": randn, "log2": _positive, "log10": _positive, "sinc": randn,
    "deg2rad": randn, "rad2deg": randn, "radians": randn, "degrees": randn,
    "isfinite": randn, "isnan": randn, "isinf": randn, "signbit": randn,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_matches_numpy(name):
    x = UNARY[name](3, 4)
    ours, theirs = getattr(fnp, name), getattr(np, name)
    assert_same(ours(x), theirs(x), rtol=1e-13)
    assert_same(ours(fnp.asarray(x[0, 0])), theirs(x[0, 0]), rtol=1e-13)
    x32 = x.astype(np.float32)
    assert_same(ours(x32), theirs(x32), rtol=2e-6, atol=1e-6)


def test_unary_math_on_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.5])
    with np.errstate(all="ignore"):
        for name in ("isfinite", "isnan", "isinf", "sign", "abs", "exp", "tanh", "sinc",
                     "floor", "trunc"):
            assert_same(getattr(fnp, name)(x), getattr(np, name)(x))


def test_signed_zeros_and_infinities_follow_numpy():
    z = np.array([-0.0, 0.0, -1.0, 2.0, -np.inf, np.inf])
    assert_same(fnp.signbit(z), np.signbit(z))
    assert_same(fnp.copysign(np.ones(6), z), np.copysign(np.ones(6), z))
    assert_same(fnp.heaviside(np.array([-1.0, 0.0, 2.0]), 0.5),
                np.heaviside(np.array([-1.0, 0.0, 2.0]), 0.5))
    assert not np.signbit(np.asarray(fnp.heaviside(np.array([-1.0]), 0.5))).any()
    x = np.array([-np.inf, np.inf, -np.inf, 1.0, 2.0])
    y = np.array([-np.inf, np.inf, 3.0, -np.inf, 2.0])
    with np.errstate(all="raise"):
        assert_same(fnp.logaddexp(x, y), np.logaddexp(x, y))
    assert_same(fnad.grad(lambda a: fnp.logaddexp(a, 1.0))(1.0), np.float32(0.5))


def test_integer_inputs_follow_numpy():
    i = np.arange(-3, 4, dtype=np.int32)
    assert_same(fnp.abs(i), np.abs(i))
    assert_same(fnp.negative(i), np.negative(i))
    assert_same(fnp.square(i), np.square(i))
    assert_same(fnp.floor(i), np.floor(i).astype(np.int32), dtype=False)
    # Integers compute in float32 (JAX's rule; numpy would use float64, float16).
    assert_same(fnp.exp(i), np.exp(i).astype(np.float32), rtol=1e-6)
    assert_same(fnp.sqrt(np.arange(4, dtype=np.int8)),
                np.sqrt(np.arange(4, dtype=np.int8).astype(np.float32)), rtol=1e-6)
    assert_same(fnp.sign(i), np.sign(i))


def _nonzero(*s):
    return rng.uniform(0.5, 2.0, s) * rng.choice([-1, 1], s)


BINARY = {
    "add": (randn, randn), "subtract": (randn, randn), "multiply": (randn, randn),
    "divide": (randn, _nonzero), "true_divide": (randn, _nonzero),
    "power": (_positive, randn), "maximum": (randn, randn), "minimum": (randn, randn),
    "arctan2": (randn, randn), "fmod": (randn, _nonzero), "remainder": (randn, _nonzero),
    "mod": (randn, _nonzero), "floor_divide": (randn, _nonzero), "hypot": (randn, randn),
    "logaddexp": (randn, randn), "copysign": (randn, randn), "heaviside": (randn, randn),
    "equal": (_halfway_free, _halfway_free), "not_equal": (randn, randn),
    "less": (randn, randn), "less_equal": (randn, randn), "greater": (randn, randn),
    "greater_equal": (randn, randn),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3)),
                                    ((2, 1, 4), (3, 1))])
def test_binary_math_broadcasts_like_numpy(name, shapes):
    make_x, make_y = BINARY[name]
    x, y = make_x(*shapes[0]), make_y(*shapes[1])
    ours, theirs = getattr(fnp, name), getattr(np, name)
    assert_same(ours(x, y), theirs(x, y), rtol=1e-13)
    assert_same(ours(fnp.asarray(x), fnp.asarray(y)), theirs(x, y), rtol=1e-13)


def test_integer_division_and_modulo_follow_numpy():
    a = np.array([7, -7, 7, -7, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    for name in ("floor_divide", "remainder", "fmod"):
        assert_same(getattr(fnp, name)(a, b), getattr(np, name)(a, b))
    # true division of int32 is float32 (JAX's rule)
    assert_same(fnp.true_divide(a, b), np.true_divide(a, b).astype(np.float32))
    q, r = fnp.divmod(a, b)
    assert_same(q, a // b)
    assert_same(r, a % b)
    x = fnp.asarray(a)
    assert_same(x // 2, a // 2)
    assert_same(x % 3, a % 3)
    assert_same(x ** 2, a ** 2)


def test_logical_and_bitwise():
    p, q = rng.random(6) < 0.5, rng.random(6) < 0.5
    for name in ("logical_and", "logical_or", "logical_xor"):
        assert_same(getattr(fnp, name)(p, q), getattr(np, name)(p, q))
    assert_same(fnp.logical_not(p), np.logical_not(p))
    i, j = rng.integers(-9, 9, 6).astype(np.int32), rng.integers(-9, 9, 6).astype(np.int32)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        assert_same(getattr(fnp, name)(i, j), getattr(np, name)(i, j))
    assert_same(fnp.invert(i), np.invert(i))
    x = fnp.asarray(i)
    assert_same(x & 3, i & 3)
    assert_same(~x, ~i)


def test_operators_match_numpy():
    a, b = randn(3, 4), _nonzero(4)
    x, y = fnp.asarray(a), fnp.asarray(b)
    assert_same(x + y, a + b)
    assert_same(2 - x, 2 - a)
    assert_same(x * 3.0, a * 3.0)
    assert_same(1 / y, 1 / b)
    assert_same(x / y, a / b)
    assert_same(-x, -a)
    assert_same(abs(x), abs(a))
    assert_same(x ** 3, a ** 3)
    assert_same(abs(y) ** 0.5, abs(b) ** 0.5)
    assert_same(2.0 ** x, 2.0 ** a)
    assert_same(x > y, a > b)
    assert_same(x == x, a == a)


# --------------------------------------------------------------------------- dtype rules

def test_dtype_rules():
    f64, f32 = np.ones(3), np.ones(3, np.float32)
    i32 = np.ones(3, np.int32)
    assert fnp.sin(f64).dtype == np.float64
    assert (fnp.asarray(f64) * 2.0).dtype == np.float64
    assert (fnp.asarray(f32) * 2.0).dtype == np.float32
    assert (2.0 * fnp.asarray(f32)).dtype == np.float32
    assert (fnp.asarray(f32) + 1).dtype == np.float32
    assert (fnp.asarray(i32) + 1).dtype == np.int32
    # JAX's lattice (docs/dtypes.md): an integer with a float gives that float.
    assert (fnp.asarray(i32) * 2.5).dtype == np.float32
    assert fnp.add(i32, f32).dtype == np.float32
    assert fnp.add(f32, f64).dtype == np.float64
    assert fnp.multiply(np.ones(2, np.int8), np.ones(2, np.int16)).dtype == np.int16
    assert fnp.divide(i32, i32).dtype == np.float32
    assert fnp.exp(f32).dtype == np.float32
    assert fnp.sum(i32).dtype == np.sum(i32).dtype
    assert fnp.mean(i32).dtype == np.float32
    assert fnp.mean(f32).dtype == np.float32
    assert fnp.asarray(1.5).dtype == np.float32
    assert fnp.asarray([0.5, 1.5]).dtype == np.float32
    assert fnp.where(f32 > 0, fnp.asarray(f32), 0.0).dtype == np.float32
    assert fnp.maximum(fnp.asarray(f32), 0).dtype == np.float32
    assert fnp.matmul(np.ones((2, 2), np.float32), np.ones(2, np.float32)).dtype == np.float32
    assert fnp.concatenate([f32, i32]).dtype == np.float32


# --------------------------------------------------------------------------- reductions

REDUCTIONS = ["sum", "mean", "var", "std", "max", "min", "prod", "argmax", "argmin",
              "all", "any"]
AXES = [None, 0, 1, -1, (0, 2), (2, 0, 1)]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(name, axis, keepdims):
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        pytest.skip("argmax takes one axis")
    if name in ("all", "any"):
        x = rng.random((2, 3, 4)) < 0.7
    else:
        x = rng.uniform(0.5, 1.5, (2, 3, 4)) * rng.choice([-1, 1], (2, 3, 4))
    ours, theirs = getattr(fnp, name), getattr(np, name)
    expected = theirs(x, axis=axis, keepdims=keepdims)
    if name in ("argmax", "argmin"):    # indices are the default int (docs/dtypes.md)
        expected = np.asarray(expected).astype(np.int32)
    assert_same(ours(x, axis=axis, keepdims=keepdims), expected, rtol=1e-12)
    method = getattr(fnp.asarray(x), name)
    assert_same(method(axis=axis, keepdims=keepdims), expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["all", "any", "sum", "prod"])
def test_reductions_of_empty_axes(name):
    ours, theirs = getattr(fnp, name), getattr(np, name)
    for shape, axis in [((0,), None), ((0, 3), 0), ((2, 0), 0), ((2, 0), 1), ((0, 3), (0, 1))]:
        x = np.ones(shape)
        assert_same(ours(x, axis=axis), theirs(x, axis=axis))
        assert_same(ours(x, axis=axis, keepdims=True), theirs(x, axis=axis, keepdims=True))


def test_reduction_variants():
    x = randn(3, 4)
    assert_same(fnp.var(x, axis=0, ddof=1), np.var(x, axis=0, ddof=1))
    assert_same(fnp.std(x, ddof=1), np.std(x, ddof=1))
    assert_same(fnp.sum(x, dtype=np.float32), np.sum(x, dtype=np.float32), rtol=1e-6)
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert_same(fnp.sum(i, axis=1), np.sum(i, axis=1))
    assert_same(fnp.prod(i + 1, axis=0), np.prod(i + 1, axis=0))
    assert_same(fnp.max(i), np.max(i))
    assert_same(fnp.mean(i, axis=0), np.mean(i, axis=0).astype(np.float32))
    assert_same(fnp.argmax(np.array([1.0, 3.0, 3.0, 2.0])), np.int32(1))
    assert_same(fnp.amax(x, axis=1), np.amax(x, axis=1))
    f32 = x.astype(np.float32)
    for name in ("sum", "mean", "var", "std", "max", "prod"):
        assert_same(getattr(fnp, name)(f32, axis=0), getattr(np, name)(f32, axis=0),
                    rtol=1e-5, atol=1e-6)


def test_logsumexp_matches_reference():
    def reference(a, axis=None, keepdims=False, b=None):
        m = np.max(a, axis=axis, keepdims=True)
        s = np.sum(np.exp(a - m) * (1 if b is None else b), axis=axis, keepdims=True)
        out = np.log(s) + m
        return out if keepdims else np.squeeze(out, axis=axis)

    x = randn(3, 4, 2)
    for axis in (None, 0, -1, (0, 2)):
        for keepdims in (False, True):
            assert_same(logsumexp(x, axis=axis, keepdims=keepdims),
                        reference(x, axis, keepdims), rtol=1e-12)
    b = rng.uniform(0.1, 2.0, (3, 4, 2))
    assert_same(logsumexp(x, axis=1, b=b), reference(x, 1, b=b), rtol=1e-12)
    big = np.array([1000.0, 1000.0, -1000.0])
    assert_same(logsumexp(big), np.float64(1000.0 + math.log(2.0)))
    with np.errstate(divide="ignore"):
        assert_same(logsumexp(np.array([-np.inf, -np.inf])), np.float64(-np.inf))
    assert_same(fnad.nn.logsumexp(x, axis=1), reference(x, 1), rtol=1e-12)
    assert logsumexp(x.astype(np.float32)).dtype == np.float32


# --------------------------------------------------------------------------- shapes

def test_reshape_and_ravel():
    a = randn(2, 3, 4)
    for shape in [(6, 4), (-1,), (4, -1), (2, -1, 2), 24, (1, 24, 1)]:
        assert_same(fnp.reshape(a, shape), np.reshape(a, shape))
    assert_same(fnp.asarray(a).reshape(3, -1), a.reshape(3, -1))
    assert_same(fnp.asarray(a).reshape((4, 6)), a.reshape((4, 6)))
    assert_same(fnp.reshape(a, (4, 6), order="F"), np.reshape(a, (4, 6), order="F"))
    assert_same(fnp.ravel(a), np.ravel(a))
    with pytest.raises(fnad.ShapeError):
        fnp.reshape(a, (5, -1))


def test_transpose_swapaxes_moveaxis():
    a = randn(2, 3, 4)
    assert_same(fnp.transpose(a), np.transpose(a))
    assert_same(fnp.transpose(a, (1, 0, 2)), np.transpose(a, (1, 0, 2)))
    assert_same(fnp.transpose(a, (-1, 0, 1)), np.transpose(a, (-1, 0, 1)))
    assert_same(fnp.asarray(a).T, a.T)
    assert_same(fnp.asarray(a).transpose(2, 0, 1), a.transpose(2, 0, 1))
    assert_same(fnp.swapaxes(a, 0, -1), np.swapaxes(a, 0, -1))
    for src, dst in [(0, -1), (-1, 0), ((0, 1), (-1, -2)), ((0, 2), (1, 0))]:
        assert_same(fnp.moveaxis(a, src, dst), np.moveaxis(a, src, dst))


def test_expand_dims_squeeze():
    a = randn(3, 1, 4, 1)
    assert_same(fnp.squeeze(a), np.squeeze(a))
    assert_same(fnp.squeeze(a, axis=1), np.squeeze(a, axis=1))
    assert_same(fnp.squeeze(a, axis=(1, -1)), np.squeeze(a, axis=(1, -1)))
    with pytest.raises(fnad.ShapeError):
        fnp.squeeze(a, axis=0)
    b = randn(3, 4)
    for axis in (0, 1, 2, -1, (0, 2), (0, -1)):
        assert_same(fnp.expand_dims(b, axis), np.expand_dims(b, axis))


def test_concatenate_and_stacks():
    a, b, c = randn(2, 3), randn(4, 3), randn(2, 5)
    assert_same(fnp.concatenate([a, b]), np.concatenate([a, b]))
    assert_same(fnp.concatenate([a, c], axis=-1), np.concatenate([a, c], axis=-1))
    assert_same(fnp.concatenate([a, b], axis=None), np.concatenate([a, b], axis=None))
    assert_same(fnp.concatenate((a, a, a), axis=1), np.concatenate((a, a, a), axis=1))
    for axis in (0, 1, 2, -1):
        assert_same(fnp.stack([a, a + 1], axis=axis), np.stack([a, a + 1], axis=axis))
    u, v = randn(3), randn(2)
    assert_same(fnp.hstack([u, v]), np.hstack([u, v]))
    assert_same(fnp.hstack([a, c]), np.hstack([a, c]))
    assert_same(fnp.vstack([u, u]), np.vstack([u, u]))
    assert_same(fnp.vstack([a, b]), np.vstack([a, b]))
    assert_same(fnp.hstack([np.float64(1.0), u]), np.hstack([np.float64(1.0), u]))


def test_split():
    a = randn(6, 4)
    for ours, theirs in [(fnp.split(a, 3), np.split(a, 3)),
                         (fnp.split(a, 2, axis=1), np.split(a, 2, axis=1)),
                         (fnp.split(a, [1, 4]), np.split(a, [1, 4])),
                         (fnp.split(a, [2, 10]), np.split(a, [2, 10])),
                         (fnp.split(a, [3], axis=-1), np.split(a, [3], axis=-1))]:
        assert len(ours) == len(theirs)
        for x, y in zip(ours, theirs):
            assert_same(x, y)
    with pytest.raises(fnad.ShapeError):
        fnp.split(a, 4)


def test_broadcast_to_tile_repeat():
    a = randn(3, 1)
    assert_same(fnp.broadcast_to(a, (2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))
    assert_same(fnp.broadcast_to(np.float64(2.0), (2,)), np.broadcast_to(2.0, (2,)))
    with pytest.raises(fnad.ShapeError):
        fnp.broadcast_to(a, (2, 4))
    b = randn(2, 3)
    for reps in (2, (2, 1), (1, 3), (2, 2, 2)):
        assert_same(fnp.tile(b, reps), np.tile(b, reps))
    for repeats, axis in [(2, None), (3, 0), (2, 1), (2, -1)]:
        assert_same(fnp.repeat(b, repeats, axis=axis), np.repeat(b, repeats, axis=axis))


def test_flip():
    a = randn(2, 3, 4)
    for axis in (None, 0, -1, (0, 2)):
        assert_same(fnp.flip(a, axis), np.flip(a, axis))
    assert_same(fnp.fliplr(a), np.fliplr(a))
    assert_same(fnp.flipud(a), np.flipud(a))


def test_where_and_clip():
    x, y = randn(3, 4), randn(4)
    cond = x > 0
    assert_same(fnp.where(cond, x, y), np.where(cond, x, y))
    assert_same(fnp.where(cond, x, 0.0), np.where(cond, x, 0.0))
    assert_same(fnp.where(cond, 1.0, -1.0), np.where(cond, 1.0, -1.0).astype(np.float32))
    assert_same(fnp.where(x[:, :1] > 0, y, x), np.where(x[:, :1] > 0, y, x))
    assert_same(fnp.clip(x, -0.5, 0.5), np.clip(x, -0.5, 0.5))
    assert_same(fnp.clip(x, None, 0.1), np.clip(x, None, 0.1))
    assert_same(fnp.clip(x, -0.1, None), np.clip(x, -0.1, None))
    assert_same(fnp.clip(x, y - 1, y + 1), np.clip(x, y - 1, y + 1))
    assert_same(fnp.asarray(x).clip(-1, 1), x.clip(-1, 1))


def test_pad():
    a = randn(2, 3)
    for width in [1, (1, 2), ((1, 0), (2, 3)), ((0, 0), (0, 1))]:
        assert_same(fnp.pad(a, width), np.pad(a, width))
        assert_same(fnp.pad(a, width, constant_values=-1.5),
                    np.pad(a, width, constant_values=-1.5))
        assert_same(fnp.pad(a, width, mode="edge"), np.pad(a, width, mode="edge"))
    assert_same(fnp.pad(a, 1, constant_values=((1, 2), (3, 4))),
                np.pad(a, 1, constant_values=((1, 2), (3, 4))))


# --------------------------------------------------------------------------- products

def test_dot():
    cases = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
             ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 6)), ((), (3,)), ((3, 4), ())]
    for sa, sb in cases:
        a, b = randn(*sa), randn(*sb)
        assert_same(fnp.dot(a, b), np.dot(a, b), rtol=1e-12)
    a, b = randn(3, 4), randn(4, 2)
    assert_same(fnp.asarray(a).dot(b), a.dot(b), rtol=1e-12)
    with pytest.raises(fnad.ShapeError):
        fnp.dot(randn(3, 4), randn(3, 4))


def test_matmul():
    cases = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
             ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)),
             ((2, 1, 3, 4), (5, 4, 2)), ((2, 3, 4), (4,))]
    for sa, sb in cases:
        a, b = randn(*sa), randn(*sb)
        assert_same(fnp.matmul(a, b), np.matmul(a, b), rtol=1e-12)
        assert_same(fnp.asarray(a) @ fnp.asarray(b), a @ b, rtol=1e-12)
    a, b = randn(2, 3), randn(3, 2)
    assert_same(a @ fnp.asarray(b), a @ b, rtol=1e-12)
    with pytest.raises(fnad.ShapeError):
        fnp.matmul(randn(3, 4), randn(3, 4))
    with pytest.raises(fnad.ShapeError):
        fnp.matmul(randn(3), np.float64(2.0))


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]),
    ("ji", [(2, 3)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("iij->ji", [(3, 3, 2)]),
    ("i,i", [(3,), (3,)]), ("i,i->i", [(3,), (3,)]), ("i,j->ij", [(3,), (4,)]),
    ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]), ("bA", [(2, 3)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 6)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("i...->...", [(2, 3)]), ("...ii->...i", [(4, 3, 3)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij,ij->ij", [(3, 1), (3, 4)]),
    ("ijk,jl,lk->i", [(2, 3, 4), (3, 5), (5, 4)]), ("i,i,i->", [(3,), (3,), (3,)]),
    ("ab,cd->", [(2, 3), (4, 5)]), ("ij,jk->ki", [(2, 3), (3, 4)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]), ("iji->j", [(2, 3, 2)]),
    ("ijij->ij", [(2, 3, 2, 3)]), ("a,b,c", [(2,), (3,), (4,)]),
    ("abc,cd,de,ea->b", [(2, 3, 4), (4, 5), (5, 2), (2, 2)]), ("i,->i", [(3,), ()]),
    ("ii,ij->j", [(3, 3), (3, 4)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum_matches_numpy(subscripts, shapes):
    operands = [randn(*s) for s in shapes]
    assert_same(fnp.einsum(subscripts, *operands), np.einsum(subscripts, *operands),
                rtol=1e-12)


def test_einsum_forms_and_errors():
    a, b = randn(2, 3), randn(3)
    assert_same(fnp.einsum(a, [0, 1], b, [1], [0]), np.einsum(a, [0, 1], b, [1], [0]))
    assert_same(fnp.einsum(a, [Ellipsis, 1], [Ellipsis]), np.einsum(a, [Ellipsis, 1], [Ellipsis]))
    assert_same(fnp.einsum("ij,j->i", a, b, optimize=True), a @ b, rtol=1e-12)
    assert fnp.einsum("ij,j", a.astype(np.float32), b.astype(np.float32)).dtype == np.float32
    assert fnp.einsum("ij,j", a.astype(np.float32), b).dtype == np.float64
    with pytest.raises(fnad.ShapeError):
        fnp.einsum("ij,jk", a, randn(4, 2))
    with pytest.raises(fnad.ShapeError):
        fnp.einsum("ijk", a)
    with pytest.raises(ValueError):
        fnp.einsum("ij,j->k", a, b)
    with pytest.raises(ValueError):
        fnp.einsum("ij", a, b)


def test_tensordot_outer_inner():
    a, b, c, d = randn(2, 3, 4), randn(3, 4, 5), randn(4, 6), randn(5)
    assert_same(fnp.tensordot(a, b), np.tensordot(a, b), rtol=1e-12)
    assert_same(fnp.tensordot(a, c, 1), np.tensordot(a, c, 1), rtol=1e-12)
    assert_same(fnp.tensordot(a, d, 0), np.tensordot(a, d, 0), rtol=1e-12)
    for axes in [([1, 2], [0, 1]), ([2, 1], [1, 0]), (1, 0), ([-1], [1])]:
        assert_same(fnp.tensordot(a, b, axes), np.tensordot(a, b, axes), rtol=1e-12)
    u, v, m = randn(3), randn(4), randn(2, 2)
    assert_same(fnp.outer(u, v), np.outer(u, v))
    assert_same(fnp.outer(m, v), np.outer(m, v))
    e = randn(5, 4)
    assert_same(fnp.inner(u, u), np.inner(u, u), rtol=1e-12)
    assert_same(fnp.inner(a, e), np.inner(a, e), rtol=1e-12)
    assert_same(fnp.inner(np.float64(2.0), u), np.inner(2.0, u))


def test_trace_diag_diagonal():
    a = randn(4, 5)
    for k in (-2, -1, 0, 1, 3, 7):
        assert_same(fnp.diagonal(a, k), np.diagonal(a, k))
        assert_same(fnp.trace(a, k), np.trace(a, k), rtol=1e-12)
        assert_same(fnp.diag(a, k), np.diag(a, k))
    b = randn(2, 3, 3)
    assert_same(fnp.trace(b, axis1=1, axis2=2), np.trace(b, axis1=1, axis2=2), rtol=1e-12)
    assert_same(fnp.diagonal(b, 1, 0, 2), np.diagonal(b, 1, 0, 2))
    v = randn(3)
    for k in (-2, 0, 1):
        assert_same(fnp.diag(v, k), np.diag(v, k))
    assert_same(fnp.asarray(a).trace(), a.trace(), rtol=1e-12)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative(name):
    a = rng.uniform(0.5, 1.5, (3, 4))
    ours, theirs = getattr(fnp, name), getattr(np, name)
    for axis in (None, 0, 1, -1):
        assert_same(ours(a, axis=axis), theirs(a, axis=axis), rtol=1e-12)
    i = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    assert_same(ours(i, axis=1), theirs(i, axis=1))
    assert_same(getattr(fnp.asarray(a), name)(0), getattr(a, name)(0), rtol=1e-12)


# --------------------------------------------------------------------------- fnad.nn

def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_erf(x):
    return np.vectorize(math.erf)(x)


NN = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": _np_sigmoid,
    "softplus": lambda x: np.log1p(np.exp(x)),
    "silu": lambda x: x * _np_sigmoid(x),
    "log_sigmoid": lambda x: -np.log1p(np.exp(-x)),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_activations_match_reference(name):
    x = randn(3, 5) * 3
    assert_same(getattr(fnad.nn, name)(x), NN[name](x), rtol=1e-12)
    x32 = x.astype(np.float32)
    assert_same(getattr(fnad.nn, name)(x32), NN[name](x32), rtol=1e-5, atol=1e-6)


def test_gelu():
    x = randn(4, 3) * 2
    exact = 0.5 * x * (1 + _np_erf(x / math.sqrt(2)))
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    assert_same(fnad.nn.gelu(x, approximate=False), exact, rtol=1e-12)
    assert_same(fnad.nn.gelu(x), tanh_form, rtol=1e-12)
    assert_same(fnad.nn.gelu(x, approximate=True), tanh_form, rtol=1e-12)
    assert fnad.nn.gelu(x.astype(np.float32), approximate=False).dtype == np.float32


def test_activations_stable_for_huge_inputs():
    big = np.array([1000.0, -1000.0, 0.0])
    assert_same(fnad.nn.softplus(big), np.array([1000.0, 0.0, math.log(2.0)]))
    assert_same(fnad.nn.sigmoid(big), np.array([1.0, 0.0, 0.5]))
    assert_same(fnad.nn.log_sigmoid(big), np.array([0.0, -1000.0, -math.log(2.0)]))
    assert_same(fnad.nn.silu(big), np.array([1000.0, -0.0, 0.0]))
    assert_same(fnad.nn.softplus(np.float32(100.0)), np.float32(100.0))
    assert_same(fnad.nn.log_softmax(np.array([1000.0, 0.0])), np.array([0.0, -1000.0]))
    assert_same(fnad.nn.softmax(np.array([1000.0, 0.0, 1000.0])), np.array([0.5, 0.0, 0.5]))
    assert_same(fnad.nn.log_softmax(np.array([-1000.0, -1000.0])),
                np.full(2, -math.log(2.0)))
    g = fnad.grad(lambda x: fnad.numpy.sum(fnad.nn.softplus(x)))(big)
    assert_same(g, np.array([1.0, 0.0, 0.5]))
    first = np.array([1.0, 0.0])
    assert_same(fnad.grad(lambda x: fnp.sum(fnad.nn.log_softmax(x) * first))(
        np.array([1000.0, 0.0])), np.array([0.0, 0.0]))


@pytest.mark.parametrize("axis", [-1, 0, 1, (0, 1)])
def test_softmax_and_log_softmax(axis):
    x = randn(3, 4) * 3

    def reference(x):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    assert_same(fnad.nn.softmax(x, axis=axis), reference(x), rtol=1e-12)
    assert_same(fnad.nn.log_softmax(x, axis=axis), np.log(reference(x)), rtol=1e-12)
    np.testing.assert_allclose(np.sum(np.asarray(fnad.nn.softmax(x, axis=axis)), axis=axis), 1.0)
    assert fnad.nn.softmax(x.astype(np.float32), axis=axis).dtype == np.float32


def test_one_hot():
    labels = np.array([0, 2, 1, 3])
    assert_same(fnad.nn.one_hot(labels, 4), np.eye(4, dtype=np.float32)[labels])
    # Out-of-range labels give all-zero rows, as in JAX.
    assert_same(fnad.nn.one_hot(labels, 3),
                (labels[:, None] == np.arange(3)).astype(np.float32))
    grid = np.array([[0, 1], [2, 0]])
    assert_same(fnad.nn.one_hot(grid, 3, axis=0), np.moveaxis(np.eye(3, dtype=np.float32)[grid],
                                                              -1, 0))
    assert_same(fnad.nn.one_hot(labels, 4, dtype=np.int32), np.eye(4, dtype=np.int32)[labels])


# --------------------------------------------------------------------------- gradients

COMPOSITES = {
    "mean": lambda x: fnp.mean(x, axis=1),
    "mean_all": lambda x: fnp.mean(x),
    "var": lambda x: fnp.var(x, axis=0),
    "var_ddof": lambda x: fnp.var(x, ddof=1),
    "std": lambda x: fnp.std(x, axis=1, keepdims=True),
    "logsumexp": lambda x: logsumexp(x, axis=1),
    "logsumexp_all": lambda x: logsumexp(x),
    "softmax": lambda x: fnad.nn.softmax(x),
    "softmax_axis0": lambda x: fnad.nn.softmax(x, axis=0),
    "log_softmax": lambda x: fnad.nn.log_softmax(x),
    "einsum_trace": lambda x: fnp.einsum("ii", fnp.split(x, [3], axis=1)[0]),
    "einsum_gram": lambda x: fnp.einsum("ij,kj->ik", x, x),
    "einsum_diag_outer": lambda x: fnp.einsum("ii,jk->ijk", fnp.split(x, [3], axis=1)[0], x),
    "gelu_exact": lambda x: fnad.nn.gelu(x, approximate=False),
    "silu": lambda x: fnad.nn.silu(x),
    "norm": lambda x: fnp.sqrt(fnp.sum(x * x, axis=-1)),
    "matmul_tanh": lambda x: fnp.tanh(x @ x.T) @ x,
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_gradients(name):
    x = randn(3, 4)
    check_grads(COMPOSITES[name], (x,), order=2, modes=("fwd", "rev"))


def test_einsum_gradients_two_operands():
    a, b, c = randn(2, 3), randn(3, 4), randn(4, 2)
    check_grads(lambda a, b, c: fnp.einsum("ij,jk,ki->", a, b, c), (a, b, c), order=2)
    check_grads(lambda a, b: fnp.einsum("...j,jk->...k", a, b), (randn(2, 2, 3), b), order=2)


def test_extremum_gradients_split_ties_evenly():
    assert_same(fnad.grad(lambda x: fnp.max(x))(np.array([1.0, 3.0, 3.0])),
                np.array([0.0, 0.5, 0.5]))
    assert_same(fnad.grad(lambda x: fnp.sum(fnp.min(x, axis=0)))(np.array([[1.0, 2.0],
                                                                            [1.0, 0.0]])),
                np.array([[0.5, 0.0], [0.5, 1.0]]))
    assert_same(fnad.grad(lambda x: fnp.sum(fnp.maximum(x, x)))(np.array([1.0, -2.0])),
                np.array([1.0, 1.0]))


def test_gradients_of_empty_reductions():
    for name in ("sum", "prod", "cumsum", "cumprod"):
        g = fnad.grad(lambda x: fnp.sum(getattr(fnp, name)(x, axis=1)))(np.zeros((3, 0)))
        assert_same(g, np.zeros((3, 0)))


def test_gradient_values_by_hand():
    x = randn(3, 4)
    assert_same(fnad.grad(lambda x: fnp.mean(x))(x), np.full((3, 4), 1 / 12))
    assert_same(fnad.grad(lambda x: fnp.var(x))(x), 2 * (x - x.mean()) / 12, rtol=1e-12)
    s = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    assert_same(fnad.grad(lambda x: logsumexp(x))(x), s, rtol=1e-12)
    assert_same(fnad.grad(lambda x: fnp.sum(fnad.nn.relu(x)))(x), (x > 0).astype(np.float64))


STRUCTURAL = {
    "concatenate": lambda x: fnp.concatenate([x, 2 * x], axis=1),
    "stack": lambda x: fnp.stack([x, x * x], axis=-1),
    "hstack": lambda x: fnp.hstack([x, x]),
    "split": lambda x: fnp.split(x, [1, 3], axis=1)[1] * fnp.sum(fnp.split(x, 3)[2] ** 2),
    "tile": lambda x: fnp.tile(x, (2, 1, 2)),
    "repeat": lambda x: fnp.repeat(x, 2, axis=0),
    "pad_constant": lambda x: fnp.pad(x, ((1, 0), (2, 1)), constant_values=3.0),
    "pad_edge": lambda x: fnp.pad(x, 2, mode="edge"),
    "flip": lambda x: fnp.flip(x, 1) * x,
    "moveaxis": lambda x: fnp.moveaxis(fnp.reshape(x, (3, 2, 2)), 0, -1),
    "broadcast_to": lambda x: fnp.broadcast_to(x, (2, 3, 4)),
    "where": lambda x: fnp.where(x > 0, x * x, -x),
    "clip": lambda x: fnp.clip(x, -0.5, 0.5),
    "diagonal": lambda x: fnp.diagonal(x, 1),
    "trace": lambda x: fnp.trace(x, -1),
    "diag_of_vector": lambda x: fnp.diag(fnp.ravel(x), 2),
    "cumsum": lambda x: fnp.cumsum(x, axis=1),
    "cumprod": lambda x: fnp.cumprod(x),
    "dot": lambda x: fnp.dot(x, x.T),
    "matmul_batched": lambda x: fnp.reshape(x, (2, 2, 3)) @ fnp.reshape(x, (2, 3, 2)),
    "tensordot": lambda x: fnp.tensordot(x, x, ([0], [0])),
    "outer": lambda x: fnp.outer(x, fnp.sum(x, axis=0)),
    "inner": lambda x: fnp.inner(x, x),
    "max_min": lambda x: fnp.max(x, axis=0) - fnp.min(x, axis=1, keepdims=True),
    "prod": lambda x: fnp.prod(x, axis=(0, 1)),
}


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_numpy_api_gradients(name):
    # Away from zero and from +-0.5, where where/clip switch branches.
    x = rng.uniform(0.6, 1.4, (3, 4)) * rng.choice([-1, 1], (3, 4))
    check_grads(STRUCTURAL[name], (x,), order=2, modes=("fwd", "rev"))
