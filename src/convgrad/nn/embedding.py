"""``Embedding``: a table of vectors looked up by integer indices; ``CosineSimilarity`` and
``PairwiseDistance`` (arguments, initialisation and ``repr`` as ``torch.nn``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional import distance as Fd
from ..functional.embedding import embedding, padding_row
from ..functional.embedding_bag import MODES, embedding_bag
from ..tensor import Tensor, as_tensor
from ..tensor.args import check_dtype
from ..tensor.args import number as _real
from . import init
from .conv import _positive_int
from .module import Module, Parameter

__all__ = ["CosineSimilarity", "Embedding", "EmbeddingBag", "PairwiseDistance"]


def _table(module: Module, fn: str, weight: Any, dtype: Any, rng: Any, trainable: bool
           ) -> None:
    """An Embedding's or EmbeddingBag's (num_embeddings, embedding_dim) ``weight``: a copy
    of ``weight`` (its shape checked), else drawn by ``reset_parameters``."""
    shape = (module.num_embeddings, module.embedding_dim)
    dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
    if weight is None:
        module.weight = Parameter(np.empty(shape, dt))
        module.reset_parameters(rng)
        return
    w = np.array(weight.data if isinstance(weight, Tensor) else weight,
                 dtype=dt if dtype is not None else None, copy=True)
    if w.shape != shape:
        raise ValueError(f"{fn}: _weight of shape {w.shape} must be {shape}")
    module.weight = Parameter(w, requires_grad=trainable)


def _reset_table(module: Module, rng: Any, fn: str) -> None:
    init.normal_(module.weight, rng=init._generator(rng, fn))
    if module.padding_idx is not None:
        module.weight.data[module.padding_idx] = 0


class Embedding(Module):
    """``weight[input]`` for a (num_embeddings, embedding_dim) ``weight`` drawn from
    N(0, 1), the ``padding_idx`` row zero (and given no gradient); see
    :func:`convgrad.functional.embedding`."""

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: int | None = None, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Any = None, _freeze: bool = False,
                 device: Any = None, dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        fn = "Embedding"
        check_device(fn, device)
        self.num_embeddings = _positive_int("num_embeddings", num_embeddings, fn)
        self.embedding_dim = _positive_int("embedding_dim", embedding_dim, fn)
        self.padding_idx = padding_row(fn, padding_idx, num_embeddings)
        self.max_norm = None if max_norm is None else _real(fn, "max_norm", max_norm)
        self.norm_type = _real(fn, "norm_type", norm_type)
        for name, flag in (("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse)):
            if flag:
                raise ValueError(f"{fn}: {name}=True is not supported; expected False")
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        _table(self, fn, _weight, dtype, rng, not _freeze)

    def reset_parameters(self, rng: Any = None) -> None:
        """N(0, 1) weights, the padding row zeroed, as torch."""
        _reset_table(self, rng, "Embedding")

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding holding a copy of the 2-d ``embeddings`` (frozen by default)."""
        w = as_tensor(embeddings).data
        if w.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings of shape {w.shape} must "
                             "be 2-d")
        return cls(w.shape[0], w.shape[1], padding_idx, max_norm, norm_type,
                   scale_grad_by_freq, sparse, _weight=w, _freeze=freeze, dtype=w.dtype)

    def forward(self, input: Any) -> Tensor:
        return embedding(input, self.weight, self.padding_idx, self.max_norm,
                         self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        return s


class EmbeddingBag(Module):
    """Each bag's sum, mean or max of the rows of a (num_embeddings, embedding_dim)
    ``weight`` drawn from N(0, 1) (the ``padding_idx`` row zero); see
    :func:`convgrad.functional.embedding_bag`.  ``forward(input, offsets=None,
    per_sample_weights=None)``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Any = None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device: Any = None, dtype: Any = None, *,
                 rng: Any = None) -> None:
        super().__init__()
        fn = "EmbeddingBag"
        check_device(fn, device)
        self.num_embeddings = _positive_int("num_embeddings", num_embeddings, fn)
        self.embedding_dim = _positive_int("embedding_dim", embedding_dim, fn)
        self.max_norm = None if max_norm is None else _real(fn, "max_norm", max_norm)
        self.norm_type = _real(fn, "norm_type", norm_type)
        if mode not in MODES:
            raise ValueError(f"{fn}: mode={mode!r} must be one of {MODES}")
        for name, flag in (("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse)):
            if flag:
                raise ValueError(f"{fn}: {name}=True is not supported; expected False")
        self.mode, self.scale_grad_by_freq, self.sparse = mode, False, False
        self.include_last_offset = bool(include_last_offset)
        self.padding_idx = padding_row(fn, padding_idx, num_embeddings)
        _table(self, fn, _weight, dtype, rng, True)

    def reset_parameters(self, rng: Any = None) -> None:
        """N(0, 1) weights, the padding row zeroed, as torch."""
        _reset_table(self, rng, "EmbeddingBag")

    def forward(self, input: Any, offsets: Any = None,  # noqa: A002 (torch's name)
                per_sample_weights: Any = None) -> Tensor:
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                             False, self.mode, False, per_sample_weights,
                             self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class CosineSimilarity(Module):
    """:func:`convgrad.functional.cosine_similarity` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Any, x2: Any) -> Tensor:
        return Fd.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """:func:`convgrad.functional.pairwise_distance` along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Any, x2: Any) -> Tensor:
        return Fd.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
