"""Program rewrites and the batched dot_general kernel (issue 14).

Every rewrite is checked on randomized programs: the optimized program against the
unoptimized one (values and gradients, to the last bit where the math is the same),
and each test first asserts that the rewrite fired, so it cannot pass vacuously.
The dot_general kernel (strided views instead of copies, stacks folded into M) is
checked against numpy's einsum/matmul in every layout it special-cases, integers
exactly, and for numpy's -0.0 and NaN behaviour.
"""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import core, lax
from fnad.kernels.cpu import matmul as matmul_kernels
from fnad.program import evaluate
from fnad.staged.staging import stage_flat
from fnad.abstract import ShapedArray
from fnad.transforms.optimize import optimize


def _prims(closed):
    return [e.prim.name for e in closed.program.eqns]


def _run(closed, args):
    return [np.asarray(o) for o in evaluate(closed.program, list(closed.consts) + list(args))]


def _staged(fun, args):
    """(unoptimized, optimized) programs of fun at args' shapes and dtypes."""
    avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
    raw = stage_flat(lambda *xs: list(fun(*xs)), avals)
    return raw, optimize(raw)


def _bitwise_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# --------------------------------------------------------------------------- sums of pads

def _random_windows(rng, n):
    """2-4 disjoint windows [start, stop) of range(n), with random gaps."""
    k = int(rng.integers(2, 5))
    cuts = np.sort(rng.choice(np.arange(n + 1), size=2 * k, replace=False))
    return [(int(cuts[2 * i]), int(cuts[2 * i + 1])) for i in range(k)]


@pytest.mark.parametrize("seed", range(4))
def test_slice_cotangents_become_one_concatenate(seed):
    """The gradient of a function of several slices of x: reverse mode pads each
    slice's cotangent to x's shape and adds them; the optimizer writes one
    concatenate instead. Weights holding -0.0 make the cotangents -0.0 there, which
    the sum of pads turns into +0.0: the rewrite must too."""
    rng = np.random.default_rng(seed)
    axis = int(rng.integers(0, 2))
    n = 12
    shape = (n, 3) if axis == 0 else (3, n)
    windows = _random_windows(rng, n)
    dtype = np.float32 if seed % 2 else np.float64
    x = rng.standard_normal(shape).astype(dtype)
    ws = []
    for start, stop in windows:
        w_shape = list(shape)
        w_shape[axis] = stop - start
        w = rng.standard_normal(w_shape).astype(dtype)
        w[rng.random(w_shape) < 0.3] = -0.0
        ws.append(w)

    def loss(x, *ws):
        total = 0.0
        for (start, stop), w in zip(windows, ws):
            piece = lax.slice_in_dim(x, start, stop, axis=axis)
            total = total + (fnp.sin(piece) * w).sum()
        return total

    grad = fnad.grad(loss)
    raw, opt = _staged(lambda *a: [grad(*a)], [x] + ws)
    assert "concatenate" in _prims(opt) and "pad" in _prims(raw)
    assert _prims(opt).count("pad") <= 1       # at most the uncovered ends, once
    got, want = _run(opt, [x] + ws)[0], _run(raw, [x] + ws)[0]
    assert _bitwise_equal(got, want)
    # and the jitted gradient (optimized, compiled) is eager's to the bit
    assert _bitwise_equal(fnad.jit(grad)(x, *ws), grad(x, *ws))
    # against the gradient written by hand
    expect = np.zeros(shape, dtype)
    for (start, stop), w in zip(windows, ws):
        index = [slice(None)] * 2
        index[axis] = slice(start, stop)
        expect[tuple(index)] += np.cos(x[tuple(index)]) * w
    np.testing.assert_allclose(got, expect, rtol=1e-6 if dtype == np.float32 else 1e-13)


def test_integer_pad_sums_and_overlaps():
    """Integer pads concatenate with no +0 step; overlapping windows really add and
    are left alone; a pad used twice is left alone."""
    x = np.arange(10, dtype=np.int32)

    def disjoint(a, b):
        return [lax.pad(a, np.int32(0), [(0, 6, 0)]) + lax.pad(b, np.int32(0), [(6, 0, 0)])]

    raw, opt = _staged(disjoint, [x[:4], x[:4]])
    assert _prims(opt) == ["concatenate", "pad"] or _prims(opt) == ["concatenate"] \
        or "add" not in _prims(opt)
    assert _bitwise_equal(_run(opt, [x[:4], x[4:8]])[0], _run(raw, [x[:4], x[4:8]])[0])

    def overlapping(a, b):
        return [lax.pad(a, np.int32(0), [(0, 4, 0)]) + lax.pad(b, np.int32(0), [(3, 1, 0)])]

    raw, opt = _staged(overlapping, [x[:6], x[:6]])
    assert "concatenate" not in _prims(opt)
    np.testing.assert_array_equal(_run(opt, [x[:6], x[4:10]])[0],
                                  np.r_[x[:6], 0, 0, 0, 0] + np.r_[0, 0, 0, x[4:10], 0])

    def reused(a, b):
        pa = lax.pad(a, np.int32(0), [(0, 4, 0)])
        return [pa + lax.pad(b, np.int32(0), [(4, 0, 0)]), pa]

    raw, opt = _staged(reused, [x[:4], x[:4]])
    assert "concatenate" not in _prims(opt)


# --------------------------------------------------------------------------- transposes

@pytest.mark.parametrize("seed", range(3))
def test_transposes_fold_into_dot_general(seed):
    """dot_general of transposed operands reads the operands themselves when the free
    axes keep their order: integers equal to the bit, floats to rounding, and
    gradients likewise."""
    rng = np.random.default_rng(seed)
    b, m, k, n = 2, 3, 4, 5
    a = rng.integers(-9, 9, (k, b, m)).astype(np.int64)
    c = rng.integers(-9, 9, (n, k, b)).astype(np.int64)

    def f(a, c):
        at = lax.transpose(a, (1, 2, 0))         # (b, m, k)
        ct = lax.transpose(c, (2, 1, 0))         # (b, k, n)
        return [lax.dot_general(at, ct, (((2,), (1,)), ((0,), (0,))))]

    raw, opt = _staged(f, [a, c])
    assert "transpose" in _prims(raw) and "transpose" not in _prims(opt)
    got = _run(opt, [a, c])[0]
    assert _bitwise_equal(got, _run(raw, [a, c])[0])
    np.testing.assert_array_equal(got, np.einsum("kbm,nkb->bmn", a, c))
    af, cf = a.astype(np.float64), c.astype(np.float64)
    g = fnad.grad(lambda a, c: (f(a, c)[0] ** 2).sum(), (0, 1))
    raw, opt = _staged(lambda a, c: list(g(a, c)), [af, cf])
    for x, y in zip(_run(opt, [af, cf]), _run(raw, [af, cf])):
        np.testing.assert_allclose(x, y, rtol=1e-14)


def test_transpose_that_reorders_free_axes_stays():
    a = np.ones((3, 4, 5))

    def f(a, w):     # a's free axes (3, 4) reversed by the transpose: not foldable
        return [lax.dot_general(lax.transpose(a, (1, 0, 2)), w, (((2,), (0,)), ((), ())))]

    raw, opt = _staged(f, [a, np.ones((5, 2))])
    assert "transpose" in _prims(opt)


# --------------------------------------------------------------------------- the kernel

def _einsum_reference(lhs, rhs, lc, rc, lb, rb):
    letters = iter("abcdefghijklmnop")
    la, ra = [None] * lhs.ndim, [None] * rhs.ndim
    for x, y in list(zip(lb, rb)) + list(zip(lc, rc)):
        la[x] = ra[y] = next(letters)
    la = [s or next(letters) for s in la]
    ra = [s or next(letters) for s in ra]
    out = [la[d] for d in lb] + [la[d] for d in range(lhs.ndim) if d not in lc + lb] \
        + [ra[d] for d in range(rhs.ndim) if d not in rc + rb]
    wide = np.int64 if lhs.dtype.kind in "iu" else np.complex128 \
        if lhs.dtype.kind == "c" else np.float64
    return np.einsum(f"{''.join(la)},{''.join(ra)}->{''.join(out)}",
                     lhs.astype(wide), rhs.astype(wide))


def _layouts(rng, dtype):
    """(lhs, rhs, dims) in the layouts the kernel treats differently: contiguous,
    transposed, a slice of a wider array, a stack folded into M, batch axes that do
    not merge, an empty contraction, and one needing a copy (a reversed axis)."""
    def r(*shape):
        x = rng.standard_normal(shape) * 4
        return (x if dtype.kind in "fc" else np.round(x)).astype(dtype)
    wide = r(2, 5, 12)
    return [
        (r(2, 5, 4), r(4, 3), ((2,), (0,)), ((), ())),                 # stack into M
        (r(2, 5, 4), r(2, 5, 3), ((0, 1), (0, 1)), ((), ())),           # weight gradient
        (r(4, 2, 5).transpose(1, 2, 0), r(3, 4).T, ((2,), (0,)), ((), ())),
        (wide[..., 4:8].reshape(2, 5, 2, 2).transpose(0, 2, 1, 3),    # a head of q
         wide[..., 8:12].reshape(2, 5, 2, 2).transpose(0, 2, 1, 3), ((3,), (3,)),
         ((0, 1), (0, 1))),
        (r(2, 3, 4, 5), r(3, 2, 5, 4), ((3,), (2,)), ((0, 1), (1, 0))),  # batch reordered
        (r(3, 4)[::-1], r(4, 2), ((1,), (0,)), ((), ())),               # negative stride
        (r(3, 1), r(1, 4), ((1,), (0,)), ((), ())),                     # outer product
        (r(2, 3, 0), r(2, 0, 4), ((2,), (1,)), ((0,), (0,))),           # empty sum
        (r(2, 0, 3), r(2, 3, 4), ((2,), (1,)), ((0,), (0,))),           # empty result
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64,
                                   np.complex64])
def test_dot_general_kernel_matches_einsum(dtype):
    rng = np.random.default_rng(1)
    dtype = np.dtype(dtype)
    for lhs, rhs, (lc, rc), (lb, rb) in _layouts(rng, dtype):
        want = _einsum_reference(lhs, rhs, lc, rc, lb, rb)
        got = matmul_kernels.dot_general(lhs, rhs, lc, rc, lb, rb)
        eager = lax.dot_general(lhs, rhs, ((lc, rc), (lb, rb)))
        jitted = fnad.jit(lambda a, b: lax.dot_general(a, b, ((lc, rc), (lb, rb))))(lhs, rhs)
        for out in (got, np.asarray(eager), np.asarray(jitted)):
            assert out.shape == want.shape and out.dtype == dtype
            if dtype.kind in "iu":
                np.testing.assert_array_equal(out, want)
            else:
                scale = max(np.abs(want).max(initial=0), 1)
                tol = 1e-5 if dtype.itemsize <= 8 and dtype != np.float64 else 1e-12
                assert np.abs(out - want).max(initial=0) <= tol * scale


@pytest.mark.parametrize("a_shape, b_shape", [
    ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)),
    ((1, 3, 4), (2, 1, 4, 5)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((2, 3, 4), (2, 4, 5))])
def test_matmul_stacks_match_numpy(a_shape, b_shape):
    """matmul folds a stack only one operand has into its free axes (no broadcast):
    values as numpy's (integers exactly), gradients against finite differences."""
    rng = np.random.default_rng(0)
    a, b = rng.integers(-5, 5, a_shape), rng.integers(-5, 5, b_shape)
    for dtype in (np.int32, np.int64):
        got = fnp.matmul(a.astype(dtype), b.astype(dtype))
        want = np.matmul(a.astype(dtype), b.astype(dtype))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    af, bf = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    np.testing.assert_allclose(fnad.jit(fnp.matmul)(af, bf), np.matmul(af, bf), rtol=1e-13)
    fnad.test_util.check_grads(fnp.matmul, (af, bf), order=1, modes=("rev",))


def test_matmul_signed_zeros_and_nan_as_numpy():
    """numpy's matmul sums from +0.0, so -0.0 products give +0.0, also for K = 1
    (an outer product); NaN propagates."""
    for k in (1, 3):
        a = np.full((2, 4, k), -0.0, np.float32)
        b = np.ones((k, 5), np.float32)
        want = np.matmul(a, b)
        for got in (fnp.matmul(a, b), fnad.jit(fnp.matmul)(a, b),
                    lax.dot_general(a, b, (((2,), (0,)), ((), ())))):
            assert _bitwise_equal(got, want)
    a = np.ones((2, 3, 4))
    a[1, 2, 3] = np.nan
    got = np.asarray(fnp.matmul(a, np.ones((2, 4, 2))))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(np.matmul(a, np.ones((2, 4, 2)))))


# --------------------------------------------------------------------------- recompute

@pytest.mark.parametrize("seed", range(3))
def test_cheap_values_recomputed_after_a_library_call(seed):
    """tanh-GELU's gradient: its backward loop used six forward intermediates; the
    optimizer recomputes the cheap ones (a few multiplies from x and the tanh) where
    they are used again, to the bit, in eager evaluation and in compiled code."""
    rng = np.random.default_rng(seed)
    dtype = (np.float32, np.float64)[seed % 2]
    x = rng.standard_normal((6, 5)).astype(dtype)
    w = rng.standard_normal((5, 4)).astype(dtype)
    a = float(rng.uniform(0.01, 0.1))

    def loss(x, w):
        h = x @ w
        g = 0.5 * h * (1 + fnp.tanh(0.79 * (h + a * h * h * h)))
        return (g @ w.T).sum()

    grad = fnad.grad(loss, (0, 1))
    raw, opt = _staged(lambda *v: list(grad(*v)), [x, w])
    assert len(opt.program.eqns) > len(optimize_without_recompute(raw).program.eqns)
    for got, want in zip(_run(opt, [x, w]), _run(raw, [x, w])):
        assert _bitwise_equal(got, want)
    for got, want in zip(fnad.jit(grad)(x, w), _run(raw, [x, w])):
        assert _bitwise_equal(got, want)


def optimize_without_recompute(closed):
    from fnad.transforms import optimize as passes
    saved = passes.RECOMPUTE_DEPTH
    passes.RECOMPUTE_DEPTH = 0
    try:
        return passes.optimize(closed)
    finally:
        passes.RECOMPUTE_DEPTH = saved


def test_recompute_never_keeps_a_new_value():
    """v = sin(x) * cos(x) used after a dot_general, the sine and cosine used nowhere
    else: recomputing v would keep both (two arrays) instead of v (one), so v stays.
    Recomputed from inputs (which exist anyway), v is copied."""
    def f(x, w):
        v = fnp.sin(x) * fnp.cos(x)
        return [v @ w + v]

    raw, opt = _staged(f, [np.ones((3, 3)), np.ones((3, 3))])
    assert [e.prim.name for e in opt.program.eqns].count("mul") == 1

    def g(x, w):
        v = x * x
        return [v @ w + v]

    raw, opt = _staged(g, [np.ones((3, 3)), np.ones((3, 3))])
    assert [e.prim.name for e in opt.program.eqns].count("mul") == 2


# --------------------------------------------------------------------------- combining

@pytest.fixture
def negate_each():
    """A combinable primitive (negates each operand on its own; `tag` a param) and an
    effect, declared for these tests and removed from the registry afterwards."""
    made = []

    def declare(name, **rules):
        made.append(core.Primitive(name, **rules))
        return made[-1]
    negate = declare("test_rewrites_negate_each",
                     abstract_eval=lambda *avals, tag: list(avals),
                     impl=lambda *xs, tag: [-x for x in xs], jvp=lambda p, t, tag: None,
                     vjp=lambda g, out, *xs, tag: None, batch=lambda a, d, tag: None,
                     combinable=True, multiple_results=True)
    seen = []
    effect = declare("test_rewrites_observe",
                     abstract_eval=lambda x: [], impl=lambda x: seen.append(x) or [],
                     jvp=lambda p, t: None, vjp=lambda g, out, x: None,
                     batch=lambda a, d: None, effect=True, multiple_results=True)
    yield negate, effect
    for prim in made:
        del core.PRIMITIVES[prim.name]


def test_independent_combinable_calls_become_one(negate_each):
    negate, observe = negate_each

    def f(a, b, c, d):
        x, = negate.bind(a, tag=1)
        y = b * 2.0                                  # independent work in between
        z, = negate.bind(y, tag=1)
        w, = negate.bind(c, tag=2)                   # other params: its own call
        v, = negate.bind(d, tag=1)
        return x, z, w, v
    args = [np.arange(3.0) + i for i in range(4)]
    raw, opt = _staged(f, args)
    assert _prims(raw).count("test_rewrites_negate_each") == 4
    calls = [e for e in opt.program.eqns if e.prim is negate]
    assert [(e.params["tag"], len(e.inputs)) for e in calls] == [(1, 2), (2, 1), (1, 1)]
    for got, want in zip(_run(opt, args), _run(raw, args)):
        assert _bitwise_equal(got, want)


def test_a_call_reading_an_earlier_one_or_an_effect_between_keeps_them_apart(negate_each):
    negate, observe = negate_each

    def chained(a, b):
        x, = negate.bind(a, tag=1)
        y, = negate.bind(x + b, tag=1)                # reads the first call's output
        return x, y

    def around_an_effect(a, b):
        x, = negate.bind(a, tag=1)
        observe.bind(b)
        y, = negate.bind(b, tag=1)
        return x, y
    args = [np.arange(3.0), np.ones(3)]
    for f in (chained, around_an_effect):
        raw, opt = _staged(f, args)
        assert [len(e.inputs) for e in opt.program.eqns if e.prim is negate] == [1, 1]
        for got, want in zip(_run(opt, args), _run(raw, args)):
            assert _bitwise_equal(got, want)
    raw, opt = _staged(around_an_effect, args)        # the effect stays between them
    assert [e.prim for e in opt.program.eqns if e.prim in (negate, observe)] == \
        [negate, observe, negate]


# --------------------------------------------------------------------------- round trips

_ROUND_TRIP_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16,
                      fnp.bfloat16, np.float32, np.float64]


def _every_kind_of_value(dtype, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([True, False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.concatenate([[info.min, info.max, 0, 1], rng.integers(
            info.min, info.max, 40, dtype=dtype, endpoint=True)]).astype(dtype)
    info = fnp.finfo(dtype)
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0, float(info.max), -float(info.max),
               float(info.tiny), float(info.smallest_subnormal), 1 + float(info.eps)]
    with np.errstate(over="ignore"):        # float16 takes the large ones as inf
        return np.concatenate([np.asarray(special, np.float64), rng.standard_normal(40)
                               * 10.0 ** rng.integers(-30, 30, 40)]).astype(dtype)


@pytest.mark.parametrize("narrow", _ROUND_TRIP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_a_conversion_round_trip_is_dropped_only_when_exact(narrow):
    """convert(convert(x, wide), narrow) -> x exactly when `wide` holds every value of
    `narrow`; either way the optimized program gives the unoptimized one's bits."""
    rng = np.random.default_rng(7)
    x = _every_kind_of_value(narrow, rng)
    for wide in _ROUND_TRIP_DTYPES:
        if np.dtype(wide) == np.dtype(narrow):
            continue
        raw, opt = _staged(lambda v: [lax.convert_element_type(
            lax.convert_element_type(v, wide), narrow)], [x])
        assert _prims(raw) == ["convert_element_type"] * 2
        with np.errstate(all="ignore"):
            back = np.asarray(x.astype(wide)).astype(narrow) if np.dtype(narrow) != \
                np.bool_ else x.astype(wide) != 0
        exact = np.array_equal(back, x, equal_nan=np.dtype(narrow).kind == "f" or
                               np.dtype(narrow) == fnp.bfloat16)
        dropped = _prims(opt) == []
        assert not dropped or exact, (np.dtype(narrow).name, np.dtype(wide).name)
        expect_dropped = {(np.dtype(narrow).name, np.dtype(wide).name)} <= _EXACT_WIDENINGS
        assert dropped == expect_dropped, (np.dtype(narrow).name, np.dtype(wide).name)
        assert _bitwise_equal(_run(opt, [x])[0], _run(raw, [x])[0])


# (narrow, wide): every value of narrow converts to wide and back unchanged
_EXACT_WIDENINGS = {("bool", w) for w in ("int8", "int16", "int32", "int64", "uint8",
                                         "float16", "bfloat16", "float32", "float64")} | {
    ("int8", "int16"), ("int8", "int32"), ("int8", "int64"), ("int8", "float16"),
    ("int8", "bfloat16"), ("int8", "float32"), ("int8", "float64"),
    ("int16", "int32"), ("int16", "int64"), ("int16", "float32"), ("int16", "float64"),
    ("int32", "int64"), ("int32", "float64"),
    ("uint8", "int16"), ("uint8", "int32"), ("uint8", "int64"), ("uint8", "float16"),
    ("uint8", "bfloat16"), ("uint8", "float32"), ("uint8", "float64"),
    ("float16", "float32"), ("float16", "float64"), ("bfloat16", "float32"),
    ("bfloat16", "float64"), ("float32", "float64")}
