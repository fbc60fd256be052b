"""Transformer layers with torch's arguments, parameter names, defaults and arithmetic:
``TransformerEncoderLayer``, ``TransformerDecoderLayer`` (post-norm, or pre-norm with
``norm_first``), the stacks ``TransformerEncoder``, ``TransformerDecoder`` (deep copies
of one layer, an optional final norm) and ``Transformer`` (both stacks, each with a
final LayerNorm, Glorot-initialised).  Each block is composed of ``MultiheadAttention``,
``Linear``, ``Dropout`` and ``LayerNorm``; its gradient is theirs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional import activation as Fa
from ..functional.smooth_activation import gelu
from ..tensor import Tensor
from ..tensor.args import check_dtype
from . import init
from .attention import MultiheadAttention, _flag
from .containers import ModuleList
from .conv import _positive_int
from .dropout import Dropout
from .layers import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer",
           "TransformerEncoder", "TransformerEncoderLayer"]


def _activation(fn: str, activation: Any) -> Callable:
    if activation == "relu":
        return Fa.relu
    if activation == "gelu":
        return gelu
    if isinstance(activation, str) or not callable(activation):
        raise ValueError(f"{fn}: activation={activation!r} must be 'relu', 'gelu' or a "
                         "callable")
    return activation


class _Block(Module):
    """What both layers share: the feed-forward part and the arguments' checks."""

    def _setup(self, fn: str, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
               activation: Any, layer_norm_eps: float, batch_first: bool, norm_first: bool,
               bias: bool, device: Any, dtype: Any, rng: Any, norms: int) -> None:
        check_device(fn, device)
        d = _positive_int("d_model", d_model, fn)
        ff = _positive_int("dim_feedforward", dim_feedforward, fn)
        self.self_attn = MultiheadAttention(d, nhead, dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype, rng=rng)
        if norms == 3:
            self.multihead_attn = MultiheadAttention(d, nhead, dropout, bias=bias,
                                                     batch_first=batch_first, dtype=dtype,
                                                     rng=rng)
        self.linear1 = Linear(d, ff, bias=bias, dtype=dtype, rng=rng)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(ff, d, bias=bias, dtype=dtype, rng=rng)
        self.norm_first = _flag(fn, "norm_first", norm_first)
        for i in range(1, norms + 1):
            setattr(self, f"norm{i}", LayerNorm(d, eps=layer_norm_eps, bias=bias, dtype=dtype))
        for i in range(1, norms + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(fn, activation)
        self.batch_first = self.self_attn.batch_first

    def _ff_block(self, x: Tensor, drop: Dropout) -> Tensor:
        return drop(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    @staticmethod
    def _attend(attn: MultiheadAttention, x: Tensor, mem: Tensor, mask: Any, pad: Any,
                causal: bool, drop: Dropout) -> Tensor:
        return drop(attn(x, mem, mem, attn_mask=mask, key_padding_mask=pad,
                         need_weights=False, is_causal=bool(causal))[0])


class TransformerEncoderLayer(_Block):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm
    (after it, or before it with ``norm_first``); ``forward(src, src_mask=None,
    src_key_padding_mask=None, is_causal=False)``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = Fa.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        self._setup("TransformerEncoderLayer", d_model, nhead, dim_feedforward, dropout,
                    activation, layer_norm_eps, batch_first, norm_first, bias, device, dtype,
                    rng, 2)

    def forward(self, src: Any, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            h = self.norm1(x)
            x = x + self._attend(self.self_attn, h, h, src_mask, src_key_padding_mask,
                                 is_causal, self.dropout1)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._attend(self.self_attn, x, x, src_mask,
                                        src_key_padding_mask, is_causal, self.dropout1))
        return self.norm2(x + self._ff_block(x, self.dropout2))


class TransformerDecoderLayer(_Block):
    """Self-attention, attention over the encoder's ``memory``, then a feed-forward block,
    each with a residual and a LayerNorm (after it, or before it with ``norm_first``);
    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = Fa.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        self._setup("TransformerDecoderLayer", d_model, nhead, dim_feedforward, dropout,
                    activation, layer_norm_eps, batch_first, norm_first, bias, device, dtype,
                    rng, 3)

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            h = self.norm1(x)
            x = x + self._attend(self.self_attn, h, h, tgt_mask, tgt_key_padding_mask,
                                 tgt_is_causal, self.dropout1)
            x = x + self._attend(self.multihead_attn, self.norm2(x), memory, memory_mask,
                                 memory_key_padding_mask, memory_is_causal, self.dropout2)
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self._attend(self.self_attn, x, x, tgt_mask, tgt_key_padding_mask,
                                        tgt_is_causal, self.dropout1))
        x = self.norm2(x + self._attend(self.multihead_attn, x, memory, memory_mask,
                                        memory_key_padding_mask, memory_is_causal,
                                        self.dropout2))
        return self.norm3(x + self._ff_block(x, self.dropout3))


def _clones(fn: str, layer: Any, kind: type, num_layers: int) -> ModuleList:
    if not isinstance(layer, Module):
        raise TypeError(f"{fn}: the layer must be a Module (a {kind.__name__}), got "
                        f"{type(layer).__name__}")
    n = _positive_int("num_layers", num_layers, fn)
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` in turn, then ``norm`` (if given);
    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``."""

    def __init__(self, encoder_layer: Any, num_layers: int, norm: Any = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones("TransformerEncoder", encoder_layer, TransformerEncoderLayer,
                              num_layers)
        self.num_layers = len(self.layers)
        self.norm = norm

    def forward(self, src: Any, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool | None = None) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` in turn, then ``norm`` (if given);
    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``."""

    def __init__(self, decoder_layer: Any, num_layers: int, norm: Any = None) -> None:
        super().__init__()
        self.layers = _clones("TransformerDecoder", decoder_layer, TransformerDecoderLayer,
                              num_layers)
        self.num_layers = len(self.layers)
        self.norm = norm

    def forward(self, tgt: Any, memory: Any, tgt_mask: Any = None, memory_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """torch's ``nn.Transformer``: an encoder and a decoder stack, each ending in a
    LayerNorm; every parameter of 2 or more dims Glorot-uniform.  ``forward(src, tgt,
    src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None,
    tgt_is_causal=None, memory_is_causal=False)``."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = Fa.relu,
                 custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        fn = "Transformer"
        check_device(fn, device)
        kw = {"dim_feedforward": dim_feedforward, "dropout": dropout,
              "activation": activation, "layer_norm_eps": layer_norm_eps,
              "batch_first": batch_first, "norm_first": norm_first, "bias": bias,
              "dtype": dtype, "rng": rng}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, **kw)
            self.encoder = TransformerEncoder(
                layer, num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, **kw)
            self.decoder = TransformerDecoder(
                layer, num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        rng = init._generator(rng, fn)
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p, rng=rng)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Any, tgt: Any, src_mask: Any = None, tgt_mask: Any = None,
                memory_mask: Any = None, src_key_padding_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        fn = "Transformer"
        batched = np.ndim(getattr(src, "data", src)) == 3
        b = 0 if self.batch_first else 1
        if batched and src.shape[b] != tgt.shape[b]:
            raise ValueError(f"{fn}: src {tuple(src.shape)} and tgt {tuple(tgt.shape)} must "
                             "have the same batch size")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"{fn}: src {tuple(src.shape)} and tgt {tuple(tgt.shape)} must "
                             f"end with d_model={self.d_model} features")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None
                                        ) -> Tensor:
        """The (sz, sz) float mask that hides each position's successors: -inf above the
        diagonal, 0 elsewhere."""
        fn = "generate_square_subsequent_mask"
        dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
        n = _positive_int("sz", sz, fn)
        return Tensor(np.triu(np.full((n, n), -np.inf, dt), 1))
