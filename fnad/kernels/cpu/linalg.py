"""Linear-algebra kernels numpy lacks: a batched triangular solve and LU.

numpy has no triangular solve; np.linalg.solve on the triangle would cost an O(n^3)
LU per matrix where substitution is O(n^2) per right-hand side; numpy's LU stays
inside solve and det, so the factors themselves need a kernel here. Compiled lazily,
once per dtype, and cached on disk by Numba."""
import numba
import numpy as np


@numba.njit(cache=True)
def _substitute(a, x, lower, transpose, unit_diagonal):
    """Solve op(a[b]) y = x[b] in place for every b, op(a) = a or a^T, reading only
    the `lower` (or upper) triangle of a, and not its diagonal if unit_diagonal."""
    nbatch, m, k = x.shape
    # op(a) is lower triangular when a is lower and not transposed, or upper and transposed.
    forward = lower != transpose
    for b in range(nbatch):
        for step in range(m):
            i = step if forward else m - 1 - step
            lo, hi = (0, i) if forward else (i + 1, m)
            for j in range(lo, hi):
                t = a[b, j, i] if transpose else a[b, i, j]
                if t != 0:
                    for c in range(k):
                        x[b, i, c] -= t * x[b, j, c]
            if not unit_diagonal:
                d = a[b, i, i]
                for c in range(k):
                    x[b, i, c] /= d


def triangular_solve(a, b, left_side, lower, transpose_a, unit_diagonal):
    """lax.linalg.triangular_solve on numpy arrays; a (..., m, m), b (..., m, n) when
    left_side else (..., n, m), with equal leading dimensions."""
    if not left_side:
        # x op(a) = b  <=>  op(a)^T x^T = b^T
        b = np.swapaxes(b, -1, -2)
        transpose_a = not transpose_a
    m = a.shape[-1]
    nbatch = int(np.prod(a.shape[:-2], dtype=np.int64))
    a3 = np.ascontiguousarray(a.reshape((nbatch, m, m)))
    x = np.array(b.reshape((nbatch,) + b.shape[-2:]), order="C", copy=True)
    if x.size:
        _substitute(a3, x, bool(lower), bool(transpose_a), bool(unit_diagonal))
    x = x.reshape(b.shape)
    return np.swapaxes(x, -1, -2) if not left_side else x


@numba.njit(cache=True)
def _magnitude(x):
    """|re| + |im|: LAPACK's pivot size (izamax's), |x| for a real x."""
    return abs(x.real) + abs(x.imag)


@numba.njit(cache=True)
def _getrf(a, pivots, permutation):
    """LU with partial pivoting in place, LAPACK getf2's order: for each column, the
    row with the largest |entry| (the first such) becomes the pivot row, then the
    trailing block is updated. A zero pivot column is left as is (its multipliers
    are not formed), as LAPACK does, so U carries the zero on its diagonal."""
    nbatch, m, n = a.shape
    for b in range(nbatch):
        for i in range(m):
            permutation[b, i] = i
        for j in range(min(m, n)):
            p = j
            best = _magnitude(a[b, j, j])
            for i in range(j + 1, m):
                v = _magnitude(a[b, i, j])
                if v > best:
                    p, best = i, v
            pivots[b, j] = p
            if p != j:
                for c in range(n):
                    a[b, j, c], a[b, p, c] = a[b, p, c], a[b, j, c]
                permutation[b, j], permutation[b, p] = permutation[b, p], permutation[b, j]
            d = a[b, j, j]
            if d != 0:
                for i in range(j + 1, m):
                    a[b, i, j] /= d
            for i in range(j + 1, m):
                f = a[b, i, j]
                for c in range(j + 1, n):
                    a[b, i, c] -= f * a[b, j, c]


def lu(a):
    """lax.linalg.lu on a numpy array (..., m, n): [lu, pivots, permutation], the
    unit lower factor below the diagonal of `lu` and the upper factor on and above
    it; pivots[i] is the row swapped with row i at step i, and a[permutation] = L U."""
    m, n = a.shape[-2:]
    lead = a.shape[:-2]
    nbatch = int(np.prod(lead, dtype=np.int64))
    work = np.array(a.reshape((nbatch, m, n)), order="C", copy=True)
    pivots = np.empty((nbatch, min(m, n)), np.int32)
    permutation = np.empty((nbatch, m), np.int32)
    if work.size or permutation.size:
        _getrf(work, pivots, permutation)
    return [work.reshape(a.shape), pivots.reshape(lead + (min(m, n),)),
            permutation.reshape(lead + (m,))]


# --------------------------------------------------------------------------- Hessenberg, Schur

@numba.njit(cache=True)
def _reflector(x):
    """LAPACK dlarfg's Householder reflector for x: (v with v[0] = 1, tau, beta) with
    (I - tau v v^T) x = (beta, 0, ...), beta = -sign(x[0]) |x|; tau = 0 when x[1:] = 0."""
    v = x.copy()
    alpha = x[0]
    tail = 0.0
    for i in range(1, x.size):
        tail += x[i] * x[i]
    v[0] = 1.0
    if tail == 0.0:
        for i in range(1, x.size):
            v[i] = 0.0
        return v, 0.0, alpha
    beta = -np.copysign(np.sqrt(alpha * alpha + tail), alpha)
    for i in range(1, x.size):
        v[i] = x[i] / (alpha - beta)
    return v, (beta - alpha) / beta, beta


@numba.njit(cache=True)
def _hessenberg(h, q):
    """h[b] <- Q^T h[b] Q upper Hessenberg, q[b] <- Q, for every b (LAPACK gehd2's
    order: a reflector per column, applied from both sides)."""
    nbatch, n, _ = h.shape
    for b in range(nbatch):
        for i in range(n):
            for j in range(n):
                q[b, i, j] = 1.0 if i == j else 0.0
        for k in range(n - 2):
            v, tau, beta = _reflector(h[b, k + 1:, k].copy())
            if tau == 0.0:
                continue
            h[b, k + 1, k] = beta
            for i in range(k + 2, n):
                h[b, i, k] = 0.0
            for j in range(k + 1, n):          # from the left: rows k+1.., columns k+1..
                s = 0.0
                for i in range(k + 1, n):
                    s += v[i - k - 1] * h[b, i, j]
                s *= tau
                for i in range(k + 1, n):
                    h[b, i, j] -= s * v[i - k - 1]
            for i in range(n):                  # from the right: all rows, columns k+1..
                s = 0.0
                t = 0.0
                for j in range(k + 1, n):
                    s += h[b, i, j] * v[j - k - 1]
                    t += q[b, i, j] * v[j - k - 1]
                s *= tau
                t *= tau
                for j in range(k + 1, n):
                    h[b, i, j] -= s * v[j - k - 1]
                    q[b, i, j] -= t * v[j - k - 1]


def hessenberg(a):
    """[h, q] with a = q h q^T, h upper Hessenberg, q orthogonal, as LAPACK's gehrd
    (with orghr) gives them."""
    n = a.shape[-1]
    nbatch = int(np.prod(a.shape[:-2], dtype=np.int64))
    h = np.array(a.reshape((nbatch, n, n)), order="C", copy=True)
    q = np.empty_like(h)
    if h.size:
        _hessenberg(h, q)
    return [h.reshape(a.shape), q.reshape(a.shape)]


@numba.njit(cache=True)
def _rotate(h, z, p, c, s, n):
    """h <- G^T h G and z <- z G for the rotation G = [[c, -s], [s, c]] of rows and
    columns p, p + 1 (of a quasi-triangular h: only its entries that can be nonzero)."""
    for j in range(p, n):
        x, y = h[p, j], h[p + 1, j]
        h[p, j] = c * x + s * y
        h[p + 1, j] = -s * x + c * y
    for i in range(p + 2):
        x, y = h[i, p], h[i, p + 1]
        h[i, p] = c * x + s * y
        h[i, p + 1] = -s * x + c * y
    for i in range(n):
        x, y = z[i, p], z[i, p + 1]
        z[i, p] = c * x + s * y
        z[i, p + 1] = -s * x + c * y


@numba.njit(cache=True)
def _standardize(h, z, p, n):
    """Make the 2x2 diagonal block at p upper triangular when its eigenvalues are
    real, or give it equal diagonal entries when they are complex (LAPACK's forms)."""
    a, b, c, d = h[p, p], h[p, p + 1], h[p + 1, p], h[p + 1, p + 1]
    half = 0.5 * (a - d)
    disc = half * half + b * c
    if disc >= 0:
        # an eigenvector of eigenvalue lam, rotated onto the first axis
        lam = d + half + np.copysign(np.sqrt(disc), half)
        x1, y1 = lam - d, c
        x2, y2 = b, lam - a
        if x1 * x1 + y1 * y1 >= x2 * x2 + y2 * y2:
            x, y = x1, y1
        else:
            x, y = x2, y2
        r = np.hypot(x, y)
        if r == 0:
            return
        _rotate(h, z, p, x / r, y / r, n)
        h[p + 1, p] = 0.0
    else:
        theta = 0.5 * np.arctan2(-(a - d), b + c)
        _rotate(h, z, p, np.cos(theta), np.sin(theta), n)


@numba.njit(cache=True)
def _francis(h, z, m, lo, n, s, t):
    """One implicit double-shift QR step on the active block lo..m of the Hessenberg
    h (Golub & Van Loan, alg. 7.5.1) with the two shifts of sum s and product t;
    applied to all of h's columns and rows (a full Schur form) and to z."""
    x = h[lo, lo] * h[lo, lo] + h[lo, lo + 1] * h[lo + 1, lo] - s * h[lo, lo] + t
    y = h[lo + 1, lo] * (h[lo, lo] + h[lo + 1, lo + 1] - s)
    w = h[lo + 1, lo] * h[lo + 2, lo + 1] if lo + 2 <= m else 0.0
    buf = np.empty(3, h.dtype)
    for k in range(lo, m - 1):
        size = 3 if k < m - 1 else 2
        buf[0], buf[1], buf[2] = x, y, w
        v, tau, beta = _reflector(buf[:size].copy())
        if tau != 0.0:
            first = max(lo, k - 1)
            for j in range(first, n):
                acc = 0.0
                for i in range(size):
                    acc += v[i] * h[k + i, j]
                acc *= tau
                for i in range(size):
                    h[k + i, j] -= acc * v[i]
            last = min(k + 3, m)
            for i in range(last + 1):
                acc = 0.0
                for j in range(size):
                    acc += h[i, k + j] * v[j]
                acc *= tau
                for j in range(size):
                    h[i, k + j] -= acc * v[j]
            for i in range(n):
                acc = 0.0
                for j in range(size):
                    acc += z[i, k + j] * v[j]
                acc *= tau
                for j in range(size):
                    z[i, k + j] -= acc * v[j]
        x = h[k + 1, k]
        y = h[k + 2, k] if k + 2 <= m else 0.0
        w = h[k + 3, k] if k + 3 <= m else 0.0
        if k > lo:
            h[k + 1, k - 1] = 0.0
            if k + 2 <= m:
                h[k + 2, k - 1] = 0.0
    # the last reflector is 2 long
    k = m - 1
    buf[0], buf[1] = x, y
    v, tau, beta = _reflector(buf[:2].copy())
    if tau != 0.0:
        for j in range(max(lo, k - 1), n):
            acc = (v[0] * h[k, j] + v[1] * h[k + 1, j]) * tau
            h[k, j] -= acc * v[0]
            h[k + 1, j] -= acc * v[1]
        for i in range(m + 1):
            acc = (h[i, k] * v[0] + h[i, k + 1] * v[1]) * tau
            h[i, k] -= acc * v[0]
            h[i, k + 1] -= acc * v[1]
        for i in range(n):
            acc = (z[i, k] * v[0] + z[i, k + 1] * v[1]) * tau
            z[i, k] -= acc * v[0]
            z[i, k + 1] -= acc * v[1]
    if k > lo:
        h[k + 1, k - 1] = 0.0     # the bulge's last trace, zero but for rounding


@numba.njit(cache=True)
def _real_schur(h, z, failed):
    """h[b] (upper Hessenberg) <- its real Schur form T, z[b] <- z[b] Q, deflating from
    the bottom; failed[b] = 1 if some block did not converge in 30 n steps."""
    nbatch, n, _ = h.shape
    eps = np.finfo(h.dtype).eps
    for b in range(nbatch):
        failed[b] = 0
        hb, zb = h[b], z[b]
        m = n - 1
        steps = 0
        while m > 0:
            lo = m
            while lo > 0:
                scale = abs(hb[lo - 1, lo - 1]) + abs(hb[lo, lo])
                if abs(hb[lo, lo - 1]) <= eps * scale or hb[lo, lo - 1] == 0:
                    hb[lo, lo - 1] = 0.0
                    break
                lo -= 1
            if lo == m:
                m -= 1
                steps = 0
            elif lo == m - 1:
                _standardize(hb, zb, m - 1, n)
                m -= 2
                steps = 0
            else:
                steps += 1
                if steps > 30 * n:
                    failed[b] = 1
                    break
                if steps % 11 == 10:
                    # An exceptional shift breaks the cycles the standard one can fall
                    # into (EISPACK hqr's: both shifts 0.75 s, product s^2 there).
                    e = abs(hb[m, m - 1]) + abs(hb[m - 1, m - 2])
                    _francis(hb, zb, m, lo, n, 1.5 * e, e * e)
                else:
                    # the eigenvalues of the trailing 2x2 block (Francis's shifts)
                    _francis(hb, zb, m, lo, n, hb[m - 1, m - 1] + hb[m, m],
                             hb[m - 1, m - 1] * hb[m, m] - hb[m - 1, m] * hb[m, m - 1])


def real_schur(a):
    """[t, z] with a = z t z^T, t quasi upper triangular (1x1 and standardized 2x2
    diagonal blocks, the 2x2 ones for complex conjugate eigenvalues), z orthogonal.
    Raises numpy.linalg.LinAlgError if the QR iteration does not converge."""
    h, z = hessenberg(a)
    n = a.shape[-1]
    nbatch = int(np.prod(a.shape[:-2], dtype=np.int64))
    h = np.ascontiguousarray(h.reshape((nbatch, n, n)))
    z = np.ascontiguousarray(z.reshape((nbatch, n, n)))
    failed = np.zeros(nbatch, np.int32)
    if h.size:
        _real_schur(h, z, failed)
    if failed.any():
        raise np.linalg.LinAlgError("Schur decomposition did not converge")
    # What the iteration leaves below the subdiagonal is rounding: exact zeros there.
    h = np.triu(h, -1)
    return [h.reshape(a.shape), z.reshape(a.shape)]


def _complex(dtype):
    return np.dtype(np.complex64 if np.dtype(dtype) in (np.float32, np.complex64)
                    else np.complex128)


def rsf2csf(t, z):
    """[t, z] of a real Schur form turned complex upper triangular (a = z t z^H): each
    2x2 block is split by a complex rotation built from one of its eigenvalues."""
    out = _complex(t.dtype)
    t = np.array(t, out, copy=True)
    z = np.array(np.broadcast_to(z, t.shape), out, copy=True)
    n = t.shape[-1]
    eps = np.finfo(out).eps
    for index in np.ndindex(t.shape[:-2]):
        tb, zb = t[index], z[index]
        for m in range(n - 1, 0, -1):
            sub = tb[m, m - 1]
            if abs(sub) <= eps * (abs(tb[m - 1, m - 1]) + abs(tb[m, m])):
                tb[m, m - 1] = 0
                continue
            mu = np.linalg.eigvals(tb[m - 1:m + 1, m - 1:m + 1])[0] - tb[m, m]
            r = np.hypot(abs(mu), abs(sub))
            c, s = mu / r, sub / r
            g = np.array([[np.conj(c), s], [-s, c]], out)
            tb[m - 1:m + 1, m - 1:] = g @ tb[m - 1:m + 1, m - 1:]
            tb[:m + 1, m - 1:m + 1] = tb[:m + 1, m - 1:m + 1] @ np.conj(g.T)
            zb[:, m - 1:m + 1] = zb[:, m - 1:m + 1] @ np.conj(g.T)
            tb[m, m - 1] = 0
    return [t, z]


def sqrtm(a):
    """The principal square root of each real matrix, complex: from the complex Schur form
    a = z t z^H, the upper triangular r with r^2 = t column by column (Bjorck &
    Hammarling 1983), then z r z^H. A matrix with no square root (a nilpotent Jordan
    block) gives inf or NaN entries."""
    t, z = rsf2csf(*real_schur(a))
    n = a.shape[-1]
    r = np.zeros_like(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        for index in np.ndindex(t.shape[:-2]):
            tb, rb = t[index], r[index]
            for j in range(n):
                rb[j, j] = np.sqrt(tb[j, j])
                for i in range(j - 1, -1, -1):
                    rest = tb[i, j] - rb[i, i + 1:j] @ rb[i + 1:j, j]
                    # 0 / 0 (a zero eigenvalue twice, nothing to match): 0 is a root
                    rb[i, j] = 0 if rest == 0 else rest / (rb[i, i] + rb[j, j])
        return z @ r @ np.conj(np.swapaxes(z, -1, -2))



def parlett(t, f_diagonal):
    """[f, smallest gap]: f = func(t) for upper triangular t, given func on t's diagonal,
    by Parlett's recurrence superdiagonal by superdiagonal (Golub & Van Loan, alg.
    11.1.1), and the smallest gap |t_jj - t_ii| met, for an error estimate."""
    n = t.shape[-1]
    f = np.zeros(t.shape, np.result_type(t, f_diagonal))
    gap = np.full(t.shape[:-2], np.inf, np.finfo(f.dtype).dtype)
    for index in np.ndindex(t.shape[:-2]):
        tb, fb = t[index], f[index]
        fb[np.arange(n), np.arange(n)] = f_diagonal[index]
        for p in range(1, n):
            for i in range(n - p):
                j = i + p
                s = (tb[i, j] * (fb[j, j] - fb[i, i]) + tb[i, i + 1:j] @ fb[i + 1:j, j]
                     - fb[i, i + 1:j] @ tb[i + 1:j, j])
                den = tb[j, j] - tb[i, i]
                # Equal eigenvalues leave s undivided, as scipy and JAX do (exact for
                # a diagonalizable block, where s is 0); the gap of 0 then makes
                # funm's error estimate 1.
                fb[i, j] = s / den if den != 0 else s
                gap[index] = min(gap[index], abs(den))
    return [f, gap]


# --------------------------------------------------------------------------- tridiagonal

@numba.njit(cache=True)
def _gtsv(dl, d, du, x):
    """Solve each tridiagonal system T[b] y = x[b] in place (LAPACK gtsv's elimination
    with partial pivoting: a row swap moves a second superdiagonal into play). dl[b, 0]
    and du[b, m - 1] are not read. Returns 1 for a batch whose pivot is exactly 0."""
    nbatch, m, k = x.shape
    failed = 0
    for b in range(nbatch):
        diag = d[b].copy()
        up = np.zeros(m, d.dtype)
        up2 = np.zeros(m, d.dtype)
        low = np.zeros(m, d.dtype)
        for i in range(m - 1):
            up[i] = du[b, i]
            low[i + 1] = dl[b, i + 1]
        singular = False
        for i in range(m - 1):
            if _magnitude(diag[i]) >= _magnitude(low[i + 1]):
                if diag[i] == 0:
                    singular = True
                    break
                f = low[i + 1] / diag[i]
                diag[i + 1] -= f * up[i]
                for c in range(k):
                    x[b, i + 1, c] -= f * x[b, i, c]
                low[i + 1] = 0.0
            else:
                # swap rows i and i + 1: row i gains a second superdiagonal entry
                f = diag[i] / low[i + 1]
                diag[i] = low[i + 1]
                t = diag[i + 1]
                diag[i + 1] = up[i] - f * t
                if i < m - 2:
                    up2[i] = up[i + 1]
                    up[i + 1] = -f * up2[i]
                up[i] = t
                for c in range(k):
                    t = x[b, i, c]
                    x[b, i, c] = x[b, i + 1, c]
                    x[b, i + 1, c] = t - f * x[b, i + 1, c]
        if singular or diag[m - 1] == 0:
            failed = 1
            continue
        for c in range(k):
            for step in range(m):
                i = m - 1 - step
                s = x[b, i, c]
                if i + 1 < m:
                    s -= up[i] * x[b, i + 1, c]
                if i + 2 < m:
                    s -= up2[i] * x[b, i + 2, c]
                x[b, i, c] = s / diag[i]
    return failed


def tridiagonal_solve(dl, d, du, b):
    """lax.linalg.tridiagonal_solve on numpy arrays: x with T x = b for T of
    subdiagonal dl[..., 1:], diagonal d and superdiagonal du[..., :-1]; b (..., m, n).
    A singular T raises numpy.linalg.LinAlgError."""
    m, k = b.shape[-2:]
    nbatch = int(np.prod(b.shape[:-2], dtype=np.int64))
    x = np.array(b.reshape((nbatch, m, k)), order="C", copy=True)
    flat = [np.ascontiguousarray(v.reshape((nbatch, m))) for v in (dl, d, du)]
    if x.size and _gtsv(*flat, x):
        raise np.linalg.LinAlgError("Singular matrix")
    return x.reshape(b.shape)
