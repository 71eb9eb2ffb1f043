"""Cumulative ops along an axis on the GPU, and reduce_prod.

A scan runs one thread per line along the axis: lines are independent, and a line
is short next to the number of lines in the shapes fnad meets (a scan over a long
single axis would want a parallel prefix scan instead). Each step is stored in the
operand's dtype and read back, so results round (float16) and wrap (integers) at
every step as numpy's accumulate does; the declared dtype is the operand's."""
from ...primitives import reduce as R
from . import reduce, runtime
from .registry import implements
from .dot import accumulator
from .scalar_functions import maximum, minimum

cuda = runtime.cuda()

SUM, PROD, MAX, MIN = range(4)
PRODUCT = (lambda dtype: 1, "{acc} * {x}")


@cuda.jit(cache=True)
def _scan_kernel(x, out, op, reverse, zero, length, inner, lines):
    """Line l of x (flat, as (outer, length, inner)) starts at (l // inner) * length *
    inner + l % inner, its elements `inner` apart. NaN propagates through max/min."""
    line = cuda.grid(1)
    while line < lines:
        start = (line // inner) * length * inner + line % inner
        acc = zero
        for j in range(length):
            at = start + ((length - 1 - j) if reverse else j) * inner
            v = zero + x[at]
            if j == 0:
                acc = v
            elif op == SUM:
                acc = acc + v
            elif op == PROD:
                acc = acc * v
            elif op == MAX:
                acc = maximum(v, acc)
            else:
                acc = minimum(v, acc)
            out[at] = acc
            acc = zero + out[at]
        line += cuda.gridsize(1)


def _scan(op):
    def impl(x, axis, reverse):
        out = runtime.empty(x.shape, x.dtype)
        length = x.shape[axis]
        if out.size:
            inner = out.size // length
            for n in x.shape[:axis]:
                inner //= n
            lines = out.size // length
            runtime.launch(_scan_kernel, lines, x.reshape(x.size), out.reshape(out.size), op,
                           bool(reverse), accumulator(x.dtype), length, inner, lines)
        return out
    return impl


implements(R.cumsum_p)(_scan(SUM))
implements(R.cumprod_p)(_scan(PROD))
implements(R.cummax_p)(_scan(MAX))
implements(R.cummin_p)(_scan(MIN))


@implements(R.reduce_prod_p)
def reduce_prod(x, axes):
    return reduce.reduce(R.reduce_prod_p, x, axes, x.dtype, reduction=PRODUCT)
