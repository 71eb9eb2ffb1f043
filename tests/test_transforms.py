"""grad, value_and_grad, vjp, jvp, jacobians and their compositions, against
hand-derived derivatives and finite differences."""
from collections import namedtuple

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.test_util import check_grads


def f64(x):
    return fnp.asarray(np.asarray(x, dtype=np.float64))


def test_worked_example_product_rule():
    # z = (x + y)(y - 2): dz/dx = y - 2 = 1, dz/dy = (y - 2) + (x + y) = 6 at (2, 3)
    dzdx, dzdy = fnad.grad(lambda x, y: (x + y) * (y - 2), argnums=(0, 1))(2.0, 3.0)
    assert float(dzdx) == 1.0 and float(dzdy) == 6.0


def test_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1; a confused implementation gives 2.
    def outer(x):
        inner = fnad.grad(lambda y: x + y)(x)
        return x * inner
    assert float(fnad.grad(outer)(f64(1.0))) == 1.0
    # The same in forward mode nested in reverse mode, and forward in forward.
    def outer_fwd(x):
        return x * fnad.jvp(lambda y: x + y, (x,), (fnp.ones_like(x),))[1]
    assert float(fnad.grad(outer_fwd)(f64(1.0))) == 1.0
    assert float(fnad.jvp(outer_fwd, (f64(1.0),), (f64(1.0),))[1]) == 1.0


def test_higher_order_derivatives_of_sin_and_powers():
    x = f64(0.7)
    d1 = fnad.grad(fnp.sin)
    d2 = fnad.grad(d1)
    d3 = fnad.grad(d2)
    d4 = fnad.grad(d3)
    np.testing.assert_allclose([float(d(x)) for d in (d1, d2, d3, d4)],
                               [np.cos(0.7), -np.sin(0.7), -np.cos(0.7), np.sin(0.7)])
    cube3 = fnad.grad(fnad.grad(fnad.grad(lambda x: x ** 3)))
    assert float(cube3(x)) == pytest.approx(6.0)


def test_jvp_of_grad_is_hessian_vector_product():
    rng = np.random.default_rng(0)
    A = f64(rng.standard_normal((4, 4)))
    x, v = f64(rng.standard_normal(4)), f64(rng.standard_normal(4))

    def f(x):
        return fnp.sum(fnp.log1p(fnp.exp(A @ x)))

    hvp = fnad.jvp(fnad.grad(f), (x,), (v,))[1]
    H = fnad.hessian(f)(x)
    # Hand-derived: H = A^T diag(s(1-s)) A with s = sigmoid(Ax)
    s = 1 / (1 + np.exp(-(np.asarray(A) @ np.asarray(x))))
    H_ref = np.asarray(A).T @ np.diag(s * (1 - s)) @ np.asarray(A)
    np.testing.assert_allclose(np.asarray(H), H_ref, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(hvp), H_ref @ np.asarray(v), rtol=1e-10)


def test_jacobian_from_unit_cotangents_matches_jacrev_and_jacfwd():
    def f(x):
        return fnp.stack([x[0] * x[1], fnp.sin(x[2]) + x[0], fnp.exp(x[1]) * x[2]])

    x = f64([0.3, -1.2, 2.0])
    out, pullback = fnad.vjp(f, x)
    rows = [np.asarray(pullback(f64(np.eye(3)[i]))[0]) for i in range(3)]
    J_vjp = np.stack(rows)
    x0, x1, x2 = 0.3, -1.2, 2.0
    J_ref = np.array([[x1, x0, 0], [1, 0, np.cos(x2)], [0, np.exp(x1) * x2, np.exp(x1)]])
    np.testing.assert_allclose(J_vjp, J_ref, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnad.jacrev(f)(x)), J_ref, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnad.jacfwd(f)(x)), J_ref, rtol=1e-12)


def test_jacobians_of_pytrees_and_argnums():
    def f(p, x):
        return {"a": p["w"] * x, "b": fnp.sum(p["w"] ** 2)}

    p = {"w": f64([1.0, 2.0])}
    x = f64([3.0, 4.0])
    for jac in (fnad.jacfwd, fnad.jacrev):
        J = jac(f, argnums=(0, 1))(p, x)
        np.testing.assert_allclose(np.asarray(J["a"][0]["w"]), np.diag([3.0, 4.0]))
        np.testing.assert_allclose(np.asarray(J["a"][1]), np.diag([1.0, 2.0]))
        np.testing.assert_allclose(np.asarray(J["b"][0]["w"]), [2.0, 4.0])
        assert J["b"][1].shape == (2,)


def test_hessian_matches_hand_derivation():
    def f(x):
        return x[0] ** 2 * x[1] + fnp.sin(x[1]) * x[0]
    x = f64([1.5, -0.5])
    a, b = 1.5, -0.5
    H_ref = np.array([[2 * b, 2 * a + np.cos(b)], [2 * a + np.cos(b), -a * np.sin(b)]])
    np.testing.assert_allclose(np.asarray(fnad.hessian(f)(x)), H_ref, rtol=1e-12)


def test_grad_pytree_structure_and_value_and_grad():
    rng = np.random.default_rng(1)
    params = {"w1": f64(rng.standard_normal((3, 4))), "b1": f64(np.zeros(4)),
              "w2": f64(rng.standard_normal((4, 1)))}
    x = f64(rng.standard_normal((5, 3)))
    y = f64(rng.standard_normal((5, 1)))

    def loss(params, x, y):
        h = fnp.tanh(x @ params["w1"] + params["b1"])
        return fnp.mean((h @ params["w2"] - y) ** 2)

    g = fnad.grad(loss)(params, x, y)
    assert set(g) == set(params) and all(g[k].shape == params[k].shape for k in g)
    val, (gp, gx) = fnad.value_and_grad(loss, argnums=(0, 1))(params, x, y)
    assert float(val) == pytest.approx(float(loss(params, x, y)))
    for k in params:
        np.testing.assert_allclose(np.asarray(gp[k]), np.asarray(g[k]), rtol=1e-12)
    assert gx.shape == x.shape
    check_grads(lambda w1: loss({**params, "w1": w1}, x, y), (params["w1"],), order=2)


def test_has_aux_and_namedtuple_params():
    Params = namedtuple("Params", ["a", "b"])

    def f(p):
        return p.a * p.b, {"twice_a": 2 * p.a}

    g, aux = fnad.grad(f, has_aux=True)(Params(f64(2.0), f64(5.0)))
    assert isinstance(g, Params)
    assert float(g.a) == 5.0 and float(g.b) == 2.0
    assert float(aux["twice_a"]) == 4.0 and not isinstance(aux["twice_a"], fnad.core.Tracer)
    (v, aux2), g2 = fnad.value_and_grad(f, has_aux=True)(Params(f64(2.0), f64(5.0)))
    assert float(v) == 10.0 and float(g2.b) == 2.0


def test_jvp_and_vjp_basic_and_structures():
    x = f64([1.0, 2.0])
    y, t = fnad.jvp(lambda x: x ** 2, (x,), (f64([1.0, 0.5]),))
    np.testing.assert_allclose(np.asarray(t), [2.0, 2.0])
    out, pullback = fnad.vjp(lambda a, b: {"s": a * b}, x, f64([3.0, 4.0]))
    ga, gb = pullback({"s": f64([1.0, 1.0])})
    np.testing.assert_allclose(np.asarray(ga), [3.0, 4.0])
    np.testing.assert_allclose(np.asarray(gb), [1.0, 2.0])
    # an output that does not depend on the input gets a zero tangent / cotangent
    _, t0 = fnad.jvp(lambda x: fnp.ones(2), (x,), (x,))
    np.testing.assert_array_equal(np.asarray(t0), [0.0, 0.0])
    assert np.all(np.asarray(fnad.grad(lambda x: 3.0 + 0 * fnp.sum(x) * 0)(x)) == 0)


def test_stop_gradient():
    f = lambda x: x * fnad.lax.stop_gradient(x)
    assert float(fnad.grad(f)(f64(3.0))) == 3.0
    assert float(fnad.jvp(f, (f64(3.0),), (f64(1.0),))[1]) == 3.0


def test_gradient_penalty():
    # L(w) = sum(w^2) + ||grad sum(sin(w))||, grad = 2w + d/dw ||cos(w)||
    def loss(w):
        return fnp.sum(fnp.sin(w))

    def penalized(w):
        g = fnad.grad(loss)(w)
        return fnp.sum(w ** 2) + fnp.sqrt(fnp.sum(g ** 2))

    w = f64([0.2, -0.4, 1.1])
    c = np.cos(np.asarray(w))
    expected = 2 * np.asarray(w) - c * np.sin(np.asarray(w)) / np.linalg.norm(c)
    np.testing.assert_allclose(np.asarray(fnad.grad(penalized)(w)), expected, rtol=1e-12)
    check_grads(penalized, (w,), order=2)


def test_learning_quadratic_by_gradient_descent():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 200)
    y = 3 * x ** 2 + 2 + 0.05 * rng.standard_normal(200)
    x, y = f64(x), f64(y)
    params = {"w": f64(0.0), "b": f64(0.0)}

    def loss(p):
        return fnp.mean((p["w"] * x ** 2 + p["b"] - y) ** 2)

    step = fnad.jit(fnad.grad(loss)) if hasattr(fnad, "jit") else fnad.grad(loss)
    for _ in range(2000):
        g = step(params)
        params = fnad.tree_util.tree_map(lambda p, d: p - 0.5 * d, params, g)
    assert float(params["w"]) == pytest.approx(3.0, abs=0.05)
    assert float(params["b"]) == pytest.approx(2.0, abs=0.05)


def test_float32_gradients_stay_float32():
    x = fnp.asarray(np.linspace(0.1, 1, 5).astype(np.float32))
    g = fnad.grad(lambda x: fnp.sum(fnp.sqrt(x) * 2.0 + x ** 2))(x)
    assert g.dtype == np.float32
    H = fnad.hessian(lambda x: fnp.sum(x ** 3))(x)
    assert H.dtype == np.float32
