"""Property tests over random shapes: fnad.numpy equals numpy, and the gradient of
sum(f(x)) equals f's derivative, written out by hand, elementwise."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fnad
import fnad.numpy as fnp
from fnad.lax import cumsum

SETTINGS = settings(max_examples=30, deadline=None)
seeds = st.integers(0, 2**32 - 1)
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5)
broadcast_pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                    min_side=1, max_side=5)


def unbroadcast(g, shape):
    """Sum a gradient over the axes numpy broadcasting added or stretched."""
    g = np.sum(g, axis=tuple(range(g.ndim - len(shape))))
    return np.sum(g, axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)


def _signed(rng, shape, lo, hi):
    return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


# name: (x domain, y domain, numpy function, d/dx, d/dy)
BINARY = {
    "add": (None, None, np.add, lambda x, y: 1 + 0 * x * y, lambda x, y: 1 + 0 * x * y),
    "subtract": (None, None, np.subtract, lambda x, y: 1 + 0 * x * y,
                 lambda x, y: -1 + 0 * x * y),
    "multiply": (None, None, np.multiply, lambda x, y: y + 0 * x, lambda x, y: x + 0 * y),
    "divide": (None, (0.5, 2), np.divide, lambda x, y: 1 / y + 0 * x,
               lambda x, y: -x / y ** 2),
    "power": ((0.3, 2), None, np.power, lambda x, y: y * x ** (y - 1),
              lambda x, y: np.log(x) * x ** y),
    "maximum": (None, None, np.maximum, lambda x, y: (x > y) + 0.0, lambda x, y: (y > x) + 0.0),
    "minimum": (None, None, np.minimum, lambda x, y: (x < y) + 0.0, lambda x, y: (y < x) + 0.0),
    "arctan2": (None, (0.3, 2), np.arctan2, lambda x, y: y / (x * x + y * y),
                lambda x, y: -x / (x * x + y * y)),
    "hypot": ((0.3, 2), None, np.hypot, lambda x, y: x / np.hypot(x, y),
              lambda x, y: y / np.hypot(x, y)),
}


def _operand(rng, shape, domain):
    if domain is None:
        return rng.standard_normal(shape)
    return _signed(rng, shape, *domain)


@SETTINGS
@given(name=st.sampled_from(sorted(BINARY)), shape_pair=broadcast_pairs, seed=seeds)
def test_binary_ops_broadcast_and_differentiate(name, shape_pair, seed):
    dom_x, dom_y, np_fn, dx, dy = BINARY[name]
    rng = np.random.default_rng(seed)
    sx, sy = shape_pair.input_shapes
    x = _operand(rng, sx, dom_x)
    y = _operand(rng, sy, dom_y)
    if name == "power":
        x = np.abs(x)
    ours = getattr(fnp, name)
    out = ours(x, y)
    expected = np_fn(x, y)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-12, atol=1e-12)
    gx, gy = fnad.grad(lambda a, b: fnp.sum(ours(a, b)), argnums=(0, 1))(x, y)
    full = np.broadcast_shapes(sx, sy)
    np.testing.assert_allclose(np.asarray(gx), unbroadcast(np.broadcast_to(dx(x, y), full), sx),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(gy), unbroadcast(np.broadcast_to(dy(x, y), full), sy),
                               rtol=1e-10, atol=1e-10)
    assert gx.shape == sx and gy.shape == sy


# name: (domain, numpy function, derivative)
UNARY = {
    "exp": (None, np.exp, np.exp),
    "log": ((0.2, 3), np.log, lambda x: 1 / x),
    "sin": (None, np.sin, np.cos),
    "tanh": (None, np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "sqrt": ((0.2, 3), np.sqrt, lambda x: 0.5 / np.sqrt(x)),
    "arctan": (None, np.arctan, lambda x: 1 / (1 + x * x)),
    "abs": ((0.1, 2), np.abs, np.sign),
    "square": (None, np.square, lambda x: 2 * x),
    "log1p": ((0.1, 0.9), np.log1p, lambda x: 1 / (1 + x)),
    "cbrt": ((0.2, 2), np.cbrt, lambda x: np.abs(x) ** (-2 / 3) / 3),
}


@SETTINGS
@given(name=st.sampled_from(sorted(UNARY)), shape=shapes, seed=seeds)
def test_unary_ops_grad_is_elementwise_derivative(name, shape, seed):
    domain, np_fn, deriv = UNARY[name]
    x = _operand(np.random.default_rng(seed), shape, domain)
    if name in ("log", "sqrt"):
        x = np.abs(x)
    ours = getattr(fnp, name)
    np.testing.assert_allclose(np.asarray(ours(x)), np_fn(x), rtol=1e-12, atol=1e-14)
    g = fnad.grad(lambda a: fnp.sum(ours(a)))(x)
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(np.asarray(g), deriv(x), rtol=1e-10, atol=1e-12)


@st.composite
def shape_and_axes(draw):
    shape = draw(shapes)
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"])) if ndim else "none"
    if kind == "none":
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-ndim, ndim - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    negate = draw(st.booleans())
    return shape, tuple(a - ndim if negate else a for a in axes)


def _count(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[a] for a in axes]))


# name: the gradient of sum(reduction(x, axis)) with respect to x, by hand
REDUCTIONS = {
    "sum": lambda x, axis, out: np.ones_like(x),
    "mean": lambda x, axis, out: np.full_like(x, 1 / _count(x.shape, axis)),
    "max": lambda x, axis, out: (x == np.max(x, axis=axis, keepdims=True)) + 0.0,
    "min": lambda x, axis, out: (x == np.min(x, axis=axis, keepdims=True)) + 0.0,
    "prod": lambda x, axis, out: np.prod(x, axis=axis, keepdims=True) / x,
    "var": lambda x, axis, out: 2 * (x - np.mean(x, axis=axis, keepdims=True))
    / _count(x.shape, axis),
    "std": lambda x, axis, out: (x - np.mean(x, axis=axis, keepdims=True))
    / (_count(x.shape, axis) * np.std(x, axis=axis, keepdims=True)),
}


@SETTINGS
@given(name=st.sampled_from(sorted(REDUCTIONS)), shape_axis=shape_and_axes(),
       keepdims=st.booleans(), seed=seeds)
def test_reductions_over_random_axes(name, shape_axis, keepdims, seed):
    shape, axis = shape_axis
    # Distinct magnitudes away from zero: max/min have one winner, prod no zero.
    x = _signed(np.random.default_rng(seed), shape, 0.5, 1.5)
    if name == "std" and _count(shape, axis) == 1:
        return      # std of one element: derivative of sqrt at 0
    ours, theirs = getattr(fnp, name), getattr(np, name)
    out = ours(x, axis=axis, keepdims=keepdims)
    expected = theirs(x, axis=axis, keepdims=keepdims)
    assert out.shape == np.shape(expected) and out.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-12, atol=1e-12)
    g = fnad.grad(lambda a: fnp.sum(ours(a, axis=axis, keepdims=keepdims)))(x)
    assert g.shape == x.shape
    np.testing.assert_allclose(np.asarray(g), REDUCTIONS[name](x, axis, out), rtol=1e-9,
                               atol=1e-9)


@SETTINGS
@given(shape_axis=shape_and_axes(), seed=seeds)
def test_cumsum_grad_counts_later_entries(shape_axis, seed):
    shape, axis = shape_axis
    if not shape or not isinstance(axis, int):
        return
    x = np.random.default_rng(seed).standard_normal(shape)
    np.testing.assert_allclose(np.asarray(fnp.cumsum(x, axis)), np.cumsum(x, axis), rtol=1e-12,
                               atol=1e-12)
    # d sum(cumsum(x)) / d x_k = number of prefix sums containing x_k = n - k.
    n = shape[axis]
    counts = np.arange(n, 0, -1.0).reshape([n if i == axis % len(shape) else 1
                                             for i in range(len(shape))])
    g = fnad.grad(lambda a: fnp.sum(fnp.cumsum(a, axis)))(x)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(counts, shape))
    g_rev = fnad.grad(lambda a: fnp.sum(cumsum(a, axis % len(shape), reverse=True)))(x)
    np.testing.assert_allclose(np.asarray(g_rev), np.broadcast_to(np.flip(counts, axis), shape))


@st.composite
def einsum_problems(draw):
    """Random subscripts over a few labels (repeats within an operand allowed), some
    labels broadcast with size 1, with an explicit or implicit output."""
    sizes = dict(zip("abcd", draw(st.lists(st.integers(1, 4), min_size=4, max_size=4))))
    n_operands = draw(st.integers(1, 3))
    terms, shapes = [], []
    for _ in range(n_operands):
        term = "".join(draw(st.lists(st.sampled_from("abcd"), min_size=0, max_size=3)))
        shape = tuple(sizes[c] if draw(st.integers(0, 4)) else 1 for c in term)
        # A repeated label needs one size within its operand.
        shape = tuple(shape[term.index(c)] for c in term)
        terms.append(term)
        shapes.append(shape)
    used = sorted(set("".join(terms)))
    if draw(st.booleans()):
        out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        subscripts = ",".join(terms) + "->" + out
    else:
        subscripts = ",".join(terms)
    return subscripts, shapes


@SETTINGS
@given(problem=einsum_problems(), seed=seeds)
def test_einsum_matches_numpy_and_its_gradient_is_consistent(problem, seed):
    subscripts, shapes = problem
    rng = np.random.default_rng(seed)
    operands = [rng.standard_normal(s) for s in shapes]
    expected = np.einsum(subscripts, *operands)
    out = fnp.einsum(subscripts, *operands)
    assert out.shape == expected.shape
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-10, atol=1e-10)
    # einsum is linear in each operand: <grad_k, x_k> = sum(einsum(...)) for every k.
    grads = fnad.grad(lambda *xs: fnp.sum(fnp.einsum(subscripts, *xs)),
                      argnums=tuple(range(len(operands))))(*operands)
    for g, x in zip(grads, operands):
        assert g.shape == x.shape
        np.testing.assert_allclose(np.sum(np.asarray(g) * x), np.sum(expected),
                                   rtol=1e-9, atol=1e-9)
