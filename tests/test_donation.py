"""jit's donate_argnums / donate_argnames: donated Arrays are consumed by the call
(deleted afterwards, as in JAX), the cpu driver writes results into their buffers when
nothing else holds them, and no value anyone can still see ever changes."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.backends.cpu import lowering
from fnad.errors import ArgnumsError, DeletedArrayError


def _address(x):
    return x._value.__array_interface__["data"][0]


def _sgd(p, g):
    return p - 0.1 * g, (g * g).sum()


def _fresh(seed=0, shape=(4, 5)):
    rng = np.random.default_rng(seed)
    return fnp.asarray(rng.standard_normal(shape)), fnp.asarray(rng.standard_normal(shape))


@pytest.mark.parametrize("compiled", [False, True], ids=["first call", "compiled"])
def test_a_donated_buffer_takes_the_result_and_the_numbers_are_numpys(compiled):
    f = fnad.jit(_sgd, donate_argnums=0)
    if compiled:
        f(*_fresh(1))
        lowering.wait_for_compiles()
    p, g = _fresh()
    expected = np.asarray(p) - np.float64(0.1) * np.asarray(g)
    where = _address(p)
    new, total = f(p, g)
    np.testing.assert_allclose(np.asarray(new), expected, rtol=1e-15)
    np.testing.assert_allclose(float(total), float((np.asarray(g) ** 2).sum()), rtol=1e-12)
    assert _address(new) == where           # no new buffer for the new parameters
    assert p.is_deleted() and not g.is_deleted()


def test_a_donated_array_cannot_be_used_afterwards():
    p, g = _fresh()
    fnad.jit(_sgd, donate_argnums=0)(p, g)
    for use in (lambda: p + 1.0, lambda: np.asarray(p), lambda: repr(p), lambda: float(p[0, 0]),
                lambda: fnad.jit(lambda a: a * 2)(p), lambda: fnad.grad(lambda a: a.sum())(p)):
        with pytest.raises(DeletedArrayError, match="donated to a jitted function"):
            use()


@pytest.mark.parametrize("hold", ["numpy view", "fnad view", "second Array"])
def test_a_buffer_someone_else_sees_is_never_overwritten(hold):
    f = fnad.jit(_sgd, donate_argnums=0)
    f(*_fresh(1))
    lowering.wait_for_compiles()
    p, g = _fresh()
    before = np.array(p)
    if hold == "numpy view":
        seen = np.asarray(p)
    elif hold == "fnad view":
        seen = p.reshape(-1)
    else:
        seen = fnad.Array(p._value)
    new, _ = f(p, g)
    np.testing.assert_array_equal(np.asarray(seen).reshape(before.shape), before)
    np.testing.assert_allclose(np.asarray(new), before - 0.1 * np.asarray(g), rtol=1e-15)


def test_reads_at_other_elements_keep_their_own_buffer():
    # p.T and a broadcast row read p at other elements than the ones written: the
    # driver must not write into p while they are read.
    def f(p):
        return p + p.T, p * p[0]
    jitted = fnad.jit(f, donate_argnums=0)
    for _ in range(2):
        rng = np.random.default_rng(3)
        x = rng.standard_normal((6, 6))
        a, b = jitted(fnp.asarray(x))
        np.testing.assert_allclose(np.asarray(a), x + x.T, rtol=1e-15)
        np.testing.assert_allclose(np.asarray(b), x * x[0], rtol=1e-15)
        lowering.wait_for_compiles()


def test_the_same_array_donated_and_passed_again():
    x = fnp.asarray(np.arange(6.0))
    out = fnad.jit(lambda a, b: a * 2.0 + b, donate_argnums=0)(x, x)
    np.testing.assert_array_equal(np.asarray(out), np.arange(6.0) * 3.0)


def test_pytrees_and_names_are_donated_leaf_by_leaf():
    update = fnad.jit(lambda params, grads: fnad.tree_util.tree_map(
        lambda w, d: w - d, params, grads), donate_argnames="params")
    params = {"w": fnp.ones((3, 3)), "b": fnp.zeros(3)}
    grads = {"w": fnp.ones((3, 3)), "b": fnp.ones(3)}
    new = update(params=params, grads=grads)
    np.testing.assert_array_equal(np.asarray(new["w"]), np.zeros((3, 3)))
    np.testing.assert_array_equal(np.asarray(new["b"]), -np.ones(3))
    assert params["w"].is_deleted() and params["b"].is_deleted()
    assert not grads["w"].is_deleted()


def test_returning_a_donated_argument_unchanged():
    x = fnp.asarray(np.arange(4.0))
    out = fnad.jit(lambda a: a, donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0))
    assert x.is_deleted()


def test_donation_is_ignored_under_transforms():
    f = fnad.jit(lambda a: (a * a).sum(), donate_argnums=0)
    x = fnp.asarray(np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(fnad.grad(f)(x)), 2 * np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(fnad.vmap(f)(fnp.ones((2, 3)))), [3.0, 3.0])
    assert not x.is_deleted()


def test_static_and_donated_arguments_cannot_overlap():
    with pytest.raises(ArgnumsError, match="static_argnums and donate_argnums both name"):
        fnad.jit(lambda a, n: a * n, static_argnums=1, donate_argnums=(0, 1))
    with pytest.raises(ArgnumsError, match="donate_argnames must hold argument names"):
        fnad.jit(lambda a: a, donate_argnames=(0,))


def test_delete_by_hand():
    x = fnp.ones(2)
    x.delete()
    assert x.is_deleted()
    with pytest.raises(DeletedArrayError):
        x * 2.0


def test_a_parameter_read_by_a_matmul_still_lends_its_buffer_to_its_update():
    def step(w, x):
        g = x.T @ (x @ w)
        return w - 0.01 * g
    f = fnad.jit(step, donate_argnums=0)
    rng = np.random.default_rng(5)
    x = fnp.asarray(rng.standard_normal((8, 4)))
    for _ in range(2):
        w0 = rng.standard_normal((4, 3))
        w = fnp.asarray(w0)
        where = _address(w)
        new = f(w, x)
        xn = np.asarray(x)
        np.testing.assert_allclose(np.asarray(new), w0 - 0.01 * (xn.T @ (xn @ w0)), rtol=1e-13)
        assert _address(new) == where
        lowering.wait_for_compiles()


def test_a_returned_view_of_a_donated_array_keeps_its_values():
    f = fnad.jit(lambda p: (p.T, p + 1.0), donate_argnums=0)
    for _ in range(2):
        x = np.arange(6.0).reshape(2, 3)
        t, q = f(fnp.asarray(x))
        np.testing.assert_array_equal(np.asarray(t), x.T)
        np.testing.assert_array_equal(np.asarray(q), x + 1.0)
        lowering.wait_for_compiles()
