"""fnad: functional automatic differentiation and compilation over numpy and Numba."""
from . import primitives as _primitives  # noqa: F401  (declares every primitive)
from .array import Array, Device  # noqa: F401
from .abstract import ShapedArray  # noqa: F401
from . import backend
from .backend import devices  # noqa: F401
from . import backends as _backends  # noqa: F401  (registers the cpu and cuda backends)
from .transforms.jvp import jvp  # noqa: F401
from .transforms.vjp import vjp, grad, value_and_grad  # noqa: F401
from .transforms.jacobians import jacfwd, jacrev, hessian  # noqa: F401
from .transforms.custom import custom_jvp, custom_vjp, custom_gradient  # noqa: F401
from .transforms.jacobians import jacrev as jacobian  # noqa: F401
from . import numpy, lax, tree_util, tree, nn, scipy, test_util, errors  # noqa: F401
from . import optim, data, io, datasets, random  # noqa: F401
from .errors import (  # noqa: F401
    DeviceError, ShapeError, DTypeError, ImmutableArrayError, EscapedTracerError, GradientError,
    ConcretizationError)


def device_put(x, device=None):
    """A copy of a pytree of arrays on `device` (default: the cpu); numpy leaves and
    Python scalars become Arrays there."""
    return tree_util.tree_map(lambda leaf: backend.device_put(numpy.asarray(leaf), device), x)


def block_until_ready(x):
    """Wait for the computations producing the arrays of pytree `x`; returns `x`."""
    for leaf in tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


__version__ = "0.1.0"

from .staged.jit import jit, make_jaxpr  # noqa: E402,F401
from .cache import clear_caches  # noqa: E402,F401
from . import config  # noqa: E402,F401
from .transforms.batching import vmap  # noqa: E402,F401
from .staged.eval_shape import ShapeDtypeStruct, eval_shape  # noqa: E402,F401
from . import ad_checkpoint, checkpoint_policies, dlpack  # noqa: E402,F401
from .ad_checkpoint import checkpoint, remat  # noqa: E402,F401
from ._api import (  # noqa: E402,F401
    float0, linearize, linear_transpose, closure_convert, device_get, default_backend,
    device_count, local_devices, local_device_count, process_count, process_index, typeof,
    disable_jit, enable_x64, log_compiles, explain_cache_misses, debug_nans, named_call,
    named_scope,
    ensure_compile_time_eval)
from . import debug  # noqa: E402,F401
from . import onnx  # noqa: E402,F401  (imports the onnx package only when called)
from . import distributed  # noqa: E402,F401
from .debug import pure_callback  # noqa: E402,F401
from . import hooks, profiler  # noqa: E402,F401
from .drawing import draw  # noqa: E402,F401
from . import typing  # noqa: E402,F401
from .tracebacks import api_boundary as _api_boundary  # noqa: E402
# Errors raised in the functions these return (shape errors in a function being
# differentiated or batched) show the user's frames, not fnad's: fnad.tracebacks.
grad, value_and_grad, vmap, jacfwd, jacrev, hessian = (
    _api_boundary(_t) for _t in (grad, value_and_grad, vmap, jacfwd, jacrev, hessian))
jacobian = jacrev
