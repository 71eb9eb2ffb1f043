"""fnad.nn: activations, initializers, layers, combinators and losses against hand-written
numpy references (and jax.nn / jax.example_libraries.stax when jax imports), their
derivatives against finite differences, jitted training steps with explicit state, and
a small network trained on the bundled digits."""

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import nn, optim, random
from fnad.nn import initializers as inits
from fnad.test_util import check_grads
from fnad.tree_util import tree_flatten, tree_map

try:
    import jax
    import jax.numpy as jnp
    from jax.example_libraries import stax
except ImportError:     # pragma: no cover
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed")

RNG = np.random.default_rng(0)


def normal(*shape, dtype=np.float32, rng=RNG):
    return rng.standard_normal(shape).astype(dtype)


def to_jax(tree):
    return tree_map(lambda a: jnp.asarray(np.asarray(a)), tree)


def close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- activations

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


# name -> (fnad function, numpy reference, jax.nn name, kinks to keep test points away from)
ACTIVATIONS = {
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6), "relu6", (0, 6)),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x), "leaky_relu", (0,)),
    "leaky_relu_0.2": (lambda x: nn.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x),
                       None, (0,)),
    "elu": (nn.elu, _np_elu, "elu", (0,)),
    "elu_alpha": (lambda x: nn.elu(x, 0.5), lambda x: _np_elu(x, 0.5), None, (0,)),
    "celu": (nn.celu, lambda x: _np_elu(x), "celu", (0,)),
    "celu_alpha": (lambda x: nn.celu(x, 2.0),
                   lambda x: np.where(x > 0, x, 2.0 * np.expm1(np.minimum(x, 0) / 2.0)),
                   None, (0,)),
    "selu": (nn.selu, lambda x: SELU_SCALE * _np_elu(x, SELU_ALPHA), "selu", (0,)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1), "hard_tanh", (-1, 1)),
    "standardize": (nn.standardize,
                    lambda x: (x - x.mean(-1, keepdims=True))
                    / np.sqrt(x.var(-1, keepdims=True) + 1e-5), "standardize", ()),
}


def _points(kinks, n=40, dtype=np.float64):
    """Points in [-8, 8] at least 0.1 away from every kink."""
    x = np.linspace(-8, 8, n)
    for k in kinks:
        x = np.where(np.abs(x - k) < 0.1, x + 0.25, x)
    return x.reshape(4, -1).astype(dtype)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_match_numpy(name):
    f, ref, _, kinks = ACTIVATIONS[name]
    for dtype in (np.float32, np.float64):
        x = _points(kinks, dtype=dtype)
        y = f(fnp.asarray(x))
        assert y.dtype == dtype and y.shape == x.shape
        close(y, ref(x.astype(np.float64)), rtol=1e-5 if dtype == np.float32 else 1e-12)
    # integer inputs: clipping keeps them integers (as relu does), the others give floats
    ints = np.arange(-3, 3).reshape(2, 3)
    y = f(fnp.asarray(ints))
    assert y.dtype.kind == ("i" if name in ("relu6", "hard_tanh") else "f")
    close(y, ref(ints.astype(np.float64)), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_stable_at_large_inputs(name):
    f, ref, _, _ = ACTIVATIONS[name]
    x = np.array([[-1000.0, -100.0, 0.5, 100.0, 1000.0]], np.float32)
    y = np.asarray(f(fnp.asarray(x)))
    assert np.all(np.isfinite(y))
    close(y, ref(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    g = np.asarray(fnad.grad(lambda v: fnp.sum(f(v)))(fnp.asarray(x)))
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradients(name):
    f, _, _, kinks = ACTIVATIONS[name]
    x = fnp.asarray(_points(kinks, n=12))
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_activation_gradient_values():
    x = np.array([-3.0, -0.5, 0.5, 3.0, 7.0])
    g = lambda f: np.asarray(fnad.grad(lambda v: fnp.sum(f(v)))(fnp.asarray(x)))  # noqa: E731
    close(g(nn.relu6), [0, 0, 1, 1, 0])
    close(g(nn.hard_tanh), [0, 1, 1, 0, 0])
    close(g(nn.leaky_relu), [0.01, 0.01, 1, 1, 1])
    close(g(nn.elu), np.where(x > 0, 1, np.exp(x)))
    close(g(nn.selu), SELU_SCALE * np.where(x > 0, 1, SELU_ALPHA * np.exp(x)))


@needs_jax
@pytest.mark.parametrize("name", sorted(n for n, v in ACTIVATIONS.items() if v[2]))
def test_activation_matches_jax_nn(name):
    f, _, jax_name, kinks = ACTIVATIONS[name]
    x = _points(kinks, dtype=np.float32)
    close(f(fnp.asarray(x)), getattr(jax.nn, jax_name)(jnp.asarray(x)), rtol=2e-6, atol=1e-6)


def test_standardize_axes_and_given_statistics():
    x = normal(3, 4, 5, dtype=np.float64)
    y = nn.standardize(fnp.asarray(x), axis=(0, 2))
    m, v = x.mean((0, 2), keepdims=True), x.var((0, 2), keepdims=True)
    close(y, (x - m) / np.sqrt(v + 1e-5), rtol=1e-12)
    y = nn.standardize(fnp.asarray(x), mean=0.5, variance=4.0, epsilon=0.0)
    close(y, (x - 0.5) / 2, rtol=1e-12)


# --------------------------------------------------------------------------- initializers

VARIANCE_SCALING = {   # name -> (scale, mode)
    "glorot_uniform": (1.0, "fan_avg"), "glorot_normal": (1.0, "fan_avg"),
    "he_uniform": (2.0, "fan_in"), "he_normal": (2.0, "fan_in"),
    "lecun_uniform": (1.0, "fan_in"), "lecun_normal": (1.0, "fan_in"),
}


@pytest.mark.parametrize("name", sorted(VARIANCE_SCALING))
def test_variance_scaling_initializers(name):
    scale, mode = VARIANCE_SCALING[name]
    init = getattr(inits, name)()
    # a conv kernel in HWIO: fan_in = 3*3*40, fan_out = 3*3*100, 360,000 draws
    shape = (3, 3, 40, 100)
    w = np.asarray(init(random.key(1), shape))
    assert w.shape == shape and w.dtype == np.float32
    fan = {"fan_in": 9 * 40, "fan_avg": 9 * 70}[mode]
    assert abs(w.mean()) < 0.01 * np.sqrt(scale / fan)
    np.testing.assert_allclose(w.var(), scale / fan, rtol=0.02)
    if name.endswith("uniform"):
        limit = np.sqrt(3 * scale / fan)
        assert np.all(np.abs(w) <= limit) and np.abs(w).max() > 0.99 * limit
    else:   # truncated at two standard deviations of the underlying normal
        assert np.abs(w).max() <= 2 * np.sqrt(scale / fan) / 0.87962566103423978 + 1e-6
    # a dense matrix, float64 on request, deterministic in the key
    w64 = init(random.key(2), (500, 300), np.float64)
    assert w64.dtype == np.float64
    fan = {"fan_in": 500, "fan_avg": 400}[mode]
    np.testing.assert_allclose(np.asarray(w64).var(), scale / fan, rtol=0.02)
    np.testing.assert_array_equal(np.asarray(init(random.key(2), (500, 300), np.float64)), w64)
    assert not np.array_equal(np.asarray(init(random.key(3), (500, 300), np.float64)), w64)


@needs_jax
@pytest.mark.parametrize("name", sorted(VARIANCE_SCALING))
def test_initializers_match_jax(name):
    """fnad.random follows JAX's Threefry layout, so the same key gives the same draws."""
    ours = np.asarray(getattr(inits, name)()(random.key(3), (3, 3, 16, 32)))
    theirs = np.asarray(getattr(jax.nn.initializers, name)()(jax.random.PRNGKey(3),
                                                              (3, 3, 16, 32)))
    close(ours, theirs, rtol=1e-5, atol=1e-7)


def test_simple_initializers():
    key = random.key(0)
    for init, value in ((inits.zeros, 0.0), (inits.ones, 1.0), (inits.constant(2.5), 2.5)):
        w = init(key, (3, 4))
        assert w.shape == (3, 4) and w.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(w), np.full((3, 4), value, np.float32))
        assert init(key, (2,), np.float64).dtype == np.float64
    w = np.asarray(inits.normal(0.5)(key, (400, 500)))
    assert w.dtype == np.float32 and abs(w.mean()) < 0.005
    np.testing.assert_allclose(w.std(), 0.5, rtol=0.01)
    np.testing.assert_allclose(np.asarray(inits.normal()(key, (400, 500))).std(), 0.01,
                               rtol=0.01)
    u = np.asarray(inits.uniform(3.0)(key, (400, 500)))
    assert u.min() >= 0 and u.max() < 3.0
    np.testing.assert_allclose(u.var(), 9.0 / 12, rtol=0.02)
    with pytest.raises(ValueError, match="mode"):
        inits.variance_scaling(1.0, "fan_bad", "normal")
    with pytest.raises(ValueError, match="distribution"):
        inits.variance_scaling(1.0, "fan_in", "cauchy")(key, (3, 3))


# --------------------------------------------------------------------------- references for layers

def ref_conv_nhwc(x, w, strides, padding):
    """Cross-correlation by loops over output positions; x NHWC, w HWIO."""
    kh, kw = w.shape[:2]
    sh, sw = strides
    if padding == "SAME":
        pads = []
        for n, k, s in zip(x.shape[1:3], (kh, kw), strides):
            total = max(0, (-(-n // s) - 1) * s + k - n)
            pads.append((total // 2, total - total // 2))
    else:
        pads = [(0, 0), (0, 0)]
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    oh, ow = (xp.shape[1] - kh) // sh + 1, (xp.shape[2] - kw) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def ref_conv_transpose_valid(x, w, strides):
    """The VALID transposed convolution as a scatter: each input pixel adds its outer
    product with the (spatially flipped, as lax.conv_transpose uses it) kernel."""
    n, h, wd, _ = x.shape
    kh, kw = w.shape[:2]
    sh, sw = strides
    wf = w[::-1, ::-1]
    oh, ow = h * sh + max(kh - sh, 0), wd * sw + max(kw - sw, 0)
    out = np.zeros((n, max(oh, (h - 1) * sh + kh), max(ow, (wd - 1) * sw + kw), w.shape[3]))
    for i in range(h):
        for j in range(wd):
            out[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :] += np.einsum(
                "nc,hwco->nhwo", x[:, i, j, :], wf)
    return out[:, :oh, :ow]


def ref_pool(x, window, strides, padding, kind):
    kh, kw = window
    sh, sw = strides
    pad_value = -np.inf if kind == "max" else 0.0
    if padding == "SAME":
        pads = []
        for n, k, s in zip(x.shape[1:3], window, strides):
            total = max(0, (-(-n // s) - 1) * s + k - n)
            pads.append((total // 2, total - total // 2))
    else:
        pads = [(0, 0), (0, 0)]
    xp = np.pad(x.astype(np.float64), [(0, 0)] + pads + [(0, 0)], constant_values=pad_value)
    oh, ow = (xp.shape[1] - kh) // sh + 1, (xp.shape[2] - kw) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j] = patch.max((1, 2)) if kind == "max" else patch.mean((1, 2))
    return out


def apply_shape_matches_init(layer, input_shape, x, params=None, **kw):
    """init's output shape (with -1 for the batch) equals apply's on a concrete batch."""
    out_shape, init_params = layer.init(random.key(0), input_shape)
    params = init_params if params is None else params
    y = layer.apply(params, x, **kw)
    flat = [y] if not isinstance(y, tuple) else list(y)
    shapes = [out_shape] if not isinstance(y, tuple) else list(out_shape)
    for arr, shape in zip(flat, shapes):
        assert len(arr.shape) == len(shape)
        assert all(s in (-1, a) for s, a in zip(shape, arr.shape)), (shape, arr.shape)
    return y, init_params


# --------------------------------------------------------------------------- layers

def test_dense():
    layer = nn.Dense(7)
    out_shape, (W, b) = layer.init(random.key(0), (-1, 5))
    assert out_shape == (-1, 7) and W.shape == (5, 7) and b.shape == (7,)
    assert W.dtype == b.dtype == np.float32
    x = normal(4, 5)
    y, _ = apply_shape_matches_init(layer, (-1, 5), x)
    close(y, x.astype(np.float64) @ np.asarray(W) + np.asarray(b), rtol=1e-5)
    # leading axes broadcast, as x @ W does
    out_shape, _ = layer.init(random.key(0), (-1, 3, 5))
    assert out_shape == (-1, 3, 7)
    assert layer.apply((W, b), normal(2, 3, 5)).shape == (2, 3, 7)
    # different keys, different weights; custom initializers are used
    _, (W2, _) = layer.init(random.key(1), (-1, 5))
    assert not np.array_equal(np.asarray(W), np.asarray(W2))
    _, (W3, b3) = nn.Dense(2, W_init=inits.ones, b_init=inits.zeros).init(random.key(0), (-1, 3))
    np.testing.assert_array_equal(np.asarray(W3), np.ones((3, 2)))


CONV_CASES = [((1, 1), "VALID"), ((1, 1), "SAME"), ((2, 2), "VALID"), ((2, 2), "SAME"),
              ((2, 1), "SAME"), ((3, 2), "VALID")]


@pytest.mark.parametrize("strides,padding", CONV_CASES)
def test_conv_matches_loops(strides, padding):
    layer = nn.Conv(6, (3, 2), strides=strides, padding=padding)
    x = normal(2, 9, 8, 3)
    y, (W, b) = apply_shape_matches_init(layer, (-1, 9, 8, 3), x)
    assert W.shape == (3, 2, 3, 6) and b.shape == (6,)
    assert y.dtype == np.float32
    close(y, ref_conv_nhwc(x.astype(np.float64), np.asarray(W, np.float64), strides, padding)
          + np.asarray(b), rtol=1e-4, atol=1e-5)


@needs_jax
@pytest.mark.parametrize("strides,padding", CONV_CASES[:4])
def test_conv_matches_stax(strides, padding):
    layer = nn.Conv(4, (3, 3), strides=strides, padding=padding)
    shape, params = layer.init(random.key(0), (-1, 7, 6, 2))
    jshape, _ = stax.Conv(4, (3, 3), strides=strides, padding=padding)[0](
        jax.random.PRNGKey(0), (-1, 7, 6, 2))
    assert shape == tuple(jshape)
    x = normal(3, 7, 6, 2)
    theirs = stax.Conv(4, (3, 3), strides=strides, padding=padding)[1](to_jax(params), x)
    close(layer.apply(params, x), theirs, rtol=1e-4, atol=1e-5)


def test_general_conv_layouts():
    with pytest.raises(ValueError, match="channels-last"):
        nn.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 3))
    layer = nn.GeneralConv(("NHWC", "HWIO", "NHWC"), 4, (3, 3), padding="SAME")
    y, _ = apply_shape_matches_init(layer, (-1, 5, 5, 2), normal(2, 5, 5, 2))
    assert y.shape == (2, 5, 5, 4)


@pytest.mark.parametrize("strides", [(1, 1), (2, 2), (3, 2)])
def test_conv_transpose_matches_scatter(strides):
    layer = nn.ConvTranspose(3, (3, 3), strides=strides, padding="VALID")
    x = normal(2, 4, 5, 2)
    y, (W, b) = apply_shape_matches_init(layer, (-1, 4, 5, 2), x)
    assert W.shape == (3, 3, 2, 3)
    ref = ref_conv_transpose_valid(x.astype(np.float64), np.asarray(W, np.float64), strides)
    close(y, ref + np.asarray(b), rtol=1e-4, atol=1e-5)


@needs_jax
@pytest.mark.parametrize("strides,padding", [((1, 1), "SAME"), ((2, 2), "SAME"),
                                             ((2, 2), "VALID"), ((2, 1), "SAME")])
def test_conv_transpose_matches_stax(strides, padding):
    layer = nn.ConvTranspose(3, (3, 2), strides=strides, padding=padding)
    x = normal(2, 4, 5, 2)
    y, params = apply_shape_matches_init(layer, (-1, 4, 5, 2), x)
    jlayer = stax.ConvTranspose(3, (3, 2), strides=strides, padding=padding)
    jshape, _ = jlayer[0](jax.random.PRNGKey(0), (-1, 4, 5, 2))
    assert layer.init(random.key(0), (-1, 4, 5, 2))[0] == tuple(jshape)
    close(y, jlayer[1](to_jax(params), x), rtol=1e-4, atol=1e-5)
    if padding == "SAME":
        assert y.shape[1:3] == (4 * strides[0], 5 * strides[1])


POOL_CASES = [((2, 2), None, "VALID"), ((3, 3), (2, 2), "VALID"), ((2, 3), (1, 2), "VALID")]


@pytest.mark.parametrize("kind,window,strides,padding",
                         [("max",) + c for c in POOL_CASES + [((3, 3), (2, 2), "SAME")]]
                         + [("avg",) + c for c in POOL_CASES])
def test_pooling_matches_loops(kind, window, strides, padding):
    layer = (nn.MaxPool if kind == "max" else nn.AvgPool)(window, strides, padding)
    x = normal(2, 7, 8, 3)
    y, params = apply_shape_matches_init(layer, (-1, 7, 8, 3), x)
    assert params == () and y.dtype == np.float32
    close(y, ref_pool(x, window, strides or window, padding, kind), rtol=1e-5, atol=1e-6)


def test_avg_pool_same_padding():
    """Padding counts as zeros in the average (as flax's and PyTorch's default)."""
    x = normal(1, 5, 5, 2)
    y = nn.AvgPool((3, 3), (2, 2), "SAME").apply((), x)
    xp = np.pad(x.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)])
    ref = np.stack([np.stack([xp[:, i:i + 3, j:j + 3].mean((1, 2)) for j in (0, 2, 4)], 1)
                    for i in (0, 2, 4)], 1)
    close(y, ref, rtol=1e-5, atol=1e-6)


@needs_jax
def test_max_pool_matches_stax():
    """With explicit strides: stax's default stride is 1, fnad's (as PyTorch's) the window."""
    x = normal(2, 7, 8, 3)
    for args in (((2, 2), (2, 2)), ((3, 3), (1, 1)), ((3, 3), (2, 2), "SAME")):
        ours, theirs = nn.MaxPool(*args), stax.MaxPool(*args)
        # stax's shapes say 0 for the batch size
        assert ours.init(random.key(0), (-1, 7, 8, 3))[0][1:] == tuple(
            theirs[0](jax.random.PRNGKey(0), (-1, 7, 8, 3))[0])[1:]
        close(ours.apply((), x), theirs[1]((), x))


def test_flatten():
    x = normal(3, 4, 5, 2)
    y, _ = apply_shape_matches_init(nn.Flatten, (-1, 4, 5, 2), x)
    assert nn.Flatten.init(None, (-1, 4, 5, 2))[0] == (-1, 40)
    np.testing.assert_array_equal(np.asarray(y), x.reshape(3, 40))


def test_dropout():
    layer = nn.Dropout(0.3)
    x = np.ones((200, 500), np.float32)
    key = random.key(4)
    y, params = apply_shape_matches_init(layer, (-1, 500), x, key=key)
    y = np.asarray(y)
    kept = y != 0
    assert abs(1 - kept.mean() - 0.3) < 0.005
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    np.testing.assert_allclose(y.mean(), 1.0, atol=0.01)     # unbiased in expectation
    # deterministic in the key, different for another key
    np.testing.assert_array_equal(np.asarray(layer.apply(params, x, key=key)), y)
    assert not np.array_equal(np.asarray(layer.apply(params, x, key=random.key(5))), y)
    # evaluation is the identity and needs no key; rate 0 is the identity
    np.testing.assert_array_equal(np.asarray(layer.apply(params, x, train=False)), x)
    np.testing.assert_array_equal(np.asarray(nn.Dropout(0.0).apply((), x)), x)
    with pytest.raises(ValueError, match="key"):
        layer.apply(params, x)
    for rate in (-0.1, 1.0):
        with pytest.raises(ValueError, match="rate"):
            nn.Dropout(rate)
    # the gradient is the mask scaled, and it jits with the key as an argument
    g = fnad.grad(lambda v, k: fnp.sum(layer.apply((), v, key=k)))(fnp.asarray(x), key)
    close(g, y)
    close(fnad.jit(lambda v, k: layer.apply((), v, key=k))(x, key), y)


def test_layer_norm():
    x = normal(4, 3, 6) * 3 + 1
    layer = nn.LayerNorm()
    y, (gamma, beta) = apply_shape_matches_init(layer, (-1, 3, 6), x)
    assert gamma.shape == beta.shape == (6,)
    xd = x.astype(np.float64)
    norm = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
    close(y, norm, rtol=1e-4, atol=1e-5)
    g, b = normal(6), normal(6)
    close(layer.apply((g, b), x), norm * g + b, rtol=1e-4, atol=1e-5)
    # over several axes, without shift
    layer = nn.LayerNorm(axis=(1, 2), center=False)
    _, (gamma, beta) = layer.init(random.key(0), (-1, 3, 6))
    assert gamma.shape == (3, 6) and beta == ()
    g2 = normal(3, 6)
    norm2 = (xd - xd.mean((1, 2), keepdims=True)) / np.sqrt(xd.var((1, 2), keepdims=True) + 1e-5)
    close(layer.apply((g2, ()), x), norm2 * g2, rtol=1e-4, atol=1e-5)
    check_grads(lambda x, g, b: nn.LayerNorm().apply((g, b), x),
                (fnp.asarray(xd[:2]), fnp.asarray(g.astype(np.float64)),
                 fnp.asarray(b.astype(np.float64))), order=1)


def test_batch_norm_training_and_evaluation():
    layer = nn.BatchNorm(momentum=0.8)
    x = normal(8, 4, 5, 3) * np.array([1.0, 2.0, 0.5], np.float32) + np.array([0.0, 3.0, -1.0],
                                                                               np.float32)
    out_shape, (gamma, beta) = layer.init(random.key(0), (-1, 4, 5, 3))
    assert out_shape == (-1, 4, 5, 3) and gamma.shape == beta.shape == (3,)
    state = layer.init_state((-1, 4, 5, 3))
    np.testing.assert_array_equal(np.asarray(state["mean"]), np.zeros(3))
    np.testing.assert_array_equal(np.asarray(state["var"]), np.ones(3))
    xd = x.astype(np.float64)
    mean, var = xd.mean((0, 1, 2)), xd.var((0, 1, 2))
    g, b = normal(3), normal(3)

    # training: batch statistics, and the running statistics move by the momentum
    y, new_state = layer.apply((g, b), x, state=state)
    assert y.shape == x.shape
    close(y, (xd - mean) / np.sqrt(var + 1e-5) * g + b, rtol=1e-4, atol=1e-4)
    close(new_state["mean"], 0.2 * mean, rtol=1e-5, atol=1e-6)
    close(new_state["var"], 0.8 + 0.2 * var, rtol=1e-5, atol=1e-6)
    y, newer = layer.apply((g, b), x, state=new_state)
    close(newer["mean"], 0.8 * 0.2 * mean + 0.2 * mean, rtol=1e-5, atol=1e-6)
    # without state, training gives only the outputs
    close(layer.apply((g, b), x), y, rtol=1e-6, atol=1e-6)

    # evaluation: the running statistics, which come back unchanged
    y_eval, same = layer.apply((g, b), x, state=newer, train=False)
    m, v = np.asarray(newer["mean"]), np.asarray(newer["var"])
    close(y_eval, (xd - m) / np.sqrt(v + 1e-5) * g + b, rtol=1e-4, atol=1e-4)
    close(same["mean"], m)
    close(same["var"], v)
    with pytest.raises(ValueError, match="state"):
        layer.apply((g, b), x, train=False)


def test_batch_norm_dense_features_and_options():
    layer = nn.BatchNorm(axis=0, center=False, scale=False)
    x = normal(16, 5, dtype=np.float64) * 2 + 1
    _, params = layer.init(random.key(0), (-1, 5))
    assert params == ((), ())
    state = layer.init_state((-1, 5))
    assert state["mean"].shape == (5,)
    y, _ = layer.apply(params, x, state=state)
    close(y, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-10)
    check_grads(lambda v: layer.apply(params, v), (fnp.asarray(x[:6]),), order=1)


@needs_jax
def test_batch_norm_matches_stax_in_training():
    x = normal(6, 4, 4, 3)
    gamma, beta = normal(3), normal(3)
    # fnad's parameters are (scale, shift), stax's (beta, gamma)
    theirs = stax.BatchNorm()[1](to_jax((beta, gamma)), x)
    close(nn.BatchNorm().apply((gamma, beta), x), theirs, rtol=1e-4, atol=1e-4)


def test_embedding():
    layer = nn.Embedding(11, 4)
    ids = np.array([[0, 3, 10], [3, 3, 1]], np.int32)
    y, table = apply_shape_matches_init(layer, (-1, 3), ids)
    assert table.shape == (11, 4)
    assert layer.init(random.key(0), (-1, 3))[0] == (-1, 3, 4)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(table)[ids])
    g = np.asarray(fnad.grad(lambda t: fnp.sum(layer.apply(t, ids)))(table))
    np.testing.assert_array_equal(g[:, 0], np.bincount(ids.ravel(), minlength=11))


@pytest.mark.parametrize("name", ["Relu", "Relu6", "Tanh", "Sigmoid", "Softplus", "Gelu",
                                  "Silu", "Elu", "Selu", "LeakyRelu", "LogSoftmax", "Softmax",
                                  "Identity"])
def test_elementwise_layers(name):
    layer = getattr(nn, name)
    fun = {"Relu": nn.relu, "Relu6": nn.relu6, "Tanh": fnp.tanh, "Sigmoid": nn.sigmoid,
           "Softplus": nn.softplus, "Gelu": nn.gelu, "Silu": nn.silu, "Elu": nn.elu,
           "Selu": nn.selu, "LeakyRelu": nn.leaky_relu, "LogSoftmax": nn.log_softmax,
           "Softmax": nn.softmax, "Identity": lambda v: v}[name]
    x = normal(3, 5)
    y, params = apply_shape_matches_init(layer, (-1, 5), x)
    assert params == ()
    close(y, fun(fnp.asarray(x)), rtol=1e-6)


@pytest.mark.parametrize("layer,shape", [
    (nn.Dense(3), (2, 4)),
    (nn.Conv(2, (3, 2), strides=(2, 1), padding="SAME"), (2, 5, 4, 2)),
    (nn.ConvTranspose(2, (2, 3), strides=(2, 2), padding="VALID"), (1, 3, 3, 2)),
    (nn.MaxPool((2, 2), (1, 1)), (2, 4, 4, 2)),
    (nn.AvgPool((2, 3), (2, 1)), (1, 4, 5, 2)),
    (nn.LayerNorm(), (2, 5)),
])
def test_layer_gradients(layer, shape):
    """Derivatives w.r.t. parameters and inputs, float64, against finite differences."""
    _, params = layer.init(random.key(0), (-1,) + shape[1:])
    params = tree_map(lambda p: fnp.asarray(np.asarray(p, np.float64)), params)
    # distinct values keep max pooling away from ties
    x = fnp.asarray(RNG.permutation(np.prod(shape)).reshape(shape) / 7.0)
    check_grads(layer.apply, (params, x), order=1)


# --------------------------------------------------------------------------- combinators

def test_serial_and_the_issue_example():
    init, apply = nn.serial(nn.Conv(8, (3, 3)), nn.Relu, nn.MaxPool((2, 2)), nn.Flatten,
                            nn.Dense(10))
    out_shape, params = init(fnad.random.key(0), (-1, 8, 8, 1))
    assert out_shape == (-1, 10)
    assert [tuple(p.shape for p in layer) for layer in params] == [
        ((3, 3, 1, 8), (8,)), (), (), (), ((72, 10), (10,))]
    x = normal(4, 8, 8, 1)
    (W1, b1), _, _, _, (W2, b2) = params
    h = np.maximum(ref_conv_nhwc(x, np.asarray(W1), (1, 1), "VALID") + np.asarray(b1), 0)
    h = h.reshape(4, 3, 2, 3, 2, 8).max((2, 4)).reshape(4, 72)
    close(apply(params, x), h @ np.asarray(W2) + np.asarray(b2), rtol=1e-4, atol=1e-5)

    opt = fnad.optim.chain(fnad.optim.clip_by_global_norm(1.0), fnad.optim.adamw(1e-3))
    opt_state = opt.init(params)
    y = np.arange(4) % 10

    def loss_fn(params, x, y):
        return nn.softmax_cross_entropy(apply(params, x), y)

    @fnad.jit
    def step(params, opt_state, x, y):
        loss, grads = fnad.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    losses = []
    for _ in range(30):
        params, opt_state, loss = step(params, opt_state, x, y)
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
    assert tree_flatten(params)[0][0].dtype == np.float32


@needs_jax
def test_combinators_match_stax():
    """A residual block and a concatenating branch, with stax's parameter layout."""
    ours = nn.serial(nn.Dense(6), nn.FanOut(2), nn.parallel(nn.serial(nn.Dense(6), nn.Tanh),
                                                            nn.Identity),
                     nn.FanInSum, nn.FanOut(3), nn.parallel(nn.Dense(2), nn.Identity, nn.Relu),
                     nn.FanInConcat(-1))
    theirs = stax.serial(stax.Dense(6), stax.FanOut(2),
                         stax.parallel(stax.serial(stax.Dense(6), stax.Tanh), stax.Identity),
                         stax.FanInSum, stax.FanOut(3),
                         stax.parallel(stax.Dense(2), stax.Identity, stax.Relu),
                         stax.FanInConcat(-1))
    shape, params = ours.init(random.key(0), (-1, 4))
    jshape, jparams = theirs[0](jax.random.PRNGKey(0), (-1, 4))
    assert shape == tuple(jshape) == (-1, 14)
    # the same leaves in the same order (stax's parallel keeps a tuple, fnad's a list)
    assert [p.shape for p in tree_flatten(params)[0]] == [
        p.shape for p in jax.tree_util.tree_leaves(jparams)]
    x = normal(5, 4)
    y, _ = apply_shape_matches_init(ours, (-1, 4), x, params=params)
    close(y, theirs[1](to_jax(params), x), rtol=1e-5, atol=1e-6)


def test_combinators_against_numpy():
    x = normal(3, 4)
    fan = nn.FanOut(3)
    shapes, params = fan.init(random.key(0), (-1, 4))
    assert shapes == ((-1, 4),) * 3 and params == ()
    outs = fan.apply((), x)
    assert isinstance(outs, tuple) and len(outs) == 3
    par = nn.parallel(nn.Dense(2), nn.Relu, nn.Flatten)
    shapes, params = par.init(random.key(1), ((-1, 4), (-1, 4), (-1, 2, 2)))
    assert shapes == ((-1, 2), (-1, 4), (-1, 4))
    a, b, c = par.apply(params, (x, x, x.reshape(3, 2, 2)))
    W, bias = params[0]
    close(a, x @ np.asarray(W) + np.asarray(bias), rtol=1e-5)
    close(b, np.maximum(x, 0))
    close(c, x.reshape(3, 4))
    assert nn.FanInSum.init(None, ((-1, 4), (-1, 4)))[0] == (-1, 4)
    close(nn.FanInSum.apply((), (x, 2 * x, -x)), 2 * x)
    cat = nn.FanInConcat(axis=1)
    assert cat.init(None, ((-1, 4), (-1, 2)))[0] == (-1, 6)
    close(cat.apply((), (x, x[:, :2])), np.concatenate([x, x[:, :2]], 1))
    assert nn.FanInConcat(0).init(None, ((2, 4), (3, 4)))[0] == (5, 4)
    # a Layer unpacks as a pair; serial accepts bare (init, apply) tuples
    init, apply = nn.serial((nn.Relu.init, nn.Relu.apply), nn.Dense(3))
    assert init(random.key(0), (-1, 4))[0] == (-1, 3)


def test_serial_threads_keys_to_dropout():
    net = nn.serial(nn.Dense(50), nn.Dropout(0.5), nn.Dense(50), nn.Dropout(0.5))
    _, params = net.init(random.key(0), (-1, 10))
    x = normal(4, 10)
    a = np.asarray(net.apply(params, x, key=random.key(1)))
    np.testing.assert_array_equal(np.asarray(net.apply(params, x, key=random.key(1))), a)
    assert not np.array_equal(np.asarray(net.apply(params, x, key=random.key(2))), a)
    with pytest.raises(ValueError, match="key"):
        net.apply(params, x)
    e = np.asarray(net.apply(params, x, train=False))
    (W1, b1), _, (W2, b2), _ = params
    close(e, (x @ np.asarray(W1) + np.asarray(b1)) @ np.asarray(W2) + np.asarray(b2),
          rtol=1e-4, atol=1e-5)


def _bn_net():
    return nn.serial(nn.Conv(4, (3, 3), padding="SAME"), nn.BatchNorm(), nn.Relu,
                     nn.Identity, nn.Flatten, nn.Dense(16),
                     nn.BatchNorm(axis=0, momentum=0.5), nn.Relu, nn.Dense(3))


def test_batch_norm_state_threads_through_serial():
    net = _bn_net()
    assert net.stateful
    out_shape, params = net.init(random.key(0), (-1, 6, 6, 2))
    assert out_shape == (-1, 3)
    state = net.init_state((-1, 6, 6, 2))
    assert [None if s is None else sorted(s) for s in state] == [
        None, ["mean", "var"], None, None, None, None, ["mean", "var"], None, None]
    assert state[1]["mean"].shape == (4,) and state[6]["mean"].shape == (16,)
    x = normal(8, 6, 6, 2)
    y, new_state = net.apply(params, x, state=state)
    assert y.shape == (8, 3)
    # the first BatchNorm saw the conv output: its running mean moved to 0.1 * batch mean
    h = nn.Conv(4, (3, 3), padding="SAME").apply(params[0], x)
    close(new_state[1]["mean"], 0.1 * np.asarray(h).mean((0, 1, 2)), rtol=1e-4, atol=1e-6)
    # without state: outputs only, the same as with state in training
    close(net.apply(params, x), y, rtol=1e-6)
    # evaluation uses the running statistics and needs them
    y_eval, same = net.apply(params, x, state=new_state, train=False)
    assert not np.allclose(np.asarray(y_eval), np.asarray(y))
    for a, b in zip(tree_flatten(same)[0], tree_flatten(new_state)[0]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="state"):
        net.apply(params, x, train=False)
    # parallel threads state too
    par = nn.parallel(nn.BatchNorm(axis=0), nn.Dense(2))
    assert par.stateful
    st = par.init_state(((-1, 3), (-1, 3)))
    assert st[1] is None and st[0]["mean"].shape == (3,)
    _, pp = par.init(random.key(0), ((-1, 3), (-1, 3)))
    (a, b), st2 = par.apply(pp, (normal(8, 3), normal(8, 3)), state=st)
    assert a.shape == (8, 3) and b.shape == (8, 2) and st2[1] is None


def test_nested_stateful_combinators():
    block = nn.serial(nn.Dense(4), nn.BatchNorm(axis=0), nn.Relu)
    net = nn.serial(block, nn.FanOut(2), nn.parallel(block, nn.Identity), nn.FanInSum)
    _, params = net.init(random.key(0), (-1, 3))
    state = net.init_state((-1, 3))
    assert state[0][1]["mean"].shape == (4,) and state[2][0][1]["mean"].shape == (4,)
    x = normal(10, 3)
    y, new_state = fnad.jit(lambda p, s, x: net.apply(p, x, state=s))(params, state, x)
    h = block.apply(params[0], x)
    close(y, block.apply(params[2][0], h) + h, rtol=1e-5, atol=1e-6)
    close(new_state[0][1]["mean"], 0.1 * np.asarray(x @ np.asarray(params[0][0][0])
                                                    + np.asarray(params[0][0][1])).mean(0),
          rtol=1e-4, atol=1e-6)
    assert fnad.tree_util.tree_structure(new_state) == fnad.tree_util.tree_structure(state)


def test_jitted_train_step_with_batch_norm_state():
    net = _bn_net()
    _, params = net.init(random.key(0), (-1, 6, 6, 2))
    state = net.init_state((-1, 6, 6, 2))
    opt = optim.sgd(0.1, momentum=0.9)
    opt_state = opt.init(params)
    x, y = normal(16, 6, 6, 2), np.arange(16) % 3

    def loss_fn(params, state, x, y):
        logits, state = net.apply(params, x, state=state)
        return nn.softmax_cross_entropy(logits, y), state

    def step(params, state, opt_state, x, y):
        (loss, state), grads = fnad.value_and_grad(loss_fn, has_aux=True)(params, state, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), state, opt_state, loss

    jstep = fnad.jit(step)
    eager = (params, state, opt_state)
    jitted = (params, state, opt_state)
    losses = []
    for _ in range(3):
        *eager, le = step(*eager, x, y)
        *jitted, lj = jstep(*jitted, x, y)
        np.testing.assert_allclose(float(lj), float(le), rtol=1e-4)
        losses.append(float(lj))
    for a, b in zip(tree_flatten(jitted)[0], tree_flatten(eager)[0]):
        close(a, b, rtol=1e-3, atol=1e-5)
    # the state went through the step: three momentum updates of the running mean
    assert not np.allclose(np.asarray(jitted[1][1]["mean"]), 0)
    assert np.all(np.asarray(jitted[1][1]["var"]) != 1)
    for _ in range(20):
        *jitted, lj = jstep(*jitted, x, y)
    assert float(lj) < losses[0]
    logits, _ = fnad.jit(lambda p, s, x: net.apply(p, x, state=s, train=False))(
        jitted[0], jitted[1], x)
    assert logits.shape == (16, 3) and np.all(np.isfinite(np.asarray(logits)))


# --------------------------------------------------------------------------- losses

def _np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_losses_match_numpy():
    p, t = normal(6, 4, dtype=np.float64), normal(6, 4, dtype=np.float64)
    close(nn.mse(p, t), ((p - t) ** 2).mean(), rtol=1e-12)
    for delta in (1.0, 0.3):
        err = np.abs(p - t)
        ref = np.where(err <= delta, 0.5 * err ** 2, delta * (err - 0.5 * delta)).mean()
        close(nn.huber(p, t, delta=delta), ref, rtol=1e-12)
    logits, labels = normal(6, 5, dtype=np.float64), np.array([0, 4, 2, 2, 1, 3])
    ref = -_np_log_softmax(logits)[np.arange(6), labels].mean()
    close(nn.softmax_cross_entropy(logits, labels), ref, rtol=1e-12)
    close(nn.softmax_cross_entropy(logits, labels.astype(np.int64)), ref, rtol=1e-12)
    onehot = np.eye(5)[labels]
    close(nn.softmax_cross_entropy(logits, onehot), ref, rtol=1e-12)
    soft = np.abs(normal(6, 5, dtype=np.float64))
    soft /= soft.sum(-1, keepdims=True)
    close(nn.softmax_cross_entropy(logits, soft),
          -(soft * _np_log_softmax(logits)).sum(-1).mean(), rtol=1e-12)
    close(nn.nll(_np_log_softmax(logits), labels), ref, rtol=1e-12)
    close(nn.nll(_np_log_softmax(logits), onehot), ref, rtol=1e-12)
    z, y = normal(7, dtype=np.float64) * 3, (RNG.random(7) > 0.5).astype(np.float64)
    s = 1 / (1 + np.exp(-z))
    close(nn.binary_cross_entropy_with_logits(z, y),
          -(y * np.log(s) + (1 - y) * np.log(1 - s)).mean(), rtol=1e-10)
    # float32 in, float32 out
    assert nn.softmax_cross_entropy(logits.astype(np.float32), labels).dtype == np.float32
    assert nn.mse(p.astype(np.float32), t.astype(np.float32)).dtype == np.float32


def test_loss_gradients():
    p, t = normal(3, 4, dtype=np.float64), normal(3, 4, dtype=np.float64)
    labels = np.array([1, 0, 3])
    y = np.array([[1.0, 0.0, 1.0, 0.0]] * 3)
    for f in (lambda p: nn.mse(p, t), lambda p: nn.huber(p, t, 0.7),
              lambda p: nn.softmax_cross_entropy(p, labels),
              lambda p: nn.binary_cross_entropy_with_logits(p, y)):
        check_grads(f, (fnp.asarray(p),), order=2)
    # d/dz of mean cross-entropy is (softmax - onehot) / batch
    g = fnad.grad(nn.softmax_cross_entropy)(fnp.asarray(p), labels)
    close(g, (np.exp(_np_log_softmax(p)) - np.eye(4)[labels]) / 3, rtol=1e-10)
    g = fnad.grad(nn.binary_cross_entropy_with_logits)(fnp.asarray(p), y)
    close(g, (1 / (1 + np.exp(-p)) - y) / 12, rtol=1e-10)


def test_losses_stable_for_huge_logits():
    logits = np.array([[1e4, -1e4, 0.0], [-3e4, 2e4, 1e4]], np.float32)
    labels = np.array([1, 0])
    loss, g = fnad.value_and_grad(nn.softmax_cross_entropy)(fnp.asarray(logits), labels)
    assert np.isfinite(float(loss)) and np.all(np.isfinite(np.asarray(g)))
    np.testing.assert_allclose(float(loss), (2e4 + 5e4) / 2, rtol=1e-6)
    close(g, np.array([[1, -1, 0], [-1, 1, 0]]) / 2, atol=1e-6)
    z = np.array([1e4, -1e4, 1e4, -1e4, 80.0, -80.0], np.float32)
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0], np.float32)
    loss, g = fnad.value_and_grad(nn.binary_cross_entropy_with_logits)(fnp.asarray(z), y)
    np.testing.assert_allclose(float(loss), 2e4 / 6, rtol=1e-6)
    close(g, np.array([0, 0, 1, -1, 0, 0]) / 6, atol=1e-6)
    p = np.array([1e4, -1e4], np.float32)
    loss, g = fnad.value_and_grad(nn.huber)(fnp.asarray(p), np.zeros(2, np.float32))
    assert np.isfinite(float(loss)) and np.all(np.isfinite(np.asarray(g)))
    close(g, [0.5, -0.5])
    logp = nn.log_softmax(fnp.asarray(logits))
    assert np.all(np.isfinite(np.asarray(nn.nll(logp, labels))))


# --------------------------------------------------------------------------- training

def test_cnn_trains_on_digits():
    (train_x, train_y) = fnad.datasets.digits("train", seed=0)
    (test_x, test_y) = fnad.datasets.digits("test", seed=0)
    train_x, test_x = train_x[..., None], test_x[..., None]
    init, apply = nn.serial(nn.Conv(8, (3, 3), padding="SAME"), nn.Relu, nn.MaxPool((2, 2)),
                            nn.Flatten, nn.Dense(32), nn.Relu, nn.Dense(10))
    _, params = init(random.key(0), (-1, 8, 8, 1))
    opt = optim.adam(1e-2)
    opt_state = opt.init(params)

    @fnad.jit
    def step(params, opt_state, x, y):
        loss, grads = fnad.value_and_grad(
            lambda p: nn.softmax_cross_entropy(apply(p, x), y))(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss

    for epoch in range(8):
        for x, y in fnad.data.batches((train_x, train_y), 64, key=epoch, drop_last=True):
            params, opt_state, loss = step(params, opt_state, x, y)
    predict = fnad.jit(lambda p, x: fnp.argmax(apply(p, x, train=False), axis=-1))
    accuracy = float(np.mean(np.asarray(predict(params, test_x)) == test_y))
    assert accuracy >= 0.92, accuracy
