"""Indexing: x[idx], x.at[idx], take & co. against numpy; the gather / scatter /
dynamic_slice primitives against numpy references, their derivatives against finite
differences, their batching rules against loops; and the errors."""
import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
import fnad.numpy as fnp
from fnad.errors import ConcretizationError, DTypeError, ShapeError
from fnad.primitives import index as I
from fnad.test_util import check_grads

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
MASK01 = (A[:, :, 0, 0] % 2 == 0)
IDX = np.array([[0, 1], [1, 0]])

# Every expression is checked as a read, and as .at set / add / multiply / min / max.
EXPRESSIONS = {
    "int": 1,
    "negative int": -1,
    "ints": (1, 2),
    "int after slice": (slice(None), 1),
    "ellipsis int": (Ellipsis, 2),
    "newaxis": (None, 0),
    "negative step": (slice(1, None, -1),),
    "steps": (slice(None, None, -2), slice(1, 3), Ellipsis, slice(None, None, 3)),
    "empty slice": (slice(5, 1),),
    "reversed partial": (slice(-1, None, -1), slice(3, 0, -2)),
    "list": ([0, 1, 1],),
    "numpy array 2d": (IDX,),
    "arrays separated": (slice(None), [0, 2], slice(None), [1, 4]),
    "int and array separated": (0, slice(None), [1, 2]),
    "int and array adjacent": (slice(None), 0, [1, 2]),
    "arrays around ellipsis": (np.array([[0, 1], [1, 0]]), Ellipsis, np.array([0, 4])),
    "array after newaxis": (Ellipsis, None, [0, -1]),
    "arrays around newaxis": ([0], None, [0]),
    "arrays around empty-able ellipsis": (slice(None), [0], Ellipsis, [0]),
    "broadcast arrays": ([1, 0], [[0], [2]], 1),
    "mask": (MASK01,),
    "mask and slice": (MASK01, slice(1, 2)),
    "mask after slice": (slice(None), A[0, :, :, 0] > 20),
    "0-d array": (np.array(1), [2]),
    "empty list": ([],),
    "scalar true": (True,),
    "scalar false": (False, 0),
    "scalar bool adjacent": (slice(None), True, [1, 2]),
    "all": (Ellipsis,),
    "full slices": (slice(None), slice(None)),
}
UNIQUE = [k for k in EXPRESSIONS if k not in ("list", "numpy array 2d", "broadcast arrays")]


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_getitem_matches_numpy(name):
    idx = EXPRESSIONS[name]
    got = jnp.asarray(A)[idx]
    expected = A[idx]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(got), expected)


@pytest.mark.parametrize("idx", [1, (slice(1, None), 2), (Ellipsis, slice(None, None, -1)),
                                 (None, slice(None), 0, slice(3, 0, -2)), (slice(7, 1),)])
def test_basic_indexing_uses_structural_primitives_only(idx, monkeypatch):
    def forbidden(*args, **params):
        raise AssertionError("basic indexing must not gather")
    monkeypatch.setattr(I.gather_p, "impl", forbidden)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(A)[idx]), A[idx])


def test_index_kinds():
    x = jnp.asarray(A)
    for idx in [np.int64(1), jnp.asarray(np.array([1, 0])), [np.int32(1), 0],
                (jnp.asarray(np.array(1)), slice(None)), jnp.asarray(MASK01),
                np.array([1, 0], np.uint8)]:
        expected = A[np.asarray(idx) if isinstance(idx, fnad.Array) else idx]
        np.testing.assert_array_equal(np.asarray(x[idx]), expected)
    assert [float(r[0, 0, 0]) for r in x] == [0.0, 60.0]      # __iter__ goes through x[i]


def _updated(name, op, values):
    idx = EXPRESSIONS[name]
    expected = A.copy()
    if op == "set":
        expected[idx] = values
    else:
        ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum,
                 "max": np.maximum}[op]
        ufunc.at(expected, idx, values)
    return expected


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("name", EXPRESSIONS)
def test_at_updates_match_numpy(name, op):
    if op == "set" and name not in UNIQUE:
        pytest.skip("numpy's assignment order with repeated indices is unspecified")
    idx = EXPRESSIONS[name]
    shape = A[idx].shape
    values = (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 7) * 30 - 50
    got = getattr(jnp.asarray(A).at[idx], op)(values)
    np.testing.assert_array_equal(np.asarray(got), _updated(name, op, values))


def test_at_values_broadcast_and_cast():
    x = jnp.asarray(np.zeros((3, 4), np.float32))
    out = x.at[1].set(2.5)
    assert out.dtype == np.float32 and np.asarray(out)[1].tolist() == [2.5] * 4
    out = x.at[:, 1:3].add(np.array([[1, 2]]))            # int values cast to float32
    assert out.dtype == np.float32 and np.asarray(out)[:, 1:3].tolist() == [[1, 2]] * 3
    out = x.at[0].set(np.ones((1, 1, 4)))                  # leading 1s dropped as numpy does
    assert np.asarray(out)[0].tolist() == [1] * 4
    xi = jnp.asarray(np.arange(4, dtype=np.int32))
    out = xi.at[1].set(2.7)
    assert out.dtype == np.int32 and np.asarray(out).tolist() == [0, 2, 2, 3]
    x64 = jnp.asarray(np.zeros(2))
    assert np.asarray(x64.at[0].set(0.1))[0] == 0.1       # no detour through float32
    with pytest.raises(ShapeError):
        x.at[0].set(np.ones(3))


def test_at_drops_out_of_range_and_wraps_negative():
    x = jnp.asarray(np.zeros(5))
    np.testing.assert_array_equal(np.asarray(x.at[np.array([0, 7, -1, -9])].add(1.0)),
                                  [1, 0, 0, 0, 1])
    np.testing.assert_array_equal(np.asarray(x.at[9].set(3.0)), np.zeros(5))
    np.testing.assert_array_equal(np.asarray(x.at[9].set(3.0, mode="clip")), [0, 0, 0, 0, 3])
    y = jnp.asarray(np.zeros((3, 2)))
    np.testing.assert_array_equal(np.asarray(y.at[[0, 5], 1].set(1.0)), [[0, 1], [0, 0], [0, 0]])
    with pytest.raises(ValueError, match="mode"):
        x.at[0].set(1.0, mode="wrap")


def test_at_duplicates_and_other_ops():
    x = jnp.asarray(np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(x.at[np.array([1, 1, 1])].set(
        np.array([5.0, 6.0, 7.0]))), [0, 7, 2, 3])         # the last update wins
    np.testing.assert_array_equal(np.asarray(x.at[np.array([1, 1])].add(1.0)), [0, 3, 2, 3])
    np.testing.assert_allclose(np.asarray(x.at[2].divide(4.0)), [0, 1, 0.5, 3])
    np.testing.assert_array_equal(np.asarray(x.at[1:3].get()), [1, 2])
    np.testing.assert_array_equal(np.asarray(x.at[np.array([0, 9, -1])].get(mode="fill")),
                                  [0, np.nan, 3])
    np.testing.assert_array_equal(np.asarray(x.at[np.array([0, 9])].get(mode="fill",
                                                                      fill_value=-1)), [0, -1])
    np.testing.assert_array_equal(np.asarray(x.at[np.array([0, 9])].get(mode="clip")), [0, 3])
    y = jnp.asarray(A)
    np.testing.assert_array_equal(
        np.asarray(y.at[:, [0, 9], 1].get(mode="fill", fill_value=-1.0)),
        np.where(np.array([True, False])[None, :, None], A[:, [0, 0], 1], -1))


def test_take_and_friends_match_numpy():
    x = jnp.asarray(A)
    idx = np.array([[0, 3], [-1, 2]])
    for axis in (None, 0, 2, -1):
        n = A.size if axis is None else A.shape[axis]
        i = idx % n if axis is not None and n < 4 else idx
        np.testing.assert_array_equal(np.asarray(jnp.take(x, i, axis=axis)),
                                      np.take(A, i, axis=axis))
    for mode in ("wrap", "clip"):
        np.testing.assert_array_equal(np.asarray(jnp.take(x, [-7, 1, 9], axis=2, mode=mode)),
                                      np.take(A, [-7, 1, 9], axis=2, mode=mode))
    filled = jnp.take(x, [0, 9], axis=3, mode="fill", fill_value=-2.0)
    np.testing.assert_array_equal(np.asarray(filled),
                                  np.stack([A[..., 0], np.full(A.shape[:3], -2.0)], -1))
    with pytest.raises(IndexError, match="out of bounds"):
        jnp.take(x, [5], axis=3)
    order = np.argsort(-A, axis=1)
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(x, order, axis=1)),
                                  np.take_along_axis(A, order, axis=1))
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(x, order[:, :1], axis=1)),
                                  np.take_along_axis(A, order[:, :1], axis=1))
    flat = np.array([3, 0, -1])
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(x, flat, axis=None)),
                                  np.take_along_axis(A, flat, axis=None))
    expected = A.copy()
    np.put_along_axis(expected, order[:, :2], -1.0, axis=1)
    np.testing.assert_array_equal(
        np.asarray(jnp.put_along_axis(x, order[:, :2], -1.0, axis=1)), expected)


def test_nonzero_family_and_triangles():
    m = A[0, :, :, 0] % 3 == 0
    for got, want in zip(jnp.nonzero(jnp.asarray(m)), np.nonzero(m)):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(jnp.argwhere(m)), np.argwhere(m))
    np.testing.assert_array_equal(np.asarray(jnp.flatnonzero(m)), np.flatnonzero(m))
    padded = jnp.nonzero(jnp.asarray(np.array([0, 3, 0, 4])), size=3, fill_value=-1)[0]
    np.testing.assert_array_equal(np.asarray(padded), [1, 3, -1])
    assert len(jnp.where(jnp.asarray(m))) == 2
    a = A[0, 0]
    for k in (-1, 0, 2):
        np.testing.assert_array_equal(np.asarray(jnp.tril(jnp.asarray(a), k)), np.tril(a, k))
        np.testing.assert_array_equal(np.asarray(jnp.triu(jnp.asarray(A), k)), np.triu(A, k))
        for got, want in zip(jnp.triu_indices(4, k, 5), np.triu_indices(4, k, 5)):
            np.testing.assert_array_equal(np.asarray(got), want)
    rows, cols = jnp.diag_indices(3)
    assert np.asarray(jnp.asarray(np.eye(3))[rows, cols]).tolist() == [1, 1, 1]
    np.testing.assert_array_equal(np.asarray(jnp.asarray(A)[jnp.ix_([0, 1], [2])]),
                                  A[np.ix_([0, 1], [2])])


# --------------------------------------------------------------------------- primitives

def _gather_ref(operand, indices, mode):
    k = indices.shape[-1]
    batch, rest = indices.shape[:-1], operand.shape[k:]
    rows = []
    for vector in indices.reshape(int(np.prod(batch)), k):
        wrapped = [i + n if i < 0 else i for i, n in zip(vector, operand.shape)]
        if all(0 <= i < n for i, n in zip(wrapped, operand.shape)) or mode == "clip":
            rows.append(operand[tuple(min(max(i, 0), n - 1)
                                      for i, n in zip(wrapped, operand.shape))])
        else:
            rows.append(np.zeros(rest))
    return np.array(rows).reshape(batch + rest)


def _scatter_ref(ufunc, operand, indices, updates, mode):
    k = indices.shape[-1]
    dims = np.array(operand.shape[:k])
    wrapped = np.where(indices < 0, indices + dims, indices)
    inside = np.all((wrapped >= 0) & (wrapped < dims), axis=-1)
    if mode == "clip":
        wrapped, inside = np.clip(wrapped, 0, dims - 1), np.ones_like(inside)
    out = operand.copy()
    for b in zip(*np.nonzero(inside)) if inside.ndim else [()]:
        position = tuple(wrapped[b])
        out[position] = updates[b] if ufunc is None else ufunc(out[position], updates[b])
    return out


SCATTER_REFS = {"scatter": None, "scatter_add": np.add, "scatter_mul": np.multiply,
                "scatter_min": np.minimum, "scatter_max": np.maximum}

# (operand shape, indices): out-of-range, negative and repeated index vectors included.
INDEX_CASES = {
    "rows": ((5, 3), np.array([[1], [-1], [7], [1], [-6]])),
    "elements": ((4, 3), np.array([[[0, 1], [3, -1]], [[4, 0], [1, 1]]])),
    "all axes of 3d": ((2, 3, 4), np.array([[1, 2, 3], [0, 0, 0], [1, 2, 3]])),
    "k=0": ((3, 2), np.zeros((2, 0), np.int64)),
    "empty batch": ((3, 2), np.zeros((0, 1), np.int64)),
    "int32 scalar batch": ((4, 2), np.array([2], np.int32)),
}


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("case", INDEX_CASES)
def test_gather_and_scatters_match_references(case, mode):
    shape, indices = INDEX_CASES[case]
    rng = np.random.default_rng(0)
    operand = rng.standard_normal(shape).round(1)
    out = I.gather(jnp.asarray(operand), indices, mode=mode)
    np.testing.assert_array_equal(np.asarray(out), _gather_ref(operand, indices, mode))
    updates = rng.standard_normal(indices.shape[:-1] + shape[indices.shape[-1]:]).round(1)
    for name, ufunc in SCATTER_REFS.items():
        fn = getattr(I, name)
        got = fn(jnp.asarray(operand), indices, jnp.asarray(updates), mode=mode)
        np.testing.assert_array_equal(np.asarray(got),
                                      _scatter_ref(ufunc, operand, indices, updates, mode))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.uint8, np.bool_])
def test_dtypes_are_kept(dtype):
    operand = np.arange(6).reshape(3, 2).astype(dtype)
    indices = np.array([[2], [0], [0]], np.int32)
    assert I.gather(jnp.asarray(operand), indices).dtype == dtype
    updates = jnp.asarray(np.ones((3, 2), dtype))
    names = ["scatter", "scatter_min", "scatter_max"] + (
        [] if dtype == np.bool_ else ["scatter_add", "scatter_mul"])
    for name in names:
        out = getattr(I, name)(jnp.asarray(operand), indices, updates)
        assert out.dtype == dtype
        np.testing.assert_array_equal(
            np.asarray(out), _scatter_ref(SCATTER_REFS[name], operand, indices,
                                          np.asarray(updates), "fill"))


def test_dynamic_slice_clamps_like_jax():
    x = jnp.asarray(A[0, 0])                        # (4, 5)
    cases = [((1, 2), (2, 2), A[0, 0, 1:3, 2:4]), ((3, 4), (2, 3), A[0, 0, 2:4, 2:5]),
             ((-1, -5), (1, 2), A[0, 0, 3:4, 0:2]), ((-9, 9), (4, 0), A[0, 0, :, 5:5])]
    for starts, sizes, expected in cases:
        np.testing.assert_array_equal(np.asarray(I.dynamic_slice(x, starts, sizes)), expected)
    starts = (jnp.asarray(np.int32(3)), jnp.asarray(np.int64(9)))
    out = I.dynamic_update_slice(x, jnp.asarray(-np.ones((2, 2))), starts)
    expected = A[0, 0].copy()
    expected[2:4, 3:5] = -1
    np.testing.assert_array_equal(np.asarray(out), expected)
    np.testing.assert_array_equal(np.asarray(I.dynamic_index_in_dim(x, -1, 1, False)),
                                  A[0, 0, :, -1])
    np.testing.assert_array_equal(
        np.asarray(I.dynamic_update_index_in_dim(x, jnp.asarray(np.zeros(5)), 1, 0)),
        np.where(np.arange(4)[:, None] == 1, 0, A[0, 0]))


# --------------------------------------------------------------------------- derivatives

RNG = np.random.default_rng(1)
OPERAND = RNG.standard_normal((4, 3))
ROWS = np.array([[1], [1], [3], [-1], [9]])          # repeated, negative, out of range
UPDATES = RNG.standard_normal((5, 3))


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_grads(mode):
    check_grads(lambda x: I.gather(x, ROWS, mode=mode), (OPERAND,), order=2,
                modes=("fwd", "rev"))
    elements = np.array([[0, 2], [3, -1], [0, 2]])
    check_grads(lambda x: I.gather(x, elements, mode=mode), (OPERAND,), order=2,
                modes=("fwd", "rev"))


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("name", list(SCATTER_REFS))
def test_scatter_grads(name, mode):
    fn = getattr(I, name)
    check_grads(lambda x, u: fn(x, ROWS, u, mode=mode), (OPERAND, UPDATES), order=2,
                modes=("fwd", "rev"))


def test_scatter_add_grads_with_duplicates_are_exact():
    indices = np.array([[1], [1], [1], [0]])
    updates = RNG.standard_normal((4, 3))
    ct = RNG.standard_normal((4, 3))
    _, pullback = fnad.vjp(lambda x, u: I.scatter_add(x, indices, u), OPERAND, updates)
    g_x, g_u = pullback(jnp.asarray(ct))
    np.testing.assert_array_equal(np.asarray(g_x), ct)
    np.testing.assert_array_equal(np.asarray(g_u), ct[[1, 1, 1, 0]])


def test_scatter_set_credits_the_kept_update():
    indices = np.array([[2], [0], [2]])
    updates = RNG.standard_normal((3, 3))
    ct = RNG.standard_normal((4, 3))
    _, pullback = fnad.vjp(lambda x, u: I.scatter(x, indices, u), OPERAND, updates)
    g_x, g_u = pullback(jnp.asarray(ct))
    np.testing.assert_array_equal(np.asarray(g_x), ct * np.array([[0], [1], [0], [1]]))
    np.testing.assert_array_equal(np.asarray(g_u), [np.zeros(3), ct[0], ct[2]])
    t_u = RNG.standard_normal((3, 3))
    _, t_out = fnad.jvp(lambda u: I.scatter(jnp.asarray(OPERAND), indices, u),
                        (updates,), (t_u,))
    np.testing.assert_array_equal(np.asarray(t_out)[[0, 2]], t_u[[1, 2]])


def test_scatter_mul_grads_with_zero_updates():
    indices = np.array([[1], [1], [1], [2], [2]])
    updates = RNG.standard_normal((5, 3))
    updates[0] = 0.0                     # one zero in slot 1: its partner updates get 0
    updates[3, 1] = updates[4, 1] = 0.0  # two zeros in slot 2, column 1
    check_grads(lambda x, u: I.scatter_mul(x, indices, u), (OPERAND, updates), order=1,
                modes=("fwd", "rev"))
    g_u = fnad.grad(lambda u: I.scatter_mul(jnp.asarray(OPERAND), indices, u).sum())(updates)
    expected = OPERAND[1] * updates[1] * updates[2]
    np.testing.assert_allclose(np.asarray(g_u)[0], expected)
    np.testing.assert_array_equal(np.asarray(g_u)[3:, 1], [0, 0])


def test_scatter_max_ties_share_the_derivative():
    x = np.array([1.0, 5.0])
    updates = np.array([5.0, 5.0, 2.0])
    g_x, g_u = fnad.grad(lambda x, u: I.scatter_max(x, np.array([[1], [1], [0]]), u).sum(),
                         argnums=(0, 1))(x, updates)
    np.testing.assert_allclose(np.asarray(g_x), [0, 1 / 3])
    np.testing.assert_allclose(np.asarray(g_u), [1 / 3, 1 / 3, 1])


def test_dynamic_slice_grads():
    starts = (jnp.asarray(np.int32(2)), -2)
    check_grads(lambda x: I.dynamic_slice(x, starts, (2, 2)), (OPERAND,), order=2,
                modes=("fwd", "rev"))
    check_grads(lambda x, u: I.dynamic_update_slice(x, u, (5, -1)), (OPERAND, UPDATES[:2, :2]),
                order=2, modes=("fwd", "rev"))


GRAD_EXPRESSIONS = ["int", "steps", "reversed partial", "list", "arrays separated",
                    "broadcast arrays", "mask and slice", "array after newaxis",
                    "scalar bool adjacent"]


@pytest.mark.parametrize("name", GRAD_EXPRESSIONS)
def test_getitem_and_at_grads(name):
    idx = EXPRESSIONS[name]
    x = RNG.standard_normal(A.shape)
    check_grads(lambda x: jnp.asarray(x)[idx], (x,), order=2, modes=("fwd", "rev"))
    values = RNG.standard_normal(A[idx].shape)
    for op in ("set", "add", "multiply", "max"):
        check_grads(lambda x, v: getattr(jnp.asarray(x).at[idx], op)(v), (x, values),
                    order=1 if op == "multiply" else 2, modes=("fwd", "rev"))


def test_embedding_gradient_accumulates():
    table = RNG.standard_normal((5, 2))
    ids = np.array([3, 0, 3, 3])
    g = fnad.grad(lambda t: jnp.sum(t[ids] * 2.0))(table)
    np.testing.assert_array_equal(np.asarray(g), [[2, 2], [0, 0], [0, 0], [6, 6], [0, 0]])
    assert fnad.grad(lambda t: t[1:3, ::-1].sum())(table).tolist() == [[0, 0], [1, 1],
                                                                        [1, 1], [0, 0], [0, 0]]


# --------------------------------------------------------------------------- batching

def _check_batch(prim, args, dims, **params):
    size = next(np.shape(a)[d] for a, d in zip(args, dims) if d is not None)
    expected = np.stack([np.asarray(prim.bind(*[
        jnp.asarray(a if d is None else np.take(a, b, axis=d)) for a, d in zip(args, dims)],
        **params)) for b in range(size)])
    out, out_dim = prim.batch([jnp.asarray(a) for a in args], list(dims), **params)
    np.testing.assert_array_equal(np.moveaxis(np.asarray(out), out_dim, 0), expected)


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_batch_rules_match_loops(mode):
    rng = np.random.default_rng(2)
    op, op_b = rng.standard_normal((5, 4, 3)), rng.standard_normal((5, 2, 4, 3))
    idx, idx_b = rng.integers(-5, 7, (6, 2)), rng.integers(-5, 7, (6, 2, 2))
    for args, dims in [((op_b, idx), (1, None)), ((op, idx_b), (None, 1)),
                       ((op_b, idx_b), (1, 1)), ((op_b, idx_b), (1, 2))]:
        _check_batch(I.gather_p, args, dims, mode=mode)
    upd, upd_b = rng.standard_normal((6, 3)), rng.standard_normal((2, 6, 3))
    for prim in I.SCATTERS.values():
        for args, dims in [((op_b, idx, upd), (1, None, None)),
                           ((op, idx_b, upd), (None, 1, None)),
                           ((op, idx, upd_b), (None, None, 0)),
                           ((op_b, idx_b, upd_b), (1, 1, 0))]:
            _check_batch(prim, args, dims, mode=mode, unique_indices=False)


def test_dynamic_slice_batch_rules_match_loops():
    rng = np.random.default_rng(3)
    op, op_b = rng.standard_normal((5, 4, 3)), rng.standard_normal((5, 2, 4, 3))
    starts_b = (np.array([1, 4]), np.int64(-2), np.array([-7, 1]))
    _check_batch(I.dynamic_slice_p, (op_b, 1, -2, 0), (1, None, None, None),
                 slice_sizes=(2, 2, 3))
    _check_batch(I.dynamic_slice_p, (op,) + starts_b, (None, 0, None, 0), slice_sizes=(2, 2, 2))
    update, update_b = rng.standard_normal((2, 2, 2)), rng.standard_normal((2, 2, 2, 2))
    _check_batch(I.dynamic_update_slice_p, (op_b, update, 1, -2, 0), (1, None, None, None, None))
    _check_batch(I.dynamic_update_slice_p, (op_b, update_b) + starts_b, (1, 0, 0, None, 0))


# --------------------------------------------------------------------------- under jit

@pytest.mark.skipif(not hasattr(fnad, "jit"), reason="fnad.jit not available")
def test_traced_indices_under_jit():
    x = jnp.asarray(A[0])
    i = jnp.asarray(np.array([2, -1, 0]))
    np.testing.assert_array_equal(np.asarray(fnad.jit(lambda x, i: x[:, i, 1:])(x, i)),
                                  A[0][:, [2, -1, 0], 1:])
    np.testing.assert_array_equal(np.asarray(fnad.jit(lambda x, i: x[i[0]])(x, i)), A[0][2])
    expected = A[0].copy()
    np.add.at(expected, (slice(None), [2, 3, 0]), 1.0)
    np.testing.assert_array_equal(np.asarray(fnad.jit(lambda x, i: x.at[:, i].add(1.0))(x, i)),
                                  expected)
    with pytest.raises(ConcretizationError, match="concrete mask"):
        fnad.jit(lambda x: x[x > 3])(x)
    with pytest.raises(ConcretizationError, match="nonzero needs a concrete array"):
        fnad.jit(jnp.nonzero)(x)


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("idx,match", [
    (2, r"index 2 is out of bounds for axis 0 with size 2 \(indexing an array of shape "
        r"\(2, 3, 4, 5\)\)"),
    ((0, -4), "index -4 is out of bounds for axis 1 with size 3"),
    ((Ellipsis, [0, 5]), "index 5 is out of bounds for axis 3 with size 5"),
    ((0, 0, 0, 0, 0), "too many indices"),
    ((Ellipsis, 0, Ellipsis), "single ellipsis"),
    (1.5, "valid indices"),
    (np.array([1.0]), "valid indices"),
    (np.array([True, False, True]), "boolean index"),
    (([0, 1], [0, 1, 2]), "shape mismatch"),
])
def test_index_errors(idx, match):
    with pytest.raises(IndexError, match=match):
        jnp.asarray(A)[idx]


def test_arrays_are_immutable():
    x = jnp.asarray(A)
    with pytest.raises(TypeError, match="at\\[idx\\]"):
        x[0] = 1

    def write(y):
        y[0] = 1.0
        return y
    with pytest.raises(TypeError):
        fnad.grad(lambda y: write(y).sum())(A)


def test_primitive_shape_errors():
    x = jnp.asarray(OPERAND)
    with pytest.raises(DTypeError, match="integers"):
        I.gather(x, np.array([[1.0]]))
    with pytest.raises(ShapeError, match="k <= 2"):
        I.gather(x, np.zeros((1, 3), np.int64))
    with pytest.raises(ShapeError, match="expected \\(2, 3\\)"):
        I.scatter_add(x, np.array([[0], [1]]), jnp.asarray(np.ones((2, 2))))
    with pytest.raises(DTypeError):
        I.scatter_add(x, np.array([[0]]), jnp.asarray(np.ones((1, 3), np.float32)))
    with pytest.raises(ShapeError, match="sizes"):
        I.dynamic_slice(x, (0, 0), (5, 1))
    with pytest.raises(ShapeError, match="one scalar integer start per axis"):
        I.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(ValueError, match="mode"):
        I.gather(x, np.array([[0]]), mode="wrap")


@pytest.mark.parametrize("small", [-1, 1 << 30])
def test_numba_loops_and_numpy_paths_agree(monkeypatch, small):
    """The kernels take numpy's fancy indexing for small inputs and Numba loops for
    large ones; force each path and compare against numpy."""
    from fnad.kernels.cpu import index as kernels
    monkeypatch.setattr(kernels, "SMALL", small)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 4))
    idx = np.array([0, 5, -1, 2, 2, 7])              # negative, duplicate, out of range
    got = fnp.asarray(x).at[idx].add(1.0)
    expected = x.copy()
    np.add.at(expected, idx[idx < 6], 1.0)
    np.testing.assert_allclose(np.asarray(got), expected)
    got = fnp.asarray(x).at[idx].set(fnp.arange(6.0)[:, None] * np.ones(4))
    expected = x.copy()
    for b, i in enumerate(idx):                       # last update wins
        if -6 <= i < 6:
            expected[i] = b
    np.testing.assert_allclose(np.asarray(got), expected)
    got = fnp.take_along_axis(fnp.asarray(x), fnp.asarray([[1], [0], [3], [2], [1], [0]]), axis=1)
    np.testing.assert_allclose(np.asarray(got), np.take_along_axis(x, np.array([[1], [0], [3], [2], [1], [0]]), axis=1))
    got = fnp.asarray(x)[np.array([[0, 1], [2, 3]]), np.array([[1, 1], [0, 2]])]
    np.testing.assert_allclose(np.asarray(got), x[np.array([[0, 1], [2, 3]]), np.array([[1, 1], [0, 2]])])
    g = fnad.grad(lambda a: fnp.sum(a[np.array([0, 0, 3])] ** 2))(fnp.asarray(x))
    expected = np.zeros_like(x)
    expected[0] = 4 * x[0]
    expected[3] = 2 * x[3]
    np.testing.assert_allclose(np.asarray(g), expected)


@pytest.mark.parametrize("index", [2 ** 70, -2 ** 70, (0, 2 ** 70), 2 ** 63])
def test_update_index_beyond_int64_is_a_clear_index_error(index):
    x = fnp.zeros((3, 3)) if isinstance(index, tuple) else fnp.zeros(3)
    with pytest.raises(IndexError, match="does not fit in int64"):
        x.at[index].set(1.0)


def test_update_index_at_int64_limit_is_dropped_as_out_of_bounds():
    np.testing.assert_array_equal(np.asarray(fnp.zeros(3).at[2 ** 63 - 1].set(1.0)), np.zeros(3))
