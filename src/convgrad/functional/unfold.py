"""``F.unfold`` (im2col: every sliding block of a batched image as a column) and its
adjoint ``F.fold`` (col2im: columns summed back into an image), with torch's arguments.

Both are indexing: ``unfold`` reads the zero-padded input at the blocks' positions (a
``GetItem``, whose gradient scatters back), ``fold`` adds the columns at the same
positions (an ``IndexAdd``, whose gradient reads them again), so each is the other's
gradient and both are differentiable to any order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor
from ..tensor.shape import GetItem, IndexAdd
from .padding import pad as _pad

__all__ = ["fold", "unfold"]


def _pair(fn: str, name: str, v: Any, low: int) -> tuple[int, int]:
    vals = (v, v) if isinstance(v, int | np.integer) and not isinstance(v, bool) else tuple(v)
    if len(vals) != 2 or any(isinstance(x, bool) or not isinstance(x, int | np.integer)
                             or x < low for x in vals):
        raise ValueError(f"{fn}: {name}={v!r} must be an int or a pair of ints >= {low}")
    return int(vals[0]), int(vals[1])


def _blocks(fn: str, size: tuple, k: tuple, d: tuple, p: tuple, s: tuple) -> tuple:
    """The index of every block element in the padded image: rows (kh, 1, oh, 1) and
    columns (1, kw, 1, ow); and (oh, ow)."""
    out = tuple((n + 2 * pi - di * (ki - 1) - 1) // si + 1
                for n, ki, di, pi, si in zip(size, k, d, p, s))
    if any(o < 1 for o in out):
        raise ValueError(f"{fn}: the blocks of kernel_size={k}, dilation={d} do not fit the "
                         f"padded size {tuple(n + 2 * pi for n, pi in zip(size, p))}")
    rows = (np.arange(k[0]) * d[0])[:, None] + np.arange(out[0]) * s[0]
    cols = (np.arange(k[1]) * d[1])[:, None] + np.arange(out[1]) * s[1]
    return rows[:, None, :, None], cols[None, :, None, :], out


def unfold(input: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,  # noqa: A002
           stride: Any = 1) -> Tensor:
    """(N, C, H, W) -> (N, C * kh * kw, L): each block of the zero-padded input as a
    column, blocks in row-major order."""
    fn = "unfold"
    x = as_tensor(input)
    if x.ndim not in (3, 4):
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, H, W) or (C, H, W)")
    batched = x.ndim == 4
    x = x if batched else x.unsqueeze(0)
    k, d = _pair(fn, "kernel_size", kernel_size, 1), _pair(fn, "dilation", dilation, 1)
    p, s = _pair(fn, "padding", padding, 0), _pair(fn, "stride", stride, 1)
    rows, cols, out = _blocks(fn, x.shape[2:], k, d, p, s)
    xp = _pad(x, (p[1], p[1], p[0], p[0])) if any(p) else x
    n, c = x.shape[:2]
    y = GetItem.apply(xp, index=(slice(None), slice(None), rows, cols))  # (N, C, kh, kw, oh, ow)
    y = y.reshape(n, c * k[0] * k[1], out[0] * out[1])
    return y if batched else y.squeeze(0)


def fold(input: Any, output_size: Any, kernel_size: Any, dilation: Any = 1,  # noqa: A002
         padding: Any = 0, stride: Any = 1) -> Tensor:
    """(N, C * kh * kw, L) -> (N, C, H, W): the adjoint of :func:`unfold` (overlapping
    block elements add up)."""
    fn = "fold"
    x = as_tensor(input)
    if x.ndim not in (2, 3):
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C * kh * kw, L) or "
                         "(C * kh * kw, L)")
    batched = x.ndim == 3
    x = x if batched else x.unsqueeze(0)
    size = _pair(fn, "output_size", output_size, 1)
    k, d = _pair(fn, "kernel_size", kernel_size, 1), _pair(fn, "dilation", dilation, 1)
    p, s = _pair(fn, "padding", padding, 0), _pair(fn, "stride", stride, 1)
    rows, cols, out = _blocks(fn, size, k, d, p, s)
    n, ckk, blocks = x.shape
    if ckk % (k[0] * k[1]) or blocks != out[0] * out[1]:
        raise ValueError(f"{fn}: input of shape {x.shape} must have C * {k[0] * k[1]} rows "
                         f"and {out[0] * out[1]} blocks for output_size={size}")
    c = ckk // (k[0] * k[1])
    cols6 = x.reshape(n, c, k[0], k[1], out[0], out[1])
    padded = (n, c, size[0] + 2 * p[0], size[1] + 2 * p[1])
    y = IndexAdd.apply(cols6, index=(slice(None), slice(None), rows, cols), shape=padded)
    y = y[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
    return y if batched else y.squeeze(0)
