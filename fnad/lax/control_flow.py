"""Control flow with JAX's lax API: cond, switch, while_loop, fori_loop, scan, map.

Each traces its Python functions once, at the shapes and dtypes of the (flattened)
operands, and binds one primitive of fnad.staged.control whose params are the
staged Programs; whatever the functions capture becomes an operand of it. So the
loop or branch is one operation to every transform, and under jit one call.

As in JAX, a carry keeps its shape and dtype from one iteration to the next, and
branches return values of one type. A Python scalar in an initial carry, or an array
made from one (`fnad.numpy.asarray(0.0)`, weakly typed), takes the dtype the body
gives it when promotion allows (`fori_loop(0, n, f, 0.0)` with a float64 body carries
float64; a float carry never becomes an integer one).
"""
import builtins
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from .. import dtypes
from ..array import Array
from ..abstract import ShapedArray
from ..errors import ShapeError, DTypeError
from ..staged.control import cond_p, join_branches, while_p, scan_p
from ..staged.staging import stage
from ..primitives.elementwise import convert_element_type_p, clamp_p, ne_p
from ..tree_util import tree_flatten, tree_unflatten
from ..transforms._util import as_value

# For annotations: a loop's carry and a branch's result keep their pytree type.
T = TypeVar("T")
Carry = TypeVar("Carry")
X = TypeVar("X")
Y = TypeVar("Y")


def _aval(x):
    return ShapedArray(x.shape, x.dtype)


def _weak_kind(x):
    """int or float for a weakly typed carry leaf (a Python scalar, or an array made from
    one), bool for a Python bool; None for a leaf whose dtype is fixed."""
    if type(x) in (bool, int, float):
        return type(x)
    if type(x) is Array and x.weak_type:
        return {"f": float, "c": complex}.get(x.dtype.kind, int)
    return None


def _is_weak(x):
    return _weak_kind(x) is not None


def _leaves(tree, what):
    leaves, treedef = tree_flatten(tree)
    return [as_value(x, what) for x in leaves], treedef, [_weak_kind(x) for x in leaves]


def _in_tree(*trees):
    """The treedef of a tuple of pytrees with the given treedefs."""
    return tree_flatten(tuple(tree_unflatten(t, [0] * t.num_leaves) for t in trees))[1]


def _cast(x, dtype):
    return x if x.dtype == dtype else convert_element_type_p.bind(x, new_dtype=np.dtype(dtype))


def _check_carry(what, in_tree, out_tree, in_avals, out_avals, weak):
    """Raise unless the carry keeps its type; returns the weakly typed leaves'
    new dtypes when only those changed (the caller traces again with them)."""
    if in_tree != out_tree:
        raise TypeError(f"{what} must return a carry with the structure of its input "
                        f"carry: it takes {in_tree} and returns {out_tree}")
    promote = {}
    for i, (a, b, w) in enumerate(zip(in_avals, out_avals, weak)):
        if a == b:
            continue
        # A weak leaf takes the body's dtype when it would promote to it (as in JAX).
        if w is not None and a.shape == b.shape and dtypes.result_type(w, b.dtype) == b.dtype:
            promote[i] = b.dtype
            continue
        hint = ""
        if {a.dtype, b.dtype} == {dtypes.float32, dtypes.float64}:
            hint = (" (fnad keeps float64 inputs float64; to carry float64, give the "
                    "initial value float64, or turn on fnad.config.update("
                    "'jax_enable_x64', True) so new values default to float64)")
        raise TypeError(f"{what} must return a carry with the shapes and dtypes of its input "
                        f"carry, but carry leaf {i} goes in as {a} and comes out as {b} "
                        f"(carry structure {in_tree}); give the initial value the dtype "
                        f"and shape the body produces{hint}")
    return promote


# --------------------------------------------------------------------------- cond, switch

def cond(pred: Any, true_fun: Callable[..., T], false_fun: Callable[..., T], *operands: Any
         ) -> T:
    """true_fun(*operands) if pred else false_fun(*operands), with pred possibly traced.
    Both branches are traced; one runs (both, under vmap with a batched pred).

    The branches must return the same pytree structure, shapes and dtypes. As jax.lax.cond.

    >>> lax.cond(fnp.asarray(2.0) > 1, lambda x: x * 10, lambda x: x, 3.0)
    Array(30., dtype=float32)
    >>> fnad.grad(lambda x: lax.cond(x > 0, fnp.sin, fnp.cos, x))(0.5)
    Array(0.87758255, dtype=float32)
    """
    pred = as_value(pred, "cond predicate")
    if pred.shape != ():
        raise ShapeError(f"cond: the predicate must be a scalar, got shape "
                         f"{tuple(pred.shape)}; for an elementwise choice use "
                         f"fnad.numpy.where")
    if pred.dtype.kind != "b":
        pred = ne_p.bind(pred, np.zeros((), pred.dtype))
    index = convert_element_type_p.bind(pred, new_dtype=np.dtype(np.int32))
    return _switch(index, (false_fun, true_fun), operands, ("false_fun", "true_fun"))


def switch(index: Any, branches: Sequence[Callable[..., T]], *operands: Any) -> T:
    """branches[index](*operands), with index clamped into [0, len(branches) - 1]."""
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch: needs at least one branch")
    index = as_value(index, "switch index")
    if index.shape != () or index.dtype.kind not in "iu":
        raise DTypeError(f"switch: the index must be an integer scalar, got "
                         f"{index.dtype}{list(index.shape)}")
    if len(branches) == 1:
        return branches[0](*operands)
    index = _cast(index, np.int32)
    index = clamp_p.bind(np.int32(0), index, np.int32(len(branches) - 1))
    return _switch(index, branches, operands,
                   tuple(f"branch {i}" for i in range(len(branches))))


def _switch(index, funs, operands, names):
    flat, treedef, _ = _leaves(tuple(operands), "cond operand")
    avals = [_aval(x) for x in flat]
    casts = [{} for _ in funs]
    for _attempt in range(2):
        staged = [_stage_branch(f, treedef, avals, c) for f, c in zip(funs, casts)]
        out_trees = [s[1] for s in staged]
        for name, t in zip(names[1:], out_trees[1:]):
            if t != out_trees[0]:
                raise TypeError(f"cond: branches must return the same structure, but "
                                f"{names[0]} returns {out_trees[0]} and {name} returns {t}")
        if not _unify_branch_types(staged, names, casts):
            break
    consts, programs = join_branches([s[0] for s in staged])
    outs = cond_p.bind(index, *consts, *flat, branches=programs)
    return tree_unflatten(out_trees[0], outs)


def _stage_branch(fun, treedef, avals, casts):
    cell = []

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(treedef, list(leaves)))
        flat, out_tree = tree_flatten(out)
        cell.append((out_tree, [_is_weak(o) for o in flat]))
        flat = [as_value(o, "cond branch output") for o in flat]
        return [_cast(o, casts[i]) if i in casts else o for i, o in enumerate(flat)]
    closed = stage(flat_fun, avals)
    return closed, cell[0][0], cell[0][1]


def _unify_branch_types(staged, names, casts):
    """Check that the branches' outputs agree; a Python scalar output adopts the dtype
    the other branches give that leaf. Returns whether a branch must be traced again."""
    again = False
    outs = [s[0].program.out_avals for s in staged]
    for k in range(len(outs[0])):
        kinds = {o[k] for o in outs}
        if len(kinds) == 1:
            continue
        strong = {o[k] for o, s in zip(outs, staged) if not s[2][k]}
        shapes = {a.shape for a in kinds}
        if len(strong) == 1 and len(shapes) == 1:
            target = next(iter(strong))
            for i, s in enumerate(staged):
                if s[2][k] and outs[i][k] != target:
                    casts[i][k] = target.dtype
                    again = True
            continue
        detail = ", ".join(f"{n} returns {o[k]}" for n, o in zip(names, outs))
        raise TypeError(f"cond: branches must return the same shapes and dtypes, but for "
                        f"output leaf {k} {detail} (output structure {staged[0][1]})")
    return again


# --------------------------------------------------------------------------- while_loop, fori_loop

def while_loop(cond_fun: Callable[[T], Any], body_fun: Callable[[T], T], init_val: T) -> T:
    """Repeat val = body_fun(val) while cond_fun(val); returns the final val.
    Forward-differentiable (jvp, jacfwd); for reverse mode use scan or fori_loop with
    static bounds (grad through a while_loop raises GradientError, as in JAX).

    >>> lax.while_loop(lambda v: v < 10, lambda v: v * 2, 1)
    Array(16, dtype=int32)
    """
    init, treedef, weak = _leaves(init_val, "while_loop init_val")
    for _attempt in range(2):
        avals = [_aval(x) for x in init]
        cell = []

        def body_flat(*leaves):
            out = body_fun(tree_unflatten(treedef, list(leaves)))
            flat, out_tree = tree_flatten(out)
            cell.append(out_tree)
            return [as_value(o, "while_loop body_fun output") for o in flat]
        body = stage(body_flat, avals)
        promote = _check_carry("while_loop: body_fun", treedef, cell[0], avals,
                               body.program.out_avals[:len(avals)], weak)
        if not promote:
            break
        init = [_cast(x, promote[i]) if i in promote else x for i, x in enumerate(init)]
        weak = [None] * len(init)

    def cond_flat(*leaves):
        out = as_value(cond_fun(tree_unflatten(treedef, list(leaves))), "while_loop cond_fun")
        if out.shape != () or out.dtype.kind != "b":
            raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got "
                            f"{out.dtype}{list(out.shape)}")
        return [out]
    test = stage(cond_flat, avals)
    outs = while_p.bind(*test.consts, *body.consts, *init, cond=test.program,
                        body=body.program, cond_nconsts=len(test.consts),
                        body_nconsts=len(body.consts))
    return tree_unflatten(treedef, outs)


def _static_int(x):
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return True
    return type(x) is Array and x.shape == () and x.dtype.kind in "iu"


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, T], T], init_val: T,
              unroll: int | bool | None = None) -> T:
    """for i in range(lower, upper): val = body_fun(i, val). With concrete bounds this is
    a scan (reverse-differentiable); with traced bounds, a while_loop.

    >>> lax.fori_loop(0, 5, lambda i, total: total + i, 0)
    Array(10, dtype=int32)
    >>> fnad.grad(lambda x: lax.fori_loop(0, 3, lambda i, v: v * x, 1.0))(2.0)  # d x^3
    Array(12., dtype=float32)
    """
    dtype = _index_dtype(lower, upper)
    if _static_int(lower) and _static_int(upper):
        lo, hi = int(lower), int(upper)

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None
        (_, out), _ = scan(step, (Array(np.asarray(lo, dtype)), init_val), None,
                           length=builtins.max(hi - lo, 0))
        return out
    lower = _cast(as_value(lower, "fori_loop lower"), dtype)
    upper = _cast(as_value(upper, "fori_loop upper"), dtype)

    def body(carry):
        i, hi, val = carry
        return i + 1, hi, body_fun(i, val)
    return while_loop(lambda carry: carry[0] < carry[1], body, (lower, upper, init_val))[2]


def _index_dtype(lower, upper):
    given = [np.dtype(x.dtype) for x in (lower, upper) if hasattr(x, "dtype")]
    for x in given:
        if x.kind not in "iu":
            raise DTypeError(f"fori_loop: lower and upper must be integers, got {x}")
    return dtypes.result_type(*given) if given else dtypes.default_int()


# --------------------------------------------------------------------------- scan, map

def scan(f: Callable[[Carry, X], tuple[Carry, Y]], init: Carry, xs: X | None = None,
         length: int | None = None, reverse: bool = False, unroll: int | bool = 1
         ) -> tuple[Carry, Y]:
    """Loop f(carry, x) -> (carry, y) over the leading axis of xs; returns the final
    carry and the ys stacked. Carry, xs and ys are pytrees (ys may be None).

    With xs None, `length` gives the number of steps; `reverse` runs from the end. The
    carry must keep its structure, shapes and dtypes (a weakly typed initial carry
    takes the body's dtype). Reverse-differentiable; as jax.lax.scan.

    >>> def cumulative(total, x):
    ...     return total + x, total + x
    >>> lax.scan(cumulative, 0.0, fnp.arange(4.0))
    (Array(6., dtype=float32), Array([0., 1., 3., 6.], dtype=float32))
    """
    carry, carry_tree, weak = _leaves(init, "scan init")
    xs_flat, xs_tree, _ = _leaves(xs, "scan xs")
    length = _scan_length(xs_flat, length)
    x_avals = [ShapedArray(x.shape[1:], x.dtype) for x in xs_flat]
    in_tree = _in_tree(carry_tree, xs_tree)
    for _attempt in range(2):
        carry_avals = [_aval(c) for c in carry]
        cell = []

        def body_flat(*leaves):
            out = f(*tree_unflatten(in_tree, list(leaves)))
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError(f"scan: the body function must return a pair (carry, y), "
                                f"got {type(out).__name__}"
                                + (f" of length {len(out)}" if isinstance(out, tuple) else ""))
            new_carry, new_carry_tree = tree_flatten(out[0])
            ys, ys_tree = tree_flatten(out[1])
            cell.append((new_carry_tree, ys_tree))
            return [as_value(o, "scan body output") for o in new_carry + ys]
        body = stage(body_flat, carry_avals + x_avals)
        promote = _check_carry("scan: the body function", carry_tree, cell[0][0], carry_avals,
                               body.program.out_avals[:len(carry)], weak)
        if not promote:
            break
        carry = [_cast(c, promote[i]) if i in promote else c for i, c in enumerate(carry)]
        weak = [None] * len(carry)
    outs = scan_p.bind(*body.consts, *carry, *xs_flat, body=body.program,
                       num_consts=len(body.consts), num_carry=len(carry), length=length,
                       reverse=bool(reverse))
    return (tree_unflatten(carry_tree, outs[:len(carry)]),
            tree_unflatten(cell[0][1], outs[len(carry):]))


def _scan_length(xs, length):
    lengths = set()
    for x in xs:
        if x.ndim == 0:
            raise ShapeError("scan: every leaf of xs needs a leading axis to scan over, "
                             "got a scalar")
        lengths.add(x.shape[0])
    if length is not None:
        length = int(length)
        lengths.add(length)
    if len(lengths) > 1:
        raise ShapeError(f"scan: the leading axes of xs (and length, if given) must agree, "
                         f"got lengths {sorted(lengths)}; xs leaf shapes "
                         f"{[tuple(x.shape) for x in xs]}")
    if not lengths:
        raise ValueError("scan: with no xs, give the number of iterations as `length`")
    return lengths.pop()


def map(f: Callable[[X], Y], xs: X) -> Y:  # noqa: A001 (lax's name)
    """[f(x) for x in xs] along the leading axis, stacked: a scan with no carry."""
    _, ys = scan(lambda carry, x: ((), f(x)), (), xs)
    return ys


__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map"]
