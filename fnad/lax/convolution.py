"""Convolution and pooling with JAX's lax names, signatures and semantics.

These thin functions only normalize arguments: layouts given by dimension numbers
become the primitive's one layout (batch, feature, spatial...) by transposes, string
paddings become (lo, hi) pairs, and a reduce_window whose init value is not its
operation's identity reduces each window and then combines the result with the init
value once (padding contributes nothing, as JAX computes it).

Differences from JAX: batch_group_count must be 1; reduce_window takes the
computations 'max', 'min' and 'add' (as strings, or as fnad.lax.max / min / add and
the numpy ufuncs), not arbitrary functions, and no base or window dilation.
"""
import operator
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from .. import numpy as fnp
from ..core import Tracer
from ..numpy._core import as_operand
from .operators import add as lax_add, max as lax_max, min as lax_min
from ..errors import ShapeError, DTypeError
from ..kernels.cpu import window as _K
from ..primitives import conv as _C
from ..primitives import shape as _S
from ..primitives.elementwise import convert_element_type_p, max_p, min_p, add_p
from ..typing import Array, ArrayLike, DTypeLike


class ConvDimensionNumbers(NamedTuple):
    """Axis positions of (batch, feature, spatial...) in lhs, (out feature, in feature,
    spatial...) in rhs and (batch, feature, spatial...) in the output."""
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def _operand(x: Any) -> Array:
    return as_operand(x)


def _spec_error(dimension_numbers, lhs_shape, rhs_shape, why):
    return ShapeError(f"conv_general_dilated: bad dimension_numbers {dimension_numbers!r} "
                      f"for lhs shape {tuple(lhs_shape)} and rhs shape {tuple(rhs_shape)}: "
                      f"{why}")


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> "ConvDimensionNumbers":
    """ConvDimensionNumbers from None (NC..., OI..., NC...), three layout strings such
    as ('NHWC', 'HWIO', 'NHWC'), or three tuples of axis positions."""
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim or ndim < 3:
        raise ShapeError(f"conv_general_dilated: lhs shape {tuple(lhs_shape)} and rhs shape "
                         f"{tuple(rhs_shape)} need the same rank, at least 3")
    if dimension_numbers is None:
        iota = tuple(range(ndim))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3:
        raise _spec_error(dimension_numbers, lhs_shape, rhs_shape,
                          "expected (lhs_spec, rhs_spec, out_spec)")
    if all(isinstance(s, str) for s in dimension_numbers):
        return _from_strings(dimension_numbers, lhs_shape, rhs_shape)
    specs = []
    for spec in dimension_numbers:
        if isinstance(spec, str) or sorted(spec) != list(range(ndim)):
            raise _spec_error(dimension_numbers, lhs_shape, rhs_shape,
                              f"each spec must be a permutation of range({ndim})")
        specs.append(tuple(int(d) for d in spec))
    return ConvDimensionNumbers(*specs)


def _from_strings(specs, lhs_shape, rhs_shape):
    lhs_spec, rhs_spec, out_spec = specs
    pairs = ("NC", "OI", "NC")
    for spec, pair in zip(specs, pairs):
        if len(spec) != len(lhs_shape) or len(set(spec)) != len(spec) or \
                not all(spec.count(c) == 1 for c in pair):
            raise _spec_error(specs, lhs_shape, rhs_shape,
                              f"{spec!r} must name {len(lhs_shape)} distinct axes, "
                              f"including {pair[0]!r} and {pair[1]!r} once each")
    if not set(lhs_spec) - set("NC") == set(rhs_spec) - set("OI") == set(out_spec) - set("NC"):
        raise _spec_error(specs, lhs_shape, rhs_shape,
                          "the three specs must name the same spatial axes")

    def perm(spec, pair):
        # Spatial axes in the rhs spec's order, as in JAX.
        spatial = sorted((i for i, c in enumerate(spec) if c not in pair),
                         key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)
    return ConvDimensionNumbers(*(perm(s, p) for s, p in zip(specs, pairs)))


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """(lo, hi) pairs for 'VALID', 'SAME' (extra padding at the end) or 'SAME_LOWER'."""
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of "
                         f"(low, high) pairs, got {padding!r}")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max(0, (-(-n // s) - 1) * s + k - n)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def _pairs(padding, count, what):
    try:
        pads = [(int(lo), int(hi)) for lo, hi in padding]
    except (TypeError, ValueError):
        pads = None
    if pads is None or len(pads) != count:
        raise ValueError(f"{what}: padding must be 'SAME', 'VALID' or {count} (low, high) "
                         f"pairs, got {padding!r}")
    return tuple(pads)


def _ints(values, count, default, what, name, axes="spatial axis"):
    values = (default,) * count if values is None else tuple(int(v) for v in values)
    if len(values) != count:
        raise ShapeError(f"{what}: {name} {values} needs {count} entries, one per {axes}")
    return values


def conv_general_dilated(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int],
                         padding: str | Sequence[tuple[int, int]],
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                         feature_group_count: int = 1, batch_group_count: int = 1,
                         precision: Any = None, preferred_element_type: DTypeLike | None = None
                        ) -> Array:
    """General n-d convolution (cross-correlation, as in lax) with strides, padding,
    input (lhs) and kernel (rhs) dilation, feature groups and any layout."""
    lhs, rhs = _operand(lhs), _operand(rhs)
    name = "conv_general_dilated"
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    nd = lhs.ndim - 2
    if batch_group_count != 1:
        raise NotImplementedError(f"{name}: batch_group_count={batch_group_count} is not "
                                  f"supported (only 1)")
    if lhs.dtype != rhs.dtype and preferred_element_type is None:
        raise DTypeError(f"{name} needs operands of one dtype, got lhs {lhs.dtype}"
                         f"{list(lhs.shape)} and rhs {rhs.dtype}{list(rhs.shape)}")
    groups = int(feature_group_count)
    c, i, o = lhs.shape[dn.lhs_spec[1]], rhs.shape[dn.rhs_spec[1]], rhs.shape[dn.rhs_spec[0]]
    if groups < 1 or c != i * groups or o % groups:
        raise ShapeError(
            f"{name}: lhs shape {tuple(lhs.shape)} has {c} features (axis {dn.lhs_spec[1]}), "
            f"rhs shape {tuple(rhs.shape)} has {i} input features (axis {dn.rhs_spec[1]}) "
            f"and {o} output features (axis {dn.rhs_spec[0]}); with feature_group_count="
            f"{groups} the lhs features must equal rhs input features * {groups} and the "
            f"output features must be a multiple of {groups} (dimension_numbers "
            f"{dimension_numbers!r})")
    strides = _ints(window_strides, nd, 1, name, "window_strides")
    lhs_dilation = _ints(lhs_dilation, nd, 1, name, "lhs_dilation")
    rhs_dilation = _ints(rhs_dilation, nd, 1, name, "rhs_dilation")
    if isinstance(padding, str):
        window = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(dn.rhs_spec[2:], rhs_dilation)]
        padding = padtype_to_pads([lhs.shape[d] for d in dn.lhs_spec[2:]], window, strides,
                                  padding)
    padding = _pairs(padding, nd, name)
    if preferred_element_type is not None:
        dtype = np.dtype(preferred_element_type)
        lhs, rhs = (x if x.dtype == dtype else convert_element_type_p.bind(x, new_dtype=dtype)
                    for x in (lhs, rhs))
    out = _C.conv(_permuted(lhs, dn.lhs_spec), _permuted(rhs, dn.rhs_spec), strides, padding,
                  lhs_dilation, rhs_dilation, groups)
    return _permuted(out, tuple(np.argsort(dn.out_spec)))


def _permuted(x, perm):
    perm = tuple(int(p) for p in perm)
    return x if perm == tuple(range(len(perm))) else _S.transpose(x, perm)


def conv(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int],
         padding: str | Sequence[tuple[int, int]], precision: Any = None,
         preferred_element_type: DTypeLike | None = None) -> Array:
    """conv_general_dilated in the default layout (NC..., OI...) without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int],
                              padding: str | Sequence[tuple[int, int]],
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: DTypeLike | None = None) -> Array:
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:
        raise ValueError(f"conv_transpose: padding must be 'SAME', 'VALID' or a sequence of "
                         f"(low, high) pairs, got {padding!r}")
    return lo, total - lo


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: ArrayLike, rhs: ArrayLike, strides: Sequence[int],
                   padding: str | Sequence[tuple[int, int]],
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: DTypeLike | None = None) -> Array:
    """The transposed ("deconvolution") convolution: an lhs dilated by `strides`, as
    lax.conv_transpose. Default layouts are channels-last (NHWC, HWIO, NHWC)."""
    lhs, rhs = _operand(lhs), _operand(rhs)
    if dimension_numbers is None:
        if lhs.ndim not in _TRANSPOSE_LAYOUTS:
            raise ShapeError(f"conv_transpose: no default dimension_numbers for rank "
                             f"{lhs.ndim} operands (lhs shape {tuple(lhs.shape)}); pass them")
        dimension_numbers = _TRANSPOSE_LAYOUTS[lhs.ndim]
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    nd = lhs.ndim - 2
    window = [rhs.shape[d] for d in dn.rhs_spec[2:]]
    strides = _ints(strides, nd, 1, "conv_transpose", "strides")
    rhs_dilation = _ints(rhs_dilation, nd, 1, "conv_transpose", "rhs_dilation")
    if isinstance(padding, str):
        padding = [_conv_transpose_padding((k - 1) * r + 1, s, padding.upper())
                   for k, s, r in zip(window, strides, rhs_dilation)]
    if transpose_kernel:
        perm = list(range(rhs.ndim))
        rhs = _S.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = _S.transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * nd, padding, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# --------------------------------------------------------------------------- windows

def _computation(computation):
    if isinstance(computation, str):
        kind = {"max": "max", "min": "min", "add": "add", "sum": "add"}.get(computation.lower())
    else:
        table = {lax_max: "max", lax_min: "min", lax_add: "add", np.maximum: "max",
                 np.minimum: "min", np.add: "add", operator.add: "add", max: "max", min: "min",
                 fnp.maximum: "max", fnp.minimum: "min", fnp.add: "add"}
        kind = next((k for f, k in table.items() if f is computation), None)
    if kind is None:
        raise NotImplementedError(f"reduce_window: computation {computation!r} is not "
                                  f"supported; use 'max', 'min' or 'add' (or fnad.lax.max, "
                                  f"fnad.lax.min, fnad.lax.add)")
    return kind


_REDUCE = {"max": (_C.reduce_window_max_p, _K.MAX, max_p),
           "min": (_C.reduce_window_min_p, _K.MIN, min_p),
           "add": (_C.reduce_window_sum_p, _K.SUM, add_p)}


def reduce_window(operand: ArrayLike, init_value: ArrayLike, computation: str | Callable[..., Any],
                  window_dimensions: Sequence[int], window_strides: Sequence[int],
                  padding: str | Sequence[tuple[int, int]],
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Array:
    """Reduce every window of `operand` with computation ('max', 'min' or 'add'),
    starting from init_value; padded positions contribute nothing."""
    x = _operand(operand)
    prim, op, combine = _REDUCE[_computation(computation)]
    window = _ints(window_dimensions, x.ndim, 1, "reduce_window", "window_dimensions",
                   f"axis of the operand (shape {tuple(x.shape)})")
    strides = _ints(window_strides, x.ndim, 1, "reduce_window", "window_strides",
                    f"axis of the operand (shape {tuple(x.shape)})")
    for name, dilation in (("base_dilation", base_dilation), ("window_dilation",
                                                              window_dilation)):
        if dilation is not None and any(int(d) != 1 for d in dilation):
            raise NotImplementedError(f"reduce_window: {name}={tuple(dilation)} is not "
                                      f"supported (only 1)")
    if isinstance(padding, str):
        padding = padtype_to_pads(x.shape, window, strides, padding)
    padding = _pairs(padding, x.ndim, "reduce_window")
    params = dict(window_dimensions=window, window_strides=strides, padding=padding)
    if not isinstance(init_value, Tracer) and np.shape(init_value) == () and \
            np.asarray(init_value) == _K.identity(op, x.dtype):
        return prim.bind(x, **params)
    init = _operand(init_value)
    if init.dtype != x.dtype:
        init = convert_element_type_p.bind(init, new_dtype=x.dtype)
    return combine.bind(prim.bind(x, **params), init)


def _pool_args(x, window, strides, padding):
    """Full-rank window, strides and padding; a window of rank ndim - 2 covers the
    spatial axes of a channels-last (N, *spatial, C) operand, as in flax."""
    window = tuple(int(k) for k in window)
    strides = window if strides is None else tuple(int(s) for s in strides)
    if len(window) == x.ndim - 2:
        window = (1,) + window + (1,)
        if len(strides) == x.ndim - 2:
            strides = (1,) + strides + (1,)
        if not isinstance(padding, str) and len(padding) == x.ndim - 2:
            padding = [(0, 0)] + list(padding) + [(0, 0)]
    return window, strides, padding


def max_pool(x: ArrayLike, window: Sequence[int], strides: Sequence[int] | None = None,
             padding: str | Sequence[tuple[int, int]] = "VALID") -> Array:
    """The maximum of each window (strides default to the window)."""
    x = _operand(x)
    window, strides, padding = _pool_args(x, window, strides, padding)
    return reduce_window(x, _K.identity(_K.MAX, x.dtype), "max", window, strides, padding)


def avg_pool(x: ArrayLike, window: Sequence[int], strides: Sequence[int] | None = None,
             padding: str | Sequence[tuple[int, int]] = "VALID") -> Array:
    """The sum of each window divided by the window's size (padding counts as zeros)."""
    x = _operand(x)
    window, strides, padding = _pool_args(x, window, strides, padding)
    return reduce_window(x, 0, "add", window, strides, padding) / int(np.prod(window))
