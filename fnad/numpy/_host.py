"""Functions that run on the host with concrete values: printing options and
representations, and numpy's .npy/.npz files. A traced value cannot be printed or
saved (its numbers do not exist yet): they raise ConcretizationError, as JAX does."""
import collections.abc
import os
from typing import IO, Any

import numpy as np

from ..array import Array
from ..core import Tracer
from ..dtypes import bfloat16
from ..errors import ConcretizationError
from ..typing import ArrayLike

__all__ = ["get_printoptions", "set_printoptions", "printoptions", "array_repr",
           "array_str", "save", "savez", "load"]

get_printoptions, set_printoptions, printoptions = (np.get_printoptions, np.set_printoptions,
                                                    np.printoptions)


def _host_value(x, name):
    if isinstance(x, Tracer):
        raise ConcretizationError(
            f"{name} needs concrete values, but got a traced value (shape "
            f"{tuple(x.shape)}, dtype {x.dtype}) inside a transformed function (jit, "
            f"grad, vmap); call {name} on the function's results instead")
    if isinstance(x, Array):
        return np.asarray(x)
    return x


def array_repr(arr: ArrayLike, max_line_width: int | None = None, precision: int | None = None,
               suppress_small: bool | None = None) -> str:
    """numpy's repr of the values, named Array as fnad prints them."""
    text = np.array_repr(np.asarray(_host_value(arr, "array_repr")), max_line_width,
                         precision, suppress_small)
    return "Array" + text[len("array"):] if text.startswith("array") else text


def array_str(a: ArrayLike, max_line_width: int | None = None, precision: int | None = None,
              suppress_small: bool | None = None) -> str:
    return np.array_str(np.asarray(_host_value(a, "array_str")), max_line_width, precision,
                        suppress_small)


def save(file: str | os.PathLike[str] | IO[bytes], arr: ArrayLike,
         allow_pickle: bool = False) -> None:
    """numpy's .npy format. Pickled objects are refused by default (fnad never writes
    or reads code)."""
    np.save(file, _host_value(arr, "save"), allow_pickle=allow_pickle)


def savez(file: str | os.PathLike[str] | IO[bytes], *args: ArrayLike, allow_pickle: bool = False,
          **kwds: ArrayLike) -> None:
    arrays = [_host_value(a, "savez") for a in args]
    named = {k: _host_value(v, "savez") for k, v in kwds.items()}
    if allow_pickle:
        np.savez(file, *arrays, **named)
        return
    for value in list(arrays) + list(named.values()):
        if np.asarray(value).dtype.hasobject:
            raise ValueError("savez: object arrays need allow_pickle=True")
    np.savez(file, *arrays, **named)


def load(file: str | os.PathLike[str] | IO[bytes], *args: Any, allow_pickle: bool = False,
         **kwargs: Any) -> Any:
    """An .npy file as an Array, an .npz file as a lazy mapping of arrays (as JAX's
    load). Pickles are refused unless allow_pickle=True.

    numpy's format has no bfloat16: np.save writes it as 2-byte raw void ('|V2'), which
    load reads back as bfloat16, in .npz files too (JAX does so for .npy files)."""
    # args is for numpy's positional mmap_mode; an allow_pickle among them would clash
    # with the keyword (a TypeError), which is what mypy reports here
    out = np.load(file, *args, allow_pickle=allow_pickle, **kwargs)  # type: ignore[misc]
    if isinstance(out, np.lib.npyio.NpzFile):
        return _Bfloat16Npz(out)
    if isinstance(out, np.ndarray):
        out = _as_bfloat16(out)
        if out.dtype.kind in "biufc" or out.dtype == bfloat16:
            return Array(np.array(out))
    return out


_VOID16 = np.dtype("V2")


def _as_bfloat16(a):
    return a.view(bfloat16) if a.dtype == _VOID16 else a


class _Bfloat16Npz(collections.abc.Mapping):
    """numpy's NpzFile, with '|V2' arrays read as bfloat16."""

    def __init__(self, npz):
        self._npz = npz
        self.files = npz.files

    def __getitem__(self, key):
        return _as_bfloat16(self._npz[key])

    def __iter__(self):
        return iter(self._npz)

    def __len__(self):
        return len(self._npz)

    def close(self):
        self._npz.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
