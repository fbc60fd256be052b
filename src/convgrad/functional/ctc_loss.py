"""The connectionist temporal classification loss (Graves et al. 2006) with
``torch.nn.functional.ctc_loss``'s arguments, shapes, reductions and infinities.

``-log p(target | input)``: the sum over every alignment of the target (its labels in
order, each repeated, with blanks between and around; a repeated label needs a blank
between its copies) of the product of the alignment's per-step probabilities.  The
forward variables ``alpha_t(s)`` (log probability of the prefix of the blank-extended
target up to state ``s`` after step ``t``) are computed in float64, each sample's
likelihood as one node (:mod:`..tensor.ctc`: its gradient from the backward variables,
and under ``create_graph`` from the recursion composed of differentiable operations),
so the gradient is the exact gradient of this loss with respect to ``log_probs``
(torch's adds ``exp(log_probs)``, which a preceding ``log_softmax`` cancels: through
one, the two agree) and exists to every order.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..ops.ctc import IMPOSSIBLE
from ..tensor import Tensor, as_tensor, where
from ..tensor.ctc import CTCNegLogLikelihood
from .loss import reduction_arg

__all__ = ["ctc_loss"]

def _ints(fn: str, name: str, value: Any, shape: tuple | None = None) -> np.ndarray:
    arr = np.asarray(value.data if isinstance(value, Tensor) else value)
    if arr.dtype.kind == "f" and arr.size and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)  # (whole numbers held as floats, as cg.tensor makes ints)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{fn}: {name} has dtype {arr.dtype}; expected integers")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{fn}: {name} of shape {arr.shape} must be {shape}")
    return arr.astype(np.int64)


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss of ``log_probs`` (T, N, C) (or unbatched (T, C)), log-probabilities of C
    classes per step, against ``targets`` ((N, S) padded, or all targets concatenated
    1-d), of ``input_lengths`` steps and ``target_lengths`` labels per sample.
    ``reduction``: ``"mean"`` (each loss divided by its target length, then the batch
    mean), ``"sum"`` or ``"none"`` (N,).  A target no alignment fits gives an infinite
    loss (its gradient NaN), or 0 and no gradient with ``zero_infinity``."""
    fn = "ctc_loss"
    red = reduction_arg(fn, None, None, reduction)
    lp = as_tensor(log_probs)
    if lp.dtype not in (np.float32, np.float64):
        raise TypeError(f"{fn}: log_probs has dtype {lp.dtype}; expected float32 or float64")
    if lp.ndim not in (2, 3):
        raise ValueError(f"{fn}: log_probs of shape {lp.shape} must be (T, N, C) or (T, C)")
    unbatched = lp.ndim == 2
    if unbatched:
        lp = lp.unsqueeze(1)
    steps, n, classes = lp.shape
    if isinstance(blank, bool) or not isinstance(blank, Integral) or not 0 <= blank < classes:
        raise ValueError(f"{fn}: blank={blank!r} must be a class index in [0, {classes})")
    if not isinstance(zero_infinity, bool):
        raise TypeError(f"{fn}: zero_infinity={zero_infinity!r} must be a bool")
    il = _ints(fn, "input_lengths", input_lengths).reshape(-1)
    tl = _ints(fn, "target_lengths", target_lengths).reshape(-1)
    for name, arr in (("input_lengths", il), ("target_lengths", tl)):
        if arr.shape != (n,):
            raise ValueError(f"{fn}: {name} must hold {n} lengths (one per sample), got "
                             f"{arr.size}")
    if il.min() < 0 or il.max() > steps:
        raise ValueError(f"{fn}: input_lengths {il.tolist()} must lie in [0, {steps}]")
    if tl.min() < 0:
        raise ValueError(f"{fn}: target_lengths {tl.tolist()} must be >= 0")
    tg = _ints(fn, "targets", targets)
    if unbatched and tg.ndim == 1 and tg.size >= tl[0]:
        tg = tg[None, :tl[0]]
    if tg.ndim == 1:  # concatenated
        if tg.size != tl.sum():
            raise ValueError(f"{fn}: 1-d targets hold {tg.size} labels, target_lengths sum "
                             f"to {tl.sum()}")
        starts = np.concatenate([[0], np.cumsum(tl)[:-1]])
        rows = [tg[a:a + k] for a, k in zip(starts, tl)]
    elif tg.ndim == 2 and tg.shape[0] == n and tg.shape[1] >= tl.max(initial=0):
        rows = [tg[i, :k] for i, k in enumerate(tl)]
    else:
        raise ValueError(f"{fn}: targets of shape {tg.shape} must be (N={n}, S >= "
                         f"{tl.max(initial=0)}) or 1-d of {tl.sum()} labels")
    used = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    if used.size and (used.min() < 0 or used.max() >= classes or np.any(used == blank)):
        raise ValueError(f"{fn}: target labels must be classes in [0, {classes}) other than "
                         f"blank={blank}")
    states = 2 * int(tl.max(initial=0)) + 1
    ext = np.full((n, states), blank, np.int64)  # blank, l1, blank, l2, ..., blank
    for i, r in enumerate(rows):
        ext[i, 1:2 * len(r):2] = r
    skip = np.zeros((n, states), bool)  # s may come from s - 2: a label unlike the last
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    loss = CTCNegLogLikelihood.apply(lp.double(), ext=ext, skip=skip, il=il, tl=tl)
    if steps == 0 or np.any(il == 0):  # no steps: only an empty target has an alignment
        loss = where(il == 0, np.where(tl == 0, 0.0, np.inf), loss)
    impossible = loss.data >= IMPOSSIBLE
    if zero_infinity:
        loss = where(impossible, 0.0, loss)
    elif impossible.any():
        # inf there, its gradient not finite; every other sample's untouched
        loss = loss * Tensor(np.where(impossible, np.inf, 1.0))
    if red == "mean":
        out = (loss / Tensor(np.maximum(tl, 1).astype(np.float64))).mean()
    elif red == "sum":
        out = loss.sum()
    else:
        out = loss[0] if unbatched else loss
    return out.to(lp.dtype) if lp.dtype != np.float64 else out
