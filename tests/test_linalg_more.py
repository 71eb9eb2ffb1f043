"""The decompositions (svd, eigh, qr, lu) and what is built on them (pinv, lstsq,
norms, cond, matrix_rank, fnad.scipy.linalg, expm): values against numpy (scipy and
JAX when installed), derivatives against float64 central finite differences and
hand-derived formulas, in eager, jit and vmap; degenerate derivatives as JAX gives
them; and the errors."""
import math
import zlib

import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
import fnad.scipy.linalg as fsl
from fnad.errors import ShapeError, DTypeError, GradientError
from fnad.primitives import decompositions as D
from fnad.primitives import linalg as L
from fnad.primitives import nonsymmetric as N
from fnad.test_util import check_grads

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _data_of_its_own(request):
    """Each test draws the same data however the suite is filtered or ordered."""
    global rng
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))


def spread(*shape):
    """A matrix with well-separated singular values (and eigenvalues when symmetric
    is taken), so the derivatives of the factors are well conditioned."""
    m, n = shape[-2:]
    k = min(m, n)
    q1 = np.linalg.qr(rng.standard_normal(shape[:-2] + (m, m)))[0][..., :k]
    q2 = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, n)))[0][..., :k]
    s = np.linspace(3.0, 1.0, k)
    return (q1 * s) @ np.swapaxes(q2, -1, -2)


def symmetric(*shape):
    a = rng.standard_normal(shape)
    return a + np.swapaxes(a, -1, -2)


def reconstruct(u, s, vh):
    return (np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh)


# --------------------------------------------------------------------------- values

@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5), (2, 4, 3), (0, 3), (2, 0, 0)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_numpy(shape, full_matrices):
    a = rng.standard_normal(shape)
    u, s, vh = jnp.linalg.svd(a, full_matrices=full_matrices)
    nu, ns, nvh = np.linalg.svd(a, full_matrices=full_matrices)
    assert u.shape == nu.shape and vh.shape == nvh.shape
    np.testing.assert_allclose(s, ns, rtol=1e-12, atol=1e-14)
    k = min(shape[-2:])
    np.testing.assert_allclose(reconstruct(np.asarray(u)[..., :k], s, np.asarray(vh)[..., :k, :]),
                               a, atol=1e-12)
    np.testing.assert_allclose(jnp.linalg.svdvals(a), ns, rtol=1e-12, atol=1e-14)


def test_subset_by_index():
    a = rng.standard_normal((2, 5, 4))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    su, ss, svh = jnp.linalg.svd(a, full_matrices=False, subset_by_index=(1, 3))
    assert su.shape == (2, 5, 2) and svh.shape == (2, 2, 4)
    np.testing.assert_allclose(ss, s[:, 1:3], rtol=1e-12)
    np.testing.assert_allclose(reconstruct(su, ss, svh),
                               reconstruct(u[..., 1:3], s[:, 1:3], vh[:, 1:3]), atol=1e-12)
    sym = symmetric(2, 4, 4)
    np.testing.assert_allclose(jnp.linalg.svd(sym, compute_uv=False, hermitian=True,
                                              subset_by_index=(1, 2)),
                               np.linalg.svd(sym, compute_uv=False)[:, 1:2], rtol=1e-12)
    v, w = fnad.lax.linalg.eigh(sym, subset_by_index=(0, 2))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym)[:, :2], rtol=1e-12)
    check_grads(lambda x: fnad.lax.linalg.eigh(x, subset_by_index=(1, 3))[1], (sym[0],), 1)
    with pytest.raises(ValueError, match="full_matrices=False"):
        jnp.linalg.svd(a, subset_by_index=(0, 2))
    with pytest.raises(ValueError, match="0 <= start <= end <= 4"):
        jnp.linalg.svd(a, full_matrices=False, subset_by_index=(0, 9))


def test_hermitian_svd_matches_numpy():
    a = symmetric(2, 4, 4)
    u, s, vh = jnp.linalg.svd(a, hermitian=True)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(reconstruct(u, s, vh), a, atol=1e-12)
    np.testing.assert_allclose(jnp.linalg.svd(a, compute_uv=False, hermitian=True), s)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_one_triangle_and_matches_numpy(uplo):
    a = rng.standard_normal((2, 4, 4))     # not symmetric: only one triangle counts
    w, v = jnp.linalg.eigh(a, UPLO=uplo, symmetrize_input=False)
    nw, nv = np.linalg.eigh(a, UPLO=uplo)
    np.testing.assert_allclose(w, nw, rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(np.asarray(v) * nv, axis=-2)), 1, rtol=1e-10)
    np.testing.assert_allclose(jnp.linalg.eigvalsh(a, UPLO=uplo, symmetrize_input=False), nw,
                               rtol=1e-12)
    # symmetrized (JAX's default): the eigenvalues of (a + a^T) / 2
    np.testing.assert_allclose(jnp.linalg.eigh(a).eigenvalues,
                               np.linalg.eigvalsh((a + np.swapaxes(a, -1, -2)) / 2), rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_numpy(shape, mode):
    a = rng.standard_normal(shape)
    got = jnp.linalg.qr(a, mode=mode)
    want = np.linalg.qr(a, mode=mode)
    if mode == "r":
        np.testing.assert_allclose(np.abs(got), np.abs(want), rtol=1e-10, atol=1e-12)
        return
    q, r = got
    assert q.shape == want[0].shape and r.shape == want[1].shape
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
    np.testing.assert_allclose(np.abs(r), np.abs(want[1]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.triu(r), r)


def test_lu_by_hand_and_against_scipy():
    # Column 0's largest entry is in row 2 (swapped with row 0); elimination leaves
    # rows [5, 0] and [2.5, 2.5], so row 1 keeps the pivot (5) and multiplier 0.5 goes
    # below it: U = [[4, -2, 2], [0, 5, 0], [0, 0, 2.5]].
    a = np.array([[1., 2., 3.], [2., 4., 1.], [4., -2., 2.]])
    lu, piv, perm = fnad.lax.linalg.lu(jnp.asarray(a))
    np.testing.assert_array_equal(piv, [2, 1, 2])
    np.testing.assert_array_equal(perm, [2, 1, 0])
    np.testing.assert_allclose(lu, [[4, -2, 2], [0.5, 5, 0], [0.25, 0.5, 2.5]], rtol=1e-15)
    low = np.tril(np.asarray(lu), -1) + np.eye(3)
    np.testing.assert_allclose(low @ np.triu(lu), a[np.asarray(perm)], atol=1e-14)
    assert piv.dtype == np.int32 and perm.dtype == np.int32
    np.testing.assert_array_equal(fnad.lax.linalg.lu_pivots_to_permutation(piv, 3), perm)
    scipy_linalg = pytest.importorskip("scipy.linalg")
    b = rng.standard_normal((2, 5, 3))
    for x in (b, np.swapaxes(b, -1, -2)):
        factors, pivots = fsl.lu_factor(x)
        for i in range(2):
            want_lu, want_piv = scipy_linalg.lu_factor(x[i])
            np.testing.assert_allclose(factors[i], want_lu, rtol=1e-12)
            np.testing.assert_array_equal(pivots[i], want_piv)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
def test_scipy_lu_reconstructs(shape):
    a = rng.standard_normal(shape)
    p, low, up = fsl.lu(a)
    np.testing.assert_allclose(np.asarray(p) @ np.asarray(low) @ np.asarray(up), a, atol=1e-12)
    pl, up2 = fsl.lu(a, permute_l=True)
    np.testing.assert_allclose(np.asarray(pl) @ np.asarray(up2), a, atol=1e-12)
    assert np.all(np.abs(np.tril(low, -1)) <= 1)     # partial pivoting bounds L


def test_pinv_lstsq_rank_cond_norms_match_numpy():
    a = rng.standard_normal((2, 4, 3))
    np.testing.assert_allclose(jnp.linalg.pinv(a), np.linalg.pinv(a), rtol=1e-10)
    low_rank = a[0] @ np.diag([1., 1., 0.]) @ rng.standard_normal((3, 3))
    np.testing.assert_allclose(jnp.linalg.pinv(low_rank), np.linalg.pinv(low_rank),
                               atol=1e-10)
    assert jnp.linalg.pinv(np.zeros((2, 0, 4))).shape == (2, 4, 0)
    assert int(jnp.linalg.matrix_rank(low_rank)) == 2
    np.testing.assert_array_equal(jnp.linalg.matrix_rank(a), [3, 3])
    assert int(jnp.linalg.matrix_rank(low_rank, tol=10.0)) == np.linalg.matrix_rank(
        low_rank, tol=10.0)
    b = rng.standard_normal((4, 2))
    x, resid, rank, s = jnp.linalg.lstsq(a[0], b)
    nx, nresid, nrank, ns = np.linalg.lstsq(a[0], b)
    np.testing.assert_allclose(x, nx, rtol=1e-10)
    np.testing.assert_allclose(resid, nresid, rtol=1e-10)
    assert int(rank) == nrank
    np.testing.assert_allclose(s, ns, rtol=1e-12)
    x, resid, rank, _ = jnp.linalg.lstsq(low_rank, b[:, 0], numpy_resid=True)
    nx, nresid, nrank, _ = np.linalg.lstsq(low_rank, b[:, 0])
    np.testing.assert_allclose(x, nx, rtol=1e-8)
    assert resid.shape == nresid.shape == (0,) and int(rank) == nrank == 2
    sq = rng.standard_normal((3, 3))
    for ord in (2, -2, "nuc", "fro", 1, -np.inf):
        np.testing.assert_allclose(jnp.linalg.norm(a, ord, axis=(2, 1)),
                                   np.linalg.norm(a, ord, axis=(2, 1)), rtol=1e-12)
        np.testing.assert_allclose(jnp.linalg.cond(sq, ord), np.linalg.cond(sq, ord),
                                   rtol=1e-10)
    np.testing.assert_allclose(jnp.linalg.norm(a, 2, axis=(1, 2), keepdims=True),
                               np.linalg.norm(a, 2, axis=(1, 2), keepdims=True))
    assert math.isinf(float(jnp.linalg.cond(np.diag([1., 0.]))))


def test_jax_options():
    a = rng.standard_normal((3, 4, 4))
    by_qr, want = jnp.linalg.slogdet(a, method="qr"), np.linalg.slogdet(a)
    np.testing.assert_array_equal(by_qr.sign, want.sign)
    np.testing.assert_allclose(by_qr.logabsdet, want.logabsdet, rtol=1e-12)
    check_grads(lambda x: jnp.linalg.slogdet(x, method="qr").logabsdet, (a,), 1)
    with pytest.raises(ValueError, match="method"):
        jnp.linalg.slogdet(a, method="cholesky")
    sym = np.diag([3.0, -2.0, 0.0, 0.0])
    assert int(jnp.linalg.matrix_rank(sym, hermitian=True)) == 2
    ones = np.ones(3, np.float32)
    assert jnp.linalg.vecdot(ones, ones, preferred_element_type=np.float64).dtype == np.float64
    np.testing.assert_allclose(jnp.linalg.multi_dot([a[0], a[1], a[2]], precision="highest"),
                               a[0] @ a[1] @ a[2], rtol=1e-12)
    with pytest.raises(ValueError, match="reordering"):
        fnad.lax.linalg.schur(a[0], sort_eig_vals=True)
    with pytest.raises(ValueError, match="enable_eigvec_derivs"):
        fnad.lax.linalg.eig(a[0], enable_eigvec_derivs=True)
    with pytest.raises(ValueError, match="perturb_singular"):
        fnad.lax.linalg.tridiagonal_solve(a[0, 0], a[0, 1], a[0, 2], a[0], perturb_singular=True)


def test_complex_solves_and_determinants():
    # holomorphic: the real rules hold, transposed without conjugation
    def cplx(*shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    a, b, v = cplx(2, 3, 3) + 3 * np.eye(3), cplx(2, 3, 2), cplx(3)
    for got, want in ((jnp.linalg.solve(a, b), np.linalg.solve(a, b)),
                      (jnp.linalg.inv(a), np.linalg.inv(a)),
                      (jnp.linalg.det(a), np.linalg.det(a)),
                      (fsl.solve_triangular(a[0], v, lower=True), np.linalg.solve(np.tril(a[0]), v)),
                      (fnad.jit(jnp.linalg.solve)(a, b), np.linalg.solve(a, b)),
                      (fnad.vmap(jnp.linalg.det)(a), np.linalg.det(a))):
        assert got.dtype == np.complex128
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
    check_grads(jnp.linalg.solve, (a, b), 2)
    check_grads(jnp.linalg.det, (a,), 2)
    check_grads(lambda x, y: fsl.solve_triangular(x, y, lower=True, trans=1), (a[0], b[0]), 1)
    assert jnp.linalg.solve(a.astype(np.complex64), b.astype(np.complex64)).dtype == np.complex64
    # the factorizations that conjugate stay real, with a clear error
    sign, logabsdet = jnp.linalg.slogdet(a)        # not holomorphic: its own rule
    want = np.linalg.slogdet(a)
    assert sign.dtype == np.complex128 and logabsdet.dtype == np.float64
    np.testing.assert_allclose(sign, want.sign, rtol=1e-12)
    np.testing.assert_allclose(logabsdet, want.logabsdet, rtol=1e-12)
    check_grads(lambda x: tuple(jnp.linalg.slogdet(x)), (a,), 2)
    by_qr = jnp.linalg.slogdet(a, method="qr")
    np.testing.assert_allclose(by_qr.sign, want.sign, rtol=1e-10)
    np.testing.assert_allclose(by_qr.logabsdet, want.logabsdet, rtol=1e-10)
    with pytest.raises(DTypeError, match="float32 or float64"):
        fnad.lax.linalg.schur(a[0])
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def f(lib, x, y):
        return (lib.linalg.solve(x, y) * lib.linalg.det(x)[..., None, None]).real.sum()

    got = fnad.grad(lambda x, y: f(jnp, x, y), argnums=(0, 1))(a, b)
    want = jax.grad(lambda x, y: f(jax.numpy, x, y), argnums=(0, 1))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10)


def test_complex_hermitian_eigh():
    c = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    h = c + np.conj(np.swapaxes(c, -1, -2))
    w, v = jnp.linalg.eigh(h)
    assert w.dtype == np.float64 and v.dtype == np.complex128
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h), rtol=1e-12)
    vv = np.asarray(v)
    np.testing.assert_allclose((vv * np.asarray(w)[..., None, :])
                               @ np.conj(np.swapaxes(vv, -1, -2)), h, atol=1e-12)
    u, s, vh = jnp.linalg.svd(h, hermitian=True)
    np.testing.assert_allclose(reconstruct(u, s, vh), h, atol=1e-12)

    def phase_free(x, lower=True):
        # eigenvalues and the projector onto one eigenvector: free of LAPACK's phases
        v, w = D.eigh_p.bind(x, lower=lower)
        return w, v[..., :, 1:2] * jnp.conj(v[..., :, 1:2]).mT

    check_grads(phase_free, (h,), 2)
    for lower in (True, False):     # one triangle read, the diagonal's real part only
        check_grads(lambda x: phase_free(x, lower), (c,), 1)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def f(lib, x):
        w, v = lib.linalg.eigh(x)
        return (w * lib.arange(3.0)).sum() + lib.abs(v[..., 0, :]).sum()

    np.testing.assert_allclose(fnad.grad(lambda x: f(jnp, x))(h),
                               jax.grad(lambda x: f(jax.numpy, x))(h), rtol=1e-9, atol=1e-12)


def test_complex_cholesky_family():
    c = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    h = c @ np.conj(np.swapaxes(c, -1, -2)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    np.testing.assert_allclose(jnp.linalg.cholesky(h), np.linalg.cholesky(h), rtol=1e-12)
    np.testing.assert_allclose(jnp.linalg.cholesky(h, upper=True),
                               np.conj(np.swapaxes(np.linalg.cholesky(h), -1, -2)), rtol=1e-12)
    for lower in (True, False):
        f = np.asarray(fsl.cholesky(h[0], lower=lower))
        np.testing.assert_allclose(f @ np.conj(f.T) if lower else np.conj(f.T) @ f, h[0],
                                   atol=1e-12)
        np.testing.assert_allclose(fsl.cho_solve(fsl.cho_factor(h[0], lower=lower), b),
                                   np.linalg.solve(h[0], b), rtol=1e-10)
        tri = np.tril(c[0]) if lower else np.triu(c[0])
        for trans, op in ((0, tri), (1, tri.T), ("C", np.conj(tri.T))):
            np.testing.assert_allclose(fsl.solve_triangular(c[0], b, trans=trans, lower=lower),
                                       np.linalg.solve(op, b), rtol=1e-9)
    check_grads(jnp.linalg.cholesky, (h,), 2)
    # the primitive reads the lower triangle and its diagonal's real part only
    check_grads(L.cholesky_p.bind, (h + np.triu(c, 1) + 0.5j * np.eye(3),), 1)


def test_complex_lu_family():
    c = rng.standard_normal((2, 4, 3)) + 1j * rng.standard_normal((2, 4, 3))
    p, low, up = (np.asarray(x) for x in fsl.lu(c))
    np.testing.assert_allclose(p @ low @ up, c, atol=1e-12)
    # pivots chosen by |re| + |im| (LAPACK's size) bound the multipliers' moduli by sqrt 2
    assert (np.abs(low) <= np.sqrt(2) + 1e-12).all()
    check_grads(lambda x: fnad.lax.linalg.lu(x)[0], (c,), 2)        # holomorphic
    a, b = c[0, :3], rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    factors = fsl.lu_factor(a)
    for trans, op in ((0, a), (1, a.T), (2, np.conj(a.T))):
        np.testing.assert_allclose(fsl.lu_solve(factors, b, trans=trans), np.linalg.solve(op, b),
                                   rtol=1e-10)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4), (2, 4, 2)])
def test_complex_qr(shape):
    c = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    q, r = (np.asarray(x) for x in jnp.linalg.qr(c))
    np.testing.assert_allclose(q @ r, c, atol=1e-12)
    np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(c)[1]), atol=1e-12)
    np.testing.assert_allclose(np.diagonal(r, 0, -2, -1).imag, 0, atol=1e-14)   # LAPACK's
    check_grads(lambda x: tuple(jnp.linalg.qr(x)), (c,), 2)
    check_grads(lambda x: jnp.linalg.qr(x, mode="complete")[1], (c,), 1, modes="rev")


def _complex_spread(*shape):
    """A complex matrix with singular values 3 ... 1 (well separated)."""
    m, n = shape[-2:]
    k = min(m, n)

    def unitary(r):
        x = rng.standard_normal(shape[:-2] + (r, r)) + 1j * rng.standard_normal(shape[:-2] + (r, r))
        return np.linalg.qr(x)[0][..., :k]

    return (unitary(m) * np.linspace(3.0, 1.0, k)) @ np.conj(np.swapaxes(unitary(n), -1, -2))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 4, 2)])
def test_complex_svd(shape):
    a = _complex_spread(*shape)
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    assert s.dtype == np.float64 and u.dtype == vh.dtype == np.complex128
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(reconstruct(u, s, vh), a, atol=1e-12)

    def phase_free(x):
        u, s, vh = jnp.linalg.svd(x, full_matrices=False)
        return s, u @ vh, (u * s[..., None, :]) @ jnp.conj(u).mT

    check_grads(phase_free, (a,), 2, eps=1e-5)
    np.testing.assert_allclose(jnp.linalg.pinv(a), np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    check_grads(jnp.linalg.pinv, (a,), 1)
    if a.ndim == 2:
        b = rng.standard_normal(shape[0]) + 1j * rng.standard_normal(shape[0])
        x, resid, rank, _ = jnp.linalg.lstsq(a, b)
        want = np.linalg.lstsq(a, b)
        np.testing.assert_allclose(x, want[0], rtol=1e-10, atol=1e-12)
        assert resid.dtype == np.float64 and int(rank) == want[2]
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def f(lib, x):
        u, s, vh = lib.linalg.svd(x, full_matrices=False)
        return (lib.abs(u) ** 3).sum() + (lib.abs(vh) ** 3).sum() + s.sum()

    np.testing.assert_allclose(fnad.grad(lambda x: f(jnp, x))(a),
                               jax.grad(lambda x: f(jax.numpy, x))(a), rtol=1e-9, atol=1e-12)


def test_complex_tridiagonal_solve_and_expm():
    def cplx(*shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    dl, d, du, b = cplx(5), cplx(5), cplx(5), cplx(5, 2)
    np.testing.assert_allclose(fnad.lax.linalg.tridiagonal_solve(dl, d, du, b),
                               np.linalg.solve(_tridiagonal(dl, d, du), b), rtol=1e-10)
    check_grads(fnad.lax.linalg.tridiagonal_solve, (dl * 0.3, d + 3, du * 0.3, b), 2)
    a = cplx(3, 3)
    # exp(A) exp(-A) = I, and exp of a diagonal is the entries' exp
    np.testing.assert_allclose(np.asarray(fsl.expm(a)) @ np.asarray(fsl.expm(-a)), np.eye(3),
                               atol=1e-12)
    np.testing.assert_allclose(fsl.expm(np.diag(a[0])), np.diag(np.exp(a[0])), rtol=1e-13)
    assert fsl.expm(a.astype(np.complex64)).dtype == np.complex64
    check_grads(fsl.expm, (a,), 1)


def test_vector_diagonal_and_tensor_helpers_match_numpy():
    x1, x2 = rng.standard_normal((2, 3)), rng.standard_normal(3)
    np.testing.assert_allclose(jnp.linalg.cross(x1, x2), np.linalg.cross(x1, x2))
    y1 = rng.standard_normal((3, 2))
    np.testing.assert_allclose(jnp.linalg.cross(y1, y1[:, ::-1], axis=0),
                               np.linalg.cross(y1, y1[:, ::-1], axis=0))
    np.testing.assert_allclose(jnp.linalg.vecdot(x1, x2), np.linalg.vecdot(x1, x2))
    t = rng.standard_normal((2, 3, 4))
    for offset in (-1, 0, 2):
        np.testing.assert_allclose(jnp.linalg.diagonal(t, offset=offset),
                                   np.linalg.diagonal(t, offset=offset))
        np.testing.assert_allclose(jnp.linalg.trace(t, offset=offset),
                                   np.linalg.trace(t, offset=offset))
    big = rng.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(jnp.linalg.tensorinv(big, ind=2), np.linalg.tensorinv(big, ind=2),
                               rtol=1e-9)
    a, b = rng.standard_normal((2, 3, 2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(jnp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b),
                               rtol=1e-9)
    a = rng.standard_normal((2, 6, 3))
    np.testing.assert_allclose(jnp.linalg.tensorsolve(a, b.ravel(), axes=(0,)),
                               np.linalg.tensorsolve(a, b.ravel(), axes=(0,)), rtol=1e-9)


def test_scipy_solvers_by_definition():
    a = rng.standard_normal((2, 4, 4))
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    b, v = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4))
    for lower in (True, False):
        c = np.asarray(fsl.cholesky(spd, lower=lower))
        tri = np.tril if lower else np.triu
        np.testing.assert_allclose(c, tri(c))
        np.testing.assert_allclose(c @ np.swapaxes(c, -1, -2) if lower
                                   else np.swapaxes(c, -1, -2) @ c, spd, atol=1e-12)
        np.testing.assert_allclose(fsl.cho_solve(fsl.cho_factor(spd, lower=lower), b),
                                   np.linalg.solve(spd, b), rtol=1e-10)
        for trans, unit in ((0, False), ("T", True), (2, False)):
            t = tri(a) if not unit else tri(a, -1 if lower else 1) + np.eye(4)
            op = np.swapaxes(t, -1, -2) if trans else t
            np.testing.assert_allclose(
                fsl.solve_triangular(a, v, trans=trans, lower=lower, unit_diagonal=unit),
                np.linalg.solve(op, v[..., None])[..., 0], rtol=1e-9)
    lu_piv = fsl.lu_factor(a)
    for trans in (0, 1):
        op = np.swapaxes(a, -1, -2) if trans else a
        np.testing.assert_allclose(fsl.lu_solve(lu_piv, b, trans=trans), np.linalg.solve(op, b),
                                   rtol=1e-9)
    np.testing.assert_allclose(fsl.solve(spd, v, assume_a="pos"),
                               np.linalg.solve(spd, v[..., None])[..., 0], rtol=1e-10)
    np.testing.assert_allclose(fsl.block_diag(np.ones((2, 2)), 3.0, np.arange(2.)),
                               [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 3, 0, 0],
                                [0, 0, 0, 0, 1]])


def _expm_reference(a):
    """A Taylor series of a / 2^s, squared s times, summed in float64 until it stops
    changing: slow, but independent of the Pade code under test."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(0).max(), 1e-300) / 0.5))))
    x = a / 2.0 ** s
    term, out = np.eye(len(a)), np.eye(len(a))
    for k in range(1, 40):
        term = term @ x / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


@pytest.mark.parametrize("scale", [0.0, 0.05, 1.0, 30.0])
def test_expm_matches_a_taylor_series(scale):
    a = rng.standard_normal((4, 4)) * scale
    want = _expm_reference(a)
    np.testing.assert_allclose(fsl.expm(a), want, rtol=1e-12 * max(1, scale), atol=1e-14)
    np.testing.assert_allclose(fsl.expm(a.astype(np.float32)), want, rtol=2e-5 * max(1, scale))
    # commuting blocks: exp of a diagonal is exp of its entries
    d = np.diag([1.0, -2.0, 0.5])
    np.testing.assert_allclose(fsl.expm(d), np.diag(np.exp([1.0, -2.0, 0.5])), rtol=1e-14)


def test_expm_gives_nan_beyond_max_squarings():
    big = np.eye(2) * 1e6
    assert np.isnan(np.asarray(fsl.expm(big, max_squarings=4))).all()


def test_eig_values_and_vectors():
    a = rng.standard_normal((2, 4, 4))
    w, v = jnp.linalg.eig(a)
    nw, nv = np.linalg.eig(a)
    assert w.dtype == v.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(w), nw, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(v), nv, rtol=1e-12, atol=1e-14)
    w, vl, vr = fnad.lax.linalg.eig(a)
    w, vl, vr = np.asarray(w), np.asarray(vl), np.asarray(vr)
    # by definition: A vr = vr diag(w), vl^H A = diag(w) vl^H, unit columns
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], atol=1e-12)
    vlh = np.conj(np.swapaxes(vl, -1, -2))
    np.testing.assert_allclose(vlh @ a, w[..., :, None] * vlh, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1, rtol=1e-12)
    c = a[0] + 1j * a[1]
    np.testing.assert_allclose(np.asarray(jnp.linalg.eigvals(c)), np.linalg.eigvals(c),
                               rtol=1e-12)
    f32 = jnp.linalg.eigvals(a.astype(np.float32))
    assert f32.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(f32), nw, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(fnad.jit(jnp.linalg.eigvals)(a)), nw, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnad.vmap(jnp.linalg.eigvals)(a)), nw, rtol=1e-12)
    with pytest.raises(GradientError, match="eig"):
        fnad.grad(lambda x: jnp.linalg.eigvals(x).real.sum())(a[0])
    with pytest.raises(ShapeError, match="square"):
        jnp.linalg.eigvals(np.ones((2, 3)))


def test_special_matrices_by_definition():
    c, r = rng.standard_normal(4), rng.standard_normal(3)
    t = np.asarray(fsl.toeplitz(c, r))
    assert t.shape == (4, 3) and np.allclose(t[:, 0], c) and np.allclose(t[0, 1:], r[1:])
    assert np.allclose(t[1:, 1:], t[:-1, :-1])
    h = np.asarray(fsl.hankel(c, r))
    assert np.allclose(h[:, 0], c) and np.allclose(h[-1], [c[-1], *r[1:]])
    assert np.allclose(h[1:, :-1], h[:-1, 1:])
    circ = np.asarray(fsl.circulant(c))
    np.testing.assert_allclose(circ @ r[:1].repeat(4), c.sum() * r[0] * np.ones(4))
    np.testing.assert_allclose(circ[:, 0], c)
    poly = np.array([2.0, -3.0, 0.5, 1.0, 4.0])
    roots = np.sort_complex(np.roots(poly))
    for build in (fsl.companion, fsl.fiedler_companion):
        np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(np.asarray(build(poly)))),
                                   roots, rtol=1e-9)
    np.testing.assert_allclose(fsl.fiedler(c), np.abs(c[:, None] - c[None, :]))
    np.testing.assert_allclose(fsl.leslie(c, r), np.vstack([c, np.eye(3, 4) * r[:, None]]))
    for m, n in ((3, 5), (6, 3), (2, 5), (5, 2)):
        a, v = rng.standard_normal(m), rng.standard_normal(n)
        for mode in ("full", "same", "valid"):
            np.testing.assert_allclose(np.asarray(fsl.convolution_matrix(a, n, mode)) @ v,
                                       np.convolve(a, v, mode), atol=1e-12)
    np.testing.assert_allclose(np.asarray(fsl.dft(6, dtype=np.complex128)),
                               np.fft.fft(np.eye(6)), atol=1e-12)
    had = np.asarray(fsl.hadamard(8))
    np.testing.assert_array_equal(had @ had.T, 8 * np.eye(8))
    helm = np.asarray(fsl.helmert(5, full=True), np.float64)
    np.testing.assert_allclose(helm @ helm.T, np.eye(5), atol=1e-6)
    np.testing.assert_allclose(np.asarray(fsl.hilbert(5), np.float64)
                               @ np.asarray(fsl.invhilbert(5), np.float64), np.eye(5),
                               atol=1e-2)
    for kind in ("symmetric", "lower", "upper"):
        np.testing.assert_array_equal(np.asarray(fsl.pascal(6, kind))
                                      @ np.asarray(fsl.invpascal(6, kind)), np.eye(6))
    np.testing.assert_array_equal(fsl.pascal(4), [[1, 1, 1, 1], [1, 2, 3, 4], [1, 3, 6, 10],
                                                 [1, 4, 10, 20]])
    # built from arrays: differentiable, and mapped over leading axes
    check_grads(lambda x, y: fsl.toeplitz(x, y), (c, r), 1)
    check_grads(fsl.fiedler_companion, (poly,), 1)
    batch = np.stack([c, 2 * c])
    np.testing.assert_allclose(fsl.circulant(batch)[1], fsl.circulant(2 * c))
    np.testing.assert_allclose(fnad.vmap(fsl.toeplitz)(batch)[1], fsl.toeplitz(2 * c))


def test_special_matrices_match_scipy():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    c, r = rng.standard_normal(5), rng.standard_normal(4)
    pairs = [(fsl.toeplitz(c, r), scipy_linalg.toeplitz(c, r)),
             (fsl.toeplitz(c), scipy_linalg.toeplitz(c)),
             (fsl.hankel(c, r), scipy_linalg.hankel(c, r)),
             (fsl.hankel(c), scipy_linalg.hankel(c)),
             (fsl.circulant(c), scipy_linalg.circulant(c)),
             (fsl.companion(c), scipy_linalg.companion(c)),
             (fsl.leslie(c, r), scipy_linalg.leslie(c, r)),
             (fsl.helmert(5), scipy_linalg.helmert(5)),
             (fsl.invhilbert(4), scipy_linalg.invhilbert(4))]
    pairs += [(fsl.fiedler_companion(c[:n]), scipy_linalg.fiedler_companion(c[:n]))
              for n in range(2, 6)]
    pairs += [(fsl.dft(5, s), scipy_linalg.dft(5, s)) for s in (None, "sqrtn", "n")]
    for got, want in pairs:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7)


def test_matrix_equations_by_definition():
    a, e = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    value, frechet = fsl.expm_frechet(a, e)
    np.testing.assert_allclose(value, fsl.expm(a), rtol=1e-12)
    h = 1e-5
    central = (np.asarray(fsl.expm(a + h * e)) - np.asarray(fsl.expm(a - h * e))) / (2 * h)
    np.testing.assert_allclose(frechet, central, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(fsl.expm_frechet(a, e, compute_expm=False), frechet)
    t = rng.standard_normal((5, 3))
    for side, x in (("right", t), ("left", t.T)):
        u, p = (np.asarray(v) for v in fsl.polar(x, side))
        np.testing.assert_allclose(u @ p if side == "right" else p @ u, x, atol=1e-12)
        np.testing.assert_allclose(p, p.T, atol=1e-12)
        assert np.linalg.eigvalsh(p).min() > -1e-12
        gram = u.T @ u if side == "right" else u @ u.T
        np.testing.assert_allclose(gram, np.eye(3), atol=1e-12)
    b, c = rng.standard_normal((2, 2)), rng.standard_normal((3, 2))
    x = np.asarray(fsl.solve_sylvester(a, b, c))
    np.testing.assert_allclose(a @ x + x @ b, c, atol=1e-11)
    # spectra of A and -B kept apart, so the system is well conditioned
    check_grads(lambda p, q, r: fsl.solve_sylvester(p, q, r),
                (a + 3 * np.eye(3), b + 3 * np.eye(2), c), 1)
    m = rng.standard_normal((2, 5))
    q, r = np.linalg.qr(t)
    cq, r_ = fsl.qr_multiply(t, m)
    np.testing.assert_allclose(np.abs(cq), np.abs(m @ q), atol=1e-12)
    np.testing.assert_allclose(np.asarray(cq) @ np.asarray(r_), m @ t, atol=1e-12)
    d, off = rng.standard_normal(5), rng.standard_normal(4)
    full = np.diag(d) + np.diag(off, 1) + np.diag(off, -1)
    w, v = fsl.eigh_tridiagonal(d, off)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(full), rtol=1e-12)
    np.testing.assert_allclose(full @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-12)
    np.testing.assert_allclose(
        fsl.eigh_tridiagonal(d, off, eigvals_only=True, select="i", select_range=(1, 2)),
        np.linalg.eigvalsh(full)[1:3], rtol=1e-12)


def _spectrum(w):
    """Eigenvalues in an order rounding cannot change (conjugate pairs' real parts
    differ in the last bits)."""
    w = np.asarray(w)
    return np.sort_complex(np.round(w.real, 7) + 1j * np.round(w.imag, 7))


def _quasi_triangular(t):
    sub = np.diagonal(t, -1, -2, -1)
    return (np.allclose(np.tril(t, -2), 0)
            and (((sub[..., :-1] == 0) | (sub[..., 1:] == 0)).all()))


@pytest.mark.parametrize("a", [
    rng.standard_normal((3, 6, 6)),
    rng.standard_normal((1, 20, 20)),
    np.eye(5)[[1, 2, 3, 4, 0]],                     # a cycle: every shift is exceptional
    np.triu(rng.standard_normal((4, 4))),
    np.zeros((3, 3)),
    np.array([[0., 1.], [-1., 0.]]),
    np.ones((4, 4))], ids=["batch", "20x20", "cycle", "triangular", "zero", "rotation",
                           "rank one"])
def test_schur_hessenberg_sqrtm_by_definition(a):
    eye = np.eye(a.shape[-1])
    h, q = (np.asarray(x) for x in fsl.hessenberg(a, calc_q=True))
    np.testing.assert_allclose(q @ h @ np.swapaxes(q, -1, -2), a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(eye, a.shape),
                               atol=1e-12)
    np.testing.assert_array_equal(np.tril(h, -2), 0)
    t, z = (np.asarray(x) for x in fsl.schur(a))
    np.testing.assert_allclose(z @ t @ np.swapaxes(z, -1, -2), a, atol=1e-11)
    np.testing.assert_allclose(np.swapaxes(z, -1, -2) @ z, np.broadcast_to(eye, a.shape),
                               atol=1e-12)
    assert _quasi_triangular(t)
    want = _spectrum(np.linalg.eigvals(a))
    np.testing.assert_allclose(_spectrum(np.linalg.eigvals(t)), want, atol=1e-6)
    ct, cz = (np.asarray(x) for x in fsl.schur(a, output="complex"))
    assert ct.dtype == cz.dtype == np.complex128
    np.testing.assert_allclose(cz @ ct @ np.conj(np.swapaxes(cz, -1, -2)), a, atol=1e-11)
    np.testing.assert_array_equal(np.tril(ct, -1), 0)
    np.testing.assert_allclose(_spectrum(np.diagonal(ct, 0, -2, -1)), want, atol=1e-6)
    rt, rz = fsl.rsf2csf(t, z)
    np.testing.assert_allclose(np.asarray(rt), ct, atol=1e-12)
    if a.shape == (4, 4) and not a.any():
        return
    root = np.asarray(fsl.sqrtm(a @ np.swapaxes(a, -1, -2) + eye))     # positive definite
    spd = a @ np.swapaxes(a, -1, -2) + eye
    np.testing.assert_allclose(root @ root, spd, atol=1e-9)
    np.testing.assert_allclose(root.imag, 0, atol=1e-9)
    w, v = np.linalg.eigh(spd)
    np.testing.assert_allclose(root.real, (v * np.sqrt(w)[..., None, :])
                               @ np.swapaxes(v, -1, -2), atol=1e-9)


def test_sqrtm_of_a_general_matrix():
    a = rng.standard_normal((2, 4, 4))
    root = np.asarray(fsl.sqrtm(a))
    assert root.dtype == np.complex128
    np.testing.assert_allclose(root @ root, a, atol=1e-10)
    # principal: eigenvalues in the right half plane
    assert (np.linalg.eigvals(root).real >= -1e-12).all()
    np.testing.assert_allclose(fsl.sqrtm(np.zeros((2, 2))), 0)
    rot = np.array([[0., -1.], [1., 0.]])            # 90 degrees: its root turns 45
    np.testing.assert_allclose(fsl.sqrtm(rot), [[0.5 ** 0.5, -0.5 ** 0.5],
                                                [0.5 ** 0.5, 0.5 ** 0.5]], atol=1e-12)
    assert fsl.sqrtm(a.astype(np.float32)).dtype == np.complex64
    np.testing.assert_allclose(np.asarray(fnad.jit(fsl.sqrtm)(a)), root, atol=1e-12)
    np.testing.assert_allclose(np.asarray(fnad.vmap(fsl.sqrtm)(a)), root, atol=1e-12)
    with pytest.raises(GradientError, match="sqrtm"):
        fnad.grad(lambda x: fsl.sqrtm(x).real.sum())(a[0])
    with pytest.raises(GradientError, match="schur"):
        fnad.grad(lambda x: fsl.schur(x)[0].sum())(a[0])
    with pytest.raises(DTypeError, match="float32 or float64"):
        N.schur_p.bind(a.astype(np.complex128), output="real")
    scipy_linalg = pytest.importorskip("scipy.linalg")
    np.testing.assert_allclose(root[0], scipy_linalg.sqrtm(a[0]), atol=1e-10)
    np.testing.assert_allclose(fsl.hessenberg(a[0]), scipy_linalg.hessenberg(a[0]),
                               atol=1e-12)


def test_funm_by_its_functions():
    a = rng.standard_normal((4, 4)) * 0.5
    np.testing.assert_allclose(np.asarray(fsl.funm(a, jnp.exp)), fsl.expm(a), atol=1e-12)
    s, err = fsl.funm(a, jnp.sin, disp=False)
    c = np.asarray(fsl.funm(a, jnp.cos))
    s = np.asarray(s)
    np.testing.assert_allclose(s @ s + c @ c, np.eye(4), atol=1e-11)   # sin^2 + cos^2 = 1
    assert 0 < float(err) < 1e-10
    root = np.asarray(fsl.funm(a @ a.T + np.eye(4), jnp.sqrt))
    np.testing.assert_allclose(root @ root, a @ a.T + np.eye(4), atol=1e-11)
    np.testing.assert_allclose(np.asarray(fsl.funm(np.eye(3), jnp.exp)), np.e * np.eye(3))
    # a Jordan block: Parlett's recurrence cannot tell, and says so
    _, err = fsl.funm(np.array([[1., 1.], [0., 1.]]), jnp.exp, disp=False)
    assert float(err) == 1
    np.testing.assert_allclose(np.asarray(fnad.jit(lambda x: fsl.funm(x, jnp.exp))(a)),
                               fsl.expm(a), atol=1e-12)


# --------------------------------------------------------------------------- derivatives

def svd_invariants(x):
    """Functions of the SVD free of its sign choices."""
    u, s, vh = jnp.linalg.svd(x, full_matrices=False)
    return s, u @ vh, (u * s[..., None, :]) @ u.mT


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 3, 2)])
def test_svd_derivatives(shape):
    a = spread(*shape)
    check_grads(svd_invariants, (a,), 2, eps=1e-5)
    # the factors themselves: LAPACK's signs are locally constant at a generic point
    check_grads(lambda x: D.svd_p.bind(x, full_matrices=False, compute_uv=True), (a,), 1,
                eps=1e-5)
    check_grads(jnp.linalg.svdvals, (a,), 2)


def test_eigh_derivatives():
    a = symmetric(2, 3, 3)
    check_grads(lambda x: tuple(jnp.linalg.eigh(x)), (a,), 2)
    # the primitive reads one triangle: its derivative ignores the other
    check_grads(lambda x: D.eigh_p.bind(x, lower=False), (rng.standard_normal((3, 3)),), 1)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 3, 2)])
def test_qr_derivatives(shape):
    a = spread(*shape)
    check_grads(lambda x: tuple(jnp.linalg.qr(x)), (a,), 2)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_lu_derivatives(shape):
    a = rng.standard_normal(shape) + np.eye(*shape) * 3
    check_grads(lambda x: fnad.lax.linalg.lu(x)[0], (a,), 2)
    check_grads(lambda x: fsl.lu(x)[1:], (a,), 1)


def test_full_factors_differentiate_when_only_the_values_are_used():
    # JAX refuses these; the extra columns carry no cotangent here, so the rule for the
    # thin factors applies exactly.
    a = spread(4, 2)
    check_grads(lambda x: jnp.linalg.svd(x)[1], (a,), 2, modes="rev")
    check_grads(lambda x: jnp.linalg.qr(x, mode="complete")[1], (a,), 2, modes="rev")
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(fnad.grad(lambda x: jnp.linalg.svd(x)[1].sum())(a), u @ vh,
                               atol=1e-12)


def test_hand_derived_gradients():
    # d(lambda_i)/dA = v_i v_i^T for a symmetric A with distinct eigenvalues.
    a = symmetric(4, 4)
    w, v = np.linalg.eigh(a)
    g = fnad.grad(lambda x: jnp.linalg.eigvalsh(x)[2])(a)
    np.testing.assert_allclose(g, np.outer(v[:, 2], v[:, 2]), atol=1e-12)
    # d(s_i)/dA = u_i v_i^T; the nuclear norm's gradient is U V^T.
    b = spread(4, 3)
    u, s, vh = np.linalg.svd(b, full_matrices=False)
    np.testing.assert_allclose(fnad.grad(lambda x: jnp.linalg.svdvals(x)[0])(b),
                               np.outer(u[:, 0], vh[0]), atol=1e-12)
    np.testing.assert_allclose(fnad.grad(lambda x: jnp.linalg.norm(x, "nuc"))(b), u @ vh,
                               atol=1e-12)
    # expm at a diagonal D in direction E_01: (e^d0 - e^d1) / (d0 - d1) (divided difference)
    d = np.array([0.3, -1.2, 2.0])
    e = np.zeros((3, 3))
    e[0, 1] = 1
    _, t = fnad.jvp(fsl.expm, (np.diag(d),), (e,))
    want = np.zeros((3, 3))
    want[0, 1] = (np.exp(d[0]) - np.exp(d[1])) / (d[0] - d[1])
    np.testing.assert_allclose(t, want, atol=1e-13)
    # d det(A) = det(A) tr(A^-1 dA) through lu's factors: det = prod(diag(U)) * sign
    c = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    lu_det = lambda x: jnp.prod(jnp.diagonal(fnad.lax.linalg.lu(x)[0]))  # noqa: E731
    sign = np.sign(np.linalg.det(c) / np.asarray(lu_det(c)))
    np.testing.assert_allclose(sign * np.asarray(fnad.grad(lu_det)(c)),
                               np.linalg.det(c) * np.linalg.inv(c).T, rtol=1e-10)


def test_composite_derivatives():
    a = spread(4, 3)
    check_grads(jnp.linalg.pinv, (a,), 2)
    check_grads(lambda x: jnp.linalg.lstsq(x, np.arange(4.0))[0], (a,), 1)
    check_grads(lambda x: jnp.linalg.norm(x, 2), (a,), 2)
    check_grads(lambda x: jnp.linalg.cond(x), (a,), 1)
    m = rng.standard_normal((3, 3))
    check_grads(fsl.expm, (m,), 2)
    check_grads(fsl.expm, (m * 20,), 1, rtol=1e-4)     # several squarings
    spd = m @ m.T + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    check_grads(lambda x, y: fsl.cho_solve(fsl.cho_factor(x), y), (spd, b), 1)
    check_grads(lambda x, y: fsl.solve_triangular(x, y, trans=1, lower=True), (m + 3 * np.eye(3), b), 2)
    check_grads(lambda x, y: fsl.lu_solve(fsl.lu_factor(x), y), (m + 3 * np.eye(3), b), 1)


def test_pinv_gradient_is_finite_at_repeated_singular_values():
    # Through the SVD the identity's gradient would be NaN; pinv's own rule is exact.
    g = fnad.grad(lambda x: jnp.sum(jnp.linalg.pinv(x)))(np.eye(3))
    np.testing.assert_allclose(g, -np.ones((3, 3)), atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_degenerate_derivatives_follow_jax():
    eye = np.eye(3)
    # eigenvalues stay differentiable; eigenvectors of a repeated eigenvalue are not
    np.testing.assert_allclose(fnad.grad(lambda x: jnp.sum(jnp.linalg.eigvalsh(x)))(eye), eye,
                               atol=1e-12)
    g = fnad.grad(lambda x: jnp.sum(jnp.linalg.eigh(x).eigenvectors))(eye)
    assert not np.isfinite(np.asarray(g)).all()
    np.testing.assert_allclose(fnad.grad(lambda x: jnp.sum(jnp.linalg.svdvals(x)))(eye), eye,
                               atol=1e-12)
    g = fnad.grad(lambda x: jnp.sum(jnp.linalg.svd(x)[0]))(eye)
    assert not np.isfinite(np.asarray(g)).all()
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    tall, wide = np.array([[1., 0], [0, 0], [0, 0]]), np.array([[1., 0, 0], [0, 0, 0]])
    cases = [
        (lambda np_, x: np_.linalg.svd(x, full_matrices=False)[0].sum(), eye),
        (lambda np_, x: np_.linalg.svd(x, full_matrices=False)[0].sum(), tall),
        (lambda np_, x: np_.linalg.svd(x, full_matrices=False)[2].sum(), wide),
        (lambda np_, x: np_.linalg.eigh(x)[1].sum(), eye),
        (lambda np_, x: np_.linalg.pinv(x).sum(), tall),
        (lambda np_, x: np_.linalg.norm(x, 2), np.eye(2)),
        (lambda np_, x: np_.linalg.norm(x, "nuc"), np.zeros((2, 2))),
    ]
    with np.errstate(all="ignore"):
        for f, x in cases:
            got = np.asarray(fnad.grad(lambda y: f(jnp, y))(x))
            want = np.asarray(jax.grad(lambda y: f(jax.numpy, y))(x))
            finite = np.isfinite(want)
            np.testing.assert_array_equal(np.isfinite(got), finite)
            np.testing.assert_allclose(got[finite], want[finite], atol=1e-12)


def test_gradients_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jjnp = jax.numpy
    a = spread(4, 3)
    s = symmetric(3, 3)
    cases = [
        (lambda np_, x: np_.linalg.svd(x, full_matrices=False)[1][0], a),
        (lambda np_, x: (np_.linalg.qr(x)[0] ** 3).sum(), a),
        (lambda np_, x: (np_.linalg.eigh(x)[0] * np_.arange(3.0)).sum(), s),
        (lambda np_, x: (np_.linalg.pinv(x) ** 2).sum(), a),
        (lambda np_, x: np_.linalg.norm(x, "nuc"), a),
    ]
    for f, x in cases:
        np.testing.assert_allclose(fnad.grad(lambda y: f(jnp, y))(x),
                                   jax.grad(lambda y: f(jjnp, y))(x), rtol=1e-9, atol=1e-12)
    m = rng.standard_normal((3, 3))
    np.testing.assert_allclose(fnad.grad(lambda y: (fsl.expm(y) ** 2).sum())(m),
                               jax.grad(lambda y: (jax.scipy.linalg.expm(y) ** 2).sum())(m),
                               rtol=1e-9)


def _tridiagonal(dl, d, du):
    m = d.shape[-1]
    # row i holds dl[i], d[i], du[i]
    return (d[..., :, None] * np.eye(m) + dl[..., :, None] * np.eye(m, k=-1)
            + du[..., :, None] * np.eye(m, k=1))


@pytest.mark.parametrize("m", [1, 2, 5])
def test_tridiagonal_solve(m):
    tri = fnad.lax.linalg.tridiagonal_solve
    dl, d, du = rng.standard_normal((3, 2, m))
    b = rng.standard_normal((2, m, 3))
    t = _tridiagonal(dl, d, du)
    want = np.linalg.solve(t, b)        # no diagonal dominance: pivoting is needed
    np.testing.assert_allclose(tri(dl, d, du, b), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fnad.jit(tri)(dl, d, du, b), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fnad.vmap(tri)(dl, d, du, b), want, rtol=1e-9, atol=1e-12)
    check_grads(tri, (dl * 0.5, d + 3, du * 0.5, b), 2)      # well conditioned
    # dl[0] and du[-1] are not read: no value depends on them, no cotangent reaches them
    grads = fnad.grad(lambda *a: jnp.sum(tri(*a) ** 2), argnums=(0, 2))(dl, d + 3, du, b)
    np.testing.assert_array_equal(np.asarray(grads[0])[..., 0], 0)
    np.testing.assert_array_equal(np.asarray(grads[1])[..., -1], 0)


def test_tridiagonal_solve_pivots_and_errors():
    tri = fnad.lax.linalg.tridiagonal_solve
    dl, d, du = np.array([0., 1, 1]), np.array([0., 0, 1]), np.array([1., 1, 0])
    b = np.ones((3, 1))           # a zero first pivot: only row exchanges solve it
    np.testing.assert_allclose(tri(dl, d, du, b), np.linalg.solve(_tridiagonal(dl, d, du), b),
                               atol=1e-15)
    with pytest.raises(np.linalg.LinAlgError):
        tri(np.zeros(2), np.zeros(2), np.zeros(2), np.ones((2, 1)))
    with pytest.raises(ShapeError, match=r"du must have shape \(3,\)"):
        tri(np.ones(3), np.ones(3), np.ones(2), np.ones((3, 1)))
    with pytest.raises(DTypeError, match="one dtype"):
        tri(np.ones(3, np.float32), np.ones(3), np.ones(3), np.ones((3, 1)))


def test_lax_linalg_compositions():
    lax_linalg = fnad.lax.linalg
    a, c = rng.standard_normal((5, 3)), rng.standard_normal((5, 5))
    np.testing.assert_allclose(lax_linalg.symmetric_product(a, c, alpha=2.0, beta=0.5),
                               2 * a @ a.T + 0.5 * c, rtol=1e-12)
    sym = np.asarray(lax_linalg.symmetric_product(a, c, beta=1.0, symmetrize_output=True))
    np.testing.assert_allclose(sym, sym.T)
    np.testing.assert_allclose(np.tril(sym), np.tril(a @ a.T + c), rtol=1e-12)
    spd = a.T @ a + np.eye(3)
    r, w = np.linalg.cholesky(spd).T, rng.standard_normal(3)
    updated = np.asarray(lax_linalg.cholesky_update(r, w))
    np.testing.assert_allclose(updated.T @ updated, spd + np.outer(w, w), rtol=1e-12)
    np.testing.assert_array_equal(np.tril(updated, -1), 0)
    check_grads(lax_linalg.cholesky_update, (r, w), 1)
    # numpy's raw QR leaves LAPACK's reflectors (transposed) and their taus
    x = rng.standard_normal((2, 5, 3))
    raw = [np.linalg.qr(xi, mode="raw") for xi in x]
    h = np.stack([r_.T for r_, _ in raw])
    taus = np.stack([t for _, t in raw])
    np.testing.assert_allclose(lax_linalg.householder_product(h, taus), np.linalg.qr(x)[0],
                               atol=1e-12)
    check_grads(lax_linalg.householder_product, (h[0], taus[0]), 1)


# --------------------------------------------------------------------------- jit and vmap

def test_jit_and_vmap_agree_with_eager():
    a = rng.standard_normal((3, 4, 3))

    def f(x):
        u, s, vh = jnp.linalg.svd(x, full_matrices=False)
        q, r = jnp.linalg.qr(x)
        w = jnp.linalg.eigvalsh(x.mT @ x)
        lu = fnad.lax.linalg.lu(x)[0]
        return s, u @ vh, jnp.abs(r), w, lu, fsl.expm(x.mT @ x * 0.1), jnp.linalg.pinv(x)

    eager = f(a)
    jf = fnad.jit(f)
    for _ in range(2):          # the first call traces, the second runs compiled
        for got, want in zip(jf(a), eager):
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
    for got, want in zip(fnad.vmap(f)(a), eager):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
    g = fnad.jit(fnad.vmap(fnad.grad(lambda x: jnp.linalg.svdvals(x)[0])))(a)
    for i in range(3):
        np.testing.assert_allclose(g[i], fnad.grad(lambda x: jnp.linalg.svdvals(x)[0])(a[i]),
                                   rtol=1e-11)


def test_float32_stays_float32():
    a = rng.standard_normal((3, 3)).astype(np.float32)
    for out in (*jnp.linalg.svd(a), *jnp.linalg.eigh(a), *jnp.linalg.qr(a),
                fnad.lax.linalg.lu(a)[0], fsl.expm(a), jnp.linalg.pinv(a)):
        assert out.dtype == np.float32
    np.testing.assert_allclose(jnp.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-5)


# --------------------------------------------------------------------------- errors

def test_errors():
    with pytest.raises(ShapeError, match=r"at least 2-d.*\(3,\)"):
        jnp.linalg.svd(np.ones(3))
    with pytest.raises(ShapeError, match=r"square.*\(2, 3\)"):
        jnp.linalg.eigh(np.ones((2, 3)))
    with pytest.raises(DTypeError, match="float32 or float64"):
        D.qr_p.bind(np.ones((2, 2), np.int32), full_matrices=False)
    with pytest.raises(DTypeError, match="float16"):
        jnp.linalg.svd(np.ones((2, 2), np.float16))
    with pytest.raises(ValueError, match="'raw'"):
        jnp.linalg.qr(np.ones((2, 2)), mode="raw")
    with pytest.raises(ValueError, match="UPLO"):
        jnp.linalg.eigh(np.eye(2), UPLO="X")
    with pytest.raises(GradientError, match=r"full_matrices.*\(3, 2\)"):
        fnad.grad(lambda x: jnp.sum(jnp.linalg.svd(x)[0]))(np.ones((3, 2)))
    with pytest.raises(GradientError, match="complete"):
        fnad.grad(lambda x: jnp.sum(jnp.linalg.qr(x, mode="complete")[0]))(np.ones((3, 2)))
    with pytest.raises(ShapeError, match="size 3"):
        jnp.linalg.cross(np.ones(2), np.ones(2))
    with pytest.raises(ShapeError, match="equal products"):
        jnp.linalg.tensorinv(np.ones((2, 3)), ind=1)
    with pytest.raises(ShapeError, match=r"\(4,\) or \(4, k\)"):
        jnp.linalg.lstsq(np.ones((4, 2)), np.ones(3))
    with pytest.raises(ShapeError, match="needs 3 rows"):
        fsl.solve_triangular(np.eye(3), np.ones(2))
    with pytest.raises(ValueError, match="trans"):
        fsl.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(np.linalg.LinAlgError):
        fsl.cholesky(-np.eye(2))


# --------------------------------------------------------------------------- cuda

@pytest.mark.cuda
def test_cuda_decompositions_match_the_cpu():
    cuda_util = pytest.importorskip("cuda_util")
    if not cuda_util.GPUS:
        pytest.skip("numba.cuda finds no GPU (nor simulator)")
    a = rng.standard_normal((2, 4, 3))
    cuda_util.check_primitive(D.svd_p, a, full_matrices=False, compute_uv=True)
    cuda_util.check_primitive(D.qr_p, a, full_matrices=True)
    cuda_util.check_primitive(D.lu_p, a)
    cuda_util.check_primitive(D.eigh_p, symmetric(2, 3, 3), lower=True)
    cuda_util.check_primitive(D.lu_pivots_to_permutation_p, np.array([[2, 2, 2]], np.int32),
                              permutation_size=4)
    square = rng.standard_normal((2, 4, 4))
    cuda_util.check_primitive(N.hessenberg_p, square)
    cuda_util.check_primitive(N.schur_p, square, output="real")
    cuda_util.check_primitive(N.eig_p, square, compute_left_eigenvectors=True,
                              compute_right_eigenvectors=True)
    cuda_util.check_primitive(N.sqrtm_p, square @ np.swapaxes(square, -1, -2))
    dl, d, du = np.moveaxis(square[:, :3], 1, 0)
    cuda_util.check_primitive(L.tridiagonal_solve_p, dl, d + 3, du, square[:, :, :2].copy())


def test_decompositions_inside_a_compiled_loop():
    a = rng.standard_normal((3, 3))

    def body(carry, _):
        return carry + jnp.linalg.svdvals(a + carry[0, 0]).sum() * 0 + 1, jnp.linalg.eigvalsh(
            a @ a.T + carry)

    carry, ws = fnad.jit(lambda c: fnad.lax.scan(body, c, None, length=3))(np.zeros((3, 3)))
    np.testing.assert_allclose(carry, np.full((3, 3), 3.0))
    for i in range(3):
        want = np.linalg.eigvalsh(a @ a.T + i)
        np.testing.assert_allclose(ws[i], want, rtol=1e-12, atol=1e-13 * want[-1])
