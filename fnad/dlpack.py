"""Exchange of arrays with other libraries through DLPack, without copying.

fnad Arrays export themselves (`torch.from_dlpack(x)`, `np.from_dlpack(x)`: see
Array.__dlpack__), and `from_dlpack` takes any object with ``__dlpack__`` (a PyTorch
tensor, a JAX or CuPy array on the cpu, a numpy array). The memory is shared both
ways: an fnad Array must not be written through the other library's view of it, and
an array handed to fnad must not be written by its library afterwards, or the Array
changes.
"""
from typing import Any

import numpy as np

from .array import Array
from .dtypes import check_supported


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Array:
    """An fnad Array sharing the memory of `external_array` (any ``__dlpack__``
    producer in host memory); copy=True copies it instead. device, if given, must be
    the cpu (arrays on a GPU come in through numpy: fnad.device_put(np.asarray(t)))."""
    if device is not None and getattr(device, "platform", None) != "cpu":
        raise ValueError(f"from_dlpack: fnad imports host memory only; device={device!r}")
    if not hasattr(external_array, "__dlpack__"):
        raise TypeError(f"from_dlpack: a {type(external_array).__name__} has no "
                        f"__dlpack__ method; pass a DLPack producer (a tensor or array)")
    value = np.from_dlpack(external_array) if copy is None else \
        np.from_dlpack(external_array, copy=copy)
    check_supported(value.dtype, "from_dlpack")
    return Array(value)


def to_dlpack(x: Array) -> Any:
    """A DLPack capsule of Array `x` (JAX's older spelling; prefer passing `x` itself
    to the consumer's from_dlpack)."""
    if not isinstance(x, Array):
        raise TypeError(f"to_dlpack: expected an fnad Array, got {type(x).__name__}")
    return x.__dlpack__()
