"""Functions that bring their own derivatives: custom_jvp, custom_vjp, and the
mechanism fnad.ad_checkpoint's checkpoint is built on.

All of them reduce to one mechanism, `CustomRules`: the function itself, a JVP rule
(for forward mode) and a fwd/bwd pair (for reverse mode), over flat lists of
arrays. Each decorator supplies the rule it was given and derives the other by
transposition, which is exact because a JVP is linear in its tangents and a VJP in
its cotangents:
  * the VJP of a custom JVP is the transpose of t -> jvp(x, t);
  * the JVP of a custom VJP is the transpose of g -> bwd(res, g);
  * checkpoint (fnad.ad_checkpoint) keeps the inputs and what its policy saves for
    the backward pass and re-runs the rest of the function under `vjp` there.
custom_gradient is a custom_vjp whose fwd returns the vjp function itself;
checkpoint_name is the identity primitive the checkpoint policies look for.
"""
import functools

from ..dtypes import kind_of as dtype_kind
from ..core import Primitive, bind_custom
from ..primitives import onnx_rules
from ..tree_util import register_pytree_node, tree_flatten, tree_unflatten
from ._util import as_value, zeros_like, check_argnums, resolve_argnums
from .vjp import vjp as _vjp


class CustomRules:
    __slots__ = ("fun", "jvp", "fwd", "bwd")

    def __init__(self, fun, jvp, fwd, bwd):
        self.fun, self.jvp, self.fwd, self.bwd = fun, jvp, fwd, bwd


def _is_float(x):
    return dtype_kind(x.dtype) in "fc"


def pullback_floats(flat_fun, point, cotangents):
    """The VJP of flat_fun (a function of a flat list) at `point`, with respect to the
    float entries only; the other entries get None."""
    float_at = [i for i, x in enumerate(point) if _is_float(x)]

    def on_floats(*floats):
        args = list(point)
        for i, f in zip(float_at, floats):
            args[i] = f
        return flat_fun(args)

    _, pullback = _vjp(on_floats, *[point[i] for i in float_at])
    out = [None] * len(point)
    for i, ct in zip(float_at, pullback(list(cotangents))):
        out[i] = ct
    return out


def linear_transpose(linear_fun, example_inputs, cotangents):
    """Apply the transpose of `linear_fun`, linear in the float entries of its flat
    input list, to `cotangents`: its VJP, taken anywhere, e.g. at zero."""
    zero = [zeros_like(x) if _is_float(x) else x for x in example_inputs]
    return pullback_floats(linear_fun, zero, cotangents)


class _Flattened:
    """A pytree function seen as a function of a flat list of arrays."""

    def __init__(self, fun, in_tree):
        self.fun = fun
        self.in_tree = in_tree
        self.out_tree = None

    def __call__(self, flat_args):
        out = self.fun(*tree_unflatten(self.in_tree, flat_args))
        flat_out, self.out_tree = tree_flatten(out)
        return [as_value(o, "custom function output") for o in flat_out]


def _flatten_args(args):
    flat, tree = tree_flatten(args)
    return [as_value(x, "custom function input") for x in flat], tree


def _split_nondiff(args, nondiff_argnums, transform, what="nondiff_argnums"):
    # In position order, as JAX hands them to the rules, whatever order they were given.
    nondiff_argnums = sorted(resolve_argnums(nondiff_argnums, len(args), transform, what))
    static = tuple(args[i] for i in nondiff_argnums)
    dynamic = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)

    def merge(dyn):
        it = iter(dyn)
        st = iter(static)
        return tuple(next(st) if i in nondiff_argnums else next(it)
                     for i in range(len(args)))
    return static, dynamic, merge


class custom_jvp:
    """Decorator for a function with a hand-written JVP rule:

        @custom_jvp
        def f(x): ...
        @f.defjvp
        def f_jvp(primals, tangents): return f(*primals), tangent_out
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = check_argnums(nondiff_argnums, type(self).__name__,
                                             "nondiff_argnums", allow_empty=True)[1]
        self.jvp_rule = None

    def defjvp(self, jvp_rule):
        self.jvp_rule = jvp_rule
        return jvp_rule

    def defjvps(self, *tangent_rules):
        """One rule per (differentiable) argument: rule(tangent, primal_out, *primals)
        -> its contribution to the output tangent, or None for an argument the output
        does not depend on. The contributions are summed."""
        def jvp_rule(*args):
            static, (primals, tangents) = args[:-2], args[-2:]
            if len(tangent_rules) != len(primals):
                raise TypeError(f"custom_jvp {self.__name__}: defjvps got "
                                f"{len(tangent_rules)} rules for {len(primals)} arguments")
            out = self.fun(*_merge_static(static, primals, self.nondiff_argnums))
            total = None
            for rule, t in zip(tangent_rules, tangents):
                if rule is None:
                    continue
                term = rule(t, out, *primals)
                total = term if total is None else _tree_add(total, term)
            if total is None:
                total = _tree_zeros(out)
            return out, total
        self.jvp_rule = jvp_rule

    def __call__(self, *args):
        if self.jvp_rule is None:
            raise AttributeError(f"custom_jvp function {self.__name__} has no JVP rule; "
                                 f"define one with @{self.__name__}.defjvp")
        static, dynamic, merge = _split_nondiff(args, self.nondiff_argnums,
                                                type(self).__name__)
        flat, in_tree = _flatten_args(dynamic)
        fun = _Flattened(lambda *dyn: self.fun(*merge(dyn)), in_tree)

        def jvp(primals, tangents):
            out, t_out = self.jvp_rule(*static, tree_unflatten(in_tree, primals),
                                       tree_unflatten(in_tree, tangents))
            flat_out, fun.out_tree = tree_flatten(out)
            flat_t, t_tree = tree_flatten(t_out)
            if t_tree != fun.out_tree:
                raise ValueError(f"custom_jvp rule of {self.__name__}: the tangent output "
                                 f"structure {t_tree} differs from the primal's {fun.out_tree}")
            return ([as_value(o, "custom_jvp output") for o in flat_out],
                    [as_value(t, "custom_jvp tangent") for t in flat_t])

        def fwd(primals):
            return fun(primals), primals

        def bwd(primals, cotangents):
            return linear_transpose(lambda tangents: jvp(primals, tangents)[1],
                                    primals, cotangents)

        out = bind_custom(CustomRules(fun, jvp, fwd, bwd), flat)
        return tree_unflatten(fun.out_tree, out)


def _merge_static(static, dynamic, nondiff_argnums):
    """The full argument list from the nondiff (static) and other arguments."""
    n = len(static) + len(dynamic)
    positions = sorted(i % n for i in nondiff_argnums)
    st, dyn = iter(static), iter(dynamic)
    return tuple(next(st) if i in positions else next(dyn) for i in range(n))


def _tree_add(a, b):
    leaves_a, tree = tree_flatten(a)
    leaves_b, tree_b = tree_flatten(b)
    if tree != tree_b:
        raise ValueError(f"custom_jvp defjvps: tangent contributions of structures {tree} "
                         f"and {tree_b} cannot be summed")
    return tree_unflatten(tree, [x + y for x, y in zip(leaves_a, leaves_b)])


def _tree_zeros(out):
    leaves, tree = tree_flatten(out)
    return tree_unflatten(tree, [zeros_like(as_value(x, "custom_jvp output")) for x in leaves])


class custom_vjp:
    """Decorator for a function with a hand-written VJP:

        @custom_vjp
        def f(x): ...
        def f_fwd(x): return f(x), residuals
        def f_bwd(residuals, g): return (cotangent_for_x,)
        f.defvjp(f_fwd, f_bwd)
    """

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = check_argnums(nondiff_argnums, type(self).__name__,
                                             "nondiff_argnums", allow_empty=True)[1]
        self.fwd_rule = self.bwd_rule = None

    def defvjp(self, fwd, bwd):
        self.fwd_rule, self.bwd_rule = fwd, bwd

    def __call__(self, *args):
        if self.fwd_rule is None:
            raise AttributeError(f"custom_vjp function {self.__name__} has no VJP rule; "
                                 f"define one with {self.__name__}.defvjp(fwd, bwd)")
        static, dynamic, merge = _split_nondiff(args, self.nondiff_argnums,
                                                type(self).__name__)
        flat, in_tree = _flatten_args(dynamic)
        fun = _Flattened(lambda *dyn: self.fun(*merge(dyn)), in_tree)
        res_tree = []

        def fwd(primals):
            out, res = self.fwd_rule(*merge(tree_unflatten(in_tree, primals)))
            flat_out, fun.out_tree = tree_flatten(out)
            flat_res, tree = tree_flatten(res)
            res_tree.append(tree)
            return [as_value(o, "custom_vjp output") for o in flat_out], flat_res

        def bwd(residuals, cotangents):
            cts = self.bwd_rule(*static, tree_unflatten(res_tree[0], residuals),
                                tree_unflatten(fun.out_tree, cotangents))
            if not isinstance(cts, (tuple, list)) or len(cts) != len(in_tree.children):
                raise TypeError(f"custom_vjp bwd of {self.__name__} must return a tuple "
                                f"with one cotangent per differentiable argument "
                                f"({len(in_tree.children)}), got {cts!r:.200}")
            flat_ct, start = [], 0
            for i, (ct, arg_tree) in enumerate(zip(cts, in_tree.children)):
                n = arg_tree.num_leaves
                if ct is None:      # None: a zero cotangent for the whole argument, as in JAX
                    flat_ct += [zeros_like(x) for x in flat[start:start + n]]
                else:
                    leaves, ct_tree = tree_flatten(ct)
                    if ct_tree != arg_tree:
                        raise ValueError(
                            f"custom_vjp bwd of {self.__name__} returned a cotangent of "
                            f"structure {ct_tree} for argument {i}, whose structure is "
                            f"{arg_tree}")
                    flat_ct += leaves
                start += n
            return flat_ct

        def jvp(primals, tangents):
            outs, residuals = fwd(primals)
            t_out = linear_transpose(lambda cts: bwd(residuals, cts), outs, tangents)
            return outs, [zeros_like(o) if t is None else t for t, o in zip(t_out, outs)]

        out = bind_custom(CustomRules(fun, jvp, fwd, bwd), flat)
        return tree_unflatten(fun.out_tree, out)


def custom_gradient(fun):
    """Decorator for fun(*args) -> (value, vjp_fn), vjp_fn(cotangent) -> a tuple of
    one cotangent per argument (JAX's custom_gradient): differentiating the decorated
    function calls vjp_fn; evaluating it returns value."""
    @custom_vjp
    def wrapped(*args):
        return fun(*args)[0]

    def fwd(*args):
        value, vjp_fn = fun(*args)
        return value, _Opaque(vjp_fn)

    def bwd(residual, cotangent):
        cts = residual.value(cotangent)
        return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)
    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped


class _Opaque:
    """A residual that is no array (custom_gradient's vjp_fn): a pytree with no leaves,
    carried as structure."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


register_pytree_node(_Opaque, lambda o: ((), o.value), lambda value, _: _Opaque(value))


# --------------------------------------------------------------------------- checkpoint_name

def _name_batch(args, dims, name):
    return checkpoint_name_p.bind(args[0], name=name), dims[0]


# The identity, carrying a name that checkpoint policies (save_only_these_names, ...)
# look for. Its index map is the identity, so a jitted program pays nothing for it, and
# the optimizer removes it outright.
checkpoint_name_p = Primitive(
    "checkpoint_name",
    abstract_eval=lambda aval, name: aval,
    impl=lambda x, name: x,
    jvp=lambda primals, tangents, name: (
        checkpoint_name_p.bind(primals[0], name=name),
        None if tangents[0] is None else checkpoint_name_p.bind(tangents[0], name=name)),
    vjp=lambda cotangent, out, x, name: [cotangent],
    batch=_name_batch,
    index_map=lambda out_indices, in_shape, name: list(out_indices),
    simplify=lambda eqn, producer_of: eqn.inputs[0],
    onnx=onnx_rules.node("Identity"))


def checkpoint_name(x, name):
    """x itself, named `name` for checkpoint policies: with
    policy=checkpoint_policies.save_only_these_names(name), checkpoint keeps it for the
    backward pass instead of recomputing it. Applies to each leaf of a pytree."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: the name must be a str, got {type(name).__name__}")
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [checkpoint_name_p.bind(as_value(leaf, "checkpoint_name"),
                                                        name=name) for leaf in leaves])
