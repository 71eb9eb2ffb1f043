"""The parts of fnad.nn that follow jax.nn's API: initializer signatures, the smaller
activations and dot_product_attention, against hand formulas and numpy (always) and
JAX (when installed)."""
import math

import numpy as np
import pytest

import fnad
from fnad import nn, random
from fnad.nn import initializers as inits

try:
    import jax
except ImportError:   # CI installs no JAX
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed")
X = np.concatenate([np.linspace(-6, 6, 49), [-1.0, 1.0, 0.0, -0.0, -3.0, 3.0]])


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


HAND = {   # name -> float64 reference
    "identity": lambda x: x,
    "tanh": np.tanh,
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "soft_sign": lambda x: x / (1 + np.abs(x)),
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: np.clip((x + 1) / 2, 0, 1),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_activation_against_formula(name):
    ours = getattr(nn, name)
    np.testing.assert_allclose(np.asarray(ours(X)), HAND[name](X), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(fnad.jit(ours)(X.astype(np.float32))),
                               HAND[name](X), rtol=2e-6, atol=1e-6)
    if jax is not None:
        np.testing.assert_allclose(np.asarray(ours(X)), np.asarray(getattr(jax.nn, name)(X)),
                                   rtol=1e-6, atol=1e-7)


def test_glu_log1mexp_logmeanexp():
    x = np.random.RandomState(0).randn(3, 4)
    np.testing.assert_allclose(np.asarray(nn.glu(x)), x[:, :2] * _sigmoid(x[:, 2:]),
                               rtol=1e-12)
    with pytest.raises(fnad.ShapeError, match="even"):
        nn.glu(x, axis=0)
    # log(1 - e^-x): exact at both ends (x tiny: log x; x large: -e^-x)
    t = np.array([1e-20, 1e-8, 0.1, math.log(2), 1.0, 5.0, 40.0])
    ref = np.array([math.log(-math.expm1(-v)) if v < 1 else math.log1p(-math.exp(-v))
                    for v in t])
    np.testing.assert_allclose(np.asarray(nn.log1mexp(t)), ref, rtol=1e-14)
    big = np.array([[1000.0, 1000.0], [-1000.0, -1002.0]])
    np.testing.assert_allclose(np.asarray(nn.logmeanexp(big, axis=1)),
                               [1000.0, -1000 + math.log((1 + math.exp(-2)) / 2)],
                               rtol=1e-14)
    np.testing.assert_allclose(float(nn.logmeanexp(x)), math.log(np.exp(x).mean()),
                               rtol=1e-13)
    where = x > 0
    ref = [math.log(np.exp(r[w]).mean()) for r, w in zip(x, where)]
    np.testing.assert_allclose(np.asarray(nn.logmeanexp(x, axis=1, where=where)), ref,
                               rtol=1e-13)
    g = fnad.grad(lambda v: nn.logmeanexp(v))(x)   # the softmax weights of x
    np.testing.assert_allclose(np.asarray(g), np.exp(x) / np.exp(x).sum(), rtol=1e-12)


# --------------------------------------------------------------------------- initializers

def test_initializers_take_jax_positional_axes():
    # a conv kernel in OIHW: in_axis 1, out_axis 0 -> fan_in = 8 * 9, fan_out = 16 * 9
    shape = (16, 8, 3, 3)
    w = np.asarray(inits.glorot_uniform(1, 0)(random.key(0), shape))
    limit = math.sqrt(3 * 1.0 / ((72 + 144) / 2))
    assert w.shape == shape and np.abs(w).max() <= limit and np.abs(w).max() > 0.95 * limit
    w = np.asarray(inits.lecun_normal(1, 0, (), np.float64)(random.key(1), (64, 100, 5)))
    assert w.dtype == np.float64
    # batch_axis: each of the 5 slices is its own (100 in, 64 out) matrix
    w = np.asarray(inits.variance_scaling(1.0, "fan_in", "normal", 1, 0, 2)(
        random.key(1), (64, 100, 5), np.float64))
    np.testing.assert_allclose(w.var(), 1 / 100, rtol=0.05)
    w = np.asarray(inits.variance_scaling(2.0, "fan_geo_avg", "normal")(
        random.key(2), (100, 400)))
    np.testing.assert_allclose(w.var(), 2 / 200, rtol=0.05)
    assert inits.zeros(random.key(0), (2,)).dtype == np.float32
    with pytest.raises(fnad.ShapeError, match="rank 2"):
        inits.glorot_normal()(random.key(0), (5,))
    t = np.asarray(inits.truncated_normal(0.5)(random.key(3), (20000,)))
    assert np.abs(t).max() <= 1.0 + 1e-6
    np.testing.assert_allclose(t.std(), 0.5 * 0.8796, rtol=0.03)


def test_orthogonal_initializers():
    for shape, axis in (((6, 4), -1), ((4, 6), -1), ((3, 3, 5, 8), -1), ((8, 5), 0)):
        w = np.asarray(inits.orthogonal(2.0, axis, np.float64)(random.key(0), shape))
        assert w.shape == shape
        cols = np.moveaxis(w, axis, -1).reshape(-1, shape[axis])
        gram = cols.T @ cols if cols.shape[0] >= cols.shape[1] else cols @ cols.T
        np.testing.assert_allclose(gram, 4 * np.eye(len(gram)), atol=1e-12)
    k = np.asarray(inits.delta_orthogonal(1.0)(random.key(1), (3, 3, 4, 6)))
    center = k[1, 1]
    np.testing.assert_allclose(center @ center.T, np.eye(4), atol=1e-6)
    assert np.abs(k).sum() == pytest.approx(np.abs(center).sum())
    with pytest.raises(fnad.ShapeError, match="channels"):
        inits.delta_orthogonal()(random.key(1), (3, 3, 6, 4))


@needs_jax
@pytest.mark.parametrize("name,args", [("glorot_uniform", (1, 0)), ("he_normal", (0, 1)),
                                       ("lecun_uniform", (-2, -1, 0)),
                                       ("truncated_normal", (0.3,))])
def test_initializers_match_jax_with_arguments(name, args):
    shape = (4, 6, 5)
    ours = np.asarray(getattr(inits, name)(*args)(random.key(7), shape))
    theirs = np.asarray(getattr(jax.nn.initializers, name)(*args)(jax.random.PRNGKey(7),
                                                                   shape))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)


# --------------------------------------------------------------------------- attention

def _attention_reference(q, k, v, bias=None, mask=None, causal=False, scale=None):
    """Loops over batch, head, query position: softmax(q.k * scale + bias) . v."""
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(H) if scale is None else scale
    out = np.zeros((B, T, N, H))
    for b in range(B):
        for n in range(N):
            kv = n // (N // K)
            for t in range(T):
                logits = k[b, :, kv] @ q[b, t, n] * scale
                if bias is not None:
                    logits = logits + np.broadcast_to(bias, (B, N, T, S))[b, n, t]
                allowed = np.ones(S, bool)
                if mask is not None:
                    allowed &= np.broadcast_to(mask, (B, N, T, S))[b, n, t]
                if causal:
                    allowed &= np.arange(S) <= t
                logits = np.where(allowed, logits, -np.inf)
                w = np.exp(logits - logits.max())
                out[b, t, n] = (w / w.sum()) @ v[b, :, kv]
    return out


def test_dot_product_attention_against_loops():
    rs = np.random.RandomState(1)
    q, k, v = rs.randn(2, 5, 4, 3), rs.randn(2, 6, 2, 3), rs.randn(2, 6, 2, 3)
    bias, mask = rs.randn(1, 4, 5, 6), rs.rand(2, 1, 5, 6) > 0.3
    mask[..., 0] = True     # no row masked entirely
    for kw in ({}, {"bias": bias}, {"mask": mask, "is_causal": True},
               {"bias": bias, "mask": mask, "scale": 0.3}):
        ref = _attention_reference(q, k, v, kw.get("bias"), kw.get("mask"),
                                   kw.get("is_causal", False), kw.get("scale"))
        np.testing.assert_allclose(np.asarray(nn.dot_product_attention(q, k, v, **kw)), ref,
                                   rtol=1e-12, atol=1e-13)
    # unbatched inputs; sequence lengths are masks too
    np.testing.assert_allclose(np.asarray(nn.dot_product_attention(q[0], k[0], v[0])),
                               _attention_reference(q[:1], k[:1], v[:1])[0], rtol=1e-12)
    out = np.asarray(nn.dot_product_attention(q, k, v, query_seq_lengths=np.array([3, 5]),
                                              key_value_seq_lengths=np.array([4, 6])))
    kv_mask = np.arange(6)[None, None, None, :] < np.array([4, 6])[:, None, None, None]
    ref = _attention_reference(q, k, v, mask=kv_mask)
    ref[0, 3:] = 0
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-13)
    window = np.asarray(nn.dot_product_attention(q, k, v, local_window_size=(1, 0)))
    band = (np.arange(6)[None, :] <= np.arange(5)[:, None]) & \
        (np.arange(6)[None, :] >= np.arange(5)[:, None] - 1)
    np.testing.assert_allclose(window, _attention_reference(q, k, v, mask=band), rtol=1e-12)
    with pytest.raises(fnad.ShapeError, match="multiple"):
        nn.dot_product_attention(q[:, :, :3], k, v)
    # the residual: logsumexp of each row of scaled logits, (B, T, N)
    _, lse = nn.dot_product_attention(q, k, v, return_residual=True)
    logits = np.einsum("btnh,bsnh->btns", q, np.repeat(k, 2, axis=2)) / math.sqrt(3)
    np.testing.assert_allclose(np.asarray(lse), np.log(np.exp(logits).sum(-1)), rtol=1e-12)


def test_dot_product_attention_gradient_and_jit():
    rs = np.random.RandomState(2)
    q, k, v = rs.randn(1, 3, 2, 2), rs.randn(1, 4, 2, 2), rs.randn(1, 4, 2, 2)

    def f(q):
        return (nn.dot_product_attention(q, k, v, is_causal=False) ** 2).sum()
    g = np.asarray(fnad.grad(f)(q))
    eps = 1e-6
    num = np.zeros_like(q)
    for i in np.ndindex(q.shape):
        dq = np.zeros_like(q)
        dq[i] = eps
        num[i] = (float(f(q + dq)) - float(f(q - dq))) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)
    q32, k32, v32 = (a.astype(np.float32) for a in (q, k, v))
    jitted = fnad.jit(lambda a, b, c: nn.dot_product_attention(a, b, c, is_causal=True))
    np.testing.assert_allclose(np.asarray(jitted(q32, k32, v32)),
                               _attention_reference(q, k, v, causal=True), rtol=1e-5,
                               atol=1e-6)


@needs_jax
def test_dot_product_attention_matches_jax():
    rs = np.random.RandomState(3)
    q, k, v = (rs.randn(*s).astype(np.float32) for s in ((2, 5, 4, 3), (2, 6, 2, 3),
                                                          (2, 6, 2, 3)))
    bias, mask = rs.randn(2, 4, 5, 6).astype(np.float32), rs.rand(2, 1, 5, 6) > 0.3
    kw = dict(bias=bias, mask=mask, is_causal=True, scale=0.4)
    np.testing.assert_allclose(np.asarray(nn.dot_product_attention(q, k, v, **kw)),
                               np.asarray(jax.nn.dot_product_attention(q, k, v, **kw)),
                               rtol=1e-5, atol=1e-6)


def test_jax_signatures_of_standardize_logsumexp_one_hot():
    x = np.random.RandomState(4).randn(3, 5)
    where = x > -0.5
    ref = np.empty_like(x)
    for i in range(3):
        m = x[i][where[i]].mean()
        v = ((x[i][where[i]] - m) ** 2).mean()
        ref[i] = (x[i] - m) / np.sqrt(v + 1e-5)
    np.testing.assert_allclose(np.asarray(nn.standardize(x, axis=1, where=where)), ref,
                               rtol=1e-12)
    out, sign = nn.logsumexp(x, axis=1, b=-2.0, return_sign=True)
    np.testing.assert_allclose(np.asarray(out), np.log(2 * np.exp(x).sum(1)), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(sign), -1)
    assert nn.one_hot(np.array([0, 2]), 3).dtype == np.float32    # the default float
