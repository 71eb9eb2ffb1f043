"""fnad.numpy.fft and lax.fft: values against numpy's pocketfft in every dtype and
norm, jit (first call and compiled) and vmap against eager, derivatives against the
defining identity of a transpose (<ct, L t> = <L^T ct, t> with the pairing Re(ct t)),
hand-derived ones (Parseval), finite differences and JAX, and errors."""
import numpy as np
import pytest

import fnad
import fnad.numpy as jnp
from fnad import lax
from fnad.errors import DTypeError, ShapeError
from fnad.primitives.fft import FftType, fft_p
from fnad.test_util import check_grads

from cuda_util import check_primitive, needs_cuda

rng = np.random.default_rng(0)


def real(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def cplx(*shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def close(got, expected, dtype=None):
    dtype = np.asarray(expected).dtype if dtype is None else dtype
    scale = max(1.0, float(np.max(np.abs(expected), initial=0)))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=tol(dtype),
                               atol=tol(dtype) * scale)


# --------------------------------------------------------------------------- values

ONE_AXIS = [  # (name, operand kind, kwargs)
    ("fft", "c", {}), ("fft", "r", {"n": 5}), ("fft", "c", {"n": 11, "axis": 0}),
    ("ifft", "c", {}), ("ifft", "c", {"n": 4, "axis": -2}),
    ("rfft", "r", {}), ("rfft", "r", {"n": 7}), ("rfft", "r", {"n": 12, "axis": 0}),
    ("irfft", "c", {}), ("irfft", "c", {"n": 9}), ("irfft", "c", {"n": 4, "axis": 0}),
    ("hfft", "c", {}), ("hfft", "c", {"n": 7}), ("ihfft", "r", {}),
    ("ihfft", "r", {"n": 5}),
]


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("name, kind, kwargs", ONE_AXIS)
def test_one_axis_transforms_match_numpy(name, kind, kwargs, norm):
    x = real(6, 8) if kind == "r" else cplx(6, 8)
    got = getattr(jnp.fft, name)(x, norm=norm, **kwargs)
    expected = getattr(np.fft, name)(x, norm=norm, **kwargs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    close(got, expected)


ND = [  # (name, operand kind, kwargs)
    ("fftn", "c", {}), ("fftn", "r", {"axes": (0, 2)}), ("fftn", "c", {"s": (3, 6)}),
    ("fftn", "c", {"s": (5, 2), "axes": (2, 0)}), ("ifftn", "c", {"axes": (1,)}),
    ("ifftn", "c", {"s": (2, 4, 7)}), ("rfftn", "r", {}), ("rfftn", "r", {"axes": (2, 0)}),
    ("rfftn", "r", {"s": (3, 9), "axes": (0, 1)}), ("irfftn", "c", {}),
    ("irfftn", "c", {"s": (4, 5), "axes": (2, 1)}), ("irfftn", "c", {"axes": (0, 1)}),
    ("fft2", "c", {}), ("ifft2", "c", {"s": (3, 3)}), ("rfft2", "r", {"axes": (0, 2)}),
    ("irfft2", "c", {"s": (4, 6)}), ("fftn", "r", {"s": (-1, 3), "axes": (2, 0)}),
    ("irfftn", "c", {"s": (2, -1), "axes": (0, 1)}),
]


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name, kind, kwargs", ND)
def test_nd_transforms_match_numpy(name, kind, kwargs, norm):
    x = real(3, 4, 5) if kind == "r" else cplx(3, 4, 5)
    got = getattr(jnp.fft, name)(x, norm=norm, **kwargs)
    if "s" in kwargs and "axes" not in kwargs:      # numpy 2 deprecates leaving axes out
        kwargs = dict(kwargs, axes=tuple(range(-len(kwargs["s"]), 0)))
    expected = getattr(np.fft, name)(x, norm=norm, **kwargs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    close(got, expected)


@pytest.mark.parametrize("dtype, out", [
    (np.float32, np.complex64), (np.float64, np.complex128), (np.complex64, np.complex64),
    (np.int32, np.complex64), (np.float16, np.complex64), (np.bool_, np.complex64)])
def test_dtypes_follow_jax_and_never_narrow(dtype, out):
    x = (real(2, 8) * 4).astype(dtype)
    got = jnp.fft.fft(x)
    assert got.dtype == out
    close(got, np.fft.fft(x.astype(out)), out)
    if np.dtype(dtype).kind != "c":
        assert jnp.fft.rfft(x).dtype == out
        back = {np.complex64: np.float32, np.complex128: np.float64}[out]
        assert jnp.fft.irfft(jnp.fft.rfft(x)).dtype == back
    close(jnp.fft.ifft(got), x.astype(out), out)


def test_roundtrips_and_special_values():
    x = real(4, 10)
    close(jnp.fft.irfft(jnp.fft.rfft(x), n=10), x)
    close(jnp.fft.ifftn(jnp.fft.fftn(x)), x.astype(complex))
    # Non-finite values and signed zeros come out as numpy's, scaled or not (a
    # complex multiply by c + 0j would make inf * 0 = nan and lose -0.0 parts), eagerly
    # and under jit.
    def every_norm(module, y):
        return [getattr(module.fft, name)(y, norm=norm) for norm in [None, "ortho", "forward"]
                for name in ["fft", "rfft", "ifft", "ihfft"]]
    jitted = fnad.jit(lambda y: every_norm(jnp, y))
    for y in [np.array([np.inf, 0.0]), np.array([-0.0, -0.0]),
              np.array([1.0, np.nan, -0.0, np.inf])]:
        for got in (every_norm(jnp, y), jitted(y)):
            for g, expected in zip(got, every_norm(np, y)):
                for part in (np.real, np.imag):
                    np.testing.assert_array_equal(part(np.asarray(g)), part(expected))
                    np.testing.assert_array_equal(np.signbit(part(np.asarray(g))),
                                                  np.signbit(part(expected)))
    # An empty batch transforms to an empty result.
    assert jnp.fft.fft(np.zeros((0, 4))).shape == (0, 4)
    assert jnp.fft.irfft(np.zeros((0, 3), complex)).shape == (0, 4)


def test_frequencies_and_shifts_match_numpy():
    for n, d in [(1, 1.0), (5, 0.1), (8, 2.0)]:
        np.testing.assert_allclose(jnp.fft.fftfreq(n, d, dtype=np.float64),
                                   np.fft.fftfreq(n, d), rtol=1e-15)
        np.testing.assert_allclose(jnp.fft.rfftfreq(n, d, dtype=np.float64),
                                   np.fft.rfftfreq(n, d), rtol=1e-15)
    assert jnp.fft.fftfreq(4).dtype == np.float32
    np.testing.assert_allclose(jnp.fft.fftfreq(6, jnp.asarray(0.5)), np.fft.fftfreq(6, 0.5))
    x = np.arange(35.0).reshape(5, 7)
    for axes in [None, 0, (1,), (0, 1)]:
        np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))


def test_lax_fft_matches_numpy():
    x = cplx(2, 3, 4)
    close(lax.fft(x, lax.FftType.FFT, (3, 4)), np.fft.fftn(x, axes=(1, 2)))
    close(lax.fft(x, "ifft", [4]), np.fft.ifft(x))
    r = real(2, 6)
    close(lax.fft(r, lax.FftType.RFFT, (6,)), np.fft.rfft(r))
    close(lax.fft(np.fft.rfft(r), "IRFFT", (6,)), r)
    assert lax.FftType.IRFFT == 3


def test_numpy_fft_functions_dispatch_to_fnad():
    # np.fft.* on a traced value runs fnad's (NEP 18), so grad and jit see it.
    x = real(8)
    g = fnad.grad(lambda v: jnp.sum(jnp.real(np.fft.rfft(v, norm="ortho")[1:3])))(x)
    expected = np.real(np.fft.fft(np.eye(8), norm="ortho")[1:3]).sum(axis=0)
    close(g, expected)
    z = cplx(3, 4)
    got = fnad.jit(lambda v: np.fft.fftshift(np.fft.ifft2(v)))(z)
    assert isinstance(got, fnad.Array)
    close(got, np.fft.fftshift(np.fft.ifft2(z)))


# --------------------------------------------------------------------------- errors

def test_errors_name_the_problem():
    x = real(4, 6)
    with pytest.raises(ValueError, match="norm"):
        jnp.fft.fft(x, norm="unitary")
    with pytest.raises(ShapeError, match="data points 0"):
        jnp.fft.fft(x, n=0)
    with pytest.raises(ShapeError, match="data points 0"):
        jnp.fft.irfft(cplx(3, 1))
    with pytest.raises(ShapeError, match="twice"):
        jnp.fft.fftn(x, axes=(1, -1))
    with pytest.raises(ShapeError, match="different lengths"):
        jnp.fft.fftn(x, s=(2, 3), axes=(0,))
    with pytest.raises(ShapeError, match="out of bounds"):
        jnp.fft.fft(x, axis=2)
    with pytest.raises(DTypeError, match="complex128"):
        jnp.fft.rfft(cplx(4))
    with pytest.raises(ShapeError, match=r"trailing axes \(4,\)"):
        lax.fft(cplx(3, 5), "fft", (4,))
    with pytest.raises(ShapeError, match=r"trailing axes \(3,\)"):
        lax.fft(cplx(3, 5), "irfft", (5,))
    with pytest.raises(DTypeError, match="RFFT takes float32 or float64"):
        lax.fft(cplx(4), "rfft", (4,))
    with pytest.raises(DTypeError, match="FFT takes complex64 or complex128"):
        lax.fft(real(4), "fft", (4,))
    with pytest.raises(ValueError, match="unknown fft_type"):
        lax.fft(cplx(4), "dft", (4,))
    with pytest.raises(ShapeError, match="rank 1"):
        lax.fft(cplx(4), "fft", (2, 4))


# --------------------------------------------------------------------------- jit and vmap

def test_jit_calls_the_library_between_fused_kernels():
    def f(x, z):
        spectrum = jnp.fft.rfft(x * 2.0 + 1.0, n=10, norm="ortho")
        return (jnp.fft.irfft(spectrum * z, n=8) - x,
                jnp.fft.fft2(z.reshape(2, 3), norm="forward"),
                jnp.fft.fftshift(jnp.fft.fftfreq(6)))
    x, z = real(3, 8), cplx(6)
    expected = [np.fft.irfft(np.fft.rfft(x * 2 + 1, n=10, norm="ortho") * z, n=8) - x,
                np.fft.fft2(z.reshape(2, 3), norm="forward"),
                np.fft.fftshift(np.fft.fftfreq(6))]
    jitted = fnad.jit(f)
    for outputs in (f(x, z), jitted(x, z), jitted(x, z)):   # eager, first call, compiled
        for got, want in zip(outputs, expected):
            close(got, want, np.asarray(got).dtype)


@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_vmap_matches_a_loop(in_axis):
    x = cplx(3, 4, 5)
    r = real(3, 4, 6)
    cases = [(lambda v: jnp.fft.fft(v, axis=0), x), (lambda v: jnp.fft.ifft2(v), x),
             (lambda v: jnp.fft.rfft(v, n=4), r), (lambda v: jnp.fft.irfft(v, axis=0), x)]
    for fn, operand in cases:
        got = fnad.vmap(fn, in_axes=in_axis)(operand)
        expected = np.stack([np.asarray(fn(np.take(operand, i, in_axis)))
                             for i in range(operand.shape[in_axis])])
        close(got, expected)


def test_vmap_of_the_primitive_keeps_a_leading_batch_axis():
    x = cplx(4, 3, 5)
    got = fnad.vmap(lambda v: lax.fft(v, "fft", (5,)), in_axes=1, out_axes=1)(x)
    close(got, np.fft.fft(x))


# --------------------------------------------------------------------------- derivatives

def pairing(ct, t):
    """<ct, t> = Re(sum ct t): the bilinear pairing cotangents live in (no conjugate)."""
    return float(np.real(np.sum(np.asarray(ct) * np.asarray(t))))


LINEAR = [  # (name, kwargs, operand kind, output kind)
    ("fft", {}, "c", "c"), ("ifft", {"n": 7}, "c", "c"),
    ("fftn", {"s": (3, 4), "norm": "ortho"}, "c", "c"),
    ("rfft", {}, "r", "c"), ("rfft", {"n": 5}, "r", "c"),
    ("rfftn", {"axes": (1, 0)}, "r", "c"),
    ("irfft", {}, "c", "r"), ("irfft", {"n": 7}, "c", "r"),
    ("irfftn", {"norm": "forward"}, "c", "r"), ("hfft", {}, "c", "r"),
    ("ihfft", {}, "r", "c"),
]


def operand(kind, shape=(4, 6)):
    return real(*shape) if kind == "r" else cplx(*shape)


@pytest.mark.parametrize("name, kwargs, kind_in, kind_out", LINEAR)
def test_vjp_is_the_transpose_and_jvp_the_map(name, kwargs, kind_in, kind_out):
    def fn(v):
        return getattr(jnp.fft, name)(v, **kwargs)
    x, t = operand(kind_in), operand(kind_in)
    y, pullback = fnad.vjp(fn, x)
    ct = operand(kind_out, tuple(y.shape))
    ct_x, = pullback(ct)
    assert ct_x.dtype == x.dtype
    # <ct, L t> = <L^T ct, t> for every t: the definition of the transpose.
    assert np.isclose(pairing(ct, fn(t)), pairing(ct_x, t), rtol=1e-10)
    out, tangent = fnad.jvp(fn, (x,), (t,))
    close(tangent, np.asarray(fn(t)))
    # The map itself, by central differences (exact for a linear map up to rounding).
    eps = 1e-3
    close(tangent, (np.asarray(fn(x + eps * t)) - np.asarray(fn(x - eps * t))) / (2 * eps))


@pytest.mark.parametrize("name, kwargs, kind_in, kind_out", LINEAR)
def test_vjp_matches_jax(name, kwargs, kind_in, kind_out):
    jax = pytest.importorskip("jax")
    x = operand(kind_in)
    y, pullback = fnad.vjp(lambda v: getattr(jnp.fft, name)(v, **kwargs), x)
    ct = operand(kind_out, tuple(y.shape))
    with jax.enable_x64(True):
        expected_y, jax_pullback = jax.vjp(
            lambda v: getattr(jax.numpy.fft, name)(v, **kwargs), x)
        expected_ct = np.asarray(jax_pullback(ct)[0])
    close(y, np.asarray(expected_y))
    close(pullback(ct)[0], expected_ct)


def test_grad_of_parseval_energy_is_2n_x_at_every_order():
    # sum |fft(x)|^2 = N sum x^2, so the gradient is 2 N x and the Hessian 2 N I.
    x = real(8)

    def energy(v):
        y = jnp.fft.rfft(v)
        w = np.array([1.0] + [2.0] * 3 + [1.0])      # each conjugate pair counted twice
        return jnp.sum(w * (jnp.real(y) ** 2 + jnp.imag(y) ** 2))
    close(energy(x), 8 * np.sum(x ** 2))
    close(fnad.grad(energy)(x), 16 * x)
    close(fnad.jit(fnad.grad(energy))(x), 16 * x)
    close(fnad.hessian(energy)(x), 16 * np.eye(8))
    per_example = fnad.vmap(fnad.grad(energy))(real(3, 8))
    assert per_example.shape == (3, 8)


def test_second_order_derivatives_match_finite_differences():
    # Complex operands from real parts, so the checker perturbs both parts; the
    # transposes' own derivatives (conj, pad, the swapped-norm RFFT) are exercised.
    def f(re, im):
        y = jnp.fft.irfftn(re + 1j * im, s=(3, 6), norm="ortho")
        return jnp.sum(jnp.sin(y) * y)

    def g(x):
        return jnp.sum(jnp.tanh(jnp.fft.hfft(jnp.fft.fft2(x), n=5, norm="forward")))
    check_grads(f, (real(3, 4), real(3, 4)), order=2, modes=("fwd", "rev"))
    check_grads(g, (real(3, 6),), order=2, modes=("fwd", "rev"))


def test_grad_through_complex_fft_matches_hand_derivation():
    # f(z) = Re(sum w fft(z)) = Re(sum fft(w) z), the DFT matrix being symmetric. For
    # f = Re(c z), df/dx + i df/dy = conj(c), and grad gives its conjugate: c = fft(w)
    # (so grad(|z|^2) = 2 conj(z), as in JAX).
    w, z = cplx(6), cplx(6)
    g = fnad.grad(lambda v: jnp.real(jnp.sum(w * jnp.fft.fft(v))))(z)
    close(g, np.fft.fft(w))


# --------------------------------------------------------------------------- cuda

@needs_cuda[0]
@needs_cuda[1]
def test_cuda_fft_matches_the_cpu():
    # (a host round trip: the same pocketfft numbers, the result back on the GPU)
    check_primitive(fft_p, cplx(2, 3, 4), fft_type=FftType.FFT, fft_lengths=(3, 4),
                    norm="backward")
    check_primitive(fft_p, real(3, 6), fft_type=FftType.RFFT, fft_lengths=(6,),
                    norm="ortho")
    check_primitive(fft_p, cplx(3, 4), fft_type=FftType.IRFFT, fft_lengths=(6,),
                    norm="forward")
