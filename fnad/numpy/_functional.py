"""Applying a function along or over axes: apply_along_axis (by vmap over every other
axis, so the function is traced once, not called per slice) and apply_over_axes."""
from typing import Any, Callable, Sequence

from ..transforms.batching import vmap
from ..typing import Array, ArrayLike
from ._core import as_operand, normalize_axis
from ._shapes import expand_dims

__all__ = ["apply_along_axis", "apply_over_axes"]


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: ArrayLike, *args: Any,
                     **kwargs: Any) -> Array:
    """func1d(slice, *args, **kwargs) for every 1-d slice of arr along axis; the
    result's axes take axis's place among arr's other axes, as in numpy."""
    arr = as_operand(arr)
    axis = normalize_axis(axis, arr.ndim)

    def func(x):
        return func1d(x, *args, **kwargs)
    # The axes after `axis` are mapped innermost and put back at the end; those before
    # it outermost and kept in front: numpy's layout of the result.
    for i in range(1, arr.ndim - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func: Callable[[Array, int], ArrayLike], a: ArrayLike,
                    axes: int | Sequence[int]) -> Array:
    """func(a, axis) applied for each axis in turn; a result that lost the axis gets
    it back with length 1, so the dimensions are kept."""
    a = as_operand(a)
    for axis in ([axes] if isinstance(axes, int) else axes):
        axis = normalize_axis(axis, a.ndim)
        out = as_operand(func(a, axis))
        if out.ndim == a.ndim - 1:
            out = expand_dims(out, axis)
        elif out.ndim != a.ndim:
            raise ValueError(f"apply_over_axes: func must keep the number of dimensions "
                             f"or remove one; it turned {a.ndim} into {out.ndim}")
        a = out
    return a
