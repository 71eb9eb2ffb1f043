"""Complex numbers: complex64/complex128 arrays, promotion, the elementwise math numpy
defines on them, their parts, and derivatives with JAX's conventions (the cotangent of a
complex value pairs with its tangent as Re(ct * t); grad of a real function of z is
conj of 2 dF/dz-bar... checked here by hand and by finite differences in complex128,
along the real and the imaginary direction)."""
import numpy as np
import pytest

import fnad
import fnad.numpy as fnp
from fnad import lax
from fnad.errors import DTypeError, GradientError

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
    _close(x.astype(C128), np.asarray(x).astype(C128))
    _close(z.real, Z.real.astype(np.float32))
    _close(z.imag, Z.imag.astype(np.float32))
    _close(z.conj(), np.conj(Z).astype(C64))
    assert fnp.iscomplexobj(z) and not fnp.iscomplexobj(x)
    np.testing.assert_array_equal(np.asarray(fnp.isreal(fnp.asarray([1 + 0j, 1j]))),
                                  [True, False])


@pytest.mark.parametrize("f", [fnp.floor, fnp.ceil, fnp.cbrt, fnp.fmod, fnp.maximum,
                               fnp.less, fnp.arctan2, fnp.hypot, fnad.scipy.special.erf,
                               fnp.floor_divide],
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
