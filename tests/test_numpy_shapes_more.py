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


# --------------------------------------------------------------------------- selection

def test_value_dependent_sizes_need_size_under_jit():
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]])
    for fn in (fnp.nonzero, fnp.flatnonzero, fnp.argwhere,
               lambda a: fnp.extract(a > 0, a), lambda a: fnp.compress(a[0] > 0, a, axis=1)):
        with pytest.raises(ConcretizationError, match="size="):
            fnad.jit(fn)(x)
    same(fnad.jit(lambda a: fnp.extract(a > 0, a, size=4, fill_value=-1.0))(x),
         np.array([1.5, 2.0, 3.0, -1.0]))
    same(fnad.jit(lambda a: fnp.argwhere(a, size=2))(x), np.array([[0, 1], [1, 0]], np.int32))
    # the gradient flows through the positions the mask picked
    grad = fnad.grad(lambda a: fnp.sum(fnp.extract(a > 0, a, size=2) ** 2))(x)
    same(grad, np.array([[0.0, 3.0, 0.0], [4.0, 0.0, 0.0]]))
    batched = fnad.vmap(lambda a: fnp.flatnonzero(a, size=2, fill_value=9))(x)
    same(batched, np.array([[1, 9], [0, 2]], np.int32))


def test_functional_writers_need_inplace_false():
    a = np.zeros((3, 3))
    for call in (lambda: fnp.put(a, [0], 1.0), lambda: fnp.place(a, a == 0, [1.0]),
                 lambda: fnp.fill_diagonal(a, 1.0)):
        with pytest.raises(ValueError, match="inplace=False"):
            call()
    out = fnp.put(a, [0, 4], [1.0, 2.0], inplace=False)
    same(out, np.array([[1.0, 0, 0], [0, 2.0, 0], [0, 0, 0]]))
    assert not a.any()      # the argument is untouched


def test_selection_errors():
    a = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        fnp.choose(np.array([0, 2, 1]), [a[0], a[1]])
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.put(a, [6], 1.0, inplace=False)
    with pytest.raises(TypeError, match="boolean"):
        fnp.select([a], [a])
    with pytest.raises(ValueError, match="same length"):
        fnp.select([a > 1], [a, a])
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.compress([False, False, False, True], a, axis=1)
    with pytest.raises(ValueError, match="empty"):
        fnp.place(a, a > 1, [], inplace=False)
    with pytest.raises(ShapeError, match="equal length"):
        fnp.fill_diagonal(np.zeros((2, 3, 2)), 1.0, inplace=False)
    # a traced index out of range is clipped, as JAX does (no value to check)
    same(fnad.jit(lambda i: fnp.put(a, i, -1.0, inplace=False))(np.array([9])),
         np.where(np.arange(6) == 5, -1.0, a.ravel()).reshape(2, 3))


# --------------------------------------------------------------------------- index tricks

@pytest.mark.parametrize("expr", [
    "r_[1:4, 7, [8, 9]]", "r_[0:1:5j]", "r_['0,2', [1, 2], [3, 4]]",
    "r_['1,2,0', [1, 2], [3, 4]]", "r_['-1,3,1', [1, 2], [3, 4]]",
    "c_[[1, 2, 3], [4, 5, 6]]", "c_[[[1.5], [2.5]], [5, 6]]", "mgrid[0:3, 0:2]",
    "mgrid[0:1:3j, 1:2]", "ogrid[0:2, 0:3]", "mgrid[0:5:2]", "indices((2, 3))",
])
def test_index_tricks_match_numpy_and_jax(expr):
    got, want = eval("fnp." + expr), eval("np." + expr)
    several = isinstance(want, (list, tuple))
    assert several == isinstance(got, (list, tuple))
    for g, w in zip(got if several else [got], want if several else [want]):
        g = np.asarray(g)
        assert g.shape == w.shape and np.allclose(g, w), (expr, g, w)
        assert g.dtype.kind == w.dtype.kind and g.dtype.itemsize == 4   # default types
    jnp = pytest.importorskip("jax.numpy")
    jax_out = eval("jnp." + expr)
    for g, j in zip(got if several else [got], jax_out if several else [jax_out]):
        assert np.asarray(g).dtype == np.asarray(j).dtype, expr


def test_index_expressions_and_errors():
    assert fnp.s_[1:3, ::2] == np.s_[1:3, ::2] and fnp.index_exp[2] == (2,)
    with pytest.raises(ValueError, match="matrices"):
        fnp.r_["r", [1, 2]]
    with pytest.raises(ValueError, match="out of bounds"):
        fnp.unravel_index(np.array([12]), (3, 4))
    with pytest.raises(ValueError, match="dimension 1"):
        fnp.ravel_multi_index((np.array([0]), np.array([4])), (3, 4))
    # traced flat indices are clipped into range (JAX's rule)
    rows, cols = fnad.jit(lambda i: fnp.unravel_index(i, (3, 4)))(np.array([5, 30, -1, -13]))
    same(rows, np.array([1, 2, 2, 0]))
    same(cols, np.array([1, 3, 3, 0]))
    jnp = pytest.importorskip("jax.numpy")
    want = jnp.unravel_index(jnp.array([5, 30, -1, -13]), (3, 4))
    same(rows, np.asarray(want[0], np.int64))
    same(cols, np.asarray(want[1], np.int64))


# --------------------------------------------------------------------------- sets

def test_unique_gradient_goes_to_first_occurrences():
    x = np.array([2.0, 1.0, 2.0, 5.0])
    weights = np.arange(3.0)
    want = np.array([1.0, 0.0, 0.0, 2.0])   # unique: [1, 2, 5] from x[1], x[0], x[3]
    same(fnad.grad(lambda x: fnp.sum(fnp.unique(x) * weights))(x), want)
    sized = fnad.jit(lambda x: fnp.unique(x, size=3))
    same(fnad.grad(lambda x: fnp.sum(sized(x) * weights))(x), want)
    # intersect1d: the values come from ar1's first occurrences
    grad = fnad.grad(lambda a: fnp.sum(fnp.intersect1d(a, np.array([5.0, 2.0]))))(x)
    same(grad, np.array([1.0, 0.0, 0.0, 1.0]))


def test_set_operations_need_size_under_jit_and_batch_with_it():
    a, b = np.array([3, 1, 3, 0]), np.array([1, 4])
    for fn in (fnp.unique, fnp.unique_values, lambda x: fnp.union1d(x, b),
               lambda x: fnp.setdiff1d(x, b), lambda x: fnp.intersect1d(x, b)):
        with pytest.raises(ConcretizationError, match="size="):
            fnad.jit(fn)(a)
    rows = np.array([[1, 1, 2], [3, 3, 3]])
    same(fnad.vmap(lambda r: fnp.unique(r, size=3, fill_value=-1))(rows),
         np.array([[1, 2, -1], [3, -1, -1]]))
    same(fnad.vmap(lambda r: fnp.setdiff1d(r, b, size=2))(rows),
         np.array([[2, 2], [3, 3]]))      # padded with the smallest kept value (JAX)
    # membership and search are static-shaped: jit and vmap need nothing
    same(fnad.jit(fnp.isin)(a, b), np.isin(a, b))
    same(fnad.vmap(lambda r: fnp.searchsorted(np.array([1, 2, 3]), r))(rows),
         np.searchsorted([1, 2, 3], rows).astype(np.int32))


def test_set_and_search_errors():
    with pytest.raises(ValueError, match="method"):
        fnp.isin(np.arange(3), [1], method="hash")
    with pytest.raises(ValueError, match="1-d"):
        fnp.searchsorted(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="side"):
        fnp.searchsorted(np.ones(2), 1.0, side="middle")
    with pytest.raises(ValueError, match="size"):
        fnp.unique(np.arange(3), size=-1)


# --------------------------------------------------------------------------- more

def test_einsum_path_reports_the_order_einsum_uses():
    a, b, c = np.ones((2, 30)), np.ones((30, 40)), np.ones((40,))
    path, report = fnp.einsum_path("ij,jk,k->i", a, b, c)
    assert path == np.einsum_path("ij,jk,k->i", a, b, c, optimize="greedy")[0]
    assert isinstance(report, str)
    assert fnp.einsum_path("ii->", np.ones((3, 3)))[0] == ["einsum_path", (0,)]


def test_apply_along_axis_traces_once_and_differentiates():
    calls = []

    def first_times_last(row):
        calls.append(row.shape)
        return row[0] * row[-1]
    x = np.arange(12.0).reshape(3, 4)
    same(fnp.apply_along_axis(first_times_last, 1, x), x[:, 0] * x[:, -1])
    assert calls == [(4,)]           # one traced call, not one per row
    grad = fnad.grad(lambda x: fnp.sum(fnp.apply_along_axis(first_times_last, 0, x)))(x)
    want = np.zeros_like(x)
    want[0], want[-1] = x[-1], x[0]
    same(grad, want)
    with pytest.raises(ValueError, match="dimensions"):
        fnp.apply_over_axes(lambda a, ax: fnp.sum(a), x, [0])


def test_bit_packing_errors():
    with pytest.raises(fnad.errors.DTypeError, match="uint8"):
        fnp.unpackbits(np.array([1, 2], np.int32))
    with pytest.raises(fnad.errors.DTypeError, match="integer"):
        fnp.packbits(np.array([0.5]))
    with pytest.raises(ValueError, match="bitorder"):
        fnp.packbits(np.array([True]), bitorder="middle")
    with pytest.raises(ValueError, match="2 or 3"):
        fnp.cross(np.ones(4), np.ones(3))


def test_repeat_with_traced_counts_needs_total_repeat_length():
    a = np.arange(4.0)
    counts = np.array([1, 0, 2, 1])
    with pytest.raises(ConcretizationError, match="total_repeat_length"):
        fnad.jit(lambda r: fnp.repeat(a, r))(counts)
    same(fnad.jit(lambda r: fnp.repeat(a, r, total_repeat_length=6))(counts),
         np.array([0.0, 2.0, 2.0, 3.0, 3.0, 3.0]))     # short: the last entry repeats
    same(fnad.jit(lambda r: fnp.repeat(a, r, total_repeat_length=2))(counts),
         np.array([0.0, 2.0]))                          # long: cut
    same(fnad.vmap(lambda r: fnp.repeat(a, r, total_repeat_length=3))(
        np.array([[3, 0, 0, 0], [0, 0, 0, 1]])), np.array([[0.0, 0, 0], [3, 3, 3]]))
    with pytest.raises(ValueError, match="non-negative"):
        fnp.repeat(a, [1, -1, 0, 0])


def test_jit_keeps_the_sign_of_zero_when_adding_a_zero_constant():
    # the optimizer may drop x + (-0.0) and x - 0.0, never x + 0.0 (-0.0 + 0.0 is +0.0)
    x = np.array([-1.0, 2.0, -0.0], np.float32)
    for f in (lambda x: np.float32(0.0) + x * np.float32(0.0), lambda x: x + np.float32(0.0),
              lambda x: x - np.float32(-0.0)):
        same(fnad.jit(f)(x), f(x))
    assert "add" not in str(fnad.make_jaxpr(lambda x: x + np.float32(-0.0))(x))
    assert "sub" not in str(fnad.make_jaxpr(lambda x: x - np.float32(0.0))(x))


def test_pad_modes_errors_and_callable():
    x = np.arange(4.0)
    same(fnp.pad(x, (2, 1), lambda v, width, axis, kw: v.at[:width[0]].set(-1.0)),
         np.array([-1.0, -1.0, 0, 1, 2, 3, 0]))
    # the mean's derivative spreads over the entries it averages
    grad = fnad.grad(lambda x: fnp.sum(fnp.pad(x, 2, "mean")))(np.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose(np.asarray(grad), np.full(3, 1 + 4 / 3))
    with pytest.raises(ValueError, match="unknown mode"):
        fnp.pad(x, 1, "spiral")
    with pytest.raises(ValueError, match="stat_length"):
        fnp.pad(x, 1, "edge", stat_length=2)
    with pytest.raises(ValueError, match="no value"):
        fnp.pad(x, 1, "mean", stat_length=0)
    with pytest.raises(ValueError, match="empty axis"):
        fnp.pad(np.zeros((0, 2)), 1, "edge")
    with pytest.raises(ValueError, match="non-negative"):
        fnp.pad(x, -1)


def test_asarray_takes_jax_order_and_device():
    cpu = fnad.devices("cpu")[0]
    same(fnp.asarray([1.5, 2.0], device=cpu), np.array([1.5, 2.0], np.float32))
    same(fnp.array(3, ndmin=2, device=cpu), np.array([[3]], np.int32))
    same(fnp.astype(np.ones(2), np.int32, device=cpu), np.ones(2, np.int32))
    same(fnp.asarray(np.ones((2, 2)), order="F"), np.ones((2, 2)))
    with pytest.raises(ValueError, match="order"):
        fnp.asarray([1.0], order="Z")
    with pytest.raises(ValueError, match="device_put"):
        fnad.jit(lambda x: fnp.asarray(x, device=cpu))(1.0)


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("wrap", [True, False])
def test_take_along_axis_modes_and_negative_indices(mode, wrap):
    a = np.arange(12.0).reshape(3, 4)
    i = np.array([[0, -1], [5, 2], [-5, 3]])
    rows = np.arange(3)[:, None]

    def reference(k):          # JAX's rule, written out
        k = np.where(k < 0, k + 4, k) if wrap else k
        if mode == "clip":
            return a[rows, np.clip(k, 0, 3)]
        return np.where((k >= 0) & (k < 4), a[rows, np.clip(k, 0, 3)], np.nan)
    f = lambda a, i: fnp.take_along_axis(a, i, 1, mode=mode, wrap_negative_indices=wrap)  # noqa: E731
    same(f(a, i), reference(i))
    same(fnad.jit(f)(a, i), reference(i))


def test_delete_with_traced_distinct_positions():
    a = np.arange(12.0).reshape(3, 4)
    f = lambda a, i: fnp.delete(a, i, axis=1, assume_unique_indices=True)  # noqa: E731
    same(fnad.jit(f)(a, np.array([3, 0])), np.delete(a, [3, 0], axis=1))
    same(fnad.jit(f)(a, np.array([-1])), np.delete(a, [-1], axis=1))
    rows = fnad.vmap(lambda i: fnp.delete(np.arange(5.0), i, assume_unique_indices=True))(
        np.array([[0, 1], [4, 2]]))
    same(rows, np.array([[2.0, 3, 4], [0, 1, 3]]))
    grad = fnad.grad(lambda a: fnp.sum(fnad.jit(f)(a, np.array([1])) ** 2))(a)
    same(grad, np.where(np.arange(4) == 1, 0.0, 2 * a))
    with pytest.raises(ConcretizationError, match="assume_unique_indices"):
        fnad.jit(lambda a, i: fnp.delete(a, i))(a, np.array([1]))


def test_insert_at_traced_positions():
    a = np.arange(12.0).reshape(3, 4)
    for obj, values in ((1, 9.0), (np.array([3, 0, 3]), [1.0, 2.0, 3.0]), (np.array([0, -1]), 5.0)):
        want = np.insert(a, obj, values, axis=1)
        same(fnad.jit(lambda p: fnp.insert(a, p, values, axis=1))(obj), want)
    rows = fnad.vmap(lambda i: fnp.insert(np.arange(3.0), i, -1.0))(np.array([0, 3, -1]))
    same(rows, np.array([[-1.0, 0, 1, 2], [0, 1, 2, -1], [0, 1, -1, 2]]))
    # out of range when traced: clipped into [0, n], as JAX does
    same(fnad.jit(lambda i: fnp.insert(np.arange(3.0), i, -1.0))(7),
         np.array([0.0, 1, 2, -1]))
    grad = fnad.grad(lambda v: fnp.sum(fnad.jit(
        lambda v, i: fnp.insert(np.zeros(3), i, v))(v, 1) * np.arange(4.0)))(2.0)
    assert float(grad) == 1.0
