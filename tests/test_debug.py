"""fnad.debug (print, callback, breakpoint), fnad.pure_callback and fnad.hooks: the
values a host function sees, and the order it sees them in, under every transform;
gradient hooks and layer interceptors. Printed output is captured and compared line
by line with what numpy computes."""
import io
import math

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import hooks, lax, nn, random
from fnad.demo import MODELS
from fnad.errors import CallbackError, GradientError

X = np.array([0.5, -1.0, 2.0])


def printing(x):
    fnad.debug.print("x={}", x)
    y = fnp.sin(x) * 2.0
    fnad.debug.print("y={y}", y=y)
    return fnp.sum(y)


def lines_of(capsys):
    return capsys.readouterr().out.splitlines()


def expected(x):
    return [f"x={np.asarray(x)}", f"y={np.sin(np.asarray(x)) * 2.0}"]


@pytest.mark.parametrize("mode", ["eager", "jit", "grad", "jit_grad", "grad_jit",
                                  "grad_jit_jit"])
def test_print_shows_values_in_program_order(mode, capsys):
    # grad of a jitted function runs it again for its backward pass: the values are
    # printed once all the same (the replay leaves the printing out)
    x = fnp.asarray(X)
    f = {"eager": printing, "jit": fnad.jit(printing), "grad": fnad.grad(printing),
         "jit_grad": fnad.jit(fnad.grad(printing)),
         "grad_jit": fnad.grad(fnad.jit(printing)),
         "grad_jit_jit": fnad.grad(fnad.jit(lambda x: fnad.jit(printing)(x) * 1.0))}[mode]
    f(x)
    assert lines_of(capsys) == expected(X)
    f(x + 1.0)      # a compiled call prints too, with the new values
    assert lines_of(capsys) == expected(X + 1.0)


def test_print_under_vmap_prints_one_line_per_example(capsys):
    xs = np.arange(6.0).reshape(2, 3)
    fnad.vmap(printing)(fnp.asarray(xs))
    assert lines_of(capsys) == [f"x={xs[0]}", f"x={xs[1]}",
                                f"y={np.sin(xs[0]) * 2.0}", f"y={np.sin(xs[1]) * 2.0}"]
    fnad.jit(fnad.vmap(printing, in_axes=1))(fnp.asarray(xs))
    assert lines_of(capsys)[:3] == [f"x={xs[:, 0]}", f"x={xs[:, 1]}", f"x={xs[:, 2]}"]


def scan_body(carry, x):
    fnad.debug.print("carry={} x={}", carry, x)
    return carry + x, carry * x


@pytest.mark.parametrize("wrap", ["eager", "jit", "grad"])
def test_print_runs_every_iteration_of_a_scan(wrap, capsys):
    xs = fnp.asarray(np.array([1.0, 2.0, 3.0]))
    run = (lambda xs: lax.scan(scan_body, 0.0, xs)[0])
    f = {"eager": run, "jit": fnad.jit(run), "grad": fnad.grad(run)}[wrap]
    f(xs)
    assert lines_of(capsys) == ["carry=0.0 x=1.0", "carry=1.0 x=2.0", "carry=3.0 x=3.0"]


def test_print_in_while_loop_cond_and_body_under_jit(capsys):
    def cond(c):
        fnad.debug.print("cond {}", c)
        return c < 2

    def body(c):
        fnad.debug.print("body {}", c)
        return c + 1
    assert int(fnad.jit(lambda c: lax.while_loop(cond, body, c))(0)) == 2
    assert lines_of(capsys) == ["cond 0", "body 0", "cond 1", "body 1", "cond 2"]


def test_print_in_the_branch_cond_takes_and_under_jvp(capsys):
    def f(x):
        def up(x):
            fnad.debug.print("up {}", x)
            return x + 1.0

        def down(x):
            fnad.debug.print("down {}", x)
            return x - 1.0
        return lax.cond(x > 0, up, down, x)
    for run in (f, fnad.jit(f)):
        assert float(run(fnp.float32(2.0))) == 3.0 and float(run(fnp.float32(-2.0))) == -3.0
        assert lines_of(capsys) == ["up 2.0", "down -2.0"]
    # jvp (and jit of jvp) prints the primal values, once
    for run in (fnad.jvp, lambda *a: fnad.jit(fnad.jvp, static_argnums=0)(*a)):
        primal, tangent = run(printing, (fnp.asarray(X),), (fnp.asarray(np.ones(3)),))
        np.testing.assert_allclose(tangent, np.sum(2 * np.cos(X)))
        assert lines_of(capsys) == expected(X)


def test_effects_are_kept_and_ordered_by_the_optimizer():
    # the printed value is otherwise unused and computed twice: neither DCE nor CSE
    # may remove or merge the callbacks
    seen = []

    def f(x):
        fnad.debug.callback(lambda v: seen.append(("a", float(v))), x * 2.0)
        fnad.debug.callback(lambda v: seen.append(("b", float(v))), x * 2.0)
        return x
    jaxpr = fnad.make_jaxpr(f)(1.0)
    assert [e.prim.name for e in jaxpr.program.eqns].count("debug_callback") == 2
    assert "\n    debug_callback[callback=<lambda>] " in str(jaxpr)     # no outputs, no "="
    fnad.jit(f)(fnp.float32(3.0))
    assert seen == [("a", 6.0), ("b", 6.0)]


def test_callback_receives_pytrees_of_numpy_values():
    got = []
    fnad.jit(lambda t: fnad.debug.callback(lambda d, s: got.append((d, s)),
                                           {"w": t * 2}, s="static"))(fnp.ones(2))
    (d, s), = got
    assert s == "static" and isinstance(d["w"], np.ndarray)
    np.testing.assert_array_equal(d["w"], [2.0, 2.0])


def test_breakpoint_opens_pdb_with_the_arrays(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("p float(y.sum())\nc\n"))

    def f(x):
        y = x * 3.0
        fnad.debug.breakpoint()
        return y
    fnad.jit(f)(fnp.asarray(np.ones(2)))
    out = capsys.readouterr().out
    assert "fnad.debug.breakpoint at" in out and "6.0" in out


# --------------------------------------------------------------------------- pure_callback

def host_cos(a):
    return np.cos(a)


@fnad.custom_jvp
def cos_on_host(x):
    return fnad.pure_callback(host_cos, fnad.ShapeDtypeStruct(x.shape, x.dtype), x)


@cos_on_host.defjvp
def _cos_jvp(primals, tangents):
    x, = primals
    t, = tangents
    sin = fnad.pure_callback(np.sin, fnad.ShapeDtypeStruct(x.shape, x.dtype), x)
    return cos_on_host(x), -sin * t


def test_pure_callback_under_jit_and_differentiated_through_custom_jvp():
    x = np.array([0.3, 1.1, -2.0])
    out = fnad.jit(lambda x: cos_on_host(x) * 2.0 + 1.0)(fnp.asarray(x))
    np.testing.assert_allclose(out, np.cos(x) * 2.0 + 1.0, rtol=1e-15)
    g = fnad.jit(fnad.grad(lambda x: fnp.sum(cos_on_host(x) ** 2)))(fnp.asarray(x))
    np.testing.assert_allclose(g, -2 * np.cos(x) * np.sin(x), rtol=1e-13)
    # central differences in float64
    eps, f = 1e-6, (lambda v: np.sum(np.cos(v) ** 2))
    fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_pure_callback_without_a_rule_says_to_use_custom_jvp():
    def f(x):
        return fnp.sum(fnad.pure_callback(host_cos, fnad.ShapeDtypeStruct((3,), np.float64), x))
    with pytest.raises(GradientError, match="custom_jvp"):
        fnad.jvp(f, (fnp.asarray(X),), (fnp.asarray(X),))
    with pytest.raises(GradientError, match="custom_jvp"):
        fnad.grad(f)(fnp.asarray(X))


# A host function fnad cannot trace (math.erf, one element at a time) and its
# derivative 2/sqrt(pi) exp(-x^2), both on the host, joined by custom_vjp.
host_erf = np.vectorize(math.erf, otypes=[np.float64])


@fnad.custom_vjp
def erf_on_host(x):
    return fnad.pure_callback(host_erf, fnad.ShapeDtypeStruct(x.shape, x.dtype), x,
                              vmap_method="expand_dims")


def _erf_fwd(x):
    return erf_on_host(x), x


def _erf_bwd(x, cotangent):
    slope = fnad.pure_callback(lambda a: 2 / np.sqrt(np.pi) * np.exp(-a * a),
                               fnad.ShapeDtypeStruct(x.shape, x.dtype), x,
                               vmap_method="expand_dims")
    return (cotangent * slope,)


erf_on_host.defvjp(_erf_fwd, _erf_bwd)


def test_pure_callback_differentiated_through_custom_vjp():
    x = np.array([0.3, 1.1, -2.0])
    erf = np.array([math.erf(v) for v in x])
    loss = (lambda x: fnp.sum(erf_on_host(x) ** 2))
    expected = 2 * erf * 2 / math.sqrt(math.pi) * np.exp(-x ** 2)
    for run in (fnad.grad(loss), fnad.jit(fnad.grad(loss)), fnad.grad(fnad.jit(loss))):
        np.testing.assert_allclose(run(fnp.asarray(x)), expected, rtol=1e-14)
    eps, f = 1e-6, (lambda v: sum(math.erf(a) ** 2 for a in v))
    fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(expected, fd, rtol=1e-6)
    # per-example gradients: vmap over grad calls both host functions once, batched
    per_example = fnad.vmap(fnad.grad(lambda v: erf_on_host(v)))(fnp.asarray(x))
    np.testing.assert_allclose(per_example, 2 / math.sqrt(math.pi) * np.exp(-x ** 2),
                               rtol=1e-14)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_vmap_methods(method):
    calls = []

    def host(a, b):
        calls.append((a.shape, b.shape))
        return a * b
    xs, w = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    f = fnad.vmap(lambda x: fnad.pure_callback(
        host, fnad.ShapeDtypeStruct((3,), np.float64), x, fnp.asarray(w),
        vmap_method=method))
    np.testing.assert_array_equal(f(fnp.asarray(xs)), xs * w)
    assert calls == {"sequential": [((3,), (3,))] * 2, "expand_dims": [((2, 3), (1, 3))],
                     "broadcast_all": [((2, 3), (2, 3))]}[method]


def test_pure_callback_pytree_results_and_dtype_casts():
    def host(a):
        return {"sum": np.sum(a, dtype=np.float64), "twice": (a * 2).astype(np.float64)}
    spec = {"sum": fnad.ShapeDtypeStruct((), np.float32),
            "twice": fnad.ShapeDtypeStruct((3,), np.float32)}
    out = fnad.jit(lambda a: fnad.pure_callback(host, spec, a))(fnp.asarray(X, np.float32))
    assert out["sum"].dtype == np.float32 and out["twice"].dtype == np.float32
    np.testing.assert_allclose(out["twice"], 2 * X)
    np.testing.assert_allclose(out["sum"], X.sum())
    with pytest.raises(CallbackError, match="dtype float64.*int32"):
        fnad.pure_callback(lambda a: a * 0.5, fnad.ShapeDtypeStruct((3,), np.int32), X)
    with pytest.raises(CallbackError, match="returned a"):
        fnad.pure_callback(lambda a: (a, a), fnad.ShapeDtypeStruct((3,), np.float64), X)


def test_pure_callback_errors():
    spec = fnad.ShapeDtypeStruct((3,), np.float64)
    with pytest.raises(CallbackError, match=r"shape \(2,\).*\(3,\)"):
        fnad.jit(lambda x: fnad.pure_callback(lambda a: a[:2], spec, x))(fnp.asarray(X))
    with pytest.raises(CallbackError, match="vmap_method"):
        fnad.vmap(lambda x: fnad.pure_callback(host_cos, spec, x))(fnp.ones((2, 3)))
    with pytest.raises(CallbackError, match="callable"):
        fnad.pure_callback(3, spec, X)
    # JAX's options fnad has no meaning for are refused, not dropped
    with pytest.raises(CallbackError, match="sharding"):
        fnad.pure_callback(host_cos, spec, X, sharding="one device")
    with pytest.raises(CallbackError, match="backend"):
        fnad.debug.breakpoint(backend="cpu")
    with pytest.raises(ValueError, match="perfetto"):
        with fnad.profiler.trace("unused-log-dir", create_perfetto_link=True):
            pass


# --------------------------------------------------------------------------- hooks

def doubled(x):
    return fnp.sum(hooks.grad_hook(x, lambda g: g * 2.0) ** 2)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_grad_hook_doubles_the_gradient(mode):
    g = (fnad.grad(doubled) if mode == "eager" else fnad.jit(fnad.grad(doubled)))(fnp.asarray(X))
    np.testing.assert_allclose(g, 2 * (2 * X))
    np.testing.assert_allclose(doubled(fnp.asarray(X)), np.sum(X ** 2))   # forward: identity


def test_grad_hook_under_vmap_and_observing_hooks():
    gs = fnad.vmap(fnad.grad(doubled))(fnp.asarray(np.stack([X, -X])))
    np.testing.assert_allclose(gs, np.stack([4 * X, -4 * X]))
    seen = []

    def f(x):
        y = hooks.observe_grad(x, seen.append)
        return fnp.sum(fnp.sin(y))
    fnad.jit(fnad.grad(f))(fnp.asarray(X))
    fnad.grad(fnad.jit(f))(fnp.asarray(X))
    assert len(seen) == 2
    np.testing.assert_allclose(seen[0], np.cos(X))
    np.testing.assert_allclose(seen[1], np.cos(X))
    none = fnad.grad(lambda x: fnp.sum(hooks.grad_hook(x, lambda g: None) * 3.0))(fnp.asarray(X))
    np.testing.assert_allclose(none, [3.0] * 3)


DEMO_SHAPES = {"0:Conv": (2, 8, 8, 16), "1:relu": (2, 8, 8, 16), "2:Conv": (2, 8, 8, 32),
               "3:relu": (2, 8, 8, 32), "4:MaxPool": (2, 4, 4, 32), "5:Flatten": (2, 512),
               "6:Dense": (2, 64), "7:relu": (2, 64), "8:Dense": (2, 10)}


@pytest.mark.parametrize("jit", [False, True])
def test_interceptor_collects_every_layer_activation_of_the_demo_cnn(jit):
    init, apply = MODELS["cnn"]()
    _, params = init(random.PRNGKey(0), (-1, 8, 8, 1))
    x = fnp.asarray(np.random.default_rng(0).standard_normal((2, 8, 8, 1)), np.float32)
    capture = hooks.capture_activations(apply)
    out, acts = (fnad.jit(capture) if jit else capture)(params, x)
    assert {k: tuple(v.shape) for k, v in acts.items()} == DEMO_SHAPES
    np.testing.assert_allclose(out, apply(params, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(acts["8:Dense"], out)
    np.testing.assert_array_equal(acts["1:relu"], np.maximum(acts["0:Conv"], 0))
    pooled = np.asarray(acts["3:relu"]).reshape(2, 4, 2, 4, 2, 32).max(axis=(2, 4))
    np.testing.assert_array_equal(acts["4:MaxPool"], pooled)


def nested_cnn():
    return nn.serial(nn.Conv(4, (3, 3), padding="SAME"), nn.Relu, nn.MaxPool((2, 2)),
                     nn.Flatten, nn.serial(nn.Dense(8), nn.Relu), nn.Dense(10))


def test_interceptor_paths_of_nested_combinators_and_parallel():
    init, apply = nested_cnn()
    _, params = init(random.PRNGKey(0), (-1, 8, 8, 1))
    seen = []
    hooks.forward_hook(apply, lambda path, i, o: seen.append((path, tuple(o.shape))))(
        params, fnp.ones((2, 8, 8, 1)))
    assert seen[4:7] == [("4:serial/0:Dense", (2, 8)), ("4:serial/1:relu", (2, 8)),
                         ("4:serial", (2, 8))]
    init2, apply2 = nn.serial(nn.FanOut(2), nn.parallel(nn.Dense(3), nn.Identity))
    _, p2 = init2(random.PRNGKey(1), (-1, 5))
    paths = []
    hooks.forward_hook(apply2, lambda path, i, o: paths.append(path))(p2, fnp.ones((1, 5)))
    assert paths[1:3] == ["1:parallel/0:Dense", "1:parallel/1:Identity"]


def test_interceptor_replaces_outputs():
    init, apply = nested_cnn()
    _, params = init(random.PRNGKey(0), (-1, 8, 8, 1))
    x = fnp.ones((2, 8, 8, 1))
    zeroed = hooks.forward_hook(apply, lambda path, i, o: o * 0.0 if path == "3:Flatten" else None)
    out = zeroed(params, x)
    # every Dense sees zeros: the output is the last bias (after relu of the first)
    b1, b2 = params[4][0][1], params[5][1]
    np.testing.assert_allclose(out, np.broadcast_to(np.maximum(b1, 0) @ params[5][0] + b2,
                                                    (2, 10)), rtol=1e-5)



def small_mlp():
    init, apply = nn.serial(nn.Dense(3), nn.Relu, nn.Dense(2))
    _, params = init(random.PRNGKey(2), (-1, 4))
    return apply, params


def mlp_reference(params, x, hidden_scale=1.0):
    (W1, b1), _, (W2, b2) = [tuple(np.asarray(a) for a in p) for p in params]
    return (np.maximum(x @ W1 + b1, 0) * hidden_scale) @ W2 + b2


def test_interceptor_sees_and_replaces_inputs():
    apply, params = small_mlp()
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    seen = {}

    def zero_last_inputs(path, run, params, inputs):
        seen[path] = np.asarray(inputs)
        return run(params, inputs * 0.0 if path == "2:Dense" else inputs)
    out = hooks.intercept(apply, zero_last_inputs)(params, fnp.asarray(x))
    np.testing.assert_allclose(out, np.broadcast_to(np.asarray(params[2][1]), (5, 2)))
    np.testing.assert_array_equal(seen["0:Dense"], x)
    hidden = np.asarray(x @ np.asarray(params[0][0]) + np.asarray(params[0][1]))
    np.testing.assert_allclose(seen["1:relu"], hidden, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(seen["2:Dense"], np.maximum(hidden, 0), rtol=1e-6, atol=1e-6)


def test_interceptor_under_grad_and_vmap():
    apply, params = small_mlp()
    x = np.random.default_rng(4).standard_normal((5, 4))
    doubled = hooks.forward_hook(apply, lambda path, i, o: o * 2.0 if path == "1:relu" else None)
    np.testing.assert_allclose(doubled(params, fnp.asarray(x)),
                               mlp_reference(params, x, 2.0), rtol=1e-5)
    # d/dx sum(out) = (relu'(h) * 2) W2 summed over outputs, then through W1
    (W1, b1), _, (W2, b2) = [tuple(np.asarray(a, np.float64) for a in p) for p in params]
    active = (x @ W1 + b1 > 0).astype(np.float64)
    expected = (active * 2.0 * W2.sum(axis=1)) @ W1.T
    for run in (fnad.grad(lambda x: fnp.sum(doubled(params, x))),
                fnad.jit(fnad.grad(lambda x: fnp.sum(doubled(params, x))))):
        np.testing.assert_allclose(run(fnp.asarray(x)), expected, rtol=1e-5)
    # per example under vmap: each activation gains the batch axis in front
    out, acts = fnad.vmap(hooks.capture_activations(apply), in_axes=(None, 0))(
        params, fnp.asarray(x[:, None, :]))
    assert {k: tuple(v.shape) for k, v in acts.items()} == {
        "0:Dense": (5, 1, 3), "1:relu": (5, 1, 3), "2:Dense": (5, 1, 2)}
    np.testing.assert_allclose(out[:, 0], mlp_reference(params, x), rtol=1e-5)
