"""``F.affine_grid`` and ``F.grid_sample`` (2-D), with torch's arguments and conventions.

``grid_sample`` reads ``input`` at the grid's points: each output value is a weighted
sum of input values picked by integer indices (``bilinear``: the four neighbours with
weights linear in the point; ``nearest``: one).  Picking is indexing (its gradient
scatters back to the input) and the weights are Tensor arithmetic on the grid (their
gradient is the grid's), so both inputs are differentiable.  ``affine_grid`` is a matrix
product of the base grid with ``theta``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor, where
from .layer_input import layer_input

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest")
_PADDING = ("zeros", "border", "reflection")


def _base(n: int, align_corners: bool) -> np.ndarray:
    """The normalised coordinates of ``n`` pixel centres (-1 .. 1)."""
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return (np.arange(n) * 2.0 + 1.0) / n - 1.0


def affine_grid(theta: Any, size: Any, align_corners: bool = False) -> Tensor:
    """The (N, H, W, 2) sampling grid of the affine maps ``theta`` (N, 2, 3) for an output
    of ``size`` (N, C, H, W): each pixel's (x, y, 1) times ``theta`` transposed."""
    fn = "affine_grid"
    t = as_tensor(theta)
    size = tuple(size)
    if len(size) != 4:
        raise ValueError(f"{fn}: size={size} must be (N, C, H, W) (2-D grids only)")
    if t.ndim != 3 or t.shape != (size[0], 2, 3) or t.dtype.kind != "f":
        raise ValueError(f"{fn}: theta of shape {t.shape} and dtype {t.dtype} must be a float "
                         f"(N, 2, 3) tensor with N = size[0] = {size[0]}")
    h, w = size[2], size[3]
    ys, xs = np.meshgrid(_base(h, align_corners), _base(w, align_corners), indexing="ij")
    base = np.stack([xs, ys, np.ones_like(xs)], -1).reshape(1, h * w, 3).astype(t.dtype)
    return (Tensor(base) @ t.transpose(1, 2)).reshape(size[0], h, w, 2)


def _unnormalise(c: Tensor, n: int, align_corners: bool) -> Tensor:
    return (c + 1.0) * ((n - 1) / 2.0) if align_corners else ((c + 1.0) * n - 1.0) / 2.0


def _reflect(c: Tensor, n: int, align_corners: bool) -> Tensor:
    """Reflect coordinates into the image, as torch (about the edge centres with
    align_corners, else about the borders), then clip."""
    lo, hi = (0.0, float(n - 1)) if align_corners else (-0.5, n - 0.5)
    span = hi - lo
    if span <= 0:
        return c * 0.0
    # distance from lo folded into [0, 2 span): a triangle wave, differentiable piecewise
    m = (c - lo).abs()
    k = np.floor(m.data / span)
    r = m - Tensor(k * span, dtype=c.dtype)
    out = where(k % 2 == 0, r + lo, hi - r)
    return out.clamp(0.0, float(n - 1))


def grid_sample(input: Any, grid: Any, mode: str = "bilinear",  # noqa: A002
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) at ``grid`` (N, Ho, Wo, 2) of (x, y) in [-1, 1]:
    output (N, C, Ho, Wo)."""
    fn = "grid_sample"
    if mode not in _MODES:
        raise ValueError(f"{fn}: mode={mode!r} must be one of {_MODES}")
    if padding_mode not in _PADDING:
        raise ValueError(f"{fn}: padding_mode={padding_mode!r} must be one of {_PADDING}")
    align = bool(align_corners)
    g = layer_input(fn, grid, None, "grid")
    x = layer_input(fn, input, g)
    if x.ndim != 4 or g.ndim != 4 or g.shape[3] != 2 or g.shape[0] != x.shape[0]:
        raise ValueError(f"{fn}: input of shape {x.shape} and grid of shape {g.shape} must be "
                         "(N, C, H, W) and (N, Ho, Wo, 2)")
    n, c, h, w = x.shape
    ix = _unnormalise(g[..., 0], w, align)
    iy = _unnormalise(g[..., 1], h, align)
    if padding_mode == "border":
        ix, iy = ix.clamp(0.0, float(w - 1)), iy.clamp(0.0, float(h - 1))
    elif padding_mode == "reflection":
        ix, iy = _reflect(ix, w, align), _reflect(iy, h, align)
    batch = np.arange(n)[:, None, None]

    def pick(yi: np.ndarray, xi: np.ndarray) -> tuple[Tensor, np.ndarray]:
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        v = x[batch, :, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]  # (N, Ho, Wo, C)
        return v, inside[..., None].astype(x.dtype)

    if mode == "nearest":
        v, inside = pick(np.rint(iy.data).astype(np.int64), np.rint(ix.data).astype(np.int64))
        out = v * inside
    else:
        x0 = np.floor(ix.data).astype(np.int64)
        y0 = np.floor(iy.data).astype(np.int64)
        wx1 = (ix - Tensor(x0.astype(x.dtype))).unsqueeze(-1)
        wy1 = (iy - Tensor(y0.astype(x.dtype))).unsqueeze(-1)
        wx0, wy0 = 1.0 - wx1, 1.0 - wy1
        out = None
        for yi, wy in ((y0, wy0), (y0 + 1, wy1)):
            for xi, wx in ((x0, wx0), (x0 + 1, wx1)):
                v, inside = pick(yi, xi)
                term = v * (wy * wx * inside)
                out = term if out is None else out + term
    return out.permute(0, 3, 1, 2)
