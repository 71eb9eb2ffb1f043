"""numpy's own functions on fnad values (NEP 13 __array_ufunc__, NEP 18
__array_function__): they run fnad's, eagerly and under every transform, and a traced
value is never silently turned into a numpy array. References: numpy in float64,
hand-derived derivatives, central differences in float64."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.errors import (ConcretizationError, ImmutableArrayError, NumpyFunctionError,
                         TracerArrayConversionError)
from fnad.backends.cpu import lowering
from cuda_util import GPUS, to_gpu, host

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
M = RNG.standard_normal((4, 2))
V = RNG.standard_normal(4)
POS = RNG.uniform(0.5, 2.0, (3, 4))

# (id, function written against numpy's namespace, numpy arguments). Each runs on numpy
# arrays for the reference and on fnad Arrays (same values) for the test.
CALLS = [
    ("exp", np.exp, (A,)),
    ("sin", np.sin, (A,)),
    ("log", np.log, (POS,)),
    ("tanh", np.tanh, (A,)),
    ("abs", np.abs, (A,)),
    ("sqrt", np.sqrt, (POS,)),
    ("add", np.add, (A, B)),
    ("multiply-broadcast", np.multiply, (A, V)),
    ("true_divide", np.true_divide, (A, POS)),
    ("power", np.power, (POS, A)),
    ("maximum", np.maximum, (A, B)),
    ("greater", np.greater, (A, B)),
    ("divmod", np.divmod, (A, POS)),
    ("matmul-ufunc", np.matmul, (A, M)),
    ("sum", np.sum, (A,)),
    ("sum-axis-keepdims", lambda a: np.sum(a, axis=1, keepdims=True), (A,)),
    ("sum-positional-axis", lambda a: np.sum(a, 0), (A,)),
    ("mean", np.mean, (A,)),
    ("mean-axis", lambda a: np.mean(a, axis=0), (A,)),
    ("max", np.max, (A,)),
    ("amin-axis", lambda a: np.amin(a, axis=1), (A,)),
    ("prod", lambda a: np.prod(a, axis=1), (A,)),
    ("var", lambda a: np.var(a, axis=0, ddof=1), (A,)),
    ("std", np.std, (A,)),
    ("argmax", lambda a: np.argmax(a, axis=1), (A,)),
    ("cumsum", lambda a: np.cumsum(a, axis=1), (A,)),
    ("where", lambda a, b: np.where(a > b, a, b * 2), (A, B)),
    ("dot", np.dot, (A, M)),
    ("matmul", lambda a, m: a @ m, (A, M)),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), (A, B)),
    ("stack", lambda a, b: np.stack((a, b)), (A, B)),
    ("reshape", lambda a: np.reshape(a, (4, 3)), (A,)),
    ("reshape-kw", lambda a: np.reshape(a, shape=(2, 6)), (A,)),
    ("transpose", np.transpose, (A,)),
    ("clip", lambda a: np.clip(a, -0.5, 0.5), (A,)),
    ("clip-min-kw", lambda a: np.clip(a, min=0.0), (A,)),
    ("sort", lambda a: np.sort(a, axis=0), (A,)),
    ("linalg.norm", np.linalg.norm, (A,)),
    ("add.reduce", np.add.reduce, (A,)),
    ("add.reduce-axis-None", lambda a: np.add.reduce(a, axis=None), (A,)),
    ("maximum.reduce", lambda a: np.maximum.reduce(a, axis=1), (A,)),
    ("multiply.accumulate", np.multiply.accumulate, (A,)),
    ("add.outer", np.add.outer, (V, V[:3])),
    ("atleast_2d", np.atleast_2d, (V,)),
    ("copy", np.copy, (A,)),
    ("mixed-numpy-left", lambda a, b: np.asarray(b) * a, (A, B)),
    ("mixed-numpy-ufunc", lambda a, b: np.subtract(np.asarray(b), a), (A, B)),
]


def _as_numpy(out):
    if isinstance(out, tuple):
        return tuple(_as_numpy(o) for o in out)
    return np.asarray(out)


INDEX_RESULTS = {name for name, _, _ in CALLS if name.startswith("arg") or name in (
    "nonzero", "argwhere", "flatnonzero", "count_nonzero")}


@pytest.mark.parametrize("name,fn,args", CALLS, ids=[c[0] for c in CALLS])
def test_numpy_functions_on_arrays_give_arrays_with_numpys_values(name, fn, args):
    expected = fn(*args)
    out = fn(*[fnp.asarray(a) for a in args])
    pairs = zip(out, expected) if isinstance(out, tuple) else [(out, expected)]
    for o, e in pairs:
        assert isinstance(o, fnad.Array), f"{name} gave {type(o).__name__}"
        # fnad's dtype rule (docs/dtypes.md): indices are the default int, not intp
        want = np.asarray(e).dtype
        if name in INDEX_RESULTS:
            want = fnad.dtypes.index_dtype(np.size(args[0]))
        assert o.shape == np.shape(e) and o.dtype == want
        np.testing.assert_allclose(np.asarray(o), e, rtol=1e-12, atol=1e-12)


def test_float32_stays_float32_and_mixed_operands_dispatch_to_fnad():
    x = fnp.asarray(A.astype(np.float32))
    for out in (np.exp(x), np.sum(x, axis=0), np.float32(2) * x,
                np.ones(4, np.float32) + x):
        assert isinstance(out, fnad.Array) and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(np.exp(x)), np.exp(A.astype(np.float32)),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(np.ones(4) + x), 1 + A.astype(np.float32),
                               rtol=1e-6)


def test_the_issues_reductions_no_longer_raise_about_out():
    x = fnp.asarray(A)
    assert float(np.sum(x)) == pytest.approx(A.sum(), rel=1e-12)
    assert float(np.mean(x)) == pytest.approx(A.mean(), rel=1e-12)
    assert float(np.max(x)) == A.max() and float(np.min(x)) == A.min()


def test_numpy_asarray_of_an_array_stays_a_read_only_view():
    x = fnp.asarray(A)
    view = np.asarray(x)
    assert np.shares_memory(view, np.asarray(x)) and not view.flags.writeable


# ------------------------------------------------------------------------ under transforms

def _central_grad(f, w, eps=1e-6):
    g = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        step = np.zeros_like(w)
        step[i] = eps
        g[i] = (f(w + step) - f(w - step)) / (2 * eps)
    return g


W = np.linspace(-1.5, 1.2, 6)

# (id, scalar function of w written with numpy's functions, its derivative by hand)
LOSSES = [
    ("sum(exp(w) * w)", lambda w: np.sum(np.exp(w) * w), lambda w: np.exp(w) * (1 + w)),
    ("sum(sin(w))", lambda w: np.sum(np.sin(w)), np.cos),
    ("mean(tanh(w)**2)", lambda w: np.mean(np.tanh(w) ** 2),
     lambda w: 2 * np.tanh(w) * (1 - np.tanh(w) ** 2) / w.size),
    ("max(w * w)", lambda w: np.max(w * w),
     lambda w: np.where(w * w == np.max(w * w), 2 * w, 0)),
    ("where", lambda w: np.sum(np.where(w > 0, np.log1p(w * w), -w)),
     lambda w: np.where(w > 0, 2 * w / (1 + w * w), -1.0)),
    ("dot", lambda w: np.dot(w, np.cos(w)), lambda w: np.cos(w) - w * np.sin(w)),
    ("add.reduce", lambda w: np.add.reduce(np.square(w)), lambda w: 2 * w),
    ("concatenate", lambda w: np.sum(np.concatenate([w, np.exp(w)]) ** 2),
     lambda w: 2 * w + 2 * np.exp(2 * w)),
]


@pytest.mark.parametrize("name,f,df", LOSSES, ids=[c[0] for c in LOSSES])
def test_grad_of_numpy_functions_matches_the_hand_derivative(name, f, df):
    g = fnad.grad(f)(fnp.asarray(W))
    assert isinstance(g, fnad.Array) and g.dtype == np.float64
    np.testing.assert_allclose(np.asarray(g), df(W), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(g), _central_grad(f, W), rtol=1e-6, atol=1e-8)
    value, g2 = fnad.value_and_grad(f)(fnp.asarray(W))
    assert float(value) == pytest.approx(f(W), rel=1e-12)
    np.testing.assert_allclose(np.asarray(g2), df(W), rtol=1e-12, atol=1e-12)


def test_the_issues_example_mixing_fnad_and_numpy():
    w = np.linspace(-1, 1, 5)
    g = fnad.grad(lambda w: fnp.sum(np.exp(w) * w))(fnp.asarray(w))
    np.testing.assert_allclose(np.asarray(g), np.exp(w) * (1 + w), rtol=1e-12)
    g = fnad.grad(lambda w: fnp.sum(np.sin(w)))(fnp.asarray(w))
    np.testing.assert_allclose(np.asarray(g), np.cos(w), rtol=1e-12)


def test_second_derivatives_and_jvp_through_numpy_functions():
    w = fnp.asarray(W)
    g2 = fnad.grad(lambda v: np.sum(fnad.grad(lambda u: np.sum(np.sin(u)))(v)))(w)
    np.testing.assert_allclose(np.asarray(g2), -np.sin(W), rtol=1e-12)
    h = fnad.hessian(lambda v: np.sum(np.exp(v) * v))(w)
    np.testing.assert_allclose(np.asarray(h), np.diag(np.exp(W) * (2 + W)), rtol=1e-12)
    t = np.cos(W)
    out, tangent = fnad.jvp(lambda v: np.exp(v) * v, (w,), (fnp.asarray(t),))
    np.testing.assert_allclose(np.asarray(out), np.exp(W) * W, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tangent), np.exp(W) * (1 + W) * t, rtol=1e-12)


def test_vmap_of_numpy_functions_matches_a_loop():
    def f(row, v):
        return np.sum(np.sin(row) * v) + np.max(row)
    out = fnad.vmap(f, in_axes=(0, None))(fnp.asarray(A), fnp.asarray(V))
    np.testing.assert_allclose(np.asarray(out), [f(r, V) for r in A], rtol=1e-12)
    per_example = fnad.vmap(fnad.grad(lambda r: np.sum(np.exp(r) * r)))(fnp.asarray(A))
    np.testing.assert_allclose(np.asarray(per_example), np.exp(A) * (1 + A), rtol=1e-12)


def _jit_loss(w):
    return np.mean(np.where(w > 0, np.exp(-w) * w, np.sin(w) ** 2)) + np.sum(np.dot(w, w))


def _jit_loss_grad(w):
    return np.where(w > 0, np.exp(-w) * (1 - w), 2 * np.sin(w) * np.cos(w)) / w.size + 2 * w


def test_jit_of_numpy_functions_first_call_and_compiled(monkeypatch, tmp_path):
    monkeypatch.setenv("FNAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fnad.config, "background_compile", True)
    w = fnp.asarray(W)
    f = fnad.jit(_jit_loss)
    df = fnad.jit(fnad.grad(_jit_loss))
    first, first_grad = f(w), df(w)
    lowering.wait_for_compiles()
    compiled, compiled_grad = f(w), df(w)
    for value in (first, compiled):
        assert float(value) == pytest.approx(_jit_loss(W), rel=1e-12)
    for g in (first_grad, compiled_grad):
        np.testing.assert_allclose(np.asarray(g), _jit_loss_grad(W), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(fnad.grad(fnad.jit(_jit_loss))(w)),
                               _jit_loss_grad(W), rtol=1e-12, atol=1e-14)
    assert "exp" in str(fnad.make_jaxpr(_jit_loss)(w))    # staged, not run by numpy


# --------------------------------------------------------------------------- misuse

@pytest.mark.parametrize("transform", ["grad", "jvp", "vmap", "jit"])
@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda t: t.__array__()],
                         ids=["np.asarray", "np.array", "__array__"])
def test_converting_a_traced_value_to_numpy_raises_naming_the_transform(transform, convert):
    def f(w):
        return np.sum(convert(w) * w)
    x = fnp.asarray(W)
    call = {"grad": lambda: fnad.grad(f)(x),
            "jvp": lambda: fnad.jvp(f, (x,), (x,)),
            "vmap": lambda: fnad.vmap(f)(fnp.asarray(A)),
            "jit": lambda: fnad.jit(f)(x)}[transform]
    with pytest.raises(TracerArrayConversionError, match="converted to a numpy array") \
            as info:
        call()
    assert isinstance(info.value, ConcretizationError) and isinstance(info.value, TypeError)
    name = {"grad": "grad|vjp"}.get(transform, transform)
    assert any(n in str(info.value) for n in name.split("|"))


def test_python_scalars_of_grad_tracers_stay_allowed():
    def f(w):
        scale = 2.0 if float(np.sum(w)) > 0 else 3.0     # control flow on the value
        assert bool(np.max(w) > -10)
        return np.sum(np.sin(w)) * scale
    g = fnad.grad(f)(fnp.asarray(W))
    np.testing.assert_allclose(np.asarray(g), np.cos(W) * (2.0 if W.sum() > 0 else 3.0),
                               rtol=1e-12)


NO_COUNTERPART = [
    (lambda x: np.real_if_close(x * x[::-1]), "numpy.real_if_close"),
    (lambda x: np.add.reduceat(x, [0, 2]), "numpy.add.reduceat"),
    (lambda x: np.subtract.reduce(x), "numpy.subtract.reduce"),
    (lambda x: np.lib.stride_tricks.sliding_window_view(x, 2).sum(-1),
     "numpy.lib.stride_tricks.sliding_window_view"),
]


@pytest.mark.parametrize("call,what", NO_COUNTERPART, ids=[c[1] for c in NO_COUNTERPART])
def test_a_numpy_function_without_fnad_counterpart_raises_on_traced_values(call, what):
    for transformed, arg, name in (
            (fnad.grad(lambda w: np.sum(np.abs(call(w)))), V, "grad|vjp"),
            (fnad.jit(call), V, "jit"), (fnad.vmap(call), A, "vmap")):
        with pytest.raises(NumpyFunctionError, match=rf"^{what}.* has no fnad counterpart, "
                                                     rf"so it cannot run on a value traced "
                                                     rf"by ({name})"):
            transformed(fnp.asarray(arg))
    assert issubclass(NumpyFunctionError, TypeError)


@pytest.mark.parametrize("call,what", NO_COUNTERPART, ids=[c[1] for c in NO_COUNTERPART])
def test_a_numpy_function_without_fnad_counterpart_runs_numpy_on_concrete_arrays(call, what):
    # Nothing is being transformed, so numpy's own function on a copy loses nothing
    # (as with JAX's arrays); its result is numpy's.
    expected = call(V)
    out = call(fnp.asarray(V))
    assert not isinstance(out, fnad.Array)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("call", [
    lambda x: np.add(x, 1, out=np.zeros(4)),
    lambda x: np.exp(x, out=np.zeros(4)),
    lambda x: np.sum(x, out=np.zeros(())),
    lambda x: np.sum(x, 0, None, np.zeros(())),    # out given positionally
    lambda x: np.cumsum(x, out=np.zeros(4)),
    lambda x: np.add.reduce(x, out=np.zeros(())),
    lambda x: np.add.at(x, [0], 1.0),
], ids=["ufunc", "unary", "sum", "sum-positional", "cumsum", "reduce", "at"])
def test_out_and_in_place_raise_immutable(call):
    with pytest.raises(ImmutableArrayError, match="immutable"):
        call(fnp.asarray(V))


def test_in_place_operator_on_a_numpy_array_with_an_fnad_operand_raises():
    buf = np.zeros(4)
    with pytest.raises(ImmutableArrayError, match="out="):
        buf += fnp.asarray(V)
    assert not buf.any()


UNSUPPORTED_ARGUMENTS = [
    (lambda x: np.sum(x, where=x > 0), "numpy.sum", "where"),
    (lambda x: np.sum(x, initial=1.0), "numpy.sum", "initial"),
    (lambda x: np.exp(x, dtype=np.float32), "numpy.exp", "dtype"),
    (lambda x: np.maximum.reduce(x, initial=0.0), "numpy.maximum.reduce", "initial"),
]


@pytest.mark.parametrize("call,what,arg", UNSUPPORTED_ARGUMENTS,
                         ids=[f"{c[1]}-{c[2]}" for c in UNSUPPORTED_ARGUMENTS])
def test_an_argument_fnad_cannot_honour_is_never_ignored(call, what, arg):
    with pytest.raises(NumpyFunctionError, match=rf"^{what}\(\.\.\., {arg}=.*no '{arg}' "
                                                 rf"argument.*traced by"):
        fnad.grad(lambda w: np.sum(call(w)))(fnp.asarray(V))
    # on concrete Arrays, numpy's answer (not fnad's without the argument)
    np.testing.assert_allclose(np.asarray(call(fnp.asarray(V))), call(V), rtol=1e-12)


def test_harmless_numpy_arguments_are_accepted():
    x = fnp.asarray(A)
    np.testing.assert_allclose(np.asarray(np.sum(x, where=True, keepdims=False)), A.sum(),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(np.add(x, x, casting="same_kind")), 2 * A)
    np.testing.assert_allclose(np.asarray(np.mean(x, axis=1, out=None)), A.mean(axis=1),
                               rtol=1e-12)


def test_another_librarys_array_takes_part_in_dispatch():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "other"

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "other ufunc"
    x = fnp.asarray(V)
    assert np.concatenate([x, Other()]) == "other"
    assert np.add(x, Other()) == "other ufunc"


# --------------------------------------------------------------------------- __format__

def test_format_like_numpy():
    loss = fnp.asarray(np.float32(0.123456))
    assert f"{loss:.4f}" == f"{np.float32(0.123456):.4f}" == "0.1235"
    assert f"{fnp.asarray(7):>4d}" == "   7"
    assert f"{loss}" == str(loss) == str(np.float32(0.123456))
    x = fnp.asarray(A)
    assert f"{x}" == str(A) == format(x, "")
    with pytest.raises(TypeError) as ours:
        f"{x:.3f}"
    with pytest.raises(TypeError) as numpys:
        f"{A:.3f}"
    assert str(ours.value) == str(numpys.value)


def test_format_of_traced_values():
    seen = []

    def f(w):
        loss = np.sum(w * w)
        seen.append(f"{loss:.3f}")
        return loss
    fnad.grad(f)(fnp.asarray(W))
    assert seen == [f"{np.sum(W * W):.3f}"]

    def staged(w):
        seen.append(f"{w}")             # an empty spec is str(): fine while staging
        return w * 2
    fnad.jit(staged)(fnp.asarray(W))
    assert "Traced" in seen[-1]
    with pytest.raises(ConcretizationError):
        fnad.jit(lambda w: f"{np.sum(w):.3f}" and w)(fnp.asarray(W))


# --------------------------------------------------------------------------- on a GPU

@pytest.mark.cuda
@pytest.mark.skipif(not GPUS, reason="numba.cuda finds no GPU (nor simulator)")
def test_numpy_functions_on_gpu_arrays_stay_on_the_gpu():
    x = to_gpu(W)
    np.testing.assert_allclose(host(np.exp(x) * x), np.exp(W) * W, rtol=1e-12)
    np.testing.assert_allclose(host(np.sum(x, axis=0)), W.sum(), rtol=1e-12)
    g = fnad.grad(lambda w: np.sum(np.exp(w) * w))(x)
    np.testing.assert_allclose(host(g), np.exp(W) * (1 + W), rtol=1e-12)
    assert f"{np.sum(x):.4f}" == f"{W.sum():.4f}"
