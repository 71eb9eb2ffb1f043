"""Kernels for convolution and windowed reductions (pooling).

Convolution works in one logical layout: lhs (N, C, *spatial), rhs (O, C / groups,
*window), out (N, O, *spatial); operands may be any strided views of it. Strategies,
picked per call by the size of their intermediate and the operand's memory order
(measured on 2 cores against direct Numba loops, which lost on the LeNet shapes
except where noted):

- gather (im2col): copy every input window into a patch matrix with numpy's strided
  copy and multiply by the kernel with BLAS, a cache-sized chunk at a time. Right
  for forward passes and for the kernel gradient, whose "window" is the whole
  output gradient. The copy follows the operand's memory order: channels-first,
  channels-last (NHWC operands) or batch-last (the kernel gradient of an NHWC
  convolution sees its input that way), so that it copies long contiguous runs.
- scatter (col2im): multiply the kernel into every input position first, then add
  the products into the output with a Numba loop. Needs unit strides; right for the
  input gradient (a padded and dilated convolution), whose patch matrix would be
  mostly padding and dilation zeros. A channels-last operand gets a channels-last
  output, adding runs of window width * features.
- long windows (the kernel gradient of a convolution with few input features):
  few outputs, each a long dot product; a Numba loop reads the rows in place.

Results may be transposed views (of a channels-last or batch-last buffer).

Windowed reductions see the operand, padded with the reduction's identity, as a
table of rows (the leading axes the window does not touch) and describe the windows
by offsets into a row: one Numba loop serves every rank and layout. 2x2 pooling
windows over channels-last operands get unrolled kernels. The kernels are compiled
lazily, once per dtype, and cached on disk by Numba.
"""
import functools

import numba
import numpy as np
from numpy.lib.stride_tricks import as_strided


def out_size(n, k, stride, lo, hi, lhs_dilation=1, rhs_dilation=1):
    """Length of a convolution (or window) output along one axis."""
    padded = (n - 1) * lhs_dilation + 1 + lo + hi if n else lo + hi
    span = (k - 1) * rhs_dilation + 1
    return max(0, (padded - span) // stride + 1) if padded >= span else 0


def dilate_pad(x, padding, dilation=None, fill=0, lead=0):
    """x with `dilation - 1` fill values between neighbours and (lo, hi) fill values at
    the ends of len(padding) axes from axis `lead` on (negative padding crops)."""
    count = len(padding)
    axes = x.shape[lead:lead + count]
    dilation = dilation or (1,) * count
    if all(d == 1 for d in dilation) and not any(lo or hi for lo, hi in padding):
        return x
    grown = [(n - 1) * d + 1 + max(lo, 0) + max(hi, 0) if n else max(lo, 0) + max(hi, 0)
             for n, d, (lo, hi) in zip(axes, dilation, padding)]
    out = np.full(x.shape[:lead] + tuple(grown) + x.shape[lead + count:], fill, x.dtype)
    keep = (slice(None),) * lead
    out[keep + tuple(slice(max(lo, 0), max(lo, 0) + (n - 1) * d + 1, d)
                     for n, d, (lo, _) in zip(axes, dilation, padding))] = x
    return out[keep + tuple(slice(-min(lo, 0), g + min(hi, 0))
                            for g, (lo, hi) in zip(grown, padding))]


def _via_float32(kernel):
    """Numba has no float16 arithmetic: half-precision operands run in float32."""
    @functools.wraps(kernel)
    def run(*args, **params):
        if any(getattr(a, "dtype", None) == np.float16 for a in args):
            return kernel(*[a.astype(np.float32) if getattr(a, "dtype", None) == np.float16
                            else a for a in args], **params).astype(np.float16)
        return kernel(*args, **params)
    return run


# --------------------------------------------------------------------------- convolution

@_via_float32
def conv(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, feature_group_count):
    groups = feature_group_count
    n, o = lhs.shape[0], rhs.shape[0]
    window, spatial = rhs.shape[2:], lhs.shape[2:]
    out_spatial = tuple(out_size(*args) for args in zip(
        spatial, window, window_strides, *zip(*padding), lhs_dilation, rhs_dilation))
    dtype = np.result_type(lhs, rhs)
    if 0 in lhs.shape or 0 in rhs.shape or 0 in out_spatial:
        return np.zeros((n, o) + out_spatial, dtype)
    kernel_size = int(np.prod(window))
    gather_size = lhs.shape[1] * kernel_size * int(np.prod(out_spatial))
    scatter_size = o * kernel_size * int(np.prod(spatial))
    # The scatter's additions cost about twice the gather's copies per element.
    if (all(s == 1 for s in window_strides) and len(window) <= 3
            and 2 * scatter_size < gather_size):
        channels_last = np.moveaxis(lhs, 1, -1)
        if (groups == 1 and len(window) == 2 and channels_last.flags.c_contiguous
                and lhs_dilation == rhs_dilation == (1, 1)):
            return _conv_scatter_channels_last(channels_last, rhs, padding, out_spatial,
                                               dtype)
        return _conv_scatter(lhs, rhs, padding, lhs_dilation, rhs_dilation, groups,
                             out_spatial, dtype)
    if (groups == 1 and len(window) == 2 and dtype.kind == "f"
            and window_strides == lhs_dilation == rhs_dilation == (1, 1)
            and kernel_size >= max(256, 8 * int(np.prod(out_spatial)))):
        return _conv_long_window(lhs, rhs, padding, out_spatial, dtype)
    # A channels-last operand (fnad.nn's NHWC) copies each window row as one run of
    # window width * features: faster than the channels-first copy when that run
    # is longer than an output row (conv2 of LeNet: 1.8x, measured). The kernel
    # gradient of a channels-last convolution sees its lhs with the batch axis
    # innermost in memory, and copies runs of window width * batch (2-3x).
    if groups == 1 and not lhs.flags.c_contiguous:
        channels_last = np.moveaxis(lhs, 1, -1)
        run = lhs.shape[1] * (window[-1] if rhs_dilation[-1] == 1 else 1)
        if channels_last.flags.c_contiguous and run > out_spatial[-1]:
            return _conv_gather_channels_last(channels_last, rhs, window_strides, padding,
                                              lhs_dilation, rhs_dilation, out_spatial)
        batch_last = np.moveaxis(lhs, 0, -1)
        if batch_last.flags.c_contiguous:
            return _conv_gather_batch_last(batch_last, rhs, window_strides, padding,
                                           lhs_dilation, rhs_dilation, out_spatial)
    return _conv_gather(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                        groups, out_spatial)


# Patches are built and multiplied a chunk at a time. Chunks of a few features stay
# in the L2 cache between the copy and the matmul: 2-3x faster than one large patch
# matrix on the kernel-gradient shapes of LeNet (measured). Chunks of whole examples
# gain nothing from the cache (measured) and are only bounded, to bound the memory
# and keep the per-chunk overhead small.
CHUNK_BYTES = 1 << 18
EXAMPLE_CHUNK_BYTES = 1 << 22


def _chunks(n, size, item_bytes, budget=None):
    step = max(1, (budget or CHUNK_BYTES) // max(item_bytes, 1))
    return [(i, min(size, i + step)) for i in range(0, size, step)] if n else []


def _conv_gather(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, groups, out_spatial):
    n = lhs.shape[0]
    o, cg = rhs.shape[:2]
    og, window = o // groups, tuple(rhs.shape[2:])
    x = dilate_pad(lhs, padding, lhs_dilation, lead=2)
    sn, sc = x.strides[:2]
    ss = x.strides[2:]
    windows = as_strided(
        x, (n, groups, cg) + window + tuple(out_spatial),
        (sn, cg * sc, sc) + tuple(d * s for d, s in zip(rhs_dilation, ss))
        + tuple(st * s for st, s in zip(strides, ss)), writeable=False)
    k, p = int(np.prod(window)), int(np.prod(out_spatial))
    kernel = rhs.reshape(groups, og, cg, k)
    out = np.empty((n, groups, og, p), np.result_type(lhs, rhs))
    # Copy with the longer of the two innermost axes innermost: numpy's strided copy
    # runs at memory speed over long runs and crawls over runs of a few elements.
    transposed = out_spatial[-1] < window[-1]
    channel_bytes = groups * k * p * x.itemsize
    if cg * channel_bytes <= CHUNK_BYTES:      # whole examples per chunk
        w = kernel.reshape(groups, og, cg * k)
        for n0, n1 in _chunks(n, n, cg * channel_bytes, EXAMPLE_CHUNK_BYTES):
            _patch_matmul(w, windows[n0:n1], transposed, out[n0:n1])
    else:                                      # a few input features of one example
        parts = _chunks(n, cg, channel_bytes)
        weights = [kernel[:, :, c0:c1].reshape(groups, og, (c1 - c0) * k)
                   for c0, c1 in parts]
        partial = np.empty((1, groups, og, p), out.dtype)
        for i in range(n):
            for j, ((c0, c1), w) in enumerate(zip(parts, weights)):
                dest = out[i:i + 1] if j == 0 else partial
                _patch_matmul(w, windows[i:i + 1, :, c0:c1], transposed, dest)
                if j:
                    out[i:i + 1] += partial
    return out.reshape((n, o) + tuple(out_spatial))


def _conv_gather_channels_last(x, rhs, strides, padding, lhs_dilation, rhs_dilation,
                               out_spatial):
    """x is (N, *spatial, C); patches (N * outputs, window * C) times a (window * C, O)
    kernel give a channels-last output, returned as an (N, O, *spatial) view."""
    n, c, o = x.shape[0], x.shape[-1], rhs.shape[0]
    window = tuple(rhs.shape[2:])
    x = dilate_pad(x, padding, lhs_dilation, lead=1)
    ss = x.strides[1:-1]
    windows = as_strided(
        x, (n,) + tuple(out_spatial) + window + (c,),
        (x.strides[0],) + tuple(st * s for st, s in zip(strides, ss))
        + tuple(d * s for d, s in zip(rhs_dilation, ss)) + (x.strides[-1],), writeable=False)
    rows = int(np.prod(window)) * c
    kernel = np.moveaxis(rhs, (0, 1), (-1, -2)).reshape(rows, o)
    out = np.empty((n,) + tuple(out_spatial) + (o,), np.result_type(x, rhs))
    flat = out.reshape(n, -1, o)
    for n0, n1 in _chunks(n, n, flat.shape[1] * rows * x.itemsize, EXAMPLE_CHUNK_BYTES):
        patches = np.ascontiguousarray(windows[n0:n1]).reshape(n1 - n0, -1, rows)
        np.matmul(patches, kernel, out=flat[n0:n1])
    return np.moveaxis(out, -1, 1)


def _conv_gather_batch_last(x, rhs, strides, padding, lhs_dilation, rhs_dilation,
                            out_spatial):
    """x is (C, *spatial, N); per output position, patches (C * window, N) contract
    with a (C * window, O) kernel; returned as an (N, O, *spatial) view."""
    c, n, o = x.shape[0], x.shape[-1], rhs.shape[0]
    window = tuple(rhs.shape[2:])
    x = dilate_pad(x, padding, lhs_dilation, lead=1)
    ss = x.strides[1:-1]
    windows = as_strided(
        x, tuple(out_spatial) + (c,) + window + (n,),
        tuple(st * s for st, s in zip(strides, ss)) + (x.strides[0],)
        + tuple(d * s for d, s in zip(rhs_dilation, ss)) + (x.strides[-1],), writeable=False)
    rows = c * int(np.prod(window))
    kernel = rhs.reshape(o, rows).T
    out = np.empty(tuple(out_spatial) + (n, o), np.result_type(x, rhs))
    per_row = int(np.prod(out_spatial[1:])) * rows * n * x.itemsize
    for q0, q1 in _chunks(n, out_spatial[0], per_row):
        patches = np.ascontiguousarray(windows[q0:q1]).reshape(-1, rows, n)
        np.matmul(patches.swapaxes(-1, -2), kernel, out=out[q0:q1].reshape(-1, n, o))
    return np.moveaxis(out, (-2, -1), (0, 1))


def _conv_long_window(lhs, rhs, padding, out_spatial, dtype):
    """A few outputs per example, each a long dot product (the kernel gradient of a
    convolution with few input features: LeNet's first, 5x5 outputs of 24x24
    windows): dot products over rows laid end to end, with no patch copies
    (1.6x faster than the chunked gather, measured). The kernel's rows are padded
    to the lhs's width W, so output (i, j) is the dot product of the padded kernel
    with the flattened lhs from i * W + j on."""
    x = np.ascontiguousarray(dilate_pad(lhs, padding, lead=2), dtype)
    m, c, h, w = x.shape
    o, _, ka, kb = rhs.shape
    span = (ka - 1) * w + kb
    kernel = np.zeros((o, c, ka, w), dtype)
    kernel[:, :, :, :kb] = rhs
    starts = (np.arange(out_spatial[0])[:, None] * w + np.arange(out_spatial[1])).ravel()
    out = np.empty((m * o, starts.size), dtype)
    # work in windowed-kernel elements: 16 vectorized multiply-adds take about the time
    # of one (0.35 ms for LeNet's 12.8M, measured)
    _by_rows(_dot_rows, out, x.reshape(m, c, h * w), kernel.reshape(o, c, ka * w), span,
             starts, work=c * span * out.size // 16)
    return out.reshape((m, o) + tuple(out_spatial))


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _dot_rows(out, lhs, kernel, span, starts, t0, t1):
    """out[m * O + o, q] = sum over c, p < span of lhs[m, c, starts[q] + p] * kernel[o, c, p].
    Two kernels and five outputs at a time: 7 loads per 10 multiply-adds (1.5x faster
    than one kernel, measured). Reassociation lets LLVM vectorize the sums (unsigned
    indices: no negative-index wraparound to block it)."""
    count, q_all = kernel.shape[0], starts.shape[0]
    zero = np.zeros(1, out.dtype)[0]
    t = t0
    while t < t1:
        m, o = t // count, t % count
        pair = o + 1 < count and t + 1 < t1
        o2 = o + 1 if pair else o
        for q in range(0, q_all - 4, 5):
            a0 = a1 = a2 = a3 = a4 = b0 = b1 = b2 = b3 = b4 = zero
            s0, s1, s2, s3, s4 = starts[q], starts[q + 1], starts[q + 2], starts[q + 3], \
                starts[q + 4]
            for c in range(lhs.shape[1]):
                row, k, k2 = lhs[m, c], kernel[o, c], kernel[o2, c]
                for p in range(np.uint64(span)):
                    u, v = k[p], k2[p]
                    r0, r1, r2 = row[np.uint64(s0) + p], row[np.uint64(s1) + p], \
                        row[np.uint64(s2) + p]
                    r3, r4 = row[np.uint64(s3) + p], row[np.uint64(s4) + p]
                    a0 += u * r0
                    a1 += u * r1
                    a2 += u * r2
                    a3 += u * r3
                    a4 += u * r4
                    b0 += v * r0
                    b1 += v * r1
                    b2 += v * r2
                    b3 += v * r3
                    b4 += v * r4
            out[t, q], out[t, q + 1], out[t, q + 2], out[t, q + 3], out[t, q + 4] = \
                a0, a1, a2, a3, a4
            if pair:
                out[t + 1, q], out[t + 1, q + 1], out[t + 1, q + 2], out[t + 1, q + 3], \
                    out[t + 1, q + 4] = b0, b1, b2, b3, b4
        for tt in range(t, t + 2 if pair else t + 1):
            oo = tt % count
            for q in range(q_all - q_all % 5, q_all):
                a0 = zero
                for c in range(lhs.shape[1]):
                    row, k = lhs[m, c], kernel[oo, c]
                    for p in range(span):
                        a0 += k[p] * row[np.uint64(starts[q] + p)]
                out[tt, q] = a0
        t += 2 if pair else 1


def _patch_matmul(w, windows, transposed, out):
    """out = w @ patches, the patches copied from windows (m, G, c, *window, *out)."""
    m, groups = windows.shape[:2]
    nd = (windows.ndim - 3) // 2
    if not transposed:
        patches = np.ascontiguousarray(windows).reshape(m, groups, w.shape[-1], -1)
        np.matmul(w, patches, out=out)
    else:
        perm = (0, 1) + tuple(range(3 + nd, 3 + 2 * nd)) + (2,) + tuple(range(3, 3 + nd))
        patches = np.ascontiguousarray(windows.transpose(perm)).reshape(m, groups, -1,
                                                                        w.shape[-1])
        np.matmul(w, patches.swapaxes(-1, -2), out=out)


def _conv_scatter(lhs, rhs, padding, lhs_dilation, rhs_dilation, groups, out_spatial, dtype):
    """Unit strides only: input position i meets window position k at output
    position lo + i * lhs_dilation - k * rhs_dilation (per axis). The batch axis is
    innermost, so the matmul is one large product per group and the additions run
    over contiguous rows (2x faster than batch-first on LeNet's input gradient)."""
    n = lhs.shape[0]
    o, cg = rhs.shape[:2]
    og = o // groups
    window, spatial = tuple(rhs.shape[2:]), tuple(lhs.shape[2:])
    k, size = int(np.prod(window)), int(np.prod(spatial))
    # products[g, (o, k), (i, n)] = sum_c rhs[g, o, c, k] * lhs[n, g, c, i]
    w = np.moveaxis(rhs.reshape((groups, og, cg, k)), 2, 3).reshape(groups, og * k, cg)
    x = np.moveaxis(lhs.reshape(n, groups, cg, size), 0, 3).reshape(groups, cg, size * n)
    pad3 = (1,) * (3 - len(window))
    products = np.matmul(w, x).reshape((o,) + pad3 + window + pad3 + spatial + (n,))
    ranges = [_scatter_ranges(1, 1, 1, 0, 1, 1)] * len(pad3) + [
        _scatter_ranges(*args) for args in zip(spatial, window, out_spatial,
                                                (lo for lo, _ in padding), lhs_dilation,
                                                rhs_dilation)]
    out = np.zeros((o,) + pad3 + tuple(out_spatial) + (n,), dtype)
    _col2im(products, ranges[0], ranges[1], ranges[2], out)
    return np.moveaxis(out.reshape((o,) + tuple(out_spatial) + (n,)), -1, 0)


def _conv_scatter_channels_last(x, rhs, padding, out_spatial, dtype):
    """x is (N, H, W, C), 2-d windows, unit strides and dilations: one matmul gives
    every input position's products with the kernel, (N, H, W, KH, KW, O), then the
    additions run over rows of KW * O contiguous values into a channels-last output
    (1.6x faster than the batch-last scatter on LeNet's input gradient, and the
    max pool's backward then reads it in memory order). Returned as (N, O, OH, OW)."""
    n, h, w, c = x.shape
    o, _, kh, kw = rhs.shape
    # Window columns reversed, so each input position's KW products land on
    # increasing output columns.
    kernel = np.moveaxis(rhs[:, :, :, ::-1], 0, -1).reshape(c, kh * kw * o)
    products = np.matmul(x.reshape(n * h * w, c), kernel).reshape(n, h, w, kh, kw * o)
    out = np.zeros((n,) + tuple(out_spatial) + (o,), dtype)
    _by_rows(_col2im_channels_last, products, padding[0][0], padding[1][0] - (kw - 1), o,
             out.reshape(n, out_spatial[0], -1))
    return np.moveaxis(out, -1, 1)


@numba.njit(cache=True, nogil=True)
def _col2im_channels_last(products, lo_h, lo_w, o, out, n0, n1):
    """out[n, y + lo_h - a, (x + lo_w + t) * o + f] += products[n, y, x, a, t * o + f]
    where the output has such a position. (Unsigned indices: Numba's wraparound of
    negative indices would keep LLVM from vectorizing the additions, 2.6x, measured.)"""
    h, w, ka, run = products.shape[1:]
    rows, width = out.shape[1], out.shape[2]
    for n in range(n0, n1):
        for y in range(h):
            for a in range(ka):
                i = y + lo_h - a
                if i < 0 or i >= rows:
                    continue
                dst = out[n, i]
                for x in range(w):
                    src = products[n, y, x, a]
                    shift = (x + lo_w) * o
                    start, stop = max(0, -shift), min(run, width - shift)
                    for e in range(np.uint64(start), np.uint64(max(start, stop))):
                        dst[np.uint64(shift + e)] += src[e]


@functools.lru_cache(maxsize=512)
def _scatter_ranges(n, k, n_out, lo, lhs_dilation, rhs_dilation):
    """Per window position: the input positions [i0, i1) that land in the output, the
    output position of i0 and the output step between consecutive inputs."""
    table = np.zeros((k, 4), np.int64)
    for j in range(k):
        offset = j * rhs_dilation - lo
        i0 = max(0, -(-offset // lhs_dilation))
        i1 = min(n - 1, (n_out - 1 + offset) // lhs_dilation)
        table[j] = (i0, i1 + 1, i0 * lhs_dilation - offset, lhs_dilation) if i1 >= i0 \
            else (0, 0, 0, 1)
    table.flags.writeable = False
    return table


@numba.njit(cache=True)
def _col2im(products, ra, rb, rc, out):
    """out[m, ya + (i - ia) * sa, yb + (j - ib) * sb, yc + (l - ic) * sc, :] +=
    products[m, a, b, c, i, j, l, :] over the input positions (i, j, l) that window
    position (a, b, c) maps into the output; (ia, i1, ya, sa) = ra[a], and likewise."""
    m_size, ka, kb, kc = products.shape[:4]
    batch = products.shape[-1]
    for m in range(m_size):
        for a in range(ka):
            ia, ia1, ya, sa = ra[a, 0], ra[a, 1], ra[a, 2], ra[a, 3]
            for b in range(kb):
                ib, ib1, yb, sb = rb[b, 0], rb[b, 1], rb[b, 2], rb[b, 3]
                for c in range(kc):
                    ic, ic1, yc, sc = rc[c, 0], rc[c, 1], rc[c, 2], rc[c, 3]
                    for i in range(ia, ia1):
                        for j in range(ib, ib1):
                            src = products[m, a, b, c, i, j]
                            dst = out[m, ya + (i - ia) * sa, yb + (j - ib) * sb]
                            if sc == 1:     # one contiguous run over (l, batch)
                                s = src[ic:ic1].ravel()
                                d = dst[yc:yc + ic1 - ic].ravel()
                                for t in range(s.shape[0]):
                                    d[t] += s[t]
                            else:
                                for l in range(ic, ic1):
                                    s, d = src[l], dst[yc + (l - ic) * sc]
                                    for t in range(batch):
                                        d[t] += s[t]


# --------------------------------------------------------------------------- windows

MAX, MIN, SUM = 0, 1, 2


def identity(op, dtype):
    dtype = np.dtype(dtype)
    if op == SUM:
        return dtype.type(0)
    if dtype.kind == "f":
        return dtype.type(-np.inf if op == MAX else np.inf)
    if dtype.kind == "b":
        return op == MIN
    info = np.iinfo(dtype)
    return dtype.type(info.min if op == MAX else info.max)


@functools.lru_cache(maxsize=512)
def _window_tables(shape, window, strides):
    """For a C-contiguous padded operand of `shape`, seen as a table of rows (the
    leading axes the window leaves alone): the start of each output row in a table
    row (all output axes but the last), the offset of each window element from a
    start, the step between neighbours along the last output axis, and the shapes."""
    lead = 0
    while lead < len(shape) - 1 and window[lead] == 1 and strides[lead] == 1:
        lead += 1
    row_shape = shape[lead:]
    elem = np.ones(len(row_shape), np.int64)
    for i in range(len(row_shape) - 2, -1, -1):
        elem[i] = elem[i + 1] * row_shape[i + 1]
    out_shape = tuple(out_size(n, k, s, 0, 0) for n, k, s in zip(shape, window, strides))
    starts = np.zeros(out_shape[lead:-1], np.int64)
    offsets = np.zeros(window[lead:], np.int64)
    for i, (n, k, s, e) in enumerate(zip(out_shape[lead:], window[lead:], strides[lead:],
                                         elem)):
        if i < len(row_shape) - 1:
            view = [1] * (len(row_shape) - 1)
            view[i] = -1
            starts = starts + (np.arange(n) * s * e).reshape(view)
        view = [1] * len(row_shape)
        view[i] = -1
        offsets = offsets + (np.arange(k) * e).reshape(view)
    starts, offsets = starts.ravel(), offsets.ravel()
    starts.flags.writeable = offsets.flags.writeable = False
    rows = int(np.prod(shape[:lead], dtype=np.int64))
    table_shape = (rows, int(np.prod(row_shape, dtype=np.int64)))
    return table_shape, starts, offsets, strides[-1], (rows, starts.size, out_shape[-1]), \
        out_shape


def _in_memory_order(x, *per_axis):
    """A C-contiguous view of x with its axes in memory order (x itself, or a copy
    when no order of its axes is contiguous), the per-axis parameters permuted to
    match, and the permutation."""
    perm = tuple(range(x.ndim))
    if not x.flags.c_contiguous and x.ndim > 1:
        order = tuple(int(i) for i in np.argsort([-abs(s) for s in x.strides], kind="stable"))
        if x.transpose(order).flags.c_contiguous:
            perm = order
        else:
            x = np.ascontiguousarray(x)
    if perm != tuple(range(x.ndim)):
        x = x.transpose(perm)
        per_axis = [tuple(p[i] for i in perm) for p in per_axis]
    return x, per_axis, perm


class _Windows:
    """The padded operand as a table, with the window tables, for the kernels."""

    def __init__(self, x, window, strides, padding, fill):
        x, (self.window, self.strides, self.padding), self.perm = _in_memory_order(
            x, window, strides, padding)
        window, strides = self.window, self.strides
        xp = np.ascontiguousarray(dilate_pad(x, self.padding, fill=fill))
        (table_shape, self.starts, self.offsets, self.step, self.out3,
         self.out_shape) = _window_tables(xp.shape, window, strides)
        self.shape = xp.shape
        self.table = xp.reshape(table_shape)

    def restore(self, out):
        out = out.reshape(self.out_shape)
        perm = self.perm
        return out if perm == tuple(range(out.ndim)) else out.transpose(np.argsort(perm))

    def select(self, op):
        chosen = np.zeros(self.out3, np.int64)
        if chosen.size:
            _by_rows(_select_rows, self.table, self.starts, self.offsets, self.step,
                     op == MAX, chosen)
        return chosen.reshape(self.out3[0], -1) if chosen.size else chosen.reshape(
            self.out3[0], 0)


def _scalar_safe(kernel):
    """Windowed kernels on 0-d operands run on a 1-element vector."""
    @functools.wraps(kernel)
    def run(*args):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        if arrays and arrays[0].ndim == 0:
            *head, op, _, _, _ = args
            return kernel(*[a.reshape(1) for a in head], op, (1,), (1,), ((0, 0),)).reshape(())
        return kernel(*args)
    return run


@_via_float32
@_scalar_safe
def reduce_window(x, op, window, strides, padding):
    pairs = _pairs_of_rows(x, window, strides, padding)
    if pairs is not None:
        x4, shape, perm = pairs
        out = np.empty((x4.shape[0], x4.shape[1] // 2, x4.shape[2] // 2, x4.shape[3]), x.dtype)
        _by_rows(_pool_pairs, x4, op, out)
        return _restored(out.reshape(shape), perm)
    w = _Windows(x, window, strides, padding, identity(op, x.dtype))
    out = np.empty(w.out3, x.dtype)
    if out.size:
        _by_rows(_reduce_rows, w.table, w.starts, w.offsets, w.step, op, out)
    return w.restore(out)


@_via_float32
@_scalar_safe
def select_and_gather(t, x, op, window, strides, padding):
    """Per window, t at the position of x's first maximum (op MAX) or minimum."""
    w = _Windows(x, window, strides, padding, identity(op, x.dtype))
    chosen = w.select(op)
    tp = np.ascontiguousarray(dilate_pad(t.transpose(w.perm), w.padding, fill=0))
    return w.restore(np.take_along_axis(tp.reshape(w.table.shape), chosen, axis=1))


@_via_float32
@_scalar_safe
def select_and_scatter(g, x, op, window, strides, padding):
    """The transpose of select_and_gather: each window's g added at its chosen position."""
    pairs = _pairs_of_rows(x, window, strides, padding)
    if pairs is not None:
        x4, shape, perm = pairs
        values = np.ascontiguousarray(g.transpose(perm)).reshape(
            x4.shape[0], x4.shape[1] // 2, x4.shape[2] // 2, x4.shape[3])
        out = np.empty(x4.shape, g.dtype)
        _by_rows(_select_scatter_pairs, x4, op == MAX, values, out)
        return _restored(out.reshape(x.transpose(perm).shape), perm)
    w = _Windows(x, window, strides, padding, identity(op, x.dtype))
    # Windows that tile the padded operand (LeNet's 2x2 pools) write every position
    # once, zeros included: no cleared buffer, no read-modify-write.
    tiled = all(k == s and n == m * k for n, k, s, m in zip(
        w.shape, w.window, w.strides, w.out_shape))
    acc = (np.empty if tiled else np.zeros)(w.shape, g.dtype)
    if w.starts.size and w.out3[2]:
        values = np.ascontiguousarray(g.transpose(w.perm)).reshape(w.out3)
        _by_rows(_select_scatter_rows, w.table, w.starts, w.offsets, w.step, op == MAX,
                 values, acc.reshape(w.table.shape), tiled)
    elif tiled:
        acc[...] = 0
    # Back from padded coordinates: crop the padding, re-insert cropped positions.
    inner = tuple(slice(max(lo, 0), n - max(hi, 0)) for n, (lo, hi) in zip(w.shape, w.padding))
    out = dilate_pad(acc[inner], [(-min(lo, 0), -min(hi, 0)) for lo, hi in w.padding])
    perm = w.perm
    out = np.ascontiguousarray(out)
    return out if perm == tuple(range(out.ndim)) else out.transpose(np.argsort(perm))


# 2x2 windows that tile two adjacent axes (stride 2, no padding: the pooling of
# LeNet and most CNNs) get kernels of their own, with the four positions unrolled.
# In LeNet's jitted step (128x24x24x6) the forward takes 0.26 instead of 0.44 ms and
# the selection 0.59 instead of 0.90 ms (measured, against the general row kernels
# below). Loops over the window, even of two, were 2.5-6x slower than unrolled.
# With the window axes innermost (NCHW) the general kernels vectorize and stay.

def _pairs_of_rows(x, window, strides, padding):
    """For 2x2 windows with stride 2 tiling two adjacent axes of x (in memory order):
    x as (outer, H, W, inner) with the window axes H and W, the output's shape in
    memory order and the permutation; None when this does not apply."""
    if x.dtype.kind != "f" or x.ndim < 2 or x.size == 0:
        return None
    x, (window, strides, padding), perm = _in_memory_order(x, window, strides, padding)
    axes = [d for d, (k, s) in enumerate(zip(window, strides)) if k != 1 or s != 1]
    if (len(axes) != 2 or axes[1] != axes[0] + 1
            or any(window[d] != 2 or strides[d] != 2 or x.shape[d] % 2 for d in axes)
            or any(lo or hi for lo, hi in padding)):
        return None
    d = axes[0]
    h, w = x.shape[d:d + 2]
    inner = int(np.prod(x.shape[d + 2:]))
    if inner == 1:
        return None
    x4 = x.reshape(int(np.prod(x.shape[:d])), h, w, inner)
    return x4, x.shape[:d] + (h // 2, w // 2) + x.shape[d + 2:], perm


def _restored(out, perm):
    return out if perm == tuple(range(out.ndim)) else out.transpose(np.argsort(perm))


@numba.njit(cache=True, nogil=True)
def _pool_pairs(x, op, out, n0, n1):
    """out[n, i, j, c] = the reduction of x[n, 2i:2i+2, 2j:2j+2, c] in window order;
    NaN propagates, as in np.maximum."""
    # A constant op in each inlined loop (a choice per element costs ~25%, measured).
    if op == SUM:
        _pool_pairs_loop(x, SUM, out, n0, n1)
    elif op == MAX:
        _pool_pairs_loop(x, MAX, out, n0, n1)
    else:
        _pool_pairs_loop(x, MIN, out, n0, n1)


@numba.njit(inline="always")
def _pool_pairs_loop(x, op, out, n0, n1):
    h, w, c_size = x.shape[1:]
    for n in range(n0, n1):
        for i in range(h // 2):
            top, bottom = x[n, 2 * i].ravel(), x[n, 2 * i + 1].ravel()
            dst = out[n, i].ravel()
            for j in range(w // 2):
                base = 2 * j * c_size
                for c in range(c_size):
                    a, b = top[base + c], top[base + c_size + c]
                    e, f = bottom[base + c], bottom[base + c_size + c]
                    if op == SUM:
                        v = ((a + b) + e) + f
                    elif op == MAX:
                        ab = b if (b > a) | (b != b) else a
                        ef = f if (f > e) | (f != f) else e
                        v = ef if (ef > ab) | (ef != ef) else ab
                    else:
                        ab = b if (b < a) | (b != b) else a
                        ef = f if (f < e) | (f != f) else e
                        v = ef if (ef < ab) | (ef != ef) else ab
                    dst[j * c_size + c] = v


@numba.njit(cache=True, nogil=True)
def _first_extreme(a, b, e, f, is_max):
    """The position of the first extreme of (a, b, e, f), or of their first NaN."""
    best, at = a, 0
    if best == best and not ((b <= best) if is_max else (b >= best)):
        best, at = b, 1
    if best == best and not ((e <= best) if is_max else (e >= best)):
        best, at = e, 2
    if best == best and not ((f <= best) if is_max else (f >= best)):
        at = 3
    return at


@numba.njit(cache=True, nogil=True)
def _select_scatter_pairs(x, is_max, g, out, n0, n1):
    """out (x's shape) holds g[n, i, j, c] at the first extreme (or first NaN) of
    x[n, 2i:2i+2, 2j:2j+2, c], zeros elsewhere."""
    # A constant is_max in the inlined loop (a choice per element costs ~25%).
    if is_max:
        _select_scatter_pairs_loop(x, True, g, out, n0, n1)
    else:
        _select_scatter_pairs_loop(x, False, g, out, n0, n1)


@numba.njit(inline="always")
def _select_scatter_pairs_loop(x, is_max, g, out, n0, n1):
    h, w, c_size = x.shape[1:]
    zero = np.zeros(1, out.dtype)[0]
    for n in range(n0, n1):
        for i in range(h // 2):
            top, bottom = x[n, 2 * i].ravel(), x[n, 2 * i + 1].ravel()
            up, down = out[n, 2 * i].ravel(), out[n, 2 * i + 1].ravel()
            src = g[n, i].ravel()
            for j in range(w // 2):
                base = 2 * j * c_size
                for c in range(c_size):
                    k, l = base + c, base + c_size + c
                    a, b, e, f = top[k], top[l], bottom[k], bottom[l]
                    s = (a + b) + (e + f)
                    if s != s:      # a NaN (or inf - inf): the general rule, in order
                        at = _first_extreme(a, b, e, f, is_max)
                        t0, t1, t2 = at == 0, at == 1, at == 2
                    else:
                        m = max(max(a, b), max(e, f)) if is_max else min(min(a, b), min(e, f))
                        t0 = a == m
                        t1 = (b == m) & ~t0
                        t2 = (e == m) & ~(t0 | t1)
                    t3 = ~(t0 | t1 | t2)
                    v = src[j * c_size + c]
                    up[k] = v if t0 else zero
                    up[l] = v if t1 else zero
                    down[k] = v if t2 else zero
                    down[l] = v if t3 else zero


# Windowed kernels on at least this many operand elements split their rows between
# threads (the kernels release the GIL). Called alone in a loop, LeNet's kernels
# (1e5-5e5 elements) gain up to 1.5x from two threads; inside the jitted step, where
# the other core sits idle between library calls, they lose: the first conv's kernel
# gradient 0.70 vs 0.35 ms, the whole step 8.2 vs 7.4 ms split at 2^17 vs serial
# (interleaved, 2 cores; the same with OpenBLAS and Numba on one thread: waking the
# idle core costs more than the split saves). So only work of milliseconds is split.
PARALLEL_MIN_ELEMENTS = 1 << 22


def _by_rows(kernel, table, *args, work=None):
    """kernel(table, *args, r0, r1) over the table's rows, on all cores when large
    (`work`: the elements touched, if not the table's size)."""
    from .chunked import run_blocks
    run_blocks(lambda r0, r1: kernel(table, *args, r0, r1), table.shape[0],
               parallel=(table.size if work is None else work) >= PARALLEL_MIN_ELEMENTS)


# _reduce_rows walks the last output axis innermost, `step` elements apart, so each
# window element is one strided pass, and stores unconditionally (a select, not a
# branch on random data): 4-7x faster than one window at a time with branches on
# LeNet's pooling (measured). Selection goes the other way (below).

@numba.njit(cache=True, nogil=True)
def _reduce_rows(table, starts, offsets, step, op, out, r0, r1):
    """out[r, p, j] = the reduction over q of table[r, starts[p] + j * step + offsets[q]]."""
    width = out.shape[2]
    for r in range(r0, r1):
        row = table[r]
        for p in range(starts.shape[0]):
            acc = out[r, p]
            base = starts[p] + offsets[0]
            for j in range(width):
                acc[j] = row[base + j * step]
            for q in range(1, offsets.shape[0]):
                base = starts[p] + offsets[q]
                if op == SUM:
                    for j in range(width):
                        acc[j] += row[base + j * step]
                elif op == MAX:     # NaN propagates, as in np.maximum
                    for j in range(width):
                        v, a = row[base + j * step], acc[j]
                        acc[j] = v if (v > a) | (v != v) else a
                else:
                    for j in range(width):
                        v, a = row[base + j * step], acc[j]
                        acc[j] = v if (v < a) | (v != v) else a


# Selection keeps the window innermost with scalar accumulators: 3x faster than the
# strided passes with per-lane arrays of extremes and positions (measured). A value
# replaces the running extreme `b` when b is not NaN and v is not on b's side of it
# (v beyond b, or v NaN): the first extreme wins, and the first NaN.

@numba.njit(cache=True, nogil=True)
def _select_rows(table, starts, offsets, step, is_max, chosen, r0, r1):
    """The offset in its table row of each window's first maximum (or minimum)."""
    for r in range(r0, r1):
        row = table[r]
        for p in range(starts.shape[0]):
            at = chosen[r, p]
            for j in range(at.shape[0]):
                base = starts[p] + j * step
                best_at = base + offsets[0]
                best = row[best_at]
                for q in range(1, offsets.shape[0]):
                    i = base + offsets[q]
                    v = row[i]
                    take = (best == best) and not ((v <= best) if is_max else (v >= best))
                    best = v if take else best
                    best_at = i if take else best_at
                at[j] = best_at


@numba.njit(cache=True, nogil=True)
def _select_scatter_rows(table, starts, offsets, step, is_max, values, out, tiled, r0, r1):
    """out[r, offset of the first extreme of window (p, j)] += values[r, p, j]. When
    the windows tile the table, out is written whole instead: each window's other
    positions get zeros (stored unconditionally, no branch on the data)."""
    zero = np.zeros(1, out.dtype)[0]
    for r in range(r0, r1):
        row, dst, src = table[r], out[r], values[r]
        for p in range(starts.shape[0]):
            g = src[p]
            for j in range(g.shape[0]):
                base = starts[p] + j * step
                best_at = base + offsets[0]
                best = row[best_at]
                if tiled:
                    dst[best_at] = zero
                for q in range(1, offsets.shape[0]):
                    i = base + offsets[q]
                    v = row[i]
                    take = (best == best) and not ((v <= best) if is_max else (v >= best))
                    best = v if take else best
                    best_at = i if take else best_at
                    if tiled:
                        dst[i] = zero
                if tiled:
                    dst[best_at] = g[j]
                else:
                    dst[best_at] += g[j]
