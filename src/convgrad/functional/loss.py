"""Loss functions (``F.mse_loss``, ``F.l1_loss``, ``F.cross_entropy``), composed of
differentiable ops, so their gradients (of any order) need no rules of their own."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor
from .activation import log_softmax

__all__ = ["cross_entropy", "l1_loss", "mse_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _pair(who: str, input: Any, target: Any, reduction: str) -> tuple[Tensor, Tensor]:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{who}: reduction={reduction!r} must be one of {_REDUCTIONS}")
    input, target = as_tensor(input), as_tensor(target)
    if input.shape != target.shape:
        try:
            np.broadcast_shapes(input.shape, target.shape)
        except ValueError:
            raise ValueError(f"{who}: input shape {input.shape} and target shape "
                             f"{target.shape} do not broadcast") from None
        warnings.warn(f"{who}: input shape {input.shape} differs from target shape "
                      f"{target.shape}; they are broadcast, which is likely a mistake",
                      stacklevel=3)
    return input, target


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:
    """(input - target)^2, averaged (``"mean"``), summed or elementwise (``"none"``)."""
    input, target = _pair("mse_loss", input, target, reduction)
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:
    """|input - target|, averaged (``"mean"``), summed or elementwise (``"none"``)."""
    input, target = _pair("l1_loss", input, target, reduction)
    return _reduce((input - target).abs(), reduction)


def _class_indices(target: Any, classes: int, shape: tuple) -> np.ndarray:
    t = target.data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind == "f" and np.array_equal(t, np.round(t)):
        t = t.astype(np.intp)
    if t.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy: target of dtype {t.dtype} must hold integer class "
                        "indices (or class probabilities shaped like the input)")
    if t.shape != shape:
        raise ValueError(f"cross_entropy: target shape {t.shape} must be {shape} "
                         "(the input's shape without the class dim)")
    return t.astype(np.intp, copy=False)


def cross_entropy(input: Any, target: Any, reduction: str = "mean", *,
                  ignore_index: int = -100) -> Tensor:
    """-log_softmax(input)[target] over the class dim (dim 1; dim 0 for unbatched input).

    ``input``: logits ``(N, C, *spatial)`` or ``(C,)``.  ``target``: integer class indices
    ``(N, *spatial)`` (or ``()``), where ``ignore_index`` entries are left out of the loss
    and of the mean; or class probabilities with the input's shape.
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction={reduction!r} must be one of {_REDUCTIONS}")
    input = as_tensor(input)
    if input.ndim == 0:
        raise ValueError("cross_entropy: input must have a class dim, got a 0-d tensor")
    dim = 1 if input.ndim > 1 else 0
    logp = log_softmax(input, dim)
    if isinstance(target, Tensor | np.ndarray) and target.shape == input.shape and (
            np.asarray(target.data if isinstance(target, Tensor) else target).dtype.kind == "f"):
        return _reduce(-(logp * target).sum(dim), reduction)  # probabilities

    classes = input.shape[dim]
    t = _class_indices(target, classes, input.shape[:dim] + input.shape[dim + 1:])
    keep = t != ignore_index
    if ((t < 0) | (t >= classes))[keep].any():
        raise ValueError(f"cross_entropy: target values must lie in [0, {classes}) "
                         f"(or equal ignore_index={ignore_index}), got {np.unique(t[keep])}")
    t = np.where(keep, t, 0)
    grid = np.indices(t.shape, sparse=True)
    picked = logp[(*grid[:1], t, *grid[1:])]  # log p(target class) at every position
    loss = -picked if keep.all() else -picked * keep.astype(logp.dtype)
    if reduction == "mean":
        return loss.sum() / int(keep.sum())
    return _reduce(loss, reduction)
