"""Elementwise and indexing kernels keep numpy's semantics in every mode.

Each case runs eagerly, through jit's first call (the primitives' numpy kernels while
Numba compiles the fused loop in the background), through the compiled fused loop,
under vmap, inside a compiled loop (a jitted scan), and on the cuda backend (the
simulator in CI), and must match numpy bit for bit: NaN wherever numpy puts it, -0.0,
integer floor division and remainder for every width (negative operands, zero
divisors, iinfo.min // -1 wrapping around as numpy does). Then the rules for values
numpy has no answer for: out-of-range indices and class labels, cotangents of the
wrong dtype, and layers given inputs in the wrong layout."""
import weakref

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import nn
from fnad.errors import DTypeError, ShapeError
from fnad.backends.cpu import loops, lowering
from cuda_util import needs_cuda, to_gpu, host

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's 1 // 0 etc.

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]
NAN, INF = np.nan, np.inf


# --------------------------------------------------------------------------- operands

def int_operands(dtype, random=64):
    """Every pair of interesting values (both signs, 0, the extremes and their
    neighbours), then random pairs over the whole range."""
    info = np.iinfo(dtype)
    special = {0, 1, 2, 3, 7, 100, info.max, info.max - 1, info.min, info.min + 1,
               -1, -2, -3, -7, -100, info.min // 3}
    values = np.array(sorted(v for v in special if info.min <= v <= info.max), dtype=object)
    x, y = (a.ravel() for a in np.meshgrid(values, values))
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    wide_x = rng.integers(info.min, info.max, random, dtype=dtype, endpoint=True)
    wide_y = rng.integers(info.min, info.max, random, dtype=dtype, endpoint=True)
    small_y = rng.integers(max(info.min, -9), 10, random, dtype=dtype)
    return (np.concatenate([x.astype(dtype), wide_x, wide_x]),
            np.concatenate([y.astype(dtype), wide_y, small_y]))


FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 2.5, -2.5, 3.0, -3.0, 7.5, 1e-30, -1e-30,
                  1e30, INF, -INF, NAN]


def float_operands(dtype):
    x, y = (a.ravel() for a in np.meshgrid(FLOAT_SPECIALS, FLOAT_SPECIALS))
    return x.astype(dtype), y.astype(dtype)


def assert_same(got, want, what=""):
    """Equal dtype, shape and values, NaN where numpy has NaN, -0.0 where it has -0.0."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.dtype.kind == "f":
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        same &= np.signbit(got) == np.signbit(want)
    else:
        same = got == want
    if not same.all():
        bad = np.flatnonzero(~same)[:8]
        raise AssertionError(f"{what}: {bad.size} of {same.size} differ; at {bad.tolist()} "
                             f"got {got.ravel()[bad].tolist()}, numpy "
                             f"{want.ravel()[bad].tolist()}")


# --------------------------------------------------------------------------- modes

def first_and_compiled(f, args, monkeypatch, fused=True):
    """jit's first call (unfused, while the kernel compiles) and a later compiled call.
    fused: f's program has a fused elementwise group, which the first call must run
    through numpy. A kernel of the same structure compiled by an earlier test would
    skip the numpy path, so the first call is made to take it."""
    monkeypatch.setattr(fnad.config, "background_compile", True)
    unfused = []
    first_call = lowering._FirstKernelCall.__call__

    def while_compiling(self, *a):
        unfused.append(self.name)
        return self.run_unfused(*a)
    monkeypatch.setattr(lowering._FirstKernelCall, "__call__", while_compiling)
    jf = fnad.jit(f)
    first = jf(*args)
    assert unfused or not fused, "the first call did not run the group through numpy"
    monkeypatch.setattr(lowering._FirstKernelCall, "__call__", first_call)
    jf(*args)                       # starts the compile (or finds the kernel compiled)
    lowering.wait_for_compiles()
    compiled = jf(*args)
    return first, compiled


def compiled_loop(f, args, monkeypatch, fused=True):
    """f applied to each of two stacked copies of args by a jitted scan, which runs as
    one compiled Numba loop."""
    monkeypatch.setattr(fnad.config, "background_compile", False)
    monkeypatch.setattr(loops, "_loops", weakref.WeakKeyDictionary())
    stacked = [np.stack([a, a]) for a in args]
    g = fnad.jit(lambda *xs: fnad.lax.scan(lambda c, row: (c, f(*row)), 0, tuple(xs))[1])
    out = g(*stacked)
    assert not fused or [e.ready for table in loops._loops.values()
                         for e in table.values()][0], "the scan body did not compile"
    return out


def cuda_test(f):
    for mark in needs_cuda:
        f = mark(f)
    return f


def run_modes(f, args, monkeypatch, fused=True):
    """[(mode, f's result, the operands it was computed from)] over every cpu mode."""
    rev = [a[::-1].copy() for a in args]
    stacked = [np.stack([a, r]) for a, r in zip(args, rev)]
    first, compiled = first_and_compiled(f, args, monkeypatch, fused)
    batched = _tuple(fnad.vmap(f)(*stacked))
    jit_batched = _tuple(fnad.jit(fnad.vmap(f))(*stacked))
    looped = _tuple(compiled_loop(f, args, monkeypatch, fused))
    return [("eager", f(*[fnp.asarray(a) for a in args]), args),
            ("jit first call", first, args),
            ("jit compiled", compiled, args),
            ("vmap row 0", tuple(b[0] for b in batched), args),
            ("vmap row 1", tuple(b[1] for b in batched), rev),
            ("jit of vmap row 0", tuple(b[0] for b in jit_batched), args),
            ("jit of vmap row 1", tuple(b[1] for b in jit_batched), rev),
            ("compiled loop row 0", tuple(b[0] for b in looped), args),
            ("compiled loop row 1", tuple(b[1] for b in looped), args)]


def check_modes(f, ref, args, monkeypatch, fused=True):
    for mode, got, operands in run_modes(f, args, monkeypatch, fused):
        want = ref(*operands)
        for g, w in zip(_tuple(got), _tuple(want)):
            assert_same(g, w, mode)


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


# --------------------------------------------------------------------------- integer division

# `//` and `%` (floor_divide and remainder) in one program, fmod in another.
DIVISION_OPS = {
    "floordiv-mod": (lambda x, y: (x // y, x % y), np.divmod),
    "fmod": (fnp.fmod, np.fmod),
}


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", sorted(DIVISION_OPS))
def test_integer_division_matches_numpy_in_every_mode(op, dtype, monkeypatch):
    f, ref = DIVISION_OPS[op]
    check_modes(f, ref, int_operands(dtype), monkeypatch)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
def test_integer_division_by_a_python_scalar(dtype, monkeypatch):
    """`a % 3` and `a // -2`: the scalar is weakly typed and takes a's dtype."""
    x, _ = int_operands(dtype)
    if np.dtype(dtype).kind == "i":
        check_modes(lambda a: (a % 3, a // 7, a // -2, a % -5),
                    lambda a: (a % dtype(3), a // dtype(7), a // dtype(-2), a % dtype(-5)),
                    (x,), monkeypatch)
    else:
        check_modes(lambda a: (a % 3, a // 7), lambda a: (a % dtype(3), a // dtype(7)),
                    (x,), monkeypatch)


def test_the_reported_cases():
    assert_same(fnad.jit(lambda a: a % 3)(fnp.asarray(np.array([-7, -1, 5], np.int32))),
                np.array([2, 2, 2], np.int32))
    big = np.array([2**64 - 1], np.uint64)
    assert_same(fnp.asarray(big) // fnp.asarray(np.ones(1, np.uint64)), big)
    assert_same(fnp.asarray(np.array([5, -5], np.int32)) // 0, np.zeros(2, np.int32))
    lo = np.iinfo(np.int64).min
    assert_same(fnp.asarray(np.array([lo], np.int64)) // -1, np.array([lo], np.int64))
    x, y = np.array([-7, 7, -7, 0], np.int16), np.array([2, -2, 0, -3], np.int16)
    for got in (fnp.divmod(x, y), fnad.jit(fnp.divmod)(x, y)):
        for g, w in zip(got, np.divmod(x, y)):
            assert_same(g, w, "divmod")


def test_int64_floor_division_is_exact_above_2_53():
    rng = np.random.default_rng(0)
    x = rng.integers(-2**62, 2**62, 10_000)
    y = rng.integers(-1000, 1000, 10_000)      # quotients far above 2**53
    assert_same(fnp.asarray(x) // fnp.asarray(y), x // y)
    assert_same(fnad.jit(lambda a, b: a // b)(x, y), x // y)


# --------------------------------------------------------------------------- float division

@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", sorted(DIVISION_OPS))
def test_float_division_matches_numpy_in_every_mode(op, dtype, monkeypatch):
    """inf, nan, -0.0 and zero divisors, and numpy's divmod algorithm: 1.0 // 0.1 is
    9.0 (fmod first), not floor(1.0 / 0.1) = 10.0."""
    f, ref = DIVISION_OPS[op]
    check_modes(f, ref, float_operands(dtype), monkeypatch)


def test_float_floor_divide_is_numpys_divmod():
    assert float(fnp.asarray(1.0) // fnp.asarray(0.1)) == 9.0 == np.floor_divide(1.0, 0.1)
    assert_same(fnp.remainder(fnp.asarray([-1.0, 1.0]), fnp.asarray([1.0, -1.0])),
                np.remainder(np.float32([-1.0, 1.0]), np.float32([1.0, -1.0])))


def test_remainder_and_floor_divide_derivatives():
    x = np.array([2.3, -2.6, 5.5, -0.7])
    y = np.array([1.1, 0.9, -1.7, -0.3])
    gx, gy = fnad.grad(lambda a, b: fnp.sum(fnp.remainder(a, b)), (0, 1))(x, y)
    np.testing.assert_array_equal(np.asarray(gx), np.ones(4))
    np.testing.assert_array_equal(np.asarray(gy), -np.floor_divide(x, y))
    gx, gy = fnad.grad(lambda a, b: fnp.sum(a // b), (0, 1))(x, y)
    np.testing.assert_array_equal(np.asarray(gx), np.zeros(4))


# --------------------------------------------------------------------------- NaN

NAN_PAIRS = (np.array([1.0, NAN, NAN, -INF, 0.0, -0.0, 2.0, INF]),
             np.array([NAN, 2.0, NAN, NAN, -0.0, 0.0, 1.0, 3.0]))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_and_minimum_propagate_nan(op, dtype, monkeypatch):
    x, y = (a.astype(dtype) for a in NAN_PAIRS)
    check_modes(getattr(fnp, op), getattr(np, op), (x, y), monkeypatch)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_clip_and_clamp_propagate_nan(dtype, monkeypatch):
    x = np.array([NAN, 2.0, -1.0, 0.5, INF, -INF], dtype)
    check_modes(lambda a: fnp.clip(a, 0.0, 1.0), lambda a: np.clip(a, 0.0, 1.0), (x,),
                monkeypatch)
    lo = np.array([0.0, 0.0, NAN, 0.0, 0.0, 0.0], dtype)
    hi = np.array([1.0, NAN, 1.0, 1.0, NAN, 1.0], dtype)
    ref = lambda lo, a, hi: np.minimum(np.maximum(a, lo), hi)  # noqa: E731
    check_modes(fnad.lax.clamp, ref, (lo, x, hi), monkeypatch)


def test_relu_passes_nan_through(monkeypatch):
    x = np.array([NAN, -1.0, 0.0, -0.0, 2.0, -INF, INF], np.float32)
    # JAX's relu is maximum(x, 0): NaN stays NaN
    check_modes(nn.relu, lambda a: np.maximum(a, np.float32(0)), (x,), monkeypatch)
    g = fnad.grad(lambda a: fnp.sum(nn.relu(a)))(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 1.0])     # 0 at 0, as JAX


def test_relu_matches_jax_at_nan():
    jnn = pytest.importorskip("jax.nn")
    x = np.array([NAN, -1.0, 2.0], np.float32)
    assert_same(nn.relu(x), np.asarray(jnn.relu(x)))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_sort_and_argsort_put_nan_last(dtype, monkeypatch):
    x = np.array([3.0, NAN, -0.0, 1.0, -INF, NAN, 0.0, INF, -2.0], dtype)
    check_modes(fnp.sort, lambda a: np.sort(a, kind="stable"), (x,), monkeypatch,
                fused=False)
    for mode, got in [("eager", fnp.argsort(x)), ("jit", fnad.jit(fnp.argsort)(x)),
                      ("vmap", fnad.vmap(fnp.argsort)(np.stack([x, x]))[1])]:
        np.testing.assert_array_equal(np.asarray(got), np.argsort(x, kind="stable"), mode)


# --------------------------------------------------------------------------- the GPU

CUDA_OPS = dict(DIVISION_OPS, maximum=(fnp.maximum, np.maximum),
                minimum=(fnp.minimum, np.minimum))


@cuda_test
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint32, np.uint64,
                                   np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", sorted(CUDA_OPS))
def test_cuda_kernels_match_numpy(op, dtype):
    f, ref = CUDA_OPS[op]
    if np.dtype(dtype).kind == "f":
        x, y = float_operands(dtype)
        if op in ("maximum", "minimum"):
            x, y = (np.concatenate([a, b.astype(dtype)]) for a, b in zip((x, y), NAN_PAIRS))
    else:
        x, y = int_operands(dtype, random=16)
    want = ref(x, y)
    eager = f(to_gpu(x), to_gpu(y))
    jitted = fnad.jit(f)(to_gpu(x), to_gpu(y))
    for mode, got in (("cuda eager", eager), ("cuda jit", jitted)):
        for g, w in zip(_tuple(got), _tuple(want)):
            assert_same(host(g), w, mode)


@cuda_test
def test_cuda_clamp_relu_and_take_wrap():
    x = np.array([NAN, 2.0, -1.0, 0.5, INF, -INF], np.float32)
    assert_same(host(fnp.clip(to_gpu(x), 0.0, 1.0)), np.clip(x, 0.0, 1.0))
    assert_same(host(fnad.lax.clamp(to_gpu(np.float32(0)), to_gpu(x), to_gpu(np.float32(1)))),
                np.clip(x, 0.0, 1.0))
    assert_same(host(fnad.jit(nn.relu)(to_gpu(x))), np.where(x <= 0, np.float32(0), x))
    a = np.arange(5.0)
    i = np.array([-1, -6, 7, 12, -13, 0])
    got = fnad.jit(lambda a, i: fnp.take(a, i, mode="wrap"))(to_gpu(a), to_gpu(i))
    assert_same(host(got), np.take(a, i, mode="wrap"))
    x = np.array([3.0, NAN, -0.0, 1.0, -INF, NAN, 0.0], np.float32)
    assert_same(host(fnp.sort(to_gpu(x))), np.sort(x, kind="stable"))
    np.testing.assert_array_equal(host(fnp.argsort(to_gpu(x))), np.argsort(x, kind="stable"))


# --------------------------------------------------------------------------- indexing

def test_take_wrap_and_clip_match_numpy(monkeypatch):
    a = np.arange(5.0)
    for mode in ("wrap", "clip"):
        for dtype in (np.int32, np.int64):
            i = np.array([-1, -6, 7, 12, -13, 0, 4], dtype)
            want = np.take(a, i, mode=mode)
            assert_same(fnp.take(a, i, mode=mode), want, f"eager {mode}")
            f = lambda a, i: fnp.take(a, i, mode=mode)  # noqa: E731
            first, compiled = first_and_compiled(f, (a, i), monkeypatch)
            assert_same(first, want, f"jit first call {mode}")
            assert_same(compiled, want, f"jit compiled {mode}")
            assert_same(fnad.vmap(f, in_axes=(None, 0))(a, np.stack([i, i]))[1], want,
                        f"vmap {mode}")


def test_out_of_range_reads_raise_where_the_index_is_concrete():
    x = fnp.asarray([1.0, 2.0, 3.0])
    reads = {
        "x[5]": lambda x: x[5],
        "x[-4]": lambda x: x[-4],
        "x[array]": lambda x: x[np.array([0, 5])],
        "x[fnad array]": lambda x: x[fnp.asarray([0, 3])],
        "take": lambda x: fnp.take(x, np.array([0, 7])),
        "take_along_axis": lambda x: fnp.take_along_axis(x, np.array([0, 3]), 0),
    }
    for what, read in reads.items():
        for mode, f in (("eager", read), ("jit", fnad.jit(read)),
                        ("grad", fnad.grad(lambda x: fnp.sum(read(x)))),
                        ("vmap over x", lambda x: fnad.vmap(read)(fnp.stack([x, x])))):
            with pytest.raises(IndexError, match="out of bounds"):
                f(x)
            assert mode


def test_traced_out_of_range_reads_clamp_as_in_jax():
    x = np.array([1.0, 2.0, 3.0])
    i = np.array([-5, -1, 0, 5])
    want = x[np.clip(np.where(i < 0, i + 3, i), 0, 2)]
    assert_same(fnad.jit(lambda x, i: x[i])(x, i), want, "jit")
    assert_same(fnad.vmap(lambda j: fnp.asarray(x)[j])(i), want, "vmap")
    assert_same(fnad.jit(lambda x, j: x[j])(x, 7), np.float64(3.0), "jit scalar")
    jnp = pytest.importorskip("jax.numpy")
    import jax
    assert_same(jax.jit(lambda x, i: x[i])(x.astype(np.float32), i),
                want.astype(np.float32), "jax")


def test_the_readme_states_the_index_rule():
    import os
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    assert "traced by `jit` or\n  `vmap`" in readme and "clamped into range" in readme


# --------------------------------------------------------------------------- class labels

def test_labels_outside_the_classes_raise_eagerly():
    logits = np.zeros((3, 4), np.float32)
    for bad in (4, -1, 100):
        labels = np.array([0, bad, 2])
        with pytest.raises(IndexError, match=f"label {bad} is outside the 4 classes"):
            nn.softmax_cross_entropy(logits, labels)
        with pytest.raises(IndexError, match=f"label {bad}"):
            fnad.grad(nn.softmax_cross_entropy)(logits, labels)
        with pytest.raises(IndexError, match=f"label {bad}"):
            nn.nll(logits, labels)


def test_labels_outside_the_classes_give_nan_under_jit():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 4)).astype(np.float32)
    f = fnad.jit(nn.softmax_cross_entropy)
    assert np.isnan(float(f(logits, np.array([0, 4, 2]))))
    assert np.isnan(float(f(logits, np.array([-1, 0, 2]))))
    labels = np.array([0, 3, 2])
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    want = -log_p[np.arange(3), labels].mean()
    for got in (f(logits, labels), nn.softmax_cross_entropy(logits, labels)):
        assert float(got) == pytest.approx(want, rel=1e-6)
    per_example = fnad.vmap(nn.softmax_cross_entropy)(logits[:, None], np.array([[0], [9], [2]]))
    assert np.isnan(np.asarray(per_example)).tolist() == [False, True, False]


# --------------------------------------------------------------------------- vjp cotangents

def test_vjp_checks_the_cotangent_dtype():
    x = np.ones(3, np.float32)
    out, pullback = fnad.vjp(lambda x: x * 2, x)
    for bad in (np.ones(3, np.float64), np.ones(3, np.int32), fnp.ones(3, dtype=np.float64)):
        with pytest.raises(DTypeError, match=f"{np.asarray(bad).dtype}.*float32"):
            pullback(bad)
    g, = pullback(np.ones(3, np.float32))
    assert g.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(g), [2, 2, 2])
    _, pullback = fnad.vjp(lambda x: fnp.sum(x), x)
    g, = pullback(1.0)          # a Python scalar is weakly typed, as in JAX
    assert g.dtype == np.float32
    with pytest.raises(ValueError, match="shape"):
        fnad.vjp(lambda x: x * 2, x)[1](np.ones(4, np.float32))


# --------------------------------------------------------------------------- layers

def test_conv_given_nchw_input_raises():
    key = fnad.random.key(0)
    init, apply = nn.serial(nn.Conv(8, (5, 5)), nn.Relu, nn.Flatten, nn.Dense(10))
    with pytest.raises(ShapeError, match=r"NHWC.*\(-?1, 1, 28, 28\)"):
        init(key, (-1, 1, 28, 28))
    _, params = init(key, (-1, 28, 28, 1))
    with pytest.raises(ShapeError, match=r"1 input channels.*\(2, 1, 28, 28\)"):
        apply(params, fnp.ones((2, 1, 28, 28)))
    with pytest.raises(ShapeError, match=r"1 input channels.*\(2, 1, 28, 28\)"):
        fnad.jit(apply)(params, fnp.ones((2, 1, 28, 28)))
    with pytest.raises(ShapeError, match="rank 3"):
        apply(params, fnp.ones((28, 28, 1)))
    assert apply(params, fnp.ones((2, 28, 28, 1))).shape == (2, 10)


@pytest.mark.parametrize("pool", [nn.MaxPool, nn.AvgPool])
def test_pools_check_their_spatial_size(pool):
    init, apply = pool((3, 3))
    with pytest.raises(ShapeError, match=r"NHWC.*\(-?1, 2, 28, 28\)"):
        init(fnad.random.key(0), (-1, 2, 28, 28))
    with pytest.raises(ShapeError, match=r"NHWC.*\(2, 2, 28, 28\)"):
        apply((), fnp.ones((2, 2, 28, 28)))
    assert apply((), fnp.ones((2, 6, 6, 1))).shape == (2, 2, 2, 1)


def test_dense_checks_its_features():
    init, apply = nn.Dense(4)
    with pytest.raises(ShapeError, match=r"\(-1, 0\)"):
        init(fnad.random.key(0), (-1, 0))
    _, params = init(fnad.random.key(0), (-1, 3))
    with pytest.raises(ShapeError, match=r"3 input features.*\(2, 5\)"):
        apply(params, fnp.ones((2, 5)))
    assert apply(params, fnp.ones((2, 3))).shape == (2, 4)
