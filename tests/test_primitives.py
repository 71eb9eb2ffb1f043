"""Registry-driven tests of the primitives.

Every declared primitive must carry all its rules. Every elementwise, shape,
reduce and dot primitive has an entry in TABLE: cases (arguments in the
primitive's domain and static parameters) and a numpy reference. One generic
sweep checks each case: the kernel against numpy, the shape rule against the
kernel's output, derivatives against finite differences (to second order, both
modes, in float64), and float32 in -> float32 out, values and derivatives.
"""
import builtins
import math
from dataclasses import dataclass, field

import numpy as np
import pytest

import fnad
from fnad import core
from fnad.abstract import ShapedArray
from fnad.primitives import elementwise, shape, reduce, dot
from fnad.test_util import check_grads

FAMILIES = (elementwise, shape, reduce, dot)


def test_every_primitive_has_every_rule():
    missing = [(name, rule) for name, prim in core.PRIMITIVES.items()
               for rule in core.RULES if not callable(getattr(prim, rule, None))]
    assert not missing, f"primitives lacking rules: {missing}"
    assert len(core.PRIMITIVES) > 60


def test_registry_names_match():
    for name, prim in core.PRIMITIVES.items():
        assert isinstance(prim, core.Primitive) and prim.name == name


# --------------------------------------------------------------------------- the table

@dataclass
class Case:
    args: object                 # rng -> tuple of float64 (or bool/int) numpy arrays
    params: dict = field(default_factory=dict)
    ref: object = None           # overrides the entry's reference
    label: str = ""
    grad: str = None             # overrides the entry's grad


@dataclass
class Entry:
    ref: object                  # numpy reference: ref(*args, **params)
    cases: list
    grad: str = "check"          # "check": finite differences; "zero": none; "none": skip
    diff_argnums: tuple = None   # operands to differentiate (default: all float ones)
    float32: bool = True         # float64 cases also run in float32
    rtol32: float = 1e-5


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def uniform(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


def away_from_integers(lo, hi, *shape, frac=(0.1, 0.9)):
    """Values whose fractional part stays in frac: piecewise-constant ops are smooth there."""
    return lambda rng: rng.integers(lo, hi, shape) + rng.uniform(*frac, shape)


def signed(lo, hi, *shape):
    """Magnitudes in [lo, hi) with random signs."""
    return lambda rng: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def complex_normal(*shape):
    return lambda rng: rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def args_of(*makers):
    return lambda rng: tuple(m(rng) for m in makers)


UNARY_SHAPES = [(), (3, 4)]
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3))]


def unary(ref, domain=normal, **kw):
    return Entry(ref, [Case(args_of(domain(*s)), label=str(s)) for s in UNARY_SHAPES], **kw)


def binary(ref, dom_x=normal, dom_y=None, **kw):
    dom_y = dom_y or dom_x
    return Entry(ref, [Case(args_of(dom_x(*sx), dom_y(*sy)), label=f"{sx}x{sy}")
                       for sx, sy in BINARY_SHAPES], **kw)


def comparison(ref):
    def ties(*s):
        return lambda rng: rng.integers(-2, 3, s).astype(np.float64)
    return binary(ref, ties, grad="none")


def int32s(*shape):
    return lambda rng: rng.integers(-8, 8, shape).astype(np.int32)


def bools(*shape):
    return lambda rng: rng.random(shape) < 0.5


def bitwise(ref):
    return Entry(ref, [Case(args_of(int32s(*s), int32s(*t)), label=f"int{s}x{t}")
                       for s, t in BINARY_SHAPES]
                 + [Case(args_of(bools(3, 4), bools(3, 4)), label="bool")],
                 grad="none", float32=False)


def erf_ref(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def pad_ref(x, v, padding_config):
    """Interior padding, then edge padding; negative edges crop."""
    out = x
    for axis, (lo, hi, interior) in enumerate(padding_config):
        out = np.moveaxis(out, axis, 0)
        n = out.shape[0]
        spread = np.full((n + builtins.max(n - 1, 0) * interior,) + out.shape[1:], v, x.dtype)
        spread[::interior + 1] = out
        spread = np.concatenate([np.full((builtins.max(lo, 0),) + out.shape[1:], v, x.dtype),
                                 spread,
                                 np.full((builtins.max(hi, 0),) + out.shape[1:], v, x.dtype)])
        out = np.moveaxis(spread[-builtins.min(lo, 0):len(spread) + builtins.min(hi, 0)], 0, axis)
    return out


def reduction(ref, domain=normal, shapes_axes=None, **kw):
    shapes_axes = shapes_axes or [((3, 4), (0,)), ((3, 4), (1,)), ((2, 3, 4), (0, 2)),
                                  ((2, 3, 4), (0, 1, 2)), ((3, 4), ())]
    return Entry(lambda x, axes: ref(x, axis=axes),
                 [Case(args_of(domain(*s)), dict(axes=axes), label=f"{s}axes{axes}")
                  for s, axes in shapes_axes], **kw)


def along(ufunc_accumulate):
    def ref(x, axis, reverse):
        if reverse:
            return np.flip(ufunc_accumulate(np.flip(x, axis), axis=axis), axis)
        return ufunc_accumulate(x, axis=axis)
    return ref


def cumulative(accumulate, domain=normal):
    return Entry(along(accumulate),
                 [Case(args_of(domain(*s)), dict(axis=axis, reverse=rev),
                       label=f"{s}axis{axis}{'rev' if rev else ''}")
                  for s, axis, rev in [((5,), 0, False), ((5,), 0, True), ((3, 4), 0, False),
                                       ((3, 4), 1, False), ((3, 4), 1, True),
                                       ((2, 3, 4), 2, True)]])


def arg_reduction(ref):
    return Entry(lambda x, axis, index_dtype: ref(x, axis=axis).astype(index_dtype),
                 [Case(args_of(normal(*s)), dict(axis=axis, index_dtype=np.dtype(np.int64)),
                       label=f"{s}axis{axis}")
                  for s, axis in [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 2)]],
                 grad="none")


def dot_case(lhs, rhs, dims, subscripts):
    return Case(args_of(normal(*lhs), normal(*rhs)), dict(dimension_numbers=dims),
                ref=lambda a, b, dimension_numbers: np.einsum(subscripts, a, b), label=subscripts)


def _select_case(s_pred, s_true, s_false):
    return Case(args_of(bools(*s_pred), normal(*s_true), normal(*s_false)),
                label=f"{s_pred}{s_true}{s_false}")


def _clamp_case(s_lo, s_x, s_hi):
    return Case(args_of(uniform(-0.9, -0.6, *s_lo), normal(*s_x), uniform(0.6, 0.9, *s_hi)),
                label=f"{s_lo}{s_x}{s_hi}")


def _convert(new_dtype, make, label):
    return Case(args_of(make), dict(new_dtype=np.dtype(new_dtype)), label=label)


def _integer_pow(y, domain):
    return Case(args_of(domain), dict(y=y), label=f"y={y}")


TABLE = {
    # ---- elementwise, unary
    "neg": unary(np.negative),
    "exp": unary(np.exp),
    "log": unary(np.log, lambda *s: uniform(0.2, 3, *s)),
    "log1p": unary(np.log1p, lambda *s: uniform(-0.8, 3, *s)),
    "expm1": unary(np.expm1),
    "sqrt": unary(np.sqrt, lambda *s: uniform(0.2, 3, *s)),
    "rsqrt": unary(lambda x: 1 / np.sqrt(x), lambda *s: uniform(0.2, 3, *s)),
    "sin": unary(np.sin),
    "cos": unary(np.cos),
    "tan": unary(np.tan, lambda *s: uniform(-1.2, 1.2, *s)),
    "tanh": unary(np.tanh),
    "arcsin": unary(np.arcsin, lambda *s: uniform(-0.9, 0.9, *s)),
    "arccos": unary(np.arccos, lambda *s: uniform(-0.9, 0.9, *s)),
    "arctan": unary(np.arctan),
    "sinh": unary(np.sinh),
    "cosh": unary(np.cosh),
    "arcsinh": unary(np.arcsinh),
    "arctanh": unary(np.arctanh, lambda *s: uniform(-0.9, 0.9, *s)),
    "logistic": unary(lambda x: 1 / (1 + np.exp(-x)), lambda *s: signed(0, 5, *s)),
    "erf": unary(erf_ref),
    "abs": unary(np.abs, lambda *s: signed(0.1, 2, *s)),
    "relu": unary(lambda x: np.where(x <= 0, 0.0, x), lambda *s: signed(0.1, 2, *s)),
    "sign": unary(np.sign, lambda *s: signed(0.1, 2, *s)),
    "floor": unary(np.floor, lambda *s: away_from_integers(-3, 3, *s)),
    "ceil": unary(np.ceil, lambda *s: away_from_integers(-3, 3, *s)),
    # Away from the halves, where rounding jumps; exactly on them in the "halves" cases.
    "round": Entry(lambda x, rounding_method: np.round(x), [
        Case(args_of(away_from_integers(-3, 3, *s, frac=(0.1, 0.4))),
             dict(rounding_method=m), label=f"{s}method{m}") for s in UNARY_SHAPES
        for m in (0, 1)] + [
        Case(lambda rng: (np.array([0.5, -0.5, 1.5, -2.5, 2.5, -0.0]),),
             dict(rounding_method=0), label="halves away", grad="none",
             ref=lambda x, rounding_method: np.copysign(np.floor(np.abs(x) + 0.5), x)),
        Case(lambda rng: (np.array([0.5, -0.5, 1.5, -2.5, 2.5, -0.0]),),
             dict(rounding_method=1), label="halves to even", grad="none")]),
    "cbrt": unary(np.cbrt, lambda *s: signed(0.3, 2, *s)),
    "not": Entry(np.invert, [Case(args_of(int32s(3, 4)), label="int32"),
                             Case(args_of(bools(3, 4)), label="bool")],
                 grad="none", float32=False),
    "is_finite": Entry(np.isfinite, [Case(
        lambda rng: (np.array([0.0, np.inf, -np.inf, np.nan, 1e30]),), label="specials")],
        grad="none"),
    "integer_pow": Entry(lambda x, y: x ** y,
                         [_integer_pow(0, normal(3, 4)), _integer_pow(1, normal(3, 4)),
                          _integer_pow(2, normal(3, 4)), _integer_pow(3, normal(3, 4)),
                          _integer_pow(-2, signed(0.5, 2, 3, 4))]),
    "stop_gradient": unary(lambda x: x, grad="zero"),
    "arccosh": unary(np.arccosh, lambda *s: uniform(1.2, 3, *s)),
    # complex numbers (derivatives: tests/test_complex.py, by hand and finite differences)
    "complex": binary(lambda re, im: re + 1j * im, grad="none"),
    "real": Entry(np.real, [Case(args_of(complex_normal(3, 4)))], grad="none"),
    "imag": Entry(np.imag, [Case(args_of(complex_normal(3, 4)))], grad="none"),
    "conj": Entry(np.conj, [Case(args_of(complex_normal(3, 4)))], grad="none"),
    # ---- elementwise, binary
    "add": binary(np.add),
    "sub": binary(np.subtract),
    "mul": binary(np.multiply),
    "div": binary(np.divide, normal, lambda *s: signed(0.5, 2, *s)),
    "pow": binary(np.power, lambda *s: uniform(0.3, 2, *s)),
    "hypot": binary(np.hypot, lambda *s: signed(0.3, 2, *s)),
    "integer_power": Entry(np.power, [
        Case(args_of(int32s(*s), lambda rng, t=t: rng.integers(0, 9, t).astype(np.int32)),
             label=f"int{s}x{t}") for s, t in BINARY_SHAPES], grad="none", float32=False),
    # C's division: toward zero (both signs of both operands, no zero divisor here)
    "integer_div": Entry(lambda x, y: (np.abs(x) // np.abs(y) * np.sign(x) * np.sign(y)
                                       ).astype(x.dtype), [
        Case(args_of(int32s(*s), lambda rng, t=t: (rng.integers(1, 5, t) * rng.choice(
            [-1, 1], t)).astype(np.int32)), label=f"int{s}x{t}") for s, t in BINARY_SHAPES],
        grad="none", float32=False),
    "max": binary(np.maximum),
    "min": binary(np.minimum),
    "atan2": binary(np.arctan2, lambda *s: signed(0.3, 2, *s)),
    # x / y stays in (2.1, 2.9) in magnitude, away from fmod's jumps.
    "rem": binary(np.fmod, lambda *s: signed(2.3, 2.7, *s), lambda *s: uniform(0.95, 1.05, *s)),
    # Both signs of both operands, away from the quotient's integer jumps.
    "floor_divide": binary(np.floor_divide, lambda *s: signed(2.3, 2.7, *s),
                           lambda *s: signed(0.95, 1.05, *s), grad="zero"),
    "remainder": binary(np.remainder, lambda *s: signed(2.3, 2.7, *s),
                        lambda *s: signed(0.95, 1.05, *s)),
    "eq": comparison(np.equal),
    "ne": comparison(np.not_equal),
    "lt": comparison(np.less),
    "le": comparison(np.less_equal),
    "gt": comparison(np.greater),
    "ge": comparison(np.greater_equal),
    "and": bitwise(np.bitwise_and),
    "or": bitwise(np.bitwise_or),
    "xor": bitwise(np.bitwise_xor),
    "select": Entry(np.where, [_select_case((3, 4), (3, 4), (3, 4)),
                               _select_case((3, 1), (4,), ()),
                               _select_case((), (2, 3), (2, 3))], diff_argnums=(1, 2)),
    "clamp": Entry(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
                   [_clamp_case((), (3, 4), ()), _clamp_case((3, 4), (3, 4), (3, 4)),
                    _clamp_case((3, 1), (3, 4), (4,))]),
    "convert_element_type": Entry(
        lambda x, new_dtype: x.astype(new_dtype),
        [Case(args_of(normal(3, 4)), dict(new_dtype=np.dtype(np.float64)), label="f64->f64",
              grad="check"),
         _convert(np.float32, normal(3, 4), "f64->f32"),
         _convert(np.int32, away_from_integers(-3, 3, 3, 4), "f64->i32"),
         _convert(np.float64, int32s(3, 4), "i32->f64"),
         _convert(np.float32, bools(3, 4), "bool->f32")],
        grad="none"),
    # ---- shape
    "broadcast_in_dim": Entry(
        lambda x, shape, broadcast_dimensions: np.broadcast_to(np.expand_dims(
            x, tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)), shape),
        [Case(args_of(normal(3)), dict(shape=(3, 4), broadcast_dimensions=(0,)), label="col"),
         Case(args_of(normal(3, 1)), dict(shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
              label="size1"),
         Case(args_of(normal()), dict(shape=(2, 3), broadcast_dimensions=()), label="scalar"),
         Case(args_of(normal(4)), dict(shape=(3, 4), broadcast_dimensions=(1,)), label="row")]),
    "reshape": Entry(lambda x, new_sizes: np.reshape(x, new_sizes), [
        Case(args_of(normal(3, 4)), dict(new_sizes=(2, 6)), label="2d"),
        Case(args_of(normal(2, 3, 4)), dict(new_sizes=(24,)), label="flat"),
        Case(args_of(normal(1)), dict(new_sizes=()), label="to-scalar")]),
    "transpose": Entry(lambda x, permutation: np.transpose(x, permutation), [
        Case(args_of(normal(3, 4)), dict(permutation=(1, 0)), label="2d"),
        Case(args_of(normal(2, 3, 4)), dict(permutation=(2, 0, 1)), label="3d")]),
    "squeeze": Entry(lambda x, dimensions: np.squeeze(x, dimensions), [
        Case(args_of(normal(3, 1, 4, 1)), dict(dimensions=(1, 3)), label="two"),
        Case(args_of(normal(1, 1)), dict(dimensions=(0, 1)), label="all")]),
    "expand_dims": Entry(lambda x, dimensions: np.expand_dims(x, dimensions), [
        Case(args_of(normal(3, 4)), dict(dimensions=(0, 2)), label="two"),
        Case(args_of(normal()), dict(dimensions=(0,)), label="scalar")]),
    "rev": Entry(lambda x, dimensions: np.flip(x, dimensions), [
        Case(args_of(normal(3, 4)), dict(dimensions=(1,)), label="one"),
        Case(args_of(normal(2, 3, 4)), dict(dimensions=(0, 2)), label="two")]),
    "slice": Entry(lambda x, start_indices, limit_indices, strides: x[tuple(
        builtins.slice(*b) for b in zip(start_indices, limit_indices, strides))], [
        Case(args_of(normal(5, 6)), dict(start_indices=(1, 0), limit_indices=(4, 6),
                                         strides=(1, 1)), label="plain"),
        Case(args_of(normal(5, 6)), dict(start_indices=(0, 1), limit_indices=(5, 6),
                                         strides=(2, 3)), label="strided"),
        Case(args_of(normal(7)), dict(start_indices=(2,), limit_indices=(5,), strides=(4,)),
             label="stride-past-end")]),
    "pad": Entry(pad_ref, [
        Case(args_of(normal(3, 4), normal()), dict(padding_config=((1, 2, 0), (0, 1, 0))),
             label="edges"),
        Case(args_of(normal(3), normal()), dict(padding_config=((1, 0, 2),)), label="interior"),
        Case(args_of(normal(4, 5), normal()), dict(padding_config=((-1, 2, 1), (1, -2, 0))),
             label="negative")]),
    "concatenate": Entry(lambda *xs, dimension: np.concatenate(xs, dimension), [
        Case(args_of(normal(2, 3), normal(4, 3)), dict(dimension=0), label="axis0"),
        Case(args_of(normal(2, 3), normal(2, 1), normal(2, 2)), dict(dimension=1),
             label="axis1-three")]),
    "iota": Entry(lambda dtype, shape, dimension: np.indices(shape)[dimension].astype(dtype), [
        Case(lambda rng: (), dict(dtype=np.dtype(np.int32), shape=(3, 4), dimension=1),
             label="int32"),
        Case(lambda rng: (), dict(dtype=np.dtype(np.float32), shape=(2, 3), dimension=0),
             label="float32")], grad="none"),
    # ---- reduce
    "reduce_sum": reduction(np.sum),
    "reduce_max": reduction(np.max, shapes_axes=[((3, 4), (0,)), ((3, 4), (1,)),
                                                 ((2, 3, 4), (0, 2)), ((2, 3, 4), (0, 1, 2))]),
    "reduce_min": reduction(np.min, shapes_axes=[((3, 4), (0,)), ((3, 4), (1,)),
                                                 ((2, 3, 4), (0, 2)), ((2, 3, 4), (0, 1, 2))]),
    "reduce_prod": Entry(
        lambda x, axes: np.prod(x, axis=axes),
        reduction(np.prod, lambda *s: signed(0.5, 1.5, *s)).cases + [
            Case(lambda rng: (np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]]),), dict(axes=(1,)),
                 label="zeros"),
            Case(args_of(normal(3, 0)), dict(axes=(1,)), label="empty-axis")]),
    "argmax": arg_reduction(np.argmax),
    "argmin": arg_reduction(np.argmin),
    "cumsum": cumulative(np.cumsum),
    "cumprod": Entry(along(np.cumprod), cumulative(np.cumprod, lambda *s: signed(0.5, 1.5, *s))
                     .cases + [Case(lambda rng: (np.array([2.0, 0.0, 3.0, 0.0, 0.5]),),
                             dict(axis=0, reverse=False), label="zeros"),
                        Case(args_of(normal(3, 0)), dict(axis=1, reverse=False), label="empty")]),
    "cummax": cumulative(np.maximum.accumulate),
    "cummin": cumulative(np.minimum.accumulate),
    # ---- dot
    "dot_general": Entry(None, [
        dot_case((3, 4), (4, 5), (((1,), (0,)), ((), ())), "ij,jk->ik"),
        dot_case((3, 4), (4,), (((1,), (0,)), ((), ())), "ij,j->i"),
        dot_case((4,), (4,), (((0,), (0,)), ((), ())), "i,i->"),
        dot_case((2, 3), (4,), (((), ()), ((), ())), "ij,k->ijk"),
        dot_case((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
        dot_case((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,))), "ibj,jkb->bik"),
        dot_case((2, 3, 4), (4, 5, 3), (((1, 2), (2, 0)), ((), ())), "ijk,kmj->im"),
        dot_case((4, 3), (4, 5), (((0,), (0,)), ((), ())), "ji,jk->ik"),
    ]),
}


def family_primitives():
    return {v.name for module in FAMILIES for v in vars(module).values()
            if isinstance(v, core.Primitive)}


def test_table_covers_every_primitive_of_the_swept_families():
    missing = family_primitives() - set(TABLE)
    assert not missing, f"add these primitives to TABLE in {__file__}: {sorted(missing)}"
    assert set(TABLE) <= set(core.PRIMITIVES), set(TABLE) - set(core.PRIMITIVES)


CASES = [pytest.param(name, i, id=f"{name}-{case.label or i}")
         for name, entry in TABLE.items() for i, case in enumerate(entry.cases)]


def setup(name, i, dtype=np.float64):
    entry = TABLE[name]
    case = entry.cases[i]
    rng = np.random.default_rng(1000 + i)
    args = tuple(a.astype(dtype) if a.dtype.kind == "f" else a
                 for a in map(np.asarray, case.args(rng)))
    return core.PRIMITIVES[name], entry, case, args


def reference(entry, case, args):
    return np.asarray((case.ref or entry.ref)(*args, **case.params))


def run(prim, args, params):
    return prim.bind(*[fnad.numpy.asarray(a) for a in args], **params)


@pytest.mark.parametrize("name,i", CASES)
def test_impl_matches_numpy(name, i):
    prim, entry, case, args = setup(name, i)
    out = np.asarray(run(prim, args, case.params))
    expected = reference(entry, case, args)
    assert out.shape == expected.shape
    assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,i", CASES)
def test_shape_rule_matches_output(name, i):
    prim, entry, case, args = setup(name, i)
    aval = prim.abstract_eval(*[ShapedArray(a.shape, a.dtype) for a in args], **case.params)
    out = np.asarray(prim.impl(*args, **case.params))
    assert isinstance(aval, ShapedArray)
    assert aval.shape == out.shape and aval.dtype == out.dtype, (aval, out.shape, out.dtype)


def _split(entry, args):
    """The function of the differentiated operands, the others held fixed."""
    argnums = entry.diff_argnums
    if argnums is None:
        argnums = tuple(k for k, a in enumerate(args) if a.dtype.kind == "f")
    fixed = [fnad.numpy.asarray(a) for a in args]

    def f(*xs):
        full = list(fixed)
        for k, x in zip(argnums, xs):
            full[k] = x
        return full
    return argnums, f


@pytest.mark.parametrize("name,i", CASES)
def test_grads_match_finite_differences(name, i):
    prim, entry, case, args = setup(name, i)
    grad = case.grad or entry.grad
    if grad == "none" or not args:
        pytest.skip("not differentiable")
    argnums, fill = _split(entry, args)
    f = lambda *xs: prim.bind(*fill(*xs), **case.params)  # noqa: E731
    diff_args = [args[k] for k in argnums]
    if grad == "zero":
        out, pullback = fnad.vjp(f, *diff_args)
        for ct in pullback(fnad.numpy.ones_like(out)):
            np.testing.assert_array_equal(np.asarray(ct), 0)
        _, tangent = fnad.jvp(f, tuple(diff_args), tuple(np.ones_like(a) for a in diff_args))
        np.testing.assert_array_equal(np.asarray(tangent), 0)
        return
    check_grads(f, diff_args, order=2, modes=("fwd", "rev"))


def _has_float_operands(name, i):
    return TABLE[name].float32 and any(
        np.asarray(a).dtype.kind == "f" for a in setup(name, i)[3])


CASES32 = [p for p in CASES if _has_float_operands(*p.values)]


@pytest.mark.parametrize("name,i", CASES32)
def test_float32_in_float32_out(name, i):
    prim, entry, case, args = setup(name, i, np.float32)
    out = run(prim, args, case.params)
    expected = reference(entry, case, args)
    assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=entry.rtol32, atol=1e-6)
    if (case.grad or entry.grad) != "check" or out.dtype != np.float32:
        return
    argnums, fill = _split(entry, args)
    f = lambda *xs: prim.bind(*fill(*xs), **case.params)  # noqa: E731
    diff_args = [fnad.numpy.asarray(args[k]) for k in argnums]
    _, pullback = fnad.vjp(f, *diff_args)
    for ct, a in zip(pullback(fnad.numpy.ones_like(out)), diff_args):
        assert ct.dtype == np.float32 and ct.shape == a.shape, (ct.dtype, ct.shape, a.shape)
    _, tangent = fnad.jvp(f, tuple(diff_args), tuple(fnad.numpy.ones_like(a) for a in diff_args))
    assert tangent.dtype == np.float32 and tangent.shape == out.shape
