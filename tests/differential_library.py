"""The differential suite's tables for the library on top of the primitives: fnad.nn
(losses, one_hot, layers as init/apply pairs), lax control flow and convolutions. Each
reference is written out in float64 numpy: loops for control flow, direct sums over
windows for convolutions and pools, the layer's formula from its parameters."""
import numpy as np

from fnad.dtypes import kind_of as dkind
import fnad.lax as flax
import fnad.nn as fnn
import fnad.random as frandom

from differential_cases import (F32, F64, FLOATS, I32, NUM, POS, SMALL, UNIT01, Data, call,
                                fixed, log_softmax, softplus)

D = Data
STATIC = dict(jit=False, vmap=False, grad=False)
LABELS = fixed(np.array([1, 0, 3]))

# --------------------------------------------------------------------------- losses

NN_CALLS = [
    call("nn", fnn, "mse", [("2-d", [D((3, 4)), D((3, 4))])], FLOATS, "float",
         ref=lambda p, t: np.mean((p - t) ** 2), jax=None, scale="abs", tol=16),
    call("nn", fnn, "huber", [("2-d", [D((3, 4)), D((3, 4))])], FLOATS, "float", jax=None,
         ref=lambda p, t: np.mean(np.where(np.abs(p - t) <= 1, 0.5 * (p - t) ** 2,
                                           np.abs(p - t) - 0.5)), tol=16),
    call("nn", fnn, "softmax_cross_entropy", [("labels", [D((3, 4), domain=SMALL), LABELS])],
         FLOATS, "float", jax=None, tol=16,
         ref=lambda z, y: -np.mean(log_softmax(z)[np.arange(3), y])),
    call("nn", fnn, "nll", [("labels", [D((3, 4), domain=SMALL), LABELS])], FLOATS, "float",
         jax=None, ref=lambda lp, y: -np.mean(lp[np.arange(3), y]), tol=16),
    call("nn", fnn, "binary_cross_entropy_with_logits",
         [("2-d", [D((3, 4)), D((3, 4), domain=UNIT01)])], FLOATS, "float", jax=None, tol=16,
         ref=lambda z, y: np.mean(softplus(z) - z * y), data_args=(0, 1)),
    call("nn", fnn, "one_hot", [("labels", [fixed(np.array([0, 3, 1, 9]))])], (I32,), F32,
         ref=lambda x: (x[:, None] == np.arange(4)).astype(np.float32),
         adapt=lambda lib: (lambda x: lib.one_hot(x, 4)), **STATIC),
    call("nn", fnn, "gelu", [("2-d", [D((3, 4))])], FLOATS, "float", label="exact",
         kw=dict(approximate=False), signed_zero=False,
         ref=lambda x: 0.5 * x * (1 + np.vectorize(__import__("math").erf)(x / np.sqrt(2)))),
]

# --------------------------------------------------------------------------- layers

KEY = frandom.PRNGKey(0)


def layer_case(name, layer, input_shape, ref, dtypes=(F32, F64), label="", rng_apply=False,
               **options):
    """A layer's apply, with parameters from its own init, against `ref(params, x)`;
    the output shape init reports must be the one apply produces."""
    out_shape, params = layer.init(KEY, input_shape)
    host = _host(params)

    def fn(x):
        y = layer.apply(params, x, rng=KEY) if rng_apply else layer.apply(params, x)
        for leaf, shape in zip(_leaves(y), _leaves_shapes(out_shape)):
            assert tuple(leaf.shape) == tuple(shape), (name, leaf.shape, shape)
        return y
    return call("nn", fnn, name, [("input", [D(input_shape)])], dtypes, "same", jax=None,
                adapt=lambda lib: fn, ref=lambda x: ref(host, x), label=label, **options)


def _host(tree):
    if isinstance(tree, (list, tuple)):
        return type(tree)(_host(t) for t in tree)
    if isinstance(tree, dict):
        return {k: _host(v) for k, v in tree.items()}
    return np.asarray(tree, np.float64) if hasattr(tree, "shape") else tree


def _leaves(y):
    return [a for t in y for a in _leaves(t)] if isinstance(y, (list, tuple)) else [y]


def _leaves_shapes(s):
    if isinstance(s, list) or (isinstance(s, tuple) and s and isinstance(s[0], tuple)):
        return [a for t in s for a in _leaves_shapes(t)]
    return [s]


def np_conv(x, w, strides=(1, 1), padding=((0, 0), (0, 0)), lhs_dilation=(1, 1),
            rhs_dilation=(1, 1)):
    """Direct NCHW x OIHW convolution (cross-correlation, as in lax), float64."""
    n, c, h, wd = x.shape
    if lhs_dilation != (1, 1):
        dh, dw = lhs_dilation
        big = np.zeros((n, c, (h - 1) * dh + 1, (wd - 1) * dw + 1))
        big[:, :, ::dh, ::dw] = x
        x = big
    x = np.pad(x, ((0, 0), (0, 0)) + tuple(padding))
    o, _, kh, kw = w.shape
    rh, rw = rhs_dilation
    eh, ew = (kh - 1) * rh + 1, (kw - 1) * rw + 1
    oh = (x.shape[2] - eh) // strides[0] + 1
    ow = (x.shape[3] - ew) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * strides[0]:i * strides[0] + eh:rh,
                      j * strides[1]:j * strides[1] + ew:rw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def np_pool(x, window, strides, op, padding=None):
    """Pooling over the spatial axes of NHWC input, float64; padded cells are skipped."""
    n, h, w, c = x.shape
    if padding:
        fill = -np.inf if op is np.max else np.nan
        x = np.pad(x, ((0, 0),) + tuple(padding) + ((0, 0),), constant_values=fill)
    oh = (x.shape[1] - window[0]) // strides[0] + 1
    ow = (x.shape[2] - window[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            win = x[:, i * strides[0]:i * strides[0] + window[0],
                    j * strides[1]:j * strides[1] + window[1], :]
            out[:, i, j, :] = op(win, axis=(1, 2))
    return out


def _dense(p, x):
    w, b = p
    return x @ w + b


def _conv_nhwc(p, x):
    w, b = p                     # HWIO
    y = np_conv(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1))
    return y.transpose(0, 2, 3, 1) + b


def _layer_norm(p, x):
    gamma, beta = p if isinstance(p, (tuple, list)) and len(p) == 2 else (1.0, 0.0)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * gamma + beta


def _embedding_case():
    """Embedding looks rows up by integer ids: the ids are the input, not the dtype."""
    init, apply = fnn.Embedding(10, 3)
    _, params = init(KEY, (2, 4))
    table = np.asarray(params[0] if isinstance(params, (list, tuple)) else params)
    ids = fixed(np.array([[1, 2, 3, 9], [0, 0, 1, 1]]))
    return call("nn", fnn, "Embedding", [("ids", [ids])], (I32,), F32, jax=None,
                adapt=lambda lib: (lambda i: apply(params, i)), ref=lambda i: table[i],
                grad=False, vmap=False, float_ref_args=False)


def _serial_ref(p, x):
    return np.tanh(_dense(p[0], x))


LAYER_CASES = [
    layer_case("Dense", fnn.Dense(5), (3, 4), _dense, tol=16, scale="abs"),
    # lax convolutions take one dtype (as in JAX): float32 parameters, float32 inputs
    layer_case("Conv", fnn.Conv(4, (3, 3)), (2, 5, 6, 3), _conv_nhwc, tol=32, dtypes=(F32,)),
    layer_case("GeneralConv", fnn.GeneralConv(("NHWC", "HWIO", "NHWC"), 2, (2, 3)),
               (1, 4, 5, 3), _conv_nhwc, tol=32, dtypes=(F32,)),
    layer_case("LayerNorm", fnn.LayerNorm(), (3, 6), _layer_norm, tol=32),
    layer_case("MaxPool", fnn.MaxPool((2, 2), strides=(2, 2)), (2, 4, 6, 3),
               lambda p, x: np_pool(x, (2, 2), (2, 2), np.max), signed_zero=False),
    layer_case("AvgPool", fnn.AvgPool((2, 2), strides=(1, 2)), (2, 4, 6, 3),
               lambda p, x: np_pool(x, (2, 2), (1, 2), np.mean), tol=16),
    layer_case("serial", fnn.serial(fnn.Dense(3), fnn.Tanh), (2, 4), _serial_ref, tol=16),
    layer_case("FanOut", fnn.FanOut(2), (2, 3), lambda p, x: [x, x]),
    layer_case("FanInConcat", fnn.serial(fnn.FanOut(2), fnn.FanInConcat()), (2, 3),
               lambda p, x: np.concatenate([x, x], -1)),
    layer_case("parallel", fnn.serial(fnn.FanOut(2), fnn.parallel(fnn.Relu, fnn.Tanh)),
               (2, 3), lambda p, x: [np.maximum(x, 0), np.tanh(x)], signed_zero=False),
    layer_case("elementwise", fnn.elementwise(fnn.relu6), (2, 5),
               lambda p, x: np.clip(x, 0, 6), signed_zero=False),
    layer_case("Dropout", fnn.Dropout(0.0), (2, 5), lambda p, x: x, rng_apply=True),
    layer_case("ConvTranspose", fnn.ConvTranspose(2, (2, 2), strides=(2, 2)), (1, 3, 3, 2),
               lambda p, x: _conv_transpose_nhwc(p, x), tol=32, dtypes=(F32,)),
]


def _conv_transpose_nhwc(p, x):
    """Stride-s transposed convolution with an s x s kernel: every input pixel paints an
    s x s block (no overlap) with the spatially flipped kernel (JAX's convention: the
    gradient of a strided convolution)."""
    w, b = p                     # HWIO
    w = w[::-1, ::-1]
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    out = np.zeros((n, h * kh, wd * kw, o))
    for i in range(h):
        for j in range(wd):
            out[:, i * kh:(i + 1) * kh, j * kw:(j + 1) * kw, :] = np.einsum(
                "nc,hwco->nhwo", x[:, i, j, :], w)
    return out + b


# --------------------------------------------------------------------------- lax: conv

def _lax_conv(lib):
    return lambda x, w: lib.conv(x, w, (1, 2), "SAME")


LAX_LIBRARY = [
    call("lax", flax, "conv", [("nchw", [D((2, 3, 5, 6)), D((4, 3, 3, 2))])], (F32, F64),
         adapt=_lax_conv, ref=lambda x, w: np_conv(x, w, (1, 2), ((1, 1), (0, 1))), tol=32,
         scale="abs"),
    call("lax", flax, "conv_general_dilated", [("nchw", [D((1, 2, 6, 6)), D((3, 2, 2, 2))])],
         (F32, F64), tol=32, scale="abs",
         adapt=lambda lib: (lambda x, w: lib.conv_general_dilated(
             x, w, (2, 1), ((1, 0), (0, 1)), lhs_dilation=(1, 1), rhs_dilation=(2, 1))),
         ref=lambda x, w: np_conv(x, w, (2, 1), ((1, 0), (0, 1)), (1, 1), (2, 1))),
    call("lax", flax, "conv_with_general_padding",
         [("nchw", [D((1, 2, 4, 4)), D((3, 2, 2, 2))])], (F32, F64), tol=32, scale="abs",
         adapt=lambda lib: (lambda x, w: lib.conv_with_general_padding(
             x, w, (1, 1), ((1, 1), (0, 0)), (2, 1), (1, 1))),
         ref=lambda x, w: np_conv(x, w, (1, 1), ((1, 1), (0, 0)), (2, 1), (1, 1))),
    call("lax", flax, "conv_transpose", [("nhwc", [D((1, 3, 3, 2)), D((2, 2, 2, 4))])],
         (F32, F64), tol=32, scale="abs",
         adapt=lambda lib: (lambda x, w: lib.conv_transpose(
             x, w, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))),
         ref=lambda x, w: _conv_transpose_nhwc((w, 0.0), x)),
    call("lax", flax, "max_pool", [("nhwc", [D((2, 5, 4, 3))])], FLOATS,
         adapt=lambda lib: (lambda x: lib.max_pool(x, (2, 2), (2, 1), "SAME")), jax=None,
         ref=lambda x: np_pool(x, (2, 2), (2, 1), np.max, ((0, 1), (0, 1))),
         signed_zero=False),
    call("lax", flax, "avg_pool", [("nhwc", [D((2, 4, 4, 3))])], FLOATS, jax=None, tol=16,
         adapt=lambda lib: (lambda x: lib.avg_pool(x, (2, 2), (2, 2), "VALID")),
         ref=lambda x: np_pool(x, (2, 2), (2, 2), np.mean)),
    call("lax", flax, "reduce_window", [("2-d", [D((4, 6))])], NUM, signed_zero=False,
         adapt=lambda lib: (lambda x: lib.reduce_window(x, -np.inf if dkind(x.dtype) == "f"
                                                        else np.iinfo(x.dtype).min, "max",
                                                        (2, 3), (2, 3), "VALID")),
         jax=None, ref=lambda x: x.reshape(2, 2, 2, 3).max(axis=(1, 3))),
    call("lax", flax, "padtype_to_pads", [("none", [])], (I32,), np.dtype(np.int64),
         adapt=lambda lib: (lambda: np.asarray(lib.padtype_to_pads((5, 4), (2, 3), (2, 1),
                                                                   "SAME"))),
         ref=lambda: np.asarray([(0, 1), (1, 1)]), jax=None, **STATIC),
    call("lax", flax, "conv_dimension_numbers", [("none", [])], (I32,), np.dtype(np.int64),
         adapt=lambda lib: (lambda: np.asarray(tuple(lib.conv_dimension_numbers(
             (1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))))),
         ref=lambda: np.asarray([(0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)]), jax=None,
         **STATIC),
]


# --------------------------------------------------------------------------- lax: control

def _scan(lib, lax):
    def step(c, x):
        c = c * 0.5 + lib.sin(x)
        return c, c * x
    return lambda init, xs: lax.scan(step, init, xs)


def _scan_ref(init, xs):
    c, ys = init, []
    for x in xs:
        c = c * 0.5 + np.sin(x)
        ys.append(c * x)
    return c, np.stack(ys)


def _fori(lib, lax):
    return lambda x: lax.fori_loop(0, 4, lambda i, v: v * 0.9 + lib.cos(v) * i, x)


def _fori_ref(x):
    for i in range(4):
        x = x * 0.9 + np.cos(x) * i
    return x


def _while(lib, lax):
    return lambda x: lax.while_loop(lambda v: lib.sum(v) < 40.0, lambda v: v * 1.5 + 1, x)


def _while_ref(x):
    while np.sum(x) < 40.0:
        x = x * 1.5 + 1
    return x


def _cond(lib, lax):
    return lambda x: lax.cond(lib.sum(x) > 0, lambda v: lib.sin(v), lambda v: v * v, x)


def _switch(lib, lax):
    return lambda x: lax.switch(2, [lambda v: v, lambda v: v * 2, lambda v: lib.exp(v)], x)


def _map(lib, lax):
    return lambda xs: lax.map(lambda row: lib.sum(row * row), xs)


def _with_jax(case, make):
    case.jax = lambda J: make(J.numpy, J.lax)
    return case


def _control_cases():
    import fnad.numpy as fnp
    cases = []
    for name, make, ref, variants, options in [
        ("scan", _scan, _scan_ref, [("carry and xs", [D((3,)), D((5, 3))])], {}),
        ("fori_loop", _fori, _fori_ref, [("vector", [D((4,), domain=SMALL)])], dict(tol=64)),
        ("while_loop", _while, _while_ref, [("vector", [D((3,), domain=POS)])],
         dict(grad=False)),
        ("cond", _cond, lambda x: np.sin(x) if np.sum(x) > 0 else x * x,
         [("vector", [D((4,))])], dict(vmap=False)),
        ("switch", _switch, np.exp, [("vector", [D((4,), domain=SMALL)])], {}),
        ("map", _map, lambda xs: np.sum(xs * xs, axis=1), [("rows", [D((4, 3))])], {}),
    ]:
        options.setdefault("tol", 16)
        case = call("lax", flax, name, variants, (F32, F64), "float",
                    adapt=lambda lib, make=make: make(fnp, flax), ref=ref, **options)
        cases.append(_with_jax(case, make))
    return cases


CASES = NN_CALLS + LAYER_CASES + [_embedding_case()] + LAX_LIBRARY + _control_cases()


# --------------------------------------------------------------------------- random

class RandomCase:
    """A sampler `draw(random_module, key)` (the same call for fnad.random and
    jax.random), and `check(sample)`: its distribution, range and dtype, asserted on
    a large sample (fixed key: deterministic)."""

    def __init__(self, name, draw, check, jax=True):
        self.name, self.draw, self.check, self.jax = name, draw, check, jax
        self.module, self.id = "random", f"random.{name}"


def _moments(mean, var, low=-np.inf, high=np.inf, dtype=np.float32):
    def check(x):
        assert x.dtype == dtype, x.dtype
        se = np.sqrt(var / x.size)
        assert abs(x.mean() - mean) < 6 * se, (x.mean(), mean)
        assert abs(x.var() - var) < 0.1 * var, (x.var(), var)
        assert np.all((x >= low) & (x < high)), (x.min(), x.max())
    return check


def _truncated_mean(a, b):
    from math import erf, exp, pi, sqrt
    pdf = lambda t: exp(-t * t / 2) / sqrt(2 * pi)  # noqa: E731
    cdf = lambda t: 0.5 * (1 + erf(t / sqrt(2)))  # noqa: E731
    z = cdf(b) - cdf(a)
    mean = (pdf(a) - pdf(b)) / z
    var = 1 + (a * pdf(a) - b * pdf(b)) / z - mean ** 2
    return mean, var


def _categorical_check(x):
    assert x.dtype == np.int32, x.dtype
    p = np.exp(log_softmax(np.array([0.0, 1.0, -1.0, 2.0])))
    freq = np.bincount(x, minlength=4) / x.size
    assert np.all(np.abs(freq - p) < 6 * np.sqrt(p * (1 - p) / x.size)), (freq, p)


def _permutation_check(x):
    assert sorted(x.tolist()) == list(range(50)) and x.tolist() != list(range(50))


def _choice_check(x):
    assert x.shape == (20,) and len(set(x.tolist())) == 20 and x.min() >= 0 and x.max() < 50


def _bits_check(x):
    assert x.dtype == np.uint32 and x.shape == (4000,)
    assert abs(x.astype(np.float64).mean() / 2 ** 32 - 0.5) < 0.03
    assert len(np.unique(x)) > 3990


def _key_check(x):
    assert x.dtype == np.uint32, x.dtype


N = 4000
TRUNC = _truncated_mean(-1.0, 2.0)
RANDOM_CASES = [
    RandomCase("uniform", lambda r, k: r.uniform(k, (N,), np.float32, -1.0, 2.0),
               _moments(0.5, 0.75, -1.0, 2.0)),
    RandomCase("normal", lambda r, k: r.normal(k, (N,)), _moments(0.0, 1.0)),
    RandomCase("truncated_normal", lambda r, k: r.truncated_normal(k, -1.0, 2.0, (N,)),
               _moments(*TRUNC, -1.0, 2.0)),
    RandomCase("exponential", lambda r, k: r.exponential(k, (N,)), _moments(1.0, 1.0, 0.0)),
    RandomCase("gumbel", lambda r, k: r.gumbel(k, (N,)),
               _moments(0.5772156649, np.pi ** 2 / 6)),
    RandomCase("bernoulli", lambda r, k: r.bernoulli(k, 0.3, (N,)),
               lambda x: (x.dtype == np.bool_ and abs(x.mean() - 0.3) < 6 * np.sqrt(
                   0.21 / N)) or (_ for _ in ()).throw(AssertionError((x.dtype, x.mean())))),
    RandomCase("randint", lambda r, k: r.randint(k, (N,), -3, 5),
               lambda x: _moments(0.5, (8 ** 2 - 1) / 12, -3, 5, np.int32)(x)),
    # float32 logits: float64 ones draw float64 Gumbel noise in fnad (never narrowed),
    # other bits than JAX's float32 noise without x64
    RandomCase("categorical", lambda r, k: r.categorical(
        k, np.array([0.0, 1.0, -1.0, 2.0], np.float32), shape=(N,)), _categorical_check),
    RandomCase("permutation", lambda r, k: r.permutation(k, 50), _permutation_check),
    RandomCase("choice", lambda r, k: r.choice(k, 50, (20,), replace=False), _choice_check),
    RandomCase("bits", lambda r, k: r.bits(k, (N,)), _bits_check),
    RandomCase("split", lambda r, k: r.split(k, 3), _key_check),
    RandomCase("fold_in", lambda r, k: r.fold_in(k, 7), _key_check),
    RandomCase("PRNGKey", lambda r, k: r.PRNGKey(42), _key_check),
    RandomCase("key", lambda r, k: r.key_data(r.key(42)), _key_check),
    RandomCase("key_data", lambda r, k: r.key_data(k), _key_check),
    RandomCase("wrap_key_data", lambda r, k: r.key_data(r.wrap_key_data(r.key_data(k))),
               _key_check),
    RandomCase("random_bits", lambda r, k: r.random_bits(r.key_data(k), (N,)), _bits_check,
               jax=False),
    RandomCase("random_split", lambda r, k: r.random_split(r.key_data(k), (3,)), _key_check,
               jax=False),
]
