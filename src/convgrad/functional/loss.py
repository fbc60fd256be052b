"""Loss functions with ``torch.nn.functional``'s signatures and reductions.

Regression losses (``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``) reduced
to a mean or sum run as one kernel each way where it applies (float32 input and target of
one shape, :class:`~convgrad.tensor.loss.PointwiseLoss`); otherwise they, and the
class-index losses (``nll_loss``, ``cross_entropy``), are composed of differentiable ops,
so their gradients (of any order) need no rules of their own.  ``reduction`` is
``"mean"``, ``"sum"`` or ``"none"``; the deprecated ``size_average``/``reduce`` pair is
translated to it as torch does.  The binary losses live in :mod:`.binary_loss`.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..ops import losses as loss_kernels
from ..tensor import Tensor, as_tensor, where
from ..tensor.gather import Gather
from ..tensor.loss import PointwiseLoss
from ..tensor.operands import widened
from .activation import log_softmax

__all__ = ["cross_entropy", "huber_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss",
           "smooth_l1_loss"]

REDUCTIONS = ("none", "mean", "sum")


def reduction_arg(fn: str, size_average: Any, reduce: Any, reduction: Any) -> str:
    """The reduction, from ``reduction`` or from the legacy ``size_average``/``reduce``."""
    if size_average is not None or reduce is not None:
        mean = True if size_average is None else bool(size_average)
        keep = True if reduce is None else bool(reduce)
        reduction = ("mean" if mean else "sum") if keep else "none"
        warnings.warn(f"{fn}: size_average and reduce are deprecated; use "
                      f"reduction={reduction!r} instead", DeprecationWarning, stacklevel=3)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{fn}: reduction={reduction!r} must be one of {REDUCTIONS}")
    return reduction


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def loss_pair(fn: str, input: Any, target: Any) -> tuple[Tensor, Tensor]:
    """Input and target as Tensors; a shape mismatch that broadcasts warns, as torch."""
    input, target = as_tensor(input), as_tensor(target)
    if input.shape != target.shape:
        try:
            np.broadcast_shapes(input.shape, target.shape)
        except ValueError:
            raise ValueError(f"{fn}: input shape {input.shape} and target shape "
                             f"{target.shape} do not broadcast") from None
        warnings.warn(f"{fn}: input shape {input.shape} differs from target shape "
                      f"{target.shape}; they are broadcast, which is likely a mistake",
                      stacklevel=3)
    return input, target


def _fused(input: Tensor, target: Tensor, reduction: str, weight: Any, kind: str,
           beta: float = 0.0) -> Tensor | None:
    """The loss reduced by its one-kernel Function where it runs (a mean or sum, no
    weight, float32 input and target of one shape, dense), else None."""
    if (weight is None and reduction != "none"
            and loss_kernels.available(input.data, target.data)):
        return PointwiseLoss.apply(input, target, kind=kind, beta=beta,
                                   mean=reduction == "mean")
    return None


def _elementwise_weight(fn: str, weight: Any, shape: tuple) -> Any:
    if weight is None:
        return None
    w = as_tensor(weight)
    if w.shape != shape:
        raise ValueError(f"{fn}: weight of shape {w.shape} must have the input's shape {shape}")
    return w


def _weighted(loss: Tensor, weight: Any, reduction: str, mean_by_weight: bool) -> Tensor:
    if weight is None:
        return reduce_loss(loss, reduction)
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction)


# ----------------------------------------------------------------------------- regression
def mse_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Any = None) -> Tensor:
    """``(input - target)^2``, reduced; with ``weight`` (the input's shape) the mean is
    ``sum(weight * loss) / sum(weight)``."""
    fn = "mse_loss"
    reduction = reduction_arg(fn, size_average, reduce, reduction)
    input, target = loss_pair(fn, input, target)
    fused = _fused(input, target, reduction, weight, "mse")
    if fused is not None:
        return fused
    diff = input - target
    return _weighted(diff * diff, _elementwise_weight(fn, weight, input.shape), reduction, True)


def l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Any = None) -> Tensor:
    """``|input - target|``, reduced (``weight`` as in :func:`mse_loss`)."""
    fn = "l1_loss"
    reduction = reduction_arg(fn, size_average, reduce, reduction)
    input, target = loss_pair(fn, input, target)
    fused = _fused(input, target, reduction, weight, "l1")
    if fused is not None:
        return fused
    loss = (input - target).abs()
    return _weighted(loss, _elementwise_weight(fn, weight, input.shape), reduction, True)


def _nonnegative(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
        raise ValueError(f"{fn}: {name}={value!r} must be a number >= 0")
    return float(value)


def smooth_l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input -
    target``); ``beta=0`` is the L1 loss."""
    fn = "smooth_l1_loss"
    reduction = reduction_arg(fn, size_average, reduce, reduction)
    beta = _nonnegative(fn, "beta", beta)
    input, target = loss_pair(fn, input, target)
    fused = _fused(input, target, reduction, None, "smooth_l1" if beta else "l1", beta)
    if fused is not None:
        return fused
    d = input - target
    ad = d.abs()
    if beta == 0.0:
        return reduce_loss(ad, reduction)
    return reduce_loss(where(ad.data < beta, d * d * (0.5 / beta), ad - 0.5 * beta), reduction)


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0,
               weight: Any = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``; with ``weight``
    the mean is over all elements (as torch)."""
    fn = "huber_loss"
    reduction = reduction_arg(fn, None, None, reduction)
    delta = _nonnegative(fn, "delta", delta)
    if delta == 0:
        raise ValueError(f"{fn}: delta={delta!r} must be > 0")
    input, target = loss_pair(fn, input, target)
    fused = _fused(input, target, reduction, weight, "huber", delta)
    if fused is not None:
        return fused
    d = input - target
    ad = d.abs()
    loss = where(ad.data < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    return _weighted(loss, _elementwise_weight(fn, weight, input.shape), reduction, False)


# ----------------------------------------------------------------------------- classes
def class_indices(fn: str, target: Any, shape: tuple) -> np.ndarray:
    """Integer class targets as an intp ndarray of ``shape`` (float arrays holding whole
    numbers are accepted, for targets built before integer Tensors)."""
    t = target.data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind == "f" and np.array_equal(t, np.round(t)):
        t = t.astype(np.intp)
    if t.dtype.kind not in "iu":
        raise TypeError(f"{fn}: target of dtype {t.dtype} must hold integer class indices "
                        "(or class probabilities shaped like the input)")
    if t.shape != shape:
        raise ValueError(f"{fn}: target shape {t.shape} must be {shape} (the input's shape "
                         "without the class dim)")
    return t.astype(np.intp, copy=False)


def _class_dim(fn: str, input: Tensor) -> int:
    if input.ndim == 0:
        raise ValueError(f"{fn}: input must have a class dim, got a 0-d tensor")
    return 1 if input.ndim > 1 else 0


def _class_weight(fn: str, weight: Any, classes: int) -> np.ndarray | None:
    if weight is None:
        return None
    w = weight.data if isinstance(weight, Tensor) else np.asarray(weight)
    if w.shape != (classes,) or w.dtype.kind not in "biuf":
        raise ValueError(f"{fn}: weight of shape {w.shape} must hold one number per class, "
                         f"shape ({classes},)")
    return w


def _ignore_index(fn: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: ignore_index={value!r} must be an int")
    return int(value)


def _nll(fn: str, logp: Tensor, target: Any, weight: Any, ignore_index: int, reduction: str
         ) -> tuple[Tensor, np.ndarray, np.ndarray]:
    """Per-position ``-w[t] logp[t]``, reduced; also the kept mask and the per-position
    class weights (zero where ignored)."""
    dim = _class_dim(fn, logp)
    classes = logp.shape[dim]
    t = class_indices(fn, target, logp.shape[:dim] + logp.shape[dim + 1:])
    w = _class_weight(fn, weight, classes)
    keep = t != ignore_index
    bad = ((t < 0) | (t >= classes)) & keep
    if bad.any():
        raise ValueError(f"{fn}: target values must lie in [0, {classes}) (or equal "
                         f"ignore_index={ignore_index}), got {np.unique(t[bad])}")
    t = np.where(keep, t, 0)
    # logp of the target class at every position
    if type(logp.data) is np.ndarray:
        picked = Gather.apply(logp, index=np.expand_dims(t, dim), dim=dim).reshape(t.shape)
    else:  # a dask array: indexed lazily
        grid = np.indices(t.shape, sparse=True)
        picked = logp[(*grid[:1], t, *grid[1:])]
    weights = keep.astype(logp.dtype) if w is None else np.where(keep, w[t], 0).astype(
        logp.dtype)
    loss = -picked if w is None and keep.all() else -picked * weights
    if reduction == "mean":
        total = weights.sum()
        if total == 0:  # every target ignored: the value is nan and the gradient 0, as torch
            return loss.sum() * 0.0 + float("nan"), keep, weights
        return loss.sum() / total, keep, weights
    return reduce_loss(loss, reduction), keep, weights


def nll_loss(input: Any, target: Any, weight: Any = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Tensor:
    """``-weight[t] input[t]`` at each position, for log-probabilities ``input`` (N, C, *)
    or (C,) and class indices ``target`` (N, *) or ().

    Targets equal to ``ignore_index`` count nowhere; the mean divides by the sum of the
    weights of the counted targets.
    """
    fn = "nll_loss"
    reduction = reduction_arg(fn, size_average, reduce, reduction)
    input = as_tensor(input)
    return _nll(fn, input, target, weight, _ignore_index(fn, ignore_index), reduction)[0]


def _is_probability_target(input: Tensor, target: Any) -> bool:
    if not isinstance(target, Tensor | np.ndarray) or tuple(target.shape) != input.shape:
        return False
    return np.asarray(target.data if isinstance(target, Tensor) else target).dtype.kind == "f"


def cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input), target)`` over the class dim (dim 1; dim 0 for
    unbatched input).

    ``target``: class indices (N, *) (``ignore_index`` entries left out) or class
    probabilities shaped like the input.  ``weight`` (C,) weighs each class;
    ``label_smoothing`` mixes the target with the uniform distribution over the classes.
    """
    fn = "cross_entropy"
    reduction = reduction_arg(fn, size_average, reduce, reduction)
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, Real) or not (
            0.0 <= label_smoothing <= 1.0):
        raise ValueError(f"{fn}: label_smoothing={label_smoothing!r} must be a number in "
                         "[0, 1]")
    eps = float(label_smoothing)
    input = as_tensor(input)
    dim = _class_dim(fn, input)
    classes = input.shape[dim]
    w = _class_weight(fn, weight, classes)
    w_shape = (classes,) + (1,) * (input.ndim - dim - 1)
    logp = log_softmax(input, dim)
    if _is_probability_target(input, target):
        p = as_tensor(target)
        if eps > 0:
            p = p * (1.0 - eps) + eps / classes
        terms = logp * p if w is None else logp * p * w.astype(logp.dtype).reshape(w_shape)
        loss = -terms.sum(dim)
        if reduction == "mean":
            return loss.sum() / max(input.data.size // max(classes, 1), 1)
        return reduce_loss(loss, reduction)
    nll, keep, weights = _nll(fn, logp, target, w, _ignore_index(fn, ignore_index), reduction)
    if eps == 0:
        return nll
    # the uniform part: -sum_c w_c logp_c at each counted position, scaled by eps / C
    smooth = -(logp.sum(dim) if w is None else (logp * w.astype(logp.dtype).reshape(w_shape)
                                                ).sum(dim))
    if not keep.all():
        smooth = smooth * keep.astype(logp.dtype)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            smooth = smooth.sum() / (weights.sum() if w is not None else keep.sum())
    else:
        smooth = reduce_loss(smooth, reduction)
    return nll * (1.0 - eps) + smooth * (eps / classes)


KL_REDUCTIONS = ("none", "mean", "sum", "batchmean")


def kl_div(input: Any, target: Any, size_average: Any = None, reduce: Any = None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """The Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``:
    ``target (log(target) - input)`` (0 where target is 0), or with ``log_target``
    (target given as log-probabilities) ``exp(target) (target - input)``.  ``reduction``
    as the other losses, or ``"batchmean"``: the sum over the batch's first dim's size
    (the divergence's mathematical definition; ``"mean"`` averages over every element and
    warns, as torch).  The target's gradient where the target is 0 is ``-input`` (torch's
    is NaN, its ``xlogy``'s 0 / 0)."""
    fn = "kl_div"
    if reduction == "batchmean" and size_average is None and reduce is None:
        red = reduction
    else:
        red = reduction_arg(fn, size_average, reduce, reduction)
    if red not in KL_REDUCTIONS:  # pragma: no cover - reduction_arg refuses first
        raise ValueError(f"{fn}: reduction={reduction!r} must be one of {KL_REDUCTIONS}")
    if not isinstance(log_target, bool):
        raise TypeError(f"{fn}: log_target={log_target!r} must be a bool")
    x, t = loss_pair(fn, input, target)
    # float64, rounded once: in float32 the terms' and the sum's roundings gave 2.6x
    # torch's error
    (x, t), single = widened(x, t)
    if log_target:
        loss = t.exp() * (t - x)
    else:
        positive = t.data > 0
        tlogt = where(positive, t * where(positive, t, np.ones((), t.dtype)).log(),
                      np.zeros((), t.dtype))
        loss = tlogt - t * x
    if red == "mean":
        warnings.warn(f"{fn}: reduction='mean' divides the total loss by the batch size and "
                      "the support size; 'batchmean' divides by the batch size only, as the "
                      "KL divergence's definition does", stacklevel=2)
    if red == "batchmean":
        out = loss.sum() / (x.shape[0] if x.ndim else 1)
    else:
        out = reduce_loss(loss, red)
    return out.float() if single else out
