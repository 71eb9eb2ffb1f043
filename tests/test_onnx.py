"""fnad.onnx: export checked by onnx's checker and run in ONNX Runtime against fnad,
with a dynamic batch axis at two sizes; load(export(f)) against f (values and
gradients); a torch.onnx.export model against torch (values and autograd); and the
errors: a primitive with no lowering, an axis pinned by a size, unknown operators."""
import io
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fnad  # noqa: E402
import fnad.numpy as fnp  # noqa: E402
import fnad.onnx  # noqa: E402
import fnad.scipy.special  # noqa: E402
from fnad import lax, nn, random  # noqa: E402
from fnad.demo import MODELS  # noqa: E402
from fnad.errors import (  # noqa: E402
    DynamicAxisError, FileFormatError, UnsupportedOperatorError, UnsupportedPrimitiveError)
from fnad.tree_util import tree_leaves  # noqa: E402

RNG = np.random.default_rng(0)


def ort_run(model, feeds):
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def sample(shape, batch):
    return RNG.standard_normal((batch,) + tuple(shape[1:])).astype(np.float32)


def check_export(fun, shape, params=None, batches=(5,), name="x"):
    """Export with a dynamic leading axis, then compare ONNX Runtime with fnad at the
    example's batch size and at `batches`."""
    args = (params,) if params is not None else ()
    x = sample(shape, shape[0])
    model = fnad.onnx.export(fun, x, params=params, dynamic_axes={name: {0: "batch"}})
    assert [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim][0] == "batch"
    for n in (shape[0],) + tuple(batches):
        xs = sample(shape, n)
        got = ort_run(model, {name: xs})
        want = fun(*args, xs)
        want = list(want) if isinstance(want, (list, tuple)) else [want]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == np.shape(w)
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5, atol=1e-5)
    return model


def init_params(model, shape):
    init, apply = MODELS[model]()
    _, params = init(random.PRNGKey(0), shape)
    return apply, params


def test_import_fnad_does_not_import_onnx():
    code = ("import sys, fnad, fnad.onnx; "
            "print(any(m.split('.')[0] in ('onnx', 'onnxruntime') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- export

def test_regression_polynomial():
    model = check_export(lambda x: 3 * x ** 2 + 2, (4, 1), batches=(1, 9))
    assert [o.name for o in model.graph.output] == ["output"]


def test_digits_mlp_names_params_as_initializers():
    apply, params = init_params("mlp", (-1, 8, 8, 1))
    model = check_export(lambda p, image: apply(p, image), (3, 8, 8, 1), params,
                         name="image")
    assert [t.name for t in model.graph.initializer] == [
        "params/1/0", "params/1/1", "params/3/0", "params/3/1"]
    assert [i.name for i in model.graph.input] == ["image"]


def test_demo_cnn():
    apply, params = init_params("cnn", (-1, 8, 8, 1))
    model = check_export(lambda p, image: apply(p, image), (2, 8, 8, 1), params,
                         batches=(1, 7), name="image")
    ops = {n.op_type for n in model.graph.node}
    assert {"Conv", "MaxPool", "MatMul"} <= ops


def transformer_params(d=8, hidden=16):
    keys = random.split(random.PRNGKey(1), 6)
    w = [random.normal(k, s) * 0.3 for k, s in zip(
        keys, [(d, d), (d, d), (d, d), (d, d), (d, hidden), (hidden, d)])]
    return {"wq": w[0], "wk": w[1], "wv": w[2], "wo": w[3], "w1": w[4], "w2": w[5],
            "ln": {"scale": fnp.ones(d) * 1.1, "bias": fnp.full(d, 0.1)}}


def layer_norm(p, x):
    mean = fnp.mean(x, -1, keepdims=True)
    var = fnp.var(x, -1, keepdims=True)
    return (x - mean) / fnp.sqrt(var + 1e-5) * p["scale"] + p["bias"]


def transformer_block(p, x):
    h = layer_norm(p["ln"], x)
    q, k, v = h @ p["wq"], h @ p["wk"], h @ p["wv"]
    scores = q @ fnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    attn = nn.softmax(scores, axis=-1) @ v
    x = x + attn @ p["wo"]
    return x + nn.gelu(layer_norm(p["ln"], x) @ p["w1"]) @ p["w2"]


def test_transformer_block():
    model = check_export(transformer_block, (2, 5, 8), transformer_params())
    ops = {n.op_type for n in model.graph.node}
    assert {"Erf"} & ops or {"Tanh"} & ops


def rnn(p, xs):
    """An RNN over the time axis 1 of xs (batch, time, features), by lax.scan."""
    def step(h, x_t):
        h = fnp.tanh(h @ p["wh"] + x_t @ p["wx"])
        return h, fnp.sum(h, -1)
    h0 = fnp.zeros((xs.shape[0], p["wh"].shape[0]))
    h, ys = lax.scan(step, h0, fnp.swapaxes(xs, 0, 1))
    return h, fnp.swapaxes(ys, 0, 1)


def test_scan_rnn():
    k1, k2 = random.split(random.PRNGKey(2))
    params = {"wh": random.normal(k1, (4, 4)) * 0.5, "wx": random.normal(k2, (3, 4))}
    model = check_export(rnn, (2, 6, 3), params, batches=(4,), name="xs")
    assert "Loop" in {n.op_type for n in model.graph.node}


def branchy(x):
    y = lax.cond(fnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)
    z = lax.switch(fnp.argmax(x[0, :]), [lambda v: v + 1, lambda v: v * v, fnp.sin], y)
    return lax.fori_loop(0, 3, lambda i, c: c * 0.5 + i, z)


def test_cond_switch_fori():
    model = check_export(branchy, (3, 3), batches=(6, 1))
    assert "If" in {n.op_type for n in model.graph.node}
    pos = np.abs(sample((3, 3), 3))     # both branches of the cond are taken
    np.testing.assert_allclose(ort_run(model, {"x": pos})[0], np.asarray(branchy(pos)),
                               rtol=1e-5, atol=1e-5)


def test_numpy_semantics_of_the_lowerings():
    def f(x):
        return (fnp.maximum(x, 0.5), fnp.sort(x, -1), fnp.argsort(x, -1), fnp.cumsum(x, 0),
                fnp.clip(x, -1.0, 1.0), x[:, ::-1], x[:, 1:], fnp.pad(x, ((0, 0), (1, 2))),
                x[:, fnp.array([2, 0, 0])], fnp.remainder(x, -1.5), fnp.round(x),
                fnp.floor_divide(fnp.arange(-6, 6).reshape(3, 4) + 0 * x[:, :1].astype(bool),
                                 4))
    x = np.array([[np.nan, -2.5, 0.5], [1.5, -0.0, 2.5], [-1.25, 3.0, 0.25]], np.float32)
    model = fnad.onnx.export(f, x)
    for got, want in zip(ort_run(model, {"x": x}), f(x)):
        np.testing.assert_array_equal(got, np.asarray(want))


EDGES = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1e-30, -1e-7, 1e-7, 3e-5, -0.25, 0.5,
                  -0.5, 0.75, 1.0, -1.0, 1.5, 2.5, -3.0, 7.0, 50.0, -100.0], np.float32)
UNARY = [(fnp.abs, np.abs), (fnp.sign, np.sign), (fnp.floor, np.floor), (fnp.ceil, np.ceil),
         (fnp.log1p, np.log1p), (fnp.expm1, np.expm1), (fnp.cbrt, np.cbrt), (fnp.tan, np.tan),
         (fnp.sinh, np.sinh), (fnp.cosh, np.cosh), (fnp.arcsin, np.arcsin),
         (fnp.arccos, np.arccos), (fnp.arctan, np.arctan), (fnp.arcsinh, np.arcsinh),
         (fnp.arccosh, np.arccosh), (fnp.arctanh, np.arctanh),
         (nn.sigmoid, lambda x: 1 / (1 + np.exp(-x.astype(np.float64)))),
         (lax.rsqrt, lambda x: 1 / np.sqrt(x.astype(np.float64))),
         (fnad.scipy.special.erf, np.vectorize(math.erf)), (fnp.isfinite, np.isfinite)]
BINARY = [(fnp.hypot, np.hypot), (fnp.floor_divide, np.floor_divide),
          (fnp.remainder, np.remainder), (fnp.fmod, np.fmod), (fnp.power, np.power),
          (fnp.not_equal, np.not_equal), (fnp.greater_equal, np.greater_equal)]


def assert_numpy_equal(got, want, rtol, name):
    """Values to rtol (ONNX Runtime flushes subnormals: atol of one), NaN where NaN, and
    the sign of every non-NaN (zeros included)."""
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-37, err_msg=name)
    signs = np.isnan(want) | (np.signbit(got) == np.signbit(want))
    assert signs.all(), f"{name}: signs differ at {np.argwhere(~signs).ravel()}"


def test_elementwise_table_against_numpy():
    """Every elementwise lowering on NaN, infinities, signed zeros, tiny and large
    values, against numpy: log1p/expm1 keep a small x's digits, floor_divide is numpy's
    divmod (1.0 // 0.1 is 9.0), a zero remainder takes the divisor's sign, hypot
    neither overflows nor underflows."""
    a, b = np.meshgrid(EDGES, EDGES)
    unary = fnad.onnx.export(lambda x: tuple(f(x) for f, _ in UNARY), EDGES)
    binary = fnad.onnx.export(lambda a, b: tuple(f(a, b) for f, _ in BINARY), a, b)
    with np.errstate(all="ignore"):
        for (f, ref), got in zip(UNARY, ort_run(unary, {"x": EDGES})):
            assert_numpy_equal(got, ref(EDGES).astype(got.dtype), 1e-6, f.__name__)
        for (f, ref), got in zip(BINARY, ort_run(binary, {"a": a, "b": b})):
            assert_numpy_equal(got, ref(a, b), 1e-6, f.__name__)
        # float64, and many magnitudes: the rewritten rules to a few ulp
        x = RNG.standard_normal(2000) * 10.0 ** RNG.integers(-30, 30, 2000)
        y = RNG.standard_normal(2000) * 10.0 ** RNG.integers(-3, 3, 2000)
        for dtype, rtol in ((np.float32, 3e-7), (np.float64, 1e-15)):
            xs = np.concatenate([EDGES, x, [1e-300, 1e300]]).astype(dtype)
            ys = np.concatenate([EDGES[::-1], y, [1e-300, 1e300]]).astype(dtype)
            model = fnad.onnx.export(lambda x, y: (fnp.log1p(x), fnp.expm1(x), fnp.cbrt(x),
                                                   fnp.hypot(x, y), fnp.floor_divide(x, y),
                                                   fnp.remainder(x, y)), xs, ys)
            refs = (np.log1p(xs), np.expm1(xs), np.cbrt(xs), np.hypot(xs, ys),
                    np.floor_divide(xs, ys), np.remainder(xs, ys))
            for name, got, want in zip(("log1p", "expm1", "cbrt", "hypot", "floor_divide",
                                        "remainder"), ort_run(model, {"x": xs, "y": ys}), refs):
                assert_numpy_equal(got, want, rtol, f"{name} {np.dtype(dtype)}")


def test_integer_and_logical_table_against_numpy():
    i = np.array([-7, -4, -1, 0, 1, 3, 4, 9], np.int32)
    a, b = np.meshgrid(i, i[i != 0])
    e = np.abs(b) % 4

    def f(a, b, e):
        return (a // b, lax.div(a, b), lax.rem(a, b), fnp.remainder(a, b), fnp.power(a, e),
                ~a, a | b, a ^ b, a & b, fnp.logical_not(a > 0), (a > 0) ^ (b > 0),
                (a > 0) | (b < 0), a != b, a >= b)
    with np.errstate(all="ignore"):
        want = (a // b, np.trunc(a / b).astype(np.int32), np.fmod(a, b), np.remainder(a, b),
                a ** e, ~a, a | b, a ^ b, a & b, ~(a > 0), (a > 0) ^ (b > 0),
                (a > 0) | (b < 0), a != b, a >= b)
    got = ort_run(fnad.onnx.export(f, a, b, e), {"a": a, "b": b, "e": e})
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, k
        np.testing.assert_array_equal(g, w, err_msg=str(k))


def test_structure_reductions_and_scatters_against_numpy():
    x = RNG.standard_normal((4, 1, 3)).astype(np.float32)
    rows = np.array([2, 0, 2], np.int32)       # row 2 twice: the combining scatters

    def f(x, rows):
        v = fnp.squeeze(x, 1)
        return (fnp.concatenate([v, 2 * v, v[:1]], 0), fnp.prod(v, 0), fnp.min(v, 1),
                v.at[rows[:2]].set(-1.0), v.at[rows].add(1.0), v.at[rows].mul(3.0),
                v.at[rows].min(0.0), v.at[rows].max(0.25))
    v = x[:, 0]
    want = [np.concatenate([v, 2 * v, v[:1]], 0), np.prod(v, 0), np.min(v, 1)]
    for combine, value, idx in ((None, -1.0, rows[:2]), (np.add, 1.0, rows),
                                (np.multiply, 3.0, rows), (np.minimum, 0.0, rows),
                                (np.maximum, 0.25, rows)):
        out = v.copy()
        if combine is None:
            out[idx] = value
        else:
            combine.at(out, idx, value)
        want.append(out)
    model = fnad.onnx.export(f, x, rows, dynamic_axes={"x": [2]})
    for g, w in zip(ort_run(model, {"x": x, "rows": rows}), want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    x5 = RNG.standard_normal((4, 1, 5)).astype(np.float32)       # the dynamic axis at 5
    for g, w in zip(ort_run(model, {"x": x5, "rows": rows}), f(x5, rows)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)


@fnad.custom_jvp
def clipped_log(x):
    return fnp.log(fnp.maximum(x, 1e-3))


clipped_log.defjvp(lambda primals, tangents: (clipped_log(primals[0]),
                                              tangents[0] / fnp.maximum(primals[0], 1e-3)))


def test_nested_jit_custom_rules_and_remat_inline():
    """A jitted helper, a custom_jvp function and a checkpointed block are inlined: the
    model is plain operators (no functions), run at two batch sizes."""
    @fnad.jit
    def dense(w, x):
        return fnp.tanh(x @ w)

    def f(w, x):
        h = fnad.checkpoint(lambda w, x: dense(w, x) * 2.0)(w, x)
        return clipped_log(h * h) + fnad.jit(lambda h: fnp.sum(h @ w.T, -1, keepdims=True))(h)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    jaxpr = fnad.make_jaxpr(f)(w, sample((2, 3), 2))
    assert {e.prim.name for e in jaxpr.program.eqns} >= {"jit_call", "custom_call"}
    model = check_export(f, (2, 3), w, batches=(5,))
    assert not model.functions


def test_export_input_output_names_and_opset_17():
    def f(x, y):
        return x * y, fnp.max(x, 0)
    x = sample((3, 2), 3)
    model = fnad.onnx.export(f, x, 2 * x, input_names=["left", "right"],
                             output_names=["product", "peak"], opset=17,
                             dynamic_axes={"left": {0: "n"}, "right": {0: "n"}})
    assert [o.version for o in model.opset_import] == [17]
    assert [i.name for i in model.graph.input] == ["left", "right"]
    assert [o.name for o in model.graph.output] == ["product", "peak"]
    x6 = sample((6, 2), 6)
    product, peak = ort_run(model, {"left": x6, "right": 2 * x6})
    np.testing.assert_allclose(product, 2 * x6 * x6, rtol=1e-6)
    np.testing.assert_array_equal(peak, x6.max(0))
    with pytest.raises(ValueError, match="input_names has 1 names"):
        fnad.onnx.export(f, x, x, input_names=["only"])
    with pytest.raises(ValueError, match="output_names has 3 names"):
        fnad.onnx.export(f, x, x, output_names=["a", "b", "c"])


def test_windows_over_any_axes():
    """Pools over windows ONNX's (N, C, spatial) layout does not have: five axes with
    three unwindowed, a window along the dynamic axis, one axis; and the pools'
    transpose (gradient) and tangent (jvp) in the same layouts."""
    def f(x):
        window, strides = (1, 2, 1, 2, 1), (1, 2, 1, 1, 1)
        pooled = lax.reduce_window(x, -np.inf, lax.max, window, strides,
                                   [(0, 0), (0, 0), (0, 0), (1, 0), (0, 0)])
        summed = lax.reduce_window(x, 0.0, lax.add, (2, 1, 1, 1, 1), (1,) * 5, "VALID")
        low = lax.reduce_window(x[0, 0, 0, :, 0], np.inf, lax.min, (3,), (2,), "SAME")
        grad = fnad.grad(lambda x: fnp.sum(lax.reduce_window(
            x, -np.inf, lax.max, window, strides, "VALID") ** 2))(x)
        tangent = fnad.jvp(lambda x: lax.reduce_window(x, np.inf, lax.min, window, strides,
                                                       "VALID"), (x,), (fnp.cos(x),))[1]
        grad_min = fnad.grad(lambda x: fnp.sum(lax.reduce_window(
            x, np.inf, lax.min, window, strides, "VALID") ** 2))(x)
        tangent_max = fnad.jvp(lambda x: lax.reduce_window(x, -np.inf, lax.max, window,
                                                           strides, "VALID"), (x,), (x * x,))[1]
        return pooled, summed, low, grad, tangent, grad_min, tangent_max
    model = fnad.onnx.export(f, sample((2, 4, 3, 5, 2), 2), dynamic_axes={"x": [0]})
    for n in (2, 3):
        x = sample((n, 4, 3, 5, 2), n)
        for got, want in zip(ort_run(model, {"x": x}), f(x)):
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6, atol=1e-6)


def test_cumulative_arg_and_dynamic_slices():
    def f(x, i):
        return (fnp.cumprod(x, 1), lax.cummax(x, 1), lax.cummin(x, 1, reverse=True),
                fnp.argmax(x, 1), fnp.argmin(x, 0),
                lax.dynamic_update_slice(x, fnp.ones((2, 2)), (i, 5 - i)),
                lax.dynamic_slice(x, (i, -1), (2, 2)))
    x = np.array([[np.nan, -2.5, 0.5, 1.0], [1.5, -0.5, 2.5, 0.0],
                  [-1.25, 3.0, 0.25, -2.0]], np.float32)
    for i in (np.array(2, np.int32), np.array(-7, np.int32)):
        model = fnad.onnx.export(f, x, i)
        for got, want in zip(ort_run(model, {"x": x, "i": i}), f(x, i)):
            np.testing.assert_array_equal(got, np.asarray(want))
    y = x[1:] + 4
    model = fnad.onnx.export(lambda a, b: fnp.arctan2(a, b), y, -y[::-1])
    np.testing.assert_allclose(ort_run(model, {"a": y, "b": -y[::-1]})[0],
                               np.arctan2(y, -y[::-1]), rtol=1e-6)


def test_argsort_keeps_ties_in_order():
    # fnad's sort is stable; TopK's order among ties is what the export relies on
    x = np.random.default_rng(1).integers(0, 3, (3, 200)).astype(np.float32)
    model = fnad.onnx.export(lambda x: fnp.argsort(x, -1), x)
    np.testing.assert_array_equal(ort_run(model, {"x": x})[0], np.asarray(fnp.argsort(x, -1)))


def test_while_loop_and_integers():
    def f(x, n):
        def body(c):
            i, v = c
            return i + 1, v * 2 - 1
        return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]
    x, n = np.arange(3, dtype=np.int32), np.array(4, np.int32)
    model = fnad.onnx.export(f, x, n)
    np.testing.assert_array_equal(ort_run(model, {"x": x, "n": n})[0], np.asarray(f(x, n)))


def test_export_writes_path_and_pytree_names(tmp_path):
    def f(batch):
        return {"sum": batch["a"] + batch["b"], "prod": batch["a"] * batch["b"]}
    a = np.ones((2, 3), np.float32)
    path = tmp_path / "f.onnx"
    fnad.onnx.export(f, {"a": a, "b": 2 * a}, path=path)
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == ["batch/a", "batch/b"]
    assert [o.name for o in model.graph.output] == ["output/prod", "output/sum"]
    prod, total = ort_run(model, {"batch/a": a, "batch/b": 2 * a})
    np.testing.assert_array_equal(prod, 2 * a)
    np.testing.assert_array_equal(total, 3 * a)


def test_training_step_exports():
    """A whole SGD step (forward, backward through max pool and an embedding gather,
    update) is one ONNX model that ONNX Runtime runs to fnad's numbers."""
    apply, params = init_params("cnn", (-1, 8, 8, 1))
    table = random.normal(random.PRNGKey(4), (10, 10))

    def loss(p, table, x, y):
        logits = apply(p, x) + table[y]          # gather forward, scatter_add backward
        return -fnp.mean(fnp.sum(nn.log_softmax(logits) * nn.one_hot(y, 10), -1))

    def step(p, x, y):
        value, (g, g_table) = fnad.value_and_grad(loss, argnums=(0, 1))(p[0], p[1], x, y)
        new = fnad.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, (g, g_table))
        return value, new

    model = fnad.onnx.export(step, sample((4, 8, 8, 1), 4), np.arange(4, dtype=np.int32),
                             params=(params, table),
                             dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert {"ScatterElements", "ScatterND", "GatherND"} <= {n.op_type for n in model.graph.node}
    for n in (4, 6):        # the mean over the batch and its 1/n follow the batch size
        x, y = sample((n, 8, 8, 1), n), np.array([3, 1, 3, 9, 0, 9][:n], np.int32)
        got = ort_run(model, {"x": x, "y": y})
        want = tree_leaves(step((params, table), x, y))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- errors

def test_unsupported_primitive_names_it_and_the_line():
    def f(x):
        return fnp.linalg.det(x)        # the line the error must name
    with pytest.raises(UnsupportedPrimitiveError, match=r"'det'.*test_onnx.py:\d+ in f"):
        fnad.onnx.export(f, np.eye(3, dtype=np.float32))


def test_random_bits_inside_the_function_are_refused():
    for f in (lambda key: random.normal(key, (3,)), lambda key: random.split(key)):
        with pytest.raises(UnsupportedPrimitiveError, match="random bits.*pass them in"):
            fnad.onnx.export(f, random.PRNGKey(0))


def test_sizes_as_numbers_follow_the_axis_or_pin_it():
    def centered(x):       # sizes as counts, computed from the input's shape at run time
        return x - fnp.mean(x, axis=0) + x * (1.0 / x.shape[0])
    model = fnad.onnx.export(centered, np.ones((4, 3), np.float32), dynamic_axes={"x": [0]})
    for n in (4, 7):
        x = sample((n, 3), n)
        np.testing.assert_allclose(ort_run(model, {"x": x})[0], np.asarray(centered(x)),
                                   atol=1e-6)

    def f(x):
        return x * x.shape[0] ** 2          # size squared: not linear in the size
    with pytest.raises(DynamicAxisError, match=r"equation mul at .*test_onnx.py:\d+ in f"):
        fnad.onnx.export(f, np.ones((4, 3), np.float32), dynamic_axes={"x": [0]})
    model = fnad.onnx.export(f, np.ones((4, 3), np.float32))    # a static batch is fine
    x = sample((4, 3), 4)
    np.testing.assert_allclose(ort_run(model, {"x": x})[0], np.asarray(f(x)), atol=1e-6)

    def first_rows(x):      # 4 rows, though the example has 4: not "the whole axis"
        return x[:4, 1:]
    model = fnad.onnx.export(first_rows, x, dynamic_axes={"x": [0]})
    x6 = sample((6, 3), 6)
    np.testing.assert_array_equal(ort_run(model, {"x": x6})[0], np.asarray(first_rows(x6)))
    with pytest.raises(DynamicAxisError, match="no-op at the example's size"):
        fnad.onnx.export(lambda x: x[:4], x, dynamic_axes={"x": [0]})
    with pytest.raises(DynamicAxisError, match="equation scan .* its length"):
        fnad.onnx.export(lambda x: lax.fori_loop(0, x.shape[0], lambda i, c: c + 1.0, x[0]),
                         x, dynamic_axes={"x": [0]})


def test_unsupported_operators_listed_at_load():
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Hardmax", ["x"], ["h"]),
                               helper.make_node("Relu", ["h"], ["r"]),
                               helper.make_node("Shrink", ["r"], ["y"])], "g", [x], [y])
    with pytest.raises(UnsupportedOperatorError, match="2 ONNX operator.*Hardmax, Shrink"):
        fnad.onnx.load(helper.make_model(graph))


def test_corrupt_model_file_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"\x08\x07\x12\xffnot a model")
    with pytest.raises(FileFormatError, match="broken.onnx"):
        fnad.onnx.load(path)


# --------------------------------------------------------------------------- load

@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_round_trip_values_and_gradients(kind):
    apply, params = init_params(kind, (-1, 8, 8, 1))
    x = sample((3, 8, 8, 1), 3)
    model = fnad.onnx.export(lambda p, image: apply(p, image), x, params=params,
                             dynamic_axes={"image": {0: "batch"}})
    loaded, loaded_params = fnad.onnx.load(model)
    np.testing.assert_allclose(np.asarray(loaded(loaded_params, x)),
                               np.asarray(apply(params, x)), rtol=1e-6, atol=1e-6)
    g = fnad.grad(lambda p: fnp.sum(apply(p, x) ** 2))(params)
    g_loaded = fnad.grad(lambda p: fnp.sum(loaded(p, x) ** 2))(loaded_params)
    for t, want in zip(model.graph.initializer, tree_leaves(g)):
        np.testing.assert_allclose(np.asarray(g_loaded[t.name]), np.asarray(want),
                                   rtol=1e-5, atol=1e-6)
    x5 = sample((5, 8, 8, 1), 5)     # other batch sizes, under jit and vmap
    np.testing.assert_allclose(np.asarray(fnad.jit(loaded)(loaded_params, x5)),
                               np.asarray(apply(params, x5)), rtol=1e-5, atol=1e-6)
    per_example = fnad.vmap(loaded, in_axes=(None, 0))(loaded_params, x5[:, None])
    np.testing.assert_allclose(np.asarray(per_example)[:, 0], np.asarray(apply(params, x5)),
                               rtol=1e-5, atol=1e-6)


def test_round_trip_transformer_and_rnn():
    params = transformer_params()
    x = sample((2, 5, 8), 2)
    loaded, lp = fnad.onnx.load(fnad.onnx.export(transformer_block, x, params=params))
    np.testing.assert_allclose(np.asarray(loaded(lp, x)),
                               np.asarray(transformer_block(params, x)), rtol=1e-5, atol=1e-5)
    g = fnad.grad(lambda x: fnp.sum(transformer_block(params, x) ** 2))(x)
    np.testing.assert_allclose(np.asarray(fnad.grad(lambda x: fnp.sum(loaded(lp, x) ** 2))(x)),
                               np.asarray(g), rtol=1e-4, atol=1e-5)
    k1, k2 = random.split(random.PRNGKey(3))
    rp = {"wh": random.normal(k1, (4, 4)) * 0.5, "wx": random.normal(k2, (3, 4))}
    xs = sample((2, 6, 3), 2)
    loaded, lp = fnad.onnx.load(fnad.onnx.export(rnn, xs, params=rp))
    for got, want in zip(loaded(lp, xs), rnn(rp, xs)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    g = fnad.grad(lambda p: sum(fnp.sum(o ** 2) for o in rnn(p, xs)))(rp)
    g_loaded = fnad.grad(lambda p: sum(fnp.sum(o ** 2) for o in loaded(p, xs)))(lp)
    for name in ("wh", "wx"):
        np.testing.assert_allclose(np.asarray(g_loaded[f"params/{name}"]), np.asarray(g[name]),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_round_trip_control_flow_and_its_gradient():
    x = sample((3, 3), 3)
    loaded, lp = fnad.onnx.load(fnad.onnx.export(branchy, x))
    for v in (x, np.abs(x)):            # both sides of the cond
        np.testing.assert_allclose(np.asarray(loaded(lp, v)), np.asarray(branchy(v)),
                                   rtol=1e-6, atol=1e-6)
        g = fnad.grad(lambda v: fnp.sum(branchy(v) ** 2))(v)
        g_loaded = fnad.grad(lambda v: fnp.sum(loaded(lp, v) ** 2))(v)
        np.testing.assert_allclose(np.asarray(g_loaded), np.asarray(g), rtol=1e-5, atol=1e-6)


def test_loaded_operators_match_onnxruntime():
    """Operators exported models of other frameworks use (PRelu, HardSigmoid, HardSwish,
    Selu, Split, Trilu, the L1/L2/sum-square/log-sum-exp reductions, Scan along axis 1
    backwards), each against ONNX Runtime on the same hand-built graph."""
    from onnx import TensorProto, helper
    f32 = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "e"], ["s2"]), helper.make_node("Mul", ["s2", "e"], ["y"])],
        "body", [helper.make_tensor_value_info(n, f32, [3]) for n in ("s", "e")],
        [helper.make_tensor_value_info(n, f32, [3]) for n in ("s2", "y")])
    nodes = [
        helper.make_node("PRelu", ["x", "slope"], ["a"]),
        helper.make_node("HardSigmoid", ["x"], ["b"], alpha=0.3),
        helper.make_node("HardSwish", ["x"], ["c"]),
        helper.make_node("Selu", ["x"], ["d"]),
        helper.make_node("Split", ["x", "sizes"], ["e1", "e2"], axis=1),
        helper.make_node("Trilu", ["x", "k"], ["f"], upper=0),
        helper.make_node("ReduceL2", ["x", "axes"], ["g"], keepdims=0),
        helper.make_node("ReduceLogSumExp", ["x", "axes"], ["h"], keepdims=1),
        helper.make_node("ReduceSumSquare", ["x", "axes"], ["i"], keepdims=0),
        helper.make_node("ReduceL1", ["x", "axes"], ["j"], keepdims=0),
        helper.make_node("Scan", ["init", "x"], ["state", "ys"], body=body, num_scan_inputs=1,
                         scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])]
    outs = ["a", "b", "c", "d", "e1", "e2", "f", "g", "h", "i", "j", "state", "ys"]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", f32, [3, 4]),
                     helper.make_tensor_value_info("init", f32, [3])],
        [helper.make_value_info(o, helper.make_tensor_type_proto(f32, None)) for o in outs],
        initializer=[helper.make_tensor("slope", f32, [4], [0.1, 0.2, 0.3, 0.4]),
                     helper.make_tensor("sizes", TensorProto.INT64, [2], [1, 3]),
                     helper.make_tensor("k", TensorProto.INT64, [], [1]),
                     helper.make_tensor("axes", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    x, init = 3 * sample((3, 4), 3), np.ones(3, np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=[
        "CPUExecutionProvider"]).run(None, {"x": x, "init": init})
    apply, params = fnad.onnx.load(model)
    for name, got, w in zip(outs, apply(params, x, init), want):
        np.testing.assert_allclose(np.asarray(got), w, rtol=1e-5, atol=1e-5, err_msg=name)


LOADER_TABLE = [     # (operator, attributes, inputs, initializers)
    ("Erf", {}, ["x"], {}), ("GlobalAveragePool", {}, ["x4"], {}),
    ("GlobalMaxPool", {}, ["x4"], {}), ("LogSoftmax", {"axis": 1}, ["x"], {}),
    ("Softplus", {}, ["x"], {}), ("Softsign", {}, ["x"], {}),
    ("LeakyRelu", {"alpha": 0.2}, ["x"], {}), ("Elu", {"alpha": 0.7}, ["x"], {}),
    ("Clip", {}, ["x", "lo", "hi"], {"lo": np.float32(-0.5), "hi": np.float32(0.75)}),
    ("Pad", {"mode": "constant"}, ["x", "pads", "pad_value"],
     {"pads": np.array([0, 1, 1, 2], np.int64), "pad_value": np.float32(-2.0)}),
    ("Tile", {}, ["x", "repeats"], {"repeats": np.array([2, 1], np.int64)}),
    ("Expand", {}, ["x", "shape2"], {"shape2": np.array([2, 3, 4], np.int64)}),
    ("TopK", {"axis": 1, "largest": 0}, ["x", "k"], {"k": np.array([2], np.int64)}),
    ("CumSum", {"reverse": 1}, ["x", "axis"], {"axis": np.int64(1)}),
    ("GatherElements", {"axis": 1}, ["x", "cols"], {"cols": np.array(
        [[3, 0], [1, 1], [0, 2]], np.int64)}),
    ("GatherND", {}, ["x", "rows"], {"rows": np.array([[2, 1], [0, 3]], np.int64)}),
    ("ScatterND", {}, ["x", "rows", "upd"], {"rows": np.array([[2, 1], [0, 3]], np.int64),
                                             "upd": np.array([5.0, 6.0], np.float32)}),
    ("ArgMin", {"axis": 1, "keepdims": 0}, ["x"], {}),
    ("ReduceMin", {"keepdims": 0}, ["x", "axis1"], {"axis1": np.array([1], np.int64)}),
    ("ReduceProd", {"keepdims": 1}, ["x", "axis1"], {"axis1": np.array([0], np.int64)}),
    ("Max", {}, ["x", "x2", "row"], {"row": np.float32([0.1, -0.2, 0.3, 0])}),
    ("Min", {}, ["x", "x2"], {}), ("Mean", {}, ["x", "x2"], {}), ("Sum", {}, ["x", "x2"], {}),
    ("Sign", {}, ["x"], {}), ("Round", {}, ["x"], {}), ("Reciprocal", {}, ["x"], {}),
    ("Pow", {}, ["x", "x2"], {}), ("Neg", {}, ["x"], {}), ("Abs", {}, ["x"], {}),
    ("Floor", {}, ["x"], {}), ("Ceil", {}, ["x"], {}), ("Sin", {}, ["x"], {}),
    ("Cos", {}, ["x"], {}), ("Tan", {}, ["x"], {}), ("Atan", {}, ["x"], {}),
    ("Sinh", {}, ["x"], {}), ("Cosh", {}, ["x"], {}), ("Asinh", {}, ["x"], {}),
    ("Log", {}, ["x"], {}), ("IsInf", {}, ["x"], {}), ("Dropout", {}, ["x"], {}),
    ("Equal", {}, ["x", "x2"], {}), ("GreaterOrEqual", {}, ["x", "x2"], {}),
    ("Size", {}, ["x"], {}), ("Range", {}, ["start", "limit", "delta"],
                              {"start": np.float32(1), "limit": np.float32(4),
                               "delta": np.float32(0.5)}),
    ("ConstantOfShape", {"value": np.array([1.5], np.float32)}, ["shape2"],
     {"shape2": np.array([2, 3], np.int64)}),
]


OUTPUT_TYPES = {"TopK": (1, 7), "ArgMin": (7,), "IsInf": (9,), "Equal": (9,),  # else float
                "GreaterOrEqual": (9,), "Size": (7,)}


def test_loader_operator_table_matches_onnxruntime():
    """Each operator fnad.onnx.load implements and the other tests do not reach, as a
    one-node model, against ONNX Runtime on the same inputs."""
    from onnx import helper, numpy_helper
    x = np.array([[np.nan, -2.5, 0.5, 1.0], [1.5, -0.5, 2.5, 0.0],
                  [-1.25, 3.0, 0.25, -2.0]], np.float32)
    x[0, 0] = 0.3           # NaN-free: ONNX leaves NaN through some of these open
    feeds = {"x": x, "x2": np.abs(x[::-1]) + 0.5,
             "x4": RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)}
    for op_type, attrs, inputs, inits in LOADER_TABLE:
        attrs = {k: (numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v)
                 for k, v in attrs.items()}
        outs = 2 if op_type == "TopK" else 1
        node = helper.make_node(op_type, inputs, [f"y{i}" for i in range(outs)], **attrs)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info(n, 1, feeds[n].shape)
                          for n in inputs if n in feeds],
            [helper.make_value_info(f"y{i}", helper.make_tensor_type_proto(
                OUTPUT_TYPES.get(op_type, (1, 1))[i], None))
             for i in range(outs)],
            initializer=[numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 9
        given = {n: feeds[n] for n in inputs if n in feeds}
        want = ort.InferenceSession(model.SerializeToString(), providers=[
            "CPUExecutionProvider"]).run(None, given)
        apply, params = fnad.onnx.load(model)
        with np.errstate(all="ignore"):
            got = apply(params, *given.values())
        got = list(got) if isinstance(got, tuple) else [got]
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6, err_msg=op_type)
            assert np.asarray(g).shape == w.shape, op_type


def _one_node_against_the_reference(node, inputs, outputs, opset, inits, *args):
    """A one-node model loaded by fnad vs onnx.reference (ONNX's own semantics)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    graph = helper.make_graph([node], "g", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    apply, params = fnad.onnx.load(model)
    got = apply(params, *args)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    want = ReferenceEvaluator(model).run(None, {i.name: a for i, a in zip(graph.input, args)})
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == w.dtype and np.array_equal(np.asarray(g), w), (g, w)


def test_loader_refuses_training_dropout_and_string_constants():
    from onnx import TensorProto, helper, numpy_helper
    info = helper.make_tensor_value_info
    for node, inits in (
            (helper.make_node("Dropout", ["x", "r", "t"], ["y"]),
             [numpy_helper.from_array(np.float32(0.5), "r"),
              numpy_helper.from_array(np.array(True), "t")]),
            (helper.make_node("Constant", [], ["y"], value_strings=["a", "b"]), [])):
        graph = helper.make_graph([node], "g", [info("x", TensorProto.FLOAT, [2])],
                                  [info("y", TensorProto.FLOAT, None)], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        apply, params = fnad.onnx.load(model)
        with pytest.raises(fnad.errors.UnsupportedOperatorError, match=node.op_type):
            apply(params, np.ones(2, np.float32))
    # a node reading a value nothing defines: a malformed model, said so
    graph = helper.make_graph([helper.make_node("Relu", ["nowhere"], ["y"], name="r")], "g",
                              [info("x", TensorProto.FLOAT, [2])],
                              [info("y", TensorProto.FLOAT, None)])
    apply, params = fnad.onnx.load(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)]))
    with pytest.raises(fnad.errors.FileFormatError, match="'nowhere'.*no graph input"):
        apply(params, np.ones(2, np.float32))


def test_bfloat16_exports_keep_nans_and_loads_weights_as_params():
    """bfloat16 is a float to the exporter's NaN rules and to the loader's parameters
    (numpy calls its kind "V")."""
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    bf16 = fnp.bfloat16
    x = np.array([1.5, np.nan, -2.0, 3.0], bf16)
    model = fnad.onnx.export(lambda v: fnp.maximum(v, np.asarray(1.0, bf16)), x)
    assert "IsNaN" in {n.op_type for n in model.graph.node}
    got = ReferenceEvaluator(model).run(None, {model.graph.input[0].name: x})[0]
    assert np.array_equal(got, np.asarray(fnp.maximum(x, np.asarray(1.0, bf16))),
                          equal_nan=True)
    w = np.arange(8, dtype=np.float32).reshape(4, 2).astype(bf16)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)],
        initializer=[numpy_helper.from_array(w, "w")])
    apply, params = fnad.onnx.load(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)]))
    assert set(params) == {"w"} and params["w"].dtype == bf16
    g = fnad.grad(lambda p: apply(p, np.ones((1, 4), bf16)).astype(np.float32).sum())(params)
    assert np.array_equal(np.asarray(g["w"]).astype(np.float32), np.ones((4, 2), np.float32))


def test_loader_reductions_exclusive_cumsum_and_integer_topk_are_onnxs():
    """Reductions' `axes` attribute before opset 18 (it was dropped: a mean over every
    axis), exclusive CumSum past an inf (cumsum - x gave NaN), TopK largest of uint8
    and int8 (ranking by -x wrapped around)."""
    from onnx import TensorProto, helper, numpy_helper
    info = helper.make_tensor_value_info
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for op_type, opset, axes in (("ReduceMean", 13, [1]), ("ReduceSum", 11, [0]),
                                 ("ReduceMax", 17, [1])):
        _one_node_against_the_reference(
            helper.make_node(op_type, ["x"], ["y"], axes=axes, keepdims=1),
            [info("x", TensorProto.FLOAT, [2, 3])], [info("y", TensorProto.FLOAT, None)],
            opset, [], x)
    for reverse in (0, 1):
        _one_node_against_the_reference(
            helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=reverse),
            [info("x", TensorProto.FLOAT, [4])], [info("y", TensorProto.FLOAT, None)], 14,
            [numpy_helper.from_array(np.array(0, np.int64), "a")],
            np.array([1.0, np.inf, 2.0, -0.5], np.float32))
    for values, elem in ((np.array([0, 200, 3, 200], np.uint8), TensorProto.UINT8),
                         (np.array([-128, 5, 127, -128], np.int8), TensorProto.INT8),
                         (np.array([1.0, 3.0, 3.0, -2.0], np.float32), TensorProto.FLOAT)):
        _one_node_against_the_reference(
            helper.make_node("TopK", ["x", "k"], ["v", "i"], largest=1),
            [info("x", elem, [4])], [info("v", elem, None), info("i", TensorProto.INT64, None)],
            14, [numpy_helper.from_array(np.array([3], np.int64), "k")], values)


def test_torch_exported_model_loads_and_differentiates():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 4, 3, padding=1, groups=2),
        torch.nn.Sigmoid(), torch.nn.AvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(16, 12),
        torch.nn.GELU(), torch.nn.LayerNorm(12), torch.nn.Tanh(), torch.nn.Linear(12, 5),
        torch.nn.Softmax(-1))
    with torch.no_grad():       # statistics that are not the identity
        net[1].running_mean.uniform_(-0.5, 0.5)
        net[1].running_var.uniform_(0.5, 2.0)
    net.eval()
    x = torch.randn(3, 1, 8, 8)
    buf = io.BytesIO()
    with warnings.catch_warnings():     # the TorchScript exporter is deprecated (no
        warnings.simplefilter("ignore")  # onnxscript here for the dynamo one)
        torch.onnx.export(net, (x,), buf, dynamo=False, input_names=["x"],
                          do_constant_folding=False, dynamic_axes={"x": {0: "batch"}})
    model = onnx.load_from_string(buf.getvalue())
    apply, params = fnad.onnx.load(model)
    assert {"Conv", "BatchNormalization", "MaxPool", "AveragePool", "Gemm",
            "LayerNormalization"} <= {n.op_type for n in model.graph.node}
    for n in (3, 5):
        xn = torch.randn(n, 1, 8, 8)
        np.testing.assert_allclose(np.asarray(apply(params, xn.numpy())),
                                   net(xn).detach().numpy(), rtol=1e-5, atol=1e-5)
    target = torch.randn(3, 5)
    loss = ((net(x) - target) ** 2).sum()
    loss.backward()
    grads = fnad.grad(lambda p: fnp.sum((apply(p, x.numpy()) - target.numpy()) ** 2))(params)
    named = dict(net.named_parameters())
    assert set(named) <= set(grads)
    for name, p in named.items():
        np.testing.assert_allclose(np.asarray(grads[name]), p.grad.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_torch_transformer_encoder_loads_under_jit():
    """torch's TransformerEncoderLayer and an embedding, exported with a dynamic batch:
    its shape arithmetic (Shape, Gather, Concat into Reshape) stays static under jit."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(11, 8)
            self.enc = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                        batch_first=True)

        def forward(self, tokens):
            h = self.enc(self.emb(tokens))
            return h.reshape(h.size(0), -1).mean(-1)

    net = Encoder().eval()
    tokens = torch.randint(0, 11, (3, 5))
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (tokens,), buf, dynamo=False, input_names=["tokens"],
                          dynamic_axes={"tokens": {0: "batch"}})
    apply, params = fnad.onnx.load(onnx.load_from_string(buf.getvalue()))
    jitted = fnad.jit(apply)
    for n in (3, 4):
        t = torch.randint(0, 11, (n, 5))
        want = net(t).detach().numpy()
        np.testing.assert_allclose(np.asarray(apply(params, t.numpy())), want,
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(jitted(params, t.numpy())), want,
                                   rtol=1e-5, atol=1e-5)
