"""The numpy-style operators and methods of Array and of every tracer.

Both classes get the same functions, so a user function behaves the same on
concrete values and under any transform."""
from ..array import Array
from ..core import Tracer
from . import _elementwise as E, _reductions as R, _shapes as S, _products as P
from ._core import astype
from . import _sorting, _complex
from ._indexing import IndexUpdateHelper, getitem, repeat, take
from ._nonzero import nonzero
from ._selection import choose, compress
from ._interop import array_function, array_ufunc


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _transpose_method(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return S.transpose(self, axes or None)


def _reshape_method(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return S.reshape(self, shape, order)


def _getitem(self, idx):
    return getitem(self, idx)


def _at(self):
    return IndexUpdateHelper(self)


METHODS = {
    "__add__": E.add, "__radd__": _reflected(E.add),
    "__sub__": E.subtract, "__rsub__": _reflected(E.subtract),
    "__mul__": E.multiply, "__rmul__": _reflected(E.multiply),
    "__truediv__": E.divide, "__rtruediv__": _reflected(E.divide),
    "__floordiv__": E.floor_divide, "__rfloordiv__": _reflected(E.floor_divide),
    "__mod__": E.remainder, "__rmod__": _reflected(E.remainder),
    "__divmod__": E.divmod, "__rdivmod__": _reflected(E.divmod),
    "__pow__": E.power, "__rpow__": _reflected(E.power),
    "__matmul__": P.matmul, "__rmatmul__": _reflected(P.matmul),
    "__and__": E.bitwise_and, "__rand__": _reflected(E.bitwise_and),
    "__or__": E.bitwise_or, "__ror__": _reflected(E.bitwise_or),
    "__xor__": E.bitwise_xor, "__rxor__": _reflected(E.bitwise_xor),
    "__eq__": E.equal, "__ne__": E.not_equal, "__lt__": E.less, "__le__": E.less_equal,
    "__gt__": E.greater, "__ge__": E.greater_equal,
    "__neg__": E.negative, "__pos__": E.positive, "__abs__": E.absolute,
    "__invert__": E.invert,
    "__getitem__": _getitem,
    "sum": R.sum, "prod": R.prod, "max": R.max, "min": R.min, "mean": R.mean,
    "var": R.var, "std": R.std, "all": R.all, "any": R.any,
    "argmax": R.argmax, "argmin": R.argmin, "cumsum": R.cumsum, "cumprod": R.cumprod,
    "reshape": _reshape_method, "transpose": _transpose_method, "ravel": S.ravel,
    "flatten": S.ravel, "squeeze": S.squeeze, "swapaxes": S.swapaxes, "repeat": repeat,
    "astype": astype, "clip": E.clip, "round": E.round, "dot": P.dot,
    "diagonal": P.diagonal, "trace": P.trace,
    "copy": lambda self: self,
    "conj": _complex.conj, "conjugate": _complex.conj,
    "__array_ufunc__": array_ufunc, "__array_function__": array_function,
    "sort": lambda self, axis=-1: _sorting.sort(self, axis),
    "argsort": lambda self, axis=-1: _sorting.argsort(self, axis),
    "argpartition": lambda self, kth, axis=-1: _sorting.argpartition(self, kth, axis),
    "searchsorted": lambda self, v, side="left", sorter=None:
        _sorting.searchsorted(self, v, side=side, sorter=sorter),
    "ptp": R.ptp, "take": take, "nonzero": nonzero,
    "choose": lambda self, choices, mode="raise": choose(self, choices, mode=mode),
    "compress": lambda self, condition, axis=None: compress(condition, self, axis),
}


PROPERTIES = {
    "T": lambda self: S.transpose(self),
    "mT": S.matrix_transpose,
    "at": _at,
    "real": _complex.real, "imag": _complex.imag,
    "itemsize": lambda self: self.dtype.itemsize,
    "nbytes": lambda self: self.size * self.dtype.itemsize,
}


def attach():
    for cls in (Array, Tracer):
        for name, fn in METHODS.items():
            setattr(cls, name, fn)
        for name, fn in PROPERTIES.items():
            setattr(cls, name, property(fn))
        cls.__hash__ = None
