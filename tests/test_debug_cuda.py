"""Host callbacks on the GPU (numba's CUDA simulator unless FNAD_TEST_CUDA=gpu): the
operands are copied to the host for the function, pure_callback's results go back to
the operands' device, eagerly and from a program jit lowered for the GPU."""
import numpy as np

import fnad
from cuda_util import needs_cuda, host, to_gpu

pytestmark = needs_cuda


def test_debug_print_and_callback_of_gpu_values(capsys):
    x = to_gpu(np.array([1.0, 2.0, 3.0], np.float32))
    seen = []

    def f(x):
        y = x * 2.0
        fnad.debug.print("y={}", y)
        fnad.debug.callback(lambda v: seen.append(type(v)), y)
        return y + 1.0
    out = fnad.jit(f)(x)
    np.testing.assert_array_equal(host(out), [3.0, 5.0, 7.0])
    f(x)
    assert capsys.readouterr().out.splitlines() == ["y=[2. 4. 6.]"] * 2
    assert seen == [np.ndarray, np.ndarray]


def test_pure_callback_results_stay_on_the_gpu():
    x = to_gpu(np.array([0.5, 1.5], np.float32))

    def f(x):
        c = fnad.pure_callback(np.cos, fnad.ShapeDtypeStruct(x.shape, x.dtype), x)
        return c * 2.0
    for run in (f, fnad.jit(f)):
        np.testing.assert_allclose(host(run(x)), 2 * np.cos([0.5, 1.5]), rtol=1e-6)
