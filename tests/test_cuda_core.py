"""The cuda backend's core: devices and placement, the kernels generated from the
primitives' declarations (elementwise, broadcasts, reductions) checked case by case
against the cpu backend over the primitive table, transforms composing on GPU
arrays, jit lowering to fused GPU kernels, and a jitted training step."""
import pickle

import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad.backends.cuda.array import CudaArray
from fnad.errors import DeviceError
from cuda_util import needs_cuda, gpu, to_gpu, host, check_primitive
from test_primitives import TABLE, setup

pytestmark = needs_cuda


# --------------------------------------------------------------------------- devices

def test_devices_and_placement():
    cpu, g = fnad.devices("cpu")[0], gpu()
    assert fnad.devices() == [cpu] + fnad.devices("cuda")
    assert g.platform == "cuda" and repr(g) == "CudaDevice(id=0)"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    xg = fnad.device_put(x, g)
    assert type(xg) is CudaArray and xg.device == g and xg.devices() == {g}
    assert xg.shape == (2, 3) and xg.dtype == np.float32 and xg.ndim == 2 and xg.size == 6
    np.testing.assert_array_equal(np.asarray(xg), x)       # copies to the host
    back = fnad.device_put(xg, cpu)
    assert type(back) is fnad.Array and back.device == cpu
    np.testing.assert_array_equal(np.asarray(back), x)
    assert float(xg[1, 2]) == 5.0 and xg[0].tolist() == [0.0, 1.0, 2.0]
    assert "device=CudaDevice(id=0)" in repr(xg)
    # pytrees; pickles hold host data
    tree = fnad.device_put({"a": x, "b": (1.0, np.int32(3))}, g)
    assert all(type(v) is CudaArray for v in fnad.tree_util.tree_leaves(tree))
    assert int(tree["b"][1]) == 3
    np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(xg))), x)
    assert fnad.block_until_ready(tree) is tree


@pytest.mark.parametrize("prefetch", [0, 2])
def test_batches_of_gpu_data_stay_on_the_gpu(prefetch):
    x = np.arange(10.0).reshape(5, 2)
    y = np.arange(5)
    seen = []
    for bx, by in fnad.data.batches((to_gpu(x), y), 2, key=3, prefetch=prefetch):
        assert type(by) is fnad.Array
        np.testing.assert_array_equal(host(bx), x[np.asarray(by)])
        seen += np.asarray(by).tolist()
    assert sorted(seen) == list(range(5))


def test_device_put_rejects_unknown_devices():
    with pytest.raises(DeviceError, match="not one of fnad.devices"):
        fnad.device_put(np.ones(2), fnad.array.Device("cuda", 7))
    with pytest.raises(ValueError, match="unknown platform"):
        fnad.devices("tpu")


def test_arrays_on_two_devices_do_not_mix():
    xg = to_gpu(np.ones(3, np.float32))
    committed = fnad.device_put(np.ones(3, np.float32), fnad.devices("cpu")[0])
    with pytest.raises(DeviceError, match=r"add: operands are on different devices "
                                          r"\(float32\[3\] on CudaDevice\(id=0\), "
                                          r"float32\[3\] on CpuDevice\(id=0\)\)"):
        xg + committed
    # Values made without a device follow the GPU operand, as in JAX.
    np.testing.assert_array_equal(host(xg + fnp.arange(3.0)), [1, 2, 3])
    np.testing.assert_array_equal(host(xg + fnad.device_put(np.ones(3, np.float32))), 2)
    np.testing.assert_array_equal(host(xg * 2), [2, 2, 2])


def test_jitted_calls_check_devices_on_their_fast_path_too():
    jf = fnad.jit(lambda a, b: a * b)
    a, b = to_gpu(np.ones(3)), to_gpu(np.full(3, 2.0))
    np.testing.assert_array_equal(host(jf(a, b)), 2.0)
    np.testing.assert_array_equal(host(jf(a, b)), 2.0)      # from the fast path
    # The same buffer presented as another GPU's (the simulator has one GPU).
    elsewhere = CudaArray(b._value, fnad.array.Device("cuda", 1))
    with pytest.raises(DeviceError, match="different devices"):
        jf(a, elsewhere)


def test_shape_errors_come_before_any_kernel():
    with pytest.raises(fnad.ShapeError, match=r"\(3,\) and \(4,\)"):
        to_gpu(np.ones(3)) + to_gpu(np.ones(4))


# --------------------------------------------------------------------------- the table

# complex numbers stay on the cpu (tests/test_complex.py checks the cuda backend's error)
COMPLEX = {"complex", "real", "imag", "conj"}
GENERATED = [name for name, entry in TABLE.items() if name not in COMPLEX
             if fnad.core.PRIMITIVES[name].scalar is not None
             or fnad.core.PRIMITIVES[name].index_map is not None
             or fnad.core.PRIMITIVES[name].reduction is not None]
CASES = [pytest.param(name, i, id=f"{name}-{case.label or i}")
         for name in GENERATED for i, case in enumerate(TABLE[name].cases)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,i", CASES)
def test_generated_kernels_match_the_cpu(name, i, dtype):
    prim, entry, case, args = setup(name, i, dtype)
    check_primitive(prim, *args, **case.params)


def test_generated_kernels_cover_the_elementwise_and_reduction_primitives():
    declared = {p.name for p in fnad.core.PRIMITIVES.values()
                if p.scalar is not None or p.reduction is not None}
    # the special functions' cuda kernels are checked against the cpu, bit for bit and
    # every one of them, by tests/test_scipy_special.py::test_cuda_kernels_match_cpu
    elementwise = {id(v) for v in vars(fnad.primitives.elementwise).values()}
    special = {v.name for v in vars(fnad.primitives.special).values()
               if isinstance(v, fnad.core.Primitive) and id(v) not in elementwise}
    covered = set(GENERATED) | COMPLEX | special
    assert declared <= covered, declared - covered


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float16, np.bool_])
def test_elementwise_in_other_dtypes(dtype):
    rng = np.random.default_rng(0)
    x = (rng.integers(0, 5, (3, 4)) if dtype != np.float16 else rng.random((3, 4))).astype(dtype)
    y = (rng.integers(1, 5, (4,))).astype(dtype)
    E = fnad.primitives.elementwise
    ops = [E.max_p, E.eq_p, E.select_p] + ([E.and_p] if np.dtype(dtype).kind in "biu"
                                           else [E.mul_p])
    if np.dtype(dtype).kind != "b":
        ops += [E.add_p, E.mul_p]
    for op in ops:
        args = (x > 1, x, y) if op is E.select_p else (x, y)
        check_primitive(op, *args)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")    # the simulator's numpy
def test_integer_arithmetic_wraps_like_numpy():
    x = np.array([250, 3], np.uint8)
    check_primitive(fnad.primitives.elementwise.add_p, x, np.array([10, 1], np.uint8))


def test_reductions_of_empty_and_zero_sized_operands():
    R = fnad.primitives.reduce
    check_primitive(R.reduce_sum_p, np.zeros((0, 3)), axes=(0,))
    check_primitive(R.reduce_sum_p, np.zeros((3, 0)), axes=(0,))
    with pytest.raises(fnad.ShapeError, match="empty axis"):
        R.reduce_max_p.bind(to_gpu(np.zeros((0, 3))), axes=(0,))


def test_reduction_larger_than_a_block():
    x = np.random.default_rng(1).standard_normal((3, 300))
    check_primitive(fnad.primitives.reduce.reduce_sum_p, x, axes=(1,))
    check_primitive(fnad.primitives.reduce.reduce_max_p, x, axes=(0, 1))


# --------------------------------------------------------------------------- transforms

def _loss(w, x):
    h = fnp.tanh(x * w[0] + w[1])
    return fnp.sum(h * h) / h.size + fnp.max(h)


def _both(fun, *args):
    """fun on cpu Arrays and on GPU arrays, the GPU results as numpy."""
    on_cpu = fun(*fnad.tree_util.tree_map(fnp.asarray, args))
    on_gpu = fun(*to_gpu(args))
    flat_c, flat_g = fnad.tree_util.tree_leaves(on_cpu), fnad.tree_util.tree_leaves(on_gpu)
    return [np.asarray(c) for c in flat_c], [host(g) for g in flat_g]


@pytest.mark.parametrize("transform", [
    lambda: fnad.grad(_loss),
    lambda: fnad.value_and_grad(_loss, argnums=(0, 1)),
    lambda: fnad.jit(fnad.grad(_loss)),
    lambda: fnad.vmap(_loss, in_axes=(None, 0)),
    lambda: fnad.jit(fnad.vmap(fnad.grad(_loss), in_axes=(None, 0))),
    lambda: lambda w, x: fnad.jvp(lambda w: _loss(w, x), (w,), (w * 0 + 1,)),
    lambda: fnad.jit(lambda w, x: fnad.grad(lambda w: fnad.grad(_loss)(w, x)[0])(w)),
], ids=["grad", "value_and_grad", "jit-grad", "vmap", "jit-vmap-grad", "jvp", "grad-grad"])
def test_transforms_on_gpu_arrays_give_the_cpu_results(transform):
    rng = np.random.default_rng(2)
    w = rng.standard_normal(2)
    x = rng.standard_normal((3, 4))
    expected, got = _both(transform(), w, x)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_jit_lowers_to_fused_gpu_kernels_and_caches_them():
    from fnad.backends.cuda.lowering import compiled

    def f(x, y):
        return fnp.sum(fnp.exp(x) * y + 1.0, axis=0) * 2.0
    jf = fnad.jit(f)
    x, y = np.ones((3, 4), np.float32), np.full(4, 2.0, np.float32)
    expected = np.asarray(jf(x, y))
    xg, yg = to_gpu(x), to_gpu(y)
    np.testing.assert_allclose(host(jf(xg, yg)), expected, rtol=1e-6)
    np.testing.assert_allclose(host(jf(xg, yg)), expected, rtol=1e-6)  # the fast path
    exe = compiled(jf.trace(xg, yg).program)
    # exp, mul, add in one kernel; the sum a tree reduction; the scaling a second kernel
    assert len(exe.kernel_sources) == 2 and "np.exp" in exe.kernel_sources[0]
    assert jf.trace_count == 1
    # Kernels live on disk beside the cpu ones, keyed by their source.
    import os
    from fnad.kernels.disk_cache import cache_dir
    kernels = [step[0].kernel for step in exe.steps if hasattr(step[0], "kernel")]
    assert len(kernels) == 2
    for kernel in kernels:      # (the simulator's kernels keep the function as .fn)
        fn = getattr(kernel, "py_func", None) or kernel.fn
        path = os.path.join(cache_dir(), fn.__module__ + ".py")
        assert os.path.exists(path) and "@cuda.jit(cache=True)" in open(path).read()


def test_control_flow_on_the_gpu():
    x = np.linspace(-1, 1, 6).reshape(2, 3)

    def loops(x):
        a = fnad.lax.fori_loop(0, 3, lambda i, c: c * 0.5 + 1.0, x)
        b = fnad.lax.while_loop(lambda c: fnp.sum(c) < 50.0, lambda c: c + 1.0, x)
        carry, ys = fnad.lax.scan(lambda c, r: (c + r, c * r), fnp.zeros(3, x.dtype), x)
        d = fnad.lax.cond(x[0, 0] > 0, lambda v: v + 1, lambda v: v - 1, x)
        # per-step outputs of rank 0 (a 0-d device array is written as a 1-slice)
        top, tops = fnad.lax.scan(lambda c, r: (c + fnp.max(r), fnp.max(r) * c), 0.5, x)
        return a, b, carry, ys, d, top, tops
    for transform in (lambda f: f, fnad.jit):
        expected, got = _both(transform(loops), x)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-12)
    expected, got = _both(fnad.grad(lambda x: fnp.sum(loops(x)[3])), x)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)


def test_a_jitted_training_step_matches_the_cpu():
    init, apply = fnad.nn.serial(fnad.nn.Dense(8), fnad.nn.Relu, fnad.nn.Dense(3))
    _, params = init(fnad.random.key(0), (-1, 5))
    opt = fnad.optim.chain(fnad.optim.clip_by_global_norm(1.0), fnad.optim.adam(1e-2))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.integers(0, 3, 6).astype(np.int32)

    @fnad.jit
    def update(params, state, x, y):
        loss, grads = fnad.value_and_grad(
            lambda p: fnad.nn.softmax_cross_entropy(apply(p, x), y))(params)
        updates, state = opt.update(grads, state, params)
        return fnad.optim.apply_updates(params, updates), state, loss

    def train(params, x, y):
        state = opt.init(params)
        losses = []
        for _ in range(3):
            params, state, loss = update(params, state, x, y)
            losses.append(loss)
        return params, losses
    expected, got = _both(train, params, x, y)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-6)
