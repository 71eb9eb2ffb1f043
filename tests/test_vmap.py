"""vmap: every swept primitive against a loop over examples (all operands batched,
one unbatched, batch axes inside and last, out_axes, nested), composition with grad
and jit, errors, and the size of the batched program.

References are numpy: TABLE's per-example reference stacked over a Python loop,
and a hand-written backward pass for the MLP."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import core
from fnad.primitives import shape, reduce, dot
from fnad.errors import ShapeError, ConcretizationError

from test_primitives import CASES, TABLE, setup, reference

N = 3


def test_every_primitive_has_a_batch_rule():
    missing = [name for name, prim in core.PRIMITIVES.items() if not callable(prim.batch)]
    assert not missing, f"primitives without a vmap rule: {missing}"


# --------------------------------------------------------------------------- the sweep

def examples(name, i, n=N):
    """The primitive, its params, and n independent draws of case i's operands."""
    prim, entry, case, _ = setup(name, i)
    draws = [tuple(np.asarray(a) for a in case.args(np.random.default_rng(100 * e + i)))
             for e in range(n)]
    return prim, entry, case, draws


def loop(entry, case, draws):
    return np.stack([reference(entry, case, args) for args in draws])


def stacked(draws, k, axis=0):
    return fnp.asarray(np.moveaxis(np.stack([d[k] for d in draws]), 0, axis))


def check(out, expected):
    out = np.asarray(out)
    assert out.shape == expected.shape and out.dtype == expected.dtype, \
        (out.shape, out.dtype, expected.shape, expected.dtype)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def primitive_fn(prim, case):
    return lambda *xs: prim.bind(*xs, **case.params)


@pytest.mark.parametrize("name,i", CASES)
def test_vmap_matches_a_loop(name, i):
    prim, entry, case, draws = examples(name, i)
    f = primitive_fn(prim, case)
    n_ops = len(draws[0])
    if not n_ops:       # iota: nothing to batch, the result is broadcast
        check(fnad.vmap(f, axis_size=N)(), loop(entry, case, draws))
        return
    args = [stacked(draws, k) for k in range(n_ops)]
    check(fnad.vmap(f)(*args), loop(entry, case, draws))
    # One batched primitive application, plus at most an axis move per operand.
    eqns = fnad.make_jaxpr(fnad.vmap(f))(*args).program.eqns
    assert sum(e.prim is prim for e in eqns) <= 1 and len(eqns) <= 1 + 2 * n_ops, eqns


@pytest.mark.parametrize("name,i", [c for c in CASES if len(examples(*c.values)[3][0]) > 1])
def test_vmap_with_one_operand_unbatched(name, i):
    prim, entry, case, draws = examples(name, i)
    f = primitive_fn(prim, case)
    n_ops = len(draws[0])
    for k in range(n_ops):
        fixed = [d[:k] + (draws[0][k],) + d[k + 1:] for d in draws]
        in_axes = tuple(None if j == k else 0 for j in range(n_ops))
        args = [fnp.asarray(draws[0][k]) if j == k else stacked(draws, j)
                for j in range(n_ops)]
        check(fnad.vmap(f, in_axes=in_axes)(*args), loop(entry, case, fixed))


@pytest.mark.parametrize("axis", [1, -1])
@pytest.mark.parametrize("name,i", [c for c in CASES if examples(*c.values)[3][0]])
def test_vmap_over_inner_and_last_axes(name, i, axis):
    prim, entry, case, draws = examples(name, i)
    in_axes = tuple(axis if np.ndim(x) >= 1 else 0 for x in draws[0])
    args = [stacked(draws, k, ax) for k, ax in enumerate(in_axes)]
    check(fnad.vmap(primitive_fn(prim, case), in_axes=in_axes)(*args),
          loop(entry, case, draws))


@pytest.mark.parametrize("name,i", [c for c in CASES
                                    if reference(*setup(*c.values)[1:]).ndim >= 1])
def test_vmap_out_axes_1(name, i):
    prim, entry, case, draws = examples(name, i)
    f = fnad.vmap(primitive_fn(prim, case), out_axes=1,
                  axis_size=None if draws[0] else N)
    check(f(*[stacked(draws, k) for k in range(len(draws[0]))]),
          np.moveaxis(loop(entry, case, draws), 0, 1))


@pytest.mark.parametrize("name,i", CASES)
def test_nested_vmap(name, i):
    """out[j, a] = f(x[a, j]) with the outer vmap over axis 1 (size 2) and the inner
    over axis 0 (size 3); with several operands the last is batched by the inner
    vmap only."""
    prim, entry, case, draws = examples(name, i, n=2 * N)
    f = primitive_fn(prim, case)
    n_ops = len(draws[0])
    grid = [[draws[a * 2 + j] for j in range(2)] for a in range(N)]    # grid[a][j]
    shared = n_ops > 1
    args, outer_axes = [], []
    for k in range(n_ops):
        if shared and k == n_ops - 1:
            args.append(fnp.asarray(np.stack([grid[a][0][k] for a in range(N)])))
            outer_axes.append(None)
        else:
            args.append(fnp.asarray(np.stack([[grid[a][j][k] for j in range(2)]
                                              for a in range(N)])))
            outer_axes.append(1)
    expected = np.stack([np.stack([
        reference(entry, case, grid[a][j][:-1] + (grid[a][0][-1],) if shared else grid[a][j])
        for a in range(N)]) for j in range(2)])
    if not n_ops:
        nested = fnad.vmap(fnad.vmap(f, axis_size=N), axis_size=2)
    else:
        nested = fnad.vmap(fnad.vmap(f), in_axes=tuple(outer_axes))
    check(nested(*args), expected)


STRUCTURAL = {p.name for module in (shape, reduce, dot) for p in vars(module).values()
              if isinstance(p, core.Primitive)}


@pytest.mark.parametrize("name,i", [c for c in CASES if c.values[0] in STRUCTURAL
                                    and examples(*c.values)[3][0]])
def test_jit_of_vmap_over_last_axes(name, i):
    """The staged batched program (batch axes where the rules leave them) compiles
    and agrees with the loop."""
    prim, entry, case, draws = examples(name, i)
    in_axes = tuple(-1 if np.ndim(x) >= 1 else 0 for x in draws[0])
    args = [stacked(draws, k, ax) for k, ax in enumerate(in_axes)]
    check(fnad.jit(fnad.vmap(primitive_fn(prim, case), in_axes=in_axes))(*args),
          loop(entry, case, draws))


GRAD_CASES = [c for c in CASES if (TABLE[c.values[0]].cases[c.values[1]].grad
                                   or TABLE[c.values[0]].grad) == "check"]


def differentiated(entry, args):
    if entry.diff_argnums is not None:
        return entry.diff_argnums
    return tuple(k for k, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


@pytest.mark.parametrize("name,i", GRAD_CASES)
def test_vmap_of_grad_matches_a_loop_of_grads(name, i):
    """Per-example gradients: the batch rules of every primitive the VJP rules use."""
    prim, entry, case, draws = examples(name, i)
    argnums = differentiated(entry, draws[0])
    grad = fnad.grad(lambda *xs: fnp.sum(fnp.sin(prim.bind(*xs, **case.params))), argnums)
    batched = fnad.vmap(grad)(*[stacked(draws, k) for k in range(len(draws[0]))])
    for j in range(len(argnums)):
        expected = np.stack([np.asarray(grad(*map(fnp.asarray, d))[j]) for d in draws])
        np.testing.assert_allclose(np.asarray(batched[j]), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,i", GRAD_CASES)
def test_jacfwd_and_jacrev_match_finite_differences(name, i):
    """jacfwd and jacrev are vmaps of jvp and of a pullback over unit vectors."""
    prim, entry, case, draws = examples(name, i, n=1)
    args = draws[0]
    argnums = differentiated(entry, args)
    f = lambda *xs: prim.bind(*xs, **case.params)       # noqa: E731
    out_shape = reference(entry, case, args).shape
    for k in argnums:
        x = args[k]
        columns = []
        for e in np.eye(x.size):        # central differences of the numpy reference
            step = 1e-6 * e.reshape(x.shape)
            hi, lo = (args[:k] + (x + s,) + args[k + 1:] for s in (step, -step))
            columns.append((reference(entry, case, hi) - reference(entry, case, lo)) / 2e-6)
        expected = np.stack(columns, -1).reshape(out_shape + x.shape) if columns else \
            np.zeros(out_shape + x.shape)
        xs = list(map(fnp.asarray, args))
        for jac in (fnad.jacfwd, fnad.jacrev):
            J = jac(f, argnums=k)(*xs)
            assert J.shape == out_shape + x.shape, (jac.__name__, J.shape)
            np.testing.assert_allclose(np.asarray(J), expected, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- an MLP

def mlp_loss(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return fnp.mean((h @ params["w2"] - y) ** 2)


def mlp_numpy(params, x, y):
    """(loss, gradient) of one example by a hand-written backward pass."""
    w1, b1, w2 = (np.asarray(params[k]) for k in ("w1", "b1", "w2"))
    x, y = np.asarray(x), np.asarray(y)
    h = np.tanh(x @ w1 + b1)
    r = h @ w2 - y
    d_out = 2 * r / r.size
    d_pre = (w2 @ d_out) * (1 - h ** 2)
    return np.mean(r ** 2), {"w1": np.outer(x, d_pre), "b1": d_pre, "w2": np.outer(h, d_out)}


def mlp_setup(batch=5):
    rng = np.random.default_rng(0)
    params = {"w1": fnp.asarray(rng.standard_normal((3, 8))),
              "b1": fnp.asarray(rng.standard_normal(8)),
              "w2": fnp.asarray(rng.standard_normal((8, 1)))}
    return (params, fnp.asarray(rng.standard_normal((batch, 3))),
            fnp.asarray(rng.standard_normal((batch, 1))))


def per_example_numpy(params, x, y):
    results = [mlp_numpy(params, x[b], y[b]) for b in range(x.shape[0])]
    return (np.array([r[0] for r in results]),
            {k: np.stack([r[1][k] for r in results]) for k in params})


def check_tree(got, expected, rtol=1e-12):
    assert set(got) == set(expected)
    for k in expected:
        assert got[k].shape == expected[k].shape, (k, got[k].shape, expected[k].shape)
        np.testing.assert_allclose(np.asarray(got[k]), expected[k], rtol=rtol, atol=1e-14)


def test_vmap_of_grad_gives_per_example_gradients():
    params, x, y = mlp_setup()
    grads = fnad.vmap(fnad.grad(mlp_loss), in_axes=(None, 0, 0))(params, x, y)
    check_tree(grads, per_example_numpy(params, x, y)[1])
    # The same with the examples along the last axis and out_axes moving them there.
    grads_t = fnad.vmap(fnad.grad(mlp_loss), in_axes=(None, 1, 1), out_axes=-1)(
        params, x.T, y.T)
    check_tree(grads_t, {k: np.moveaxis(g, 0, -1)
                         for k, g in per_example_numpy(params, x, y)[1].items()})


def test_grad_of_vmap_sums_per_example_gradients():
    params, x, y = mlp_setup()

    def total(params):
        return fnp.sum(fnad.vmap(mlp_loss, in_axes=(None, 0, 0))(params, x, y))

    check_tree(fnad.grad(total)(params),
               {k: g.sum(0) for k, g in per_example_numpy(params, x, y)[1].items()})
    # grad with respect to the batched inputs themselves: per-example input gradients.
    gx = fnad.grad(lambda x: fnp.sum(fnad.vmap(mlp_loss, in_axes=(None, 0, 0))(
        params, x, y)))(x)
    w1, b1, w2 = (np.asarray(params[k]) for k in ("w1", "b1", "w2"))
    h = np.tanh(np.asarray(x) @ w1 + b1)
    d_pre = (2 * (h @ w2 - np.asarray(y)) @ w2.T) * (1 - h ** 2)
    np.testing.assert_allclose(np.asarray(gx), d_pre @ w1.T, rtol=1e-12)


def test_jit_and_vmap_compose_and_stay_one_call():
    params, x, y = mlp_setup()
    losses = per_example_numpy(params, x, y)[0]
    batched = fnad.vmap(mlp_loss, in_axes=(None, 0, 0))
    for f in (fnad.jit(batched), fnad.vmap(fnad.jit(mlp_loss), in_axes=(None, 0, 0))):
        out = f(params, x, y)
        assert out.shape == (x.shape[0],)
        np.testing.assert_allclose(np.asarray(out), losses, rtol=1e-12)
    # vmap of a jitted function is one jit_call of the batched program.
    eqns = fnad.make_jaxpr(fnad.vmap(fnad.jit(mlp_loss), in_axes=(None, 0, 0)))(
        params, x, y).program.eqns
    assert [e.prim.name for e in eqns] == ["jit_call"]
    # ...and under grad, the batched program's derivative is staged too.
    g = fnad.grad(lambda p: fnp.sum(fnad.vmap(fnad.jit(mlp_loss), in_axes=(None, 0, 0))(
        p, x, y)))(params)
    check_tree(g, {k: v.sum(0) for k, v in per_example_numpy(params, x, y)[1].items()})


def test_jit_of_vmap_of_grad_per_example_gradients():
    params, x, y = mlp_setup()
    per_example = fnad.jit(fnad.vmap(fnad.grad(mlp_loss), in_axes=(None, 0, 0)))
    expected = per_example_numpy(params, x, y)[1]
    check_tree(per_example(params, x, y), expected, rtol=1e-10)
    check_tree(per_example(params, x, y), expected, rtol=1e-10)    # the cached call
    assert per_example.trace_count == 1


def test_vmap_of_custom_rules_keeps_them():
    @fnad.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -0.5, 0.5),))
    xs = fnp.asarray(np.array([[1.0, -2.0], [0.1, 3.0], [-1.0, 0.2]]))
    f = lambda x: fnp.sum(clip_gradient(x) ** 2)      # noqa: E731
    expected = np.clip(2 * np.asarray(xs), -0.5, 0.5)
    for g in (fnad.vmap(fnad.grad(f)), fnad.vmap(fnad.jit(fnad.grad(f))),
              fnad.jit(fnad.vmap(fnad.grad(f)))):
        np.testing.assert_allclose(np.asarray(g(xs)), expected)
    # custom_call's own rule, reached by binding it directly.
    eqn, = [e for e in fnad.make_jaxpr(clip_gradient)(xs[0]).program.eqns
            if e.prim.name == "custom_call"]
    outs, dims = eqn.prim.batch([xs.T], [1], **eqn.params)
    np.testing.assert_array_equal(np.moveaxis(np.asarray(outs[0]), dims[0], 0), xs)


def test_batched_program_is_not_bigger_than_a_few_axis_moves():
    params, x, y = mlp_setup()
    operands = len(fnad.tree_util.tree_flatten((params, x, y))[0])
    for f in (mlp_loss, fnad.grad(mlp_loss)):
        single = fnad.make_jaxpr(f)(params, x[0], y[0]).program.eqns
        batched = fnad.make_jaxpr(fnad.vmap(f, in_axes=(None, 0, 0)))(params, x, y).program.eqns
        assert len(batched) <= len(single) + operands + 2, (len(single), len(batched))
        assert not any(e.prim.name == "jit_call" for e in batched)


# --------------------------------------------------------------------------- errors

def test_vmap_errors_name_the_shapes():
    f = lambda a, b: a + b      # noqa: E731
    with pytest.raises(ShapeError, match=r"inconsistent sizes \[3, 4\].*\(3, 2\).*\(4, 2\)"):
        fnad.vmap(f)(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ShapeError, match=r"in_axes 2 is out of range.*\(3, 2\)"):
        fnad.vmap(f, in_axes=(2, 0))(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ShapeError, match=r"in_axes -3 is out of range"):
        fnad.vmap(f, in_axes=(0, -3))(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ShapeError, match="axis_size"):
        fnad.vmap(f, in_axes=None)(np.ones(3), np.ones(3))
    with pytest.raises(ShapeError, match=r"out_axes 2 is out of range.*\(2,\)"):
        fnad.vmap(f, out_axes=2)(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="one entry per positional argument"):
        fnad.vmap(f, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))
    with pytest.raises(ShapeError, match="do not broadcast"):
        fnad.vmap(f)(np.ones((3, 2)), np.ones((3, 5)))
    with pytest.raises(ConcretizationError, match=r"per-example shape \(\), dtype bool"):
        fnad.vmap(lambda a: a if a[0] > 0 else -a)(np.ones((3, 2)))
