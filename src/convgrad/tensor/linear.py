"""``y = x W^T + b``, torch's ``F.linear``, as one node (three Tensor operations and
their three nodes before: a recurrent cell's step or a small Linear spent more time
recording them than multiplying).  x ``(*, in)``, W ``(out, in)``, b ``(out,)`` or None.

Derivation: y = x W^T + b, so dx = g W, dW = g^T x and db = sum g over the leading
dims (with x and g flattened to (rows, in) and (rows, out)).  Outside ``create_graph``
the rule runs on arrays (no nodes recorded); inside it, as Tensor operations, so it is
differentiable in turn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import Context, Function, is_grad_enabled
from ..autograd.deferred import Deferred
from ..ops import matmul, reduction
from . import deferral

__all__ = ["Linear"]


def _rows(a: Any) -> Any:
    """``a`` (*, k) as a (rows, k) matrix (a 1-d ``a`` is one row)."""
    return a.reshape(-1, a.shape[-1])


class Linear(Function):
    """``x W^T + b``: inputs x, W, b (b may be None)."""

    reads = {0: (1,), 1: (0,), 2: ()}

    @staticmethod
    def forward(ctx: Context, x: np.ndarray, w: np.ndarray, b: Any) -> np.ndarray:
        y = matmul.matmul(_rows(x), w.T)
        if b is not None:
            y = np.add(y, b, out=y) if type(y) is np.ndarray else y + b
        return y.reshape(*x.shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx: Context, g: Any) -> tuple:
        x, w, b = ctx.inputs
        need = ctx.needs_input_grad
        if is_grad_enabled():  # create_graph: the same rule, recorded
            g2 = _rows(g)
            return ((g @ w) if need[0] else None,
                    (g2.T @ _rows(x)) if need[1] else None,
                    g2.sum(0) if need[2] else None)
        tensor = type(g)
        gd, xd, wd = g.data, x.data, w.data
        g2 = _rows(gd)
        gx = matmul.matmul(g2, wd).reshape(xd.shape) if need[0] else None
        gb = reduction.sum_over(g2, 0) if need[2] else None
        gx, gb = (None if v is None else tensor._wrap(v) for v in (gx, gb))
        if not need[1]:
            return gx, None, gb
        if deferral.allowed(ctx, 1, x, gd):  # run when W's .grad is read
            gc, xc = tensor._wrap(g2), tensor._wrap(xd)
            return gx, Deferred(lambda: tensor._wrap(matmul.matmul(gc.data.T, _rows(xc.data))),
                                (xc, gc)), gb
        return gx, tensor._wrap(matmul.matmul(g2.T, _rows(xd))), gb
