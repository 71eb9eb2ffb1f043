"""fnad.optim: each optimizer's first steps against its update rule written out in
numpy, schedules at chosen steps, chain order, dtypes, and jit agreement."""
import math

import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad import optim
from fnad.tree_util import tree_map, tree_leaves, tree_structure

STEPS = 3


def _params(dtype=np.float32):
    rng = np.random.default_rng(0)
    return {"w": rng.normal(size=(3, 2)).astype(dtype),
            "b": [rng.normal(size=(2,)).astype(dtype), None]}


def _grads(dtype=np.float32):
    rng = np.random.default_rng(1)
    return [tree_map(lambda p: rng.normal(size=p.shape).astype(dtype), _params(dtype))
            for _ in range(STEPS)]


# --------------------------------------------------------------------------- references
# Each reference takes (grads, params, step t = 0, 1, ..., state dict) for one leaf and
# returns the update, keeping its running statistics in `state`.

def ref_sgd(lr, momentum=None, nesterov=False):
    def step(g, p, t, s):
        if momentum is None:
            return -lr * g
        s["m"] = g + momentum * s.get("m", 0.0)
        return -lr * (g + momentum * s["m"] if nesterov else s["m"])
    return step


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=None):
    def step(g, p, t, s):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        m_hat = s["m"] / (1 - b1 ** (t + 1))
        v_hat = s["v"] / (1 - b2 ** (t + 1))
        u = m_hat / (np.sqrt(v_hat) + eps)
        if weight_decay is not None:
            u = u + weight_decay * p
        rate = lr(t) if callable(lr) else lr
        return -rate * u
    return step


def ref_rmsprop(lr, decay=0.9, eps=1e-8, centered=False, momentum=None):
    def step(g, p, t, s):
        s["v"] = decay * s.get("v", 0.0) + (1 - decay) * g * g
        s["mu"] = decay * s.get("mu", 0.0) + (1 - decay) * g
        denom = s["v"] - s["mu"] ** 2 if centered else s["v"]
        u = -lr * g / np.sqrt(denom + eps)
        if momentum is not None:
            s["tr"] = u + momentum * s.get("tr", 0.0)
            u = s["tr"]
        return u
    return step


def ref_adagrad(lr, init=0.1, eps=1e-7):
    def step(g, p, t, s):
        s["s"] = s.get("s", init) + g * g
        return -lr * g / np.sqrt(s["s"] + eps)
    return step


OPTIMIZERS = {
    "sgd": (lambda: optim.sgd(0.1), ref_sgd(0.1)),
    "sgd_momentum": (lambda: optim.sgd(0.1, momentum=0.9), ref_sgd(0.1, 0.9)),
    "sgd_nesterov": (lambda: optim.sgd(0.05, momentum=0.8, nesterov=True),
                     ref_sgd(0.05, 0.8, True)),
    "adam": (lambda: optim.adam(1e-2), ref_adam(1e-2)),
    "adam_betas": (lambda: optim.adam(0.1, b1=0.5, b2=0.7, eps=1e-3),
                   ref_adam(0.1, 0.5, 0.7, 1e-3)),
    "adam_schedule": (lambda: optim.adam(optim.exponential_decay(0.1, 1, 0.5)),
                      ref_adam(lambda t: 0.1 * 0.5 ** t)),
    "adamw": (lambda: optim.adamw(1e-2, weight_decay=0.1),
              ref_adam(1e-2, weight_decay=0.1)),
    "rmsprop": (lambda: optim.rmsprop(1e-2), ref_rmsprop(1e-2)),
    "rmsprop_centered_momentum": (
        lambda: optim.rmsprop(1e-2, decay=0.8, centered=True, momentum=0.9),
        ref_rmsprop(1e-2, decay=0.8, centered=True, momentum=0.9)),
    "adagrad": (lambda: optim.adagrad(0.1), ref_adagrad(0.1)),
}


def _run_reference(ref, params, grads):
    leaves = tree_leaves(params)
    states = [dict() for _ in leaves]
    out = []
    for t, g in enumerate(grads):
        ups = [ref(gl.astype(np.float64), pl.astype(np.float64), t, s)
               for gl, pl, s in zip(tree_leaves(g), leaves, states)]
        leaves = [pl + u for pl, u in zip(leaves, ups)]
        out.append(ups)
    return out


def _run(opt, params, grads, update=None):
    update = update or opt.update
    state = opt.init(params)
    out = []
    for g in grads:
        updates, state = update(g, state, params)
        params = optim.apply_updates(params, updates)
        out.append(updates)
    return out, params, state


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_first_steps_match_update_rule(name):
    make, ref = OPTIMIZERS[name]
    params, grads = _params(), _grads()
    got, final, _ = _run(make(), params, grads)
    want = _run_reference(ref, params, grads)
    for t in range(STEPS):
        for g, w in zip(tree_leaves(got[t]), want[t]):
            assert g.dtype == np.float32
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=1e-7,
                                       err_msg=f"{name}, step {t}")
    assert tree_structure(final) == tree_structure(params)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_jit_agrees_with_eager(name):
    opt = OPTIMIZERS[name][0]()
    params, grads = _params(), _grads()
    step = fnad.jit(lambda g, s, p: opt.update(g, s, p))
    eager, eager_params, eager_state = _run(opt, params, grads)
    jitted, jit_params, jit_state = _run(opt, params, grads, update=step)
    for e, j in zip(tree_leaves((eager, eager_params, eager_state)),
                    tree_leaves((jitted, jit_params, jit_state))):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-5, atol=1e-7)
        assert np.asarray(j).dtype == np.asarray(e).dtype
    assert step.trace_count == 1


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_float64_params_stay_float64(name):
    opt = OPTIMIZERS[name][0]()
    params = _params(np.float64)
    updates, final, state = _run(opt, params, _grads(np.float64))
    assert all(u.dtype == np.float64 for u in tree_leaves(updates))
    assert all(p.dtype == np.float64 for p in tree_leaves(final))


def test_state_is_namedtuples_with_int32_counts():
    opt = optim.adam(optim.constant_schedule(0.1))
    state = opt.init(_params())
    adam_state, schedule_state = state
    assert isinstance(adam_state, optim.ScaleByAdamState)
    assert isinstance(schedule_state, optim.ScaleByScheduleState)
    assert adam_state.count.dtype == np.int32 and adam_state.count.shape == ()
    _, state = opt.update(_grads()[0], state, _params())
    assert int(state[0].count) == 1 and int(state[1].count) == 1


def test_count_saturates_instead_of_overflowing():
    opt = optim.scale_by_adam()
    params = _params()
    state = opt.init(params)
    state = state._replace(count=jnp.asarray(np.int32(np.iinfo(np.int32).max)))
    _, state = opt.update(_grads()[0], state, params)
    assert int(state.count) == np.iinfo(np.int32).max


# --------------------------------------------------------------------------- pieces

def test_chain_order_matters():
    g = {"a": np.array([3.0, 4.0], np.float32)}          # global norm 5
    clip_then_scale = optim.chain(optim.clip_by_global_norm(1.0), optim.scale(2.0))
    scale_then_clip = optim.chain(optim.scale(2.0), optim.clip_by_global_norm(1.0))
    u1, _ = clip_then_scale.update(g, clip_then_scale.init(g))
    u2, _ = scale_then_clip.update(g, scale_then_clip.init(g))
    np.testing.assert_allclose(np.asarray(u1["a"]), [1.2, 1.6], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(u2["a"]), [0.6, 0.8], rtol=1e-6)


def test_chain_state_is_a_tuple_of_member_states():
    opt = optim.chain(optim.trace(0.9), optim.scale_by_adam(), optim.scale(-1.0))
    state = opt.init(_params())
    assert isinstance(state, tuple) and len(state) == 3
    assert isinstance(state[0], optim.TraceState)
    assert isinstance(state[2], optim.EmptyState)


def test_clip_by_global_norm():
    g = {"a": np.array([3.0, 0.0], np.float32), "b": [np.array([[4.0]], np.float32)]}
    clip = optim.clip_by_global_norm(2.5)
    u, _ = clip.update(g, clip.init(g))
    np.testing.assert_allclose(np.asarray(u["a"]), [1.5, 0.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(u["b"][0]), [[2.0]], rtol=1e-6)
    small = tree_map(lambda x: x / 10, g)
    u, _ = clip.update(small, clip.init(g))           # norm 0.5: left unchanged
    for a, b in zip(tree_leaves(u), tree_leaves(small)):
        np.testing.assert_array_equal(np.asarray(a), b)
    zeros = tree_map(np.zeros_like, g)
    u, _ = clip.update(zeros, clip.init(g))           # no division by a zero norm
    assert all(np.all(np.asarray(x) == 0) for x in tree_leaves(u))


def test_global_norm():
    tree = {"a": np.array([1.0, 2.0]), "b": (np.array([[2.0, 4.0]]),)}
    assert float(optim.global_norm(tree)) == pytest.approx(5.0)


def test_add_decayed_weights_and_mask():
    p = {"w": np.array([1.0, 2.0], np.float32), "b": np.array([3.0], np.float32)}
    g = tree_map(np.ones_like, p)
    wd = optim.add_decayed_weights(0.5)
    u, _ = wd.update(g, wd.init(p), p)
    np.testing.assert_allclose(np.asarray(u["w"]), [1.5, 2.0])
    masked = optim.add_decayed_weights(0.5, mask=lambda params: {"w": True, "b": False})
    u, _ = masked.update(g, masked.init(p), p)
    np.testing.assert_allclose(np.asarray(u["w"]), [1.5, 2.0])
    np.testing.assert_allclose(np.asarray(u["b"]), [1.0])
    with pytest.raises(ValueError, match="params"):
        wd.update(g, wd.init(p))


def test_trace_momentum_by_hand():
    opt = optim.trace(0.5)
    g = np.array([1.0], np.float32)
    state = opt.init(g)
    u1, state = opt.update(g, state)
    u2, state = opt.update(g, state)
    u3, state = opt.update(g, state)
    assert [float(u1[0]), float(u2[0]), float(u3[0])] == [1.0, 1.5, 1.75]


def test_apply_updates_keeps_param_dtype():
    params = {"w": np.ones(2, np.float32), "n": np.ones(2, np.float16)}
    updates = {"w": np.full(2, 0.5, np.float64), "n": np.full(2, 0.5, np.float32)}
    out = optim.apply_updates(params, updates)
    assert out["w"].dtype == np.float32 and out["n"].dtype == np.float16
    np.testing.assert_allclose(np.asarray(out["w"]), 1.5)


def test_adam_minimizes_a_quadratic():
    target = jnp.asarray(np.array([1.0, -2.0, 3.0], np.float32))
    loss = lambda p: jnp.sum(jnp.square(p["x"] - target))
    opt = optim.adam(0.1)
    params = {"x": jnp.zeros(3)}
    state = opt.init(params)

    @fnad.jit
    def step(params, state):
        g = fnad.grad(loss)(params)
        updates, state = opt.update(g, state, params)
        return optim.apply_updates(params, updates), state
    for _ in range(300):
        params, state = step(params, state)
    np.testing.assert_allclose(np.asarray(params["x"]), np.asarray(target), atol=1e-2)


# --------------------------------------------------------------------------- schedules

SCHEDULES = [
    # (schedule, {step: expected value})
    (optim.constant_schedule(0.3), {0: 0.3, 7: 0.3, 1000: 0.3}),
    (optim.exponential_decay(1.0, 10, 0.5), {0: 1.0, 5: 0.5 ** 0.5, 10: 0.5, 20: 0.25}),
    (optim.exponential_decay(1.0, 10, 0.5, staircase=True), {9: 1.0, 15: 0.5, 29: 0.25}),
    (optim.exponential_decay(2.0, 4, 0.5, transition_begin=3),
     {0: 2.0, 3: 2.0, 7: 1.0, 11: 0.5}),
    (optim.exponential_decay(1.0, 1, 0.5, end_value=0.2), {1: 0.5, 2: 0.25, 3: 0.2, 9: 0.2}),
    (optim.cosine_decay_schedule(1.0, 100), {0: 1.0, 50: 0.5, 100: 0.0, 150: 0.0}),
    (optim.cosine_decay_schedule(2.0, 10, alpha=0.1),
     {0: 2.0, 5: 2.0 * (0.9 * 0.5 + 0.1), 10: 0.2, 30: 0.2}),
    (optim.cosine_decay_schedule(1.0, 4, exponent=2.0),
     {1: (0.5 * (1 + math.cos(math.pi / 4))) ** 2}),
    (optim.linear_schedule(1.0, 0.0, 10), {0: 1.0, 5: 0.5, 10: 0.0, 20: 0.0}),
    (optim.linear_schedule(0.0, 1.0, 4, transition_begin=2), {0: 0.0, 2: 0.0, 4: 0.5, 9: 1.0}),
    (optim.warmup(0.1, 5), {0: 0.0, 1: 0.02, 5: 0.1, 50: 0.1}),
    (optim.join_schedules([optim.constant_schedule(1.0), optim.linear_schedule(1.0, 0.0, 10),
                           optim.constant_schedule(5.0)], [3, 13]),
     {0: 1.0, 2: 1.0, 3: 1.0, 8: 0.5, 12: 0.1, 13: 5.0, 99: 5.0}),
    (optim.warmup_cosine_decay_schedule(0.0, 1.0, 4, 14, end_value=0.1),
     {0: 0.0, 2: 0.5, 4: 1.0, 9: 0.55, 14: 0.1, 40: 0.1}),
]


@pytest.mark.parametrize("index", range(len(SCHEDULES)))
def test_schedule_values(index):
    schedule, expected = SCHEDULES[index]
    for step, value in expected.items():
        for count in (step, jnp.asarray(np.int32(step))):
            got = schedule(count)
            assert np.asarray(got).dtype == np.float32
            assert float(got) == pytest.approx(value, rel=1e-5, abs=1e-7), (index, step)


def test_schedules_jit_on_traced_counts():
    schedule = optim.join_schedules(
        [optim.warmup(1.0, 4), optim.exponential_decay(1.0, 2, 0.5)], [4])
    jitted = fnad.jit(schedule)
    for step in range(10):
        count = jnp.asarray(np.int32(step))
        assert float(jitted(count)) == pytest.approx(float(schedule(step)), rel=1e-6)


def test_scale_by_schedule_uses_count_before_increment():
    opt = optim.sgd(optim.linear_schedule(1.0, 0.0, 4))
    g = np.ones(1, np.float32)
    state = opt.init(g)
    seen = []
    for _ in range(5):
        u, state = opt.update(g, state)
        seen.append(-float(u[0]))
    assert seen == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])


def test_bad_schedule_arguments():
    with pytest.raises(ValueError, match="transition_steps"):
        optim.exponential_decay(1.0, 0, 0.5)
    with pytest.raises(ValueError, match="decay_steps"):
        optim.cosine_decay_schedule(1.0, 0)
    with pytest.raises(ValueError, match="boundaries"):
        optim.join_schedules([optim.constant_schedule(1.0)], [3])


def test_numpy_scalar_hyperparameters_do_not_promote_params():
    params, grads = _params(), _grads()
    f64 = np.float64
    for opt in [optim.sgd(f64(0.1), momentum=f64(0.9)),
                optim.adamw(f64(1e-3), b1=f64(0.9), weight_decay=f64(1e-2)),
                optim.rmsprop(jnp.asarray(f64(0.01))),
                optim.chain(optim.clip_by_global_norm(f64(1.0)), optim.adagrad(f64(0.1)))]:
        updates, final, state = _run(opt, params, grads)
        assert all(u.dtype == np.float32 for u in tree_leaves(updates))
        assert all(np.asarray(x).dtype in (np.float32, np.int32) for x in tree_leaves(state))
