"""Docstrings for fnad.lax's one-primitive operators, which keep JAX's lax names,
signatures and semantics: each gets a summary line and a pointer to ``jax.lax``'s
function of the same name. Functions with behaviour of their own carry their own
docstrings; `document` fills in only the ones that have none."""

_NOTE = ("As ``jax.lax.{name}``: no implicit promotion or broadcasting beyond what lax "
         "allows (operands of one dtype; Python scalars take the other operand's). Works "
         "under grad, jit and vmap.")

_SUMMARIES = {
    # elementwise, one operand
    "abs": "|x|, elementwise.", "neg": "-x, elementwise.", "sign": "The sign of x.",
    "floor": "x rounded down.", "ceil": "x rounded up.", "sqrt": "The square root.",
    "rsqrt": "1 / sqrt(x).", "cbrt": "The real cube root.", "square": "x * x.",
    "reciprocal": "1 / x.", "exp": "e ** x.", "exp2": "2 ** x.", "expm1": "exp(x) - 1.",
    "log": "The natural logarithm.", "log1p": "log(1 + x).", "logistic": "1 / (1 + exp(-x)).",
    "sin": "The sine.", "cos": "The cosine.", "tan": "The tangent.", "tanh": "tanh(x).",
    "sinh": "sinh(x).", "cosh": "cosh(x).", "asin": "The inverse sine.",
    "acos": "The inverse cosine.", "atan": "The inverse tangent.",
    "asinh": "The inverse hyperbolic sine.", "acosh": "The inverse hyperbolic cosine.",
    "atanh": "The inverse hyperbolic tangent.", "erf": "The error function.",
    "erfc": "The complementary error function, 1 - erf(x).",
    "erf_inv": "The inverse error function.", "lgamma": "log |Gamma(x)|.",
    "digamma": "The digamma function, d/dx log Gamma(x).",
    "bessel_i0e": "exp(-|x|) I0(x), the scaled modified Bessel function of order 0.",
    "bessel_i1e": "exp(-|x|) I1(x), the scaled modified Bessel function of order 1.",
    "is_finite": "True where x is finite.", "bitwise_not": "~x (logical not for booleans).",
    "population_count": "The number of set bits of each integer (two's complement).",
    "real": "The real part.", "imag": "The imaginary part.", "conj": "The complex conjugate.",
    # elementwise, two operands
    "add": "x + y.", "sub": "x - y.", "mul": "x * y.", "pow": "x ** y.",
    "integer_pow": "x ** y for a static Python int y (repeated multiplication).",
    "max": "The larger of x and y (NaN if either is).",
    "min": "The smaller of x and y (NaN if either is).",
    "atan2": "The angle of (x, y): arctan(x / y) in the right quadrant.",
    "rem": "The remainder of x / y with the sign of x (C's fmod).",
    "nextafter": "The next float after x1 toward x2.",
    "eq": "x == y.", "ne": "x != y.", "lt": "x < y.", "le": "x <= y.", "gt": "x > y.",
    "ge": "x >= y.", "bitwise_and": "x & y.", "bitwise_or": "x | y.", "bitwise_xor": "x ^ y.",
    "complex": "x + i y from real parts x and imaginary parts y.",
    "igamma": "The regularized lower incomplete gamma function P(a, x).",
    "igammac": "The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).",
    "igamma_grad_a": "The derivative of igamma(a, x) with respect to a.",
    "polygamma": "The polygamma function of order m (the m-th derivative of digamma).",
    "zeta": "The Hurwitz zeta function zeta(x, q).",
    "clamp": "x limited to [min, max] (note lax's argument order).",
    "select": "on_true where pred, else on_false (operands of one shape).",
    "convert_element_type": "x converted to `new_dtype` (complex to real keeps the real "
                            "part; float to int truncates toward zero).",
    # reductions and scans
    "argmax": "The index of the maximum along `axis`, of dtype `index_dtype`.",
    "argmin": "The index of the minimum along `axis`, of dtype `index_dtype`.",
    "reduce_sum": "The sum over `axes`.", "reduce_prod": "The product over `axes`.",
    "reduce_max": "The maximum over `axes`.", "reduce_min": "The minimum over `axes`.",
    "reduce_and": "Bitwise/logical AND over `axes`.",
    "reduce_or": "Bitwise/logical OR over `axes`.", "reduce_xor": "Bitwise/logical XOR over `axes`.",
    "cumsum": "The cumulative sum along `axis` (from the end if `reverse`).",
    "cumprod": "The cumulative product along `axis`.", "cummax": "The running maximum.",
    "cummin": "The running minimum.",
    # shapes and indexing
    "broadcast_in_dim": "x broadcast to `shape`, its axes placed at `broadcast_dimensions`.",
    "broadcast_shapes": "The shape the given shapes broadcast to.",
    "reshape": "x with shape `new_sizes` (row-major order).",
    "transpose": "x with its axes permuted by `permutation`.",
    "expand_dims": "x with new axes of length 1 at `dimensions`.",
    "squeeze": "x without the length-1 axes `dimensions`.",
    "rev": "x reversed along `dimensions`.",
    "concatenate": "The operands joined along `dimension`.",
    "pad": "x padded with `padding_value`: (low, high, interior) per axis; negative low/high "
           "crop.",
    "slice": "The static slice [start, limit) with `strides`.",
    "slice_in_dim": "A static slice along one axis.",
    "index_in_dim": "The static index `index` along `axis` (kept as length 1 if `keepdims`).",
    "dynamic_slice_in_dim": "A slice of static size starting at a traced index along `axis` "
                            "(clamped into bounds, as XLA).",
    "dynamic_index_in_dim": "The element at a traced index along `axis`.",
    "dynamic_update_slice_in_dim": "operand with `update` written at a traced index along "
                                   "`axis` (a new array).",
    "dynamic_update_index_in_dim": "operand with index `index` along `axis` replaced by "
                                   "`update`.",
    "full": "An array of `shape` filled with `fill_value`.",
    "full_like": "An array like x filled with `fill_value`.",
    "tile": "operand repeated `reps` times along each axis.",
    "batch_matmul": "The matrix product of two stacks of matrices (leading axes batched).",
    "fft": "The FFT of kind `fft_type` over the last len(fft_lengths) axes.",
    "conv_with_general_padding": "conv_general_dilated with explicit padding and dilations "
                                 "and the default dimension numbers.",
}


# fnad.lax.linalg's helpers that JAX's lax.linalg does not have.
_LINALG = {
    "det": "The determinant of each square matrix in a stack (..., n, n).",
    "mT": "x with its last two axes swapped (the transpose of each matrix in a stack).",
    "tril": "x with the entries above its k-th diagonal set to zero (last two axes).",
    "inv": "The inverse of each square matrix in a stack, computed as solve(a, I).",
}


def document(namespace, linalg_namespace):
    """Give each operator in `namespace` (fnad.lax's globals) and in `linalg_namespace`
    (fnad.lax.linalg's) that has no docstring its summary line (and, for lax's own
    operators, the pointer to jax.lax)."""
    for name, summary in _LINALG.items():
        function = linalg_namespace.get(name)
        if function is not None and not (function.__doc__ or "").strip():
            function.__doc__ = summary
    for name, summary in _SUMMARIES.items():
        function = namespace.get(name)
        if function is not None and not (function.__doc__ or "").strip():
            function.__doc__ = summary + "\n\n" + _NOTE.format(name=name)
