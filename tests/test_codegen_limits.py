"""Generated code has no fixed limits: loop nests for any rank numpy allows (up to 64),
computations too large to run refused before any loop starts, helpers' versions in the
generated modules' names, and fused loops for cheap helpers."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.errors import ResourceError
from fnad.kernels import disk_cache
from fnad.kernels.cpu import elementwise, half, loop_linalg
from fnad.backends import fusion
from fnad.backends.cpu import loops, lowering, njit

RANKS = [21, 32, 64]


def operands(rank, dtype=np.float32, twos=11):
    """x with size 2 on `twos` dimensions (every other one), y with size 2 on dimension
    1, where x has 1: together more looped dimensions than a nest may have, and few
    enough elements (2**(twos + 1)) to stay tiny."""
    rng = np.random.default_rng(rank)
    x_shape = tuple(2 if d % 2 == 0 and d < 2 * twos else 1 for d in range(rank))
    y_shape = (1, 2) + (1,) * (rank - 2)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(x_shape).astype(dtype),
                rng.standard_normal(y_shape).astype(dtype))
    return (rng.integers(-50, 50, x_shape).astype(dtype),
            rng.integers(-50, 50, y_shape).astype(dtype))


def functions(rank):
    """(name, fnad function, numpy function, dtype): elementwise, full and partial
    reductions (over outer and inner dimensions), a math-library group large enough
    for the blocked path, integer arithmetic."""
    last = rank - 1
    return [
        ("elementwise", lambda x, y: fnp.maximum(x, y) * 2 + 1,
         lambda x, y: np.maximum(x, y) * 2 + 1, np.float32),
        ("sum", lambda x, y: fnp.sum(x * y - 0.5), lambda x, y: np.sum(x * y - 0.5), np.float32),
        ("max over outer axes", lambda x, y: fnp.max(x - y, axis=(0, 1)),
         lambda x, y: np.max(x - y, axis=(0, 1)), np.float32),
        ("blocked sum of sin", lambda x, y: fnp.sum(fnp.sin(x) * y, axis=last),
         lambda x, y: np.sum(np.sin(x) * y, axis=last), np.float32),
        ("integer floor division", lambda x, y: (x * y + 3) // 2 - x % 7,
         lambda x, y: (x * y + 3) // 2 - x % 7, np.int32),
        ("integer min reduction", lambda x, y: fnp.min(x * y, axis=(1, last)),
         lambda x, y: np.min(x * y, axis=(1, last)), np.int64),
    ]


def check(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("background", [True, False], ids=["first_call", "compiled"])
def test_high_rank_jit_matches_numpy(monkeypatch, rank, background):
    """Every call agrees with numpy: with background compiles the first call runs the
    group through numpy and the later ones the compiled kernel (which must have
    compiled: no kernel left to numpy); without, every call runs compiled code."""
    monkeypatch.setattr(fnad.config, "background_compile", background)
    failed = lowering.stats["kernels_failed"]
    for name, f, g, dtype in functions(rank):
        x, y = operands(rank, dtype)
        want = g(x, y)
        jf = fnad.jit(f)
        for _ in range(2):
            check(jf(x, y), want)
            lowering.wait_for_compiles()
        check(jf(fnp.asarray(x), fnp.asarray(y)), want)
    assert lowering.stats["kernels_failed"] == failed


def test_deep_nests_walk_outer_dimensions_by_one_flat_index():
    x, y = operands(21)
    source = fnad.jit(lambda x, y: fnp.sum(x * y, axis=4)).lower(x, y).as_text()
    assert "for o in range(no)" in source
    depth = max(len(line) - len(line.lstrip()) for line in source.splitlines()) // 4
    assert depth <= fusion.MAX_NEST + 2       # def, the nest, the statement
    # nests of up to MAX_NEST dimensions keep their plain loops, shared by every size
    small = fnad.jit(lambda x: x * 2).lower(np.ones((3, 1, 2), np.float32)).as_text()
    assert "for i1 in range(n1)" in small and "no =" not in small


def test_high_rank_parallel_kernels(monkeypatch):
    """The threaded variants: prange over the flat outer index, and per-chunk
    accumulators for a combine Numba does not reduce by itself."""
    monkeypatch.setattr(fnad.config, "background_compile", False)
    monkeypatch.setattr(lowering, "PARALLEL_MIN_ELEMENTS", 1)
    x, y = operands(32)
    x[(0,) * 32] = np.nan
    for f, g in [(lambda x, y: fnp.max(x * y), lambda x, y: np.max(x * y)),
                 (lambda x, y: fnp.abs(x - y) * 2, lambda x, y: np.abs(x - y) * 2),
                 (lambda x, y: fnp.sum(x * y, axis=31), lambda x, y: np.sum(x * y, axis=31))]:
        jf = fnad.jit(f)
        assert "numba.prange" in jf.lower(x, y).as_text()
        check(jf(x, y), g(x, y))


def test_high_rank_grad_and_vmap():
    x, y = operands(64)
    loss = lambda x, y: fnp.sum(fnp.tanh(x * y))   # noqa: E731
    g = fnad.jit(fnad.grad(loss))(x, y)
    want = np.sum((1 - np.tanh(x * y) ** 2) * y, axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(want, x.shape), rtol=1e-5,
                               atol=1e-6)
    g = fnad.jit(fnad.grad(lambda x: fnp.sum(fnp.sin(x) * x)))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(x) * x + np.sin(x), rtol=1e-5, atol=1e-6)
    batched = fnad.jit(fnad.vmap(lambda x: x * 3 + 1))(x)
    check(batched, x * 3 + 1)


def test_high_rank_scan_runs_as_one_compiled_loop(monkeypatch):
    import weakref
    monkeypatch.setattr(fnad.config, "background_compile", False)
    monkeypatch.setattr(loops, "_loops", weakref.WeakKeyDictionary())
    x, _ = operands(21)
    x = x.astype(np.float64)

    def body(c, _):
        c = fnp.maximum(c * 0.9, -0.5) + 0.01
        return c, fnp.sum(c * 2)
    f = fnad.jit(lambda x: fnad.lax.scan(body, x, None, length=5))
    want_c, want_ys = x, []
    for _ in range(5):
        want_c = np.maximum(want_c * 0.9, -0.5) + 0.01
        want_ys.append(np.sum(want_c * 2))
    for _ in range(2):
        c, ys = f(x)
        np.testing.assert_allclose(np.asarray(c), want_c, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=1e-12)
    compiled = [entry.ready for table in loops._loops.values() for entry in table.values()]
    assert len(compiled) == 1 and all(compiled), compiled


# --------------------------------------------------------------------------- sizes

def _run(code):
    """Run code in a fresh process: a computation that is not refused would run for
    years, so the bound is a timeout, not the test suite hanging."""
    env = dict(os.environ, FNAD_CACHE_DIR=os.environ.get("FNAD_CACHE_DIR", ""))
    if not env["FNAD_CACHE_DIR"]:
        del env["FNAD_CACHE_DIR"]
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_a_huge_broadcast_is_refused_before_any_loop():
    out = _run("""
        import numpy as np, fnad, fnad.numpy as fnp
        from fnad.errors import ResourceError
        cases = [
            (lambda x: fnp.broadcast_to(x, (2**31, 2**31)).sum(), np.float32(1)),
            (lambda x: fnp.max(fnp.broadcast_to(x, (2**31, 2**31)) * 2), np.float32(1)),
            # 2**64 elements: the iteration count itself overflows int64
            (lambda x: fnp.broadcast_to(x, (2**32, 2**32)).sum(), np.int8(1)),
        ]
        for f, x in cases:
            try:
                fnad.jit(f)(x)
            except ResourceError as err:
                print("refused:", err)
            else:
                print("ran")
        """)
    lines = out.splitlines()
    assert len(lines) == 3 and all(line.startswith("refused:") for line in lines), out
    assert "(2147483648, 2147483648)" in lines[0] and "float32" in lines[0]
    assert str(2 ** 64) + " bytes" in lines[0]
    assert "(4294967296, 4294967296)" in lines[2] and str(2 ** 64) + " elements" in lines[2]


def test_an_allocation_larger_than_memory_is_refused(monkeypatch):
    monkeypatch.setattr(lowering, "PHYSICAL_MEMORY", 1 << 20)
    x = np.ones(1 << 19, np.float32)             # 2 MiB
    with pytest.raises(ResourceError, match=r"\(524288,\).*float32.*2097152 bytes"):
        fnad.jit(lambda x: x * 2)(x)
    # a fused reduction allocates only its result
    assert float(fnad.jit(lambda x: fnp.sum(x * 2))(x)) == 2 * x.size
    with pytest.raises(MemoryError):            # ResourceError is a MemoryError
        fnad.jit(lambda x: fnp.sin(x) + 1)(x)


def test_eager_behaviour_is_unchanged():
    one = np.float32(1)
    with pytest.raises(ValueError, match="too big") as err:    # numpy's own refusal
        fnp.broadcast_to(one, (2**31, 2**31))
    assert not isinstance(err.value, ResourceError)
    view = fnp.broadcast_to(np.int8(1), (2**31, 2**31))        # a view: no memory
    assert view.shape == (2**31, 2**31)
    x, y = operands(64)
    check(fnp.maximum(fnp.asarray(x), y) * 2 + 1, np.maximum(x, y) * 2 + 1)


# --------------------------------------------------------------------------- helpers

def _changed(module):
    real = disk_cache._module_source
    return lambda m: real(m) + (b"\n# changed\n" if m is module else b"")


SOURCE = "def kernel(in0, out0):\n    out0[()] = kernels.maximum_scalar(in0[()], 0.0)\n"


@pytest.mark.parametrize("helper", [elementwise, half, loop_linalg])
def test_a_changed_helper_makes_new_generated_modules(monkeypatch, tmp_path, helper):
    """Numba's cache keys machine code on the generated module's file alone: a changed
    helper (a new fnad version) must change the module names, of kernels and of the
    compiled loops calling them, and an unchanged one must keep them."""
    monkeypatch.setenv("FNAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(disk_cache, "_helper_digests", {})     # the sources as they are now
    kernel = njit.load_kernel(SOURCE).py_func.__module__
    loop = loops._module("VALUE = 1\n").__name__
    monkeypatch.setattr(disk_cache, "_helper_digests", {})
    assert njit.load_kernel(SOURCE).py_func.__module__ == kernel
    assert loops._module("VALUE = 1\n").__name__ == loop
    monkeypatch.setattr(disk_cache, "_helper_digests", {})
    monkeypatch.setattr(disk_cache, "_module_source", _changed(helper))
    new_kernel = njit.load_kernel(SOURCE)
    assert loops._module("VALUE = 1\n").__name__ != loop
    if helper is loop_linalg:       # kernels do not call it
        assert new_kernel.py_func.__module__ == kernel
        return
    assert new_kernel.py_func.__module__ != kernel
    out = np.empty((), np.float64)
    new_kernel(np.array(-3.0), out)     # the new module compiles and runs
    assert out[()] == 0.0


def test_unreadable_helper_source_never_reuses_a_module(monkeypatch):
    monkeypatch.setattr(disk_cache, "_helper_digests", {})
    monkeypatch.setattr(elementwise, "__file__", "/nonexistent/elementwise.py")
    first = disk_cache.helpers_digest(njit.HELPERS)
    monkeypatch.setattr(disk_cache, "_helper_digests", {})
    assert disk_cache.helpers_digest(njit.HELPERS) != first


@pytest.mark.cuda
def test_a_changed_helper_makes_new_cuda_kernel_modules(monkeypatch, tmp_path):
    pytest.importorskip("numba.cuda")
    if not fnad.devices("cuda"):
        pytest.skip("numba.cuda finds no GPU (nor simulator)")
    from fnad.backends.cuda import fused, scalar_functions
    monkeypatch.setenv("FNAD_CACHE_DIR", str(tmp_path))
    source = "def kernel(in0, out0):\n    out0[0] = kernels.maximum_scalar(in0[0], 0.0)\n"
    before = fused.load(source).py_func.__module__
    for helper in (scalar_functions, elementwise):
        monkeypatch.setattr(disk_cache, "_helper_digests", {})
        monkeypatch.setattr(disk_cache, "_module_source", _changed(helper))
        assert fused.load(source).py_func.__module__ != before


# --------------------------------------------------------------------------- blocked

def test_cheap_helpers_stay_in_one_fused_loop():
    """maximum, floor division, fmod (fnad's helpers) and abs are a few
    instructions: a large group of them is one fused loop, not blocks of numpy calls;
    logistic and exp call the math library, and are blocked. Either way: numpy's
    numbers, NaN and -0.0 included."""
    n = 4 * lowering.BLOCKED_MIN_ELEMENTS
    x = np.linspace(-5, 5, n).astype(np.float32)
    x[::97] = np.nan
    x[1::89] = -0.0
    cheap = [
        (lambda x: fnp.maximum(x, 0) * 2 + 1, lambda x: np.maximum(x, 0) * 2 + 1),
        (lambda x: fnp.minimum(x, -0.0) - x // 0.75, lambda x: np.minimum(x, -0.0) - x // 0.75),
        (lambda x: fnp.fmod(x, 1.5) + fnp.floor(fnp.abs(x)),
         lambda x: np.fmod(x, 1.5) + np.floor(np.abs(x))),
    ]
    for f, g in cheap:
        jf = fnad.jit(f)
        assert "work(start, stop)" not in jf.lower(x).as_text()
        for _ in range(2):
            np.testing.assert_array_equal(np.asarray(jf(x)), g(x))
            lowering.wait_for_compiles()
    heavy = fnad.jit(lambda x: fnad.nn.sigmoid(x) * 2 + fnp.exp(-x))
    assert "work(start, stop)" in heavy.lower(x).as_text()
    np.testing.assert_allclose(np.asarray(heavy(x)), 2 / (1 + np.exp(-x)) + np.exp(-x),
                               rtol=1e-6)


# --------------------------------------------------------------------------- cuda

@pytest.mark.cuda
@pytest.mark.parametrize("rank", [21, 64])
def test_high_rank_cuda_kernels(rank):
    if not fnad.devices("cuda"):
        pytest.skip("numba.cuda finds no GPU (nor simulator)")
    gpu = fnad.devices("cuda")[0]
    x, y = operands(rank, twos=2)       # the simulator runs a thread per element
    for f, g in [(lambda x, y: fnp.maximum(x, y) * 2 + 1, lambda x, y: np.maximum(x, y) * 2 + 1),
                 (lambda x, y: fnp.sum(x * y, axis=(0, rank - 1)),
                  lambda x, y: np.sum(x * y, axis=(0, rank - 1)))]:
        out = fnad.jit(f)(fnad.device_put(x, gpu), fnad.device_put(y, gpu))
        check(out, g(x, y))
