"""fnad's one dtype rule (fnad/dtypes.py): JAX's promotion lattice, Python scalars weak,
float64 never narrowed, and the x64 switch for the default dtypes.

The tables in docs/dtypes.md are generated from fnad by `render_tables` below (run
`python tests/test_dtypes.py` to rewrite them); a test checks the doc still says what
the code does, and the JAX tests check the code against jax.numpy in both x64 modes,
with the differences kept on purpose listed here and in the doc.
"""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import lax, random
from fnad.errors import DTypeError

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "dtypes.md"

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "bfloat16", "float32", "float64"]
DTYPES = [np.dtype(n) for n in NAMES]
SHORT = {"bool": "b", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
         "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
         "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}


@pytest.fixture(autouse=True)
def x64_restored():
    """Every test leaves the x64 flag as it found it (and JAX's, when imported)."""
    before = fnad.config.enable_x64
    jax = sys.modules.get("jax")
    jax_before = jax.config.jax_enable_x64 if jax is not None else None
    yield
    fnad.config.update("jax_enable_x64", before)
    jax = sys.modules.get("jax")
    if jax is not None and jax_before is not None:
        jax.config.update("jax_enable_x64", jax_before)


def _jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    return jax, jnp


def _short(dtype):
    return SHORT[np.dtype(dtype).name]


def _ones(dtype, n=3):
    return fnp.asarray(np.ones(n, dtype))


# --------------------------------------------------------------------------- the tables

# Per input dtype: what each family returns (fnad's functions run on a tiny array);
# every function named in a row is run, and they must agree.
FAMILIES = [
    ("exp, sin, sqrt, x / y", [fnp.exp, fnp.sin, fnp.sqrt, lambda x: x / x]),
    ("cbrt, hypot, heaviside", [fnp.cbrt, lambda x: fnp.hypot(x, x),
                                lambda x: fnp.heaviside(x, x)]),
    ("mean, var, std, median", [fnp.mean, fnp.var, fnp.std, fnp.median]),
    ("x * 2", [lambda x: x * 2]),
    ("x * 2.5", [lambda x: x * 2.5]),
    ("sum, prod, cumsum, cumprod", [fnp.sum, fnp.prod, fnp.cumsum, fnp.cumprod]),
    ("max, min, x * x", [fnp.max, fnp.min, lambda x: x * x]),
    ("x // y, x % y", [lambda x: x // x, lambda x: x % x]),
    ("x == y, x < y", [lambda x: x == x, lambda x: x < x]),
    ("argmax, argsort, count_nonzero", [fnp.argmax, fnp.argmin, fnp.argsort,
                                        fnp.count_nonzero, lambda x: fnp.nonzero(x)[0]]),
]

CREATION = [
    "fnp.asarray(1.0)", "fnp.asarray(1)", "fnp.asarray(True)", "fnp.asarray([1, 2])",
    "fnp.asarray([1, 2.5])", "fnp.asarray([np.int8(1), 2])",
    "fnp.asarray([np.int8(1), 2.5])", "fnp.asarray(np.float64(1.0))", "fnp.zeros(3)",
    "fnp.ones(3)", "fnp.eye(2)", "fnp.full(3, 7)", "fnp.full(3, 7.0)", "fnp.arange(3)",
    "fnp.arange(0.0, 1.0, 0.5)", "fnp.linspace(0, 1, 3)",
    "random.uniform(random.key(0), (2,))", "random.normal(random.key(0), (2,))",
    "random.randint(random.key(0), (2,), 0, 9)",
]


def _in_mode(x64, fn):
    before = fnad.config.enable_x64
    fnad.config.update("jax_enable_x64", x64)
    try:
        return fn()
    finally:
        fnad.config.update("jax_enable_x64", before)


def _cell(fn):
    try:
        return _short(fn().dtype)
    except (TypeError, DTypeError):
        return "error"


def _family_cell(fns, dtype):
    cells = {_cell(lambda: fn(_ones(dtype))) for fn in fns}
    assert len(cells) == 1, (fns, dtype, cells)     # the row's label groups them wrongly
    return cells.pop()


def _markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def render_tables():
    """The generated part of docs/dtypes.md, from fnad's own functions."""
    short = [SHORT[n] for n in NAMES]
    promotion = _markdown([""] + short, [
        [f"**{SHORT[a.name]}**"] + [_short(fnp.promote_types(a, b)) for b in DTYPES]
        for a in DTYPES])
    families = []
    for name, fns in FAMILIES:
        row = [name]
        for d in DTYPES:
            off = _in_mode(False, lambda: _family_cell(fns, d))
            on = _in_mode(True, lambda: _family_cell(fns, d))
            row.append(off if off == on else f"{off} / {on}")
        families.append(row)
    family_table = _markdown(["input dtype"] + short, families)
    creation = _markdown(["expression", "x64 off (default)", "x64 on"], [
        [f"`{expr}`"] + [_in_mode(x64, lambda: _cell(lambda: _evaluate(expr)))
                         for x64 in (False, True)]
        for expr in CREATION])
    return (f"### Binary operations on two arrays (both x64 modes)\n\n{promotion}\n\n"
            f"### Each family, per input dtype (x64 off / x64 on where they differ)\n\n"
            f"{family_table}\n\n"
            f"### New values: Python scalars and the creation functions\n\n{creation}\n")


def _evaluate(expr):
    return eval(expr, {"fnp": fnp, "np": np, "random": random})


BEGIN = "<!-- generated by tests/test_dtypes.py (python tests/test_dtypes.py): begin -->\n"
END = "<!-- generated: end -->"


def test_doc_tables_say_what_the_code_does():
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"{DOC} lost its generated-table markers"
    generated = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert generated.strip() == render_tables().strip(), (
        "docs/dtypes.md is out of date: run `python tests/test_dtypes.py`")


# --------------------------------------------------------------------------- against JAX

# fnad never narrows: with x64 off JAX has no 64-bit integers, so it promotes uint32 with
# a signed integer to int32; fnad gives int64 in both modes (JAX's x64 answer).
JAX_X64_OFF_DIFFERENCES = {(a, b): "int64" for a in ("uint32",)
                           for b in ("int8", "int16", "int32")}
JAX_X64_OFF_DIFFERENCES.update({(b, a): v for (a, b), v in list(JAX_X64_OFF_DIFFERENCES.items())})


@pytest.mark.parametrize("x64", [False, True])
def test_promotion_table_is_jaxs(x64):
    jax, jnp = _jax()
    jax.config.update("jax_enable_x64", x64)
    fnad.config.update("jax_enable_x64", x64)
    differences = {}
    for a in NAMES:
        for b in NAMES:
            ours = fnp.promote_types(a, b).name
            theirs = np.dtype(jnp.promote_types(a, b)).name
            if ours != theirs:
                differences[a, b] = ours
    assert differences == ({} if x64 else JAX_X64_OFF_DIFFERENCES)


def test_promotion_is_commutative_and_never_narrows():
    for a in DTYPES:
        assert fnp.promote_types(a, a) == a
        for b in DTYPES:
            ab = fnp.promote_types(a, b)
            assert ab == fnp.promote_types(b, a)
            for d in (a, b):
                if fnad.dtypes.is_float(ab):
                    assert not fnad.dtypes.is_float(d) or ab.itemsize >= d.itemsize
                    # the other 16-bit float holds neither's range or precision
                    assert not (fnad.dtypes.is_float(d) and ab.itemsize == d.itemsize == 2
                                and ab != d)
                elif d.kind in "iu":        # every value of d fits in ab
                    assert np.iinfo(ab).min <= np.iinfo(d).min
                    assert np.iinfo(ab).max >= np.iinfo(d).max


def test_result_type_of_several_arrays_is_jaxs():
    """The join of three dtypes is JAX's (x64 on), even where a pairwise fold would
    differ: uint64, int8 and float16 join at float16."""
    jax, jnp = _jax()
    jax.config.update("jax_enable_x64", True)
    assert fnp.result_type(fnp.uint64, fnp.int8, fnp.float16) == np.float16
    for a in NAMES:
        for b in NAMES:
            for c in NAMES:
                ours = fnp.result_type(a, b, c)
                assert ours == np.dtype(jnp.result_type(a, b, c)), (a, b, c, ours)


def _jax_value(jnp, dtype):
    return jnp.asarray(np.ones(3, dtype))


# The rows where fnad is JAX (the others differ on purpose: see docs/dtypes.md).
JAX_FAMILIES = {
    "exp, sin, sqrt, x / y": lambda jnp, x: jnp.exp(x),
    "cbrt, hypot, heaviside": lambda jnp, x: jnp.heaviside(x, x),
    "mean, var, std, median": lambda jnp, x: jnp.median(x),
    "x * 2": lambda jnp, x: x * 2,
    "x * 2.5": lambda jnp, x: x * 2.5,
    "max, min, x * x": lambda jnp, x: jnp.max(x),
    "x == y, x < y": lambda jnp, x: x == x,
    "argmax, argsort, count_nonzero": lambda jnp, x: jnp.argsort(x),
}


@pytest.mark.parametrize("x64", [False, True])
def test_families_and_weak_scalars_match_jax(x64):
    """Unary float functions, mean, weak Python scalars and comparisons give JAX's dtype
    for every input dtype JAX keeps in this mode (with x64 off it has no 64-bit types)."""
    jax, jnp = _jax()
    jax.config.update("jax_enable_x64", x64)
    fnad.config.update("jax_enable_x64", x64)
    checked = 0
    for name, fns in FAMILIES:
        if name not in JAX_FAMILIES:
            continue
        for d in DTYPES:
            if not x64 and d.itemsize == 8:
                continue
            ours = fns[0](_ones(d)).dtype
            theirs = np.dtype(JAX_FAMILIES[name](jnp, _jax_value(jnp, d)).dtype)
            assert ours == theirs, (name, d, ours, theirs)
            checked += 1
    assert checked >= 40


@pytest.mark.parametrize("x64", [False, True])
def test_creation_defaults_match_jax(x64):
    jax, jnp = _jax()
    jax.config.update("jax_enable_x64", x64)
    fnad.config.update("jax_enable_x64", x64)
    jrandom = jax.random
    for expr in CREATION:
        if "np.float64" in expr and not x64:
            continue        # fnad keeps float64 data float64; JAX without x64 narrows it
        ours = _evaluate(expr).dtype
        theirs = eval(expr, {"fnp": jnp, "np": np, "random": jrandom}).dtype
        assert ours == np.dtype(theirs), (expr, ours, theirs)


# --------------------------------------------------------------------------- the rule itself

def test_int_with_float_is_the_float_not_float64():
    # Why 3 (issue 10): numpy's table made this float64.
    out = fnp.zeros(3, fnp.float32) + fnp.asarray([1, 2, 3])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3])
    assert fnp.add(np.ones(2, np.int64), np.ones(2, np.float32)).dtype == np.float32
    assert fnp.add(np.ones(2, np.int8), np.ones(2, np.float16)).dtype == np.float16


def test_float64_is_never_narrowed():
    x64 = fnp.asarray(np.ones(3))
    for flag in (False, True):
        fnad.config.update("jax_enable_x64", flag)
        assert (x64 * 2.0).dtype == np.float64
        assert (x64 + fnp.ones(3, fnp.float32)).dtype == np.float64
        assert fnp.exp(x64).dtype == np.float64
        assert fnp.mean(x64).dtype == np.float64
        assert (fnp.ones(3, fnp.float32) * np.float64(2.0)).dtype == np.float64


@pytest.mark.parametrize("low", [fnp.float16, fnp.bfloat16, fnp.int32])
def test_an_array_made_from_a_python_scalar_promotes_alike_under_jit(low):
    """fnp.asarray(2.0) is weak: eagerly a float16 array times it stays float16; a jit
    argument made from it must do the same (it was traced as a strong float32)."""
    a, s = fnp.ones(3, low), fnp.asarray(2.0)
    f = lambda a, s: a * s       # noqa: E731
    eager = f(a, s)
    for _ in range(2):                          # the traced call and the fast path
        got = fnad.jit(f)(a, s)
        assert got.dtype == eager.dtype and np.array_equal(np.asarray(got), np.asarray(eager))
    strong = fnad.jit(f)(a, fnp.asarray(np.float32(2.0)))      # a strong float32: its own trace
    assert strong.dtype == np.float32 == f(a, fnp.asarray(np.float32(2.0))).dtype
    assert "~float32[]" in str(fnad.make_jaxpr(f)(a, s))


@pytest.mark.parametrize("fn", [fnp.linspace, fnp.logspace, fnp.geomspace])
def test_spaced_points_keep_float64_bounds(fn):
    """numpy float64 bounds give float64 points, as numpy (they gave float32); Python
    numbers give the default float, as JAX."""
    low, high = np.array([1.0, 2.0]), np.array(3.0)
    want = fn(low, high, 5, axis=1) if fn is fnp.linspace else fn(low[0], high, 5)
    ref = np.linspace(low, high, 5, axis=1) if fn is fnp.linspace else \
        getattr(np, fn.__name__)(low[0], high, 5)
    assert want.dtype == np.float64
    np.testing.assert_allclose(np.asarray(want), ref, rtol=1e-14)
    assert fn(1, 3, 4).dtype == np.float32
    assert fn(np.float32(1), 3, 4).dtype == np.float32


def test_unsigned_with_signed_widens():
    assert fnp.promote_types(fnp.uint8, fnp.int8) == np.int16
    assert fnp.promote_types(fnp.uint32, fnp.int32) == np.int64
    assert fnp.promote_types(fnp.uint64, fnp.int64) == np.float64
    out = fnp.asarray(np.array([2**32 - 1], np.uint32)) + fnp.asarray(np.array([-1], np.int32))
    assert out.dtype == np.int64 and int(out[0]) == 2**32 - 2


@pytest.mark.parametrize("x64", [False, True])
def test_python_scalars_are_weak(x64):
    fnad.config.update("jax_enable_x64", x64)
    dflt_f = np.float64 if x64 else np.float32
    dflt_i = np.int64 if x64 else np.int32
    x32, x16 = fnp.ones(3, fnp.float32), fnp.ones(3, fnp.float16)
    i8, b = _ones(np.int8), _ones(np.bool_)
    assert (x32 * 2.0).dtype == np.float32 and (2.0 * x32).dtype == np.float32
    assert (x16 + 1.5).dtype == np.float16
    assert (i8 + 3).dtype == np.int8
    assert (i8 * 2.5).dtype == dflt_f
    assert (_ones(np.uint64) * 2.5).dtype == dflt_f
    assert (b + 1).dtype == dflt_i
    assert (b + 1.0).dtype == dflt_f
    assert (b & True).dtype == np.bool_
    assert fnp.where(x32 > 0, x32, 0.0).dtype == np.float32
    assert fnp.result_type(1, 2.0) == dflt_f
    assert fnp.result_type(int) == dflt_i
    assert fnp.result_type(x16, 3.0) == np.float16
    with pytest.raises(OverflowError):
        i8 + 1000       # as numpy 2 and JAX: a Python int that does not fit is an error


def test_weak_arrays_promote_like_their_scalar():
    w = fnp.asarray(0.5)
    assert w.weak_type and not fnp.zeros(()).weak_type
    assert not fnp.asarray(0.5, fnp.float32).weak_type
    assert not fnp.asarray(True).weak_type
    assert fnp.asarray(2).weak_type
    assert (w + fnp.ones(2, fnp.float16)).dtype == np.float16
    assert (fnp.asarray(2) + _ones(np.int8)).dtype == np.int8
    assert not (w * 2).weak_type            # results are strongly typed
    u8 = _ones(np.uint8)
    assert (fnp.asarray(255) + u8).dtype == np.uint8
    with pytest.raises(OverflowError):
        fnp.asarray(300) + u8               # as the Python int 300 would: no wrap-around
    with pytest.raises(OverflowError):
        fnp.asarray(-1) * u8
    fnad.config.update("jax_enable_x64", True)
    w64 = fnp.asarray(0.5)
    assert w64.dtype == np.float64
    assert (w64 * fnp.ones(2, fnp.float32)).dtype == np.float32


def test_mean_of_bool_is_the_default_float():
    # Why 3 (issue 10): this was float16, and accuracies came out rounded (0.96386...).
    labels = np.arange(1000) % 83
    acc = fnp.mean(fnp.asarray(labels) != 2)
    assert acc.dtype == np.float32
    assert abs(float(acc) - np.mean(labels != 2)) < 1e-7
    assert fnp.var(fnp.asarray([True, False, True, True])).dtype == np.float32
    assert fnp.std(_ones(np.int32)).dtype == np.float32
    assert fnp.average(_ones(np.int16)).dtype == np.float32
    fnad.config.update("jax_enable_x64", True)
    assert fnp.mean(fnp.asarray(labels) == 2).dtype == np.float32       # as JAX: bool -> f32
    assert fnp.mean(fnp.asarray(labels)).dtype == np.float64            # int64 -> f64
    jitted = fnad.jit(lambda v: fnp.mean(v == 2))(fnp.asarray(labels))
    assert jitted.dtype == np.float32 and abs(float(jitted) - np.mean(labels == 2)) < 1e-7


def test_integer_division_and_inexact_functions():
    i = fnp.asarray(np.array([7, -7, 5], np.int32))
    assert (i // 2).dtype == np.int32
    assert (i / 2).dtype == np.float32
    np.testing.assert_allclose(np.asarray(i / 2), [3.5, -3.5, 2.5])
    assert (i % 3).dtype == np.int32
    assert fnp.sqrt(_ones(np.uint64)).dtype == np.float32
    fnad.config.update("jax_enable_x64", True)
    assert fnp.sqrt(_ones(np.uint64)).dtype == np.float64
    assert fnp.sqrt(_ones(np.uint32)).dtype == np.float32


# --------------------------------------------------------------------------- the x64 switch

def test_config_x64_switch_and_jax_spelling():
    assert fnad.config.enable_x64 is False or fnad.config.enable_x64 is True
    fnad.config.update("jax_enable_x64", True)
    assert fnad.config.enable_x64 and fnad.config.jax_enable_x64
    fnad.config.update("enable_x64", False)
    assert not fnad.config.jax_enable_x64
    fnad.config.jax_enable_x64 = True
    assert fnad.config.enable_x64
    fnad.config.enable_x64 = False
    assert fnp.asarray(1.0).dtype == np.float32


@pytest.mark.parametrize("var", ["JAX_ENABLE_X64", "FNAD_ENABLE_X64"])
def test_x64_from_the_environment(var):
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64",
                                                           "FNAD_ENABLE_X64")}
    code = ("import fnad, fnad.numpy as fnp; "
            "print(fnad.config.enable_x64, fnp.asarray(1.0).dtype, fnp.arange(2).dtype)")
    for value, expected in (("1", "True float64 int64"), ("false", "False float32 int32")):
        out = subprocess.run([sys.executable, "-c", code], env={**env, var: value},
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected
    out = subprocess.run([sys.executable, "-c", code], env={**env, var: "maybe"},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and var in out.stderr


def test_creation_defaults_follow_x64():
    for x64, f, i in ((False, np.float32, np.int32), (True, np.float64, np.int64)):
        fnad.config.update("jax_enable_x64", x64)
        for expr in CREATION:
            got = _evaluate(expr).dtype
            if "np.int8(1), 2]" in expr:
                assert got == np.int8, expr
            elif "True" in expr:
                assert got == np.bool_, expr
            elif "np.float64" in expr:
                assert got == np.float64, expr
            elif re.search(r"1\.0|2\.5|7\.0|0\.5|linspace|uniform|normal|zeros|ones|eye", expr):
                assert got == f, expr
            else:
                assert got == i, expr
    fnad.config.update("jax_enable_x64", False)
    with pytest.raises(OverflowError):
        fnp.asarray([1, 2**40])          # would wrap silently as int32
    fnad.config.update("jax_enable_x64", True)
    assert int(fnp.asarray([1, 2**40])[1]) == 2**40


def test_jit_retraces_when_x64_changes():
    f = fnad.jit(lambda x: x * 2.5 + fnp.zeros(x.shape))
    i = _ones(np.int32)
    assert f(i).dtype == np.float32
    assert f(i).dtype == np.float32             # the fast path
    fnad.config.update("jax_enable_x64", True)
    assert f(i).dtype == np.float64
    assert f(i).dtype == np.float64
    fnad.config.update("jax_enable_x64", False)
    assert f(i).dtype == np.float32


# --------------------------------------------------------------------------- carries

def _xs64():
    return np.linspace(0.0, 1.0, 7)         # numpy data: float64


@pytest.mark.parametrize("x64", [False, True])
def test_scan_with_a_weak_initial_carry(x64):
    # Why 10 (issue 10): a carry made from a Python float meets float64 data.
    fnad.config.update("jax_enable_x64", x64)
    xs = _xs64()

    def step(carry, x):
        carry = carry + x
        return carry, carry * 2

    carry, ys = lax.scan(step, fnp.asarray(0.0), fnp.asarray(xs))
    assert carry.dtype == np.float64 and ys.dtype == np.float64
    np.testing.assert_allclose(float(carry), xs.sum(), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(ys), 2 * np.cumsum(xs), rtol=1e-15)
    carry, _ = fnad.jit(lambda xs: lax.scan(step, fnp.asarray(0.0), xs))(fnp.asarray(xs))
    assert carry.dtype == np.float64
    out = lax.fori_loop(0, 7, lambda i, c: c + fnp.asarray(xs)[i], fnp.asarray(0.0))
    assert out.dtype == np.float64
    np.testing.assert_allclose(float(out), xs.sum(), rtol=1e-15)
    out = lax.while_loop(lambda c: c < 3.0, lambda c: c + fnp.asarray(xs)[1],
                         fnp.asarray(0.0))
    assert out.dtype == np.float64


def test_weak_carry_keeps_its_kind_and_strong_carry_is_checked():
    xs = fnp.asarray(_xs64())
    with pytest.raises(TypeError, match="jax_enable_x64"):
        # fnp.zeros is strongly typed float32: it does not silently become float64
        lax.scan(lambda c, x: (c + x, None), fnp.zeros(()), xs)
    with pytest.raises(TypeError, match="carry"):
        # a weak float carry never becomes an integer one (JAX raises too)
        lax.fori_loop(0, 3, lambda i, c: i, fnp.asarray(0.0))
    # a weak int carry may become a float one
    out = lax.fori_loop(0, 3, lambda i, c: c + 0.5 * xs[i], fnp.asarray(0))
    assert out.dtype == np.float64


@pytest.mark.parametrize("x64", [False, True])
def test_scan_example_matches_jax(x64):
    jax, jnp = _jax()
    jax.config.update("jax_enable_x64", x64)
    fnad.config.update("jax_enable_x64", x64)
    xs = _xs64()

    def step(carry, x):
        return carry * 0.5 + x, carry

    ours, _ = lax.scan(step, fnp.asarray(0.0), fnp.asarray(xs))
    theirs, _ = jax.lax.scan(step, jnp.asarray(0.0), jnp.asarray(xs))
    tol = 1e-15 if x64 else 1e-6        # JAX without x64 runs it in float32
    np.testing.assert_allclose(float(ours), float(theirs), rtol=tol)


# --------------------------------------------------------------------------- JAX-style code

def test_conv_and_cond_accept_jax_style_int_float_mixes():
    # Why 3 (issue 10): int + float32 was float64, which lax.conv / lax.cond then rejected.
    x = fnp.zeros((1, 1, 5), fnp.float32) + fnp.asarray(np.arange(5).reshape(1, 1, 5))
    w = fnp.ones((1, 1, 2), fnp.float32)
    out = lax.conv(x, w, (1,), "VALID")
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out)[0, 0], [1, 3, 5, 7])
    offsets = fnp.asarray([1, 2, 3])
    v = fnp.ones(3, fnp.float32)
    out = lax.cond(True, lambda v: v * 2, lambda v: v + offsets, v)
    assert out.dtype == np.float32
    out = lax.cond(fnp.asarray(0), lambda v: v * 2, lambda v: v + offsets, v)
    np.testing.assert_allclose(np.asarray(out), [2, 3, 4])
    g = fnad.grad(lambda v: fnp.sum((v + offsets) ** 2))(v)
    assert g.dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), [4, 6, 8])


if __name__ == "__main__":
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(head + BEGIN + "\n" + render_tables() + "\n" + END + tail)
    print(f"rewrote the generated tables in {DOC}")
