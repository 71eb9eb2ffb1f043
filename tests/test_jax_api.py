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
