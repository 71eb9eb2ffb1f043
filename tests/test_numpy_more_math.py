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
