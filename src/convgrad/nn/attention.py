"""``MultiheadAttention``: torch's layer (arguments, parameter names and shapes,
initialisation, input layouts, masks, returned weights) over
:func:`..functional.attention.multi_head_attention`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional.attention import multi_head_attention
from ..functional.layer_input import layer_input
from ..tensor import Tensor
from ..tensor.args import check_dtype
from . import init
from .conv import _positive_int
from .layers import Linear
from .module import Module, Parameter

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for the output projection's Linear (its state-dict keys are Linear's)."""


def _flag(fn: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{fn}: {name}={value!r} must be a bool")
    return bool(value)


class MultiheadAttention(Module):
    """``MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
    add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
    dtype=None)``; ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)`` returns ``(output,
    weights)`` (weights None unless ``need_weights``)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        fn = "MultiheadAttention"
        check_device(fn, device)
        self.embed_dim = _positive_int("embed_dim", embed_dim, fn)
        self.num_heads = _positive_int("num_heads", num_heads, fn)
        if embed_dim % num_heads:
            raise ValueError(f"{fn}: embed_dim={embed_dim} must be divisible by "
                             f"num_heads={num_heads}")
        self.head_dim = embed_dim // num_heads
        if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not (
                0.0 <= dropout <= 1.0):
            raise ValueError(f"{fn}: dropout={dropout!r} must be a probability in [0, 1]")
        self.dropout = float(dropout)
        self.batch_first = _flag(fn, "batch_first", batch_first)
        if _flag(fn, "add_bias_kv", add_bias_kv) or _flag(fn, "add_zero_attn", add_zero_attn):
            raise ValueError(f"{fn}: add_bias_kv=True and add_zero_attn=True are not "
                             "supported")
        self.kdim = embed_dim if kdim is None else _positive_int("kdim", kdim, fn)
        self.vdim = embed_dim if vdim is None else _positive_int("vdim", vdim, fn)
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
        e = embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.empty((3 * e, e), dt))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(np.empty((e, e), dt))
            self.k_proj_weight = Parameter(np.empty((e, self.kdim), dt))
            self.v_proj_weight = Parameter(np.empty((e, self.vdim), dt))
            self.register_parameter("in_proj_weight", None)
        if _flag(fn, "bias", bias):
            self.in_proj_bias = Parameter(np.empty(3 * e, dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self.out_proj = NonDynamicallyQuantizableLinear(e, e, bias=bias, dtype=dt, rng=rng)
        self._reset_parameters(rng)

    def _reset_parameters(self, rng: Any = None) -> None:
        """torch's: Glorot-uniform projections, zero biases (the output projection's
        weight keeps Linear's initialisation)."""
        rng = init._generator(rng, "MultiheadAttention")
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight, rng=rng)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w, rng=rng)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def _in_proj(self) -> tuple:
        e, b = self.embed_dim, self.in_proj_bias
        biases = (None,) * 3 if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(zip(weights, biases))

    def forward(self, query: Any, key: Any, value: Any, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None,
                average_attn_weights: bool = True, is_causal: bool = False) -> tuple:
        fn = "MultiheadAttention"
        weight = self.in_proj_weight if self._qkv_same_embed_dim else self.q_proj_weight
        q = layer_input(fn, query, weight, "query")
        k = layer_input(fn, key, weight, "key")
        v = layer_input(fn, value, weight, "value")
        if q.ndim not in (2, 3) or k.ndim != q.ndim or v.ndim != q.ndim:
            raise ValueError(f"{fn}: query {tuple(q.shape)}, key {tuple(k.shape)} and value "
                             f"{tuple(v.shape)} must all be 3-d ((L, N, E), or (N, L, E) with "
                             "batch_first) or all 2-d (unbatched (L, E))")
        batched = q.ndim == 3
        if not batched:
            q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = _mask_array(key_padding_mask)[None]
        elif self.batch_first:
            q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        for name, t, want in (("query", q, self.embed_dim), ("key", k, self.kdim),
                              ("value", v, self.vdim)):
            if t.shape[-1] != want:
                raise ValueError(f"{fn}: {name} of shape {tuple(t.shape)} must end with "
                                 f"{want} features")
        if k.shape[:2] != v.shape[:2] or k.shape[1] != q.shape[1]:
            raise ValueError(f"{fn}: key {tuple(k.shape)} and value {tuple(v.shape)} must "
                             f"share their length and batch with the query's batch")
        out, weights = multi_head_attention(
            q, k, v, self.num_heads, self._in_proj(),
            (self.out_proj.weight, self.out_proj.bias), self.dropout, self.training,
            key_padding_mask, bool(need_weights), attn_mask, bool(average_attn_weights),
            bool(is_causal), fn)
        if not batched:
            out = out.squeeze(1)
            weights = None if weights is None else weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def extra_repr(self) -> str:  # torch's repr shows only the output projection
        return ""


def _mask_array(mask: Any) -> np.ndarray:
    return mask.data if isinstance(mask, Tensor) else np.asarray(mask)
