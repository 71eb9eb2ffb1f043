"""bfloat16 on the GPU (numba's CUDA simulator) against the same computation on the
cpu backend: transfers, elementwise math with special values, fused jitted
expressions, reductions, dot_general, convolution, sort, gather/scatter, scan and
while loops, and the gradient of a small bfloat16 MLP.

Where both backends compute each operation in float32 and round it once, the bits
must be equal. Transcendental functions (the device's float32 libm is not numpy's)
and float32 sums in another order may round to a neighbouring bfloat16: those are
compared within one bfloat16 ulp of the cpu's answer."""
import ml_dtypes
import numpy as np
import pytest

import fnad
import fnad.nn
import fnad.numpy as fnp
from fnad import lax
from fnad.backends.cuda.runtime import Bfloat16Array
from cuda_util import host, needs_cuda, to_gpu

pytestmark = needs_cuda

BF16, F32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)
EPS = float(ml_dtypes.finfo(BF16).eps)     # 2**-7
rng = np.random.default_rng(0)

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-39, -1e-40,
                    1.0, -1.5, 0.1, 7.0, 300.0], BF16)


def bf16(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(BF16)


def on_both(f, *args, jit=False):
    """f on cpu Arrays and on GPU arrays: (cpu result, GPU result) as numpy leaves,
    checking that each GPU result stayed on the GPU."""
    fn = fnad.jit(f) if jit else f
    cpu = fnad.tree_util.tree_leaves(fn(*[fnp.asarray(a) for a in args]))
    gpu = fnad.tree_util.tree_leaves(fn(*[to_gpu(a) for a in args]))
    return [np.asarray(c) for c in cpu], [host(g) for g in gpu]


def assert_same_bits(cpu, gpu):
    for c, g in zip(cpu, gpu, strict=True):
        assert g.dtype == c.dtype and g.shape == c.shape, (g.dtype, c.dtype, g.shape, c.shape)
        if c.dtype == BF16:
            # NaNs compare by place (the cpu's and the device's NaN payloads may differ)
            nan = np.isnan(c.astype(F32))
            assert np.array_equal(nan, np.isnan(g.astype(F32)))
            assert np.array_equal(c.view(np.uint16)[~nan], g.view(np.uint16)[~nan]), (c, g)
        else:
            np.testing.assert_array_equal(g, c)


def assert_within_ulps(cpu, gpu, ulps=1):
    for c, g in zip(cpu, gpu, strict=True):
        assert g.dtype == c.dtype == BF16 and g.shape == c.shape
        c, g = c.astype(np.float64), g.astype(np.float64)
        assert np.array_equal(np.isnan(c), np.isnan(g))
        assert np.array_equal(np.isinf(c) & (c > 0), np.isinf(g) & (g > 0))
        finite = np.isfinite(c)
        np.testing.assert_allclose(g[finite], c[finite], rtol=ulps * EPS, atol=1e-38)


# --------------------------------------------------------------------------- transfers

def test_transfers_keep_the_bits_and_the_dtype():
    x = to_gpu(SPECIAL)
    assert x.dtype == BF16 and x.shape == SPECIAL.shape
    assert type(x._value) is Bfloat16Array     # uint16 bits on the device
    back = host(x)
    assert back.dtype == BF16
    assert np.array_equal(back.view(np.uint16), SPECIAL.view(np.uint16))
    assert np.asarray(fnad.device_get(x)).dtype == BF16
    assert np.array_equal(host(to_gpu(SPECIAL.reshape(2, 7).T)).view(np.uint16),
                          SPECIAL.reshape(2, 7).T.view(np.uint16))
    s = to_gpu(np.asarray(-0.0, BF16))
    assert s.shape == () and np.signbit(float(s))
    assert "dtype=bfloat16, device=" in repr(x)


# --------------------------------------------------------------------------- elementwise

EXACT = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "max": fnp.maximum, "min": fnp.minimum,
    "neg_abs": lambda a, b: -fnp.abs(a),
    "floor": lambda a, b: fnp.floor(a * 3.3), "sign": lambda a, b: fnp.sign(a),
    "compare": lambda a, b: a < b, "where": lambda a, b: fnp.where(a > b, a, b * 2),
    "to_float32": lambda a, b: a.astype(np.float32) * 3,
    "from_float32": lambda a, b: (a.astype(np.float32) / 3).astype(BF16),
    "scalar": lambda a, b: a * 2.5 + 1,
}
# (The simulator runs math.sqrt, math.log... which raise outside their domain where a
# GPU gives NaN: these cases keep to the domain.)
INEXACT = {"exp": lambda a, b: fnp.exp(fnp.minimum(a, 80.0)),
           "log": lambda a, b: fnp.log(fnp.abs(a) + 1e-30),
           "tanh": lambda a, b: fnp.tanh(a), "sin": lambda a, b: fnp.sin(fnp.clip(a, -1e4, 1e4)),
           "sqrt": lambda a, b: fnp.sqrt(fnp.abs(a)), "logistic": lambda a, b: fnad.nn.sigmoid(a)}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_elementwise_with_special_values_is_bit_exact(name):
    a = SPECIAL
    b = np.roll(SPECIAL, 3)
    assert_same_bits(*on_both(EXACT[name], a, b))


@pytest.mark.parametrize("name", sorted(INEXACT))
def test_transcendental_within_an_ulp(name):
    a = np.concatenate([SPECIAL, bf16(20, scale=3)])
    assert_within_ulps(*on_both(INEXACT[name], a, a))


def test_fused_jitted_expression():
    x, y = bf16(3, 5), bf16(5)

    def arithmetic(x, y):     # every step rounded to bfloat16, in one fused kernel
        return (x * y + 1.5) / (fnp.abs(y) + 0.25) - x

    def mixed(x, y):
        return fnp.tanh(x * y) * 2 - fnp.maximum(x, 0.0)

    for jit in (False, True):
        assert_same_bits(*on_both(arithmetic, x, y, jit=jit))
        assert_within_ulps(*on_both(mixed, x, y, jit=jit))


# --------------------------------------------------------------------------- reductions

@pytest.mark.parametrize("jit", [False, True])
def test_reductions(jit):
    x = bf16(4, 6, scale=4)
    x[1, 2] = np.nan
    f = lambda x: (fnp.sum(x, axis=1), fnp.sum(x), fnp.max(x, axis=0), fnp.min(x),
                   fnp.mean(x, axis=0), fnp.argmax(x, axis=1))
    cpu, gpu = on_both(f, x, jit=jit)
    assert_same_bits(cpu[2:4] + cpu[5:], gpu[2:4] + gpu[5:])
    assert_within_ulps(cpu[:2] + cpu[4:5], gpu[:2] + gpu[4:5])
    # the accumulation is float32 or wider: adding 256 values of 1 + 2**-7 one at a time
    # in bfloat16 stalls at 32 (where the spacing reaches 0.25); they sum to 258
    ones = np.full(256, 1 + 2 ** -7, BF16)
    assert float(fnp.sum(to_gpu(ones))) == 258.0


def test_prod_accumulates_in_float32():
    # Both backends multiply in float32 and round once: the product rounded correctly
    # (numpy's own bfloat16 prod rounds at every step).
    x = (np.random.default_rng(1).standard_normal((3, 4)) * 2).astype(BF16)
    exact = np.prod(x.astype(np.float64)).astype(F32).astype(BF16)
    for f in (fnp.prod, fnad.jit(fnp.prod)):
        for got in (host(f(to_gpu(x))), np.asarray(f(x))):
            assert got.dtype == BF16 and got.view(np.uint16) == exact.view(np.uint16)


# The other families, each bit for bit the cpu's (a float32 computation rounded once).
FAMILIES = {
    "cumulative": lambda a, b: (fnp.cumsum(a, axis=1), fnp.cumprod(a, axis=0),
                                lax.cummax(a, axis=1)),
    "structure": lambda a, b: (fnp.pad(a, 1), fnp.concatenate([a, b]), a.T,
                               fnp.broadcast_to(a[:, :1], (3, 4)),
                               lax.dynamic_update_slice(a, b[:1, :2], (1, 1))),
    "top_k": lambda a, b: lax.top_k(a, 2),
    "pooling": lambda a, b: (lax.reduce_window(a, -np.inf, lax.max, (2, 2), (1, 1), "VALID"),
                             lax.reduce_window(a, 0.0, lax.add, (2, 2), (1, 1), "VALID")),
    "einsum": lambda a, b: fnp.einsum("ij,kj->ik", a, b),
    "conversions": lambda a, b: ((a * 10).astype(np.int32), a.astype(bool),
                                 fnp.arange(12, dtype=np.int32).reshape(3, 4).astype(BF16) * a,
                                 fnp.full((2,), 3.3, BF16) + a[0, 0], lax.iota(BF16, 5) + a[0, 0]),
    "pow_atan2_rem": lambda a, b: (fnp.abs(a) ** b, a ** 3, fnp.arctan2(a, b), a % b),
    "softmax_var": lambda a, b: (fnad.nn.softmax(a), fnp.var(a, axis=0)),
    "vmap_grad": lambda a, b: fnad.vmap(fnad.grad(lambda r: fnp.sum(fnp.tanh(r) * r)))(a),
    "fori_loop": lambda a, b: lax.fori_loop(0, 3, lambda i, c: c * 1.1 + a, a),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_other_families_match_cpu(name):
    r = np.random.default_rng(1)
    a = (r.standard_normal((3, 4)) * 2).astype(BF16)
    b = (r.standard_normal((3, 4)) + 3).astype(BF16)
    for jit in (False, True):
        assert_same_bits(*on_both(FAMILIES[name], a, b, jit=jit))


# --------------------------------------------------------------------------- products

@pytest.mark.parametrize("jit", [False, True])
def test_dot_general_and_matmul(jit):
    a, b = bf16(4, 8), bf16(8, 3)
    batched_a, batched_b = bf16(2, 3, 5), bf16(2, 5, 4)
    f = lambda a, b, c, d: (a @ b, lax.dot_general(c, d, (((2,), (1,)), ((0,), (0,)))),
                            a @ b.astype(np.float32))
    cpu, gpu = on_both(f, a, b, batched_a, batched_b, jit=jit)
    assert_within_ulps(cpu[:2], gpu[:2])
    assert gpu[2].dtype == F32
    np.testing.assert_allclose(gpu[2], cpu[2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_convolution(jit):
    lhs, rhs = bf16(2, 3, 7, 6), bf16(4, 3, 3, 2)
    f = lambda l, r: lax.conv_general_dilated(l, r, (1, 2), [(1, 1), (0, 1)])
    assert_within_ulps(*on_both(f, lhs, rhs, jit=jit))


# --------------------------------------------------------------------------- sort, index

@pytest.mark.parametrize("jit", [False, True])
def test_sort_and_argsort(jit):
    x = np.array([[3.0, np.nan, -np.inf, 1.5, 0.1, 2.0],
                  [np.inf, -2.0, 1e-39, -1.5, 7.0, 0.1]], BF16)
    f = lambda x: (fnp.sort(x, axis=1), fnp.argsort(x, axis=1), fnp.sort(x, axis=0))
    assert_same_bits(*on_both(f, x, jit=jit))


@pytest.mark.parametrize("jit", [False, True])
def test_gather_and_scatter(jit):
    x = np.concatenate([SPECIAL, bf16(6)]).reshape(4, 5)
    idx = np.array([3, 0, 3, 1], np.int32)
    # halves: repeated updates sum exactly, whether rounded after each (the cpu) or
    # once (the GPU's float32 atomics)
    halves = (rng.integers(-8, 8, (4, 5)) / 2).astype(BF16)
    upd = (rng.integers(-8, 8, (4, 5)) / 2).astype(BF16)

    def f(x, h, u):
        return (x[idx], x[:, 1:4:2], x.at[idx].set(u), h.at[idx].add(u),
                x.at[idx].max(u), fnp.take(x, idx[::-1], axis=1))
    assert_same_bits(*on_both(f, x, halves, upd, jit=jit))


# --------------------------------------------------------------------------- control flow

@pytest.mark.parametrize("jit", [False, True])
def test_scan_rounds_every_step(jit):
    xs = bf16(7, 3)

    def f(c, xs):
        def step(c, x):
            c = c * 0.7 + x        # rounded to bfloat16 at each step, as on the cpu
            return c, c * 2 + fnp.sum(c)
        return lax.scan(step, c, xs)
    c0 = np.ones(3, BF16)
    cpu, gpu = on_both(f, c0, xs, jit=jit)
    assert_same_bits(cpu[:1], gpu[:1])
    assert_within_ulps(cpu[1:], gpu[1:])


def test_while_loop_and_cond():
    def f(x):
        def body(c):
            i, v = c
            return i + 1, v * 1.3 + 0.1
        i, v = lax.while_loop(lambda c: fnp.max(c[1]) < 100, body, (0, x))
        return i, v, lax.cond(i > 5, lambda v: v - 1, lambda v: v * 2, v)
    x = np.array([0.3, 1.7, -2.1], BF16)
    for jit in (False, True):
        assert_same_bits(*on_both(f, x, jit=jit))


# --------------------------------------------------------------------------- grad

def _mlp(params, x):
    (w1, b1), (w2, b2) = params
    h = fnp.tanh(x @ w1 + b1)
    return fnp.mean(((h @ w2 + b2) ** 2).astype(np.float32))


def test_grad_of_a_bfloat16_mlp():
    r = np.random.default_rng(2)
    params = [(r.standard_normal((8, 16)) * 0.3, np.zeros(16)),
              (r.standard_normal((16, 4)) * 0.3, np.full(4, 0.1))]
    params = fnad.tree_util.tree_map(lambda p: np.asarray(p, np.float32).astype(BF16), params)
    x = r.standard_normal((6, 8)).astype(BF16)
    cpu_params = fnad.tree_util.tree_map(fnp.asarray, params)
    gpu_params = fnad.tree_util.tree_map(to_gpu, params)
    for g in (fnad.value_and_grad(_mlp), fnad.jit(fnad.value_and_grad(_mlp))):
        want = fnad.tree_util.tree_leaves(g(cpu_params, fnp.asarray(x)))
        got = fnad.tree_util.tree_leaves(g(gpu_params, to_gpu(x)))
        assert [w.dtype for w in want] == [F32] + [BF16] * 4
        for w, v in zip(want, got, strict=True):
            w, v = np.asarray(w).astype(np.float64), host(v)
            assert v.dtype == (F32 if v.ndim == 0 else BF16)
            # float32 sums in another order may tip a rounding: a bfloat16 ulp of each
            # product, a few ulps of the gradient's scale
            assert np.max(np.abs(v.astype(np.float64) - w)) <= 4 * EPS * np.max(np.abs(w))
