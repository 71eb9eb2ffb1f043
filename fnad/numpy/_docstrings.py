"""Docstrings for fnad.numpy's thin wrappers: functions whose arguments and results are
numpy's, so their documentation is a summary line, a pointer to numpy's function of the
same name, and what fnad does differently (which is the same for all of them, stated
once in `_FNAD`). Functions with behaviour of their own carry their own docstrings in
their modules; `document` only fills in the ones that have none."""
import numpy

_FNAD = ("Follows ``numpy.{name}`` for the arguments in the signature. Differences, as in "
         "``jax.numpy``: the result is an immutable :class:`fnad.Array` (no ``out=``), its "
         "dtype follows fnad's promotion rule (the dtypes guide), and the function works "
         "under :func:`fnad.grad`, :func:`fnad.jit` and :func:`fnad.vmap`.")

_JAX_ONLY = ("As ``jax.numpy.{name}`` (numpy has no such function): the result is an "
             "immutable :class:`fnad.Array`, and the function works under :func:`fnad.grad`, "
             ":func:`fnad.jit` and :func:`fnad.vmap`.")

_UNARY = {
    "abs": "The absolute value, elementwise (the modulus of complex values).",
    "acos": "The inverse cosine, elementwise.", "acosh": "The inverse hyperbolic cosine.",
    "asin": "The inverse sine, elementwise.", "asinh": "The inverse hyperbolic sine.",
    "atan": "The inverse tangent, elementwise.", "atanh": "The inverse hyperbolic tangent.",
    "cbrt": "The real cube root, elementwise.", "ceil": "The smallest integer >= x, elementwise.",
    "conj": "The complex conjugate, elementwise (real values unchanged).",
    "cos": "The cosine, elementwise (radians).", "cosh": "The hyperbolic cosine.",
    "deg2rad": "Degrees to radians.", "rad2deg": "Radians to degrees.",
    "exp": "e to the power x, elementwise.", "exp2": "2 to the power x, elementwise.",
    "expm1": "exp(x) - 1, accurate for small x.", "floor": "The largest integer <= x.",
    "imag": "The imaginary part (zeros for real values).",
    "real": "The real part (real values unchanged).",
    "invert": "Bitwise NOT of integers; logical NOT of booleans.",
    "isfinite": "True where x is neither infinite nor NaN.", "isinf": "True where x is +-inf.",
    "isnan": "True where x is NaN.", "isneginf": "True where x is -inf.",
    "isposinf": "True where x is +inf.", "iscomplex": "True where x has a nonzero imaginary part.",
    "isreal": "True where x has a zero imaginary part.",
    "log": "The natural logarithm, elementwise.", "log10": "The base-10 logarithm.",
    "log1p": "log(1 + x), accurate for small x.", "log2": "The base-2 logarithm.",
    "logical_not": "The truth value of NOT x, elementwise.", "negative": "-x, elementwise.",
    "positive": "+x, elementwise (a copy).", "reciprocal": "1 / x, elementwise.",
    "rsqrt": "1 / sqrt(x), elementwise (as jax.numpy; numpy has no rsqrt).",
    "sign": "The sign of x: -1, 0 or 1 (NaN for NaN; x/|x| for complex).",
    "signbit": "True where the sign bit is set (-0.0 included).",
    "sin": "The sine, elementwise (radians).", "sinh": "The hyperbolic sine.",
    "sinc": "The normalized sinc function, sin(pi x) / (pi x), with sinc(0) = 1.",
    "sqrt": "The non-negative square root, elementwise.", "square": "x * x, elementwise.",
    "tan": "The tangent, elementwise (radians).", "tanh": "The hyperbolic tangent.",
    "trunc": "x rounded toward zero, elementwise.",
    "around": "x rounded to `decimals` decimals, halves to even.",
    "nan_to_num": "x with NaN, +inf and -inf replaced by finite numbers.",
}
_BINARY = {
    "add": "x + y, elementwise with broadcasting.", "subtract": "x - y, elementwise.",
    "multiply": "x * y, elementwise.", "divide": "x / y, true division, elementwise.",
    "floor_divide": "x // y: the quotient rounded toward -inf, elementwise.",
    "remainder": "x % y with the sign of y, elementwise (numpy's mod).",
    "fmod": "The C remainder of x / y, with the sign of x, elementwise.",
    "divmod": "The pair (x // y, x % y).", "power": "x ** y, elementwise.",
    "arctan2": "The angle of the point (y, x) -- arctan(x1 / x2) in the right quadrant.",
    "copysign": "The magnitude of x with the sign of y.",
    "hypot": "sqrt(x**2 + y**2) without overflow or underflow.",
    "logaddexp": "log(exp(x) + exp(y)) without overflow.",
    "logaddexp2": "log2(2**x + 2**y) without overflow.",
    "maximum": "The larger of x and y, elementwise (NaN if either is NaN).",
    "minimum": "The smaller of x and y, elementwise (NaN if either is NaN).",
    "equal": "x == y, elementwise.", "not_equal": "x != y, elementwise.",
    "less": "x < y, elementwise.", "less_equal": "x <= y, elementwise.",
    "greater": "x > y, elementwise.", "greater_equal": "x >= y, elementwise.",
    "bitwise_and": "x & y, elementwise (integers and booleans).",
    "bitwise_or": "x | y, elementwise.", "bitwise_xor": "x ^ y, elementwise.",
    "logical_and": "The truth value of x AND y.", "logical_or": "The truth value of x OR y.",
    "logical_xor": "The truth value of x XOR y.",
    "allclose": "True if all of a and b are equal within the tolerances.",
}
_REDUCTIONS = {
    "all": "True if every element along `axis` is true.",
    "any": "True if some element along `axis` is true.",
    "amax": "The maximum along `axis` (NaN if a NaN is there).",
    "amin": "The minimum along `axis` (NaN if a NaN is there).",
    "argmax": "Indices of the maxima along `axis` (the first one on ties).",
    "argmin": "Indices of the minima along `axis` (the first one on ties).",
    "average": "The weighted average along `axis`.",
    "count_nonzero": "The number of nonzero elements along `axis`.",
    "cumprod": "The cumulative product along `axis`.",
    "cumsum": "The cumulative sum along `axis`.",
    "cumulative_prod": "The cumulative product (the array-API form, `include_initial`).",
    "cumulative_sum": "The cumulative sum (the array-API form, `include_initial`).",
    "mean": "The arithmetic mean along `axis`.", "prod": "The product along `axis`.",
    "std": "The standard deviation along `axis` (`ddof` as numpy).",
    "sum": "The sum along `axis`, accumulated pairwise as numpy's.",
    "var": "The variance along `axis` (`ddof` as numpy).",
    "trace": "The sum along a diagonal.",
    "percentile": "The q-th percentiles along `axis`.",
    "nanargmax": "Indices of the maxima ignoring NaN; -1 for an all-NaN slice (numpy raises).",
    "nanargmin": "Indices of the minima ignoring NaN; -1 for an all-NaN slice (numpy raises).",
    "nancumprod": "The cumulative product, NaN counted as 1.",
    "nancumsum": "The cumulative sum, NaN counted as 0.",
    "nanmax": "The maximum ignoring NaN.", "nanmin": "The minimum ignoring NaN.",
    "nanmean": "The mean ignoring NaN.", "nanmedian": "The median ignoring NaN.",
    "nanpercentile": "The q-th percentiles ignoring NaN.",
    "nanprod": "The product, NaN counted as 1.", "nansum": "The sum, NaN counted as 0.",
    "nanstd": "The standard deviation ignoring NaN.", "nanvar": "The variance ignoring NaN.",
}
_ARRAYS = {
    "arange": "Evenly spaced values in [start, stop).",
    "array_str": "The string numpy prints for the array's values (runs on the host).",
    "blackman": "The Blackman window of M points.", "hamming": "The Hamming window.",
    "hanning": "The Hann window.",
    "broadcast_arrays": "The arrays broadcast to their common shape.",
    "broadcast_shapes": "The shape that the given shapes broadcast to.",
    "broadcast_to": "The array broadcast to `shape`.",
    "clip": "a limited to [a_min, a_max], elementwise.",
    "column_stack": "1-d arrays as columns of a 2-d array.",
    "concatenate": "The arrays joined along an existing axis.",
    "diag": "The k-th diagonal of a 2-d array, or a 2-d array with v on its diagonal.",
    "diag_indices": "The indices of the main diagonal of an n x ... x n array.",
    "diag_indices_from": "The indices of the main diagonal of `arr`.",
    "dot": "The dot product (matrix product for 2-d arrays).",
    "dot_general": "The general contraction of lax.dot_general (JAX's jax.numpy re-export).",
    "empty": "An array of `shape`; fnad's is filled with zeros (arrays are immutable, so "
             "there is nothing to gain from leaving it uninitialized).",
    "empty_like": "An array shaped like `a`, filled with zeros (see `empty`).",
    "expand_dims": "a with a new axis of length 1 at `axis`.",
    "eye": "A 2-d array with ones on the k-th diagonal.",
    "flip": "a with the order of elements reversed along `axis`.",
    "fliplr": "a reversed along axis 1.", "flipud": "a reversed along axis 0.",
    "full": "An array of `shape` filled with `fill_value`.",
    "full_like": "An array shaped like `a` filled with `fill_value`.",
    "histogram_bin_edges": "The edges of the bins `histogram` would use.",
    "hstack": "Arrays stacked column-wise (along axis 1, or 0 for 1-d arrays).",
    "identity": "The n x n identity matrix.", "inner": "The inner product over the last axes.",
    "iscomplexobj": "True if x has a complex dtype.", "isrealobj": "True if x has no complex dtype.",
    "matmul": "The matrix product, broadcasting over leading axes (the @ operator).",
    "matrix_transpose": "The last two axes swapped.",
    "meshgrid": "Coordinate arrays from coordinate vectors.",
    "moveaxis": "a with axes moved to new positions.",
    "ndim": "The number of axes of a.", "shape": "The shape of a.",
    "size": "The number of elements of a (along `axis` if given).",
    "ones": "An array of `shape` filled with ones.", "ones_like": "Ones shaped like `a`.",
    "zeros": "An array of `shape` filled with zeros.", "zeros_like": "Zeros shaped like `a`.",
    "outer": "The outer product of two vectors.",
    "partition": "a partly sorted: the k-th element in place, smaller ones before it.",
    "argpartition": "The indices that would partition a.",
    "polyadd": "The sum of two polynomials (coefficients, highest power first).",
    "polymul": "The product of two polynomials.", "polysub": "The difference of two polynomials.",
    "ravel": "a flattened to 1-d.", "roll": "Elements shifted along `axis`, wrapping around.",
    "row_stack": "The arrays stacked as rows (vstack).",
    "savez": "Save arrays to an .npz file (runs on the host; no pickles).",
    "split": "a split into sub-arrays along `axis`.",
    "squeeze": "a without its axes of length 1.", "swapaxes": "a with two axes swapped.",
    "tensordot": "The sum of products over the given axes.",
    "tile": "a repeated `reps` times.", "transpose": "a with its axes permuted.",
    "tri": "An N x M array with ones at and below the k-th diagonal.",
    "tril_indices": "The indices of the lower triangle of an n x m array.",
    "triu_indices": "The indices of the upper triangle of an n x m array.",
    "unique_all": "The unique values with their indices, inverse indices and counts "
                  "(`size=` gives a fixed-length result usable under jit, as JAX's).",
    "unique_counts": "The unique values and their counts (`size=` as unique_all).",
    "unique_inverse": "The unique values and the inverse indices (`size=` as unique_all).",
    "unique_values": "The sorted unique values (`size=` as unique_all).",
    "vdot": "The dot product of two flattened arrays (conjugating the first).",
    "vstack": "Arrays stacked row-wise (along axis 0).",
    "where": "Elements of x where condition, else of y; with one argument, the indices "
             "of the true elements (not under jit, whose shapes must be static).",
}
_HELPERS = {
    "normalize_axis": "`axis` in range(ndim), or a ShapeError naming it (a helper that the "
                      "library's functions share; not a numpy function).",
    "normalize_axes": "`axis` (None, an int or a sequence) as a tuple of axes in "
                      "range(ndim) (a helper; not a numpy function).",
}
# Aliases share one function object with the name they alias, so one entry covers both.
_ALIASES = {"absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin",
            "arcsinh": "asinh", "arctan": "atan", "arctanh": "atanh", "atan2": "arctan2",
            "bitwise_not": "invert", "bitwise_invert": "invert", "conjugate": "conj",
            "true_divide": "divide", "mod": "remainder", "pow": "power", "max": "amax",
            "min": "amin", "round": "around", "degrees": "rad2deg", "radians": "deg2rad"}


def summaries():
    """{name: summary line} for every thin wrapper this table covers."""
    table = {**_UNARY, **_BINARY, **_REDUCTIONS, **_ARRAYS}
    for alias, name in _ALIASES.items():
        table.setdefault(alias, table[name])
    return table


def document(namespace):
    """Give each thin wrapper in `namespace` (fnad.numpy's globals) without a docstring
    its summary and the note on fnad's differences."""
    for name, summary in summaries().items():
        function = namespace.get(name)
        if function is not None and not (function.__doc__ or "").strip():
            note = _FNAD if hasattr(numpy, name) else _JAX_ONLY
            function.__doc__ = summary + "\n\n" + note.format(name=name)
    for name, summary in _HELPERS.items():
        function = namespace.get(name)
        if function is not None and not (function.__doc__ or "").strip():
            function.__doc__ = summary
