"""What a type checker infers from fnad's annotations, checked by mypy in CI (this file
is listed in [tool.mypy] `files`; it is never run). Each assert_type fails the type
check if an annotation stops saying what it says today."""
from typing import TYPE_CHECKING
import fnad
import fnad.numpy as fnp
from typing import Any

from fnad import data, io, lax, nn, optim, random, tree_util
from fnad.example_libraries import optimizers, stax
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
zero = fnp.zeros(())
assert_type(zero, fnad.Array)
carry, ys = lax.scan(lambda c, x: (c + x, c), zero, fnp.ones(3))
assert_type(carry, fnad.Array)
assert_type(zero @ zero - 1, fnad.Array)    # the operators fnad.numpy attaches
assert_type(fnp.sum(zero, axis=0), fnad.Array)
assert_type(fnp.sin(1.0), fnad.Array)                # a generated wrapper (_unary_inexact)
assert_type(fnp.add(zero, 1), fnad.Array)            # a generated wrapper (_binary)
assert_type(nn.relu(zero), fnad.Array)
assert_type(random.normal(random.key(0), (2,)), fnad.Array)
assert_type(random.gamma(random.key(0), 2.0), fnad.Array)
assert_type(optim.adam(1e-3), optim.GradientTransformation)
assert_type(optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 100), optim.Schedule)
layer = nn.serial(nn.Dense(4), nn.Relu)
assert_type(layer, nn.layers.Layer)
init_fn, apply_fn = layer
assert_type(init_fn, fnad.typing.InitFn)
assert_type(nn.initializers.glorot_normal(), fnad.typing.Initializer)
assert_type(tree_util.tree_map(lambda v: v + 1.0, {"w": zero}), Any)   # a PyTree
assert_type(tree_util.tree_leaves({"w": zero}), list[Any])
assert_type(lax.psum(zero, "i"), Any)                        # a pytree, like its input
assert_type(lax.psum, lax.parallel.TreeReduction)
assert_type(lax.axis_size("i"), int)
assert_type(lax.sin(zero), fnad.Array)                       # a generated operator
assert_type(lax.top_k(zero, 1), tuple[fnad.Array, fnad.Array])
assert_type(io.save("params.safetensors", {"w": zero}), None)
assert_type(io.load("params.safetensors"), Any)
assert_type(data.batches({"x": zero}, 32), data.Batches)
assert_type(data.num_batches(100, 32), int)
assert_type(fnp.linalg.solve(zero, zero), fnad.Array)
assert_type(fnp.fft.rfft(zero), fnad.Array)
assert_type(fnp.einsum("ij,jk", zero, zero), fnad.Array)
assert_type(fnad.scipy.special.logit(zero), fnad.Array)
assert_type(lax.reshape(zero, (1,)), fnad.Array)             # a wrapper in fnad/primitives
assert_type(lax.linalg.qr(zero), tuple[fnad.Array, fnad.Array])
assert_type(optimizers.adam(1e-3), optimizers.Optimizer)     # the decorator's ParamSpec
assert_type(stax.serial(stax.Dense(4), stax.Relu), tuple[fnad.typing.InitFn, fnad.typing.ApplyFn])
assert_type(fnp.stack([zero, zero]), fnad.Array)
