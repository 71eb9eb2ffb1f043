"""Complex numbers: complex64/complex128 arrays, promotion, the elementwise math numpy
defines on them, their parts, numpy's complex rules (lexicographic order, conversions,
statistics), and derivatives with JAX's conventions: the cotangent of a complex value
pairs with its tangent as Re(ct * t), so grad of a real f(x + iy) is df/dx - i df/dy,
and grad(..., holomorphic=True) is f'(z). Checked by hand, against numpy's values, by
central differences in complex128 along the real and the imaginary direction, in every
mode (eager, jit's first and compiled call, vmap), and against JAX when installed."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import lax
from fnad.errors import DTypeError

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
TOL = {C64: dict(rtol=2e-5, atol=2e-6), C128: dict(rtol=1e-12, atol=1e-13),
       np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6),
       np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}
Z = np.array([1 + 2j, -3 + 0.5j, 0.25 - 0.75j, -0.5 - 2j])


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, **TOL.get(got.dtype, {}))


# --------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("a, b, want", [
    (np.complex64, np.complex128, np.complex128),
    (np.float32, np.complex64, np.complex64),
    (np.float64, np.complex64, np.complex128),     # never narrowed (JAX x64 agrees)
    (np.float16, np.complex64, np.complex64),
    (np.int64, np.complex64, np.complex64),
    (np.bool_, np.complex128, np.complex128),
])
def test_promote_types(a, b, want):
    assert fnp.promote_types(a, b) == want
    assert fnp.promote_types(b, a) == want


def test_weak_python_complex():
    x32 = fnp.ones(2, np.float32)
    assert (x32 * 1j).dtype == C64
    assert (fnp.ones(2, np.float64) + 1j).dtype == C128
    assert (fnp.ones(2, np.int32) + 1j).dtype == C64          # the default complex
    assert (fnp.asarray(Z.astype(C64)) * 2.5).dtype == C64    # weak float stays c64
    assert fnp.asarray(1j).dtype == C64 and fnp.asarray(1j).weak_type
    assert fnp.asarray([1, 2j]).dtype == C64
    assert fnp.result_type(1j, 2.0) == C64
    fnad.config.update("jax_enable_x64", True)
    try:
        assert fnp.asarray(1j).dtype == C128
        assert (fnp.ones(2, np.int32) + 1j).dtype == C128
    finally:
        fnad.config.update("jax_enable_x64", False)


# --------------------------------------------------------------------------- values

UNARY = [  # (name, fnad function, numpy function)
    ("neg", lambda z: -z, np.negative),
    ("exp", fnp.exp, np.exp), ("log", fnp.log, np.log), ("log1p", fnp.log1p, np.log1p),
    ("expm1", fnp.expm1, np.expm1), ("sqrt", fnp.sqrt, np.sqrt),
    ("sin", fnp.sin, np.sin), ("cos", fnp.cos, np.cos), ("tan", fnp.tan, np.tan),
    ("tanh", fnp.tanh, np.tanh), ("sinh", fnp.sinh, np.sinh), ("cosh", fnp.cosh, np.cosh),
    ("arcsin", fnp.arcsin, np.arcsin), ("arccos", fnp.arccos, np.arccos),
    ("arctan", fnp.arctan, np.arctan), ("arcsinh", fnp.arcsinh, np.arcsinh),
    ("arctanh", fnp.arctanh, np.arctanh), ("arccosh", fnp.arccosh, np.arccosh),
    ("abs", fnp.abs, np.abs), ("sign", fnp.sign, np.sign),
    ("real", fnp.real, np.real), ("imag", fnp.imag, np.imag), ("conj", fnp.conj, np.conj),
    ("angle", fnp.angle, np.angle), ("square", fnp.square, np.square),
    ("reciprocal", fnp.reciprocal, np.reciprocal),
    ("isfinite", fnp.isfinite, np.isfinite), ("isnan", fnp.isnan, np.isnan),
    ("pow3", lambda z: z ** 3, lambda z: z ** 3),
    ("pow-2", lambda z: z ** -2, lambda z: z ** -2),
    ("rsqrt", lax.rsqrt, lambda z: 1 / np.sqrt(z)),
]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("name, f, ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_eager(name, f, ref, dtype):
    z = Z.astype(dtype)
    _close(f(fnp.asarray(z)), ref(z))


BINARY = [
    ("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b),
    ("pow", lambda a, b: a ** b), ("eq", lambda a, b: a == b),
    ("ne", lambda a, b: a != b),
]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("name, f", BINARY, ids=[b[0] for b in BINARY])
def test_binary_eager(name, f, dtype):
    a, b = Z.astype(dtype), Z[::-1].astype(dtype)
    _close(f(fnp.asarray(a), fnp.asarray(b)), f(a, b))
    # with a real array, and with Python scalars (weak)
    r = np.linspace(0.5, 2, 4).astype(np.float32 if dtype == C64 else np.float64)
    _close(f(fnp.asarray(a), fnp.asarray(r)), f(a, r.astype(dtype)))
    _close(f(fnp.asarray(a), 2.5), f(a, dtype.type(2.5)))
    _close(f(1.5 - 2j, fnp.asarray(a)), f(dtype.type(1.5 - 2j), a))


def test_special_values():
    # parts stored exactly: inf and NaN in one part leave the other alone, -0.0 kept
    re = np.array([np.inf, -0.0, np.nan, 1.0])
    im = np.array([0.0, -0.0, 2.0, -np.inf])
    z = lax.complex(fnp.asarray(re), fnp.asarray(im))
    np.testing.assert_array_equal(np.asarray(fnp.real(z)), re)
    np.testing.assert_array_equal(np.signbit(np.asarray(fnp.imag(z))), np.signbit(im))
    np.testing.assert_array_equal(np.asarray(fnp.imag(z)), im)
    v = re + 0j
    v.imag = im
    for f, ref in [(fnp.sign, np.sign), (fnp.abs, np.abs), (fnp.isfinite, np.isfinite)]:
        np.testing.assert_array_equal(np.asarray(f(z)), ref(v))
        np.testing.assert_array_equal(np.asarray(fnad.jit(f)(z)), ref(v))


def test_real_inputs_and_conversion():
    x = fnp.asarray(np.array([-1.5, 2.0], np.float32))
    assert fnp.real(x) is x and fnp.conj(x) is x
    _close(fnp.imag(x), np.zeros(2, np.float32))
    _close(fnp.angle(x), np.angle(np.asarray(x)))
    _close(fnp.angle(fnp.asarray([1, -1])), np.angle(np.array([1, -1])).astype(np.float32))
    _close(fnp.angle(fnp.asarray(Z), deg=True), np.angle(Z, deg=True))
    z = fnp.asarray(Z.astype(C64))
    _close(z.astype(np.float32), Z.real.astype(np.float32))    # the real part
    _close(z.astype(np.int32), Z.real.astype(np.int32))
    # to bool: nonzero, as numpy (1j is True although its real part is 0)
    np.testing.assert_array_equal(np.asarray(fnp.asarray([1j, 0j, 2]).astype(bool)),
                                  [True, False, True])
    np.testing.assert_array_equal(
        np.asarray(fnad.jit(lambda z: z.astype(bool))(fnp.asarray([1j, 0j]))), [True, False])
    _close(x.astype(C128), np.asarray(x).astype(C128))
    _close(z.real, Z.real.astype(np.float32))
    _close(z.imag, Z.imag.astype(np.float32))
    _close(z.conj(), np.conj(Z).astype(C64))
    assert fnp.iscomplexobj(z) and not fnp.iscomplexobj(x)
    np.testing.assert_array_equal(np.asarray(fnp.isreal(fnp.asarray([1 + 0j, 1j]))),
                                  [True, False])


@pytest.mark.parametrize("f", [fnp.floor, fnp.ceil, fnp.cbrt, fnp.fmod, lax.max, lax.lt,
                               lax.round, fnp.arctan2, fnp.hypot, fnad.scipy.special.erf,
                               fnp.floor_divide, fnp.argmin, lambda z: lax.cummax(z, 0),
                               lambda z: lax.reduce_max(z, (0,))],
                         ids=lambda f: getattr(f, "__name__", "f"))
def test_real_only_functions_raise(f):
    z = fnp.asarray(Z.astype(C64))
    with pytest.raises(DTypeError, match="complex64"):
        try:
            f(z)
        except TypeError as e:
            if "positional argument" not in str(e):
                raise
            f(z, z)


def test_lax_complex_parts():
    a, b = fnp.asarray(np.float32([1, 2])), fnp.asarray(np.float32([3, -4]))
    z = lax.complex(a, b)
    assert z.dtype == C64
    _close(z, np.array([1 + 3j, 2 - 4j], C64))
    _close(lax.real(z), np.float32([1, 2]))
    _close(lax.imag(z), np.float32([3, -4]))
    _close(lax.conj(z), np.array([1 - 3j, 2 + 4j], C64))
    _close(lax.acosh(fnp.asarray([2.0])), np.arccosh(np.float32([2.0])))
    with pytest.raises(DTypeError, match="int32"):
        lax.complex(fnp.asarray([1]), fnp.asarray([2]))
    with pytest.raises(DTypeError, match="float32"):
        lax.real(a)
    _close(lax.convert_element_type(z, np.float32), np.float32([1, 2]))
    from fnad.primitives.structural import convert_element_type_p
    with pytest.raises(DTypeError, match="real part"):
        convert_element_type_p.bind(z, new_dtype=np.dtype(np.float32))


# --------------------------------------------------------------------------- jit and vmap

def _program(z):
    # elementwise math, a weak Python complex, parts, conversions and a reduction in one
    # fused program
    w = fnp.exp(z) * fnp.sin(z) + fnp.sqrt(z) / (z + 2.5 - 1j) + fnp.arccosh(z)
    parts = fnp.abs(z) + fnp.real(z) * fnp.imag(z) + fnp.angle(z)
    return w * fnp.conj(z) + parts, fnp.sum(w * w), fnp.mean(fnp.sign(z)), z.astype(np.float32)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_jit_first_call_and_compiled(dtype):
    z = Z.astype(dtype)
    want = [np.asarray(w) for w in _program(fnp.asarray(z))]
    # numpy's own values for the eager result
    w = np.exp(z) * np.sin(z) + np.sqrt(z) / (z + dtype.type(2.5 - 1j)) + np.arccosh(z)
    _close(want[0], w * np.conj(z) + (np.abs(z) + z.real * z.imag + np.angle(z)).astype(dtype))
    _close(want[1], np.sum(w * w))
    f = fnad.jit(_program)
    for _ in range(2):      # the first call traces and compiles, the second reuses it
        for got, w in zip(f(fnp.asarray(z)), want):
            _close(got, w)


def test_jit_complex_literals_and_specials():
    z = fnp.asarray(np.array([1 + 1j, np.inf + 0j, complex(np.nan, 1.0), -0.0 - 0.0j]))
    f = fnad.jit(lambda z: (z * (2 - 0.5j) + complex(np.inf, -1), fnp.sign(z),
                            fnp.isfinite(z), z == complex(np.inf, 0), -z))
    zn = np.asarray(z)
    with np.errstate(invalid="ignore"):
        want = (zn * (2 - 0.5j) + complex(np.inf, -1), np.sign(zn), np.isfinite(zn),
                zn == complex(np.inf, 0), -zn)
    for got, w in zip(f(z), want):
        np.testing.assert_array_equal(np.asarray(got), w)
    np.testing.assert_array_equal(np.signbit(np.asarray(f(z)[4]).imag), np.signbit((-zn).imag))


def test_sums_accumulate_wide():
    # complex64 sums accumulate in complex128, in every mode
    z = (np.random.default_rng(0).standard_normal(10 ** 5) * (1 + 1j)).astype(C64)
    want = np.sum(z.astype(C128)).astype(C64)
    for f in (fnp.sum, fnad.jit(fnp.sum), fnad.jit(lambda z: fnp.sum(z * 1))):
        got = np.asarray(f(fnp.asarray(z)))
        assert got.dtype == C64
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_reductions_and_products():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    A, B = fnp.asarray(a), fnp.asarray(b)
    cases = [(lambda x, y: x @ y, a @ b), (lambda x, y: fnp.sum(x, axis=0), a.sum(0)),
             (lambda x, y: fnp.prod(x, axis=1), a.prod(1)),
             (lambda x, y: fnp.mean(x, axis=1), a.mean(1)),
             (lambda x, y: fnp.var(x), a.var()), (lambda x, y: fnp.std(x, axis=0), a.std(0)),
             (lambda x, y: fnp.cumsum(x, axis=1), a.cumsum(1)),
             (lambda x, y: fnp.cumprod(x, axis=0), a.cumprod(0)),
             (lambda x, y: fnp.vdot(x[0], y[:, 0]), np.vdot(a[0], b[:, 0])),
             (lambda x, y: fnp.einsum("ij,jk->ik", x, y), a @ b),
             (lambda x, y: x.at[1, 2].add(1j), a + np.where(np.arange(12).reshape(3, 4) == 6,
                                                            1j, 0)),
             (lambda x, y: x.at[0, 1].divide(2j), a * np.where(np.arange(12).reshape(3, 4) == 1,
                                                               -0.5j, 1)),
             (lambda x, y: x[0].at[7].get(mode="fill"), np.complex128(complex(np.nan, 0)))]
    for f, want in cases:
        _close(f(A, B), want)
        _close(fnad.jit(f)(A, B), want)
    with pytest.raises(DTypeError, match="complex128"):
        lax.reduce_max(A, (0,))
    with pytest.raises(DTypeError, match="complex128"):
        fnad.jit(lambda a: lax.reduce_min(a, (0, 1)))(A)


def test_vmap():
    z = fnp.asarray(Z.reshape(2, 2))
    f = lambda r: fnp.sum(fnp.exp(r) * fnp.conj(r)) + fnp.abs(r[0])  # noqa: E731
    want = np.array([np.sum(np.exp(r) * np.conj(r)) + np.abs(r[0]) for r in Z.reshape(2, 2)])
    _close(fnad.vmap(f)(z), want)
    _close(fnad.jit(fnad.vmap(f))(z), want)
    _close(fnad.vmap(lax.complex)(fnp.real(z), fnp.imag(z)), Z.reshape(2, 2))
    _close(fnad.vmap(fnp.real, in_axes=1)(z), Z.reshape(2, 2).real.T)


# --------------------------------------------------------------------------- derivatives
# Hand-derived: for real f, grad(f)(z) = 2 df/dz (Wirtinger), so |z|^2 -> 2 conj(z) and
# Re(z^2) -> 2z; with holomorphic=True, grad is f'(z).

z0 = np.complex128(0.7 - 1.3j)
w0 = np.complex128(-0.4 + 0.9j)


@pytest.mark.parametrize("f, want", [
    (lambda z: fnp.abs(z) ** 2, 2 * np.conj(z0)),
    (lambda z: fnp.real(z * z), 2 * z0),
    (lambda z: fnp.imag(z * z), -2j * z0),       # Im(z^2) = 2xy: (2y, 2x) -> 2y - 2xi
    (lambda z: fnp.abs(z), np.conj(z0) / abs(z0)),
    (lambda z: fnp.angle(z), -1j * np.conj(z0) / abs(z0) ** 2),   # (-y, x) / r^2
    (lambda z: fnp.real(z * np.conj(w0)), np.conj(w0)),
    (lambda z: fnp.real(fnp.exp(z)), np.exp(z0)),
])
def test_grad_of_real_functions_by_hand(f, want):
    z = fnp.asarray(z0)
    _close(fnad.grad(f)(z), want)
    _close(fnad.jit(fnad.grad(f))(z), want)
    _close(fnad.grad(fnad.jit(f))(z), want)


def test_grad_at_zero_and_real_inputs():
    _close(fnad.grad(fnp.abs)(fnp.asarray(0j)), np.complex64(0))
    _close(fnad.grad(lambda z: fnp.abs(z) * 1.0)(fnp.asarray(np.complex128(0))),
           np.complex128(0))
    # a real input through complex arithmetic: d/dx Re(x (1 + 2i)) = 1
    _close(fnad.grad(lambda x: fnp.real(x * (1 + 2j)))(fnp.asarray(1.0)), np.float32(1.0))
    _close(fnad.grad(lambda x: fnp.imag(fnp.exp(1j * x)))(fnp.asarray(0.5)),
           np.float32(np.cos(0.5)))


@pytest.mark.parametrize("f, df", [
    (lambda z: z * z, lambda z: 2 * z),
    (lambda z: fnp.exp(z) * fnp.sin(z), lambda z: np.exp(z) * (np.sin(z) + np.cos(z))),
    (lambda z: 1 / z + fnp.log(z), lambda z: -1 / z ** 2 + 1 / z),
    (lambda z: fnp.arccosh(z), lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1))),
    (lambda z: z ** 3 - fnp.sqrt(z), lambda z: 3 * z ** 2 - 0.5 / np.sqrt(z)),
])
def test_holomorphic_grad_by_hand(f, df):
    z = fnp.asarray(z0)
    _close(fnad.grad(f, holomorphic=True)(z), df(z0))
    _close(fnad.value_and_grad(f, holomorphic=True)(z)[1], df(z0))
    _close(fnad.grad(fnad.jit(f), holomorphic=True)(z), df(z0))
    zs = fnp.asarray(np.array([z0, w0]))
    _close(fnad.jacfwd(f, holomorphic=True)(zs), np.diag(df(np.array([z0, w0]))))
    _close(fnad.jacrev(f, holomorphic=True)(zs), np.diag(df(np.array([z0, w0]))))


def test_holomorphic_errors():
    z, x = fnp.asarray(z0), fnp.asarray(1.0)
    with pytest.raises(TypeError, match="holomorphic=True"):
        fnad.grad(lambda z: z * z)(z)
    with pytest.raises(TypeError, match="requires inputs with complex dtype.*float32"):
        fnad.grad(lambda z: z * z, holomorphic=True)(x)
    with pytest.raises(TypeError, match="complex output"):
        fnad.grad(fnp.abs, holomorphic=True)(z)
    with pytest.raises(TypeError, match="holomorphic=True"):
        fnad.value_and_grad(lambda z: z * 2)(z)
    zs = fnp.asarray(np.array([z0, w0]))
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        fnad.jacfwd(fnp.abs)(zs)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        fnad.jacrev(lambda x: x * 1j)(fnp.ones(2))
    with pytest.raises(TypeError, match="outputs with complex dtype"):
        fnad.jacrev(fnp.abs, holomorphic=True)(zs)
    # what is allowed: jacrev of a real function of complex inputs, jacfwd of a real
    # input to a complex output
    _close(fnad.jacrev(fnp.abs)(zs), np.diag(np.conj([z0, w0]) / np.abs([z0, w0])))
    _close(fnad.jacfwd(lambda x: fnp.exp(1j * x))(fnp.asarray(np.array([0.5, 1.0]))),
           np.diag(1j * np.exp(1j * np.array([0.5, 1.0]))))


# Complex-to-complex maps, holomorphic or not: jvp against central differences along
# the real and the imaginary direction, and vjp against the pairing Re(ct * t).
MAPS = [
    ("exp", fnp.exp), ("log", fnp.log), ("sqrt", fnp.sqrt), ("sin", fnp.sin),
    ("tan", fnp.tan), ("arctan", fnp.arctan), ("arcsinh", fnp.arcsinh),
    ("arccos", fnp.arccos), ("arccosh", fnp.arccosh), ("rsqrt", lax.rsqrt),
    ("conj", fnp.conj), ("abs", lambda z: fnp.abs(z) + 0j), ("sign", fnp.sign),
    ("real", lambda z: fnp.real(z) + 0j), ("imag", lambda z: fnp.imag(z) * 1j),
    ("angle", lambda z: fnp.angle(z) + 0j), ("square", lambda z: z ** 2 * fnp.conj(z)),
    ("div", lambda z: fnp.conj(z) / (z + 2)), ("pow", lambda z: z ** (0.5 + 0.25j)),
    ("complex", lambda z: lax.complex(fnp.imag(z), fnp.real(z) ** 2)),
    ("astype", lambda z: z.astype(np.float64).astype(C128) * 1j),
    ("sum", lambda z: fnp.sum(z * z) * z), ("prod", lambda z: fnp.prod(z) / z),
    ("var", lambda z: fnp.var(z) + z), ("matmul", lambda z: fnp.outer(z, fnp.conj(z)) @ z),
]


def _fd(f, z, t, h=1e-6):
    return (np.asarray(f(fnp.asarray(z + h * t))) - np.asarray(f(fnp.asarray(z - h * t)))) / (
        2 * h)


@pytest.mark.parametrize("name, f", MAPS, ids=[m[0] for m in MAPS])
def test_derivatives_match_finite_differences(name, f):
    z = np.array([0.7 - 1.3j, -0.4 + 0.9j, 1.6 + 0.2j])
    rng = np.random.default_rng(2)
    ct = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    out, pullback = fnad.vjp(f, fnp.asarray(z))
    g, = pullback(fnp.asarray(ct))
    for k in range(3):
        for unit in (1, 1j):
            t = np.zeros(3, complex)
            t[k] = unit
            numeric = _fd(f, z, t)
            _, tangent = fnad.jvp(f, (fnp.asarray(z),), (fnp.asarray(t),))
            np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=1e-6, atol=1e-7)
            # the pullback pairs with tangents as Re(ct * t), no conjugate
            np.testing.assert_allclose(np.real(np.asarray(g)[k] * unit),
                                       np.real(np.sum(ct * numeric)), rtol=1e-6, atol=1e-7)


def test_second_order():
    # d2/dz2 of z^3 = 6z; hessian of a real function of a real input through complex math
    z = fnp.asarray(z0)
    _close(fnad.grad(fnad.grad(lambda z: z ** 3, holomorphic=True), holomorphic=True)(z),
           6 * z0)
    zs = np.array([z0, w0])
    _close(fnad.hessian(lambda z: fnp.sum(z ** 3), holomorphic=True)(fnp.asarray(zs)),
           np.diag(6 * zs))
    x = fnp.asarray(np.array([0.3, 0.5]))
    _close(fnad.hessian(lambda x: fnp.real(fnp.sum(fnp.exp(1j * x))))(x),
           np.diag(-np.cos([0.3, 0.5])))
    # vmap of grad, and grad through lax control flow
    zs = fnp.asarray(Z)
    _close(fnad.vmap(fnad.grad(fnp.abs))(zs), np.conj(Z) / np.abs(Z))
    _close(fnad.grad(lambda z: fnp.real(lax.cond(True, lambda a: a * a, lambda a: a, z)))(z),
           2 * z0)
    carry = lax.scan(lambda c, x: (c * x, None), fnp.asarray(1 + 0j), zs)[0]
    _close(carry, np.prod(Z))
    p = np.prod(Z)      # |p z| -> p conj(p z) / |p z| = |p| conj(z) / |z|
    _close(fnad.grad(lambda z: fnp.abs(lax.scan(lambda c, x: (c * x, None), z, zs)[0]))(z),
           p * np.conj(p * z0) / abs(p * z0))


def test_vjp_cotangent_dtypes():
    z = fnp.asarray(Z.astype(C64))
    _, pullback = fnad.vjp(lambda z: fnp.sum(z) * 2, z)
    _close(pullback(1j)[0], np.full(4, 2j, C64))           # a weak Python complex
    with pytest.raises(DTypeError, match="complex64"):
        pullback(fnp.ones((), C128))
    _, pullback = fnad.vjp(fnp.abs, z)
    with pytest.raises(TypeError):
        pullback(1j)                                          # complex for a real output


def test_jax_agrees():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    z = np.array([0.7 - 1.3j, -0.4 + 0.9j], C64)
    f = lambda m: lambda z: m.sum(m.abs(z) ** 2 + m.real(m.exp(z) * m.sin(z))  # noqa: E731
                                  + m.angle(z) * m.imag(z))
    _close(fnad.grad(f(fnp))(fnp.asarray(z)), np.asarray(jax.grad(f(jnp))(z)))
    # (not arccosh: JAX's derivative of it, 1/sqrt(z^2 - 1), takes the other branch
    # for Re(z) < 0; fnad's 1/(sqrt(z - 1) sqrt(z + 1)) agrees with finite differences)
    h = lambda m: lambda z: m.sum(m.sqrt(z) * m.arcsinh(z) / (z + 1j))  # noqa: E731
    _close(fnad.grad(h(fnp), holomorphic=True)(fnp.asarray(z)),
           np.asarray(jax.grad(h(jnp), holomorphic=True)(z)))
    for fn in ("sign", "sqrt", "arccosh", "log1p", "expm1", "arctanh"):
        _close(getattr(fnp, fn)(fnp.asarray(z)), np.asarray(getattr(jnp, fn)(z)))
    _close(fnad.vjp(fnp.imag, fnp.asarray(z))[1](fnp.ones(2))[0],
           np.asarray(jax.vjp(jnp.imag, z)[1](jnp.ones(2, jnp.float32))[0]))


def test_cuda_backend_refuses_complex():
    gpus = fnad.devices("cuda")
    if not gpus:
        pytest.skip("no cuda device (not even the simulator)")
    x = fnad.device_put(np.ones(3, np.float32), gpus[0])
    with pytest.raises(DTypeError, match="cuda backend does not compute with complex"):
        x * 1j
    with pytest.raises(DTypeError, match="cuda backend does not compute with complex"):
        fnad.jit(lambda x: fnp.abs(x + 1j))(x)


# --------------------------------------------------------------------------- numpy's complex rules

ORDER = np.array([1 + 2j, 1 - 1j, complex(np.nan, 0), 2 + 0j, complex(1, np.nan), 3j,
                  -1 + 5j, complex(np.inf, -1)])


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal",
                                  "maximum", "minimum"])
def test_lexicographic_order_like_numpy(name):
    # real parts first, then imaginary; NaN anywhere as numpy's loops have it
    a, b = ORDER[:, None], ORDER[None, :]
    f, ref = getattr(fnp, name), getattr(np, name)
    with np.errstate(invalid="ignore"):
        want, with_real = ref(a, b), ref(ORDER, 1.0 + 0j)
    for g in (f, fnad.jit(f)):
        got = np.asarray(g(fnp.asarray(a), fnp.asarray(b)))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # with a real operand and a Python scalar
    np.testing.assert_array_equal(np.asarray(f(fnp.asarray(ORDER), 1.0)), with_real)


def test_maximum_gradient_follows_the_chosen_operand():
    a, b = fnp.asarray(np.array([1 + 2j, 0.5 + 9j])), fnp.asarray(np.array([1 + 1j, 2 + 0j]))
    g = fnad.grad(lambda a: fnp.real(fnp.sum(fnp.maximum(a, b) * (1 - 2j))))(a)
    _close(g, np.array([1 - 2j, 0]))


def test_parts_functions_like_numpy():
    z = np.array([1.26 + 2.5j, complex(np.inf, 0), complex(np.nan, -np.inf),
                  complex(0, -np.inf), -0.75 - 0.35j])
    with np.errstate(invalid="ignore"):
        for f, ref in [(fnp.isinf, np.isinf), (fnp.isnan, np.isnan),
                       (fnp.isfinite, np.isfinite), (fnp.nan_to_num, np.nan_to_num),
                       (lambda x: fnp.round(x, 1), lambda x: np.round(x, 1)),
                       (fnp.round, np.round)]:
            want = ref(z)
            for g in (f, fnad.jit(f)):
                np.testing.assert_array_equal(np.asarray(g(fnp.asarray(z))), want)
    _close(fnp.linspace(0, 1 + 1j, 5), np.linspace(0, 1 + 1j, 5).astype(C64))
    # numpy's protocols dispatch to fnad, derivative kept
    zz = fnp.asarray(Z)
    _close(np.conj(zz), np.conj(Z))
    _close(np.real(zz), Z.real)
    _close(fnad.grad(lambda z: np.real(np.conj(z) * z))(fnp.asarray(z0)), 2 * np.conj(z0))


def test_check_grads_on_complex_functions():
    z = fnp.asarray(np.array([0.7 - 1.3j, -0.4 + 0.9j]))
    fnad.test_util.check_grads(lambda z: fnp.exp(z) * fnp.conj(z) + fnp.abs(z), (z,), order=2)
    fnad.test_util.check_grads(lambda x: fnp.exp(1j * x), (fnp.asarray([0.3, 1.1]),),
                               order=2)
    # a wrong rule is caught: conj's derivative taken as the identity
    wrong = fnad.custom_jvp(lambda z: fnp.conj(z))
    wrong.defjvp(lambda primals, tangents: (fnp.conj(primals[0]), tangents[0]))
    for mode in ("fwd", "rev"):
        with pytest.raises(AssertionError):
            fnad.test_util.check_grads(wrong, (z,), order=1, modes=mode)


def test_statistics_of_complex_values():
    # numpy conjugates in cov and takes |x - mean|^2 in the variances (real results)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5))
    a[1, 2] = complex(np.nan, 0)
    clean = a.copy()
    clean[1, 2] = 1 + 1j
    A, C = fnp.asarray(a), fnp.asarray(clean)
    for f, ref, x, xn in [(fnp.cov, np.cov, C, clean), (fnp.corrcoef, np.corrcoef, C, clean),
                          (lambda x: fnp.nanvar(x, axis=1), lambda x: np.nanvar(x, axis=1),
                           A, a),
                          (lambda x: fnp.nanstd(x), np.nanstd, A, a)]:
        _close(f(x), ref(xn))
        _close(fnad.jit(f)(x), ref(xn))
    for f in (fnp.fabs, fnp.signbit, fnp.isposinf, fnp.isneginf):
        with pytest.raises(DTypeError, match="complex128"):
            f(C)


def test_norms_and_vecdot_of_complex_vectors():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    A = fnp.asarray(a)
    for f, ref in [(lambda x: fnp.linalg.norm(x[0]), lambda x: np.linalg.norm(x[0])),
                   (fnp.linalg.norm, np.linalg.norm),
                   (lambda x: fnp.linalg.norm(x, axis=1), lambda x: np.linalg.norm(x, axis=1)),
                   (lambda x: fnp.linalg.vecdot(x, x[::-1]),
                    lambda x: np.linalg.vecdot(x, x[::-1]))]:
        _close(f(A), ref(a))
        _close(fnad.jit(f)(A), ref(a))
    # as for abs: grad of ||z|| is 2 d||z||/dz = conj(z) / ||z||
    _close(fnad.grad(fnp.linalg.norm)(A[0]), np.conj(a[0]) / np.linalg.norm(a[0]))


@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_max_min_of_complex_like_numpy(axis):
    # lexicographic, ties in the real part broken by the imaginary part; a group with a
    # NaN in either part gives its first such element, as numpy's reduction of maximum
    rng = np.random.default_rng(5)
    a = rng.integers(-2, 3, (3, 4, 5)) + 1j * rng.integers(-2, 3, (3, 4, 5))
    a[1, 2, 3], a[1, 0, 4], a[2, 3, 1] = complex(np.nan, 7), complex(3, np.nan), np.nan
    for name in ("max", "min"):
        want = getattr(np, name)(a, axis=axis)
        f = getattr(fnp, name)
        for g in (f, fnad.jit(f, static_argnums=1)):
            np.testing.assert_array_equal(np.asarray(g(fnp.asarray(a), axis)), want)


def test_random_normal_complex():
    key = fnad.random.PRNGKey(0)
    z = fnad.random.normal(key, (20000,), np.complex64)
    assert z.dtype == C64
    zn = np.asarray(z)
    assert abs(np.mean(np.abs(zn) ** 2) - 1) < 0.03        # E|z|^2 = 1
    assert abs(np.mean(zn.real * zn.imag)) < 0.02            # independent parts
    _close(fnad.jit(lambda k: fnad.random.normal(k, (4,), np.complex64))(key), zn[:4])
    jax = pytest.importorskip("jax")
    _close(z[:8], np.asarray(jax.random.normal(jax.random.PRNGKey(0), (20000,),
                                               np.complex64))[:8])


def test_nan_aware_functions_on_complex():
    a = np.array([1 + 1j, complex(np.nan, 0), 2 + 0j, complex(np.nan, 0)])
    b = np.array([complex(np.nan, 1), 3j, 1 + 0j, complex(0, np.nan)])
    A, B = fnp.asarray(a), fnp.asarray(b)
    for name in ("fmax", "fmin"):
        with np.errstate(invalid="ignore"):
            want = getattr(np, name)(a, b)
        np.testing.assert_array_equal(np.asarray(getattr(fnp, name)(A, B)), want)
    assert bool(fnp.array_equal(A, A, equal_nan=True))
    np.testing.assert_array_equal(np.asarray(fnp.unique(A)), np.unique(a))


@pytest.mark.parametrize("mode, kw", [("linear_ramp", dict(end_values=1j)), ("mean", {}),
                                      ("constant", dict(constant_values=2j))])
def test_pad_complex(mode, kw):
    # numpy's ramps and means of complex values are complex (no rounding, no real part)
    a = np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j])
    _close(fnp.pad(fnp.asarray(a), 2, mode=mode, **kw), np.pad(a, 2, mode=mode, **kw))


def test_optimizers_use_the_modulus_of_complex_gradients():
    # second moments and norms of complex values are |g|^2 (optax's rule); with the
    # conjugate of JAX's gradient as the descent direction, adam finds the minimum
    target = np.array([0.5 - 1j, 2 + 0.25j])
    p = {"w": fnp.asarray(np.array([1 + 1j, -2 + 0.5j]))}
    loss = lambda p: fnp.sum(fnp.abs(p["w"] - target) ** 2)  # noqa: E731
    opt = fnad.optim.adam(0.1)
    state = opt.init(p)
    for _ in range(200):
        g = fnad.tree_util.tree_map(fnp.conj, fnad.grad(loss)(p))
        updates, state = opt.update(g, state, p)
        p = fnad.optim.apply_updates(p, updates)
    np.testing.assert_allclose(np.asarray(p["w"]), target, atol=1e-3)
    assert float(fnad.optim.global_norm({"a": fnp.asarray([3 + 4j])})) == 5.0
