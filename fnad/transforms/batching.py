"""vmap: the batching interpreter.

A BatchTracer carries a value with one extra axis, `batch_dim`, that indexes the
examples. Each primitive's batching rule maps the batched operands (and their batch
axes, None for unbatched) to the batched result, so the whole batch is one call
of the primitive: vmap never loops over examples.

`vmap(f, axis_name="i")` also names the mapped axis, so the collectives in
fnad.primitives.collectives (psum, all_gather, axis_index...) can compute over it; their
contract with this interpreter is stated there. Rules that batch by running a
program under a new BatchTrace of the same axis (jit_call, control flow, custom rules)
make it inherit the name of the trace whose rule is running.
"""
import contextvars
from typing import Any, Callable, Hashable

from ..abstract import ShapedArray
from ..core import Trace, Tracer, use_trace, current_trace, bind_custom
from ..errors import AxisSpecError, ConcretizationError, ShapeError, TreeStructureError
from ..primitives.collectives import AxisFrame, bind_axis
from ..primitives.structural import broadcast_batch, move_batch_axes, moveaxis_to
from ..tree_util import tree_flatten, tree_unflatten, tree_leaves, broadcast_prefix
from ._util import as_value
from .custom import CustomRules


class BatchTracer(Tracer):
    __slots__ = ("value", "batch_dim")

    def __init__(self, trace, value, batch_dim):
        self._trace = trace
        self.value = value
        self.batch_dim = batch_dim

    @property
    def aval(self):
        shape = list(self.value.shape)
        del shape[self.batch_dim]
        return ShapedArray(shape, self.value.dtype)

    @property
    def shape(self):
        shape = list(self.value.shape)
        del shape[self.batch_dim]
        return tuple(shape)

    @property
    def dtype(self):
        return self.value.dtype

    def concrete(self):
        raise ConcretizationError(
            f"a value batched by vmap (per-example shape {self.shape}, dtype {self.dtype}) "
            f"was used where one concrete Python value is needed (bool(), int(), float(), "
            f"an `if` on an array); under vmap each example may differ. Use fnad.lax.cond "
            f"or fnad.numpy.where instead.")


# The axis name of the BatchTrace whose batching rule is running: a BatchTrace made
# inside the rule (to batch a jitted program, a loop body, a custom rule) batches that
# same axis, so it takes the name.
_rule_axis_name = contextvars.ContextVar("fnad vmap rule axis name", default=None)
INHERIT = object()


def rule_axis_name():
    """The axis name a BatchTrace made here takes (that of the vmap whose rule is
    running; None when none or unnamed): what a cache of batched programs keys on."""
    return _rule_axis_name.get()


class _naming_rules:
    """Context for running a rule of `trace`: BatchTraces made inside take its name."""
    __slots__ = ("name", "token")

    def __init__(self, trace):
        self.name = trace.axis_name

    def __enter__(self):
        self.token = (_rule_axis_name.set(self.name)
                      if _rule_axis_name.get() is not self.name else None)

    def __exit__(self, *exc):
        if self.token is not None:
            _rule_axis_name.reset(self.token)


class BatchTrace(Trace):
    name = "vmap"

    def __init__(self, parent, axis_size, axis_name=INHERIT):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = _rule_axis_name.get() if axis_name is INHERIT else axis_name

    def split(self, args):
        values, dims, batched = [], [], False
        for a in args:
            if type(a) is BatchTracer and a._trace is self:
                values.append(a.value)
                dims.append(a.batch_dim)
                batched = True
            else:
                values.append(a)
                dims.append(None)
        return values, dims, batched

    def wrap(self, out, dim):
        return out if dim is None else BatchTracer(self, out, dim)

    def process(self, prim, args, params):
        values, dims, batched = self.split(args)
        # A collective (a primitive with an axis_name param) that names this axis is
        # this trace's to compute even when no operand is batched.
        collective = "axis_name" in params
        if not batched and not (collective and self.axis_name is not None
                                and self.axis_name in params["axis_name"]):
            return self.bind_in_parent(prim, values, params)
        if prim.batch is None:
            raise TypeError(f"vmap: primitive {prim.name} was declared with batch=None; "
                            f"every primitive needs a batching rule (its `batch` slot)")
        with use_trace(self.parent), _naming_rules(self):
            if collective:
                out, out_dims = prim.batch(values, dims, vmap_axis=(self.axis_name,
                                                                    self.axis_size), **params)
            else:
                out, out_dims = prim.batch(values, dims, **params)
        if prim.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, out_dims)]
        return self.wrap(out, out_dims)

    def process_custom(self, rules, args):
        values, dims, batched = self.split(args)
        with use_trace(self.parent), _naming_rules(self):
            if not batched:
                return bind_custom(rules, values)
            size = self.axis_size
            moved = move_batch_axes(values, dims, 0)
            outs = bind_custom(batch_rules(rules, [d is not None for d in dims], size), moved)
        return [BatchTracer(self, o, 0) for o in outs]


def batch_rules(rules, batched, size):
    """CustomRules over batched arrays (batch axis 0 where `batched`), built by
    vmapping the function and each of its rules: custom derivatives survive vmap."""
    dims = [0 if b else None for b in batched]
    n_res = []

    def fwd(primals):
        def both(*xs):
            outs, res = rules.fwd(list(xs))
            n_res[:] = [len(outs)]
            return list(outs) + list(res)
        flat = vmap_flat(both, primals, dims, size)
        return flat[:n_res[0]], flat[n_res[0]:]

    def bwd(residuals, cts):
        r = len(residuals)
        return vmap_flat(lambda *rc: rules.bwd(list(rc[:r]), list(rc[r:])),
                         list(residuals) + list(cts), [0] * (r + len(cts)), size)

    def jvp(primals, tangents):
        n = len(primals)

        def both(*pt):
            outs, t_outs = rules.jvp(list(pt[:n]), list(pt[n:]))
            return list(outs) + list(t_outs)
        flat = vmap_flat(both, list(primals) + list(tangents), dims + dims, size)
        return flat[:len(flat) // 2], flat[len(flat) // 2:]

    return CustomRules(
        fun=lambda xs: vmap_flat(lambda *ys: rules.fun(list(ys)), xs, dims, size),
        jvp=jvp, fwd=fwd, bwd=bwd)


def vmap_flat(fun, values, dims, size, keep_unbatched=False, axis_name=INHERIT):
    """Run fun on per-example views of flat `values` batched along `dims`; returns the
    flat outputs with their batch axis at 0. With keep_unbatched, outputs that do not
    depend on the batch are returned as they are, paired with a batched flag. A given
    axis_name (None: no name) is bound while fun runs; by default the trace takes the
    name of the vmap whose rule is running, if any."""
    trace = BatchTrace(current_trace(), size, axis_name)
    tracers = [BatchTracer(trace, v, d) if d is not None else v for v, d in zip(values, dims)]
    try:
        if axis_name is INHERIT or axis_name is None:
            with use_trace(trace):
                outs = fun(*tracers)
        else:
            with use_trace(trace), bind_axis(AxisFrame(axis_name, size)):
                outs = fun(*tracers)
    finally:
        trace.alive = False
    result = []
    for o in outs:
        if o is None:               # a symbolic zero (e.g. from a custom bwd) stays one
            out, batched = None, False
        elif type(o) is BatchTracer and o._trace is trace:
            out, batched = moveaxis_to(o.value, o.batch_dim, 0), True
        elif keep_unbatched:
            out, batched = as_value(o, "vmap output"), False
        else:
            out, batched = broadcast_batch(as_value(o, "vmap output"), size), True
        result.append((out, batched) if keep_unbatched else out)
    return result


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0,
         axis_name: Hashable | None = None, axis_size: int | None = None
         ) -> Callable[..., Any]:
    """Vectorize fun over a new leading (or in_axes-given) axis of its arguments.

    As in JAX: in_axes is an int, None, or a tuple with one entry per positional
    argument, each entry a prefix tree of its argument (a leaf int or None stands
    for its whole subtree); out_axes is a prefix tree of the output; keyword
    arguments are mapped along axis 0. axis_name names the mapped axis for the
    collectives fun calls (fnad.lax.psum(x, axis_name) sums over the examples,
    fnad.lax.axis_index(axis_name) is each example's position); an inner vmap's name
    shadows an outer one's.

    Each primitive's batching rule moves the batch axis through it: no Python loop
    runs, and the result can be jitted and differentiated. Mapped arguments must agree
    on the batch size (ShapeError otherwise).

    >>> fnad.vmap(fnp.dot, in_axes=(0, None))(fnp.ones((2, 3)), fnp.arange(3.0))
    Array([3., 3.], dtype=float32)
    >>> per_example = fnad.vmap(fnad.grad(lambda w, x: fnp.dot(w, x) ** 2),
    ...                         in_axes=(None, 0))
    >>> per_example(fnp.asarray([1.0, 1.0]), fnp.eye(2))
    Array([[2., 0.],
           [0., 2.]], dtype=float32)
    """
    in_axes = _check_in_axes(in_axes)
    _check_axis_name(axis_name)
    _check_axis_leaves(out_axes, "out_axes")

    def vmapped(*args, **kwargs):
        flat, in_tree = tree_flatten((args, kwargs))
        axes = _in_axes_per_leaf(in_axes, args, kwargs)
        n_positional = len(flat) - len(tree_leaves(kwargs))
        values, dims = [], []
        for i, (x, ax) in enumerate(zip(flat, axes)):
            if ax is None:
                values.append(x)
                dims.append(None)
                continue
            x = as_value(x, "vmap argument")
            if not -x.ndim <= ax < x.ndim:
                where = (f"leaf {i}" if i < n_positional else
                         "a keyword argument; keyword arguments are mapped along axis 0, "
                         "so pass it positionally with in_axes None to leave it unmapped")
                raise ShapeError(f"vmap: in_axes {ax} is out of range for an argument of "
                                 f"shape {tuple(x.shape)} ({where})")
            values.append(x)
            dims.append(ax % x.ndim)
        sizes = {x.shape[d] for x, d in zip(values, dims) if d is not None}
        if axis_size is not None:
            sizes.add(axis_size)
        if len(sizes) != 1:
            detail = ", ".join(f"leaf {i}: axis {d} of shape {tuple(x.shape)}"
                               for i, (x, d) in enumerate(zip(values, dims)) if d is not None)
            raise ShapeError("vmap: " + ("no argument is batched and axis_size is not "
                                         "given" if not sizes else
                                         f"inconsistent sizes {sorted(sizes)} for the mapped "
                                         f"axes ({detail})"))
        size = sizes.pop()
        out_tree_cell = []

        def flat_fun(*leaves):
            call_args, call_kwargs = tree_unflatten(in_tree, list(leaves))
            out = fun(*call_args, **call_kwargs)
            flat_out, out_tree = tree_flatten(out)
            out_tree_cell.append(out_tree)
            return flat_out

        outs = vmap_flat(flat_fun, values, dims, size, keep_unbatched=True,
                         axis_name=axis_name)
        out_tree = out_tree_cell[0]
        out_axes_flat = broadcast_prefix(
            out_axes, tree_unflatten(out_tree, [o for o, _ in outs]),
            is_leaf=_is_none, name="vmap out_axes", full_name="output")
        final = []
        for (o, batched), ax in zip(outs, out_axes_flat):
            if ax is None:
                if batched:
                    raise ShapeError(f"vmap: out_axes=None for an output of per-example "
                                     f"shape {tuple(o.shape[1:])} that depends on the mapped "
                                     f"axis; only batch-independent outputs can be unmapped")
                final.append(o)
                continue
            if not batched:
                o = broadcast_batch(o, size)
            if not -o.ndim <= ax < o.ndim:
                raise ShapeError(f"vmap: out_axes {ax} is out of range for an output of "
                                 f"shape {tuple(o.shape[1:])}")
            final.append(moveaxis_to(o, 0, ax % o.ndim))
        return tree_unflatten(out_tree, final)
    vmapped.__name__ = f"vmap({getattr(fun, '__name__', 'fun')})"
    vmapped.__wrapped__ = fun  # type: ignore[attr-defined]
    return vmapped


def _is_none(x):
    return x is None


def _check_axis_name(axis_name):
    try:
        hash(axis_name)
    except TypeError:
        raise AxisSpecError(f"vmap: axis_name must be hashable (a string), got "
                            f"{axis_name!r}") from None


def _check_in_axes(in_axes):
    if isinstance(in_axes, list):      # JAX takes a list of per-argument entries too
        in_axes = tuple(in_axes)
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise AxisSpecError(f"vmap: in_axes must be an int, None, or a tuple with one entry "
                            f"per positional argument, got {in_axes!r}")
    _check_axis_leaves(in_axes, "in_axes")
    return in_axes


def _check_axis_leaves(axes, what):
    for leaf in tree_leaves(axes, is_leaf=_is_none):
        if leaf is not None and type(leaf) is not int:
            raise AxisSpecError(
                f"vmap: {what} must be an int, None, or a (nested) tuple/list/dict of them, "
                f"but {what}={axes!r} holds {leaf!r} of type {type(leaf).__name__}"
                + ("; write int(...) for a numpy integer" if hasattr(leaf, "__index__")
                   and not isinstance(leaf, bool) else ""))


def _in_axes_per_leaf(in_axes, args, kwargs):
    """One axis (int or None) per flat leaf of (args, kwargs): in_axes is matched to
    args as a prefix tree; keyword arguments are mapped along axis 0, as in JAX."""
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise TreeStructureError(
            f"vmap: in_axes must be an int, None, or a tuple with one entry per positional "
            f"argument ({len(args)}), got {len(in_axes)}: {in_axes!r}")
    axes = broadcast_prefix(in_axes, args, is_leaf=_is_none, name="vmap in_axes",
                            full_name="argument")
    return axes + [0] * len(tree_leaves(kwargs))
