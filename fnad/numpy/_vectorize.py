"""Functions made elementwise: vectorize (JAX's: fnad.vmap over the loop dimensions,
with numpy's generalized-ufunc signatures), ufunc/frompyfunc, piecewise. The user's
function sees fnad values, so everything stays differentiable and jittable."""
import functools
import re
from typing import AbstractSet, Any, Callable, Sequence

import numpy as np

from ..array import Array
from ..core import Tracer
from ..errors import ShapeError
from ..lax.control_flow import scan
from ..transforms.batching import vmap
from ._core import as_operand, astype, promote
from ._elementwise import where
from ._nonzero import concrete_or_raise
from ..typing import ArrayLike
from ._shapes import (broadcast_shapes, broadcast_to, concatenate, expand_dims, moveaxis,
                      reshape, take_range)

__all__ = ["vectorize", "ufunc", "frompyfunc", "piecewise"]

_DIMS = r"\((?:\w+(?:,\w+)*)?\)"
_SIGNATURE = re.compile(rf"^{_DIMS}(?:,{_DIMS})*->{_DIMS}(?:,{_DIMS})*$")


def _parse_signature(signature):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    signature = signature.replace(" ", "")
    if not _SIGNATURE.match(signature):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    inputs, outputs = signature.split("->")

    def dims(side):
        return [tuple(d for d in group.split(",") if d)
                for group in re.findall(r"\((.*?)\)", side)]
    return dims(inputs), dims(outputs)


def _vmapped(f, times):
    for _ in range(times):
        f = vmap(f)
    return f


def vectorize(pyfunc: Callable[..., Any], *, excluded: AbstractSet[int | str] = frozenset(),
              signature: str | None = None) -> Callable[..., Any]:
    """pyfunc applied over the leading (loop) dimensions of its broadcast arguments by
    nested vmaps; a signature names the core dimensions each argument keeps. Arguments
    in excluded (positions or names) are passed through unchanged."""
    core_in = core_out = None
    if signature is not None:
        core_in, core_out = _parse_signature(signature)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        positions = [i for i in range(len(args)) if i not in excluded]
        static_kw = {k: v for k, v in kwargs.items() if k in excluded}
        array_kw = {k: v for k, v in kwargs.items() if k not in excluded}
        names = list(array_kw)
        arrays = [as_operand(args[i]) for i in positions] + \
            [as_operand(array_kw[k]) for k in names]
        cores = core_in if core_in is not None else [()] * len(arrays)
        if len(cores) != len(arrays):
            raise TypeError(f"vectorize: the signature {signature!r} has {len(cores)} "
                            f"inputs, the call {len(arrays)} array arguments")
        sizes = {}
        loops = []
        for a, core in zip(arrays, cores):
            if a.ndim < len(core):
                raise ShapeError(f"vectorize: an argument of shape {tuple(a.shape)} has "
                                 f"fewer dimensions than its core dimensions {core}")
            for d, n in zip(core, a.shape[a.ndim - len(core):]):
                if sizes.setdefault(d, n) != n:
                    raise ShapeError(f"vectorize: core dimension {d!r} is {sizes[d]} in "
                                     f"one argument and {n} in another")
            loops.append(tuple(a.shape[:a.ndim - len(core)]))
        loop_shape = broadcast_shapes(*loops) if loops else ()
        arrays = [broadcast_to(a, loop_shape + tuple(a.shape[a.ndim - len(core):]))
                  for a, core in zip(arrays, cores)]

        def call(*values):
            full = list(args)
            for i, v in zip(positions, values):
                full[i] = v
            kw = dict(static_kw)
            kw.update(zip(names, values[len(positions):]))
            return pyfunc(*full, **kw)
        out = _vmapped(call, len(loop_shape))(*arrays)
        if core_out is not None:
            leaves = out if isinstance(out, tuple) else (out,)
            if len(leaves) != len(core_out):
                raise TypeError(f"vectorize: the signature {signature!r} promises "
                                f"{len(core_out)} outputs, the function gave {len(leaves)}")
        return out
    return wrapped


class ufunc:
    """A function of nin arrays made into a numpy-style ufunc: calls broadcast
    (vectorize), and reduce/accumulate/reduceat/outer/at follow numpy's meaning (reduce
    and accumulate fold along an axis with lax.scan, so any binary function works)."""

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None,
                 call=None, reduce=None, accumulate=None, at=None, reduceat=None):
        self.func, self.nin, self.nout = func, int(nin), int(nout)
        self.nargs = nin + nout if nargs is None else nargs
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._call = call if call is not None else vectorize(func)
        # JAX's hooks: a faster implementation of a method replaces the generic one
        for method, override in (("reduce", reduce), ("accumulate", accumulate),
                                 ("at", at), ("reduceat", reduceat)):
            if override is not None:
                setattr(self, method, override)

    def __repr__(self):
        return f"<fnad.numpy.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None or where is not None:
            raise TypeError(f"{self.__name__}: out= and where= are not supported")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}: takes {self.nin} arguments, got {len(args)}")
        return self._call(*args)

    def _binary(self, what):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{what} needs a ufunc of two inputs and one output; "
                             f"{self.__name__} has {self.nin} and {self.nout}")

    def _scan(self, a, axis, initial):
        a = moveaxis(as_operand(a), axis, 0)
        first = a[0] if initial is None else astype(
            broadcast_to(as_operand(initial), tuple(a.shape[1:])), a.dtype)
        rest = a[1:] if initial is None else a

        def step(carry, x):
            new = astype(self._call(carry, x), a.dtype)
            return new, new
        return first, scan(step, first, rest)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        self._binary("reduce")
        if out is not None or where is not None:
            raise TypeError(f"{self.__name__}.reduce: out= and where= are not supported")
        a = as_operand(a) if dtype is None else astype(a, dtype)
        if axis is None:
            a, axis = reshape(a, (-1,)), 0
        axis = axis % a.ndim
        if a.shape[axis] == 0 and initial is None:
            if self.identity is None:
                raise ValueError(f"{self.__name__}.reduce of an empty axis needs an "
                                 f"identity or initial=")
            initial = self.identity
        if a.shape[axis] == 0:
            shape = tuple(n for i, n in enumerate(a.shape) if i != axis)
            result = astype(broadcast_to(as_operand(initial), shape), a.dtype)
        else:
            first, (result, _) = self._scan(a, axis, initial)
        return expand_dims(result, axis) if keepdims else result

    def accumulate(self, a, axis=0, dtype=None, out=None):
        self._binary("accumulate")
        a = as_operand(a) if dtype is None else astype(a, dtype)
        axis = axis % a.ndim
        first, (_, running) = self._scan(a, axis, None)
        return moveaxis(concatenate([expand_dims(first, 0), running], 0), 0, axis)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """reduce over a[indices[i]:indices[i+1]] along axis (to the end for the last
        index; a[indices[i]] alone where the next index is not larger), as numpy's.
        The indices must be concrete: they fix the result's shape."""
        self._binary("reduceat")
        if out is not None:
            raise TypeError(f"{self.__name__}.reduceat: out= is not supported")
        a = as_operand(a) if dtype is None else astype(a, dtype)
        axis = axis % a.ndim
        starts = [int(i) for i in np.ravel(concrete_or_raise(as_operand(indices),
                                                             "ufunc.reduceat"))]
        n = a.shape[axis]
        pieces = []
        for k, start in enumerate(starts):
            if not 0 <= start < n:
                raise IndexError(f"{self.__name__}.reduceat: index {start} is out of "
                                 f"bounds for axis {axis} of size {n}")
            stop = starts[k + 1] if k + 1 < len(starts) else n
            stop = stop if stop > start else start + 1
            part = take_range(a, start, stop, axis)
            pieces.append(self.reduce(part, axis=axis, keepdims=True))
        return concatenate(pieces, axis)

    def outer(self, a, b):
        self._binary("outer")
        a, b = as_operand(a), as_operand(b)
        return self._call(reshape(a, tuple(a.shape) + (1,) * b.ndim), b)

    def at(self, a, indices, b=None, *, inplace=False):
        """The functional form of numpy's in-place at: a copy of a with
        func(a[indices], b) written at indices (repeated indices see the original
        value, not the running one)."""
        if inplace:
            raise ValueError("fnad arrays are immutable: ufunc.at needs inplace=False")
        a = as_operand(a)
        current = a[indices]
        new = self._call(current) if b is None else self._call(current, b)
        return a.at[indices].set(astype(new, a.dtype))


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *,
               identity: Any = None) -> "ufunc":
    """func (of fnad scalars or arrays) as a ufunc."""
    return ufunc(func, nin, nout, identity=identity)


def piecewise(x: ArrayLike, condlist: Any, funclist: Sequence[Any], *args: Any,
              **kw: Any) -> Array:
    """funclist[i] (a function of x, or a constant) where condlist[i] holds, the later
    conditions winning; an extra last entry applies where none holds, else 0. Every
    function is evaluated on all of x and the results selected."""
    x = as_operand(x)
    if isinstance(condlist, (Array, Tracer, np.ndarray)) and np.ndim(condlist) == x.ndim:
        condlist = [condlist]
    conditions = [astype(c, np.bool_) for c in condlist]
    n = len(conditions)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"piecewise: {n} conditions need {n} or {n + 1} functions, got "
                         f"{len(funclist)}")
    if len(funclist) == n + 1:
        otherwise = conditions[0] if n else Array(np.ones(x.shape, np.bool_))
        for c in conditions[1:]:
            otherwise = otherwise | c
        conditions = conditions + [~otherwise if n else otherwise]
    out = Array(np.zeros(x.shape, x.dtype))
    for condition, f in zip(conditions, funclist):
        value = f(x, *args, **kw) if callable(f) else f
        value, = promote(value)
        out = where(condition, astype(value, x.dtype), out)
    return out
