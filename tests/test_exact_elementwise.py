"""numpy's (or JAX's documented) answer in every mode for the functions the differential
suite found wrong: integer power and lax.div in integer arithmetic, cbrt and hypot
accurate at the ends of the float range, sign(-0.0), lax.round's rounding methods,
heaviside and median dtypes and NaN, lax.iota's signature, and the index dtype rule.

Each check runs eagerly, through jit's first call (numpy kernels while Numba compiles)
and its compiled call, and on the cuda simulator where a GPU backend exists."""
import numpy as np
import pytest

import fnad
import fnad.lax as lax
import fnad.numpy as fnp
from fnad.backends.cpu import lowering
from fnad.staged.eval_shape import ShapeDtypeStruct, eval_shape

from cuda_util import GPUS, to_gpu


def every_mode(f, *args):
    """f's results eagerly, at jit's first call, compiled, and on the GPU if any."""
    jitted = fnad.jit(f)
    before, fnad.config.background_compile = fnad.config.background_compile, True
    try:
        first = jitted(*args)
        lowering.wait_for_compiles()
        compiled = jitted(*args)
    finally:
        fnad.config.background_compile = before
    out = {"eager": f(*args), "jit first call": first, "jit compiled": compiled}
    if GPUS:
        out["cuda"] = f(*[to_gpu(a) for a in args])
    return {mode: np.asarray(v) for mode, v in out.items()}


def assert_every_mode(f, args, want):
    want = np.asarray(want)
    for mode, got in every_mode(f, *args).items():
        assert got.dtype == want.dtype, f"{mode}: dtype {got.dtype}, want {want.dtype}"
        np.testing.assert_array_equal(got, want, err_msg=mode)
        if want.dtype.kind == "f":      # -0.0 where numpy puts it
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=mode)


# --------------------------------------------------------------------------- integers

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
def test_integer_power_is_exact_and_wraps_like_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.array([3, 2, 7, 0, 1, 5, info.max, 3, 2], dtype)
    y = np.array([2, 31, 0, 0, 5, 3, 2, 40, 63], dtype)
    want = np.power(x, y)           # numpy wraps around silently
    assert want.dtype == dtype
    assert_every_mode(fnp.power, (x, y), want)
    # 2**31 squared: float32 (the old path) rounds it; int64 holds it exactly
    if dtype == np.int64:
        assert int(fnp.power(np.array([2 ** 31], dtype), np.array([2], dtype))[0]) == 2 ** 62


def test_integer_to_a_negative_power():
    """numpy's ValueError where the exponent is known; under jit the true power
    truncated toward zero (documented in docs/dtypes.md), the same in both jit calls."""
    x = np.array([2, -2, 1, -1, -1, 0, 3], np.int32)
    y = np.array([-1, -1, -3, -3, -2, -1, 2], np.int32)
    with pytest.raises(ValueError, match="negative integer powers"):
        fnp.power(x, y)
    with pytest.raises(ValueError, match="negative integer powers"):
        fnp.power(fnp.asarray(x), -2)
    modes = every_mode(fnad.jit(fnp.power), x, y)
    for mode, got in modes.items():
        np.testing.assert_array_equal(got, [0, 0, 1, -1, 1, 0, 9], err_msg=mode)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_lax_div_truncates_toward_zero(dtype):
    info = np.iinfo(dtype)
    x = np.array([7, -7, 7, -7, 5, -5, 0, info.min, info.min, info.max, 6], dtype)
    y = np.array([2, 2, -2, -2, 0, 0, 0, -1, 0, -1, 3], dtype)
    # C division; x / 0 is -1 and iinfo.min / -1 wraps to iinfo.min, as XLA and JAX
    want = np.array([3, -3, -3, 3, -1, -1, -1, info.min, -1, -info.max, 2], dtype)
    assert_every_mode(lax.div, (x, y), want)


def test_lax_div_of_unsigned_and_floats():
    x, y = np.array([7, 5, 0], np.uint32), np.array([2, 0, 3], np.uint32)
    assert_every_mode(lax.div, (x, y), np.array([3, 2 ** 32 - 1, 0], np.uint32))
    f = np.array([7.0, -7.0], np.float32)
    assert_every_mode(lax.div, (f, np.float32([2, 2])), np.float32([3.5, -3.5]))


# --------------------------------------------------------------------------- cbrt, hypot

def _ulps(got, exact, dtype):
    """|got - exact| in units of the last place of the dtype, exact in long double."""
    return np.abs(got.astype(np.longdouble) - exact) / np.spacing(
        np.abs(exact.astype(dtype))).astype(np.longdouble)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cbrt_within_half_an_ulp_in_every_mode(dtype):
    rng = np.random.default_rng(0)
    top = np.log10(np.finfo(dtype).max) - 1
    x = (rng.uniform(-9.99, 9.99, 4000) * 10.0 ** rng.uniform(-top, top, 4000)).astype(dtype)
    x = np.concatenate([x, np.array([np.finfo(dtype).max, -np.finfo(dtype).max,
                                     np.finfo(dtype).tiny, 3e38, -27, 8, 1], dtype)])
    exact = np.cbrt(x.astype(np.longdouble))
    for mode, got in every_mode(fnp.cbrt, x).items():
        assert got.dtype == dtype
        # the compiled helper rounds correctly but for ties within long double's
        # precision; the eager and first-call float64 path is numpy's (0.54 ulps here)
        bound = 0.5 + 1e-3 if mode == "jit compiled" or dtype == np.float32 else 1.0
        assert _ulps(got, exact, dtype).max() <= bound, mode


def test_cbrt_special_values():
    for dtype in (np.float16, np.float32, np.float64):
        x = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, -8.0], dtype)
        assert_every_mode(fnp.cbrt, (x,), np.cbrt(x))


def test_hypot_does_not_overflow_and_inf_beats_nan():
    x = np.array([np.inf, 1e308, np.nan, -np.inf, 3.0, 0.0, -0.0])
    y = np.array([np.nan, 1e308, np.inf, 1.0, -4.0, 0.0, -0.0])
    assert_every_mode(fnp.hypot, (x, y), np.hypot(x, y))
    x32 = np.array([3e38, 1e-30, np.inf], np.float32)
    assert_every_mode(fnp.hypot, (x32, np.float32([1.0, 1e-30, np.nan])),
                      np.hypot(x32, np.float32([1.0, 1e-30, np.nan])))
    g = fnad.grad(lambda a: fnp.hypot(a[0], a[1]))(np.array([3.0, 4.0]))
    np.testing.assert_allclose(np.asarray(g), [0.6, 0.8])
    g = fnad.grad(lambda a: fnp.cbrt(a))(8.0)
    assert abs(float(g) - 1 / 12) < 1e-6


# --------------------------------------------------------------------------- sign, round

@pytest.mark.parametrize("fn", [fnp.sign, lax.sign], ids=["numpy.sign", "lax.sign"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sign_of_negative_zero_is_positive_zero(fn, dtype):
    x = np.array([-0.0, 0.0, 2.5, -2.5, np.inf, -np.inf, np.nan], dtype)
    want = np.sign(x)
    assert not np.signbit(want[0])      # numpy's answer
    assert_every_mode(fn, (x,), want)


def test_sign_of_integers():
    x = np.array([-5, 0, 7, np.iinfo(np.int32).min], np.int32)
    assert_every_mode(fnp.sign, (x,), np.sign(x))


HALVES = [0.5, -0.5, 1.5, -2.5, 2.5, -0.0, 0.3, -0.3, 0.49999997, 1e30, np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_lax_round_default_rounds_halves_away_from_zero(dtype):
    x = np.array(HALVES, dtype)
    t = np.trunc(x)
    away = np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(dtype)
    assert list(away[:5]) == [1, -1, 2, -3, 3]
    assert_every_mode(lax.round, (x,), away)
    assert_every_mode(lambda v: lax.round(v, lax.RoundingMethod.AWAY_FROM_ZERO), (x,), away)
    assert_every_mode(lambda v: lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN), (x,),
                      np.round(x))
    assert_every_mode(lambda v: lax.round(v, 1), (x,), np.round(x))
    assert_every_mode(fnp.round, (x,), np.round(x))         # numpy's: halves to even
    with pytest.raises(ValueError):
        lax.round(x, 2)


# --------------------------------------------------------------------------- heaviside, median

def test_heaviside_promotes_integers_and_keeps_nan():
    i = np.array([-3, 0, 2], np.int32)
    got = fnp.heaviside(i, np.array([5, 5, 5], np.int32))
    assert got.dtype == np.float32          # JAX's rule (numpy: float64)
    np.testing.assert_array_equal(np.asarray(got), [0.0, 5.0, 1.0])
    x = np.array([np.nan, 0.0, -0.0, -1.0, np.inf])
    assert_every_mode(fnp.heaviside, (x, np.full(5, 0.5)), np.heaviside(x, 0.5))


def test_median_dtype_and_empty():
    assert fnp.median(np.array([1, 2, 4], np.int32)).dtype == np.float32
    assert fnp.median(np.array([True, False, True])).dtype == np.float32
    assert fnp.median(np.array([1, 2, 4, 8], np.int64)).dtype == np.float32
    assert float(fnp.median(np.array([1, 2, 4, 8], np.int32))) == 3.0
    for shape, axis in (((0,), None), ((0, 3), 0), ((0, 3), None)):
        x = np.zeros(shape, np.float32)
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
            want = np.median(x, axis=axis)
        got = fnp.median(x, axis=axis)
        assert got.dtype == np.float32 and got.shape == np.shape(want)
        assert np.isnan(np.asarray(got)).all()
        jitted = fnad.jit(lambda v: fnp.median(v, axis=axis))(x)
        assert np.isnan(np.asarray(jitted)).all() and jitted.shape == np.shape(want)


# --------------------------------------------------------------------------- lax.iota

def test_lax_iota_has_jaxs_signature():
    np.testing.assert_array_equal(np.asarray(lax.iota(np.int32, 5)), np.arange(5))
    assert lax.iota(np.float32, 3).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(lax.broadcasted_iota(np.int32, (2, 3), 1)),
                                  [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(np.asarray(lax.broadcasted_iota(np.int32, (2, 3), 0)),
                                  [[0, 0, 0], [1, 1, 1]])


# --------------------------------------------------------------------------- index dtypes

INDEX_FUNCTIONS = {
    "argmax": lambda x: fnp.argmax(x), "argmin": lambda x: fnp.argmin(x, axis=0),
    "argsort": lambda x: fnp.argsort(x), "count_nonzero": lambda x: fnp.count_nonzero(x),
    "argpartition": lambda x: fnp.argpartition(x, 1),
    "lexsort": lambda x: fnp.lexsort([x, x]),
}


@pytest.mark.parametrize("name", sorted(INDEX_FUNCTIONS))
@pytest.mark.parametrize("x64", [False, True])
def test_indices_are_the_default_int(name, x64):
    before = fnad.config.enable_x64
    fnad.config.update("jax_enable_x64", x64)
    try:
        want = np.int64 if x64 else np.int32
        x = np.array([3.0, 1.0, 2.0, 0.0], np.float32)
        fn = INDEX_FUNCTIONS[name]
        assert fn(x).dtype == want
        assert fnad.jit(fn)(x).dtype == want
        assert fnad.vmap(fn)(np.stack([x, x])).dtype == want
        # a shape with 2**31 elements or more: int64 in both modes, decided statically
        big = eval_shape(fn, ShapeDtypeStruct((2 ** 31,), np.float32))
        assert big.dtype == np.int64
        assert eval_shape(fn, ShapeDtypeStruct((2 ** 31 - 1,), np.float32)).dtype == want
    finally:
        fnad.config.update("jax_enable_x64", before)


def test_argmax_of_a_big_array_along_a_small_axis_is_int32():
    out = eval_shape(lambda x: fnp.argmax(x, axis=1), ShapeDtypeStruct((2 ** 20, 2 ** 12),
                                                                       np.float32))
    assert out.dtype == np.int32
    out = eval_shape(fnp.argmax, ShapeDtypeStruct((2 ** 20, 2 ** 12), np.float32))
    assert out.dtype == np.int64        # a flat index into 2**32 elements


def test_static_index_functions_are_the_default_int():
    m = np.array([[1, 0], [0, 1]])
    for out in (fnp.nonzero(m) + (fnp.argwhere(m), fnp.flatnonzero(m), fnp.where(m)[0])
                + fnp.diag_indices(3) + fnp.diag_indices_from(np.eye(3))
                + fnp.tril_indices(3) + fnp.triu_indices(3, 1, 4)):
        assert out.dtype == np.int32
    assert fnad.random.categorical(fnad.random.PRNGKey(0), np.zeros(4), shape=(6,)).dtype \
        == np.int32
    rows, cols = fnp.ix_(np.array([0, 2], np.int64), np.array([True, False, True]))
    assert rows.dtype == np.int64           # integer index arrays keep their dtype
    assert cols.dtype == np.int32           # a mask's positions: the index dtype
    np.testing.assert_array_equal(np.asarray(cols), [[0, 2]])


def test_int32_indices_feed_the_indexing_functions():
    """What consumes indices (take_along_axis, take, gather in x[i], sort's VJP) works
    with the int32 indices, eagerly, under jit and under grad."""
    x = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], np.float32)

    def f(v):
        order = fnp.argsort(v, axis=1)
        best = fnp.argmax(v, axis=1)
        return (fnp.sum(fnp.take_along_axis(v, order, axis=1) * np.arange(3.0))
                + fnp.sum(v[np.arange(2), best]) + fnp.sum(fnp.take(v, best)))
    want = f(x)
    assert abs(float(fnad.jit(f)(x)) - float(want)) < 1e-5
    g = np.asarray(fnad.grad(f)(x))
    # d/dv: each entry's rank in its row (0, 1, 2), plus 1 at the row maxima, plus 1 at
    # the flat positions argmax gives (0 and 1: the first row's first two entries)
    want_g = np.array([[4.0, 1.0, 1.0], [1.0, 3.0, 0.0]], np.float32)
    np.testing.assert_allclose(g, want_g)
