"""Functions whose result's size depends on the values (nonzero and its relatives).
A concrete array gives numpy's answer; a traced one (jit, vmap) needs `size=`, as in
JAX: the first `size` positions, padded with `fill_value`, computed by scattering each
position to its rank among the nonzero entries (a cumulative sum), so the shapes are
static. Without size= a traced array is a ConcretizationError."""
import numpy as np
from typing import Any

from .. import dtypes
from ..array import Array
from ..core import Tracer
from ..errors import ConcretizationError
from ..primitives import elementwise as E
from ..primitives import index as I
from ..primitives import reduce as R
from ..primitives import shape as S
from ..typing import ArrayLike


def concrete_value(x):
    """The numpy value of x, or None where x is only known abstractly."""
    if type(x) is Array:
        return x._value
    if isinstance(x, Tracer):
        try:
            return np.asarray(x.concrete())
        except (NotImplementedError, ConcretizationError):
            return None
    return np.asarray(x)


def concrete_or_raise(a, name, sized=False):
    value = concrete_value(a)
    if value is None:
        hint = f"pass size= (and fill_value=) to {name} for a result of static shape, " \
            if sized else ""
        raise ConcretizationError(
            f"{name} needs a concrete array: the size of its result depends on the values "
            f"of {a.aval}, which is traced by {a._trace.name}. {hint.capitalize()}"
            f"{'or c' if hint else 'C'}ompute with a mask instead, e.g. "
            f"fnad.numpy.where(mask, x, 0).")
    return value


def sized_positions(mask, size, fills, coordinates):
    """For a traced 1-d boolean `mask`: arrays of length `size`, one per table in
    `coordinates` (numpy arrays, one entry per position of mask), holding the entries
    at the first `size` True positions of mask, in order, then the matching fill."""
    n = mask.shape[0]
    rank_dtype = dtypes.index_dtype(n + size + 1)
    ranks = R.cumsum(E.convert_element_type_p.bind(mask, new_dtype=rank_dtype), 0)
    # a False position, or one past size, goes to index `size`: out of range, dropped
    target = E.select_p.bind(mask, E.sub_p.bind(ranks, np.ones((), rank_dtype)),
                             np.full((), size, rank_dtype))
    target = S.reshape(target, (n, 1))
    out = []
    for table, fill in zip(coordinates, fills):
        operand = Array(np.full(size, fill, table.dtype))
        out.append(I.scatter_p.bind(operand, target, Array(table), mode="fill",
                                    unique_indices=True))
    return out


def _traced_nonzero(a, size, fill_value, name):
    """nonzero of a traced array with a static size: one array per axis."""
    if size is None:
        concrete_or_raise(a, name, sized=True)
    shape = tuple(a.shape)
    flat = S.reshape(a, (int(np.prod(shape, dtype=np.int64)),))
    mask = flat if flat.dtype == np.bool_ else E.ne_p.bind(flat, np.zeros((), flat.dtype))
    coords = index_arrays(np.unravel_index(np.arange(mask.shape[0]), shape), max(shape))
    fills = np.broadcast_to(np.asarray(0 if fill_value is None else fill_value), (len(shape),))
    return sized_positions(mask, operator_index(size, name), fills, coords)


def operator_index(size, name):
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"{name}: size must be a non-negative int, got {size!r}")
    return int(size)


def _padded(coords, size, fill_value):
    if size is None:
        return coords
    fill = np.broadcast_to(np.asarray(0 if fill_value is None else fill_value), (len(coords),))
    out = []
    for c, f in zip(coords, fill):
        c = c[:size]
        out.append(np.concatenate([c, np.full(size - len(c), f, c.dtype)]))
    return out


def index_arrays(coords, size):
    """Index arrays into `size` positions, in the index dtype (docs/dtypes.md)."""
    dtype = dtypes.index_dtype(size)
    return [np.asarray(c).astype(dtype) for c in coords]


def nonzero(a: ArrayLike, *, size: Any = None, fill_value: ArrayLike | None = None) -> Any:
    """The indices of the nonzero entries, one array per axis. A traced a needs size=:
    the first `size` indices, padded with fill_value (default 0)."""
    if np.ndim(a) == 0:
        raise ValueError("nonzero of a 0-d array is not supported; use atleast_1d first")
    value = concrete_value(a)
    if value is None:
        return tuple(_traced_nonzero(a, size, fill_value, "nonzero"))
    if size is not None:
        operator_index(size, "nonzero")
    coords = _padded(list(np.nonzero(value)), size, fill_value)
    return tuple(Array(c) for c in index_arrays(coords, max(value.shape)))


def flatnonzero(a: Any, *, size: Any = None, fill_value: ArrayLike | None = None) -> Array:
    """The indices of the nonzero entries of the flattened a."""
    value = concrete_value(a)
    if value is None:
        flat = S.reshape(a, (int(np.prod(a.shape, dtype=np.int64)),))
        return _traced_nonzero(flat, size, fill_value, "flatnonzero")[0]
    return nonzero(np.ravel(value), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: Any = None, fill_value: ArrayLike | None = None) -> Array:
    """The indices of the nonzero entries as rows, shape (count, ndim)."""
    value = concrete_value(a)
    if value is None:
        if a.ndim == 0:
            a = S.reshape(a, (1,))
        coords = _traced_nonzero(a, size, fill_value, "argwhere")
        return S.concatenate([S.reshape(c, (c.shape[0], 1)) for c in coords], 1)
    value = np.atleast_1d(value)
    coords = index_arrays(_padded(list(np.nonzero(value)), size, fill_value), max(value.shape))
    return Array(np.stack(coords, -1).reshape(-1, value.ndim))
