"""dot_general on the GPU: every contraction becomes a batched matrix product.

The operands are transposed into (batch, rows, contracted) and (batch, contracted,
columns) layouts (transpose_p's kernel), then multiplied by a tiled kernel: each block
computes a TILE x TILE cell of the output, staging TILE x TILE tiles of both
operands through shared memory so each element read from global memory serves TILE
products. `accumulator` serves the other kernel families too."""
import numpy as np

from ...primitives.dot import dot_general_p
from . import runtime
from .registry import implements
from .shape import filled, transpose

cuda = runtime.cuda()

# Under the simulator every thread is a Python thread: 4 x 4 tiles keep a block cheap
# and still give small test shapes several tiles (partial ones included).
TILE = 4 if runtime.simulated() else 16
# Grid dimensions y and z stop at 65535 on every GPU; larger counts loop in-kernel.
MAX_GRID_YZ = min(runtime.MAX_BLOCKS, 65535)


def accumulator(dtype):
    """A zero of the type to accumulate `dtype` in. Kernels add values to it first
    (`zero + x`) so that arithmetic happens in that type: float16 in float32 (as the
    cpu kernels do, and no half-precision arithmetic on the GPU), integers in 64 bits
    (they wrap to the same result once stored), booleans as integers."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.float32(0) if dtype.itemsize <= 4 else np.float64(0)
    return np.uint64(0) if dtype.kind == "u" else np.int64(0)


@cuda.jit(cache=True)
def _matmul_kernel(a, b, out, zero):
    """out[z] = a[z] @ b[z] for a (B, M, K), b (B, K, N). Out-of-range tile entries are
    never loaded: the inner loop stops at K, and threads past M or N store nothing
    (the stale entries they see feed only their own discarded sums)."""
    tile_a = cuda.shared.array((TILE, TILE), a.dtype)
    tile_b = cuda.shared.array((TILE, TILE), b.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    batch, m, k = a.shape
    n = b.shape[2]
    tiles_m, tiles_n, tiles_k = (m + TILE - 1) // TILE, (n + TILE - 1) // TILE, \
        (k + TILE - 1) // TILE
    # The loops are uniform over a block, so every thread reaches each barrier.
    z = cuda.blockIdx.z
    while z < batch:
        by = cuda.blockIdx.y
        while by < tiles_m:
            bx = cuda.blockIdx.x
            while bx < tiles_n:
                row, col = by * TILE + ty, bx * TILE + tx
                acc = zero
                for t in range(tiles_k):
                    start = t * TILE
                    if row < m and start + tx < k:
                        tile_a[ty, tx] = a[z, row, start + tx]
                    if col < n and start + ty < k:
                        tile_b[ty, tx] = b[z, start + ty, col]
                    cuda.syncthreads()
                    # (numba.cuda does not type the two-argument builtin min)
                    for j in range(TILE if k - start > TILE else k - start):
                        acc += (zero + tile_a[ty, j]) * tile_b[j, tx]
                    cuda.syncthreads()
                if row < m and col < n:
                    out[z, row, col] = acc
                bx += cuda.gridDim.x
            by += cuda.gridDim.y
        z += cuda.gridDim.z


def matmul(a, b):
    """The batched product of device arrays a (B, M, K) and b (B, K, N), K > 0."""
    batch, m, k = a.shape
    n = b.shape[2]
    out = runtime.empty((batch, m, n), a.dtype)
    if out.size:
        tiles_m, tiles_n = -(-m // TILE), -(-n // TILE)
        blocks = (min(tiles_n, runtime.MAX_BLOCKS), min(tiles_m, MAX_GRID_YZ),
                  min(batch, MAX_GRID_YZ))
        _matmul_kernel[blocks, (TILE, TILE)](a, b, out, accumulator(out.dtype))
    return out


def _free(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


@implements(dot_general_p)
def dot_general(lhs, rhs, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)

    def size(x, dims):
        return int(np.prod([x.shape[d] for d in dims], dtype=np.int64))

    out_shape = tuple([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in lf]
                      + [rhs.shape[d] for d in rf])
    nb, m, k, n = size(lhs, lb), size(lhs, lf), size(lhs, lc), size(rhs, rf)
    if 0 in out_shape or k == 0:    # (numba cannot reshape empty device arrays)
        return filled(out_shape, 0, lhs.dtype)
    a = transpose(lhs, list(lb) + lf + list(lc)).reshape(nb, m, k)
    b = transpose(rhs, list(rb) + list(rc) + rf).reshape(nb, k, n)
    return matmul(a, b).reshape(out_shape)
