"""fnad.lax: the primitives themselves, with JAX's lax names and signatures.
Unlike fnad.numpy, these neither promote dtypes nor add numpy conveniences."""
from ..primitives.shape import (  # noqa: F401
    broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, slice, concatenate)
from ..primitives.reduce import (  # noqa: F401
    reduce_sum, reduce_prod, cumsum, cumprod, cummax, cummin)
from .products import Precision, dot, dot_general  # noqa: F401
from .operators import (  # noqa: F401,A004
    RoundingMethod, round, div, iota, broadcasted_iota, integer_pow, square, select, pad,
    clamp, convert_element_type, stop_gradient, reduce_max, reduce_min, argmax, argmin, neg,
    exp, log, log1p, expm1, sqrt, rsqrt, sin, cos,
    tan, tanh, asin, acos, atan, sinh, cosh, asinh,
    atanh, abs, sign, floor, ceil, logistic, erf, is_finite,
    bitwise_not, add, sub, mul, pow, max, min, atan2,
    rem, eq, ne, lt, le, gt, ge, bitwise_and,
    bitwise_or, bitwise_xor, real, imag, conj, complex, acosh)
from ..primitives.sort import sort, sort_key_val, argsort  # noqa: E402,F401
from . import linalg  # noqa: E402,F401
from .special import (  # noqa: E402,F401
    lgamma, digamma, polygamma, erf_inv, erfc, igamma, igammac, igamma_grad_a, betainc,
    bessel_i0e, bessel_i1e, zeta)
from .fft import fft, FftType  # noqa: E402,F401
from .composites import *  # noqa: E402,F401,F403
from ..primitives.index import (  # noqa: E402,F401
    gather, scatter, scatter_add, scatter_mul, scatter_min, scatter_max, dynamic_slice,
    dynamic_update_slice, dynamic_slice_in_dim, dynamic_index_in_dim,
    dynamic_update_slice_in_dim, dynamic_update_index_in_dim)
from .control_flow import cond, switch, while_loop, fori_loop, scan, map  # noqa: E402,F401,A004
from .convolution import (  # noqa: E402,F401
    conv_general_dilated, conv, conv_with_general_padding, conv_transpose,
    conv_dimension_numbers, ConvDimensionNumbers, padtype_to_pads, reduce_window, max_pool,
    avg_pool)
from .parallel import (  # noqa: E402,F401
    psum, pmean, pmax, pmin, all_gather, psum_scatter, ppermute, axis_index, axis_size)

from ._results import returning_arrays as _returning_arrays  # noqa: E402

# The functions declared beside their primitives give Arrays to users (see _results).
for _name in ("broadcast_in_dim reshape transpose squeeze expand_dims rev slice "
              "concatenate reduce_sum reduce_prod cumsum cumprod cummax cummin sort "
              "sort_key_val argsort gather scatter scatter_add scatter_mul scatter_min "
              "scatter_max dynamic_slice dynamic_update_slice dynamic_slice_in_dim "
              "dynamic_index_in_dim dynamic_update_slice_in_dim "
              "dynamic_update_index_in_dim").split():
    globals()[_name] = _returning_arrays(globals()[_name])
del _name

from ._docstrings import document as _document  # noqa: E402
_document(globals(), vars(linalg))
