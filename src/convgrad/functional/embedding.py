"""``embedding``: rows of a weight table picked by integer indices (a gather, whose gradient
scatters back into the picked rows), with torch's ``padding_idx`` and ``max_norm``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import no_grad
from ..tensor import Tensor, as_tensor, where
from ..tensor.args import number as _real
from ..tensor.version import bump

__all__ = ["embedding"]


def _indices(fn: str, input: Any, rows: int) -> np.ndarray:
    """``input`` as an int64 array of row indices in ``[0, rows)``: integers, or floats
    holding whole numbers (``cg.tensor`` of an integer list or array is float32 unless
    ``dtype=`` says otherwise; the class-index losses take those too)."""
    idx = input.data if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind == "f":
        if not np.isfinite(idx).all() or (idx != np.round(idx)).any():
            raise TypeError(f"{fn}: input of dtype {idx.dtype} holds values that are not "
                            "whole numbers; expected integer indices (torch.long)")
    elif idx.dtype.kind not in "iu":
        raise TypeError(f"{fn}: input of dtype {idx.dtype} must hold integer indices "
                        "(torch.long)")
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= rows):
        bad = idx.min() if idx.min() < 0 else idx.max()
        raise IndexError(f"{fn}: index {bad} is out of range for a table of {rows} rows")
    return idx


def padding_row(fn: str, padding_idx: Any, rows: int) -> int | None:
    """``padding_idx`` as a row in ``[0, rows)`` (a negative one counts from the end)."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int | np.integer):
        raise TypeError(f"{fn}: padding_idx={padding_idx!r} must be an int or None")
    if not -rows <= padding_idx < rows:
        raise ValueError(f"{fn}: padding_idx={padding_idx} must be in [{-rows}, {rows - 1}] "
                         f"for a table of {rows} rows")
    return int(padding_idx) % rows


def embedding(input: Any, weight: Any, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[input]``: the row of the (num_embeddings, dim) table for each index.

    ``padding_idx``: entries of that row get no gradient.  ``max_norm``: the rows picked
    are first rescaled in place (without gradient) to a ``norm_type`` norm of at most
    ``max_norm``, as torch does.  ``scale_grad_by_freq`` and ``sparse`` gradients are not
    supported (a ValueError says so)."""
    fn = "embedding"
    w = as_tensor(weight)
    if w.ndim != 2:
        raise ValueError(f"{fn}: weight of shape {w.shape} must be 2-d (num_embeddings, "
                         "embedding_dim)")
    if scale_grad_by_freq:
        raise ValueError(f"{fn}: scale_grad_by_freq=True is not supported; expected False")
    if sparse:
        raise ValueError(f"{fn}: sparse=True (sparse gradients) is not supported; expected "
                         "False (a dense gradient)")
    rows = w.shape[0]
    idx = _indices(fn, input, rows)
    pad = padding_row(fn, padding_idx, rows)
    if max_norm is not None:
        _renorm(w, idx, _real(fn, "max_norm", max_norm), _real(fn, "norm_type", norm_type))
    out = w[idx]
    if pad is not None and (idx == pad).any():  # the padding row's entries: no gradient
        out = where((idx == pad)[..., None], w.detach()[idx], out)
    return out


def _renorm(w: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: each row picked whose norm exceeds ``max_norm``
    scaled by ``max_norm / (norm + 1e-7)``, in place (counted as an in-place change, so a
    graph that read the old rows refuses to differentiate them, as torch's)."""
    rows = np.unique(idx)
    with no_grad():
        table = w.data
        picked = table[rows].astype(np.float64)
        norms = np.linalg.norm(picked, ord=norm_type, axis=1)
        over = norms > max_norm
        if over.any():
            scale = (max_norm / (norms[over] + 1e-7)).astype(table.dtype)
            table[rows[over]] = table[rows[over]] * scale[:, None]
            bump(table)
