"""Collectives over a vmap-bound axis name: values against numpy (the members are the
rows of a numpy array), derivatives against float64 finite differences and
hand-derived rules, composed with vmap, jit and grad. The same collectives over MPI
processes are tested by tests/test_distributed.py against these vmap references."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import lax
from fnad.lax.parallel import UnboundAxisNameError
from fnad.test_util import check_grads

N = 4
RNG = np.random.default_rng(0)
X = RNG.normal(size=(N, 3))            # member k holds X[k]
RING = [(k, (k + 1) % N) for k in range(N)]


def over(f, *args, in_axes=0):
    """f run by each of N members (rows), the axis named 'i'."""
    return np.asarray(fnad.vmap(f, in_axes=in_axes, axis_name="i")(*args))


def each(row):
    """numpy's answer given to every member."""
    return np.broadcast_to(row, (N,) + np.shape(row))


# --------------------------------------------------------------------------- values

VALUES = {
    "psum": (lambda x: lax.psum(x, "i"), lambda X: each(X.sum(0))),
    "pmean": (lambda x: lax.pmean(x, "i"), lambda X: each(X.mean(0))),
    "pmax": (lambda x: lax.pmax(x, "i"), lambda X: each(X.max(0))),
    "pmin": (lambda x: lax.pmin(x, "i"), lambda X: each(X.min(0))),
    "all_gather": (lambda x: lax.all_gather(x, "i"), lambda X: each(X)),
    "all_gather axis=1": (lambda x: lax.all_gather(x, "i", axis=1), lambda X: each(X.T)),
    "all_gather tiled": (lambda x: lax.all_gather(x, "i", tiled=True),
                         lambda X: each(X.reshape(-1))),
    "psum_scatter": (lambda x: lax.psum_scatter(x[:, None] * fnp.ones(N), "i",
                                                scatter_dimension=1),
                     lambda X: (X[:, :, None] * np.ones(N)).sum(0).T),
    "psum_scatter tiled": (lambda x: lax.psum_scatter(fnp.concatenate([x] * N), "i",
                                                      tiled=True),
                           lambda X: np.tile(X.sum(0), N).reshape(N, 3)),
    "ppermute ring": (lambda x: lax.ppermute(x, "i", RING), lambda X: np.roll(X, 1, 0)),
    "ppermute partial": (lambda x: lax.ppermute(x, "i", [(0, 2), (3, 1)]),
                         lambda X: np.stack([0 * X[0], X[3], X[0], 0 * X[0]])),
    "axis_index": (lambda x: lax.axis_index("i") + 0 * x.astype(np.int32),
                   lambda X: np.arange(N, dtype=np.int32)[:, None] + 0 * X.astype(np.int32)),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_values_match_numpy(name):
    f, ref = VALUES[name]
    out = over(f, X)
    np.testing.assert_allclose(out, ref(X), rtol=1e-14, atol=1e-14)
    assert out.dtype == ref(X).dtype


def test_axis_size_and_unbatched_operands():
    c = np.array([1.0, -2.0])
    out = fnad.vmap(lambda x: (lax.psum(c, "i"), lax.pmean(c, "i"), lax.axis_size("i"),
                               lax.pmax(c, "i")), axis_name="i")(X)
    np.testing.assert_array_equal(out[0], each(N * c))
    np.testing.assert_array_equal(out[1], each(c))
    np.testing.assert_array_equal(out[3], each(c))
    assert out[2].tolist() == [N] * N


def test_pytree_dtypes_nan_and_integers():
    tree = {"f": X, "n": np.arange(N, dtype=np.int32), "h": X.astype(np.float16)}
    out = fnad.vmap(lambda t: lax.psum(t, "i"), axis_name="i")(tree)
    np.testing.assert_array_equal(out["n"], each(np.int32(6)))
    assert out["n"].dtype == np.int32 and out["h"].dtype == np.float16
    Y = X.copy()
    Y[2, 1] = np.nan
    np.testing.assert_array_equal(over(lambda x: lax.pmax(x, "i"), Y), each(Y.max(0)))
    np.testing.assert_array_equal(over(lambda x: lax.pmin(x, "i"), Y), each(Y.min(0)))


def test_nested_names_and_shadowing():
    A = RNG.normal(size=(2, 3, 5))       # outer axis 'i' (2), inner 'j' (3)

    def g(a):
        return (lax.psum(a, "i"), lax.psum(a, "j"), lax.psum(a, ("i", "j")),
                lax.axis_index("i") * 10 + lax.axis_index("j"), lax.axis_size(("i", "j")))
    si, sj, sij, idx, size = fnad.vmap(fnad.vmap(g, axis_name="j"), axis_name="i")(A)
    np.testing.assert_allclose(si, np.broadcast_to(A.sum(0), A.shape), rtol=1e-14)
    np.testing.assert_allclose(sj, np.broadcast_to(A.sum(1, keepdims=True), A.shape),
                               rtol=1e-14)
    np.testing.assert_allclose(sij, np.broadcast_to(A.sum((0, 1)), A.shape), rtol=1e-14)
    np.testing.assert_array_equal(idx, [[0, 1, 2], [10, 11, 12]])
    assert np.all(np.asarray(size) == 6)
    # an inner vmap of the same name shadows the outer one
    inner = fnad.vmap(fnad.vmap(lambda a: lax.psum(a, "i"), axis_name="i"), axis_name="i")(A)
    np.testing.assert_allclose(inner, np.broadcast_to(A.sum(1, keepdims=True), A.shape),
                               rtol=1e-14)


def test_unnamed_vmap_inside_a_named_one():
    # the inner vmap only batches: psum over 'i' still sums over the outer axis
    A = RNG.normal(size=(N, 2, 3))
    out = fnad.vmap(fnad.vmap(lambda a: lax.psum(a, "i")), axis_name="i")(A)
    np.testing.assert_allclose(out, np.broadcast_to(A.sum(0), A.shape), rtol=1e-14)
    out = fnad.vmap(fnad.vmap(lambda a: lax.all_gather(a, "i"), in_axes=1),
                    axis_name="i")(A)
    # member k, inner example m (column m of A[k]) gathers A[:, :, m]
    ref = np.stack([np.stack([A[:, :, m] for m in range(3)])] * N)
    np.testing.assert_allclose(out, ref, rtol=1e-14)
    idx = fnad.vmap(fnad.vmap(lambda a: lax.axis_index("i")), axis_name="i")(A)
    np.testing.assert_array_equal(idx, np.broadcast_to(np.arange(N)[:, None], (N, 2)))


def test_unbound_names_are_errors():
    with pytest.raises(UnboundAxisNameError, match="'k'"):
        fnad.vmap(lambda x: lax.psum(x, "k"), axis_name="i")(X)
    with pytest.raises(NameError, match="no axis name is bound"):
        lax.pmean(X, "never_bound")
    with pytest.raises(UnboundAxisNameError, match="'i'"):
        lax.axis_index("i")
    with pytest.raises(UnboundAxisNameError):
        fnad.jit(lambda x: lax.psum(x, "k"))(X)


def test_bad_arguments_are_errors():
    with pytest.raises(fnad.errors.DTypeError, match="int32"):
        fnad.vmap(lambda x: lax.pmean(x, "i"), axis_name="i")(np.arange(4, dtype=np.int32))
    with pytest.raises(fnad.errors.ShapeError, match="equal the axis size 4"):
        over(lambda x: lax.psum_scatter(x, "i"), X)
    with pytest.raises(ValueError, match="destination 1 twice|names a destination twice"):
        over(lambda x: lax.ppermute(x, "i", [(0, 1), (2, 1)]), X)
    with pytest.raises(ValueError, match="outside the axis of size 4"):
        over(lambda x: lax.ppermute(x, "i", [(0, 7)]), X)
    with pytest.raises(fnad.errors.AxisSpecError):
        fnad.vmap(lambda x: x, axis_name=["i"])(X)


# --------------------------------------------------------------------------- derivatives

GRADS = {
    "psum": lambda x: lax.psum(x, "i") * x,
    "pmean": lambda x: fnp.sin(lax.pmean(x * x, "i")),
    "pmax": lambda x: lax.pmax(x, "i") * x,
    "pmin": lambda x: fnp.exp(lax.pmin(x, "i")),
    "all_gather": lambda x: lax.all_gather(x, "i", axis=1) ** 2,
    "all_gather tiled": lambda x: fnp.tanh(lax.all_gather(x, "i", tiled=True)),
    "psum_scatter": lambda x: lax.psum_scatter(x[None, :] * x[:, None], "i",
                                               tiled=True) ** 2,
    "ppermute": lambda x: lax.ppermute(x, "i", [(0, 2), (1, 0), (3, 1)]) * x,
}


@pytest.mark.parametrize("name", list(GRADS))
def test_derivatives_match_finite_differences(name):
    f = fnad.vmap(GRADS[name], axis_name="i")
    x = RNG.normal(size=(N, 4)) if name == "psum_scatter" else X
    check_grads(f, (x,), order=2 if name in ("psum", "all_gather") else 1,
                modes=("fwd", "rev"))


@pytest.mark.parametrize("name", list(GRADS))
def test_each_members_rules_give_the_whole_derivative(name):
    # vjp/jvp taken by each member (the collective's own jvp and vjp rules run,
    # batched): what every process computes under shard_map. They must equal the
    # derivative of the whole vmapped function (checked above by finite differences).
    f = GRADS[name]
    x = RNG.normal(size=(N, 4)) if name == "psum_scatter" else X
    out = fnad.vmap(f, axis_name="i")(x)
    C, T = RNG.normal(size=np.shape(out)), RNG.normal(size=x.shape)
    per_member = fnad.vmap(lambda x, c: fnad.vjp(f, x)[1](c)[0], axis_name="i")(x, C)
    np.testing.assert_allclose(per_member, fnad.vjp(fnad.vmap(f, axis_name="i"), x)[1](C)[0],
                               rtol=1e-12, atol=1e-13)
    per_member = fnad.vmap(lambda x, t: fnad.jvp(f, (x,), (t,))[1], axis_name="i")(x, T)
    np.testing.assert_allclose(per_member, fnad.jvp(fnad.vmap(f, axis_name="i"), (x,), (T,))[1],
                               rtol=1e-12, atol=1e-13)


def test_hand_derived_rules():
    # F(X)_k = psum(X)_k * X_k: dF/dX_j with cotangent C gives psum(C * X) + C * psum(X)
    C = RNG.normal(size=X.shape)
    _, pull = fnad.vjp(fnad.vmap(GRADS["psum"], axis_name="i"), X)
    np.testing.assert_allclose(pull(C)[0], (C * X).sum(0) + C * X.sum(0), rtol=1e-13)
    # all_gather's transpose is psum_scatter: the cotangent of member j's row is the
    # sum over members of their cotangent's block j
    G = RNG.normal(size=(N, N, 3))
    _, pull = fnad.vjp(fnad.vmap(lambda x: lax.all_gather(x, "i"), axis_name="i"), X)
    np.testing.assert_allclose(pull(G)[0], G.sum(0), rtol=1e-13)
    # ppermute's transpose is the inverse permutation
    _, pull = fnad.vjp(fnad.vmap(lambda x: lax.ppermute(x, "i", RING), axis_name="i"), X)
    np.testing.assert_array_equal(pull(C)[0], np.roll(C, -1, 0))
    # pmax: ties share the derivative, as reduce_max's does
    T = np.array([[1.0], [3.0], [3.0], [2.0]])
    g = fnad.grad(lambda t: fnad.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(t)[0, 0])(T)
    np.testing.assert_array_equal(g, [[0], [0.5], [0.5], [0]])


def test_jvp_of_psum_is_psum_of_the_tangent():
    T = RNG.normal(size=X.shape)
    out, t = fnad.jvp(fnad.vmap(lambda x: lax.psum(x, "i"), axis_name="i"), (X,), (T,))
    np.testing.assert_allclose(t, each(T.sum(0)), rtol=1e-14)
    np.testing.assert_allclose(out, each(X.sum(0)), rtol=1e-14)


# --------------------------------------------------------------------------- jit and grad

def test_under_jit_both_ways_round():
    f = lambda x: (lax.pmean({"a": x, "b": 2 * x}, "i"), lax.axis_index("i"),  # noqa: E731
                   lax.ppermute(x, "i", RING), lax.all_gather(x, "i", tiled=True))
    eager = fnad.vmap(f, axis_name="i")(X)
    for g in (fnad.jit(fnad.vmap(f, axis_name="i")), fnad.vmap(fnad.jit(f), axis_name="i")):
        for _ in range(2):          # the first call and the compiled program
            got = g(X)
            for a, b in zip(fnad.tree_util.tree_leaves(got), fnad.tree_util.tree_leaves(eager)):
                np.testing.assert_allclose(a, b, rtol=1e-14)


def test_grad_through_a_jitted_data_parallel_step():
    # The data-parallel loss: each member's mean squared error on its rows, averaged
    # by pmean; its gradient equals the gradient of the loss on all rows at once.
    Xs, Ys = RNG.normal(size=(N, 5, 3)), RNG.normal(size=(N, 5))
    w = RNG.normal(size=3)

    def member_loss(w, x, y):
        return fnp.mean((x @ w - y) ** 2)

    @fnad.jit
    def step(w, x, y):
        g = fnad.grad(member_loss)(w, x, y)
        return lax.pmean(g, "i")
    got = fnad.vmap(step, in_axes=(None, 0, 0), axis_name="i")(w, Xs, Ys)
    ref = fnad.grad(member_loss)(w, Xs.reshape(-1, 3), Ys.reshape(-1))
    np.testing.assert_allclose(got, each(np.asarray(ref)), rtol=1e-13)
    # grad of a loss that itself holds a collective (through a jit): by hand,
    # d/dw sum_k (pmean(x_k . w)) = mean_k(x_k) * N
    h = fnad.jit(lambda w, x: lax.pmean(x @ w, "i"))
    g = fnad.grad(lambda w: fnp.sum(fnad.vmap(h, in_axes=(None, 0), axis_name="i")(w, X)))(w)
    np.testing.assert_allclose(g, X.mean(0) * N, rtol=1e-13)


def test_every_collective_is_an_effect():
    # so the optimizer never drops or merges one a peer process is waiting on
    names = ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
             "axis_index")
    assert all(fnad.core.PRIMITIVES[n].effect for n in names)


def test_caches_tell_axis_names_and_sizes_apart():
    # a jitted program batched under the vmap named 'i' (psum -> a sum over the batch)
    # must not be reused under an unnamed vmap of the same size (psum stays a psum)
    g = fnad.jit(lambda x: lax.psum(x, "i"))
    A = RNG.normal(size=(3, 3, 2))
    np.testing.assert_allclose(fnad.vmap(g, axis_name="i")(A[0]),
                               np.broadcast_to(A[0].sum(0), (3, 2)), rtol=1e-14)
    out = fnad.vmap(fnad.vmap(g), axis_name="i")(A)
    np.testing.assert_allclose(out, np.broadcast_to(A.sum(0), A.shape), rtol=1e-14)
    # axis_size is a Python int, staged into the program: jit retraces per axis size
    h = fnad.jit(lambda x: x / lax.axis_size("i"))
    for n in (3, 4):
        np.testing.assert_array_equal(fnad.vmap(h, axis_name="i")(np.ones((n, 2))), 1 / n)
