"""Focused tests for fnad.numpy's shape, indexing, set and construction helpers (issue
13, part B) where the differential table cannot reach: conversions of nested lists of
traced values, foreign arrays, value-dependent shapes under jit (size=), functional
versions of numpy's in-place functions, and the errors bad input gets."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.errors import ConcretizationError, ShapeError


def same(actual, expected):
    """Shape, dtype and values (NaN in place, -0.0 included) equal to numpy's."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual, expected)
    np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


# --------------------------------------------------------------------------- asarray

def nested(x):
    # four depths of nesting, mixing the traced value with Arrays, numpy and Python
    return fnp.array([[[x, 2 * x], [fnp.asarray(1.0), np.float32(-0.0)]],
                      [[3.0, x * x], [x, 4]]])


def nested_numpy(x):
    return np.array([[[x, 2 * x], [1.0, -0.0]], [[3.0, x * x], [x, 4]]], np.float32)


def test_nested_list_keeps_the_derivative_in_every_transform():
    x = 1.5
    same(nested(x), nested_numpy(x))
    # d/dx of the sum: 1 + 2 + 2x + 1 at x = 1.5
    assert float(fnad.grad(lambda x: fnp.sum(nested(x)))(x)) == 7.0
    assert float(fnad.grad(lambda x: fnp.array([[x, x], [x, 2 * x]]).sum())(1.0)) == 5.0
    _, tangent = fnad.jvp(nested, (fnp.asarray(x),), (fnp.asarray(1.0),))
    same(tangent, np.array([[[1, 2], [0, 0]], [[0, 2 * x], [1, 0]]], np.float32))
    same(fnad.jit(nested)(x), nested_numpy(x))
    xs = np.array([0.5, -1.0, 2.0], np.float32)
    same(fnad.vmap(nested)(xs), np.stack([nested_numpy(v) for v in xs]))
    grads = fnad.vmap(fnad.grad(lambda x: fnp.sum(nested(x))))(xs)
    same(grads, (4 + 2 * xs).astype(np.float32))


def test_nested_list_dtype_follows_the_lattice():
    # Python scalars are weak: a float32 traced entry keeps the list float32
    assert fnad.jit(lambda x: fnp.asarray([x, 1.0]))(np.float32(2)).dtype == np.float32
    # a float64 entry is never narrowed; an explicit dtype wins
    assert fnad.jit(lambda x: fnp.asarray([[x], [np.float64(1)]]))(np.float32(2)).dtype \
        == np.float64
    out = fnad.jit(lambda x: fnp.asarray([x, 2], dtype=np.int32))(np.float32(2.7))
    same(out, np.array([2, 2], np.int32))


def test_nested_list_of_mismatched_shapes_is_a_shape_error():
    with pytest.raises(ShapeError, match="one shape"):
        fnad.jit(lambda x: fnp.asarray([[x, x], [x]]))(1.0)


class ArrayLike:
    """An object of another library, readable only through __array__."""
    def __array__(self, dtype=None, copy=None):
        return np.arange(6, dtype=np.float32).reshape(2, 3)


def test_asarray_reads_array_protocol_objects_and_copies_by_request():
    same(fnp.asarray(ArrayLike()), np.arange(6, dtype=np.float32).reshape(2, 3))
    base = np.arange(4.0)
    shared = fnp.asarray(base, copy=False)
    copied = fnp.asarray(base)
    base[0] = 9.0
    assert float(shared[0]) == 9.0 and float(copied[0]) == 0.0
    with pytest.raises(ValueError, match="copy"):
        fnp.asarray(base, dtype=np.float32, copy=False)
    same(fnp.array(2.0, ndmin=3), np.array(2.0, np.float32, ndmin=3))


def test_asarray_of_a_jax_array_is_zero_copy():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(5.0)
    a = fnp.asarray(x)
    same(a, np.arange(5, dtype=np.float32))
    # shares JAX's buffer (JAX arrays never change, so sharing is safe)
    assert np.shares_memory(np.asarray(a), np.asarray(x))
    same(fnp.asarray(jnp.ones((2, 2), jnp.int32)), np.ones((2, 2), np.int32))


def test_asarray_of_a_torch_tensor_shares_memory():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    a = fnp.asarray(t)
    same(a, np.arange(6.0).reshape(2, 3))
    t[0, 0] = 7.0
    assert float(a[0, 0]) == 7.0            # zero-copy, as documented
    assert float(fnp.asarray(t, copy=True)[0, 0]) == 7.0
    with pytest.raises(TypeError):
        fnp.asarray(torch.ones(2, requires_grad=True))


def test_asarray_of_an_unknown_object_names_its_type():
    with pytest.raises(TypeError, match="object"):
        fnp.asarray(object())
    with pytest.raises(TypeError, match="dict"):
        fnp.asarray([{}, 1.0, fnp.asarray(1.0)])


# --------------------------------------------------------------------------- shapes

def test_trim_zeros_gradient_reaches_the_kept_values():
    x = np.array([0.0, 0.0, 1.5, -2.0, 0.0, 3.0, 0.0])
    grad = fnad.grad(lambda x: fnp.sum(fnp.trim_zeros(x) ** 2))(x)
    same(grad, np.array([0, 0, 3.0, -4.0, 0, 6.0, 0]))
    with pytest.raises(ConcretizationError, match="trim_zeros"):
        fnad.jit(fnp.trim_zeros)(x)


def test_insert_and_delete_gradients():
    x = np.arange(1.0, 5.0)
    # x[:2] * 3 inserted twice before position 1: each of x0, x1 counted 1 + 3 times
    grad = fnad.grad(lambda x: fnp.sum(fnp.insert(x, [1, 1], x[:2] * 3)))(x)
    same(grad, np.array([4.0, 4.0, 1.0, 1.0]))
    grad = fnad.grad(lambda x: fnp.sum(fnp.delete(x, [0, 2]) * x[1]))(x)
    same(grad, np.array([0.0, x[1] + x[3] + x[1], 0.0, x[1]]))


def test_shape_errors_name_the_problem():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="depths"):
        fnp.block([[a, a], a])
    with pytest.raises(TypeError, match="tuple"):
        fnp.block((a, a))
    with pytest.raises(ValueError, match="empty"):
        fnp.block([[]])
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.delete(a, 3, axis=1)
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.insert(a, 5, 1.0, axis=1)
    with pytest.raises(ShapeError, match="broadcast"):
        fnp.insert(a, [0, 1], np.ones(3), axis=1)
    with pytest.raises(ConcretizationError, match="positions"):
        fnad.jit(lambda i: fnp.delete(a, i))(1)
    with pytest.raises(ShapeError, match="3 or more"):
        fnp.dsplit(a, 3)
    with pytest.raises(ShapeError, match="equal parts"):
        fnp.split(a, 2, axis=1)
    with pytest.raises(ConcretizationError, match="split points"):
        fnad.jit(lambda i: fnp.array_split(a, i))(np.array([1]))
    with pytest.raises(ValueError, match="differ"):
        fnp.rot90(a, axes=(1, 1))
    with pytest.raises(ValueError, match="permutation"):
        fnp.permute_dims(a, (0, 0))
    with pytest.raises(ValueError, match="non-negative"):
        fnp.resize(a, (-1, 2))
