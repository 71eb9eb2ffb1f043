"""Reductions give numpy's answer in every mode: float16/float32 sums accumulate with
an error far below one-at-a-time float32 addition (eager, jit's first call while the
kernel compiles, the compiled fused loop, the blocked path, compiled loops, the GPU);
max/min/argmax/argmin propagate NaN as numpy does; float16 programs compile.

"exact" is math.fsum over float64 copies of the float32 summands; the bound is
|result - exact| <= 2e-6 * sum(|summands|) (numpy's pairwise summation is well inside)."""
import functools
import math
import threading
import weakref

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.backends.cpu import loops, lowering
from cuda_util import needs_cuda, to_gpu, host

BOUND = 2e-6
SIZES = (10**3, 10**6, 10**7)


@functools.lru_cache(maxsize=None)
def data(n, dist):
    rng = np.random.default_rng(n + (dist == "normal"))
    x = rng.uniform(0, 1, n) if dist == "uniform" else rng.standard_normal(n)
    return x.astype(np.float32)


class Exact:
    """math.fsum of the summands (as numpy float32 computes them) and the sum of their
    magnitudes, computed once for the several results checked against them."""

    def __init__(self, summands):
        wide = np.asarray(summands, np.float64)
        self.sum = math.fsum(wide)
        self.magnitude = float(np.abs(wide).sum())


def assert_accurate(result, summands, scale=1.0):
    """result ~ scale * sum(summands); summands may be an Exact."""
    ref = summands if isinstance(summands, Exact) else Exact(summands)
    exact, magnitude = ref.sum * scale, ref.magnitude * abs(scale)
    error = abs(float(result) - exact)
    assert error <= BOUND * magnitude, (float(result), exact, error / magnitude)


@pytest.fixture
def first_call(monkeypatch):
    """jit(f)(x) as its first call runs it: groups through numpy while Numba compiles."""
    monkeypatch.setattr(fnad.config, "background_compile", True)

    def run(f, *args):
        out = fnad.jit(f)(*args)
        lowering.wait_for_compiles()
        return out
    return run


@pytest.fixture
def compiled_call(monkeypatch):
    """jit(f)(x) through the compiled kernels (compiling synchronously, so a compile
    failure raises here instead of falling back to numpy)."""
    monkeypatch.setattr(fnad.config, "background_compile", False)
    return lambda f, *args: fnad.jit(f)(*args)


def fused_sum(x):
    return fnp.sum(x * 0.5)         # arithmetic only: one generated loop nest


def blocked_sum(x):
    return fnp.sum(fnp.sqrt(x * x))     # a math call: numpy's ufuncs block by block


def summands(f, x):
    return x * np.float32(0.5) if f is fused_sum else np.sqrt(x * x)


def uses(f, x, path):
    """Whether jit lowers f(x) to a generated loop nest ("fused") or blocks ("blocked")."""
    source = fnad.jit(f).lower(x).compile().source
    return ("def k0(" in source) == (path == "blocked")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dist", ["uniform", "normal"])
@pytest.mark.parametrize("f", [fused_sum, blocked_sum])
def test_sum_and_mean_are_accurate_in_every_cpu_mode(n, dist, f, first_call, compiled_call):
    x = data(n, dist)
    parts = Exact(summands(f, x))
    mean = lambda v: f(v) / np.float32(n)     # noqa: E731  (fnp.mean is sum / n)
    results = {"eager": (f(x), mean(fnp.asarray(x))),
               "first call": (first_call(f, x), first_call(mean, x)),
               "compiled": (compiled_call(f, x), compiled_call(mean, x))}
    for mode, (total, average) in results.items():
        assert total.dtype == np.float32 and average.dtype == np.float32, mode
        assert_accurate(total, parts)
        assert_accurate(average, parts, 1 / n)
    # The numpy path and the compiled loop accumulate alike: they agree to an ulp.
    first, done = float(results["first call"][0]), float(results["compiled"][0])
    assert abs(first - done) <= abs(np.spacing(np.float32(done))), (first, done)
    if n >= 10**6:
        assert uses(f, x, "blocked" if f is blocked_sum else "fused")


def test_mean_of_the_issue(first_call, compiled_call):
    """jit(lambda v: mean(v * 0.1)) on a million uniform float32 gave 0.0500126 against
    an exact 0.0500159."""
    v = data(10**6, "uniform")
    exact = math.fsum((v * np.float32(0.1)).astype(np.float64)) / v.size
    f = lambda v: fnp.mean(v * 0.1)     # noqa: E731
    for out in (first_call(f, v), compiled_call(f, v), f(fnp.asarray(v))):
        assert float(out) == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("f", [lambda x: x * 0.5, lambda x: fnp.sqrt(x * x) * 0.5])
@pytest.mark.parametrize("axis", [0, 1])
def test_partial_sums_are_accurate(f, axis, first_call, compiled_call):
    """Sums over one axis of a 2-d array: cells accumulate in float64, are rounded once."""
    x = data(10**6, "uniform").reshape((250000, 4) if axis == 0 else (4, 250000))
    parts = x * np.float32(0.5)
    g = lambda x: fnp.sum(f(x), axis=axis)     # noqa: E731
    for out in (first_call(g, x), compiled_call(g, x), g(fnp.asarray(x))):
        assert out.dtype == np.float32 and out.shape == (4,)
        for k in range(4):
            assert_accurate(out[k], np.take(parts, k, axis=1 - axis))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dist", ["uniform", "normal"])
def test_gradient_of_a_mean_squared_loss_is_accurate(n, dist, first_call, compiled_call):
    """d/dw mean((w x - y)^2) = mean(2 (w x - y) x): a scalar weight's cotangent is a
    sum over every example."""
    x, y = data(n, dist), data(n, "normal" if dist == "uniform" else "uniform")
    w = np.float32(0.7)
    loss = lambda w, x, y: fnp.mean((w * x - y) ** 2)     # noqa: E731
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    terms = Exact(2 * (float(w) * x64 - y64) * x64)
    grad = fnad.grad(loss)
    for out in (grad(w, x, y), first_call(grad, w, x, y), compiled_call(grad, w, x, y)):
        assert out.dtype == np.float32
        assert_accurate(out, terms, 1 / n)


@pytest.mark.parametrize("name", ["var", "std", "norm"])
def test_statistics_built_on_sums_are_accurate(name, first_call, compiled_call):
    """var, std and norms are sums too: off a float32 mean of 10 and a spread of 1, a
    million values summed one at a time in float32 lost about 1e-4 of the variance."""
    x = data(10**6, "normal") + np.float32(10)
    x64 = x.astype(np.float64)
    centered = x64 - math.fsum(x64) / x.size
    exact = {"var": math.fsum(centered ** 2) / x.size,
             "std": math.sqrt(math.fsum(centered ** 2) / x.size),
             "norm": math.sqrt(math.fsum(x64 ** 2))}[name]
    f = {"var": lambda x: fnp.var(x * 1), "std": lambda x: fnp.std(x * 1),
         "norm": lambda x: fnp.linalg.norm(x * 1)}[name]
    for out in (f(fnp.asarray(x)), first_call(f, x), compiled_call(f, x)):
        assert out.dtype == np.float32
        assert float(out) == pytest.approx(exact, rel=2e-6)


def test_sums_in_a_compiled_loop_are_accurate(monkeypatch):
    """A reduction inside a scan body compiled into one Numba loop."""
    monkeypatch.setattr(fnad.config, "background_compile", False)
    monkeypatch.setattr(loops, "_loops", weakref.WeakKeyDictionary())
    xs = data(10**6, "uniform").reshape(4, 250000)

    def f(xs):
        return fnad.lax.scan(lambda c, x: (c + fnp.sum(x * 0.5), fnp.sum(x * 0.5)),
                             np.float32(0), xs)
    total, rows = fnad.jit(f)(xs)
    assert [entry.ready for table in loops._loops.values() for entry in table.values()][0]
    for k in range(4):
        assert_accurate(rows[k], xs[k] * np.float32(0.5))
    assert_accurate(total, xs.ravel() * np.float32(0.5))


# --------------------------------------------------------------------------- NaN

NAN = np.float32(np.nan)


def with_nan(n, where):
    x = data(n, "normal").copy()
    x[where] = NAN
    return x


# 2**22 elements: the loop nest runs on threads, each with its own accumulator.
@pytest.mark.parametrize("n,where", [(4, 1), (4, 3), (4, 0), (10, 9), (8192, 5000),
                                     (1 << 22, 3_000_000)])
@pytest.mark.parametrize("op", [fnp.max, fnp.min])
def test_max_and_min_propagate_nan_in_every_mode(n, where, op, first_call, compiled_call):
    x = with_nan(n, where)
    for f in (lambda x: op(x * 2), lambda x: op(fnp.sin(x) * 2)):
        for out in (f(fnp.asarray(x)), first_call(f, x), compiled_call(f, x)):
            assert np.isnan(float(out))
    clean = data(n, "normal")
    assert float(compiled_call(lambda x: op(x * 2), clean)) == float(op(clean * 2))


def test_max_of_the_issue(compiled_call):
    """jit(lambda x: max(x * 2))([1, nan, 3, 4]) gave 8.0 once compiled."""
    assert np.isnan(float(compiled_call(lambda x: fnp.max(x * 2),
                                        np.array([1, np.nan, 3, 4], np.float32))))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op,ref", [(fnp.max, np.max), (fnp.min, np.min)])
def test_partial_max_and_min_propagate_nan(axis, op, ref, first_call, compiled_call):
    x = data(6 * 2000, "normal").reshape(6, 2000).copy()
    x[2, 7] = x[4, 1999] = x[0, 0] = NAN
    expected = ref(x * 2, axis=axis)
    for f in (lambda x: op(x * 2, axis=axis), lambda x: op(fnp.exp(x) * 0 + x * 2, axis=axis)):
        for out in (first_call(f, x), compiled_call(f, x)):
            np.testing.assert_array_equal(np.asarray(out), expected)


@pytest.mark.parametrize("op,ref", [(fnp.argmax, np.argmax), (fnp.argmin, np.argmin)])
def test_argmax_and_argmin_give_the_first_nan(op, ref, first_call, compiled_call):
    x = with_nan(50, 17)
    x[30] = NAN
    f = lambda x: op(x * 2)     # noqa: E731
    for out in (f(fnp.asarray(x)), first_call(f, x), compiled_call(f, x),
                fnad.vmap(f)(np.stack([x, x[::-1]]))[0]):
        assert int(out) == 17 == ref(x)
    rows = np.stack([x, data(50, "uniform"), x[::-1]])
    g = lambda x: op(x * 2, axis=1)     # noqa: E731
    np.testing.assert_array_equal(np.asarray(compiled_call(g, rows)), ref(rows, axis=1))


def test_nan_in_a_compiled_loop(monkeypatch):
    monkeypatch.setattr(fnad.config, "background_compile", False)
    monkeypatch.setattr(loops, "_loops", weakref.WeakKeyDictionary())
    xs = data(40, "normal").reshape(4, 10).copy()
    xs[1, 3] = xs[3, 9] = NAN

    def step(c, x):
        high, low = fnp.max(x * 2), fnp.min(x * 2)
        return fnp.maximum(c, high), (high, low)
    top, (highs, lows) = fnad.jit(lambda xs: fnad.lax.scan(step, np.float32(-np.inf), xs))(xs)
    assert [entry.ready for table in loops._loops.values() for entry in table.values()][0]
    np.testing.assert_array_equal(np.asarray(highs), np.max(xs * 2, axis=1))
    np.testing.assert_array_equal(np.asarray(lows), np.min(xs * 2, axis=1))
    assert np.isnan(float(top))
    g = fnad.jit(lambda xs: fnad.lax.scan(lambda c, x: (c, fnp.argmax(x * 2)), 0, xs)[1])
    np.testing.assert_array_equal(np.asarray(g(xs)), np.argmax(xs, axis=1))


# --------------------------------------------------------------------------- float16

HALF_PROGRAMS = {
    "issue": lambda x: fnp.sin(x) * 2 + x.sum(),
    "arithmetic": lambda x: (x * 3 - 1.5) / (x * x + 0.25) + fnp.where(x > 0, x, -x),
    "math": lambda x: fnp.exp(-x * x) * fnp.tanh(x) + fnp.sqrt(fnp.abs(x)),
    "reductions": lambda x: fnp.max(x, axis=1, keepdims=True) - fnp.mean(x, axis=1, keepdims=True)
    + fnp.sum(x) + fnp.min(x * 2),
    "casts": lambda x: (x.astype(np.float32) * 1.001).astype(np.float16) + x,
}


def half_data(shape):
    rng = np.random.default_rng(7)
    return (rng.standard_normal(shape) * 3).astype(np.float16)


@pytest.mark.parametrize("shape", [(4,), (3, 50), (64, 128)])
@pytest.mark.parametrize("name", list(HALF_PROGRAMS))
def test_float16_programs_compile_and_match_numpy(name, shape, compiled_call, first_call):
    f = HALF_PROGRAMS[name]
    x = fnp.ones(4, fnp.float16) if name == "issue" and shape == (4,) else half_data(shape)
    if name == "reductions" and len(shape) < 2:
        return
    before = lowering.stats["kernels_failed"]
    eager = np.asarray(f(fnp.asarray(x)))
    assert eager.dtype == np.float16
    for out in (first_call(f, x), compiled_call(f, x)):
        out = np.asarray(out)
        assert out.dtype == np.float16 and out.shape == eager.shape
        # Each operation rounds to float16 as numpy's do; numpy's float32 SIMD exp, sin
        # and tanh may differ from libm's by an ulp of float32, rarely of float16.
        np.testing.assert_array_max_ulp(out, eager, maxulp=0 if name == "arithmetic" else 1)
    assert lowering.stats["kernels_failed"] == before


def test_float16_rounding_in_compiled_kernels(compiled_call):
    """Conversions to float16 inside a kernel round to nearest, ties to even, from
    float32 and float64, through subnormals and overflow."""
    edges = np.array([65504, 65519.99, 65520, 70000, 2**-24, 2**-25, 1.5 * 2**-25, 2**-14,
                      1 + 2**-11, 1 + 3 * 2**-11, -0.0, np.inf, -np.inf, np.nan, 1e-9, -3.14159],
                     np.float64)
    rng = np.random.default_rng(3)
    wide = np.concatenate([edges, rng.standard_normal(5000) * 10.0 ** rng.integers(-8, 5, 5000)])
    for x in (wide, wide.astype(np.float32)):
        out = np.asarray(compiled_call(lambda x: (x * 1).astype(np.float16), x))
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(out.view(np.uint16)[~np.isnan(x)],
                                          x.astype(np.float16).view(np.uint16)[~np.isnan(x)])
        assert np.isnan(out[np.isnan(x)]).all()
    back = np.asarray(compiled_call(lambda h: h.astype(np.float32) * 1,
                                    np.arange(65536, dtype=np.uint32).astype(np.uint16)
                                    .view(np.float16)))
    ref = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(back, ref)


def test_float16_sums_round_once(first_call, compiled_call):
    """A float16 sum accumulates wide and rounds once to float16, in every mode."""
    x = half_data((3, 5000))
    exact = np.array([math.fsum(r) for r in x.astype(np.float64)])
    for f in (lambda x: fnp.sum(x * 1, axis=1), lambda x: fnp.sum(fnp.sin(x) * 0 + x, axis=1)):
        for out in (f(fnp.asarray(x)), first_call(f, x), compiled_call(f, x)):
            np.testing.assert_array_equal(np.asarray(out), exact.astype(np.float16))


def test_float16_loops_run(monkeypatch):
    """A scan over float16 values: its body's kernels compile (the loop itself stays in
    Python: Numba's cpu target has no float16 arrays)."""
    monkeypatch.setattr(fnad.config, "background_compile", False)
    xs = half_data((5, 7))

    def f(xs):
        return fnad.lax.scan(lambda c, x: (c + fnp.sum(x * 2), fnp.sin(x) * c), np.float16(1), xs)
    for _ in range(2):
        total, ys = fnad.jit(f)(xs)
    ref_total, ref_ys = f(fnp.asarray(xs))
    assert total.dtype == ys.dtype == np.float16
    np.testing.assert_array_max_ulp(np.asarray(ys), np.asarray(ref_ys), maxulp=1)
    assert float(total) == float(ref_total)


# --------------------------------------------------------------------------- compile failures

def test_a_failing_background_compile_falls_back_to_numpy(monkeypatch):
    """A kernel Numba cannot compile never surfaces as a traceback printed from the
    compile thread: with background compiles the driver keeps the numpy path (same
    numbers); without, the error is raised at the call."""
    def broken(self, signature):
        raise RuntimeError("numba says no")
    monkeypatch.setattr(lowering._FirstKernelCall, "_compile", broken)
    printed = []
    monkeypatch.setattr(threading, "excepthook", lambda args: printed.append(args))
    monkeypatch.setattr(fnad.config, "background_compile", True)
    x = np.linspace(-1, 1, 11, dtype=np.float32)
    f = fnad.jit(lambda x: fnp.sum(x * 3 + 1))
    before = lowering.stats["kernels_failed"]
    for _ in range(3):
        assert float(f(x)) == pytest.approx(float(np.sum(x * 3 + 1)), abs=1e-5)
        lowering.wait_for_compiles()
    assert printed == [] and lowering.stats["kernels_failed"] == before + 1
    monkeypatch.setattr(fnad.config, "background_compile", False)
    with pytest.raises(RuntimeError, match="numba says no"):
        fnad.jit(lambda x: fnp.sum(x * 4 + 1))(x)


# --------------------------------------------------------------------------- cuda

def on_gpu(test):
    for mark in needs_cuda:
        test = mark(test)
    return test


@on_gpu
@pytest.mark.parametrize("n", [10**3, 10**4])
@pytest.mark.parametrize("dist", ["uniform", "normal"])
def test_gpu_sums_are_accurate(n, dist):
    x = data(n, dist)
    xg = to_gpu(x)
    f = lambda x: fnp.sum(x * 0.5)      # noqa: E731
    for out in (fnp.sum(xg), f(xg), fnad.jit(f)(xg), fnad.jit(lambda x: fnp.mean(x * 0.5))(xg)):
        assert host(out).dtype == np.float32
    assert_accurate(host(fnp.sum(xg)), x)
    assert_accurate(host(fnad.jit(f)(xg)), x * np.float32(0.5))
    assert_accurate(host(fnad.jit(lambda x: fnp.mean(x * 0.5))(xg)), x * np.float32(0.5), 1 / n)
    assert_accurate(host(fnp.sum(to_gpu(x.reshape(4, -1)), axis=1))[2], x.reshape(4, -1)[2])
    w = np.float32(0.7)
    y = data(n, "normal" if dist == "uniform" else "uniform")
    g = fnad.jit(fnad.grad(lambda w, x, y: fnp.mean((w * x - y) ** 2)))(to_gpu(w), xg, to_gpu(y))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert_accurate(host(g), 2 * (float(w) * x64 - y64) * x64, 1 / n)


@on_gpu
def test_gpu_reductions_propagate_nan():
    x = with_nan(300, 120)
    x[200] = NAN
    xg = to_gpu(x)
    for op in (fnp.max, fnp.min):
        assert np.isnan(float(host(op(xg))))
        assert np.isnan(float(host(fnad.jit(lambda x: op(x * 2))(xg))))
    rows = to_gpu(x.reshape(3, 100))
    np.testing.assert_array_equal(host(fnp.max(rows, axis=1)), np.max(x.reshape(3, 100), axis=1))
    for op, ref in ((fnp.argmax, np.argmax), (fnp.argmin, np.argmin)):
        assert int(host(op(xg))) == ref(x) == 120
        assert int(host(fnad.jit(lambda x: op(x * 2))(xg))) == 120



@on_gpu
def test_gpu_float16_reductions_round_once():
    x = half_data((3, 400))
    xg = to_gpu(x)
    exact = np.array([math.fsum(r) for r in x.astype(np.float64)])
    np.testing.assert_array_equal(host(fnp.sum(xg, axis=1)), exact.astype(np.float16))
    np.testing.assert_array_equal(host(fnp.max(xg, axis=1)), np.max(x, axis=1))
    assert host(fnad.jit(lambda x: fnp.sum(x * 1))(xg)) == np.float16(math.fsum(exact))


@pytest.mark.parametrize("name", ["mean", "var", "std"])
def test_float16_moments_do_not_overflow(name):
    """A float16 sum overflows past 65504; mean/var/std accumulate in float32 and round
    once (numpy does so for mean; its var of this input is inf)."""
    x = np.ones(100_000, np.float16)
    x[::3] = 3
    exact = getattr(np, name)(x.astype(np.float64))
    for mode in (getattr(fnp, name), fnad.jit(getattr(fnp, name))):
        out = mode(x)
        assert out.dtype == np.float16
        np.testing.assert_allclose(float(out), exact, rtol=1e-3)
