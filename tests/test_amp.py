"""fnad.amp: policies, autocast (dtypes in make_jaxpr, values and gradients against
float32, composition with grad/jit/vmap), loss scaling against torch.amp.GradScaler's
sequence, skipped non-finite steps, and 16-bit safetensors files."""
import json
import struct

import ml_dtypes
import numpy as np
import pytest

import fnad
import fnad.io
import fnad.numpy as fnp
from fnad import amp, optim
from fnad.errors import DTypeError
from fnad.tree_util import tree_leaves, tree_map

BF16, F16, F32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)

rng = np.random.default_rng(0)
W = (rng.standard_normal((6, 5)) * 0.4).astype(np.float32)
B = (rng.standard_normal(5) * 0.1).astype(np.float32)
X = rng.standard_normal((7, 6)).astype(np.float32)


def loss_fn(w, b, x):
    h = x @ w + b
    return fnp.mean(fnp.exp(fnp.tanh(h)))


def _dtypes_by_primitive(program):
    out = {}
    for e in getattr(program, "program", program).eqns:
        out.setdefault(e.prim.name, []).append(
            ([a.aval.dtype for a in e.inputs if hasattr(a, "aval")],
             [o.aval.dtype for o in e.outputs]))
    return out


# --------------------------------------------------------------------------- policy

def test_policy_casts_floats_only():
    policy = amp.get_policy("params=float32,compute=bfloat16,output=float32")
    assert policy == amp.Policy(F32, BF16, F32)
    tree = {"w": np.ones(2, np.float32), "n": np.arange(3), "c": np.ones(1, np.complex64)}
    low = policy.cast_to_compute(tree)
    assert low["w"].dtype == BF16 and low["n"].dtype == tree["n"].dtype
    assert low["c"].dtype == np.complex64
    assert policy.cast_to_param(low)["w"].dtype == F32
    assert amp.get_policy("half") == amp.Policy(F16, F16, F16)
    with pytest.raises(ValueError, match="unknown dtype 'float8'"):
        amp.get_policy("p=f32,c=float8,o=f32")
    with pytest.raises(ValueError, match="does not give output_dtype"):
        amp.get_policy("p=f32,c=bf16")


# --------------------------------------------------------------------------- autocast

@pytest.mark.parametrize("low", [BF16, F16], ids=str)
def test_autocast_dtypes_follow_each_primitives_rule(low):
    program = fnad.make_jaxpr(amp.autocast(loss_fn, low))(W, B, X)
    seen = _dtypes_by_primitive(program)
    # the matrix product runs in the low dtype ...
    assert seen["dot_general"] == [([low, low], [low])]
    # ... its result meets the float32 bias in float32 (the widest input) ...
    assert seen["add"] == [([F32, F32], [F32])]
    # ... exp and the sum stay float32 (their precision rule), tanh follows its input
    assert seen["exp"] == [([F32], [F32])] and seen["reduce_sum"][0][1] == [F32]
    # without autocast, no cast at all
    assert "convert_element_type" not in _dtypes_by_primitive(
        fnad.make_jaxpr(loss_fn)(W, B, X))
    # a float32 rule casts 16-bit inputs up: exp of a bfloat16 value is float32
    prog = fnad.make_jaxpr(amp.autocast(lambda v: fnp.exp(v) * v, low))(np.ones(3, low))
    assert _dtypes_by_primitive(prog)["exp"] == [([F32], [F32])]


def test_autocast_value_and_gradient_close_to_float32_in_every_composition():
    want_value = float(loss_fn(W, B, X))
    want = fnad.grad(loss_fn, argnums=(0, 1))(W, B, X)
    f = amp.autocast(loss_fn)
    tol = 4 * float(ml_dtypes.finfo(BF16).eps)
    assert abs(float(f(W, B, X)) - want_value) <= tol * abs(want_value)
    grads = [fnad.grad(f, argnums=(0, 1)), fnad.jit(fnad.grad(f, argnums=(0, 1)))]
    for g in grads:
        got = g(W, B, X)
        for a, b in zip(got, want):
            assert a.dtype == F32      # the cast's cotangent goes back to the param dtype
            scale = np.max(np.abs(np.asarray(b)))
            assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 4 * tol * scale
    # vmap over examples agrees with a loop (the batched product sums in another order
    # in float32, which may move a bfloat16 rounding by one ulp)
    per_example = fnad.vmap(f, in_axes=(None, None, 0))(W, B, X[:, None])
    loop = [float(f(W, B, X[i:i + 1])) for i in range(len(X))]
    assert np.allclose(np.asarray(per_example), loop, rtol=tol, atol=0)


def test_autocast_backward_runs_in_the_forward_dtype():
    """The cotangent of the bfloat16 matmul is bfloat16 too: the tape of the gradient
    holds a bfloat16 dot_general for each of the forward's."""
    program = fnad.make_jaxpr(fnad.grad(amp.autocast(loss_fn)))(W, B, X)
    dots = _dtypes_by_primitive(program)["dot_general"]
    assert len(dots) == 2 and all(ins == [BF16, BF16] and out == [BF16] for ins, out in dots)


def test_autocast_leaves_float64_and_integers_alone():
    f = amp.autocast(lambda a, n: (a @ a, n * 2))
    a, n = np.ones((2, 2)), np.arange(3)
    out_a, out_n = f(a, n)
    assert out_a.dtype == np.float64 and out_n.dtype == n.dtype
    with pytest.raises(DTypeError, match="float16, bfloat16 or float32"):
        amp.autocast(loss_fn, np.int32)


# --------------------------------------------------------------------------- loss scale

PATTERN = [1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1]


def _fnad_scales(pattern, interval):
    scale = amp.DynamicLossScale(growth_interval=interval)
    adjust = fnad.jit(lambda s, ok: s.adjust(ok))
    out = []
    for ok in pattern:
        scale = adjust(scale, np.bool_(ok))
        out.append(float(scale.loss_scale))
    return out


def test_dynamic_loss_scale_rule():
    # by hand: GradScaler's defaults, growth after `interval` finite steps in a row
    assert _fnad_scales(PATTERN, 3) == [2 ** 16, 2 ** 16, 2 ** 17, 2 ** 16, 2 ** 16, 2 ** 16,
                                        2 ** 17, 2 ** 17, 2 ** 16, 2 ** 15, 2 ** 15, 2 ** 15,
                                        2 ** 16, 2 ** 16]
    s = amp.DynamicLossScale()
    assert float(s.loss_scale) == 2 ** 16 and s.growth_interval == 2000
    # growth stops short of float32's overflow
    top = amp.DynamicLossScale(loss_scale=2.0 ** 127, growth_interval=1).adjust(True)
    assert float(top.loss_scale) == 2.0 ** 127
    with pytest.raises(ValueError, match="growth_factor"):
        amp.DynamicLossScale(growth_factor=0.5)


def test_dynamic_loss_scale_matches_torch_grad_scaler():
    torch = pytest.importorskip("torch")
    p = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", growth_interval=3)
    want = []
    for ok in PATTERN:
        opt.zero_grad()
        scaler.scale((p * p).sum()).backward()
        if not ok:
            p.grad.fill_(float("inf"))
        scaler.step(opt)
        scaler.update()
        want.append(scaler.get_scale())
    assert _fnad_scales(PATTERN, 3) == want


def test_scale_and_unscale():
    s = amp.DynamicLossScale(loss_scale=1024.0)
    # a float16 loss is scaled in float32 (2**16 times it would overflow float16)
    scaled = amp.DynamicLossScale().scale(fnp.asarray(2.0, F16))
    assert scaled.dtype == F32 and float(scaled) == 2.0 ** 17
    grads = {"a": np.full(3, 2048.0, F16), "b": np.full(2, 512.0, np.float32)}
    un = s.unscale(grads)
    assert un["a"].dtype == F16 and np.all(np.asarray(un["a"]) == 2)
    assert np.all(np.asarray(un["b"]) == 0.5)
    static = amp.StaticLossScale(8.0)
    assert float(static.scale(1.5)) == 12.0 and static.adjust(False) is static
    assert float(amp.NoOpLossScale().scale(3.0)) == 3.0


def test_all_finite_and_select_tree():
    assert bool(amp.all_finite({"a": np.ones(3), "b": [np.zeros(2, F16)]}))
    assert not bool(amp.all_finite({"a": np.ones(3), "b": [np.array([1, np.inf], F16)]}))
    assert not bool(fnad.jit(amp.all_finite)([np.array([np.nan], BF16)]))
    assert bool(amp.all_finite([np.zeros(0), np.arange(3)]))
    picked = amp.select_tree(np.bool_(False), {"x": np.ones(2)}, {"x": np.zeros(2)})
    assert np.all(np.asarray(picked["x"]) == 0)


# --------------------------------------------------------------------------- skipped steps

def _fp16_mlp_loss(params, x, y):
    h = fnp.maximum(x.astype(F16) @ params["w1"].astype(F16), 0)
    out = (h @ params["w2"].astype(F16)).astype(F32)
    return fnp.mean((out - y) ** 2)


def test_overflowing_float16_step_is_skipped_and_params_unchanged():
    r = np.random.default_rng(3)
    params = {"w1": (r.standard_normal((4, 8)) * 0.5).astype(np.float32),
              "w2": (r.standard_normal((8, 1)) * 0.5).astype(np.float32)}
    x = r.standard_normal((16, 4)).astype(np.float32) * 50
    y = np.zeros((16, 1), np.float32)
    opt = amp.apply_if_finite(optim.adam(1e-2))

    @fnad.jit
    def step(params, opt_state, scale, x, y):
        grads = fnad.grad(lambda p: scale.scale(_fp16_mlp_loss(p, x, y)))(params)
        grads = scale.unscale(grads)
        finite = amp.all_finite(grads)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, scale.adjust(finite), finite

    state = opt.init(params)
    scale = amp.DynamicLossScale()      # 2**16: the float16 backward pass overflows
    new_params, new_state, new_scale, finite = step(params, state, scale, x, y)
    assert not bool(finite) and float(new_scale.loss_scale) == 2 ** 15
    for a, b in zip(tree_leaves(new_params), tree_leaves(params)):
        assert np.array_equal(np.asarray(a), b)
    for a, b in zip(tree_leaves(new_state.inner_state), tree_leaves(state.inner_state)):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    assert int(new_state.notfinite_count) == 1
    # with a small enough scale the step is taken
    small = amp.DynamicLossScale(loss_scale=1.0)
    moved, state2, _, finite = step(params, state, small, x, y)
    assert bool(finite) and not np.array_equal(np.asarray(moved["w1"]), params["w1"])
    assert int(state2.notfinite_count) == 0


# --------------------------------------------------------------------------- files

def test_bfloat16_and_float16_safetensors_round_trip(tmp_path):
    tree = {"w": np.array([1.0, -2.5, 3e38, np.inf, -0.0], BF16),
            "h": np.array([1.5, 65504, -0.0, 6e-8], F16)}
    path = tmp_path / "t.safetensors"
    fnad.io.save(path, tree)
    back = fnad.io.load(path)
    for k in tree:
        assert np.asarray(back[k]).dtype == tree[k].dtype
        assert np.array_equal(np.asarray(back[k]).view(np.uint16), tree[k].view(np.uint16))
    header = json.loads(path.read_bytes()[8:8 + struct.unpack("<Q", path.read_bytes()[:8])[0]])
    assert {header["w"]["dtype"], header["h"]["dtype"]} == {"BF16", "F16"}


def _write_safetensors(path, tensors):
    """A file as the safetensors package writes one: header, then raw little-endian
    bytes (here from torch's own bfloat16/float16 bit patterns)."""
    header, blobs, offset = {}, [], 0
    for name, (code, shape, raw) in tensors.items():
        header[name] = {"dtype": code, "shape": list(shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def test_loads_bfloat16_written_by_torch(tmp_path):
    torch = pytest.importorskip("torch")
    values = [1.0, -2.5, 3.0e38, 1e-39, 0.1, float("inf")]
    t_bf16 = torch.tensor(values, dtype=torch.bfloat16)
    t_f16 = torch.tensor([1.5, 65504.0, 0.1], dtype=torch.float16)
    path = tmp_path / "torch.safetensors"
    _write_safetensors(path, {
        "bf": ("BF16", t_bf16.shape, t_bf16.view(torch.int16).numpy().astype("<i2").tobytes()),
        "hf": ("F16", t_f16.shape, t_f16.numpy().astype("<f2").tobytes())})
    loaded = fnad.io.load(path)
    assert np.array_equal(np.asarray(loaded["bf"]).astype(np.float32),
                          t_bf16.float().numpy())
    assert np.array_equal(np.asarray(loaded["hf"]).astype(np.float32), t_f16.float().numpy())
    # and torch reads fnad's bits back as the same numbers
    fnad.io.save(tmp_path / "back.safetensors", {"bf": loaded["bf"]})
    raw = fnad.io.load(tmp_path / "back.safetensors")["bf"]
    again = torch.from_numpy(np.asarray(raw).view(np.int16).copy()).view(torch.bfloat16)
    assert torch.equal(again, t_bf16)
