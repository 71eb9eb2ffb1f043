"""Docstrings for the distributions' functions: each module (norm, gamma, ...) has the
same few functions with scipy.stats' meaning, so one table of what each function is says
it for all of them; functions with a docstring of their own keep it."""

_FUNCTIONS = {
    "pdf": "The probability density at x",
    "logpdf": "The log of the probability density at x",
    "pmf": "The probability mass at k",
    "logpmf": "The log of the probability mass at k",
    "cdf": "The cumulative distribution function, P(X <= x)",
    "logcdf": "The log of the cumulative distribution function",
    "sf": "The survival function, P(X > x) = 1 - cdf(x), without cancellation",
    "logsf": "The log of the survival function",
    "ppf": "The percent point function (the inverse of cdf) at probability q",
    "isf": "The inverse survival function at probability q",
    "entropy": "The differential or Shannon entropy",
}


def document(distributions):
    """Fill in the docstrings of each distribution module's functions."""
    for module in distributions:
        short = module.__name__.rpartition(".")[2]
        for name, what in _FUNCTIONS.items():
            function = getattr(module, name, None)
            if function is None or (function.__doc__ or "").strip():
                continue
            function.__doc__ = (
                f"{what} of the {short} distribution, as ``scipy.stats.{short}.{name}`` "
                f"(JAX's ``jax.scipy.stats.{short}.{name}``): the arguments in the "
                "signature broadcast together; the result is an Array that works under "
                "grad, jit and vmap.")
