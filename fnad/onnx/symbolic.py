"""Symbolic dimensions for fnad.onnx.export: the function staged at several sizes of
each dynamic axis, walked in lockstep. A dimension that moves, moves linearly
(c0 + a * size, a `Dim`); a scalar literal that is a whole-number linear function of
the sizes (a mean's count) or the rounded reciprocal of one is noted so the builder
computes it from the input's shape; any other param or literal that moves is recorded
as pinning the axis. The exporter decides what to do with each.
"""
import numpy as np

from ..errors import DynamicAxisError
from ..program import ClosedProgram, Literal, Program
from .builder import Dim


def moving_fills(base, variants):
    """Indices of the captured constants that move with a size. Only a constant fill
    (fnp.zeros((batch, n)), the usual initial carry) may: it becomes an Expand of its
    value to a run-time shape; any other pins the axis."""
    fills = set()
    for s, _, v in variants:
        for k, (c0, c1) in enumerate(zip(base.consts, v.consts)):
            a0, a1 = np.asarray(c0), np.asarray(c1)
            if a0.shape == a1.shape and np.array_equal(a0, a1, equal_nan=True):
                continue
            if a0.size and a1.size and _is_fill(a0) and _is_fill(a1) and \
                    np.array_equal(a0.flat[0], a1.flat[0], equal_nan=True):
                fills.add(k)
                continue
            raise DynamicAxisError(
                f"fnad.onnx.export: a constant of shape {a0.shape} captured while "
                f"staging changes with the size of dynamic axis {s!r}, so the model "
                f"cannot keep that axis symbolic; compute it from the inputs")
    return fills


def _is_fill(a):
    return bool(np.all((a == a.flat[0]) | (np.isnan(a) & np.isnan(a.flat[0]))
                       if a.dtype.kind in "fc" else a == a.flat[0]))


def _linear_dims(base_shape, variant_shapes, sizes):
    dims = []
    for k, d0 in enumerate(base_shape):
        coeffs = {}
        for s, step, shape in variant_shapes:
            delta = shape[k] - d0
            if step == 1:
                coeffs[s] = delta
            elif delta != 2 * coeffs.get(s, 0):
                raise DynamicAxisError(
                    f"fnad.onnx.export: a dimension of size {d0} grows non-linearly with "
                    f"the dynamic axis {s!r}; ONNX shapes here must be linear in it")
        coeffs = {s: a for s, a in coeffs.items() if a}
        if coeffs:
            dims.append(Dim(d0 - sum(a * sizes[s] for s, a in coeffs.items()), coeffs))
        else:
            dims.append(d0)
    return tuple(dims)


def _assign(base_vars, variant_vars, variants, sizes, dims):
    for k, v in enumerate(base_vars):
        if isinstance(v, Literal):
            continue
        shapes = [(s, st, vv[k].aval.shape) for (s, st, _), vv in zip(variants, variant_vars)]
        dims[v] = _linear_dims(v.aval.shape, shapes, sizes)


def align(base, variants, sizes, dims, varying, literals):
    """Walk `base` and its restagings in lockstep: dims of every var, per equation the
    params (or literal operands) that move with a size, and the scalar literals that
    move linearly with it ((equation, operand index) -> Dim: a mean's count, computed
    from the input's shape at run time)."""
    for _, _, p in variants:
        if len(p.eqns) != len(base.eqns) or any(
                e.prim is not f.prim for e, f in zip(base.eqns, p.eqns)):
            first = next((e for e, f in zip(base.eqns, p.eqns) if e.prim is not f.prim),
                         base.eqns[min(len(base.eqns), len(p.eqns)) - 1] if base.eqns else None)
            raise DynamicAxisError(
                f"fnad.onnx.export: the staged program changes structure with the size of "
                f"a dynamic axis (near {first.prim.name if first else 'its end'}): the "
                f"function branches in Python on that size, or an operation is a no-op at "
                f"the example's size only (x[:4] of an example with 4 rows); give an "
                f"example of another size, or keep the axis static")
    _assign(base.invars, [p.invars for _, _, p in variants], variants, sizes, dims)
    for i, eqn in enumerate(base.eqns):
        others = [p.eqns[i] for _, _, p in variants]
        moved = set()
        for k, a in enumerate(eqn.inputs):
            if isinstance(a, Literal) and any(
                    not isinstance(o.inputs[k], Literal) or o.inputs[k].key() != a.key()
                    for o in others):
                size = _literal_size(a, [o.inputs[k] for o in others], variants, sizes)
                if size is None:
                    moved.add(f"<literal operand {k}: {a!r}>")
                else:
                    literals[eqn, k] = size
        for key, value in eqn.params.items():
            subs = programs_in(value)
            if subs:
                for j, sub in enumerate(subs):
                    align(sub, [(s, st, programs_in(o.params[key])[j])
                                 for (s, st, _), o in zip(variants, others)],
                           sizes, dims, varying, literals)
            elif any(not _same(value, o.params[key]) for o in others):
                moved.add(key)
            if isinstance(value, ClosedProgram) and any(
                    not _same_consts(value, o.params[key]) for o in others):
                moved.add(key)      # its captured constants change with a size
        if moved:
            varying[eqn] = moved
        _assign(eqn.outputs, [o.outputs for o in others], variants, sizes, dims)


def _literal_size(base, others, variants, sizes):
    """(Dim, reciprocal) when a scalar literal is, at every size, a whole-number linear
    function of the sizes (a mean's count) or the rounded reciprocal of one (the 1/n a
    mean's derivative multiplies by); else None."""
    if base.value.shape != () or any(
            not isinstance(o, Literal) or o.value.shape != () for o in others):
        return None
    values = [base.value] + [o.value for o in others]
    dim = _linear([float(v) for v in values], variants, sizes)
    if dim is not None:
        return dim, False
    if base.value.dtype.kind != "f" or any(float(v) == 0 for v in values):
        return None
    counts = [round(1 / float(v)) for v in values]
    one = np.ones((), base.value.dtype)
    if any(c == 0 or one / np.asarray(c, base.value.dtype) != v
           for c, v in zip(counts, values)):
        return None
    dim = _linear([float(c) for c in counts], variants, sizes)
    return None if dim is None else (dim, True)


def _linear(values, variants, sizes):
    """The Dim through (base, size + 1, size + 2 of each symbol) values, if whole."""
    v0, coeffs = values[0], {}
    for (s, step, _), v in zip(variants, values[1:]):
        if step == 1:
            coeffs[s] = v - v0
        elif v - v0 != 2 * coeffs[s]:
            return None
    c0 = v0 - sum(a * sizes[s] for s, a in coeffs.items())
    if any(a != int(a) for a in coeffs.values()) or c0 != int(c0):
        return None
    return Dim(int(c0), {s: int(a) for s, a in coeffs.items() if a})


def programs_in(value):
    if isinstance(value, Program):
        return [value]
    if isinstance(value, ClosedProgram):
        return [value.program]
    if isinstance(value, (tuple, list)) and value and all(programs_in(v) for v in value):
        return [p for v in value for p in programs_in(v)]
    return []


def _same_consts(a, b):
    return len(a.consts) == len(b.consts) and all(
        np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y),
                                                      equal_nan=True)
        for x, y in zip(a.consts, b.consts))


def _same(a, b):
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return np.array_equal(np.asarray(a), np.asarray(b))
