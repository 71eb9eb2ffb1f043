"""Differential tests over fnad's whole public API.

Every public callable of the modules in MODULES is either a case in
tests/differential_cases.py or has a reason in EXCLUDED; test_every_public_callable_is_covered
fails otherwise, so a new function is checked from the day it is added. Each case runs,
for every dtype it accepts, in each mode:

  eager    every input set (special values, 0-d, empty, broadcast, non-contiguous)
           against numpy in float64, result dtype against the documented rule
  jit      the special-values input set through jit: the first call (numpy kernels
           while Numba compiles in the background) and the compiled call
  vmap     a batch of three along a new leading axis against a Python loop
  jvp/vjp  float inputs: against central differences of the float64 numpy reference
  jax      when JAX is installed: dtype and values against JAX in x64 and default mode

Values must agree within a few units of the result dtype's epsilon (scaled by the
magnitude of the result, or of sum(|x|) for reductions); integers, booleans, NaN, +-inf
and -0.0 exactly. The dtype rule is JAX's promotion lattice with fnad's one deliberate
difference (64-bit inputs never narrow), computed from JAX in x64 mode when JAX is
installed and from rule_dtype otherwise.

A failing case that someone is fixing is listed in KNOWN_FAILURES (strict xfail), so the
suite stays green and says so loudly the day the fix lands. The sweep over the
remaining dtypes under jit runs with the `slow_sweep` marker.
"""
import collections
import dataclasses
import inspect
import types
import warnings

import numpy as np
import pytest

from fnad.dtypes import finfo as dfinfo, kind_of as dkind
import fnad
import fnad.lax
import fnad.nn
import fnad.numpy as fnp
import fnad.numpy.linalg
import fnad.random
import fnad.scipy.special
from fnad.backends.cpu import lowering

import differential_calls
import differential_cases
import differential_library
import differential_shapes
from differential_cases import BF16, BOOL, F16, F32, F64, I32, I64

CASES = differential_cases.CASES + differential_calls.CASES + differential_library.CASES
CASES += differential_shapes.CASES
RANDOM_CASES = differential_library.RANDOM_CASES

try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.special  # noqa: F401
    J = types.SimpleNamespace(numpy=jnp, linalg=jnp.linalg, lax=jax.lax, nn=jax.nn,
                              special=jax.scipy.special, random=jax.random)
except ImportError:
    jax = J = None

MODULES = {"numpy": fnp, "linalg": fnad.numpy.linalg, "lax": fnad.lax, "nn": fnad.nn,
           "special": fnad.scipy.special, "random": fnad.random}

# --------------------------------------------------------------------------- exclusions

# Public callables that no case covers, each with the reason. One table for the suite.
EXCLUDED = {
    "numpy.as_operand": "internal helper (operand conversion) exported by accident",
    "numpy.normalize_axes": "internal helper (axis checking) exported by accident",
    "numpy.normalize_axis": "internal helper (axis checking) exported by accident",
    "numpy.promote": "internal helper (dtype promotion of operands) exported by accident",
    "numpy.promote_inexact": "internal helper exported by accident",
    "numpy.promote_pair": "internal helper exported by accident",
    "numpy.broadcast_along": "internal helper (no numpy or JAX counterpart)",
    "numpy.take_range": "internal helper (no numpy or JAX counterpart)",
    "nn.BatchNorm": "stateful layer (init_state, batch statistics); tests/test_nn.py checks "
                    "it against numpy; no differential case yet",
    "lax.fft": "tests/test_fft.py checks it and fnad.numpy.fft over it in every mode "
               "against numpy's pocketfft and JAX",
    "numpy.einsum_path": "returns a contraction plan, not an array; "
                         "tests/test_numpy_shapes_more.py checks it against numpy's",
    "numpy.iscomplexobj": "a dtype query returning a Python bool; tests/test_complex.py",
    "numpy.isrealobj": "a dtype query returning a Python bool; tests/test_complex.py",
    "lax.real": "complex operands only; tests/test_complex.py checks it in every mode",
    "lax.imag": "complex operands only; tests/test_complex.py checks it in every mode",
    "lax.conj": "complex operands only; tests/test_complex.py checks it in every mode",
    "lax.complex": "makes complex values (the suite's inputs are real); "
                   "tests/test_complex.py checks it in every mode",
    "linalg.svd": "factors unique only up to signs; tests/test_linalg_more.py checks "
                  "invariants and derivatives in every mode (against JAX too)",
    "linalg.eigh": "eigenvectors unique only up to signs; tests/test_linalg_more.py",
    "linalg.qr": "factors unique only up to signs; tests/test_linalg_more.py",
    "linalg.eig": "complex results, no derivative; tests/test_linalg_more.py",
    "linalg.eigvals": "complex results, no derivative; tests/test_linalg_more.py",
    "linalg.lstsq": "a tuple with the integer rank; tests/test_linalg_more.py checks it "
                    "against numpy",
    "linalg.matrix_rank": "an integer count; tests/test_linalg_more.py checks it against "
                          "numpy",
}

# The special functions' references are scipy's (not installed in CI) or need more
# digits than float64 numpy: their own tests hold closed forms, identities, 40-digit
# values and scipy (when installed), finite-difference derivatives, and jit (bit for bit
# with eager) and vmap.
_SPECIAL = ("tests/test_scipy_special.py checks it against closed forms, identities and "
            "scipy, its derivatives against finite differences, jit and vmap")
EXCLUDED.update({f"{module}.{name}": _SPECIAL for module, names in [
    ("lax", "bessel_i0e bessel_i1e betainc digamma erf_inv erfc igamma igamma_grad_a igammac "
            "lgamma polygamma zeta"),
    ("special", "bernoulli beta betainc betaln boxcox boxcox1p comb dawsn digamma entr erfcx "
                "erfinv exp1 expi expn factorial fresnel gamma gammainc gammaincc gammaln "
                "gammasgn i0 i0e i1 i1e kl_div log_ndtr loggamma multigammaln ndtr ndtri poch "
                "polygamma psi rel_entr sici spence zeta")] for name in names.split()})
EXCLUDED.update({f"lax.{name}": "tests/test_lax_composites.py checks it against numpy, hand "
                  "values and jax.lax" for name in __import__("fnad.lax.composites").lax.
                  composites.__all__})
EXCLUDED.update({f"random.{name}": "samplers: tests/test_random_distributions.py checks each "
                  "sample against its exact distribution (KS distance), moments, jit and vmap"
                  for name in "ball beta binomial cauchy chisquare clone dirichlet "
                  "double_sided_maxwell f gamma generalized_normal geometric laplace loggamma "
                  "logistic lognormal maxwell multinomial multivariate_normal orthogonal "
                  "pareto poisson rademacher rayleigh t triangular wald weibull_min".split()})
EXCLUDED["nn.dot_product_attention"] = ("tests/test_nn_jax_api.py checks it against loops "
                                        "written out, finite differences, jit and JAX")
EXCLUDED.update({f"nn.{name}": "tests/test_nn_jax_api.py::test_glu_log1mexp_logmeanexp checks "
                  "it against float64 formulas at both ends of its range" for name in
                  ("glu", "log1mexp", "logmeanexp")})
EXCLUDED["numpy.from_dlpack"] = ("an exchange-protocol constructor, no arithmetic; "
                                 "tests/test_jax_api.py checks zero-copy round trips")
EXCLUDED["lax.dot"] = ("lax.dot_general's matrix-product form; tests/test_jax_api.py checks it "
                       "against numpy with precision and preferred_element_type")
EXCLUDED.update({f"lax.{name}": "a collective over a named axis (needs one bound): "
                  "tests/test_collectives.py checks it under vmap(axis_name=) against numpy "
                  "and finite differences, tests/test_distributed.py over MPI processes"
                  for name in ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter",
                               "ppermute", "axis_index", "axis_size")})

# Public callables checked by a focused test below rather than a case: name -> test.
FOCUSED = {
    "numpy.promote_types": "test_dtype_functions_follow_the_lattice",
    "numpy.result_type": "test_dtype_functions_follow_the_lattice",
    "numpy.issubdtype": "test_dtype_functions_follow_the_lattice",
    "random.threefry2x32": "test_threefry_known_answer",
    "numpy.finfo": "tests/test_bfloat16.py::test_finfo_knows_bfloat16_and_is_numpys_for_the_others",
}

# Defects being fixed (details and repros: the session's diff_failures.md). Owner first.
# (function or case id, or "=" and one case id, dtypes ("*" or names), modes) -> reason.
# Strict xfail: the day a defect is fixed its entries fail until they are removed here.
KNOWN_FAILURES = {}

# --------------------------------------------------------------------------- bookkeeping

CHECKED = collections.Counter()     # mode -> (function, dtype) cases that passed


def public_callables(module):
    """The functions a user can call from `module`: no classes, modules, dtypes,
    constants, private names or typing constructs (annotations' ArrayLike, cast)."""
    for name in dir(module):
        obj = getattr(module, name)
        if name.startswith("_") or inspect.ismodule(obj) or isinstance(obj, (type, np.dtype)):
            continue
        if "typing" in (type(obj).__module__, getattr(obj, "__module__", None)) \
                or isinstance(obj, types.GenericAlias):
            continue
        if callable(obj):
            yield name, obj


def test_every_public_callable_is_covered():
    covered = {(c.module, c.name) for c in CASES + RANDOM_CASES}
    covered |= {tuple(name.split(".")) for name in FOCUSED}
    covered_objects = {id(getattr(MODULES[m], n)) for m, n in covered}
    excluded_objects = {id(getattr(MODULES[q.split(".")[0]], q.split(".")[1]))
                        for q in EXCLUDED}
    missing = []
    for key, module in MODULES.items():
        for name, obj in public_callables(module):
            qualified = f"{key}.{name}"
            if (key, name) in covered or qualified in EXCLUDED:
                continue
            # a re-export (numpy.linalg.matmul is numpy.matmul) follows the original
            if id(obj) in covered_objects or id(obj) in excluded_objects:
                continue
            missing.append(qualified)
    assert not missing, ("public callables with no differential case and no entry in "
                         f"EXCLUDED: {', '.join(sorted(missing))}")


def test_exclusions_and_known_failures_are_current():
    public = {f"{k}.{n}" for k, m in MODULES.items() for n, _ in public_callables(m)}
    stale = [name for name in EXCLUDED if name not in public]
    assert not stale, f"EXCLUDED names no public callable: {stale}"
    ids = {c.id for c in CASES + RANDOM_CASES} | {f"{c.module}.{c.name}" for c in CASES}
    unknown = [key for key in KNOWN_FAILURES if key[0] not in ids]
    assert not unknown, f"KNOWN_FAILURES names no case: {unknown}"


def test_cases_are_unique():
    counts = collections.Counter(c.id for c in CASES)
    assert not [i for i, n in counts.items() if n > 1]


# --------------------------------------------------------------------------- dtype rule

_LATTICE = {BOOL: 0, I32: 1, I64: 2, F16: 3, F32: 4, F64: 5}


def promote(*dtypes):
    """JAX's lattice over fnad's test dtypes: bool < ints < floats, wider wins; an
    integer with a float gives that float (int32 with float32 is float32)."""
    dtypes = [np.dtype(d) for d in dtypes]
    ints = [d for d in dtypes if dkind(d) in "iu"]
    floats = [d for d in dtypes if dkind(d) == "f"]
    if floats:
        return max(floats, key=lambda d: d.itemsize)
    if ints:
        return max(ints, key=lambda d: d.itemsize)
    return BOOL


def default(kind, wide):
    return {"f": F64 if wide else F32, "i": I64 if wide else I32}[kind]


def rule_dtype(out, args, data=()):
    """The documented result dtype of a case (fnad default mode, x64 off): `out` is the
    case's rule, args the call's arguments (Python scalars are weak: they follow the
    arrays unless their kind is higher, and then take the default dtype)."""
    if isinstance(out, np.dtype):
        return out
    if data:                # index and mask arguments do not take part
        args = [a for i, a in enumerate(args) if i in data]
    arrays = [np.asarray(a).dtype for a in args if isinstance(a, np.ndarray)]
    scalars = [a for a in args if not isinstance(a, (np.ndarray, np.generic))]
    base = promote(*arrays) if arrays else None
    for s in scalars:
        kind = "f" if isinstance(s, float) else "i" if isinstance(s, int) and not \
            isinstance(s, bool) else "b"
        if base is None or _kind_rank(kind) > _kind_rank(dkind(base)):
            base = BOOL if kind == "b" else default(kind, False)
    if out == "same":
        return base
    if out == "float":
        return base if dkind(base) == "f" else default("f", False)
    if out == "acc":        # sums and products of bools and integers: 64 bits, as numpy
        return I64 if dkind(base) in "bi" else np.dtype(np.uint64) if dkind(base) == "u" else base
    if out == "bool":
        return BOOL
    if out == "index":
        return default("i", False)
    raise ValueError(out)


def output_rule_dtype(case, args, i):
    """The documented dtype of output i: a case whose outputs differ gives one rule per
    output, where an int names the argument whose dtype that output keeps
    (sort_key_val's keys and values)."""
    out = case.out[i] if isinstance(case.out, tuple) else case.out
    if isinstance(out, int) and not isinstance(out, bool):
        return np.asarray(args[out]).dtype
    return rule_dtype(out, args, case.data_args)


def _kind_rank(kind):
    return {"b": 0, "i": 1, "u": 1, "f": 2}[kind]


def narrow_to_default(jax_dtype, args):
    """JAX in x64 mode gives fnad's dtypes, except where its 64 bits come from x64's
    defaults: fnad keeps a float64 (int64) result only when a float64 (int64) array
    went in, and otherwise gives the 32-bit default, as JAX does with x64 off."""
    jax_dtype = np.dtype(jax_dtype)
    if jax_dtype.itemsize != 8 or dkind(jax_dtype) not in "iuf":
        return jax_dtype
    if any(isinstance(a, np.ndarray) and a.dtype == jax_dtype for a in args):
        return jax_dtype
    return np.dtype(dkind(jax_dtype) + "4")


def run_jax(case, args, x64):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with jax.enable_x64(x64):
            out = case.jax(J)(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                for a in args])
            return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out)]


def jax_result_dtypes(case, args):
    """The dtypes JAX (x64) gives, from an abstract evaluation: nothing compiles."""
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def call(*traced):
        full = list(args)
        for i, t in zip(arrays, traced):
            full[i] = t
        return case.jax(J)(*full)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with jax.enable_x64(True):
            out = jax.eval_shape(call, *[jax.ShapeDtypeStruct(args[i].shape, args[i].dtype)
                                         for i in arrays])
    return [leaf.dtype for leaf in jax.tree_util.tree_leaves(out)]


_expected = {}


def expected_dtypes(case, inputs):
    """The result dtype of each output leaf: from JAX (x64, narrowed) when installed,
    else None (the case's rule decides). Index results are always the default int, and
    sums and products of integers 64-bit (fnad's documented difference from JAX)."""
    if J is None or case.jax is None or case.out in ("index", "acc") or \
            isinstance(case.out, np.dtype):
        return None
    key = (case.id,) + tuple(a.dtype.str if isinstance(a, np.ndarray) else type(a)
                             for a in inputs.args)
    if key not in _expected:
        try:
            _expected[key] = [narrow_to_default(d, inputs.args)
                              for d in jax_result_dtypes(case, inputs.args)]
        except Exception:           # JAX rejects it: fnad's own rule decides
            _expected[key] = None
    return _expected[key]


# --------------------------------------------------------------------------- comparing

def leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in leaves(o)]
    return [out]


def float64_args(case, args, result_dtype):
    """The reference's arguments: floats in float64; bool/int arguments, when the
    result is float, converted to that float first (as fnad and JAX do: int32 2**31-1
    becomes float32 2**31) and then to float64."""
    if case.native_ref:
        return tuple(args)
    out = []
    data = case.data_args or range(len(args))
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and dkind(a.dtype) == "f":
            out.append(a.astype(np.float64))
        elif (isinstance(a, np.ndarray) and dkind(result_dtype) == "f" and case.float_ref_args
              and dkind(a.dtype) in "biu" and i in data):
            out.append(a.astype(result_dtype).astype(np.float64))
        else:
            out.append(a)
    return tuple(out)


def reference(case, args, result_dtype=F64):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return leaves(case.ref(*float64_args(case, args, result_dtype)))


def tolerance_scale(case, args, ref_leaves):
    if case.scale == "abs":         # sums: error bound relative to sum(|x|)
        # in float64: |iinfo(int64).min| does not fit int64 (np.abs keeps it negative)
        absolute = tuple(np.abs(a.astype(np.float64)) if isinstance(a, np.ndarray)
                         and dkind(a.dtype) in "fi" else a for a in args)
        return [np.abs(np.asarray(r, np.float64)) for r in reference(case, absolute)]
    return [np.abs(np.asarray(r, np.float64)) for r in ref_leaves]


def assert_matches(got, want, dtype, case, scale, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, numpy {want.shape}"
    if dkind(dtype) in "biu" or dkind(got.dtype) in "biu":
        with np.errstate(all="ignore"):
            want = want.astype(got.dtype)
        mismatch = got != want
        if dkind(want.dtype) == "f":
            mismatch &= ~(np.isnan(got) & np.isnan(want))
        assert not mismatch.any(), (f"{what}: {int(mismatch.sum())} of {got.size} differ\n"
                                    f"got  {got[mismatch][:8]}\nwant {want[mismatch][:8]}")
        return
    with np.errstate(all="ignore"):
        w = want.astype(got.dtype).astype(np.float64)
    g = got.astype(np.float64)
    eps = dfinfo(got.dtype).eps
    scale = np.maximum(np.broadcast_to(scale, w.shape), 1.0)
    nan_ok = np.isnan(g) == np.isnan(w)
    both = ~np.isnan(w) & ~np.isnan(g)
    inf = both & (np.isinf(w) | np.isinf(g))
    inf_ok = ~inf | (g == w)
    finite = both & ~inf
    with np.errstate(all="ignore"):
        close = ~finite | (np.abs(g - w) <= case.tol * eps * scale)
    zero_ok = np.ones(g.shape, bool)
    if case.signed_zero:
        zero = (g == 0) & (w == 0)
        zero_ok = ~zero | (np.signbit(g) == np.signbit(w))
    bad = ~(nan_ok & inf_ok & close & zero_ok)
    assert not bad.any(), (
        f"{what}: {int(bad.sum())} of {g.size} values differ (tol {case.tol} eps of "
        f"{got.dtype})\ngot  {got[bad][:8]}\nwant {w[bad][:8]}")


def check_call(case, inputs, run, what):
    """run(args) -> fnad's result; compared with numpy leaf by leaf, dtype included."""
    expected = expected_dtypes(case, inputs)
    args = inputs.args
    try:
        ref = reference(case, args, expected[0] if expected
                        else output_rule_dtype(case, args, 0))
    except Exception as ref_error:          # numpy rejects it: fnad must raise too
        with pytest.raises(Exception):
            run(args)
        return ref_error
    got = leaves(run(args))
    assert len(got) == len(ref), f"{what}: {len(got)} outputs, numpy {len(ref)}"
    scales = tolerance_scale(case, args, ref)
    for i, (g, r, s) in enumerate(zip(got, ref, scales)):
        g = np.asarray(g)
        want_dtype = expected[i] if expected else output_rule_dtype(case, args, i)
        label = f"{case.id} {what} on {inputs.label} inputs, output {i}"
        assert g.dtype == want_dtype, f"{label}: dtype {g.dtype}, rule says {want_dtype}"
        assert_matches(g, r, want_dtype, case, s, label)
    return None


def case_params(mode, dtypes=None):
    for case in CASES:
        if mode in ("jit", "vmap") and not getattr(case, mode):
            continue
        for dtype in case.dtypes:
            if dtypes is not None and dtype not in dtypes:
                continue
            if mode in ("jvp", "vjp") and (dkind(dtype) != "f" or not case.grad):
                continue
            reason = known_failure(case, dtype, mode)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(case, dtype, id=f"{case.id}-{dtype.name}", marks=marks)


def known_failure(case, dtype, mode):
    for (name, dtypes, modes), reason in KNOWN_FAILURES.items():
        # "=id" names one case exactly (not the function's other settings)
        names = (case.id,) if name.startswith("=") else (case.id, f"{case.module}.{case.name}")
        if name.lstrip("=") in names and mode in modes.split() and (
                dtypes == "*" or dtype.name in dtypes.split()):
            return reason
    return None


def case_inputs(case, dtype):
    return [i for i in case.inputs(dtype) if i.label not in case.skip]


def count(mode, case, dtype):
    CHECKED[mode] += 1


# --------------------------------------------------------------------------- modes

def as_fnad(args):
    return tuple(fnp.asarray(a) if isinstance(a, np.ndarray) and i % 2 else a
                 for i, a in enumerate(args))


def bfloat16_params(mode):
    """Every case that accepts float16, in bfloat16 (the same input sets, rounded to
    bfloat16; results against the float64 reference within the case's tolerance in
    bfloat16's epsilon)."""
    for case in CASES:
        if F16 not in case.dtypes or (mode == "jit" and not case.jit):
            continue
        reason = known_failure(case, BF16, mode)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(case, BF16, id=f"{case.id}-bfloat16", marks=marks)


@pytest.mark.parametrize("case,dtype", list(bfloat16_params("eager")))
def test_eager_bfloat16(case, dtype):
    test_eager(case, dtype)


@pytest.mark.slow_sweep
@pytest.mark.parametrize("case,dtype", list(bfloat16_params("jit")))
def test_jit_bfloat16(case, dtype):
    _check_jit(case, dtype)


@pytest.mark.parametrize("case,dtype", list(case_params("eager")))
def test_eager(case, dtype):
    for inputs in case_inputs(case, dtype):
        # numpy arrays as given (views included) and as fnad Arrays, alternating
        check_call(case, inputs, lambda args: case.fn(*as_fnad(args)), "eager")
    count("eager", case, dtype)


def _jit_inputs(case, dtype):
    sets = case_inputs(case, dtype)
    return sets[:1] + [s for s in sets[1:] if s.label == "long"]


def _check_jit(case, dtype):
    """The first input set (special values), and the long one where there is one (the
    accumulation of reductions), through one jitted function: each shape's first call
    runs while Numba compiles in the background, the next call runs compiled code."""
    jitted = fnad.jit(case.fn)
    before, fnad.config.background_compile = fnad.config.background_compile, True
    try:
        for inputs in _jit_inputs(case, dtype):
            check_call(case, inputs, lambda args: jitted(*args), "jit first call")
            lowering.wait_for_compiles()
            check_call(case, inputs, lambda args: jitted(*args), "jit compiled call")
    finally:
        fnad.config.background_compile = before
    count("jit first call", case, dtype)
    count("jit compiled call", case, dtype)


# One jit dtype per function in the default run keeps the cold-cache compile bill small;
# the sweep covers the rest.
def _jit_default_dtypes(case):
    for preferred in (F32, I32, BOOL):
        if preferred in case.dtypes:
            return (preferred,)
    return case.dtypes[:1]


JIT_DEFAULT = [p for case in CASES
               for p in case_params("jit", _jit_default_dtypes(case)) if p.values[0] is case]
JIT_SWEEP = [p for p in case_params("jit") if p.id not in {q.id for q in JIT_DEFAULT}]


@pytest.mark.parametrize("case,dtype", JIT_DEFAULT)
def test_jit(case, dtype):
    _check_jit(case, dtype)


@pytest.mark.slow_sweep
@pytest.mark.parametrize("case,dtype", JIT_SWEEP)
def test_jit_sweep(case, dtype):
    _check_jit(case, dtype)


def _vmap_inputs(case, dtype):
    sets = case_inputs(case, dtype)
    regular = [s for s in sets if not s.special and s.label != "empty"
               and all(np.ndim(a) > 0 for i, a in enumerate(s.args) if i in _batched(case, s))]
    return _prefer_regular(regular)


def _batched(case, inputs):
    if case.batched:
        return case.batched
    return tuple(i for i, a in enumerate(inputs.args) if isinstance(a, np.ndarray))


@pytest.mark.parametrize("case,dtype", list(case_params("vmap")))
def test_vmap(case, dtype):
    inputs = _vmap_inputs(case, dtype)
    if inputs is None:
        pytest.skip("no input set with batchable arguments")
    batched = _batched(case, inputs)
    # three different slices: the values, reversed (along every axis, so symmetric
    # positive definite matrices stay so), and doubled
    slices = [inputs.args,
              tuple(np.flip(a) if i in batched else a for i, a in enumerate(inputs.args)),
              tuple(a + a if i in batched else a for i, a in enumerate(inputs.args))]
    stacked = tuple(np.stack([s[i] for s in slices]) if i in batched else a
                    for i, a in enumerate(inputs.args))
    in_axes = tuple(0 if i in batched else None for i in range(len(stacked)))
    out = leaves(fnad.vmap(case.fn, in_axes=in_axes)(*stacked))
    loop = [leaves(case.fn(*s)) for s in slices]
    # sums of products (scale="abs") are compared relative to the sum of |terms|: the
    # batched and the looped kernels may add in another order
    abs_scale = ([np.stack(r) for r in zip(*[tolerance_scale(case, s, None) for s in slices])]
                 if case.scale == "abs" else None)
    for k, leaf in enumerate(out):
        want = np.stack([np.asarray(row[k]) for row in loop])
        assert np.asarray(leaf).dtype == want.dtype, f"{case.id} vmap dtype, output {k}"
        scale = abs_scale[k] if abs_scale is not None else np.abs(want.astype(np.float64)) \
            if dkind(want.dtype) == "f" else 1.0
        assert_matches(leaf, want, want.dtype, case, scale, f"{case.id} vmap output {k}")
    count("vmap", case, dtype)


# --------------------------------------------------------------------------- derivatives

def _grad_inputs(case, dtype):
    sets = [s for s in case_inputs(case, dtype) if not s.special and s.label != "empty"
            and any(isinstance(a, np.ndarray) and a.size for a in s.args)]
    return _prefer_regular(sets)


def _prefer_regular(sets):
    """The input set labelled "regular", else the first one (long inputs with ties, and
    special values, make poor points to differentiate at)."""
    for s in sets:
        if s.label == "regular":
            return s
    return sets[0] if sets else None


def _diff_positions(case, inputs):
    data = case.data_args or tuple(i for i, a in enumerate(inputs.args)
                                   if isinstance(a, np.ndarray))
    return tuple(i for i in data if isinstance(inputs.args[i], np.ndarray)
                 and dkind(inputs.args[i].dtype) == "f")


def _finite_difference(case, args, positions, tangents, h=1e-6):
    """Directional derivative of the float64 reference along `tangents`."""
    def at(sign):
        moved = list(float64_args(case, args, F64))
        for i, t in zip(positions, tangents):
            moved[i] = moved[i] + sign * h * t
        return [np.asarray(r, np.float64) for r in reference(case, tuple(moved))]
    return [(p - m) / (2 * h) for p, m in zip(at(1), at(-1))]


def _grad_setup(case, dtype):
    inputs = _grad_inputs(case, dtype)
    if inputs is None:
        pytest.skip("no input set to differentiate")
    positions = _diff_positions(case, inputs)
    if not positions:
        pytest.skip("no float arguments")
    rng = np.random.default_rng(0)
    args = inputs.args
    tangents = [rng.standard_normal(np.shape(args[i])) for i in positions]

    def partial(*diff):
        full = list(args)
        for i, d in zip(positions, diff):
            full[i] = d
        return case.fn(*full)
    primals = tuple(fnp.asarray(args[i]) for i in positions)
    fd = _finite_difference(case, args, positions, tangents)
    # float64 central differences with h = 1e-6 are good to about 1e-9 relative
    tol = max(64 * dfinfo(dtype).eps * case.tol / 4, 1e-7)
    return args, positions, tangents, partial, primals, fd, tol


@pytest.mark.parametrize("case,dtype", list(case_params("jvp")))
def test_jvp(case, dtype):
    args, positions, tangents, partial, primals, fd, tol = _grad_setup(case, dtype)
    tangent_arrays = tuple(fnp.asarray(t.astype(dtype)) for t in tangents)
    out, t_out = fnad.jvp(partial, primals, tangent_arrays)
    for k, (o, t, want) in enumerate(zip(leaves(out), leaves(t_out), fd)):
        assert np.asarray(t).dtype == np.asarray(o).dtype, \
            f"{case.id} jvp: tangent dtype {np.asarray(t).dtype}, output {np.asarray(o).dtype}"
        # tangents were rounded to dtype: differentiate along the rounded direction
        scale = np.maximum(np.abs(want), 1.0)
        got = np.asarray(t, np.float64)
        bad = ~(np.abs(got - want) <= tol * scale * 8) & np.isfinite(want)
        assert not bad.any(), (f"{case.id} jvp output {k}: got {got[bad][:6]}, "
                               f"finite differences {want[bad][:6]}")
    count("jvp", case, dtype)


@pytest.mark.parametrize("case,dtype", list(case_params("vjp")))
def test_vjp(case, dtype):
    args, positions, tangents, partial, primals, fd, tol = _grad_setup(case, dtype)
    rng = np.random.default_rng(1)
    out, pullback = fnad.vjp(partial, *primals)
    outs = leaves(out)
    cotangents = [fnp.asarray(rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype))
                  for o in outs]
    structure = fnad.tree_util.tree_structure(out)
    grads = pullback(fnad.tree_util.tree_unflatten(structure, cotangents))
    for g, p in zip(grads, primals):
        assert np.asarray(g).dtype == np.asarray(p).dtype, \
            f"{case.id} vjp: gradient dtype {np.asarray(g).dtype} for a {p.dtype} input"
    lhs = sum(np.sum(np.asarray(g, np.float64) * t) for g, t in zip(grads, tangents))
    rhs = sum(np.sum(np.asarray(c, np.float64) * f) for c, f in zip(cotangents, fd))
    scale = max(1.0, sum(np.sum(np.abs(np.asarray(c, np.float64) * f))
                         for c, f in zip(cotangents, fd)))
    assert abs(lhs - rhs) <= tol * 8 * scale, (
        f"{case.id} vjp: <vjp(ct), t> = {lhs:.8g}, <ct, finite differences> = {rhs:.8g}")
    count("vjp", case, dtype)


# --------------------------------------------------------------------------- JAX

def _jax_inputs(case, dtype):
    chosen = _prefer_regular([s for s in case_inputs(case, dtype) if not s.special])
    return [chosen] if chosen else []


JAX_CASES = [p for p in case_params("jax") if p.values[0].jax is not None]
JAX_DEFAULT = [p for case in CASES for p in case_params("jax", _jit_default_dtypes(case))
               if p.values[0] is case and case.jax is not None]


# JAX compiles every op for every shape, so the default run compares one dtype per case
# (the dtype of every case is compared with JAX in test_eager); the sweep the rest.
@pytest.mark.skipif(J is None, reason="JAX is not installed (the bench extra)")
@pytest.mark.parametrize("case,dtype", JAX_DEFAULT)
def test_against_jax(case, dtype):
    _check_against_jax(case, dtype)


@pytest.mark.slow_sweep
@pytest.mark.skipif(J is None, reason="JAX is not installed (the bench extra)")
@pytest.mark.parametrize("case,dtype", [p for p in JAX_CASES if p.id not in {q.id for q in JAX_DEFAULT}])
def test_against_jax_sweep(case, dtype):
    _check_against_jax(case, dtype)


def _check_against_jax(case, dtype):
    for inputs in _jax_inputs(case, dtype):
        args = inputs.args
        got = [np.asarray(g) for g in leaves(case.fn(*args))]
        for x64 in (True, False):
            if not x64 and (any(isinstance(a, np.ndarray) and a.dtype.itemsize == 8
                                for a in args) or (isinstance(case.out, np.dtype)
                                                   and case.out.itemsize == 8)):
                continue            # JAX's default mode would narrow the inputs
            try:
                want = run_jax(case, args, x64)
            except TypeError as e:      # JAX does not take this dtype here (partition of bool)
                pytest.skip(f"JAX rejects it: {e}".splitlines()[0])
            assert len(want) == len(got)
            for k, (g, w) in enumerate(zip(got, want)):
                wd = narrow_to_default(w.dtype, args) if x64 else w.dtype
                if isinstance(case.out, np.dtype):
                    wd = case.out           # asked for explicitly: nothing to narrow
                elif case.out == "index" and x64:
                    wd = np.dtype(np.int32)
                elif case.out == "acc":     # 64-bit integer sums: docs/dtypes.md
                    wd = rule_dtype(case.out, args, case.data_args)
                label = f"{case.id} vs JAX (x64={x64}) on {inputs.label}, output {k}"
                assert g.dtype == wd, f"{label}: dtype {g.dtype}, JAX {wd}"
                # numpy, not JAX, is the reference for -0.0 and the last ulps
                lenient = dataclasses.replace(case, signed_zero=False, tol=4 * case.tol)
                assert_matches(g, w.astype(np.float64) if dkind(w.dtype) == "f" else w, wd,
                               lenient, np.abs(w.astype(np.float64)) if dkind(w.dtype) == "f"
                               else 1.0, label)
        count("jax", case, dtype)


@pytest.mark.skipif(J is None, reason="JAX is not installed (the bench extra)")
@pytest.mark.parametrize("case", [c for c in CASES if c.jax is not None], ids=lambda c: c.id)
def test_rule_agrees_with_jax(case):
    """rule_dtype (used without JAX) gives JAX's narrowed x64 dtype for every case."""
    for dtype in case.dtypes:
        for inputs in case_inputs(case, dtype):
            expected = expected_dtypes(case, inputs)
            if expected is None:
                continue
            for i, want in enumerate(expected):
                rule = output_rule_dtype(case, inputs.args, i)
                assert rule == want, (f"{case.id} on {dtype} {inputs.label}, output {i}: "
                                      f"rule {case.out!r} gives {rule}, JAX {want}")


# --------------------------------------------------------------------------- properties

INTEGER_OPS = ["floor_divide", "remainder", "fmod", "divmod", "multiply", "subtract"]


@pytest.mark.parametrize("name", INTEGER_OPS)
@pytest.mark.parametrize("dtype", [I32, I64], ids=lambda d: d.name)
def test_integer_arithmetic_is_exact_in_every_mode(name, dtype):
    """Integer ops over the whole range (zero divisors and extremes included), eagerly
    and compiled, equal numpy's integer arithmetic exactly (hypothesis, fixed seed)."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    info = np.iinfo(dtype)
    ints = st.integers(int(info.min), int(info.max))
    op = getattr(fnp, name)
    jitted = fnad.jit(op)
    reason = known_failure(_case_named(f"numpy.{name}"), dtype, "eager")

    @hypothesis.settings(derandomize=True, max_examples=40, deadline=None, database=None)
    @hypothesis.given(st.lists(st.tuples(ints, ints | st.sampled_from([0, -1, 1])),
                               min_size=1, max_size=16))
    def check(pairs):
        x = np.array([p[0] for p in pairs], dtype)
        y = np.array([p[1] for p in pairs], dtype)
        with np.errstate(all="ignore"):
            want = leaves(getattr(np, name)(x, y))
        for mode, f in (("eager", op), ("jit", jitted)):
            for g, w in zip(leaves(f(x, y)), want):
                np.testing.assert_array_equal(np.asarray(g), w, err_msg=f"{name} {mode}")
    try:
        check()
        lowering.wait_for_compiles()
        check()
    except AssertionError:
        if reason:
            pytest.xfail(reason)
        raise
    assert not reason, f"fixed, remove from KNOWN_FAILURES: {reason}"
    CHECKED["property"] += 2


def _case_named(case_id):
    return next(c for c in CASES if c.id == case_id)


# --------------------------------------------------------------------------- random

def _random_params():
    for case in RANDOM_CASES:
        reason = next((r for (name, _, modes), r in KNOWN_FAILURES.items()
                       if name == case.id and "random" in modes.split()), None)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", list(_random_params()))
def test_random(case):
    """Distribution, range and dtype of a large sample; the same key gives the same bits
    eagerly, under jit and (when installed) in JAX; vmap over keys is a loop over keys;
    another key gives other values."""
    key = fnad.random.PRNGKey(0)
    sample = np.asarray(case.draw(fnad.random, key))
    case.check(sample)
    np.testing.assert_array_equal(np.asarray(case.draw(fnad.random, key)), sample)
    jitted = np.asarray(fnad.jit(lambda k: case.draw(fnad.random, k))(key))
    np.testing.assert_array_equal(jitted, sample)
    keys = fnad.random.split(fnad.random.PRNGKey(1), 3)
    batched = np.asarray(fnad.vmap(lambda k: case.draw(fnad.random, k))(keys))
    for i in range(3):
        np.testing.assert_array_equal(batched[i], np.asarray(case.draw(fnad.random, keys[i])))
    if case.name not in ("PRNGKey", "key"):
        assert not np.array_equal(np.asarray(case.draw(fnad.random, keys[0])), sample)
    CHECKED["random"] += 1
    if J is not None and case.jax:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(case.draw(jax.random, jax.random.PRNGKey(0)))
        assert want.dtype == sample.dtype, (want.dtype, sample.dtype)
        if dkind(want.dtype) == "f":
            # the same bits in, but each library's own log/erfinv: a few hundred ulps
            # where a transform amplifies rounding (gumbel's log(-log(u)) near u = 1)
            np.testing.assert_allclose(sample, want, rtol=1e-4, atol=1e-6)
        else:
            np.testing.assert_array_equal(sample, want)
        CHECKED["jax"] += 1


def test_threefry_known_answer():
    """Threefry-2x32 (20 rounds) on key 0, counter 0: the Random123 known-answer vector."""
    out = fnad.random.threefry2x32(np.uint32(0), np.uint32(0), np.uint32(0), np.uint32(0))
    assert [int(v) for v in np.asarray(out).ravel()] == [0x6B200159, 0x99BA4EFE]
    ones = np.uint32(0xFFFFFFFF)
    out = fnad.random.threefry2x32(ones, ones, ones, ones)
    assert [int(v) for v in np.asarray(out).ravel()] == [0x1CB996FC, 0xBB002BE7]


# --------------------------------------------------------------------------- dtype functions

@pytest.mark.parametrize("a,b", [(a, b) for a in _LATTICE for b in _LATTICE],
                         ids=lambda d: d.name)
def test_dtype_functions_follow_the_lattice(a, b):
    """fnad.numpy.promote_types/result_type are the documented rule (JAX's lattice, which
    never narrows float64); issubdtype agrees with numpy's."""
    want = promote(a, b)
    if J is not None:
        assert narrow_to_default(jnp.promote_types(a, b), [np.zeros(0, a), np.zeros(0, b)]) \
            == want
    assert np.dtype(fnp.promote_types(a, b)) == want
    assert np.dtype(fnp.result_type(np.zeros(1, a), np.zeros(1, b))) == want
    assert fnp.issubdtype(a, np.floating) == np.issubdtype(a, np.floating)
    CHECKED["dtype rule"] += 1


def summary_line():
    """Printed at the end of the run by tests/conftest.py's pytest_terminal_summary."""
    return (f"differential: {sum(CHECKED.values())} (function, dtype, mode) cases checked, "
            f"{len(EXCLUDED)} functions excluded")

