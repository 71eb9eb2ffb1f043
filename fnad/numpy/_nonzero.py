"""Functions whose result's size depends on the values (nonzero and its relatives):
they need a concrete array, and say so when given a traced one."""
import numpy as np

from .. import dtypes
from ..array import Array
from ..core import Tracer
from ..errors import ConcretizationError


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


def concrete_or_raise(a, name):
    value = concrete_value(a)
    if value is None:
        raise ConcretizationError(
            f"{name} needs a concrete array: the size of its result depends on the values "
            f"of {a.aval}, which is traced by {a._trace.name}. Compute with a mask instead, "
            f"e.g. fnad.numpy.where(mask, x, 0).")
    return value


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


def nonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero entries, one array per axis (needs a concrete a)."""
    value = concrete_or_raise(a, "nonzero")
    if value.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not supported; use atleast_1d first")
    coords = _padded(list(np.nonzero(value)), size, fill_value)
    return tuple(Array(c) for c in index_arrays(coords, max(value.shape)))


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(np.ravel(concrete_or_raise(a, "flatnonzero")), size=size,
                   fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    value = np.atleast_1d(concrete_or_raise(a, "argwhere"))
    coords = index_arrays(_padded(list(np.nonzero(value)), size, fill_value), max(value.shape))
    return Array(np.stack(coords, -1).reshape(-1, value.ndim))
