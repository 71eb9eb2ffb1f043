"""Full Jacobians and Hessians from jvp (one column per input element) and vjp
(one row per output element). The result nests the output structure around the
input structure, with each leaf of shape out.shape + in.shape."""
import numpy as np

from ..array import Array
from ..tree_util import tree_flatten, tree_unflatten
from ._util import normalize_argnums, check_float_input
from .jvp import jvp
from .vjp import vjp


def _split_args(fun, args, kwargs, argnums, transform):
    single, nums = normalize_argnums(argnums, len(args), transform)
    diff = args[nums[0]] if single else tuple(args[i] for i in nums)
    flat_in, tree_in = tree_flatten(diff)
    flat_in = [check_float_input(x, transform, f"input {i}") for i, x in enumerate(flat_in)]

    def flat_fun(*leaves):
        value = tree_unflatten(tree_in, list(leaves))
        full = list(args)
        if single:
            full[nums[0]] = value
        else:
            for i, v in zip(nums, value):
                full[i] = v
        return fun(*full, **kwargs)
    return flat_in, tree_in, flat_fun


def _basis(flat_in, k):
    """The k-th unit vector of the concatenated flattened inputs, split into leaves."""
    out = []
    for x in flat_in:
        e = np.zeros(x.size, x.dtype)
        if 0 <= k < x.size:
            e[k] = 1
        k -= x.size
        out.append(Array(e.reshape(x.shape)))
    return out


def _assemble(table, flat_out, flat_in, tree_out, tree_in, by_output):
    """Build jac[o][i] of shape out_o.shape + in_i.shape from a table of slices.
    by_output: table[k][i] is input-shaped, k running over all output elements (jacrev);
    otherwise table[k][o] is output-shaped, k over all input elements (jacfwd)."""
    from .. import numpy as fnp
    starts_out = np.cumsum([0] + [o.size for o in flat_out])
    starts_in = np.cumsum([0] + [x.size for x in flat_in])
    per_out = []
    for o_idx, o in enumerate(flat_out):
        blocks = []
        for i_idx, x in enumerate(flat_in):
            shape = tuple(o.shape) + tuple(x.shape)
            if by_output:
                slices = [table[k][i_idx] for k in range(starts_out[o_idx], starts_out[o_idx + 1])]
                axis = 0
            else:
                slices = [table[k][o_idx] for k in range(starts_in[i_idx], starts_in[i_idx + 1])]
                axis = -1
            blocks.append(fnp.reshape(fnp.stack(slices, axis), shape) if slices
                          else fnp.zeros(shape, x.dtype))
        per_out.append(tree_unflatten(tree_in, blocks))
    return tree_unflatten(tree_out, per_out)


def jacfwd(fun, argnums=0, has_aux=False):
    """The Jacobian of fun by forward mode: one jvp per input element."""
    def jacfwd_fun(*args, **kwargs):
        flat_in, tree_in, flat_fun = _split_args(fun, args, kwargs, argnums, "jacfwd")
        total = sum(x.size for x in flat_in)
        columns, aux, flat_out, tree_out = [], None, None, None
        for k in range(max(total, 1)):
            result = jvp(flat_fun, tuple(flat_in), tuple(_basis(flat_in, k)), has_aux=has_aux)
            out, tangent = result[0], result[1]
            if has_aux:
                aux = result[2]
            flat_out, tree_out = tree_flatten(out)
            columns.append(tree_flatten(tangent)[0])
        if total == 0:
            columns = []
        jac = _assemble(columns, flat_out, flat_in, tree_out, tree_in, by_output=False)
        return (jac, aux) if has_aux else jac
    return jacfwd_fun


def jacrev(fun, argnums=0, has_aux=False):
    """The Jacobian of fun by reverse mode: one forward pass, one vjp per output element."""
    def jacrev_fun(*args, **kwargs):
        flat_in, tree_in, flat_fun = _split_args(fun, args, kwargs, argnums, "jacrev")
        result = vjp(flat_fun, *flat_in, has_aux=has_aux)
        out, pullback = result[0], result[1]
        flat_out, tree_out = tree_flatten(out)
        rows = []
        for k in range(sum(o.size for o in flat_out)):
            cotangent = tree_unflatten(tree_out, _basis(flat_out, k))
            rows.append(list(pullback(cotangent)))
        jac = _assemble(rows, flat_out, flat_in, tree_out, tree_in, by_output=True)
        return (jac, result[2]) if has_aux else jac
    return jacrev_fun


def hessian(fun, argnums=0, has_aux=False):
    """The matrix of second derivatives: jacfwd of jacrev."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)
