"""Functions that run on the host with concrete values: printing options and
representations, and numpy's .npy/.npz files. A traced value cannot be printed or
saved (its numbers do not exist yet): they raise ConcretizationError, as JAX does."""
import numpy as np

from ..array import Array
from ..core import Tracer
from ..errors import ConcretizationError

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


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """numpy's repr of the values, named Array as fnad prints them."""
    text = np.array_repr(np.asarray(_host_value(arr, "array_repr")), max_line_width,
                         precision, suppress_small)
    return "Array" + text[len("array"):] if text.startswith("array") else text


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    return np.array_str(np.asarray(_host_value(a, "array_str")), max_line_width, precision,
                        suppress_small)


def save(file, arr, allow_pickle=False):
    """numpy's .npy format. Pickled objects are refused by default (fnad never writes
    or reads code)."""
    np.save(file, _host_value(arr, "save"), allow_pickle=allow_pickle)


def savez(file, *args, allow_pickle=False, **kwds):
    arrays = [_host_value(a, "savez") for a in args]
    named = {k: _host_value(v, "savez") for k, v in kwds.items()}
    if allow_pickle:
        np.savez(file, *arrays, **named)
        return
    for value in list(arrays) + list(named.values()):
        if np.asarray(value).dtype.hasobject:
            raise ValueError("savez: object arrays need allow_pickle=True")
    np.savez(file, *arrays, **named)


def load(file, *args, allow_pickle=False, **kwargs):
    """An .npy file as an Array, an .npz file as numpy's lazy mapping of arrays (as
    JAX's load). Pickles are refused unless allow_pickle=True."""
    out = np.load(file, *args, allow_pickle=allow_pickle, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype.kind in "biufc":
        return Array(np.array(out))
    return out
