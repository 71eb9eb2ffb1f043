"""Scaled dot-product attention, as jax.nn.dot_product_attention.

Layout (batch, sequence, heads, head_dim) -- BTNH for queries, BSKH for keys and values
-- with the batch axis optional. K key/value heads may serve N = K * G query heads
(grouped-query attention): query head n reads key head n // G. Masks are boolean,
True where a query may attend to a key, and broadcast against (B, N, T, S) like bias.
"""
import math
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..errors import ShapeError
from ..numpy._core import as_operand
from ..lax import stop_gradient
from .activations import logsumexp, softmax
from ..typing import ArrayLike


def _seq_mask(lengths, size):
    """(B, size): position < length, per batch entry."""
    return fnp.arange(size) < fnp.expand_dims(as_operand(lengths), -1)


def _window(local_window_size):
    if isinstance(local_window_size, int):
        return local_window_size, local_window_size
    left, right = local_window_size
    return int(left), int(right)


def dot_product_attention(query: ArrayLike, key: ArrayLike, value: ArrayLike,
                          bias: ArrayLike | None = None, mask: ArrayLike | None = None, *,
                          scale: float | None = None, is_causal: bool = False,
                          query_seq_lengths: ArrayLike | None = None,
                          key_value_seq_lengths: ArrayLike | None = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None,
                          return_residual: bool = False) -> Any:
    """softmax(q k^T * scale + bias, masked) v, per head; scale defaults to
    1 / sqrt(head_dim). The softmax runs in float32 at least (float64 stays float64).
    With return_residual, also the logsumexp of each row of masked logits, (B, T, N)
    (treated as a constant by derivatives, as JAX): what blockwise attention needs to
    merge partial results."""
    if implementation not in (None, "xla"):
        raise ValueError(f"dot_product_attention: implementation {implementation!r} is "
                         f"not available in fnad (use None)")
    q, k, v = as_operand(query), as_operand(key), as_operand(value)
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = (fnp.expand_dims(a, 0) for a in (q, k, v))
    if not (q.ndim == k.ndim == v.ndim == 4) or k.shape != v.shape or \
            q.shape[0] != k.shape[0] or q.shape[-1] != k.shape[-1]:
        raise ShapeError(f"dot_product_attention: query (B, T, N, H), key and value "
                         f"(B, S, K, H) (B optional) with matching B and H, got shapes "
                         f"{fnp.shape(query)}, {fnp.shape(key)}, {fnp.shape(value)}")
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    if N % K:
        raise ShapeError(f"dot_product_attention: {N} query heads cannot share {K} "
                         f"key/value heads (N must be a multiple of K)")
    G = N // K
    scale = 1 / math.sqrt(H) if scale is None else scale
    compute = np.promote_types(q.dtype, np.float32)
    qg = fnp.reshape(q, (B, T, K, G, H))
    logits = fnp.einsum("btkgh,bskh->bkgts", qg, k)
    logits = fnp.reshape(fnp.astype(logits, compute), (B, N, T, S)) * scale
    if bias is not None:
        bias = as_operand(bias)
        logits = logits + fnp.astype(fnp.expand_dims(bias, 0) if unbatched and
                                     bias.ndim == 3 else bias, compute)
    keep = None

    def both(a, b):
        return b if a is None else a & b
    if mask is not None:
        mask = as_operand(mask)
        if mask.dtype != np.bool_:
            raise ShapeError(f"dot_product_attention: mask must be boolean (True where "
                             f"attention is allowed), got {mask.dtype}")
        keep = both(keep, fnp.expand_dims(mask, 0) if unbatched and mask.ndim == 3
                    else mask)
    t_pos = fnp.reshape(fnp.arange(T), (T, 1))
    s_pos = fnp.reshape(fnp.arange(S), (1, S))
    if is_causal:
        keep = both(keep, s_pos <= t_pos)
    if local_window_size is not None:
        left, right = _window(local_window_size)
        keep = both(keep, (t_pos <= s_pos + left) & (t_pos >= s_pos - right))
    if key_value_seq_lengths is not None:
        kv = _seq_mask(key_value_seq_lengths, S)
        keep = both(keep, fnp.reshape(kv, (B, 1, 1, S)))
    if query_seq_lengths is not None:
        qm = _seq_mask(query_seq_lengths, T)
        keep = both(keep, fnp.reshape(qm, (B, 1, T, 1)))
    if keep is not None:
        # a large finite negative, not -inf: a row masked entirely gets equal weights
        # instead of 0 / 0
        negative = -0.7 * float(np.finfo(np.float32).max)
        logits = fnp.where(keep, logits, negative)
    residual = None
    if return_residual:
        residual = fnp.transpose(fnp.astype(stop_gradient(logsumexp(logits, axis=-1)),
                                            k.dtype), (0, 2, 1))
        residual = residual[0] if unbatched else residual
    weights = fnp.astype(softmax(logits, axis=-1), v.dtype)
    weights = fnp.reshape(weights, (B, K, G, T, S))
    out = fnp.reshape(fnp.einsum("bkgts,bskh->btkgh", weights, v), (B, T, N, H))
    if query_seq_lengths is not None:
        out = out * fnp.astype(fnp.reshape(_seq_mask(query_seq_lengths, T), (B, T, 1, 1)),
                               out.dtype)
    out = out[0] if unbatched else out
    return (out, residual) if return_residual else out
