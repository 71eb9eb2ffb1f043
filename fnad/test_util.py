"""check_grads: test a function's derivatives against central finite differences.
Complex values are perturbed along random complex directions, and cotangents pair with
tangents as Re(ct * t) (JAX's convention, no conjugate)."""
import numpy as np
from typing import Any, Callable, Sequence

from .numpy import asarray
from .tree_util import tree_flatten, tree_unflatten
from .transforms.jvp import jvp
from .transforms.vjp import vjp


def _as_float64(x):
    return np.asarray(x, dtype=np.complex128 if np.iscomplexobj(x) else np.float64)


_LOW_PRECISION = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)}


def _default_tolerance(args):
    dtypes = {np.asarray(a).dtype for a in tree_flatten(args)[0]}
    return 1e-2 if dtypes & _LOW_PRECISION else 1e-5


def _random_like(rng, flat):
    out = []
    for x in flat:
        shape, dtype = np.shape(x), np.asarray(x).dtype
        t = rng.standard_normal(shape)
        if dtype.kind == "c":
            t = t + 1j * rng.standard_normal(shape)
        out.append(np.asarray(t, dtype=dtype))
    return out


def _numerical_jvp(f, flat_args, tree, tangents, eps):
    """Central difference (f(x + eps t) - f(x - eps t)) / 2 eps, leaf by leaf."""
    def at(sign):
        shifted = [np.asarray(x) + sign * eps * np.asarray(t, dtype=np.asarray(x).dtype)
                   for x, t in zip(flat_args, tangents)]
        out = f(*tree_unflatten(tree, [_to_fnad(s) for s in shifted]))
        return [_as_float64(o) for o in tree_flatten(out)[0]]
    plus, minus = at(+1), at(-1)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _to_fnad(x):
    return asarray(x)


def _check_close(what, actual, expected, atol, rtol):
    actual = [_as_float64(a) for a in actual]
    for i, (a, e) in enumerate(zip(actual, expected)):
        if not np.allclose(a, e, atol=atol, rtol=rtol, equal_nan=True):
            err = np.max(np.abs(a - e)) if a.size else 0.0
            raise AssertionError(
                f"{what} (output leaf {i}) differs from finite differences by up to "
                f"{err:.3g} (atol={atol}, rtol={rtol})\nautodiff:\n{a}\nnumerical:\n{e}")


def check_jvp(f: Callable[..., Any], args: Sequence[Any], *, atol: float, rtol: float, eps: float,
              rng: np.random.Generator) -> None:
    """Check f's forward-mode derivative: jvp(f) along random tangents must match central
    finite differences (in float64) within atol/rtol."""
    flat, tree = tree_flatten(tuple(args))
    flat = [np.asarray(x) for x in flat]
    tangents = _random_like(rng, flat)
    _, t_out = jvp(f, tuple(tree_unflatten(tree, [_to_fnad(x) for x in flat])),
                   tuple(tree_unflatten(tree, [_to_fnad(t) for t in tangents])))
    expected = _numerical_jvp(f, flat, tree, tangents, eps)
    _check_close("jvp", tree_flatten(t_out)[0], expected, atol, rtol)


def check_vjp(f: Callable[..., Any], args: Sequence[Any], *, atol: float, rtol: float, eps: float,
              rng: np.random.Generator) -> None:
    """<vjp(ct), t> must equal <ct, jvp(t)>, with the jvp taken numerically."""
    flat, tree = tree_flatten(tuple(args))
    flat = [np.asarray(x) for x in flat]
    out, pullback = vjp(f, *tree_unflatten(tree, [_to_fnad(x) for x in flat]))
    out_flat, out_tree = tree_flatten(out)
    cotangents = _random_like(rng, out_flat)
    ct_in = tree_flatten(pullback(tree_unflatten(out_tree, [_to_fnad(c) for c in cotangents])))[0]
    tangents = _random_like(rng, flat)
    numerical = _numerical_jvp(f, flat, tree, tangents, eps)
    lhs = sum(np.sum(np.real(_as_float64(c) * _as_float64(t)))
              for c, t in zip(ct_in, tangents))
    rhs = sum(np.sum(np.real(_as_float64(c) * n)) for c, n in zip(cotangents, numerical))
    scale = max(1.0, abs(rhs))
    if not abs(lhs - rhs) <= atol + rtol * scale:
        raise AssertionError(f"vjp disagrees with finite differences: <vjp(ct), t> = {lhs:.8g}"
                             f" but <ct, (f(x+eps t) - f(x-eps t))/2eps> = {rhs:.8g}")


def check_grads(f: Callable[..., Any], args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None, seed: int = 0) -> None:
    """Check f's derivatives up to `order` in the given modes against central finite
    differences. Each higher order checks the derivative of the lower-order
    derivative function (a jvp or vjp of f), in every requested mode."""
    if isinstance(modes, str):
        modes = (modes,)
    tol = _default_tolerance(args)
    atol = tol if atol is None else atol
    rtol = tol if rtol is None else rtol
    if eps is None:
        eps = 1e-4 if tol < 1e-3 else 1e-2
    rng = np.random.default_rng(seed)

    def check(fun, fun_args, remaining):
        if "fwd" in modes:
            check_jvp(fun, fun_args, atol=atol, rtol=rtol, eps=eps, rng=rng)
            if remaining > 1:
                tangents = [_to_fnad(t) for t in _random_like(rng, tree_flatten(fun_args)[0])]
                _, t_tree = tree_flatten(tuple(fun_args))
                t_args = tree_unflatten(t_tree, tangents)

                def jvp_of(*xs):
                    return jvp(fun, xs, tuple(t_args))[1]
                check(jvp_of, fun_args, remaining - 1)
        if "rev" in modes:
            check_vjp(fun, fun_args, atol=atol, rtol=rtol, eps=eps, rng=rng)
            if remaining > 1:
                out = fun(*fun_args)
                out_flat, out_tree = tree_flatten(out)
                cts = tree_unflatten(out_tree, [_to_fnad(c) for c in _random_like(rng, out_flat)])

                def vjp_of(*xs):
                    return vjp(fun, *xs)[1](cts)
                check(vjp_of, fun_args, remaining - 1)

    check(f, tuple(args), order)
