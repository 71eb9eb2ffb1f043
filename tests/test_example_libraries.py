"""fnad.example_libraries.stax and .optimizers: hand-computed values and numpy
references (always), and the same numbers as jax.example_libraries from the same keys
(when JAX is installed)."""
import numpy as np
import pytest

import fnad
from fnad import random
from fnad.example_libraries import optimizers as fo, stax as fs

try:
    import jax
    from jax.example_libraries import optimizers as jo, stax as js
except ImportError:   # CI installs no JAX
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed")
RNG = np.random.RandomState(0)
X = RNG.randn(2, 8, 8, 3).astype(np.float32)


def _net(S):
    return S.serial(
        S.Conv(4, (3, 3), padding="SAME"), S.BatchNorm(), S.Relu,
        S.MaxPool((2, 2), (2, 2)), S.Conv(3, (2, 2), strides=(2, 2)),
        S.AvgPool((3, 3), (1, 1), "SAME"), S.SumPool((2, 2)), S.Flatten, S.Dense(5), S.Gelu,
        S.FanOut(2), S.parallel(S.Dense(3), S.Identity), S.FanInConcat(), S.Dropout(0.8),
        S.Tanh, S.LogSoftmax)


# --------------------------------------------------------------------------- stax

def test_stax_network_shapes_and_jit():
    init, apply = _net(fs)
    shape, params = init(random.key(0), (2, 8, 8, 3))
    assert tuple(shape) == (2, 8)
    W, b = params[0]
    assert W.shape == (3, 3, 3, 4) and b.shape == (1, 1, 1, 4)   # JAX's bias layout
    y = apply(params, X, rng=random.key(1))
    assert y.shape == (2, 8)
    np.testing.assert_allclose(np.exp(np.asarray(y)).sum(-1), 1, rtol=1e-5)
    y_jit = fnad.jit(lambda p, x, k: apply(p, x, rng=k))(params, X, random.key(1))
    np.testing.assert_array_equal(np.asarray(y_jit), np.asarray(y))
    with pytest.raises(ValueError, match="rng"):
        apply(params, X)          # Dropout without a key


def test_stax_shapes_with_an_unknown_batch():
    init, _ = fs.serial(fs.Conv(4, (3, 3), (2, 2), "SAME"), fs.MaxPool((2, 2), (2, 2)),
                        fs.ConvTranspose(2, (3, 3), (2, 2), "SAME"), fs.AvgPool((2, 2)),
                        fs.Flatten, fs.Dense(7))
    shape, _ = init(random.key(0), (-1, 8, 8, 3))
    assert tuple(shape) == (-1, 7)
    init, _ = fs.Conv1DTranspose(5, (3,), (2,))
    assert tuple(init(random.key(0), (-1, 6, 2))[0]) == (-1, 13, 5)


def test_stax_batchnorm_and_pools_against_numpy():
    init, apply = fs.BatchNorm(axis=(0, 1, 2))
    _, (beta, gamma) = init(random.key(0), X.shape)
    params = (beta + 0.5, gamma * 2)
    m, v = X.mean((0, 1, 2)), X.var((0, 1, 2))
    np.testing.assert_allclose(np.asarray(apply(params, X)),
                               2 * (X - m) / np.sqrt(v + 1e-5) + 0.5, rtol=1e-4, atol=1e-5)
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    _, apply = fs.AvgPool((2, 2), (1, 1), "SAME")
    # the last row and column average over fewer values: padding is not counted
    ref = np.empty((4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            ref[i, j] = x[0, i:i + 2, j:j + 2, 0].mean()
    np.testing.assert_allclose(np.asarray(apply((), x))[0, :, :, 0], ref, rtol=1e-6)
    _, apply = fs.SumPool((2, 2), (2, 2))
    np.testing.assert_allclose(np.asarray(apply((), x))[0, :, :, 0],
                               x[0, :, :, 0].reshape(2, 2, 2, 2).sum((1, 3)), rtol=1e-6)
    init, apply = fs.SumPool((2, 2))        # stax's strides default to 1, not the window
    assert tuple(init(random.key(0), x.shape)[0]) == (1, 3, 3, 1)
    assert float(apply((), x)[0, 0, 0, 0]) == 0 + 1 + 4 + 5
    init, _ = fs.MaxPool((2, 2), (2, 2), spec="NCHW")
    assert tuple(init(random.key(0), (1, 3, 6, 6))[0]) == (1, 3, 3, 3)


def test_stax_dropout_rate_is_the_keep_probability():
    _, apply = fs.Dropout(0.75)
    x = np.ones((200, 100), np.float32)
    y = np.asarray(apply((), x, rng=random.key(3)))
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    _, apply = fs.Dropout(0.75, mode="test")
    np.testing.assert_array_equal(np.asarray(apply((), x, rng=random.key(3))), x)


@needs_jax
def test_stax_matches_jax():
    ji, ja = _net(js)
    fi, fa = _net(fs)
    shapes = []     # JAX's init traced once (jit) rather than run op by op: faster

    def jax_init(k):
        shape, params = ji(k, (2, 8, 8, 3))
        shapes.append(shape)
        return params
    jp = jax.jit(jax_init)(jax.random.PRNGKey(0))
    jshape = shapes[0]
    fshape, fp = fi(random.key(0), (2, 8, 8, 3))
    assert tuple(int(n) for n in jshape) == tuple(fshape)
    jl, fl = jax.tree_util.tree_leaves(jp), fnad.tree_util.tree_leaves(fp)
    assert len(jl) == len(fl)
    for a, b in zip(jl, fl):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
    theirs = jax.jit(lambda p, x, k: ja(p, x, rng=k))(jp, X, jax.random.PRNGKey(1))
    np.testing.assert_allclose(np.asarray(fa(fp, X, rng=random.key(1))), np.asarray(theirs),
                               rtol=1e-4, atol=1e-5)
    x = X[:1, :5, :5]
    for make in (lambda S: S.ConvTranspose(2, (3, 3), (2, 2), "SAME"),
                 lambda S: S.GeneralConv(("NCHW", "OIHW", "NCHW"), 2, (3, 3)),
                 lambda S: S.AvgPool((2, 2), (1, 1), "SAME", spec="NCHW")):
        (ji, ja), (fi, fa) = make(js), make(fs)
        jshape, jp = ji(jax.random.PRNGKey(2), x.shape)
        fshape, fp = fi(random.key(2), x.shape)
        assert tuple(int(n) for n in jshape) == tuple(fshape)
        np.testing.assert_allclose(np.asarray(fa(fp, x)), np.asarray(ja(jp, x)),
                                   rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- optimizers

PARAMS = {"w": np.array([[1.0, -2.0], [3.0, 0.5]], np.float32), "b": np.array(0.3, np.float32)}


def _loss(p):
    return 0.5 * (p["w"] ** 2).sum() + (p["w"][0, 0] - p["b"]) ** 2 + p["b"] ** 3


def _run(opt, grad, steps=4):
    init, update, get_params = opt
    state = init(PARAMS)
    for i in range(steps):
        state = update(i, grad(_loss)(get_params(state)), state)
    return get_params(state)


def test_sgd_momentum_adam_by_hand():
    g = np.array([0.5, -1.0], np.float32)
    x0 = np.array([1.0, 2.0], np.float32)
    for opt, expected in (
            (fo.sgd(0.1), x0 - 0.1 * g - 0.1 * g),
            (fo.momentum(0.1, 0.9), x0 - 0.1 * g - 0.1 * (0.9 * g + g)),
            (fo.nesterov(0.1, 0.9), x0 - 0.1 * (1.9 * g) - 0.1 * (0.9 * 1.9 * g + g)),
            # Adam's first two steps with a constant gradient are both lr * sign(g)
            (fo.adam(0.1, eps=0.0), x0 - 2 * 0.1 * np.sign(g))):
        init, update, get_params = opt
        state = update(1, g, update(0, g, init(x0)))
        np.testing.assert_allclose(np.asarray(get_params(state)), expected, rtol=1e-5)


def test_optimizers_descend_and_jit():
    start = float(_loss(PARAMS))
    for name in ("sgd", "momentum", "nesterov", "adagrad", "rmsprop", "rmsprop_momentum",
                 "adam", "adamax", "sm3"):
        args = (0.05, 0.5) if name in ("momentum", "nesterov") else (0.05,)
        end = float(_loss(_run(getattr(fo, name)(*args), fnad.grad, steps=6)))
        assert end < start, name
    init, update, get_params = fo.adam(0.1)
    state = init(PARAMS)
    grads = fnad.grad(_loss)(PARAMS)
    eager = update(0, grads, state)
    jitted = fnad.jit(update)(0, grads, state)
    for a, b in zip(fnad.tree_util.tree_leaves(eager), fnad.tree_util.tree_leaves(jitted)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6)
    with pytest.raises(TypeError, match="gradient tree"):
        update(0, {"w": grads["w"]}, state)


def test_schedules_and_utilities():
    np.testing.assert_allclose(float(fo.exponential_decay(0.1, 2, 0.5)(4)), 0.025, rtol=1e-6)
    np.testing.assert_allclose(float(fo.inverse_time_decay(1.0, 2, 0.5)(3)), 1 / 1.75)
    np.testing.assert_allclose(float(fo.inverse_time_decay(1.0, 2, 0.5, True)(3)), 1 / 1.5)
    np.testing.assert_allclose(float(fo.polynomial_decay(1.0, 4, 0.2, 2.0)(2)),
                               0.25 * 0.8 + 0.2)
    np.testing.assert_allclose(float(fo.polynomial_decay(1.0, 4, 0.2)(9)), 0.2)
    sched = fo.piecewise_constant([1, 3], [0.1, 0.05, 0.01])
    np.testing.assert_allclose([float(sched(i)) for i in range(5)],
                               [0.1, 0.1, 0.05, 0.05, 0.01], rtol=1e-6)
    with pytest.raises(ValueError, match="boundaries"):
        fo.piecewise_constant([1, 2], [0.1, 0.2])
    assert fo.constant(0.3)(7) == 0.3
    norm = np.sqrt(sum((np.asarray(x, np.float64) ** 2).sum() for x in PARAMS.values()))
    np.testing.assert_allclose(float(fo.l2_norm(PARAMS)), norm, rtol=1e-6)
    clipped = fo.clip_grads(PARAMS, 1.0)
    np.testing.assert_allclose(float(fo.l2_norm(clipped)), 1.0, rtol=1e-5)
    state = fo.momentum(0.1, 0.9)[0](PARAMS)
    marked = fo.unpack_optimizer_state(state)
    assert isinstance(marked["w"], fo.JoinPoint)
    repacked = fo.pack_optimizer_state(marked)
    assert repacked.tree_def == state.tree_def and repacked.subtree_defs == state.subtree_defs
    with pytest.raises(TypeError, match="JoinPoint"):
        fo.pack_optimizer_state({"w": 1.0})


@needs_jax
@pytest.mark.parametrize("name,args", [
    ("sgd", (0.1,)), ("momentum", (0.1, 0.9)), ("nesterov", (0.1, 0.9)),
    ("adagrad", (0.1,)), ("rmsprop", (0.1,)), ("rmsprop_momentum", (0.01,)),
    ("adam", (0.1,)), ("adamax", (0.1,)), ("sm3", (0.1,))])
def test_optimizers_match_jax(name, args):
    ours = _run(getattr(fo, name)(*args), fnad.grad)
    theirs = _run(getattr(jo, name)(*args), jax.grad)
    for key in PARAMS:
        np.testing.assert_allclose(np.asarray(ours[key]), np.asarray(theirs[key]),
                                   rtol=2e-5, atol=1e-6)
