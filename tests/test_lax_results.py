"""fnad.lax's functions give Arrays for numpy inputs, like every public function: the
ones declared beside their primitives also serve the primitives' own rules, where
host numpy values flow (fnad/lax/_results.py)."""
import numpy as np
import pytest

import fnad
from fnad import lax

X = np.arange(6.0).reshape(2, 3) - 2.5
SPD = np.array([[4.0, 1.0], [1.0, 3.0]])

CALLS = [
    ("reshape", lambda: lax.reshape(X, (3, 2)), lambda: X.reshape(3, 2)),
    ("transpose", lambda: lax.transpose(X, (1, 0)), lambda: X.T),
    ("rev", lambda: lax.rev(X, (1,)), lambda: X[:, ::-1]),
    ("slice", lambda: lax.slice(X, (0, 1), (2, 3)), lambda: X[:, 1:]),
    ("pad", lambda: lax.pad(X, 0.0, [(1, 0, 0), (0, 0, 0)]),
     lambda: np.pad(X, ((1, 0), (0, 0)))),
    ("concatenate", lambda: lax.concatenate([X, X], 0), lambda: np.concatenate([X, X])),
    ("reduce_sum", lambda: lax.reduce_sum(X, (0, 1)), lambda: X.sum()),
    ("cumsum", lambda: lax.cumsum(X, 1), lambda: np.cumsum(X, 1)),
    ("sort", lambda: lax.sort(X[0]), lambda: np.sort(X[0])),
    ("argsort", lambda: lax.argsort(-X[0]), lambda: np.argsort(-X[0])),
    ("dynamic_slice", lambda: lax.dynamic_slice(X, (1, 1), (1, 2)), lambda: X[1:, 1:]),
    ("linalg.cholesky", lambda: lax.linalg.cholesky(SPD), lambda: np.linalg.cholesky(SPD)),
    ("linalg.det", lambda: lax.linalg.det(SPD), lambda: np.linalg.det(SPD)),
    ("linalg.eigh", lambda: lax.linalg.eigh(SPD)[1], lambda: np.linalg.eigvalsh(SPD)),
]


@pytest.mark.parametrize("name,call,ref", CALLS, ids=[c[0] for c in CALLS])
def test_numpy_inputs_give_arrays(name, call, ref):
    out = call()
    assert isinstance(out, fnad.Array) and type(out) is not np.ndarray, type(out)
    np.testing.assert_allclose(np.asarray(out), ref(), rtol=1e-12)


def test_tuples_of_results_are_arrays_and_derivatives_still_flow():
    u, s, vh = lax.linalg.svd(X)
    assert all(isinstance(a, fnad.Array) for a in (u, s, vh))
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(X, compute_uv=False), rtol=1e-12)
    g = fnad.grad(lambda x: lax.reduce_sum(lax.reshape(x, (6,)) ** 2, (0,)))(X)
    np.testing.assert_allclose(np.asarray(g), 2 * X)
    assert lax.reshape.__name__ == "reshape" and lax.reshape.__doc__
