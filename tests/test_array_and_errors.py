"""The Array value, pytrees, and the errors users get for misuse."""
from collections import namedtuple

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import tree_util


def test_array_basics():
    x = fnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert x.shape == (2, 2) and x.dtype == np.float32 and x.ndim == 2 and x.size == 4
    np.testing.assert_array_equal(np.asarray(x.T), [[1, 3], [2, 4]])
    assert float(x[1, 1]) == 4.0 and x[0, 1].item() == 2.0
    assert x.block_until_ready() is x
    assert "Array(" in repr(x) and "float32" in repr(x)
    assert x.device == fnad.devices()[0] == fnad.devices("cpu")[0]


def test_array_is_immutable():
    x = fnp.zeros(3)
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1.0
    view = np.asarray(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1.0


def test_numpy_view_is_zero_copy_and_asarray_copies():
    x = fnp.arange(5.0)
    assert np.shares_memory(np.asarray(x), np.asarray(x))
    src = np.arange(3.0)
    a = fnp.asarray(src)
    src[0] = 100.0
    assert float(a[0]) == 0.0


def test_at_updates_return_copies():
    x = fnp.zeros(4)
    y = x.at[1].set(5.0)
    z = y.at[1].add(1.0).at[2].multiply(3.0).at[3].max(-1.0).at[0].min(-2.0)
    np.testing.assert_array_equal(np.asarray(x), [0, 0, 0, 0])
    np.testing.assert_array_equal(np.asarray(y), [0, 5, 0, 0])
    np.testing.assert_array_equal(np.asarray(z), [-2, 6, 0, 0])
    assert float(z.at[1].get()) == 6.0


def test_python_scalars_are_weak():
    x32 = fnp.ones(3, dtype=np.float32)
    assert (x32 * 2.0).dtype == np.float32
    assert (2 + x32).dtype == np.float32
    assert (fnp.ones(3, dtype=np.float64) * 2.0).dtype == np.float64
    assert fnp.asarray(1.5).dtype == np.float32 and fnp.asarray(2).dtype == np.int32
    # arrays promote on JAX's lattice: an int with a float gives that float
    assert (fnp.ones(2, np.int32) + fnp.ones(2, np.float32)).dtype == np.float32


def test_tree_util_roundtrip_and_map():
    Point = namedtuple("Point", "x y")
    tree = {"b": [1, (2, None)], "a": Point(3, 4)}
    leaves, treedef = tree_util.tree_flatten(tree)
    assert leaves == [3, 4, 1, 2]          # dict keys sorted, None is an empty node
    assert tree_util.tree_unflatten(treedef, leaves) == tree
    doubled = tree_util.tree_map(lambda a, b: a + b, tree, tree)
    assert doubled == {"b": [2, (4, None)], "a": Point(6, 8)}
    assert fnad.tree.leaves(tree) == leaves and fnad.tree.structure(tree) == treedef
    with pytest.raises(ValueError):
        tree_util.tree_map(lambda a, b: a, tree, {"a": 1, "b": 2})


def test_register_pytree_node_class():
    @tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), "meta"

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == "meta"
            return cls(*children)

    g = fnad.grad(lambda p: p.a * p.b)(Pair(fnp.asarray(2.0), fnp.asarray(5.0)))
    assert isinstance(g, Pair) and float(g.a) == 5.0 and float(g.b) == 2.0


# --------------------------------------------------------------------------- errors

def test_grad_of_non_scalar_names_the_shape():
    with pytest.raises(TypeError, match=r"\(3,\)"):
        fnad.grad(lambda x: x * 2)(fnp.ones(3))


def test_grad_wrt_integer_input():
    with pytest.raises(TypeError, match="int32"):
        fnad.grad(lambda x: fnp.sum(x * 2.0))(fnp.arange(3))


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4,\)"):
        fnp.ones(3) + fnp.ones(4)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 3\)"):
        fnp.ones((2, 3)) @ fnp.ones((2, 3))
    with pytest.raises(fnad.ShapeError):
        fnad.grad(lambda x: fnp.sum(x + fnp.ones(4)))(fnp.ones(3))


def test_out_of_range_slice_bounds_raise_eagerly_as_under_jit():
    slice_ = fnad.lax.slice
    for run in (slice_, fnad.jit(slice_, static_argnums=(1, 2))):
        with pytest.raises(fnad.ShapeError, match=r"slice: invalid bounds start=\(1,\) "
                                                  r"limit=\(5,\)"):
            run(fnp.ones(3), (1,), (5,))
    np.testing.assert_array_equal(slice_(fnp.arange(4), (1,), (3,)), [1, 2])


def test_escaped_tracer_is_reported():
    leaked = []

    def f(x):
        leaked.append(x)
        return fnp.sum(x ** 2)

    fnad.grad(f)(fnp.ones(2))
    with pytest.raises(fnad.EscapedTracerError, match="grad"):
        fnp.sin(leaked[0])
    fnad.jvp(f, (fnp.ones(2),), (fnp.ones(2),))
    with pytest.raises(fnad.EscapedTracerError, match="jvp"):
        leaked[-1] * 2.0


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="timedelta64"):
        fnp.asarray(np.zeros(2, dtype="timedelta64[s]"))
    with pytest.raises(TypeError):
        fnp.asarray(np.array(["a"]))


def test_tangent_mismatch():
    with pytest.raises(ValueError, match="tangent"):
        fnad.jvp(fnp.sin, (fnp.ones(3),), (fnp.ones(2),))
