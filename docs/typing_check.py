"""What a type checker infers from fnad's annotations, checked by mypy in CI (this file
is listed in [tool.mypy] `files`; it is never run). Each assert_type fails the type
check if an annotation stops saying what it says today."""
from typing import TYPE_CHECKING

import fnad
import fnad.numpy as fnp
from fnad import lax
from fnad.typing import ArrayLike

if TYPE_CHECKING:
    from typing_extensions import assert_type


def scale(x: fnad.Array, n: int) -> fnad.Array:
    return x * n + 1.0


def as_array(x: ArrayLike) -> fnad.Array:
    return fnp.asarray(x)


scaled = fnad.jit(scale, static_argnums=1)
assert_type(scaled(fnp.ones(2), 3), fnad.Array)     # jit keeps the signature (ParamSpec)
assert_type(fnad.jit(static_argnums=1)(scale)(fnp.ones(2), 3), fnad.Array)
assert_type(lax.fori_loop(0, 3, lambda i, v: v + 1.0, 0.0), float)
assert_type(lax.cond(True, lambda: 1, lambda: 2), int)
zero: fnad.Array = fnp.zeros(())    # (fnad.numpy's functions are not annotated yet)
carry, ys = lax.scan(lambda c, x: (c + x, c), zero, fnp.ones(3))
assert_type(carry, fnad.Array)
assert_type(zero @ zero - 1, fnad.Array)    # the operators fnad.numpy attaches
