"""lax's functions that are declared beside their primitives also serve the primitives'
own rules, where host numpy values flow for speed (outside any transform, a bind on
numpy values gives numpy values). Called by a user, they give Arrays, as every public
function does: `returning_arrays` wraps them for fnad.lax's namespace."""
import functools
from typing import Any, Callable, TypeVar, cast

import numpy as np

from ..array import Array
from ..tree_util import tree_map

F = TypeVar("F", bound=Callable[..., Any])


def _as_array(value: Any) -> Any:
    return Array(np.asarray(value)) if isinstance(value, (np.ndarray, np.generic)) else value


def returning_arrays(fn: F) -> F:
    """fn, with host numpy results (and each leaf of a tuple of them) made Arrays."""
    @functools.wraps(fn)
    def user_facing(*args: Any, **kwargs: Any) -> Any:
        return tree_map(_as_array, fn(*args, **kwargs))
    return cast(F, user_facing)        # the same signature, by wraps
