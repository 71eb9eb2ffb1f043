"""Linear algebra and sorting: values against numpy, derivatives against finite
differences (to second order, both modes), vmap rules against a loop, and errors."""
import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad.errors import ShapeError, DTypeError
from fnad.primitives import linalg as L
from fnad.primitives import sort as P
from fnad.test_util import check_grads

rng = np.random.default_rng(0)


def well_conditioned(*shape):
    return rng.standard_normal(shape) * 0.3 + 2 * np.eye(shape[-1])


def spd(*shape):
    m = rng.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def triangle(a, lower, unit_diagonal):
    m = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        m = m * (1 - np.eye(n)) + np.eye(n)
    return m


A = well_conditioned(2, 3, 3)
B = rng.standard_normal((2, 3, 2))
SPD = spd(2, 3, 3)


# --------------------------------------------------------------------------- values

@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 4)), ((2, 3, 3), (3,)),
    ((4, 1, 3, 3), (2, 3, 1)), ((3, 3), (5, 3, 2))])
def test_solve_matches_numpy(a_shape, b_shape):
    a, b = well_conditioned(*a_shape), rng.standard_normal(b_shape)
    np.testing.assert_allclose(jnp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-10)


@pytest.mark.parametrize("fn", ["inv", "det"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2)])
def test_square_functions_match_numpy(fn, shape):
    a = rng.standard_normal(shape)
    np.testing.assert_allclose(getattr(jnp.linalg, fn)(a), getattr(np.linalg, fn)(a),
                               rtol=1e-10)


def test_slogdet_and_cholesky_match_numpy():
    a = rng.standard_normal((3, 4, 4))
    sign, logabsdet = jnp.linalg.slogdet(a)
    expected = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, expected.sign)
    np.testing.assert_allclose(logabsdet, expected.logabsdet, rtol=1e-10)
    assert jnp.linalg.slogdet(a).logabsdet.shape == (3,)
    np.testing.assert_allclose(jnp.linalg.cholesky(SPD), np.linalg.cholesky(SPD), rtol=1e-10)
    np.testing.assert_allclose(jnp.linalg.cholesky(SPD, upper=True),
                               np.linalg.cholesky(SPD, upper=True), rtol=1e-10)
    np.testing.assert_allclose(jnp.linalg.det(np.zeros((2, 2))), 0.0)


def test_dtypes():
    a32 = well_conditioned(3, 3).astype(np.float32)
    assert jnp.linalg.inv(a32).dtype == np.float32
    assert jnp.linalg.solve(a32, np.ones(3)).dtype == np.float64
    assert jnp.linalg.det(np.eye(2, dtype=np.int32)).dtype == np.float32   # as JAX
    assert jnp.linalg.det(np.eye(2, dtype=np.int64)).dtype == np.float32   # the default float
    assert jnp.linalg.matrix_power(np.array([[1, 1], [1, 0]]), 10).dtype == np.int64


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_triangular_solve(left_side, lower, transpose_a, unit_diagonal):
    # Garbage in the triangle that is not read must not matter.
    garbage = 5 * rng.standard_normal((3, 3))
    a = A + (np.triu(garbage, 1) if lower else np.tril(garbage, -1))
    b = B if left_side else np.swapaxes(B, -1, -2)
    kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
              unit_diagonal=unit_diagonal)
    x = np.asarray(L.triangular_solve(a, b, **kw))
    op = triangle(a, lower, unit_diagonal)
    op = np.swapaxes(op, -1, -2) if transpose_a else op
    np.testing.assert_allclose(op @ x if left_side else x @ op, b, atol=1e-12)
    check_grads(lambda a, b: L.triangular_solve(a, b, **kw), (a, b), order=2)


@pytest.mark.parametrize("ord", [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5])
def test_vector_norms(ord):
    v = rng.standard_normal((3, 4))
    np.testing.assert_allclose(jnp.linalg.norm(v[0], ord), np.linalg.norm(v[0], ord))
    np.testing.assert_allclose(jnp.linalg.norm(v, ord, axis=-1, keepdims=True),
                               np.linalg.norm(v, ord, axis=-1, keepdims=True))


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
@pytest.mark.parametrize("axis", [(1, 2), (2, 0), (-1, -3)])
def test_matrix_norms(ord, axis):
    m = rng.standard_normal((3, 4, 5))
    np.testing.assert_allclose(jnp.linalg.norm(m[0], ord), np.linalg.norm(m[0], ord))
    np.testing.assert_allclose(jnp.linalg.norm(m, ord, axis=axis, keepdims=True),
                               np.linalg.norm(m, ord, axis=axis, keepdims=True))
    np.testing.assert_allclose(jnp.linalg.norm(m, ord, axis=axis),
                               np.linalg.norm(m, ord, axis=axis))


def test_norm_of_everything_and_matrix_power():
    m = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(jnp.linalg.norm(m), np.linalg.norm(m))
    assert jnp.linalg.norm(m, keepdims=True).shape == (1, 1, 1)
    a = rng.standard_normal((2, 3, 3))
    for n in (0, 1, 2, 5, -1, -3):
        np.testing.assert_allclose(jnp.linalg.matrix_power(a, n),
                                   np.linalg.matrix_power(a, n), rtol=1e-9, atol=1e-12)
    x, y, z = rng.standard_normal(3), rng.standard_normal((3, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(jnp.linalg.multi_dot([x, y, z]), np.linalg.multi_dot([x, y, z]))


# --------------------------------------------------------------------------- derivatives

@pytest.mark.parametrize("name, fn, args", [
    ("solve", jnp.linalg.solve, (A, B)),
    ("solve_vector", jnp.linalg.solve, (A[0], B[0, :, 0])),
    ("inv", jnp.linalg.inv, (A,)),
    ("det", jnp.linalg.det, (A,)),
    ("logabsdet", lambda a: jnp.linalg.slogdet(a)[1], (A,)),
    ("cholesky", jnp.linalg.cholesky, (SPD,)),
    ("cholesky_lower_only", lambda a: L.cholesky(a, symmetrize_input=False), (SPD,)),
    ("matrix_power", lambda a: jnp.linalg.matrix_power(a, -2), (A,)),
    ("vector_norm", lambda x: jnp.linalg.norm(x, axis=-1), (B,)),
    ("vector_3_norm", lambda x: jnp.linalg.norm(x, 3, axis=1), (B,)),
    ("matrix_norm_fro", lambda x: jnp.linalg.norm(x, "fro", axis=(1, 2)), (B,)),
    ("matrix_norm_inf", lambda x: jnp.linalg.norm(x, np.inf, axis=(1, 2)), (B,)),
])
def test_linalg_grads(name, fn, args):
    check_grads(fn, args, order=2, modes=("fwd", "rev"))


def test_gradient_formulas():
    a = A[0]
    np.testing.assert_allclose(fnad.grad(jnp.linalg.det)(a),
                               np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)
    np.testing.assert_allclose(fnad.grad(lambda a: jnp.linalg.slogdet(a)[1])(a),
                               np.linalg.inv(a).T, rtol=1e-10)
    # Symmetrized input: the gradient of a cholesky-based loss is symmetric.
    g = fnad.grad(lambda s: jnp.sum(jnp.linalg.cholesky(s) ** 3))(SPD[0])
    np.testing.assert_allclose(g, np.asarray(g).T, rtol=1e-12)


def test_gradient_with_respect_to_one_operand():
    ones = np.ones_like(B)
    np.testing.assert_allclose(fnad.grad(lambda b: jnp.sum(jnp.linalg.solve(A, b)))(B),
                               np.linalg.solve(np.swapaxes(A, -1, -2), ones), rtol=1e-10)
    tri = lambda b: jnp.sum(L.triangular_solve(A, b, left_side=True, lower=True))  # noqa: E731
    np.testing.assert_allclose(fnad.grad(tri)(B),
                               np.linalg.solve(np.swapaxes(np.tril(A), -1, -2), ones),
                               rtol=1e-10)
    check_grads(lambda b: L.triangular_solve(A, b, left_side=True, lower=False), (B,), order=2)


def test_float32_values_and_grads():
    a32, spd32 = A.astype(np.float32), SPD.astype(np.float32)
    for fn in (jnp.linalg.inv, jnp.linalg.det, jnp.linalg.cholesky):
        assert fn(spd32).dtype == np.float32
    check_grads(jnp.linalg.inv, (a32,), order=1)
    check_grads(jnp.linalg.cholesky, (spd32,), order=1)
    check_grads(lambda a: jnp.linalg.slogdet(a).logabsdet, (a32,), order=1)
    check_grads(jnp.sort, (np.float32([3.0, 1.0, 2.0]),), order=1)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_sort_grads(axis):
    x = rng.permutation(12).reshape(3, 4) + rng.uniform(0, 0.5, (3, 4))
    check_grads(lambda x: jnp.sort(x, axis=axis), (x,), order=2)
    check_grads(lambda x: jnp.sort(x, axis=axis, descending=True), (x,), order=2)


def test_sort_carried_operand_grads():
    keys = np.array([[2, 0, 2, 1, 0], [1, 1, 1, 1, 1]])
    values = rng.standard_normal((2, 5))
    check_grads(lambda v: P.sort_key_val(keys, v)[1], (values,), order=2)
    # Float keys with a tie-free primary key and a carried float operand.
    x = rng.permutation(10).reshape(2, 5) + 0.25
    check_grads(lambda x, v: P.sort_multi([x, v], dimension=-1), (x, values), order=2)
    # Two keys: the integer first key has ties that the float second key breaks.
    check_grads(lambda k2: P.sort_multi([keys, k2], -1, num_keys=2)[1], (x,), order=2)
    check_grads(jnp.median, (x,), order=2)


def test_vjp_unpermutes_without_gather():
    x = np.array([3.0, 1.0, 2.0, 1.5])
    out, pullback = fnad.vjp(jnp.sort, x)
    ct, = pullback(jnp.asarray(np.array([10.0, 20.0, 30.0, 40.0])))
    np.testing.assert_array_equal(out, np.sort(x))
    np.testing.assert_array_equal(ct, [40.0, 10.0, 30.0, 20.0])


# --------------------------------------------------------------------------- sorting values

@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3, None])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_sort_and_argsort_with_ties(axis, dtype):
    x = rng.integers(0, 3, (3, 4, 5)).astype(dtype)
    np.testing.assert_array_equal(jnp.sort(x, axis), np.sort(x, axis))
    np.testing.assert_array_equal(jnp.argsort(x, axis), np.argsort(x, axis, stable=True))
    assert jnp.sort(x, axis).dtype == dtype
    assert jnp.argsort(x, axis).dtype == np.int32      # the default int, as in JAX
    expected = np.flip(np.sort(x, axis), axis) if axis is not None else np.sort(x, None)[::-1]
    np.testing.assert_array_equal(jnp.sort(x, axis, descending=True), expected)


def test_argsort_descending_is_stable():
    x = np.array([1, 3, 3, 2, 3, 1])
    np.testing.assert_array_equal(jnp.argsort(x, descending=True), [1, 2, 4, 3, 0, 5])


def test_lexsort_median_and_nan():
    k1, k2 = rng.integers(0, 3, (2, 4, 6))
    np.testing.assert_array_equal(jnp.lexsort([k1, k2]), np.lexsort([k1, k2]))
    np.testing.assert_array_equal(jnp.lexsort([k1, k2], axis=0), np.lexsort([k1, k2], axis=0))
    x = rng.standard_normal((4, 5))
    for axis in (None, 0, 1, -1):
        np.testing.assert_allclose(jnp.median(x, axis), np.median(x, axis))
    np.testing.assert_allclose(jnp.median(x, 0, keepdims=True), np.median(x, 0, keepdims=True))
    x[1, 2] = np.nan
    np.testing.assert_array_equal(jnp.sort(x, 1), np.sort(x, 1))
    np.testing.assert_array_equal(jnp.argsort(x, 1), np.argsort(x, 1, stable=True))
    np.testing.assert_allclose(jnp.median(x, 1), np.median(x, 1))


def test_lax_sort_interface():
    x = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])
    np.testing.assert_array_equal(P.sort(x), np.sort(x))
    np.testing.assert_array_equal(P.sort(x, dimension=0), np.sort(x, 0))
    keys, vals = P.sort((x, -x), num_keys=1)
    np.testing.assert_array_equal(vals, -np.sort(x))
    np.testing.assert_array_equal(P.argsort(x, 0), np.argsort(x, 0))


# --------------------------------------------------------------------------- vmap rules

def test_batch_rules_match_a_loop():
    a, b = A, B
    out, dim = L.solve_p.batch((np.moveaxis(a, 0, 2), b[0]), (2, None))
    np.testing.assert_allclose(np.moveaxis(np.asarray(out), dim, 0),
                               np.stack([np.linalg.solve(a[i], b[0]) for i in range(2)]))
    outs, dims = L.slogdet_p.batch((np.moveaxis(a, 0, 1),), (1,))
    np.testing.assert_allclose(outs[1], np.linalg.slogdet(a)[1])
    x = rng.standard_normal((3, 4))
    outs, dims = P.sort_p.batch((x, np.arange(4.0)), (0, None), dimension=0, num_keys=1)
    np.testing.assert_array_equal(outs[0], np.sort(x, 1))
    np.testing.assert_array_equal(outs[1], np.argsort(x, 1).astype(float))


# --------------------------------------------------------------------------- errors

def test_linalg_errors():
    with pytest.raises(ShapeError, match=r"square.*\(2, 3\)"):
        jnp.linalg.inv(np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"\(3, 3\).*\(4,\)"):
        jnp.linalg.solve(np.eye(3), np.ones(4))
    with pytest.raises(ShapeError, match="leading dimensions"):
        L.solve(np.ones((2, 3, 3)), np.ones((3, 3, 1)))
    with pytest.raises(ShapeError, match="columns"):
        L.triangular_solve(np.eye(3), np.ones((3, 2)), left_side=False)
    with pytest.raises(DTypeError, match="float32 or float64"):
        L.det(np.eye(3, dtype=np.int64))
    with pytest.raises(DTypeError, match="one dtype"):
        L.solve(np.eye(3), np.ones((3, 1), np.float32))
    with pytest.raises(DTypeError, match="float16"):
        jnp.linalg.det(np.eye(2, dtype=np.float16))
    with pytest.raises(ShapeError, match="at least 2-d"):
        L.cholesky_p.bind(np.ones(3))
    with pytest.raises(np.linalg.LinAlgError):
        jnp.linalg.cholesky(-np.eye(3))
    with pytest.raises(np.linalg.LinAlgError):
        jnp.linalg.solve(np.zeros((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="invalid norm order"):
        jnp.linalg.norm(np.eye(3), 3)
    with pytest.raises(ValueError, match="invalid norm order"):
        jnp.linalg.norm(np.ones(3), "fro")
    with pytest.raises(ShapeError, match="1-d or 2-d"):
        jnp.linalg.norm(np.ones((2, 2, 2)), 1)


def test_sort_errors():
    with pytest.raises(ShapeError, match="dimension 2"):
        jnp.sort(np.ones((2, 3)), axis=2)
    with pytest.raises(ShapeError, match="one shape"):
        P.sort_multi([np.ones(3), np.ones(4)])
    with pytest.raises(ValueError, match="num_keys"):
        P.sort_multi([np.ones(3)], num_keys=2)
    with pytest.raises(ValueError, match="0-d"):
        jnp.sort(np.float64(1.0))
