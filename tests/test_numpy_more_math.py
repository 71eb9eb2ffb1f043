"""fnad.numpy's functions beyond the differential tables: scalar type constructors,
derivatives the issue tracker caught (logaddexp's Hessian at ties, linspace in its
bounds), host-only functions and data-dependent shapes, and errors."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.errors import ConcretizationError


def same(actual, expected, rtol=1e-12, atol=0.0, dtype=True):
    expected = np.asarray(expected)
    assert isinstance(actual, fnad.Array), type(actual)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if dtype:
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- scalar types

def test_scalar_types_convert_and_are_dtypes():
    same(fnp.float32(2.5), np.float32(2.5))
    same(fnp.int16([1, 2]), np.array([1, 2], np.int16))
    same(fnp.float64(fnp.ones(2, fnp.float32)), np.ones(2))
    same(fnp.bool_(3), np.True_)
    assert fnp.float32(1.0).weak_type is False
    assert np.dtype(fnp.float32) == np.float32 and fnp.dtype(fnp.int8) == np.int8
    assert fnp.zeros(2, fnp.float16).dtype == np.float16
    assert fnp.ones(2).astype(fnp.int64).dtype == np.int64
    assert fnp.ones(2).dtype == fnp.float32 and fnp.float32 == fnp.ones(2).dtype
    assert fnp.issubdtype(fnp.ones(2).dtype, fnp.floating)
    assert fnp.issubdtype(fnp.float32, fnp.floating)
    assert not fnp.issubdtype(fnp.int32, fnp.floating)
    assert fnp.double is fnp.float64 and fnp.single is fnp.float32
    assert isinstance(np.float32(1), fnp.float32) and not isinstance(1.0, fnp.float32)
    assert fnp.float64 != None and not (fnp.float64 == "int8")  # noqa: E711
    assert {fnp.float32: 1}[np.dtype(np.float32)] == 1


def test_scalar_types_under_transforms():
    assert fnad.grad(lambda x: fnp.float64(x) * 3.0)(2.0) == 3.0
    out = fnad.jit(lambda x: fnp.int32(x))(fnp.asarray(2.7))
    same(out, np.int32(2))
    same(fnad.vmap(fnp.float16)(fnp.arange(3)), np.arange(3, dtype=np.float16))


# --------------------------------------------------------------------------- issue 13 bugs

def test_logaddexp_hessian_at_a_tie():
    h = fnad.hessian(fnp.logaddexp, argnums=(0, 1))(0.4, 0.4)
    np.testing.assert_allclose(np.asarray(h, dtype=np.float64),
                               [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-6)
    # away from the tie: d2/dx2 log(e^x + e^y) = s (1 - s), s = sigmoid(x - y)
    s = 1 / (1 + np.exp(-(1.0 - -0.5)))
    h = fnad.hessian(fnp.logaddexp)(1.0, -0.5)
    np.testing.assert_allclose(float(h), s * (1 - s), rtol=1e-6)


def test_logaddexp_exact_at_special_values():
    v = np.array([np.inf, -np.inf, np.nan, 0.0, -50.0, 40.0, -1e300, 3.0])
    x, y = np.meshgrid(v, v)
    with np.errstate(all="ignore"):
        want = np.logaddexp(x, y)
    for f in (fnp.logaddexp, fnad.jit(fnp.logaddexp)):
        np.testing.assert_array_equal(np.asarray(f(x, y)), want)


def test_linspace_is_differentiable_in_its_bounds():
    assert fnad.grad(lambda x: fnp.linspace(x, 3.0, 1).sum())(1.0) == 1.0
    # d/dstart sum(linspace(start, stop, n)) = sum(1 - i/(n-1)) = n/2
    assert float(fnad.grad(lambda x: fnp.linspace(x, 3.0, 5).sum())(1.0)) == pytest.approx(2.5)
    assert float(fnad.grad(lambda x: fnp.linspace(0.0, x, 4, endpoint=False).sum())(2.0)) \
        == pytest.approx(1.5)
    start = np.array([0.0, 1.0])
    same(fnad.jit(lambda a: fnp.linspace(a, 5.0, 3, axis=1))(start),
         np.linspace(start, 5.0, 3, axis=1))
    same(fnp.linspace(fnp.float64(0), 10, 4, dtype=int),
         np.linspace(0, 10, 4, dtype=np.int64), dtype=False)


# --------------------------------------------------------------------------- errors

def test_integer_only_and_float_only_functions_refuse_other_dtypes():
    with pytest.raises(fnad.errors.DTypeError, match="gcd"):
        fnp.gcd(np.ones(2), 2)
    with pytest.raises(fnad.errors.DTypeError, match="left_shift"):
        fnp.left_shift(np.ones(2, np.float32), 1)
    with pytest.raises(fnad.errors.DTypeError, match="ldexp"):
        fnp.ldexp(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="out="):
        fnp.nansum(np.ones(2), out=np.zeros(()))


def test_data_dependent_lengths_need_length_under_jit():
    x = np.array([0, 3, 1, 3])
    same(fnp.bincount(x), np.bincount(x).astype(np.int32))
    same(fnad.jit(lambda v: fnp.bincount(v, length=6))(x),
         np.bincount(x, minlength=6).astype(np.int32))
    with pytest.raises(ConcretizationError, match="length="):
        fnad.jit(fnp.bincount)(x)
    with pytest.raises(ValueError, match="non-negative"):
        fnp.bincount(np.array([1, -1]))
    with pytest.raises(ConcretizationError, match="roots"):
        fnad.jit(fnp.roots)(np.array([1.0, -3.0, 2.0]))


def test_host_functions_refuse_traced_values():
    for f in (fnp.array_str, fnp.array_repr, lambda v: fnp.save("unused.npy", v)):
        with pytest.raises(ConcretizationError, match="concrete"):
            fnad.jit(f)(fnp.ones(2))


def test_load_refuses_pickles(tmp_path):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        fnp.load(path)
    fnp.save(tmp_path / "x.npy", fnp.arange(3))
    same(fnp.load(tmp_path / "x.npy"), np.arange(3, dtype=np.int32))


def test_histogram_of_nan_needs_a_range():
    with pytest.raises(ValueError, match="not finite"):
        fnp.histogram(np.array([1.0, np.nan]))
    # with a range NaN is counted nowhere, as in numpy
    a = np.array([1.0, np.nan, 0.2])
    counts, edges = fnp.histogram(a, bins=2, range=(0, 1))
    np.testing.assert_array_equal(np.asarray(counts), np.histogram(a, bins=2, range=(0, 1))[0])


def test_vectorize_checks_core_dimensions():
    f = fnp.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")
    same(f(np.ones((3, 4)), np.arange(4.0)), np.full(3, 6.0))
    with pytest.raises(fnad.errors.ShapeError, match="core dimension"):
        f(np.ones((3, 4)), np.ones(5))
    with pytest.raises(ValueError, match="signature"):
        fnp.vectorize(lambda a: a, signature="(n)->")


# --------------------------------------------------------------------------- behaviour

def test_quantile_of_several_q_puts_q_first():
    a = np.random.default_rng(0).normal(size=(3, 5))
    q = np.array([0.1, 0.5, 0.95])
    same(fnp.quantile(a, q, axis=1), np.quantile(a, q, axis=1))
    same(fnp.percentile(a, q * 100, axis=0, keepdims=True),
         np.percentile(a, q * 100, axis=0, keepdims=True))
    # grad of the median of an odd count: one-hot at the middle value
    g = fnad.grad(lambda v: fnp.quantile(v, 0.5))(np.array([3.0, 1.0, 2.0]))
    same(g, np.array([0.0, 0.0, 1.0]))


def test_polydiv_keeps_a_static_remainder_length():
    u, v = np.array([1.0, -3.0, 0.0, 2.0]), np.array([1.0, -1.0])
    q, r = fnp.polydiv(u, v)
    same(q, np.polydiv(u, v)[0])
    assert r.shape == (4,)
    np.testing.assert_allclose(np.asarray(r)[-1:], np.polydiv(u, v)[1])
    same(fnp.polydiv(u, v, trim_leading_zeros=True)[1], np.polydiv(u, v)[1])
    q, _ = fnad.jit(fnp.polydiv)(u, v)
    same(q, np.polydiv(u, v)[0])


def test_roots_and_poly_round_trip():
    r = np.sort_complex(np.asarray(fnp.roots(np.array([1.0, -6.0, 11.0, -6.0]))))
    np.testing.assert_allclose(r, [1, 2, 3], atol=1e-12)
    same(fnp.poly(np.array([1.0, 2.0, 3.0])), [1.0, -6.0, 11.0, -6.0])


def test_ufunc_methods():
    add = fnp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
    x = np.arange(6.0).reshape(2, 3)
    same(add.reduce(x, axis=1), x.sum(1))
    same(add.accumulate(x, axis=1), np.cumsum(x, 1))
    same(add.outer(np.arange(2.0), np.arange(3.0)), np.add.outer(np.arange(2.0), np.arange(3.0)))
    same(add.reduce(np.zeros((0, 2)), axis=0), np.zeros(2))
    same(add.at(np.zeros(3), np.array([0, 2]), 5.0), [5.0, 0.0, 5.0])
    assert isinstance(add, fnp.ufunc)
    for indices in ([0, 4, 1, 5], [0, 3, 3, 6], [2]):
        same(add.reduceat(np.arange(8.0), indices), np.add.reduceat(np.arange(8.0), indices))
    with pytest.raises(ConcretizationError):
        fnad.jit(lambda i: add.reduceat(np.arange(8.0), i))(np.array([0, 4]))
    product = fnp.ufunc(lambda a, b: a * b, 2, 1, reduce=lambda a, axis=0: fnp.prod(a, axis))
    same(product.reduce(np.array([2.0, 3.0, 4.0])), np.float64(24.0))


def test_integer_shifts_and_counts_match_numpy_at_the_edges():
    x = np.array([np.iinfo(np.int64).min, -1, 5, np.iinfo(np.int64).max])
    for shift in (0, 1, 62, 63, 64, 100):
        same(fnp.left_shift(x, shift), np.left_shift(x, shift))
        same(fnp.right_shift(x, shift), np.right_shift(x, shift))
    same(fnp.bitwise_count(x), np.bitwise_count(x))


def test_nextafter_and_spacing_walk_every_float():
    for dtype in (np.float32, np.float64):
        info = np.finfo(dtype)
        x = np.array([0.0, -0.0, 1.0, info.smallest_subnormal, info.tiny, info.max, np.inf],
                     dtype)
        for toward in (np.inf, -np.inf, 0.0):
            same(fnp.nextafter(x, dtype(toward)), np.nextafter(x, dtype(toward)))
        with np.errstate(invalid="ignore"):
            same(fnp.spacing(x), np.spacing(x))


def test_histogram_counts_values_on_edges_as_numpy():
    a = np.random.default_rng(1).normal(size=40).astype(np.float32)
    edges = np.histogram_bin_edges(a, 7)
    a = np.concatenate([a, edges.astype(np.float32)])
    counts, got_edges = fnp.histogram(a, 7)
    want_counts, want_edges = np.histogram(a, 7)
    np.testing.assert_array_equal(np.asarray(counts), want_counts)
    np.testing.assert_array_equal(np.asarray(got_edges), want_edges)
    jitted = fnad.jit(lambda v: fnp.histogram(v, 7)[0])(a)
    np.testing.assert_array_equal(np.asarray(jitted), want_counts)


def test_array_methods_added_for_issue_13():
    a = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    x = fnp.asarray(a)
    same(x.ptp(axis=1), np.ptp(a, axis=1))
    same(x.take(np.array([0, 4])), a.take([0, 4]))
    assert [np.asarray(i).tolist() for i in x.nonzero()] == [i.tolist() for i in a.nonzero()]
    assert (x.itemsize, x.nbytes) == (a.itemsize, a.nbytes)
    same(x.compress([True, False], axis=0), a.compress([True, False], axis=0))
    same(fnp.sort(x[0]).searchsorted(2.5), np.int32(2))
    same(fnad.jit(lambda v: v.ptp())(x), np.ptp(a))


def test_weighted_inverted_cdf_quantile_matches_numpy():
    # numpy and JAX support weights with method="inverted_cdf" only
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(4, 7)), rng.uniform(0.1, 2, size=(4, 7))
    q = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    for axis, weights in [(None, None), (None, w), (0, w), (1, w), (1, w[0])]:
        want = np.quantile(x, q, axis=axis, weights=weights, method="inverted_cdf")
        f = lambda x: fnp.quantile(x, q, axis=axis, weights=weights, method="inverted_cdf")  # noqa: E731
        np.testing.assert_array_equal(np.asarray(f(x)), want)
        np.testing.assert_array_equal(np.asarray(fnad.jit(f)(x)), want)
    with_nan = x.copy()
    with_nan[1, 2] = np.nan
    np.testing.assert_array_equal(
        np.asarray(fnp.nanquantile(with_nan, q, axis=1, weights=w, method="inverted_cdf")),
        np.nanquantile(with_nan, q, axis=1, weights=w, method="inverted_cdf"))
    np.testing.assert_array_equal(
        np.asarray(fnp.percentile(x, 50, weights=w, method="inverted_cdf")),
        np.percentile(x, 50, weights=w, method="inverted_cdf"))
    # the derivative reaches the selected element only
    g = fnad.grad(lambda x: fnp.quantile(x, 0.5, weights=w, method="inverted_cdf"))(x)
    chosen = np.quantile(x, 0.5, weights=w, method="inverted_cdf")
    np.testing.assert_array_equal(np.asarray(g), (x == chosen).astype(float))
    with pytest.raises(ValueError, match="inverted_cdf"):
        fnp.quantile(x, 0.5, weights=w)
