"""custom_vjp, custom_jvp and checkpoint."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.test_util import check_grads


def f64(x):
    return fnp.asarray(np.asarray(x, dtype=np.float64))


def make_gradient_reversal(scale):
    @fnad.custom_vjp
    def reverse(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, g):
        return (-scale * g,)

    reverse.defvjp(fwd, bwd)
    return reverse


def test_gradient_reversal():
    reverse = make_gradient_reversal(0.5)
    x = f64([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(reverse(x)), [1.0, 2.0, 3.0])
    g = fnad.grad(lambda x: fnp.sum(reverse(x) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), -0.5 * 2 * np.asarray(x))
    # forward mode uses the transpose of bwd: the tangent is scaled the same way
    _, t = fnad.jvp(reverse, (x,), (fnp.ones_like(x),))
    np.testing.assert_allclose(np.asarray(t), [-0.5] * 3)


def test_custom_vjp_cube_second_derivative():
    @fnad.custom_vjp
    def cube(x):
        return x ** 3

    def fwd(x):
        return cube(x), x

    def bwd(x, g):
        return (3 * x ** 2 * g,)

    cube.defvjp(fwd, bwd)
    x = f64(1.7)
    assert float(fnad.grad(cube)(x)) == pytest.approx(3 * 1.7 ** 2)
    assert float(fnad.grad(fnad.grad(cube))(x)) == pytest.approx(6 * 1.7)
    check_grads(cube, (x,), order=2)


def test_custom_vjp_is_used_not_the_function():
    @fnad.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -1.0, 1.0),))
    g = fnad.grad(lambda x: fnp.sum(10.0 * clip_gradient(x)))(f64([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(g), [1.0, 1.0])


def test_custom_jvp_log1pexp():
    # softplus with a rule that stays finite for huge inputs
    @fnad.custom_jvp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return softplus(x), t * fnad.nn.sigmoid(x)

    x = f64([-2.0, 0.0, 3.0])
    s = 1 / (1 + np.exp(-np.asarray(x)))
    _, t = fnad.jvp(softplus, (x,), (fnp.ones_like(x),))
    np.testing.assert_allclose(np.asarray(t), s)
    # reverse mode is the transpose of the custom jvp, and higher orders work
    g = fnad.grad(lambda x: fnp.sum(softplus(x)))(x)
    np.testing.assert_allclose(np.asarray(g), s)
    h = fnad.grad(lambda x: fnp.sum(fnad.grad(lambda y: fnp.sum(softplus(y)))(x)))(x)
    np.testing.assert_allclose(np.asarray(h), s * (1 - s))
    assert float(fnad.grad(lambda x: fnp.sum(softplus(x)))(f64([1000.0]))[0]) == 1.0


def test_checkpoint_gives_the_same_gradients():
    def block(x, w):
        return fnp.tanh(x @ w) * fnp.sin(x @ w)

    rng = np.random.default_rng(0)
    x = f64(rng.standard_normal((3, 4)))
    w = f64(rng.standard_normal((4, 4)))

    def loss(w, remat):
        f = fnad.checkpoint(block) if remat else block
        return fnp.sum(f(f(x, w), w) ** 2)

    g_plain = fnad.grad(loss)(w, False)
    g_remat = fnad.grad(loss)(w, True)
    np.testing.assert_allclose(np.asarray(g_remat), np.asarray(g_plain), rtol=1e-12)
    h_plain = fnad.hessian(lambda w: loss(w, False))(w)
    h_remat = fnad.hessian(lambda w: loss(w, True))(w)
    np.testing.assert_allclose(np.asarray(h_remat), np.asarray(h_plain), rtol=1e-10)


def test_checkpoint_of_a_closure_over_traced_values():
    """checkpoint(lambda x: sin(x @ w)) with w traced by the enclosing grad, jit or jvp:
    w's derivative flows (it raised EscapedTracerError in the backward pass, where the
    function was re-run with the grad's tracer of w long gone)."""
    rng = np.random.default_rng(1)
    w, x = f64(rng.standard_normal((3, 3))), f64(rng.standard_normal((2, 3)))

    def loss(w, x):
        return fnp.sum(fnad.checkpoint(lambda x: fnp.sin(x @ w))(x) ** 2)
    s, c = np.sin(x @ w), np.cos(x @ w)
    want_w, want_x = x.T @ (2 * s * c), (2 * s * c) @ w.T        # by the chain rule
    for grad in (fnad.grad(loss, argnums=(0, 1)), fnad.jit(fnad.grad(loss, argnums=(0, 1)))):
        gw, gx = grad(w, x)
        np.testing.assert_allclose(np.asarray(gw), want_w, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-12)
    tangent = f64(rng.standard_normal((3, 3)))
    _, dw = fnad.jvp(lambda w: loss(w, x), (w,), (tangent,))
    np.testing.assert_allclose(float(dw), np.sum(want_w * tangent), rtol=1e-12)
    plain = fnad.hessian(lambda w: fnp.sum(fnp.sin(x @ w) ** 2))(w)
    np.testing.assert_allclose(np.asarray(fnad.hessian(lambda w: loss(w, x))(w)),
                               np.asarray(plain), rtol=1e-10)


def test_missing_rule_errors():
    @fnad.custom_vjp
    def f(x):
        return x
    with pytest.raises(AttributeError, match="defvjp"):
        f(f64(1.0))
