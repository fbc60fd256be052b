"""SSIM's per-pixel formula and its gradient, as one node.

SSIM (Wang et al. 2004) filters five images with one window, the moments
``mu_x, mu_y, E[x^2], E[y^2], E[xy]``, and combines them per pixel into two maps,
contrast-structure ``cs = (2 s_xy + c2) / (s_x + s_y + c2)`` and
``ssim = (2 mu_x mu_y + c1) / (mu_x^2 + mu_y^2 + c1) * cs``, averaged over each image.
Written as Tensor operations that combination is some twenty nodes forward and more
backward, each a NumPy pass plus the engine's bookkeeping: in the demo's MS-SSIM loss
(five scales of (8, 1, 96, 96) at most) that bookkeeping was most of the loss's time.
:class:`SSIMTerms` runs it as one node: the five moments arrive stacked along the batch
(filtered by one convolution, not five), the forward is one pass of array arithmetic and
its backward another, by the derivative written out below; on float32 arrays each pass is
one compiled loop of the ``similarity`` kernel family (:mod:`convgrad.ops.similarity`).

:func:`ssim_maps` and :func:`ssim_maps_grad` take Tensors or ndarrays alike (only
``+ - * /`` with each other and with Python numbers), so the math is written once: on
ndarrays in the fast backward, on Tensors where the backward is itself recorded
(``create_graph``) or where the arrays are lazy (dask), so every order differentiates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function, is_grad_enabled
from ..ops import similarity
from ..ops.reduction import total
from .shape import Concatenate, GetItem

Tensor = Any  # annotations: these rules see the tensor layer's Tensor

#: the moments stacked along the batch, in this order
MOMENTS = ("mu_x", "mu_y", "e_xx", "e_yy", "e_xy")


def ssim_maps(mu1: Any, mu2: Any, e11: Any, e22: Any, e12: Any, c1: float, c2: float
              ) -> tuple[Any, Any]:
    """(ssim map, cs map) from the five filtered moments (Tensors or ndarrays)."""
    mu1_sq, mu2_sq, mu1_mu2 = mu1 * mu1, mu2 * mu2, mu1 * mu2
    cs_map = (2 * (e12 - mu1_mu2) + c2) / ((e11 - mu1_sq) + (e22 - mu2_sq) + c2)
    ssim_map = ((2 * mu1_mu2 + c1) / (mu1_sq + mu2_sq + c1)) * cs_map
    return ssim_map, cs_map


def ssim_maps_grad(mu1: Any, mu2: Any, e11: Any, e22: Any, e12: Any, c1: float, c2: float,
                   a: Any, b: Any) -> tuple[Any, ...]:
    """The gradients of ``sum(a * ssim + b * cs)`` with respect to the five moments.

    With ``l = A / B`` (``A = 2 mu1 mu2 + c1``, ``B = mu1^2 + mu2^2 + c1``) and
    ``cs = C / D`` (``C = 2 (e12 - mu1 mu2) + c2``, ``D = e11 - mu1^2 + e22 - mu2^2 + c2``):
    ``d(a l cs + b cs) = p dl + q dcs`` with ``p = a cs``, ``q = a l + b``;
    ``dl = (dA - l dB) / B``, ``dcs = (dC - cs dD) / D``; so
    ``d/de11 = d/de22 = -q cs / D``, ``d/de12 = 2 q / D``,
    ``d/dmu1 = 2 (mu2 u + mu1 v)``, ``d/dmu2 = 2 (mu1 u + mu2 v)`` with
    ``u = p / B - q / D`` and ``v = q cs / D - p l / B``.
    """
    mu1_sq, mu2_sq, mu1_mu2 = mu1 * mu1, mu2 * mu2, mu1 * mu2
    B = mu1_sq + mu2_sq + c1
    D = (e11 - mu1_sq) + (e22 - mu2_sq) + c2
    l = (2 * mu1_mu2 + c1) / B
    cs = (2 * (e12 - mu1_mu2) + c2) / D
    p, q = a * cs, a * l + b
    p_b, q_d = p / B, q / D
    u = p_b - q_d
    v = q_d * cs - p_b * l
    g_var = -(q_d * cs)
    return 2 * (mu2 * u + mu1 * v), 2 * (mu1 * u + mu2 * v), g_var, g_var, 2 * q_d


def _parts(f: Any) -> list[Any]:
    """The five moments: equal slices of the stack along the batch (views)."""
    n = f.shape[0] // len(MOMENTS)
    return [f[i * n:(i + 1) * n] for i in range(len(MOMENTS))]


class SSIMTerms(Function):
    """``f`` (5N, C, H, W): the moments stacked along the batch (:data:`MOMENTS`) ->
    (2, N, C): the mean of the SSIM map and of the cs map of each image."""

    reads = (0,)

    @staticmethod
    def forward(ctx: Context, f: np.ndarray, c1: float, c2: float) -> np.ndarray:
        ctx.c1, ctx.c2 = c1, c2

        def reference() -> np.ndarray:
            maps = ssim_maps(*_parts(f), c1, c2)
            n, c = maps[0].shape[:2]
            count = int(np.prod(maps[0].shape[2:]))
            # the mean of each image, as Tensor.mean sums it (accurately, ops.reduction)
            return np.stack([total(m.reshape(n, c, -1), axis=-1) / count for m in maps])

        return similarity.ssim_terms(f, c1, c2, reference)

    @staticmethod
    def backward(ctx: Context, grad: Tensor) -> Tensor:
        f = ctx.inputs[0]
        count = int(np.prod(f.shape[2:]))
        # the mean of an image spreads its gradient evenly over its pixels
        if is_grad_enabled() or not isinstance(f.data, np.ndarray):
            keep = (*grad.shape[1:], *(1,) * (f.ndim - 2))
            a, b = (GetItem.apply(grad, index=(i,)).reshape(keep) / count for i in (0, 1))
            grads = ssim_maps_grad(*_parts(f), ctx.c1, ctx.c2, a, b)
            return Concatenate.apply(*grads, dim=0)

        def reference() -> np.ndarray:
            g = grad.data.reshape(*grad.shape, *(1,) * (f.ndim - 2)) / count
            grads = ssim_maps_grad(*_parts(f.data), ctx.c1, ctx.c2, g[0], g[1])
            return np.concatenate(grads, axis=0)

        return type(grad)._wrap(similarity.ssim_terms_grad(f.data, ctx.c1, ctx.c2, grad.data,
                                                           reference))
