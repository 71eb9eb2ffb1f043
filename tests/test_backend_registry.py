"""A third backend, written in this file alone: values in host memory but owned by a
"numpy" platform, every primitive evaluated through its declared `impl`, no fusion and
no compilation (a jitted program is interpreted equation by equation). Registering it
is all it takes for eager operations, grad, vmap and jit on its arrays to run through
it; nothing outside this file knows it exists."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import backend
from fnad.array import Array, Device
from fnad.errors import DeviceError
from fnad.program import evaluate as evaluate_program
from fnad.staged import control
from fnad.staged.call import jit_call_p
from fnad.tree_util import tree_unflatten

NUMPY_DEVICE = Device("numpy")


class NumpyArray(Array):
    __slots__ = ()

    @property
    def device(self):
        return NUMPY_DEVICE

    def devices(self):
        return {NUMPY_DEVICE}


def _interpret(program):
    """A program "compiled" for this backend: run through bind, op by op."""
    return lambda *values: evaluate_program(program, list(values))


class NumpyBackend:
    platform = "numpy"
    array_type = NumpyArray

    def __init__(self):
        self.evaluated = []     # the names of the primitives this backend ran

    def devices(self):
        return [NUMPY_DEVICE]

    def put(self, x, device, committed):
        return NumpyArray(np.array(x))

    def kernel(self, prim):
        kernels = {
            jit_call_p: lambda *args, program: _interpret(program)(*args),
            control.cond_p: lambda index, *ops, branches:
                control.run_cond(index, ops, branches, _interpret),
            control.while_p: lambda *args, **p: control.run_while(list(args), **p,
                                                                  compiled=_interpret),
            control.scan_p: lambda *args, **p: control.run_scan(
                list(args), **p, compiled=_interpret, empty=np.empty),
        }
        return kernels.get(prim)

    def evaluate(self, prim, args, params):
        for a in args:
            if isinstance(a, Array) and type(a) is not NumpyArray \
                    and getattr(a, "_committed", False):
                raise backend.mixed_devices_error(prim.name, args)
        self.evaluated.append(prim.name)
        kernel = self.kernel(prim)
        if kernel is not None:      # programs: interpreted on this backend's arrays
            return kernel(*args, **params)
        values = [np.asarray(a) for a in args]
        out = prim.impl(*values, **params)
        if prim.multiple_results:
            return [NumpyArray(np.asarray(o)) for o in out]
        return NumpyArray(np.asarray(out))

    def compile(self, program):
        return _interpret(program)

    def executable(self, closed, out_tree, device, donated=()):
        run = self.compile(closed.program)

        def call(args):
            return tree_unflatten(out_tree, run(*closed.consts, *args))
        return call


@pytest.fixture
def numpy_backend():
    registered = backend.register(NumpyBackend())
    try:
        yield registered
    finally:
        backend.unregister("numpy")


def _mlp_step():
    def loss(params, x, y):
        h = fnp.tanh(x @ params["w1"] + params["b1"])
        return fnp.mean((h @ params["w2"] - y) ** 2)

    @fnad.jit
    def step(params, x, y):
        value, grads = fnad.value_and_grad(loss)(params, x, y)
        return value, fnad.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return step


def _data():
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((3, 8)), "b1": np.zeros(8),
              "w2": rng.standard_normal((8, 1))}
    return params, rng.standard_normal((16, 3)), rng.standard_normal((16, 1))


def test_the_new_platform_is_listed_and_placed_on(numpy_backend):
    assert fnad.devices("numpy") == [NUMPY_DEVICE]
    assert NUMPY_DEVICE in fnad.devices()
    x = fnad.device_put(np.arange(3.0), NUMPY_DEVICE)
    assert type(x) is NumpyArray and x.device == NUMPY_DEVICE


def test_eager_operations_run_through_the_registered_backend(numpy_backend):
    x = fnad.device_put(np.array([1.0, -2.0, 3.0]), NUMPY_DEVICE)
    y = fnp.exp(x) * 2.0 + fnp.ones(3)      # uncommitted host values follow x
    assert type(y) is NumpyArray
    np.testing.assert_allclose(np.asarray(y), np.exp([1.0, -2.0, 3.0]) * 2.0 + 1.0,
                               rtol=1e-15)
    assert "exp" in numpy_backend.evaluated and "add" in numpy_backend.evaluated


def test_a_jitted_training_step_runs_on_the_new_backend(numpy_backend):
    params, x, y = _data()
    step = _mlp_step()
    on_cpu = (fnad.device_put(params), fnad.device_put(x), fnad.device_put(y))
    elsewhere = fnad.device_put((params, x, y), NUMPY_DEVICE)
    for _ in range(3):
        loss_cpu, new_cpu = step(*on_cpu)
        loss_np, new_np = step(*elsewhere)
        on_cpu = (new_cpu,) + on_cpu[1:]
        elsewhere = (new_np,) + elsewhere[1:]
    assert type(loss_np) is NumpyArray
    assert all(type(p) is NumpyArray for p in fnad.tree_util.tree_leaves(new_np))
    np.testing.assert_allclose(float(loss_np), float(loss_cpu), rtol=1e-12)
    for a, b in zip(fnad.tree_util.tree_leaves(new_np), fnad.tree_util.tree_leaves(new_cpu)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)
    # The program was interpreted here, op by op: matmuls and the tanh derivative too.
    assert {"jit_call", "dot_general", "tanh", "mul"} <= set(numpy_backend.evaluated)


def test_jit_fast_path_calls_the_backends_executable(numpy_backend):
    f = fnad.jit(lambda a: fnp.sin(a) + 1.0)
    x = fnad.device_put(np.linspace(0, 1, 5), NUMPY_DEVICE)
    f(x)
    before = len(numpy_backend.evaluated)
    out = f(x)                              # the cached executable: interpreted again
    assert type(out) is NumpyArray
    assert numpy_backend.evaluated[before:] == ["sin", "add"]
    np.testing.assert_allclose(np.asarray(out), np.sin(np.linspace(0, 1, 5)) + 1.0,
                               rtol=1e-15)


def test_control_flow_and_vmap_on_the_new_backend(numpy_backend):
    x = fnad.device_put(np.array([0.5, 1.5, -1.0]), NUMPY_DEVICE)
    total = fnad.lax.fori_loop(0, 4, lambda i, c: c * 1.5, x)
    assert type(total) is NumpyArray
    np.testing.assert_allclose(np.asarray(total), np.array([0.5, 1.5, -1.0]) * 1.5 ** 4)
    g = fnad.vmap(fnad.grad(lambda a: a ** 3))(x)
    np.testing.assert_allclose(np.asarray(g), 3 * np.array([0.5, 1.5, -1.0]) ** 2)


def test_a_committed_cpu_array_beside_the_new_backend_is_an_error(numpy_backend):
    x = fnad.device_put(np.ones(3), NUMPY_DEVICE)
    y = fnad.device_put(np.ones(3), fnad.devices("cpu")[0])
    with pytest.raises(DeviceError, match="different devices"):
        x + y


def test_an_unregistered_platform_is_no_device():
    with pytest.raises(ValueError, match="unknown platform 'numpy'"):
        fnad.devices("numpy")
    with pytest.raises(DeviceError, match="not one of fnad.devices"):
        fnad.device_put(np.ones(2), NUMPY_DEVICE)


def test_a_platform_registers_once(numpy_backend):
    with pytest.raises(ValueError, match="registered already"):
        backend.register(NumpyBackend())
