"""Matrix products for compiled loop bodies (fnad/backends/cpu/loops.py).

Inside a loop compiled by Numba there is no numpy to call. Numba's own np.dot needs
SciPy's BLAS bindings, which fnad does not depend on, and it copies any operand that
is not contiguous. Instead the float32/float64 products here call the BLAS numpy
itself is linked against: its cblas_?gemm symbol, found once at import and made
known to LLVM under a fixed name, so cached machine code calls it by that name in
any process. A transposed view is passed to BLAS as a transposition flag, not
copied. Where no BLAS symbol is found (or for other dtypes), `mm`/`mv`/`vm` are
plain loops that need nothing and are quick at the sizes loop bodies use.
"""
import ctypes

import llvmlite.binding as llvm
import numba
import numpy as np
from numba import types

# CBLAS enums.
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

# (symbol, whether its integers are 64-bit): numpy's wheels ship an ILP64 OpenBLAS
# with prefixed and suffixed names; other builds (conda, distributions) use plain
# LP64 cblas names.
_CANDIDATES = {"s": (("scipy_cblas_sgemm64_", True), ("cblas_sgemm64_", True),
                     ("cblas_sgemm", False)),
               "d": (("scipy_cblas_dgemm64_", True), ("cblas_dgemm64_", True),
                     ("cblas_dgemm", False))}


def _numpy_library():
    # numpy.linalg's lapack_lite is linked against numpy's BLAS.
    try:
        from numpy.linalg import lapack_lite
        return ctypes.CDLL(lapack_lite.__file__)   # dlsym searches its dependencies too
    except (ImportError, OSError):
        return None


_LIB = _numpy_library()


def _find_gemm(prefix):
    """(address, 64-bit ints) of numpy's cblas gemm for `prefix`, or None."""
    if _LIB is None:
        return None
    lib = _LIB
    for name, ilp64 in _CANDIDATES[prefix]:
        try:
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value, ilp64
        except AttributeError:
            continue
    return None


def _declare(prefix, scalar):
    found = _find_gemm(prefix)
    if found is None:
        return None
    address, ilp64 = found
    symbol = f"fnad_cblas_{prefix}gemm_{'ilp64' if ilp64 else 'lp64'}"
    llvm.add_symbol(symbol, address)
    i, e, p = (types.int64 if ilp64 else types.int32), types.int32, types.CPointer(scalar)
    return types.ExternalFunction(symbol, types.void(e, e, e, i, i, i, scalar, p, i, p, i,
                                                     scalar, p, i))


_sgemm = _declare("s", types.float32)
_dgemm = _declare("d", types.float64)
# numba_source asks which dtypes have a BLAS product.
BLAS_DTYPES = frozenset(d for d, f in ((np.dtype(np.float32), _sgemm),
                                       (np.dtype(np.float64), _dgemm)) if f is not None)


def _declare_threads():
    """OpenBLAS's per-thread thread count setter (0.3.27 on), or None."""
    try:
        address = ctypes.cast(_LIB.openblas_set_num_threads_local, ctypes.c_void_p).value
    except AttributeError:
        return None
    llvm.add_symbol("fnad_openblas_set_num_threads_local", address)
    return types.ExternalFunction("fnad_openblas_set_num_threads_local",
                                  types.int32(types.int32))


_set_threads = _declare_threads() if _LIB is not None else None


if _set_threads is not None:
    # A compiled loop runs its products on the calling thread: a loop body's products
    # are small (an RNN step's 32x128x128), and handing each to OpenBLAS's thread pool
    # costs more than it gains; with the cores oversubscribed it collapses (a pair of
    # such products measured 0.5-1.5 ms with two threads, 40 us with one).
    @numba.njit(cache=True, nogil=True)
    def blas_threads(n):
        """Set this thread's BLAS thread count; returns the previous one."""
        return _set_threads(n)
else:
    @numba.njit(cache=True, nogil=True)
    def blas_threads(n):
        return n


@numba.njit(cache=True, nogil=True, inline="always")
def _operand(a, rows, cols, itemsize):
    """(the array BLAS reads, transposition flag, leading dimension) for a 2-D view of
    logical shape (rows, cols): row-major as it is, column-major as a transposition,
    anything else (broadcast, strided) copied."""
    s0, s1 = a.strides
    if cols <= 1 or s1 == itemsize:
        ld = s0 // itemsize if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1) and s0 % itemsize == 0:
            return a, _NO_TRANS, ld
    if rows <= 1 or s0 == itemsize:
        ld = s1 // itemsize if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1) and s1 % itemsize == 0:
            return a, _TRANS, ld
    c = np.ascontiguousarray(a)
    return c, _NO_TRANS, max(cols, 1)


if _sgemm is not None:
    @numba.njit(cache=True, nogil=True)
    def gemm_f32(a, b):
        """(m, k) @ (k, n) in float32 through BLAS, any strides."""
        m, k = a.shape
        n = b.shape[1]
        out = np.empty((m, n), np.float32)
        if m == 0 or n == 0:
            return out
        a2, ta, lda = _operand(a, m, k, 4)
        b2, tb, ldb = _operand(b, k, n, 4)
        _sgemm(_ROW_MAJOR, ta, tb, m, n, k, np.float32(1.0), a2.ctypes, lda, b2.ctypes, ldb,
               np.float32(0.0), out.ctypes, n)
        return out


if _dgemm is not None:
    @numba.njit(cache=True, nogil=True)
    def gemm_f64(a, b):
        """(m, k) @ (k, n) in float64 through BLAS, any strides."""
        m, k = a.shape
        n = b.shape[1]
        out = np.empty((m, n), np.float64)
        if m == 0 or n == 0:
            return out
        a2, ta, lda = _operand(a, m, k, 8)
        b2, tb, ldb = _operand(b, k, n, 8)
        _dgemm(_ROW_MAJOR, ta, tb, m, n, k, 1.0, a2.ctypes, lda, b2.ctypes, ldb,
               0.0, out.ctypes, n)
        return out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def mm(a, b):
    """(m, k) @ (k, n)"""
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), a.dtype)
    for i in range(m):
        for p in range(k):
            a_ip = a[i, p]
            for j in range(n):
                out[i, j] += a_ip * b[p, j]
    return out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def mv(a, x):
    """(m, k) @ (k,)"""
    m, k = a.shape
    out = np.zeros(m, a.dtype)
    for i in range(m):
        acc = out[i]
        for p in range(k):
            acc += a[i, p] * x[p]
        out[i] = acc
    return out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def vm(x, b):
    """(k,) @ (k, n)"""
    k, n = b.shape
    out = np.zeros(n, b.dtype)
    for p in range(k):
        x_p = x[p]
        for j in range(n):
            out[j] += x_p * b[p, j]
    return out
