"""Attention, composed of differentiable Tensor operations (products, a softmax, masks
as additions of -inf): ``scaled_dot_product_attention`` and ``multi_head_attention``,
the arithmetic of ``nn.MultiheadAttention`` and the transformer layers, with torch's
arguments, shapes and mask conventions.  Gradients of any order follow from the
operations'; float32 stays float32.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..tensor import Tensor
from .activation import softmax
from .dropout import dropout
from .layer_input import layer_input
from .linear import linear

__all__ = ["multi_head_attention", "scaled_dot_product_attention"]


def _probability(fn: str, name: str, p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{fn}: {name}={p!r} must be a probability in [0, 1]")
    return float(p)


def _additive(fn: str, name: str, mask: Any, dtype: np.dtype, masked_when: bool) -> Any:
    """A mask as what is added to the attention scores: a bool mask's ``masked_when``
    entries -inf, the others 0; a float mask as it is (its dtype: the scores')."""
    if mask is None:
        return None
    m = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype == np.bool_:
        return Tensor(np.where(m == masked_when, -np.inf, 0.0).astype(dtype))
    if m.dtype.kind != "f":
        raise TypeError(f"{fn}: {name} has dtype {m.dtype}; expected bool or a float dtype")
    if m.dtype != dtype:
        raise TypeError(f"{fn}: {name} has dtype {m.dtype} but the query has dtype {dtype}; "
                        "expected bool or the same float dtype")
    return mask if isinstance(mask, Tensor) else Tensor(m)


def _causal(length: int, source: int, dtype: np.dtype) -> Tensor:
    """The additive mask letting position i see positions j <= i only."""
    return Tensor(np.triu(np.full((length, source), -np.inf, dtype), 1))


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False
                                 ) -> Tensor:
    """``softmax(q k^T scale + mask) v`` over the last two dims (q ``(..., L, E)``, k
    ``(..., S, E)``, v ``(..., S, Ev)``); ``scale`` defaults to ``1/sqrt(E)``.  A bool
    ``attn_mask`` marks the pairs that take part (True), a float one is added;
    ``is_causal`` lets query i see keys j <= i only (with no ``attn_mask``)."""
    fn = "scaled_dot_product_attention"
    q = layer_input(fn, query, None, "query")
    k, v = (layer_input(fn, t, q, n) for t, n in ((key, "key"), (value, "value")))
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t.ndim < 2:
            raise ValueError(f"{fn}: {name} of shape {tuple(t.shape)} must have at least "
                             "2 dims (..., length, features)")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{fn}: query {tuple(q.shape)}, key {tuple(k.shape)} and value "
                         f"{tuple(v.shape)}: expected query and key to share their last dim "
                         "and key and value their length")
    if enable_gqa:
        raise ValueError(f"{fn}: enable_gqa=True is not supported (repeat key and value "
                         "over the query's heads instead)")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{fn}: is_causal=True takes no attn_mask (the causal mask is "
                         "built from the lengths)")
    p = _probability(fn, "dropout_p", dropout_p)
    length, source = q.shape[-2], k.shape[-2]
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    scores = (q @ k.transpose(-2, -1)) * s
    mask = (_causal(length, source, q.dtype) if is_causal
            else _additive(fn, "attn_mask", attn_mask, q.dtype, False))
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, -1)
    if p > 0.0:
        weights = dropout(weights, p, True)
    return weights @ v


def multi_head_attention(query: Tensor, key: Tensor, value: Tensor, num_heads: int,
                         in_proj: tuple, out_proj: tuple, dropout_p: float, training: bool,
                         key_padding_mask: Any = None, need_weights: bool = True,
                         attn_mask: Any = None, average_attn_weights: bool = True,
                         is_causal: bool = False, fn: str = "MultiheadAttention") -> tuple:
    """torch's multi-head attention on (L, N, E) query and (S, N, E_k), (S, N, E_v) key and
    value (sequence first): the projections ``in_proj`` ((W_q, b_q), (W_k, b_k), (W_v,
    b_v)), ``num_heads`` heads of ``E / num_heads`` features each, scores ``q k^T /
    sqrt(head_dim)`` plus the masks (bool: True is masked; float: added) and a softmax,
    dropout on the weights in training, then ``out_proj`` (W, b).  Returns the output
    (L, N, E) and the weights ((N, L, S) averaged over the heads, else (N, heads, L, S);
    None unless ``need_weights``)."""
    length, batch, embed = query.shape
    source = key.shape[0]
    head = embed // num_heads
    if is_causal and attn_mask is None:
        raise ValueError(f"{fn}: is_causal=True is a hint that attn_mask is the causal mask; "
                         "expected an attn_mask with it")
    (wq, bq), (wk, bk), (wv, bv) = in_proj
    q, k, v = linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    # (len, N, E) -> (N * heads, len, head_dim)
    q = q.reshape(length, batch * num_heads, head).transpose(0, 1)
    k = k.reshape(source, batch * num_heads, head).transpose(0, 1)
    v = v.reshape(source, batch * num_heads, head).transpose(0, 1)
    mask = _additive(fn, "attn_mask", attn_mask, query.dtype, True)
    if mask is not None:
        if mask.ndim == 2 and tuple(mask.shape) != (length, source):
            raise ValueError(f"{fn}: attn_mask of shape {tuple(mask.shape)} must be "
                             f"({length}, {source}) or ({batch * num_heads}, {length}, "
                             f"{source})")
        if mask.ndim == 3 and tuple(mask.shape) != (batch * num_heads, length, source):
            raise ValueError(f"{fn}: attn_mask of shape {tuple(mask.shape)} must be "
                             f"({length}, {source}) or ({batch * num_heads}, {length}, "
                             f"{source})")
        if mask.ndim not in (2, 3):
            raise ValueError(f"{fn}: attn_mask must be 2-d or 3-d, got shape "
                             f"{tuple(mask.shape)}")
    pad = _additive(fn, "key_padding_mask", key_padding_mask, query.dtype, True)
    if pad is not None:
        if tuple(pad.shape) != (batch, source):
            raise ValueError(f"{fn}: key_padding_mask of shape {tuple(pad.shape)} must be "
                             f"(batch, source length) = ({batch}, {source})")
        pad = pad.reshape(batch, 1, 1, source).expand(batch, num_heads, 1, source).reshape(
            batch * num_heads, 1, source)
        mask = pad if mask is None else mask + pad
    scores = (q * math.sqrt(1.0 / head)) @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, True)
    out = (weights @ v).transpose(0, 1).reshape(length * batch, embed)
    out = linear(out, *out_proj).reshape(length, batch, embed)
    if not need_weights:
        return out, None
    weights = weights.reshape(batch, num_heads, length, source)
    return out, (weights.mean(1) if average_attn_weights else weights)
