"""Full Jacobians and Hessians: jvp vmapped over the unit tangents of the inputs
(jacfwd) or the pullback of one vjp vmapped over the unit cotangents of the outputs
(jacrev), so every column (row) is computed in one batched pass. The result nests
the output structure around the input structure, with each leaf of shape
out.shape + in.shape.

Complex values follow JAX: without `holomorphic`, jacfwd takes real inputs and jacrev
gives real outputs (a complex Jacobian of a non-holomorphic map is not one matrix);
holomorphic=True takes complex inputs to complex outputs and gives f'(z), the same
formulas either way since the unit tangents and cotangents are then 1 + 0j."""
from typing import Any, Callable, Sequence

import numpy as np

from ..dtypes import kind_of as dtype_kind
from ..array import Array
from ..errors import GradientError
from ..primitives import shape as S
from ..primitives._rules import zeros
from ..tree_util import tree_flatten, tree_unflatten
from ._util import check_argnums, resolve_argnums, check_float_input, split_aux
from .batching import vmap
from .jvp import jvp
from .vjp import vjp


_HINT = ("For holomorphic differentiation, pass holomorphic=True; for a non-holomorphic "
         "function of complex values, use vjp or jvp directly.")


def _check_kind(values, holomorphic, transform, what, complex_allowed):
    """JAX's dtype rules for Jacobians: holomorphic=True wants complex `what`s; else
    complex ones are refused unless complex_allowed."""
    for i, x in enumerate(values):
        kind = dtype_kind(x.dtype)
        if holomorphic and kind != "c":
            raise GradientError(f"{transform} with holomorphic=True requires {what}s with "
                                f"complex dtype, but {what} {i} has dtype {x.dtype}")
        if not holomorphic and kind == "c" and not complex_allowed:
            raise GradientError(f"{transform} requires real-valued {what}s, but {what} {i} "
                                f"has dtype {x.dtype}. " + _HINT)


def _split_args(fun, args, kwargs, argnums, has_aux, transform, holomorphic=False):
    """The differentiated leaves of a call and fun as a function of them alone;
    argnums is (single, nums) from check_argnums."""
    single, nums = argnums
    nums = resolve_argnums(nums, len(args), transform)
    diff = args[nums[0]] if single else tuple(args[i] for i in nums)
    flat_in, tree_in = tree_flatten(diff)
    flat_in = [check_float_input(x, transform, f"input {i}") for i, x in enumerate(flat_in)]
    _check_kind(flat_in, holomorphic, transform, "input",
                complex_allowed=transform != "jacfwd")

    def flat_fun(*leaves):
        value = tree_unflatten(tree_in, list(leaves))
        full = list(args)
        if single:
            full[nums[0]] = value
        else:
            for i, v in zip(nums, value):
                full[i] = v
        out = fun(*full, **kwargs)
        return split_aux(out, transform) if has_aux else out
    return flat_in, tree_in, flat_fun


def _basis(leaves):
    """The unit vectors of the leaves flattened and concatenated, split back into
    leaves: leaf j gets shape (total,) + leaf_j.shape, its row k being leaf j's part
    of unit vector k."""
    total = sum(x.size for x in leaves)
    out, start = [], 0
    for x in leaves:
        eye = np.eye(total, x.size, -start, dtype=x.dtype)
        out.append(Array(eye.reshape((total,) + tuple(x.shape))))
        start += x.size
    return out


def _starts(leaves):
    return np.cumsum([0] + [x.size for x in leaves]).tolist()


def _block(a, axis, start, stop, shape):
    """a[start:stop] along axis, reshaped to shape."""
    if (start, stop) != (0, a.shape[axis]):
        starts, limits = [0] * a.ndim, list(a.shape)
        starts[axis], limits[axis] = start, stop
        a = S.slice(a, starts, limits)
    return S.reshape(a, shape) if tuple(a.shape) != tuple(shape) else a


def _zeros_jacobian(flat_out, tree_out, flat_in, tree_in):
    return tree_unflatten(tree_out, [
        tree_unflatten(tree_in, [zeros(tuple(o.shape) + tuple(x.shape), x.dtype)
                                 for x in flat_in]) for o in flat_out])


def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian of fun by forward mode: jvp vmapped over the input's unit vectors.

    Cheaper than jacrev when fun has fewer inputs than outputs. The result has the
    output's shape followed by the input's (per pytree leaf). As jax.jacfwd.

    >>> f = lambda x: fnp.stack([x[0] * x[1], x[0] ** 2])
    >>> fnad.jacfwd(f)(fnp.asarray([2.0, 3.0]))
    Array([[3., 2.],
           [4., 0.]], dtype=float32)
    """
    return _jacfwd(fun, argnums, has_aux, "jacfwd", holomorphic)


def _jacfwd(fun, argnums, has_aux, name, holomorphic=False):
    argnums = check_argnums(argnums, name)

    def jacfwd_fun(*args, **kwargs):
        flat_in, tree_in, flat_fun = _split_args(fun, args, kwargs, argnums, has_aux, name,
                                                 holomorphic)
        if sum(x.size for x in flat_in) == 0:
            out = flat_fun(*flat_in)
            out, aux = out if has_aux else (out, None)
            flat_out, tree_out = tree_flatten(out)
            jac = _zeros_jacobian(flat_out, tree_out, flat_in, tree_in)
            return (jac, aux) if has_aux else jac

        def pushforward(*tangents):
            return jvp(flat_fun, tuple(flat_in), tangents, has_aux=has_aux)
        # Primal outputs and aux do not depend on the tangent: one copy, not a batch.
        out_axes = (None, -1, None) if has_aux else (None, -1)
        result = vmap(pushforward, out_axes=out_axes)(*_basis(flat_in))
        flat_out, tree_out = tree_flatten(result[0])
        if holomorphic:
            _check_kind(flat_out, True, name, "output", True)
        columns = tree_flatten(result[1])[0]    # (out.shape..., total in) each
        starts = _starts(flat_in)
        jac = tree_unflatten(tree_out, [
            tree_unflatten(tree_in, [
                _block(c, c.ndim - 1, starts[i], starts[i + 1], tuple(o.shape) + tuple(x.shape))
                for i, x in enumerate(flat_in)])
            for o, c in zip(flat_out, columns)])
        return (jac, result[2]) if has_aux else jac
    return jacfwd_fun


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable[..., Any]:
    """The Jacobian of fun by reverse mode: one forward pass, its pullback vmapped
    over the output's unit vectors.

    Cheaper than jacfwd when fun has fewer outputs than inputs; the same layout as
    jacfwd's result. As jax.jacrev (fnad.jacobian is the same function).

    >>> f = lambda x: fnp.stack([x[0] * x[1], x[0] ** 2])
    >>> fnad.jacrev(f)(fnp.asarray([2.0, 3.0]))
    Array([[3., 2.],
           [4., 0.]], dtype=float32)
    """
    return _jacrev(fun, argnums, has_aux, "jacrev", holomorphic)


def _jacrev(fun, argnums, has_aux, name, holomorphic=False):
    argnums = check_argnums(argnums, name)

    def jacrev_fun(*args, **kwargs):
        flat_in, tree_in, flat_fun = _split_args(fun, args, kwargs, argnums, has_aux, name,
                                                 holomorphic)
        result = vjp(flat_fun, *flat_in, has_aux=has_aux)
        out, pullback = result[0], result[1]
        flat_out, tree_out = tree_flatten(out)
        _check_kind(flat_out, holomorphic, name, "output", complex_allowed=False)
        if sum(o.size for o in flat_out) == 0:
            jac = _zeros_jacobian(flat_out, tree_out, flat_in, tree_in)
        else:
            rows = vmap(lambda *cts: pullback(tree_unflatten(tree_out, list(cts))))(
                *_basis(flat_out))                # (total out, in.shape...) each
            starts = _starts(flat_out)
            jac = tree_unflatten(tree_out, [
                tree_unflatten(tree_in, [
                    _block(r, 0, starts[k], starts[k + 1], tuple(o.shape) + tuple(x.shape))
                    for x, r in zip(flat_in, rows)])
                for k, o in enumerate(flat_out)])
        return (jac, result[2]) if has_aux else jac
    return jacrev_fun


def hessian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable[..., Any]:
    """The matrix of second derivatives: jacfwd of jacrev.

    >>> fnad.hessian(lambda x: fnp.sum(x ** 3))(fnp.asarray([1.0, 2.0]))
    Array([[ 6.,  0.],
           [ 0., 12.]], dtype=float32)
    """
    return _jacfwd(_jacrev(fun, argnums, has_aux, "hessian", holomorphic), argnums, has_aux,
                   "hessian", holomorphic)
