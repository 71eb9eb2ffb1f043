"""Matrix products for compiled loop bodies (fnad/kernels/cpu/loops.py).

Numba's np.dot needs SciPy's BLAS bindings, which fnad does not depend on; these
loops need nothing and are quick at the sizes loop bodies use (an RNN's 64x64
weights). Any layout works: transposed views are indexed, not copied."""
import numba
import numpy as np


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
