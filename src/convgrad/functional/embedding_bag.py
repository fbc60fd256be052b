"""``embedding_bag``: the rows of a weight table picked by integer indices, reduced per
bag (sum, mean or max) without materialising the per-index rows of every bag side by
side: sums and means add each picked row into its bag (the indexing's adjoint, a scatter
of rows; its gradient gathers them back); max lays the bags out padded to the longest
(B, L, D) and takes the maximum over L.  torch's arguments, shapes and conventions:
empty bags give zeros, ``padding_idx`` entries are left out (and out of a mean's count),
``per_sample_weights`` scale the rows of a sum."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor, where
from ..tensor.args import number as _real
from ..tensor.shape import IndexAdd
from .embedding import _indices, _renorm, padding_row

__all__ = ["embedding_bag"]

MODES = ("sum", "mean", "max")


def _bags(fn: str, idx: np.ndarray, offsets: Any, include_last_offset: bool
          ) -> tuple[np.ndarray, np.ndarray, int]:
    """(flat indices, each one's bag, the number of bags) from a 2-d input (a bag per
    row) or a 1-d input cut at ``offsets``."""
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{fn}: offsets must be None for a 2-d input (each row is a "
                             "bag)")
        b, n = idx.shape
        return idx.reshape(-1), np.repeat(np.arange(b), n), b
    if idx.ndim != 1:
        raise ValueError(f"{fn}: input of shape {idx.shape} must be 1-d (with offsets) or "
                         "2-d (a bag per row)")
    if offsets is None:
        raise ValueError(f"{fn}: a 1-d input needs offsets (each bag's first position)")
    off = offsets.data if isinstance(offsets, Tensor) else np.asarray(offsets)
    if off.ndim != 1 or off.dtype.kind not in "iuf" or (
            off.dtype.kind == "f" and (off != np.round(off)).any()):
        raise ValueError(f"{fn}: offsets must be a 1-d array of integer positions, got "
                         f"shape {off.shape} and dtype {off.dtype}")
    off = off.astype(np.int64)
    n = idx.size
    if off.size == 0 or off[0] != 0 or (np.diff(off) < 0).any() or off[-1] > n:
        raise ValueError(f"{fn}: offsets={off.tolist()[:8]} must start at 0 and not "
                         f"decrease nor exceed the input's length {n}")
    ends = np.append(off[1:], n)
    if include_last_offset:
        off, ends = off[:-1], off[1:]
    counts = ends - off
    return idx, np.repeat(np.arange(off.size), counts), off.size


def embedding_bag(input: Any, weight: Any, offsets: Any = None,  # noqa: A002 (torch's name)
                  max_norm: float | None = None, norm_type: float = 2.0,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Any = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Each bag's ``mode`` ("sum", "mean" or "max") of ``weight``'s rows picked by its
    indices: (B, embedding_dim).  ``input`` 2-d (a bag per row) or 1-d with ``offsets``
    (each bag's first position; with ``include_last_offset`` the last entry is the end)."""
    fn = "embedding_bag"
    w = as_tensor(weight)
    if w.ndim != 2:
        raise ValueError(f"{fn}: weight of shape {w.shape} must be 2-d (num_embeddings, "
                         "embedding_dim)")
    if mode not in MODES:
        raise ValueError(f"{fn}: mode={mode!r} must be one of {MODES}")
    if scale_grad_by_freq or sparse:
        raise ValueError(f"{fn}: scale_grad_by_freq=True and sparse=True are not supported")
    rows, dim = w.shape
    idx = _indices(fn, input, rows)
    flat, bag, count = _bags(fn, idx, offsets, include_last_offset)
    pad = padding_row(fn, padding_idx, rows)
    if max_norm is not None:
        _renorm(w, flat, _real(fn, "max_norm", max_norm), _real(fn, "norm_type", norm_type))
    psw = None
    if per_sample_weights is not None:
        if mode != "sum":
            raise ValueError(f"{fn}: per_sample_weights are only supported with mode='sum', "
                             f"got mode={mode!r}")
        psw = as_tensor(per_sample_weights)
        if tuple(psw.shape) != idx.shape:
            raise ValueError(f"{fn}: per_sample_weights of shape {tuple(psw.shape)} must "
                             f"match the input's {idx.shape}")
        psw = psw.reshape(-1)
    kept = np.nonzero(flat != pad)[0] if pad is not None else np.arange(flat.size)
    picked = w[flat[kept]]  # (K, D), K the entries outside padding_idx
    bag = bag[kept]
    sizes = np.bincount(bag, minlength=count)
    if mode == "max":
        if not kept.size:
            return Tensor(np.zeros((count, dim), w.dtype))
        # each entry's position in its bag: the bags laid out padded to the longest
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        pos = np.arange(kept.size) - start[bag]
        longest = int(sizes.max())
        laid = IndexAdd.apply(picked, index=(bag, pos), shape=(count, longest, dim))
        empty = np.ones((count, longest, 1), bool)
        empty[bag, pos] = False
        laid = where(Tensor(empty), Tensor(np.full((), -np.inf, w.dtype)), laid)
        out = laid.max(1)[0]
        return where(Tensor((sizes > 0)[:, None]), out, Tensor(np.zeros((), w.dtype)))
    if psw is not None:
        picked = picked * psw[Tensor(kept)].reshape(-1, 1)
    out = IndexAdd.apply(picked, index=(bag,), shape=(count, dim))
    if mode == "mean":
        out = out / Tensor(np.maximum(sizes, 1).astype(w.dtype)[:, None])
    return out
