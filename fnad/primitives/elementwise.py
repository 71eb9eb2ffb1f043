"""Elementwise primitives: a table of derivatives.

Each unary entry gives the numpy kernel, the derivative f'(x) (as a function of
the input and the output, in fnad operations), and the scalar expression the
fusing compiler inlines. Binary entries give both partial derivatives. The JVP
and VJP rules of every entry are made from that one derivative, so the two modes
cannot disagree. Binary primitives broadcast like numpy; their VJPs sum the
cotangent back to each operand's shape. Every primitive here is declared with
elementwise_primitive, so they share one vmap rule.

Complex operands follow JAX's convention: a cotangent pairs with a tangent as
Re(ct * t), with no conjugate, so the holomorphic entries (exp, mul, ...) keep the very
rules of the real case; the functions that are not holomorphic (abs, sign, real, imag,
conj, complex) state their own rules at the end of the table.
"""
import math

import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..abstract import ShapedArray, broadcast_shapes
from ..dtypes import real_dtype, complex_dtype
from ..core import no_derivative
from ..errors import DTypeError
from ..kernels.cpu import elementwise as kernels
from ._rules import broadcasting, add_tangents, drop_identity_operand
from . import onnx_rules as onnx
# convert_element_type is declared with the kit every rule uses, below every family;
# it belongs to this family's namespace all the same.
from .structural import (  # noqa: F401
    elementwise_primitive, broadcast_to, sum_to_shape, convert_element_type_p, real_p)

FLOAT = "f"
INEXACT = "fc"
NUMERIC = "biufc"
INTEGRAL = "biu"
# Ordered kinds: numpy orders complex numbers lexicographically, but the kernels'
# comparisons are on real numbers, so every mode refuses complex operands there.
ORDERED = "biuf"


# --------------------------------------------------------------------------- unary

def unary_shape(name, kinds):
    def abstract_eval(x):
        if dtype_kind(x.dtype) not in kinds:
            raise DTypeError(f"{name} does not accept dtype {x.dtype} (operand {x})")
        return ShapedArray(x.shape, x.dtype)
    return abstract_eval


def unary(name, impl, deriv, scalar, *, kinds=FLOAT, onnx=None, precision=None):
    """deriv(x, out) -> f'(x), or None for a piecewise-constant function."""
    def jvp(primals, tangents):
        x, = primals
        t, = tangents
        out = prim.bind(x)
        if deriv is None:
            return out, None
        return out, t * deriv(x, out)

    def vjp(g, out, x):
        return (g * deriv(x, out),)

    prim = elementwise_primitive(name, abstract_eval=unary_shape(name, kinds), impl=impl,
                                 jvp=jvp, vjp=no_derivative if deriv is None else vjp,
                                 scalar=scalar, onnx=onnx, precision=precision)
    return prim


neg_p = unary("neg", np.negative, lambda x, y: -1, "(-{0})", kinds=NUMERIC, onnx=onnx.node("Neg"))
exp_p = unary("exp", np.exp, lambda x, y: y, "np.exp({0})", kinds=INEXACT, onnx=onnx.node("Exp"),
                precision="float32")
log_p = unary("log", np.log, lambda x, y: 1 / x, "np.log({0})", kinds=INEXACT,
              onnx=onnx.node("Log"),
                precision="float32")
log1p_p = unary("log1p", np.log1p, lambda x, y: 1 / (1 + x), "np.log1p({0})",
                 kinds=INEXACT, onnx=onnx.log1p, precision="float32")
expm1_p = unary("expm1", np.expm1, lambda x, y: y + 1, "np.expm1({0})", kinds=INEXACT,
                onnx=onnx.expm1,
                precision="float32")
sqrt_p = unary("sqrt", np.sqrt, lambda x, y: 0.5 / y, "np.sqrt({0})", kinds=INEXACT,
               onnx=onnx.node("Sqrt"))
rsqrt_p = unary("rsqrt", lambda x: 1 / np.sqrt(x), lambda x, y: -0.5 * y / x,
                "(1 / np.sqrt({0}))", kinds=INEXACT, onnx=onnx.rsqrt, precision="float32")
sin_p = unary("sin", np.sin, lambda x, y: cos_p.bind(x), "np.sin({0})", kinds=INEXACT,
              onnx=onnx.node("Sin"))
cos_p = unary("cos", np.cos, lambda x, y: -sin_p.bind(x), "np.cos({0})", kinds=INEXACT,
              onnx=onnx.node("Cos"))
tan_p = unary("tan", np.tan, lambda x, y: 1 + y * y, "np.tan({0})", kinds=INEXACT,
              onnx=onnx.node("Tan"))
tanh_p = unary("tanh", np.tanh, lambda x, y: 1 - y * y, "np.tanh({0})", kinds=INEXACT,
               onnx=onnx.node("Tanh"))
arcsin_p = unary("arcsin", np.arcsin, lambda x, y: rsqrt_p.bind(1 - x * x),
                 "np.arcsin({0})", kinds=INEXACT, onnx=onnx.node("Asin"))
arccos_p = unary("arccos", np.arccos, lambda x, y: -rsqrt_p.bind(1 - x * x),
                 "np.arccos({0})", kinds=INEXACT, onnx=onnx.node("Acos"))
arctan_p = unary("arctan", np.arctan, lambda x, y: 1 / (1 + x * x), "np.arctan({0})",
                 kinds=INEXACT, onnx=onnx.node("Atan"))
sinh_p = unary("sinh", np.sinh, lambda x, y: cosh_p.bind(x), "np.sinh({0})", kinds=INEXACT,
               onnx=onnx.node("Sinh"))
cosh_p = unary("cosh", np.cosh, lambda x, y: sinh_p.bind(x), "np.cosh({0})", kinds=INEXACT,
               onnx=onnx.node("Cosh"))
arcsinh_p = unary("arcsinh", np.arcsinh, lambda x, y: rsqrt_p.bind(x * x + 1),
                  "np.arcsinh({0})", kinds=INEXACT, onnx=onnx.node("Asinh"))
arctanh_p = unary("arctanh", np.arctanh, lambda x, y: 1 / (1 - x * x), "np.arctanh({0})",
                  kinds=INEXACT, onnx=onnx.node("Atanh"))
# arccosh'(x) = 1 / (sqrt(x - 1) sqrt(x + 1)): one root of x*x - 1 would pick the wrong
# branch for complex x with a negative real part.
arccosh_p = unary("arccosh", np.arccosh,
                  lambda x, y: 1 / (sqrt_p.bind(x - 1) * sqrt_p.bind(x + 1)),
                  "np.arccosh({0})", kinds=INEXACT, onnx=onnx.node("Acosh"))
# logistic'(x) = s(1 - s); the kernel picks the branch that cannot overflow.
logistic_p = unary("logistic", kernels.logistic, lambda x, y: y * (1 - y),
                   "kernels.logistic_scalar({0})", onnx=onnx.node("Sigmoid"))
# erf'(x) = 2/sqrt(pi) exp(-x^2)
erf_p = unary("erf", kernels.erf, lambda x, y: (2 / math.sqrt(math.pi)) * exp_p.bind(-x * x),
              "math.erf({0})", onnx=onnx.node("Erf"))
floor_p = unary("floor", np.floor, None, "np.floor({0})", onnx=onnx.node("Floor"))
ceil_p = unary("ceil", np.ceil, None, "np.ceil({0})", onnx=onnx.node("Ceil"))
# cbrt'(x) = 1 / (3 cbrt(x)^2). Numba's np.cbrt is a power of 1/3 (several ulps off near
# the largest floats, and cbrt(-0.0) = 0.0): the helper is numpy's to half an ulp.
cbrt_p = unary("cbrt", kernels.cbrt, lambda x, y: 1 / (3 * y * y), "kernels.cbrt_scalar({0})",
               onnx=onnx.cbrt)


# lax.round's rounding_method: JAX's lax.RoundingMethod values.
AWAY_FROM_ZERO, TO_NEAREST_EVEN = 0, 1


def _round_shape(x, rounding_method):
    if dtype_kind(x.dtype) != "f":
        raise DTypeError(f"round does not accept dtype {x.dtype} (operand {x})")
    if rounding_method not in (AWAY_FROM_ZERO, TO_NEAREST_EVEN):
        raise ValueError(f"round: rounding_method must be AWAY_FROM_ZERO (0) or "
                         f"TO_NEAREST_EVEN (1), got {rounding_method!r}")
    return ShapedArray(x.shape, x.dtype)


# Halves away from zero (C's round, lax.round's default) or to even (numpy's round).
round_p = elementwise_primitive(
    "round", abstract_eval=_round_shape,
    impl=lambda x, rounding_method: (kernels.real_operands(x) or np.round(x)
                                     if rounding_method == TO_NEAREST_EVEN
                                     else kernels.round_away(x)),
    jvp=lambda primals, tangents, **params: (round_p.bind(*primals, **params), None),
    vjp=lambda g, out, x, **params: (None,),
    scalar="kernels.round_scalar({0}, {rounding_method})", onnx=onnx.round_)
not_p = unary("not", np.invert, None, "(~{0})", kinds=INTEGRAL, onnx=onnx.not_)
is_finite_p = elementwise_primitive(
    "is_finite",
    abstract_eval=lambda x: ShapedArray(x.shape, np.bool_),
    impl=np.isfinite,
    jvp=lambda primals, tangents: (is_finite_p.bind(*primals), None),
    vjp=lambda g, out, x: (None,),
    scalar="np.isfinite({0})", onnx=onnx.is_finite)


def _integer_pow_deriv_jvp(primals, tangents, y):
    x, = primals
    t, = tangents
    out = integer_pow_p.bind(x, y=y)
    return out, t * _integer_pow_deriv(x, y)


def _integer_pow_deriv(x, y):
    if y == 0:
        return 0 * x
    if y == 1:
        return 1 + 0 * x
    if y == 2:
        return 2 * x
    return y * integer_pow_p.bind(x, y=y - 1)


integer_pow_p = elementwise_primitive(
    "integer_pow",
    abstract_eval=lambda x, y: ShapedArray(x.shape, x.dtype),
    impl=lambda x, y: np.square(x) if y == 2 else np.power(x, y),
    jvp=_integer_pow_deriv_jvp,
    vjp=lambda g, out, x, y: (g * _integer_pow_deriv(x, y),),
    scalar="({0} ** {y})", onnx=onnx.integer_pow)


# --------------------------------------------------------------------------- binary

def binary(name, impl, dx, dy, scalar, *, kinds=NUMERIC, out_dtype=None, simplify=None,
           onnx=None, precision=None):
    """dx(x, y, out), dy(x, y, out): the partial derivatives; None for no derivative."""
    def jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y)
        if dx is None:
            return out, None
        t = add_tangents(None if tx is None else tx * dx(x, y, out),
                         None if ty is None else ty * dy(x, y, out))
        return out, broadcast_to(t, out.shape)

    def vjp(g, out, x, y, needed=(True, True)):
        if dx is None:
            return None, None
        ct_x = ct_y = None
        if needed[0]:
            ct_x = g * dx(x, y, out)
            if ct_x.shape != x.shape:
                ct_x = sum_to_shape(ct_x, x.shape)
        if needed[1]:
            ct_y = g * dy(x, y, out)
            if ct_y.shape != y.shape:
                ct_y = sum_to_shape(ct_y, y.shape)
        return ct_x, ct_y

    prim = elementwise_primitive(
        name, abstract_eval=broadcasting(name, kinds=kinds, out_dtype=out_dtype), impl=impl,
        jvp=jvp, vjp=vjp, scalar=scalar, simplify=simplify, selective_vjp=True, onnx=onnx,
        precision=precision)
    return prim


def _linear_binary(name, impl, sign_y, scalar, simplify, onnx=None):
    """add and sub: derivatives are the identity, so skip the multiplications."""
    def jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y)
        if ty is not None and sign_y < 0:
            ty = -ty
        return out, broadcast_to(add_tangents(tx, ty), out.shape)

    def vjp(g, out, x, y, needed=(True, True)):
        return (sum_to_shape(g, x.shape) if needed[0] else None,
                (sum_to_shape(g if sign_y > 0 else -g, y.shape) if needed[1] else None))

    prim = elementwise_primitive(
        name, abstract_eval=broadcasting(name, kinds=NUMERIC), impl=impl, jvp=jvp, vjp=vjp,
        scalar=scalar, simplify=simplify, selective_vjp=True, onnx=onnx)
    return prim


# The algebra the jit optimizer removes: adding zero, multiplying or dividing by one.
# Adding -0.0 (not +0.0) is the identity on floats: -0.0 + 0.0 is +0.0.
add_p = _linear_binary("add", np.add, +1, "({0} + {1})",
                       simplify=drop_identity_operand(-0.0, (0, 1)), onnx=onnx.node("Add"))
sub_p = _linear_binary("sub", np.subtract, -1, "({0} - {1})",
                       simplify=drop_identity_operand(0, (1,)), onnx=onnx.node("Sub"))
mul_p = binary("mul", np.multiply, lambda x, y, o: y, lambda x, y, o: x, "({0} * {1})",
               simplify=drop_identity_operand(1, (0, 1)), onnx=onnx.node("Mul"))
div_p = binary("div", np.divide, lambda x, y, o: 1 / y, lambda x, y, o: -o / y,
               "({0} / {1})", kinds=INEXACT, simplify=drop_identity_operand(1, (1,)),
               onnx=onnx.node("Div"))
# d/dy x^y = log(x) x^y, taken as 0 where x = 0 (the limit along y > 0).
pow_p = binary("pow", np.power,
               lambda x, y, o: y * pow_p.bind(x, y - 1),
               lambda x, y, o: select_p.bind(x == 0, 0 * o, o * log_p.bind(
                   select_p.bind(x == 0, 1 + 0 * x, x))),
               "({0} ** {1})", kinds=INEXACT, onnx=onnx.node("Pow"), precision="float32")
# Integer arithmetic that numpy and JAX keep exact (no derivative: integers are
# constants to differentiation). integer_power is x ** y, wrapping around like numpy's;
# a negative exponent gives the real power truncated toward zero (numpy raises, and so
# does fnad.numpy.power for a concrete one; this is what JAX gives under jit).
# integer_div is lax.div: C's division, toward zero, x / 0 all bits set, as XLA.
integer_power_p = binary("integer_power", kernels.integer_power, None, None,
                         "kernels.integer_power_scalar({0}, {1})", kinds="iu",
                         onnx=onnx.node("Pow"))
integer_div_p = binary("integer_div", kernels.truncate_divide, None, None,
                       "kernels.truncate_divide_scalar({0}, {1})", kinds="iu",
                       onnx=onnx.node("Div"))
# hypot'(x, y) = (x, y) / hypot: the library's hypot never overflows in x*x + y*y, and
# hypot(inf, nan) is inf, as numpy's.
hypot_p = binary("hypot", np.hypot, lambda x, y, o: x / o, lambda x, y, o: y / o,
                 "math.hypot({0}, {1})", kinds=FLOAT, onnx=onnx.hypot)
def _real_only(impl):
    """A kernel numpy would also run on complex numbers (in lexicographic order): the
    fused kernels order real numbers only, so every mode refuses complex ones."""
    def run(*xs, **params):
        kernels.real_operands(*xs)
        return impl(*xs, **params)
    return run


# Ties split the derivative evenly, so max(x, x) has derivative 1 in x. NaN in either
# operand gives NaN, as in numpy (the kernels' helpers, not Python's max).
max_p = binary("max", _real_only(np.maximum),
               lambda x, y, o: _indicator(x > y, o) + 0.5 * _indicator(x == y, o),
               lambda x, y, o: _indicator(x < y, o) + 0.5 * _indicator(x == y, o),
               "kernels.maximum_scalar({0}, {1})", kinds=ORDERED, onnx=onnx.maximum)
min_p = binary("min", _real_only(np.minimum),
               lambda x, y, o: _indicator(x < y, o) + 0.5 * _indicator(x == y, o),
               lambda x, y, o: _indicator(x > y, o) + 0.5 * _indicator(x == y, o),
               "kernels.minimum_scalar({0}, {1})", kinds=ORDERED, onnx=onnx.minimum)


def _indicator(mask, like):
    """A boolean mask as 0/1 in like's dtype."""
    return convert_element_type_p.bind(mask, new_dtype=like.dtype)
# atan2(x, y) = angle of the point (y, x): d/dx = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2)
atan2_p = binary("atan2", np.arctan2,
                 lambda x, y, o: y / (x * x + y * y),
                 lambda x, y, o: -x / (x * x + y * y),
                 "np.arctan2({0}, {1})", kinds=FLOAT, onnx=onnx.atan2)
# C's fmod: the result has the sign of x; x = trunc(x / y) * y + rem.
rem_p = binary("rem", np.fmod, lambda x, y, o: 1 + 0 * o, lambda x, y, o: -_trunc(x / y),
               "kernels.fmod_scalar({0}, {1})", kinds=ORDERED, onnx=onnx.rem)
# numpy's floor_divide and remainder (Python's // and %): x = floor_divide * y +
# remainder, the remainder taking the sign of y. Integers stay in integer arithmetic
# in every width; a zero divisor gives 0 for integers and inf/nan for floats, and
# iinfo.min // -1 wraps around, all as numpy. Floats use numpy's divmod algorithm
# (fmod, then a correction), so 1.0 // 0.1 is 9.0, not floor(1.0 / 0.1) = 10.0.
# Numba's % (cpu and cuda) already is numpy's remainder, zero divisors included; its //
# is too but for iinfo(int64).min // -1, which the helper handles.
floor_divide_p = binary("floor_divide", np.floor_divide, None, None,
                        "kernels.floor_divide_scalar({0}, {1})", kinds="iuf",
                        onnx=onnx.floor_divide)
remainder_p = binary("remainder", np.remainder, lambda x, y, o: 1 + 0 * o,
                     lambda x, y, o: -floor_divide_p.bind(x, y), "({0} % {1})", kinds="iuf",
                     onnx=onnx.remainder)


def _trunc(x):
    return select_p.bind(x < 0, ceil_p.bind(x), floor_p.bind(x))


def _comparison(name, impl, op, kinds=ORDERED, onnx=None):
    return binary(name, impl, None, None, f"({{0}} {op} {{1}})", kinds=kinds,
                  out_dtype=np.dtype(np.bool_), onnx=onnx)


eq_p = _comparison("eq", np.equal, "==", kinds=NUMERIC, onnx=onnx.node("Equal"))
ne_p = _comparison("ne", np.not_equal, "!=", kinds=NUMERIC, onnx=onnx.ne)
lt_p = _comparison("lt", _real_only(np.less), "<", onnx=onnx.node("Less"))
le_p = _comparison("le", _real_only(np.less_equal), "<=", onnx=onnx.node("LessOrEqual"))
gt_p = _comparison("gt", _real_only(np.greater), ">", onnx=onnx.node("Greater"))
ge_p = _comparison("ge", _real_only(np.greater_equal), ">=", onnx=onnx.node("GreaterOrEqual"))
and_p = binary("and", np.bitwise_and, None, None, "({0} & {1})", kinds=INTEGRAL, onnx=onnx.and_)
or_p = binary("or", np.bitwise_or, None, None, "({0} | {1})", kinds=INTEGRAL, onnx=onnx.or_)
xor_p = binary("xor", np.bitwise_xor, None, None, "({0} ^ {1})", kinds=INTEGRAL, onnx=onnx.xor)


# --------------------------------------------------------------------------- select, clamp

def _select_shape(pred, on_true, on_false):
    if pred.dtype != np.bool_:
        raise DTypeError(f"select needs a boolean predicate, got {pred}")
    out = broadcasting("select")(on_true, on_false)
    return ShapedArray(broadcast_shapes("select", pred.shape, out.shape), out.dtype)


def _select_jvp(primals, tangents):
    pred, a, b = primals
    _, ta, tb = tangents
    out = select_p.bind(pred, a, b)
    if ta is None and tb is None:
        return out, None
    zero = 0 * out
    return out, select_p.bind(pred, zero if ta is None else ta, zero if tb is None else tb)


def _select_vjp(g, out, pred, a, b, needed=(False, True, True)):
    zero = np.zeros((), g.dtype)    # select broadcasts: no array of zeros needed
    return (None,
            sum_to_shape(select_p.bind(pred, g, zero), a.shape) if needed[1] else None,
            sum_to_shape(select_p.bind(pred, zero, g), b.shape) if needed[2] else None)


select_p = elementwise_primitive("select", abstract_eval=_select_shape, impl=np.where,
                                 jvp=_select_jvp, vjp=_select_vjp,
                                 scalar="({1} if {0} else {2})", selective_vjp=True,
                                 onnx=onnx.select)


# --------------------------------------------------------------------------- relu

def _relu_on(out):
    """Where relu passes its input: out > 0 (false at 0 and NaN, as JAX's derivative).
    Read off the output, so reverse mode keeps the output (which the next layer keeps
    anyway) instead of a mask or the input."""
    return gt_p.bind(out, np.zeros((), out.dtype))


def _relu_jvp(primals, tangents):
    out = relu_p.bind(primals[0])
    t, = tangents
    return out, None if t is None else select_p.bind(_relu_on(out), t, np.zeros((), t.dtype))


def _relu_vjp(g, out, x):
    return (select_p.bind(_relu_on(out), g, np.zeros((), g.dtype)),)


relu_p = elementwise_primitive("relu", abstract_eval=unary_shape("relu", FLOAT),
                               impl=kernels.relu, jvp=_relu_jvp, vjp=_relu_vjp,
                               scalar="kernels.relu_scalar({0})", onnx=onnx.relu,
                               # under autocast its result feeds the next product: rounding
                               # commutes with relu, and one 16-bit output is what the
                               # backward pass then keeps
                               precision="low")


def _clamp_masks(lo, x, hi):
    below, above = x < lo, x > hi
    return below, above, ~(below | above)


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    below, above, inside = _clamp_masks(lo, x, hi)
    t_lo, t_x, t_hi = tangents
    t = add_tangents(None if t_x is None else t_x * _indicator(inside, out),
                     add_tangents(None if t_lo is None else t_lo * _indicator(below, out),
                                  None if t_hi is None else t_hi * _indicator(above, out)))
    return out, broadcast_to(t, out.shape)


def _clamp_vjp(g, out, lo, x, hi):
    below, above, inside = _clamp_masks(lo, x, hi)
    return (sum_to_shape(g * _indicator(below, g), lo.shape),
            sum_to_shape(g * _indicator(inside, g), x.shape),
            sum_to_shape(g * _indicator(above, g), hi.shape))


clamp_p = elementwise_primitive(
    "clamp", abstract_eval=broadcasting("clamp", kinds=ORDERED),
    impl=_real_only(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi)), jvp=_clamp_jvp,
    vjp=_clamp_vjp,
    scalar="kernels.minimum_scalar(kernels.maximum_scalar({1}, {0}), {2})", onnx=onnx.clamp)


# The identity with no derivative: differentiation treats the value as a constant.
stop_gradient_p = unary("stop_gradient", lambda x: x, None, "{0}", kinds=NUMERIC,
                        onnx=onnx.node("Identity"))


# --------------------------------------------------------------------------- complex numbers
# The cotangent of a complex value pairs with its tangent as Re(ct * t), no conjugate
# (JAX's convention). Holomorphic primitives (exp, mul, ...) keep their real rules; the
# ones below are not holomorphic, so each states its own transpose.

def _complex_only(name, to_real):
    def abstract_eval(x):
        if dtype_kind(x.dtype) != "c":
            raise DTypeError(f"{name} needs a complex operand, got {x}")
        return ShapedArray(x.shape, real_dtype(x.dtype) if to_real else x.dtype)
    return abstract_eval


def _embed(g, like):
    """A real cotangent as the complex one pairing the same way: g + 0j."""
    return convert_element_type_p.bind(g, new_dtype=like.dtype)


def _linear_unary(name, impl, abstract_eval, transpose, scalar):
    def jvp(primals, tangents):
        return prim.bind(*primals), prim.bind(*tangents)

    prim = elementwise_primitive(name, abstract_eval=abstract_eval, impl=impl, jvp=jvp,
                                 vjp=lambda g, out, x: (transpose(g, x),), scalar=scalar)
    return prim


# (real, the other half of the pair, is declared with the conversions it pairs with.)
# Re(ct_z * t) = g Im(t) gives ct_z = -i g; for conj, ct_z = conj(g).
imag_p = _linear_unary("imag", kernels.complex_only(np.imag), _complex_only("imag", True),
                       lambda g, x: complex_p.bind(np.zeros((), g.dtype), -g), "{0}.imag")
conj_p = _linear_unary("conj", kernels.complex_only(np.conj), _complex_only("conj", False),
                       lambda g, x: conj_p.bind(g), "{0}.conjugate()")


def _complex_shape(re, im):
    out = broadcasting("complex", kinds="f")(re, im)
    if out.dtype == np.float16:
        raise DTypeError(f"complex needs float32 or float64 parts, got {re} and {im}")
    return ShapedArray(out.shape, complex_dtype(out.dtype))


def _complex_jvp(primals, tangents):
    re, im = primals
    t_re, t_im = tangents
    out = complex_p.bind(re, im)
    if t_re is None and t_im is None:
        return out, None
    zero = np.zeros((), re.dtype)
    return out, broadcast_to(complex_p.bind(zero if t_re is None else t_re,
                                            zero if t_im is None else t_im), out.shape)


def _complex_vjp(g, out, re, im, needed=(True, True)):
    # Re(g (t_re + i t_im)) = Re(g) t_re - Im(g) t_im
    return (sum_to_shape(real_p.bind(g), re.shape) if needed[0] else None,
            sum_to_shape(-imag_p.bind(g), im.shape) if needed[1] else None)


# complex(re, im) = re + i im, lax.complex. Numba's complex() makes a complex128; the
# kernels round a complex64 result once, as numpy does.
complex_p = elementwise_primitive(
    "complex", abstract_eval=_complex_shape,
    impl=lambda re, im: kernels.make_complex(re, im),
    jvp=_complex_jvp, vjp=_complex_vjp, scalar="complex({0}, {1})", selective_vjp=True)


# |x|: real for complex x. d|z| = Re(conj(z) t) / |z|, so the cotangent is g conj(z)/|z|;
# both are taken as 0 at z = 0, as JAX does (the real case: sign(x), also 0 at 0).
def _abs_shape(x):
    if dtype_kind(x.dtype) not in NUMERIC:
        raise DTypeError(f"abs does not accept dtype {x.dtype} (operand {x})")
    return ShapedArray(x.shape, real_dtype(x.dtype))


def _unit(x, out):
    """x / |x| (0 at 0): sign(x), or the complex phase."""
    if dtype_kind(x.dtype) != "c":
        return sign_p.bind(x)
    zero = out == 0
    safe = select_p.bind(zero, np.ones((), out.dtype), out)
    return select_p.bind(zero, np.zeros((), x.dtype), x / _embed(safe, x))


# sign(-0.0) is +0.0 in numpy; Numba's np.sign keeps the sign of the zero (the helper).
# A complex sign is s = z / |z| (0 at 0), numpy's and JAX's. Its derivative is not zero
# as a real sign's is (JAX takes it as zero): ds = (t - s Re(conj(s) t)) / |z|, and the
# cotangent is (g - Re(g s) conj(s)) / |z|; both 0 at z = 0.
def _sign_jvp(primals, tangents):
    x, = primals
    t, = tangents
    out = sign_p.bind(x)
    if dtype_kind(x.dtype) != "c" or t is None:
        return out, None
    r = abs_p.bind(x)
    along = _embed(real_p.bind(conj_p.bind(out) * t), x)
    return out, (t - out * along) * _embed(_reciprocal_or_zero(r), x)


def _sign_vjp(g, out, x):
    if dtype_kind(x.dtype) != "c":
        return (None,)
    r = abs_p.bind(x)
    along = _embed(real_p.bind(g * out), x)
    return ((g - along * conj_p.bind(out)) * _embed(_reciprocal_or_zero(r), x),)


def _reciprocal_or_zero(r):
    zero = r == 0
    return select_p.bind(zero, np.zeros((), r.dtype),
                         1 / select_p.bind(zero, np.ones((), r.dtype), r))


sign_p = elementwise_primitive(
    "sign", abstract_eval=unary_shape("sign", NUMERIC), impl=kernels.sign, jvp=_sign_jvp,
    vjp=_sign_vjp, scalar="kernels.sign_scalar({0})", onnx=onnx.sign)


def _abs_jvp(primals, tangents):
    x, = primals
    t, = tangents
    out = abs_p.bind(x)
    if dtype_kind(x.dtype) != "c":
        return out, t * sign_p.bind(x)
    return out, real_p.bind(conj_p.bind(_unit(x, out)) * t)


def _abs_vjp(g, out, x):
    if dtype_kind(x.dtype) != "c":
        return (g * sign_p.bind(x),)
    return (_embed(g, x) * conj_p.bind(_unit(x, out)),)


abs_p = elementwise_primitive("abs", abstract_eval=_abs_shape, impl=np.abs, jvp=_abs_jvp,
                              vjp=_abs_vjp, scalar="np.abs({0})", onnx=onnx.node("Abs"))


def convert(x, new_dtype):
    """x in new_dtype, by numpy's rules for complex x: to bool it is x != 0, to another
    real dtype its real part (taken with real, whose transpose embeds the cotangent)."""
    new_dtype = np.dtype(new_dtype)
    if dtype_kind(x.dtype) == "c" and new_dtype.kind != "c":
        if new_dtype.kind == "b":
            return ne_p.bind(x, np.zeros((), x.dtype))
        x = real_p.bind(x)
    return convert_element_type_p.bind(x, new_dtype=new_dtype)
