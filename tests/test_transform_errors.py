"""Misused transform arguments get a clear error naming the argument and what was
expected: vmap axis trees that are not prefixes of their arguments/outputs, has_aux
functions that do not return a pair, argnums/static_argnums that are not positions,
fnad.data counts that are not positive ints, a jit tracer used after its jit.

Where JAX has the same check, the test asks JAX too (when it is importable) and
expects the same builtin exception class; valid axis trees are compared with a
numpy loop over examples and with JAX's result."""
import collections

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import data
from fnad.errors import (ArgnumsError, AxisSpecError, ConcretizationError,
                         EscapedTracerError, HasAuxError, ShapeError, TreeStructureError)
from fnad.tree_util import broadcast_prefix, register_pytree_node

try:
    import jax
    import jax.numpy as jnp
except ImportError:     # pragma: no cover
    jax = None

needs_jax = pytest.mark.skipif(jax is None, reason="jax is not installed")

P = collections.namedtuple("P", "a b")
RNG = np.random.default_rng(0)
X32 = RNG.standard_normal((3, 2)).astype(np.float32)
Y3 = RNG.standard_normal(3).astype(np.float32)


def _builtin_class(err):
    return TypeError if isinstance(err, TypeError) else ValueError


def _jax_error(call):
    """The builtin class (TypeError or ValueError) of what JAX raises for call."""
    try:
        call()
    except (TypeError, ValueError) as e:
        return _builtin_class(e)
    return None


# --------------------------------------------------------------------------- vmap axis trees

def _get_a(d):
    return d["a"].sum(axis=-1)


# (name, function, in_axes, out_axes, args, error class, message pattern)
BAD_AXES = [
    ("dict key not in the argument", _get_a, ({"a": 0, "c": None},), 0,
     ({"a": X32, "b": Y3},), TreeStructureError,
     r"vmap in_axes\[0\]: dict keys \['a', 'c'\] do not match the argument's \['a', 'b'\]"
     r".*missing \['b'\].*not in the argument: \['c'\]"),
    ("dict key missing", _get_a, ({"a": 0},), 0, ({"a": X32, "b": Y3},),
     TreeStructureError, r"vmap in_axes\[0\]: dict keys \['a'\] do not match.*missing \['b'\]"),
    ("output dict keys", lambda x: {"u": x, "v": x}, 0, {"u": 0, "zz": 0}, (X32,),
     TreeStructureError,
     r"vmap out_axes: dict keys \['u', 'zz'\] do not match the output's \['u', 'v'\]"),
    ("tuple spec for a list", lambda a: a[0] + a[1], ((0, 0),), 0, ([Y3, Y3],),
     TreeStructureError, r"vmap in_axes\[0\]: a tuple where the argument has a node of "
                         r"type list"),
    ("list spec for a tuple", lambda a: a[0] + a[1], ([0, 0],), 0, ((Y3, Y3),),
     TreeStructureError, r"vmap in_axes\[0\]: a list where the argument has .* tuple"),
    ("tuple spec too long", lambda a: a[0] + a[1], ((0, 0, 0),), 0, ((Y3, Y3),),
     TreeStructureError, r"vmap in_axes\[0\]: a tuple of 3 entries where the argument "
                         r"has one of 2"),
    ("dict spec for an array", lambda a: a, ({"a": 0},), 0, (X32,), TreeStructureError,
     r"vmap in_axes\[0\]: a dict where the argument has a leaf of type ndarray"),
    ("tuple spec for None", lambda a, b: a, (0, (0,)), 0, (X32, None), TreeStructureError,
     r"vmap in_axes\[1\]: a tuple where the argument has a node of type NoneType"),
    ("tuple spec for a namedtuple", lambda p: p.a + p.b, ((0, 0),), 0, (P(Y3, Y3),),
     TreeStructureError, r"vmap in_axes\[0\]: a tuple where the argument has .* type P"),
    ("nested key path", lambda d: d["a"][1], ({"a": (0, {"x": 0})},), 0,
     ({"a": (Y3, {"y": Y3})},), TreeStructureError,
     r"vmap in_axes\[0\]\['a'\]\[1\]: dict keys \['x'\] do not match the argument's \['y'\]"),
    ("namedtuple field path", lambda p: p.a, (P(0, {"x": 0}),), 0, (P(Y3, {"y": Y3}),),
     TreeStructureError, r"vmap in_axes\[0\]\.b: dict keys"),
    ("output tuple too long", lambda x: (x, x), 0, (0, 0, 0), (X32,), TreeStructureError,
     r"vmap out_axes: a tuple of 3 entries where the output has one of 2"),
    ("tuple out_axes for one array", lambda x: 2 * x, 0, (0,), (X32,), TreeStructureError,
     r"vmap out_axes: a tuple where the output has a leaf of type Array"),
    ("output list for a tuple", lambda x: (x, x), 0, [0, 0], (X32,), TreeStructureError,
     r"vmap out_axes: a list where the output has .* tuple"),
    ("in_axes shorter than args", lambda a, b: a + b, (0,), 0, (Y3, Y3), TreeStructureError,
     r"one entry per positional argument \(2\), got 1"),
    ("float in_axes", lambda a: a, 0.0, 0, (Y3,), AxisSpecError,
     r"in_axes must be an int, None, or a tuple.*got 0\.0"),
    ("dict in_axes at the top", lambda d: d["a"], {"a": 0}, 0, ({"a": Y3},), AxisSpecError,
     r"in_axes must be an int, None, or a tuple"),
    ("string leaf", lambda a: a, ("a",), 0, (Y3,), AxisSpecError,
     r"in_axes=\('a',\) holds 'a' of type str"),
    ("bool leaf", lambda a: a, (True,), 0, (X32,), AxisSpecError,
     r"holds True of type bool"),
    ("numpy int leaf", lambda a: a, (np.int64(0),), 0, (X32,), AxisSpecError,
     r"holds .* of type int64; write int"),
    ("float out_axes leaf", lambda a: a, 0, (1.0,), (X32,), AxisSpecError,
     r"out_axes=\(1\.0,\) holds 1\.0 of type float"),
]


@pytest.mark.parametrize("case", BAD_AXES, ids=[c[0] for c in BAD_AXES])
def test_bad_axis_trees_are_refused(case):
    _, fun, in_axes, out_axes, args, error, pattern = case
    with pytest.raises(error, match=pattern):
        fnad.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*args)


@needs_jax
@pytest.mark.parametrize("case", BAD_AXES, ids=[c[0] for c in BAD_AXES])
def test_jax_refuses_the_same_axis_trees(case):
    _, fun, in_axes, out_axes, args, error, _ = case
    jargs = jax.tree_util.tree_map(jnp.asarray, args)
    assert _jax_error(lambda: jax.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*jargs)) \
        is _builtin_class(error())


def _loop(fun, args, axes, out_axis=0):
    """fun over the examples of args (axes: one int or None per positional arg, for
    the whole argument), stacked along out_axis: the numpy reference."""
    n = next(np.shape(leaf)[ax] for a, ax in zip(args, axes) if ax is not None
             for leaf in fnad.tree_util.tree_leaves(a))

    def take(a, ax, i):
        return a if ax is None else fnad.tree_util.tree_map(
            lambda leaf: np.take(leaf, i, axis=ax), a)
    outs = [fun(*[take(a, ax, i) for a, ax in zip(args, axes)]) for i in range(n)]
    return fnad.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs],
                                                        axis=out_axis), *outs)


D = {"a": RNG.standard_normal((3, 2)).astype(np.float32),
     "b": RNG.standard_normal(3).astype(np.float32)}
Z = RNG.standard_normal((2, 3)).astype(np.float32)


def _dict_fun(d, z):
    return d["a"] * d["b"] + z.sum()


# (name, function, in_axes, out_axes, args, numpy reference of the result)
GOOD_AXES = [
    ("one int for a whole dict", _dict_fun, (0, None), 0, (D, Z),
     lambda: _loop(_dict_fun, (D, Z), (0, None))),
    ("None for a whole dict", lambda d, z: d["a"].sum() * z, ({"a": None, "b": None}, 1), 0,
     (D, Z), lambda: np.stack([D["a"].sum() * Z[:, i] for i in range(3)])),
    ("a None leaf inside a dict", lambda d: d["a"] * d["b"], ({"a": None, "b": 0},), 0,
     (D,), lambda: np.stack([D["a"] * D["b"][i] for i in range(3)])),
    ("nested tuples", lambda t: t[0] * t[1][1].sum() + t[1][0].sum(), ((0, (None, 1)),), 0,
     ((Y3, (Y3, Z)),), lambda: np.stack([Y3[i] * Z[:, i].sum() + Y3.sum() for i in range(3)])),
    ("a list of entries", lambda a, b: a * b, [0, None], 0, (Y3, Y3),
     lambda: np.stack([Y3[i] * Y3 for i in range(3)])),
    ("namedtuple spec", lambda p: p.a * p.b, (P(0, None),), 0, (P(Y3, Y3),),
     lambda: np.stack([Y3[i] * Y3 for i in range(3)])),
    ("dict out_axes", lambda x: {"u": x, "v": x.sum()}, 0, {"u": 1, "v": 0}, (X32,),
     lambda: {"u": X32.T, "v": X32.sum(axis=1)}),
    ("one out axis for a tuple", lambda x: (x, 2 * x), 0, 1, (X32,),
     lambda: (X32.T, 2 * X32.T)),
    ("None out axis for an unbatched output", lambda x: (x, Y3), 0, (0, None), (X32,),
     lambda: (X32, Y3)),
    ("an int for a None argument", lambda a, b: a, (0, 0), 0, (X32, None), lambda: X32),
]


@pytest.mark.parametrize("case", GOOD_AXES, ids=[c[0] for c in GOOD_AXES])
def test_prefix_axis_trees_match_a_loop(case):
    _, fun, in_axes, out_axes, args, reference = case
    got = fnad.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*args)
    want = reference()
    assert fnad.tree_util.tree_structure(got) == fnad.tree_util.tree_structure(want)
    for g, w in zip(fnad.tree_util.tree_leaves(got), fnad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6)


@needs_jax
@pytest.mark.parametrize("case", GOOD_AXES, ids=[c[0] for c in GOOD_AXES])
def test_prefix_axis_trees_match_jax(case):
    _, fun, in_axes, out_axes, args, _ = case
    got = fnad.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*args)
    jargs = jax.tree_util.tree_map(jnp.asarray, args)
    want = jax.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*jargs)
    got_leaves = fnad.tree_util.tree_leaves(got)
    want_leaves = jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_keyword_arguments_are_mapped_along_axis_0_as_in_jax():
    f = lambda a, b=None: a * b     # noqa: E731
    got = fnad.vmap(f, in_axes=(None,))(Y3, b=Y3)
    np.testing.assert_allclose(np.asarray(got), np.outer(Y3, Y3), rtol=1e-6)
    if jax is not None:
        want = jax.vmap(f, in_axes=(None,))(jnp.asarray(Y3), b=jnp.asarray(Y3))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    with pytest.raises(ShapeError, match="keyword arguments are mapped along axis 0"):
        fnad.vmap(f)(Y3, b=np.float32(2.0))


def test_broadcast_prefix():
    full = {"w": [1, 2, (3, 4)], "b": None, "c": 5}
    assert broadcast_prefix(7, full) == [7] * 5
    assert broadcast_prefix({"w": [0, 1, 2], "b": 9, "c": 3}, full) == [3, 0, 1, 2, 2]
    assert broadcast_prefix({"w": None, "b": 0, "c": 1}, full,
                            is_leaf=lambda x: x is None) == [1, None, None, None, None]
    with pytest.raises(TreeStructureError, match=r"spec\['w'\]\[2\]: a list where the tree "
                                                 r"has a node of type tuple"):
        broadcast_prefix({"w": [0, 1, [2, 3]], "b": 0, "c": 0}, full, name="spec")


class Box:
    def __init__(self, kind, value):
        self.kind, self.value = kind, value


register_pytree_node(Box, lambda b: ([b.value], b.kind), lambda kind, c: Box(kind, c[0]))


def test_broadcast_prefix_compares_custom_node_metadata():
    assert broadcast_prefix(Box("x", 1), Box("x", (5, 6))) == [1, 1]
    with pytest.raises(TreeStructureError, match=r"Box nodes with different metadata: 'x' "
                                                 r"where the tree has 'y'"):
        broadcast_prefix(Box("x", 1), Box("y", 5))


# --------------------------------------------------------------------------- has_aux

def _aux_transforms():
    x = fnp.asarray(np.array([0.5, -1.5, 2.0], np.float32))
    return [
        ("grad", lambda f: fnad.grad(f, has_aux=True)(x)),
        ("value_and_grad", lambda f: fnad.value_and_grad(f, has_aux=True)(x)),
        ("vjp", lambda f: fnad.vjp(f, x, has_aux=True)),
        ("jvp", lambda f: fnad.jvp(f, (x,), (x,), has_aux=True)),
        ("jacfwd", lambda f: fnad.jacfwd(f, has_aux=True)(x)),
        ("jacrev", lambda f: fnad.jacrev(f, has_aux=True)(x)),
        ("hessian", lambda f: fnad.hessian(f, has_aux=True)(x)),
    ]


BAD_AUX = [
    ("a scalar", lambda a: (a ** 2).sum(), r"got an array of shape \(\) and dtype float32"),
    ("a 3-tuple", lambda a: ((a ** 2).sum(), a, a), r"got a tuple of 3 elements"),
    ("an array", lambda a: a ** 2, r"got an array of shape \(3,\) and dtype float32"),
    # Two entries, but an array: unpacking it would silently make a[0] the output.
    ("a 2-element array", lambda a: a[:2] ** 2,
     r"got an array of shape \(2,\) and dtype float32"),
    ("None", lambda a: None, r"got a value of type NoneType"),
]


@pytest.mark.parametrize("transform", [t for t, _ in _aux_transforms()])
@pytest.mark.parametrize("bad", BAD_AUX, ids=[b[0] for b in BAD_AUX])
def test_has_aux_requires_a_pair(transform, bad):
    _, fun, detail = bad
    call = dict(_aux_transforms())[transform]
    with pytest.raises(HasAuxError, match=rf"^{transform}: has_aux=True requires the "
                                          rf"function to return a pair \(output, aux\); "
                                          rf"{detail}"):
        call(fun)


def test_has_aux_pair_still_works():
    x = np.array([0.5, -1.5, 2.0], np.float32)
    for pair in (tuple, list):
        g, aux = fnad.grad(lambda a: pair([(a ** 2).sum(), {"n": a * 3}]), has_aux=True)(x)
        np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(aux["n"]), 3 * x, rtol=1e-6)
    h, aux = fnad.hessian(lambda a: ((a ** 3).sum(), a), has_aux=True)(x)
    np.testing.assert_allclose(np.asarray(h), np.diag(6 * x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(aux), x)


@needs_jax
def test_jax_also_refuses_has_aux_without_a_pair():
    x = jnp.ones(3)
    assert _jax_error(lambda: jax.grad(lambda a: a.sum(), has_aux=True)(x)) is TypeError
    assert _jax_error(lambda: jax.grad(lambda a: (a.sum(), 1, 2), has_aux=True)(x)) \
        is TypeError


# --------------------------------------------------------------------------- argnums

def _two(a, b):
    return (a * b).sum()


ARGNUMS_TRANSFORMS = {
    "grad": lambda an: fnad.grad(_two, argnums=an),
    "value_and_grad": lambda an: fnad.value_and_grad(_two, argnums=an),
    "jacfwd": lambda an: fnad.jacfwd(_two, argnums=an),
    "jacrev": lambda an: fnad.jacrev(_two, argnums=an),
    "hessian": lambda an: fnad.hessian(_two, argnums=an),
}

# Refused when the transform is made: (argnums, message pattern)
BAD_ARGNUMS_TYPES = [
    ("a", r"argnums must be an int or a tuple of ints .*got 'a' of type str"),
    (1.0, r"argnums must be an int or a tuple of ints .*got 1\.0 of type float"),
    (True, r"argnums must be an int or a tuple of ints .*got True of type bool"),
    (None, r"got None of type NoneType"),
    ((0, "a"), r"argnums must hold ints .*holds 'a' of type str"),
    ((True,), r"holds True of type bool"),
    ((0, 0), r"argnums=\(0, 0\) names argument 0 more than once"),
    ((), r"argnums=\(\) names no argument"),
]


@pytest.mark.parametrize("transform", sorted(ARGNUMS_TRANSFORMS))
@pytest.mark.parametrize("argnums,pattern", BAD_ARGNUMS_TYPES,
                         ids=[repr(a) for a, _ in BAD_ARGNUMS_TYPES])
def test_bad_argnums_are_refused_when_the_transform_is_made(transform, argnums, pattern):
    with pytest.raises(ArgnumsError, match=rf"^{transform}: .*{pattern}"):
        ARGNUMS_TRANSFORMS[transform](argnums)


def test_argnums_errors_are_type_errors_and_value_errors():
    with pytest.raises(TypeError):
        fnad.grad(_two, argnums="a")
    with pytest.raises(ValueError):
        fnad.grad(_two, argnums=5)(Y3, Y3)


@pytest.mark.parametrize("transform", sorted(ARGNUMS_TRANSFORMS))
def test_argnums_are_checked_against_each_call(transform):
    x = np.array([1.0, 2.0], np.float32)
    with pytest.raises(ArgnumsError, match=rf"^{transform}: argnums names argument 2, but the "
                                           rf"function was called with 2 positional "
                                           rf"arguments \(valid positions: 0\.\.1 or -2\.\.-1\)"):
        ARGNUMS_TRANSFORMS[transform](2)(x, x)
    with pytest.raises(ArgnumsError, match=r"names argument -3, but .* 2 positional"):
        ARGNUMS_TRANSFORMS[transform](-3)(x, x)
    with pytest.raises(ArgnumsError, match=r"argnums=\(1, -1\) names argument 1 more than once"):
        ARGNUMS_TRANSFORMS[transform]((1, -1))(x, x)


def test_valid_argnums_forms_give_the_right_derivatives():
    a = np.array([1.0, 2.0], np.float32)
    b = np.array([3.0, -4.0], np.float32)
    np.testing.assert_allclose(np.asarray(fnad.grad(_two, argnums=-1)(a, b)), a)
    np.testing.assert_allclose(np.asarray(fnad.grad(_two, argnums=np.int64(1))(a, b)), a)
    ga, gb = fnad.grad(_two, argnums=[1, 0])(a, b)
    np.testing.assert_allclose(np.asarray(ga), a)
    np.testing.assert_allclose(np.asarray(gb), b)
    np.testing.assert_allclose(np.asarray(fnad.jacrev(_two, argnums=(-2,))(a, b)[0]), b)


def test_jit_static_argnums():
    for bad, pattern in [("a", r"got 'a' of type str"), (1.0, r"got 1\.0 of type float"),
                         (True, r"got True of type bool"), ((1, 1), r"more than once")]:
        with pytest.raises(ArgnumsError, match=rf"^jit: static_argnums.*{pattern}"):
            fnad.jit(lambda x, n: x * n, static_argnums=bad)
    with pytest.raises(ArgnumsError, match=r"^jit: donate_argnums must .* got 'x'"):
        fnad.jit(lambda x: x, donate_argnums="x")
    f = fnad.jit(lambda x, n: x * n if n > 1 else x, static_argnums=5)
    with pytest.raises(ArgnumsError, match=r"static_argnums names argument 5, but the "
                                           r"function was called with 2 positional"):
        f(Y3, 3)
    # A negative position is the argument it counts back to, static only once.
    g = fnad.jit(lambda x, n: x * n if n > 1 else x, static_argnums=-1)
    np.testing.assert_allclose(np.asarray(g(Y3, 3)), Y3 * 3, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g(Y3, 1)), Y3, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fnad.jit(lambda x, n: x * n, static_argnums=None)(
        Y3, 2.0)), Y3 * 2, rtol=1e-6)


def test_custom_vjp_nondiff_argnums():
    with pytest.raises(ArgnumsError, match=r"^custom_vjp: nondiff_argnums must be an int or "
                                           r"a tuple of ints .*got 'a'"):
        fnad.custom_vjp(lambda a, x: a * x, nondiff_argnums="a")
    with pytest.raises(ArgnumsError, match=r"^checkpoint: static_argnums must hold ints"):
        fnad.checkpoint(lambda a, x: a * x, static_argnums=(0.5,))

    # Given out of order, the non-differentiable arguments still reach the rules in
    # position order (as in JAX), and each one where it belongs.
    def f(a, x, b):
        return a * x * x + b

    def fwd(a, x, b):
        return f(a, x, b), x

    def bwd(a, b, x, g):     # a, b: the nondiff arguments, in position order
        return (g * 2 * a * x,)
    cf = fnad.custom_vjp(f, nondiff_argnums=(2, 0))
    cf.defvjp(fwd, bwd)
    x = np.float32(1.5)
    np.testing.assert_allclose(float(cf(2.0, x, 10.0)), 2.0 * 1.5 ** 2 + 10.0, rtol=1e-6)
    np.testing.assert_allclose(float(fnad.grad(cf, argnums=1)(2.0, x, 10.0)), 2 * 2.0 * 1.5,
                               rtol=1e-6)
    with pytest.raises(ArgnumsError, match=r"custom_vjp: nondiff_argnums names argument 2, "
                                           r"but the function was called with 2"):
        cf(2.0, x)


@needs_jax
def test_jax_agrees_on_argnums_it_refuses():
    x = jnp.ones(3)
    jf = lambda a, b: (a * b).sum()      # noqa: E731
    for argnums in ("a", 1.0, (0, "a"), 5):
        assert _jax_error(lambda: jax.grad(jf, argnums=argnums)(x, x)) is not None
    # JAX takes a bool as a position (argnums=True is argument 1); fnad refuses it on
    # purpose, since it is almost always a slip for has_aux=True.
    assert _jax_error(lambda: jax.grad(jf, argnums=True)(x, x)) is None


# --------------------------------------------------------------------------- fnad.data

@pytest.mark.parametrize("call,error,pattern", [
    (lambda: data.num_batches(10, 0), ValueError,
     r"num_batches: batch_size must be a positive int, got 0"),
    (lambda: data.num_batches(10, -3), ValueError, r"batch_size must be a positive int"),
    (lambda: data.num_batches(10, 2.0), TypeError,
     r"num_batches: batch_size must be an int, got 2\.0 of type float"),
    (lambda: data.num_batches(10, True), TypeError, r"got True of type bool"),
    (lambda: data.num_batches(-1, 2), ValueError,
     r"num_batches: num_examples must be an int >= 0, got -1"),
    (lambda: data.num_batches(10.5, 2), TypeError, r"num_examples must be an int"),
    (lambda: data.num_batches(10, 3, drop_last="no"), TypeError,
     r"drop_last must be True or False, got 'no'"),
    (lambda: data.batches(np.zeros(3), 1.5), TypeError,
     r"batches: batch_size must be an int, got 1\.5"),
    (lambda: data.batches(np.zeros(3), 0), ValueError, r"batches: batch_size must be a "
                                                        r"positive int"),
    (lambda: data.batches(np.zeros(3), 2, prefetch=None), TypeError,
     r"batches: prefetch must be an int, got None"),
    (lambda: data.batches(np.zeros(3), 2, drop_last=1), TypeError,
     r"batches: drop_last must be True or False"),
])
def test_data_arguments(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_num_batches_counts():
    for n in range(0, 12):
        for size in range(1, 5):
            assert data.num_batches(n, size) == -(-n // size)
            assert data.num_batches(n, np.int64(size), drop_last=True) == n // size
            if n:
                for drop_last in (False, True):
                    assert data.num_batches(n, size, drop_last) == len(
                        data.batches(np.zeros(n), size, drop_last=drop_last))


# --------------------------------------------------------------------------- escaped jit tracers

def test_a_leaked_jit_tracer_says_it_escaped():
    leaked = []

    @fnad.jit
    def f(x):
        leaked.extend([x * 2, x.sum()])
        return x
    f(fnp.ones(3))
    for convert, value in [(np.asarray, leaked[0]), (np.array, leaked[1]),
                           (float, leaked[1]), (bool, leaked[1]), (int, leaked[1])]:
        with pytest.raises(EscapedTracerError, match=r"shape \(.*\) and dtype float32 traced "
                                                     r"by jit .* escaped its jit"):
            convert(value)


def test_a_live_jit_tracer_is_still_a_concretization_error():
    @fnad.jit
    def f(x):
        return x if x[0] > 0 else -x
    with pytest.raises(ConcretizationError, match=r"inside a function being staged by jit"):
        f(fnp.ones(3))
    with pytest.raises(ConcretizationError) as info:
        fnad.jit(lambda x: fnp.asarray(np.asarray(x)))(fnp.ones(3))
    assert "escaped" not in str(info.value)
