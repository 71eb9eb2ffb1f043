"""JAX's top-level API as fnad offers it: jit on methods, static arguments by name or
position, the trace cache of inline jit, isinstance on traced values, the exception
hierarchy, and the top-level helpers (eval_shape, linearize, disable_jit, ...)."""
import functools
import gc

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.errors import ArgnumsError, DTypeError, ShapeError


# --------------------------------------------------------------------------- jit bugs

class _Scaled:
    factor = 2.0

    @fnad.jit
    def plain(self, x):
        return x * 3.0

    @functools.partial(fnad.jit, static_argnums=0)
    def static_self(self, x):
        return x * self.factor


@fnad.tree_util.register_pytree_node_class
class _Affine:
    def __init__(self, w):
        self.w = w

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    @fnad.jit
    def apply(self, x):
        return self.w * x + 1.0


def test_jit_binds_self_on_methods():
    x = np.array([1.0, -2.0])
    np.testing.assert_array_equal(np.asarray(_Scaled().static_self(x)), x * 2.0)
    np.testing.assert_array_equal(np.asarray(_Affine(fnp.asarray(3.0)).apply(x)), 3.0 * x + 1)
    # The class attribute stays the jitted function, callable with an explicit self.
    assert isinstance(_Scaled.__dict__["plain"], fnad.staged.jit.Jitted)
    np.testing.assert_array_equal(np.asarray(_Affine.apply(_Affine(2.0), x)), 2.0 * x + 1)
    # A self that is neither static nor a pytree: a TypeError that says what to do.
    with pytest.raises(TypeError, match="static_argnums=0"):
        _Scaled().plain(x)


def _power(x, n):
    if n > 1:           # Python control flow on n: only works when n is static
        return x ** n
    return x


@pytest.mark.parametrize("how", ["names_positional", "names_keyword", "nums_keyword",
                                 "nums_positional"])
def test_static_arguments_by_name_or_position(how):
    x = np.array([1.5, 2.0])
    if how.startswith("names"):
        f = fnad.jit(_power, static_argnames="n")
    else:
        f = fnad.jit(_power, static_argnums=1)
    out = f(x, 3) if how.endswith("positional") else f(x, n=3)
    np.testing.assert_allclose(np.asarray(out), x ** 3, rtol=1e-12)
    assert f.static_argnums == (1,) and f.static_argnames == ("n",)


def test_static_argument_left_to_its_default_and_bad_names():
    f = fnad.jit(lambda x, n=2: x * n if n > 1 else x, static_argnums=1)
    np.testing.assert_allclose(np.asarray(f(np.ones(2))), [2.0, 2.0])
    with pytest.raises(ArgnumsError, match="static_argnames.*'zz'.*does not take"):
        fnad.jit(_power, static_argnames="zz")
    # A name and a position that are one argument cannot be both static and donated.
    with pytest.raises(ArgnumsError, match="both name"):
        fnad.jit(_power, static_argnames="x", donate_argnums=0)


def test_inline_jit_traces_once_and_follows_jax_stale_global_rule():
    traced = []
    offset = {"value": 0.0}

    def f(x):
        traced.append(1)
        return x + offset["value"]
    x = np.array([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(fnad.jit(f)(x)), x)
    assert len(traced) == 1
    # JAX's documented gotcha: what f reads outside its arguments is read when it is
    # traced, so a changed global is not seen until the cache is cleared.
    offset["value"] = 10.0
    np.testing.assert_array_equal(np.asarray(fnad.jit(f)(x)), x)
    fnad.jit(f).clear_cache()
    np.testing.assert_array_equal(np.asarray(fnad.jit(f)(x)), x + 10.0)
    assert len(traced) == 2
    # Other options are another cache.
    fnad.jit(f, static_argnums=()).trace_count      # (same options: shared)
    assert fnad.jit(f).trace_count == fnad.jit(f, static_argnums=()).trace_count


def test_inline_jit_of_temporary_functions_keeps_nothing_alive():
    from fnad.staged import jit as jit_module
    gc.collect()
    before = len(jit_module._by_function)
    for k in range(5):
        fnad.jit(lambda x: x * 2.0)(np.ones(2))
    gc.collect()
    assert len(jit_module._by_function) <= before


def test_isinstance_array_under_every_transform():
    seen = []

    def f(x):
        seen.append(isinstance(x, fnad.Array))
        return fnp.sum(x * x)
    x = fnp.asarray([1.0, 2.0])
    fnad.grad(f)(x)
    fnad.jit(f)(x)
    fnad.vmap(f)(fnp.ones((2, 2)))
    fnad.jvp(f, (x,), (x,))
    assert seen == [True, True, True, True]
    assert isinstance(x, fnad.Array) and not isinstance(np.ones(2), fnad.Array)
    assert not isinstance(1.0, fnad.Array)


def test_errors_are_the_builtins_jax_raises():
    with pytest.raises(TypeError):          # JAX's tutorials catch shape errors so
        fnp.ones(3) + fnp.ones(4)
    with pytest.raises(ValueError):         # and numpy users so
        fnp.ones(3) + fnp.ones(4)
    assert issubclass(ShapeError, TypeError) and issubclass(ShapeError, ValueError)
    assert issubclass(fnad.errors.EscapedTracerError, TypeError)
    assert issubclass(fnad.ConcretizationError, TypeError)
    assert issubclass(fnad.GradientError, TypeError)
    assert issubclass(DTypeError, TypeError)


# --------------------------------------------------------------------------- top level

def test_top_level_names_exist_and_work():
    x = fnp.asarray(np.array([0.5, 1.0]))
    assert fnad.jacobian is fnad.jacrev
    s = fnad.eval_shape(lambda a: fnp.outer(a, a), x)
    assert s == fnad.ShapeDtypeStruct((2, 2), np.float64) and s.size == 4
    assert fnad.typeof(x).shape == (2,) and fnad.typeof(x).dtype == np.float64
    got = fnad.device_get({"a": x, "b": 3})
    assert type(got["a"]) is np.ndarray and got["b"] == 3
    assert fnad.default_backend() == "cpu" and fnad.device_count() >= 1
    assert fnad.local_device_count() == len(fnad.local_devices()) == len(fnad.devices())
    assert fnad.float0.itemsize == 0
    f = lambda a: fnp.sin(a) * a                                       # noqa: E731
    np.testing.assert_array_equal(np.asarray(fnad.named_call(f, name="f")(x)),
                                  np.asarray(f(x)))
    with fnad.named_scope("block"):
        pass
    with pytest.raises(TypeError, match="str"):
        with fnad.named_scope(3):
            pass


def test_linearize_and_linear_transpose_against_hand_derivatives():
    v = np.array([0.5, 1.0, -2.0])
    out, f_jvp = fnad.linearize(lambda a: fnp.sin(a) * a, fnp.asarray(v))
    np.testing.assert_allclose(np.asarray(out), np.sin(v) * v, rtol=1e-14)
    t = np.array([1.0, -1.0, 0.5])
    np.testing.assert_allclose(np.asarray(f_jvp(fnp.asarray(t))),
                               (np.cos(v) * v + np.sin(v)) * t, rtol=1e-14)
    A = np.arange(6.0).reshape(3, 2)
    f_t = fnad.linear_transpose(lambda a, b: fnp.asarray(A) @ a + 2.0 * b,
                                fnad.ShapeDtypeStruct((2,), np.float64), np.zeros(3))
    ct = np.array([1.0, 2.0, -1.0])
    ga, gb = f_t(ct)
    np.testing.assert_allclose(np.asarray(ga), A.T @ ct, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(gb), 2.0 * ct, rtol=1e-14)
    with pytest.raises(fnad.GradientError, match="floating point"):
        fnad.linear_transpose(lambda a: a, np.zeros(2, np.int32))


def test_closure_convert_makes_captured_arrays_arguments():
    w = fnp.asarray(np.array([2.0, 3.0]))
    x = np.array([1.0, -1.0])
    converted, consts = fnad.closure_convert(lambda a: fnp.sin(a * w), x)
    assert len(consts) == 1 and np.array_equal(np.asarray(consts[0]), [2.0, 3.0])
    np.testing.assert_allclose(np.asarray(converted(x, *consts)), np.sin(x * [2.0, 3.0]))
    # The constant is an argument now: its derivative is available.
    g = fnad.grad(lambda c: fnp.sum(converted(x, c)))(consts[0])
    np.testing.assert_allclose(np.asarray(g), np.cos(x * [2.0, 3.0]) * x, rtol=1e-14)


def test_context_managers_restore_flags():
    calls = []

    @fnad.jit
    def f(a):
        calls.append(1)
        return a + 1.0
    with fnad.disable_jit():
        f(fnp.ones(1))
        f(fnp.ones(1))
    assert len(calls) == 2 and not fnad.config.disable_jit
    with fnad.enable_x64():
        assert fnp.asarray(1.0).dtype == np.float64
    assert fnp.asarray(1.0).dtype == np.float32 or fnad.config.enable_x64


def test_ensure_compile_time_eval_inside_jit():
    @fnad.jit
    def f(a):
        with fnad.ensure_compile_time_eval():
            total = fnp.sum(fnp.asarray([1.0, 2.0]))    # concrete: a Python bool works
            scale = 3.0 if total > 2.0 else 0.0
            y = a * scale                               # traced: still staged
        return y
    np.testing.assert_array_equal(np.asarray(f(fnp.ones(2))), [3.0, 3.0])


# --------------------------------------------------------------------------- custom rules

def test_defjvps_sums_one_rule_per_argument():
    @fnad.custom_jvp
    def f(x, y):
        return fnp.sin(x) * y
    f.defjvps(lambda t, out, x, y: fnp.cos(x) * y * t,
              lambda t, out, x, y: fnp.sin(x) * t)
    x, y = 0.3, 2.0
    gx, gy = fnad.grad(f, argnums=(0, 1))(np.float64(x), np.float64(y))
    np.testing.assert_allclose([float(gx), float(gy)], [np.cos(x) * y, np.sin(x)], rtol=1e-14)
    _, t = fnad.jvp(f, (np.float64(x), np.float64(y)), (np.float64(1.0), np.float64(-1.0)))
    np.testing.assert_allclose(float(t), np.cos(x) * y - np.sin(x), rtol=1e-14)

    g = fnad.custom_jvp(lambda x, y: x * y)
    g.defjvps(None, lambda t, out, x, y: x * t)         # None: no dependence on x
    gx, gy = fnad.grad(g, argnums=(0, 1))(np.float64(x), np.float64(y))
    assert float(gx) == 0.0 and float(gy) == x


# --------------------------------------------------------------------------- checkpoint

def _count_calls(monkeypatch, *prims):
    counts = {}
    for prim in prims:
        def counted(*args, _impl=prim.impl, _name=prim.name, **params):
            counts[_name] = counts.get(_name, 0) + 1
            return _impl(*args, **params)
        monkeypatch.setattr(prim, "impl", counted)
    return counts


CP = fnad.checkpoint_policies


@pytest.mark.parametrize("policy,backward", [
    (None, {"dot_general": 2, "sin": 2}),                   # recompute everything
    (CP.nothing_saveable, {"dot_general": 2, "sin": 2}),
    (CP.everything_saveable, {"dot_general": 1}),          # only the VJP's product
    (CP.dots_saveable, {"dot_general": 1, "sin": 2}),
    (CP.dots_with_no_batch_dims_saveable, {"dot_general": 1, "sin": 2}),
    (CP.save_only_these_names("h"), {"dot_general": 2, "sin": 1}),
    (CP.save_any_names_but_these("other"), {"dot_general": 2, "sin": 1}),
    (CP.save_from_both_policies(CP.dots_saveable, CP.save_only_these_names("h")),
     {"dot_general": 1, "sin": 1}),
])
def test_checkpoint_policy_decides_what_the_backward_pass_recomputes(monkeypatch, policy,
                                                                     backward):
    from fnad.primitives.dot import dot_general_p
    from fnad.primitives.elementwise import sin_p
    w = fnp.asarray(np.arange(6.0).reshape(2, 3) / 10)

    def f(x):
        h = fnad.ad_checkpoint.checkpoint_name(fnp.sin(w @ x), "h")
        return fnp.sum(fnp.sin(h))
    x = fnp.asarray(np.array([0.1, 0.2, 0.3]))
    hand = (w.T @ (np.cos(np.sin(w @ x)) * np.cos(w @ x)))       # d/dx, by the chain rule
    counts = _count_calls(monkeypatch, dot_general_p, sin_p)
    out, pullback = fnad.vjp(fnad.checkpoint(f, policy=policy), x)
    assert counts == {"dot_general": 1, "sin": 2}               # the forward pass
    counts.clear()
    g, = pullback(fnp.ones_like(out))
    assert counts == backward
    np.testing.assert_allclose(np.asarray(g), np.asarray(hand), rtol=1e-13)


def test_checkpoint_policy_composes_with_jit_vmap_and_higher_order():
    def f(y, w):
        return fnp.sin(y * w) * y
    remat = fnad.checkpoint(f, policy=CP.everything_saveable, static_argnums=())
    y = np.float64(0.5)
    d2 = fnad.grad(fnad.grad(lambda a: remat(a, 2.0)))(y)
    np.testing.assert_allclose(float(d2), 4 * np.cos(1.0) - 4 * 0.5 * np.sin(1.0), rtol=1e-12)
    # A closed-over value of an enclosing grad gets its derivative.
    xs = np.array([0.1, 0.2, 0.3])
    g = fnad.jit(fnad.grad(lambda w: fnp.sum(fnad.checkpoint(
        lambda v: fnp.sin(v * w), policy=CP.dots_saveable)(xs))))(np.float64(2.0))
    np.testing.assert_allclose(float(g), np.sum(np.cos(2 * xs) * xs), rtol=1e-13)
    batched = fnad.vmap(fnad.grad(lambda a: remat(a, 3.0)))(np.array([0.1, 0.2]))
    a = np.array([0.1, 0.2])
    np.testing.assert_allclose(np.asarray(batched), 3 * a * np.cos(3 * a) + np.sin(3 * a),
                               rtol=1e-13)
    # static arguments, by position or by name
    scaled = fnad.checkpoint(lambda a, n: a ** n if n > 1 else a, policy=CP.dots_saveable,
                             static_argnames="n")
    assert float(fnad.grad(scaled)(np.float64(2.0), 3)) == 12.0
    assert float(fnad.grad(lambda a: scaled(a, n=3))(np.float64(2.0))) == 12.0


# --------------------------------------------------------------------------- dlpack

def test_dlpack_export_is_zero_copy_and_read_only():
    x = fnp.asarray(np.arange(6.0).reshape(2, 3))
    y = np.from_dlpack(x)
    assert np.shares_memory(y, np.asarray(x)) and not y.flags.writeable
    np.testing.assert_array_equal(y, np.arange(6.0).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    capsule = fnad.dlpack.to_dlpack(x)
    assert type(capsule).__name__ == "PyCapsule"
    with pytest.raises(BufferError, match="host memory"):
        x.__dlpack__(dl_device=(2, 0))


def test_dlpack_import():
    source = np.arange(4, dtype=np.int32)
    a = fnp.from_dlpack(source)
    assert type(a) is fnad.Array and a.dtype == np.int32
    assert np.shares_memory(np.asarray(a), source)
    b = fnad.dlpack.from_dlpack(source, copy=True)
    assert not np.shares_memory(np.asarray(b), source)
    with pytest.raises(TypeError, match="__dlpack__"):
        fnp.from_dlpack([1, 2])
    x = fnp.asarray(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(fnad.dlpack.from_dlpack(x)), [1.0, 2.0])


def test_dlpack_with_torch_and_jax():
    torch = pytest.importorskip("torch")
    x = fnp.asarray(np.array([1.0, 2.0, 3.0]))
    t = torch.from_dlpack(x)
    assert t.tolist() == [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(np.asarray(fnp.from_dlpack(torch.arange(3.0))), [0, 1, 2])


def test_dlpack_with_jax():
    jnp = pytest.importorskip("jax.numpy")
    x = fnp.asarray(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(x)), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(fnp.from_dlpack(jnp.arange(3.0))), [0, 1, 2])


# --------------------------------------------------------------------------- precision

def test_precision_and_preferred_element_type():
    lax = fnad.lax
    rng = np.random.default_rng(0)
    a16, b16 = rng.random((3, 4)).astype(np.float16), rng.random((4, 2)).astype(np.float16)
    exact = a16.astype(np.float32) @ b16.astype(np.float32)      # accumulated in float32
    for out in (lax.dot(a16, b16, preferred_element_type=np.float32),
                lax.dot_general(a16, b16, (((1,), (0,)), ((), ())),
                                preferred_element_type=np.float32),
                fnp.matmul(a16, b16, preferred_element_type=np.float32),
                fnp.dot(a16, b16, preferred_element_type=np.float32),
                fnp.einsum("ij,jk->ik", a16, b16, preferred_element_type=np.float32),
                fnad.jit(lambda x, y: fnp.matmul(x, y, preferred_element_type=np.float32))(
                    a16, b16)):
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), exact, rtol=1e-6)
    ints = lax.dot(np.array([100, 100], np.int8), np.array([100, 100], np.int8),
                   preferred_element_type=np.int32)
    assert ints.dtype == np.int32 and int(ints) == 20000             # no int8 wrap-around
    a, b = rng.random((2, 2)), rng.random((2, 2))
    for precision in (None, lax.Precision.HIGHEST, "default", "bfloat16",
                      (lax.Precision.DEFAULT, lax.Precision.HIGH)):
        np.testing.assert_array_equal(np.asarray(fnp.dot(a, b, precision=precision)),
                                      np.asarray(fnp.dot(a, b)))
    with pytest.raises(ValueError, match="precision"):
        fnp.matmul(a, b, precision="fast-ish")
    with pytest.raises(DTypeError, match="narrower"):
        lax.dot(a, b, preferred_element_type=np.float32)
    with pytest.raises(DTypeError, match="narrower"):
        fnp.matmul(a, b, preferred_element_type=np.int64)
    with pytest.raises(ShapeError, match="rank 1 or 2"):
        lax.dot(np.ones((2, 2, 2)), np.ones(2))


def test_custom_gradient_in_every_mode():
    @fnad.custom_gradient
    def f(x):
        return fnp.sin(x), lambda g: (g * 10.0 * fnp.cos(x),)    # a deliberately odd rule
    x = np.float64(0.3)
    assert float(f(x)) == np.sin(0.3)
    for g in (fnad.grad(f), fnad.jit(fnad.grad(f)), fnad.grad(fnad.jit(f))):
        np.testing.assert_allclose(float(g(x)), 10 * np.cos(0.3), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(fnad.vmap(fnad.grad(f))(np.array([0.3, 0.4]))),
                               10 * np.cos([0.3, 0.4]), rtol=1e-14)


def test_jitted_eval_shape_and_eval_shape_of_scalars():
    f = fnad.jit(lambda x, n: fnp.ones((n, x.shape[0])) * x, static_argnums=1)
    assert f.eval_shape(fnp.ones(3), 2) == fnad.ShapeDtypeStruct((2, 3), np.float32)
    assert "fnad.jit of" in repr(f)
    s = fnad.eval_shape(lambda a, b: a * b, fnad.ShapeDtypeStruct((2,), np.float64), 2.0)
    assert s == fnad.ShapeDtypeStruct((2,), np.float64)
    with pytest.raises(ValueError, match="sharding"):
        fnad.ShapeDtypeStruct((2,), np.float32, sharding="replicated")


def test_jit_options_are_checked_for_every_wrapper():
    fnad.jit(_power, static_argnums=1)
    with pytest.raises(ArgnumsError, match="bool"):
        fnad.jit(_power, static_argnums=True)     # equal to 1, but a slip all the same
