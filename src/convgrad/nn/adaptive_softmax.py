"""``AdaptiveLogSoftmaxWithLoss`` (Grave et al. 2016, torch's layer): a head that scores
the ``cutoffs[0]`` frequent classes plus one entry per tail cluster, and per cluster a
low-rank two-layer projection scoring the classes inside it.  Parameters are named as
torch's (``head.weight``, ``tail.<i>.0.weight``, ``tail.<i>.1.weight``), so a torch state
dict loads."""

from __future__ import annotations

import numbers
from collections import namedtuple
from typing import Any

import numpy as np

from ..functional.activation import log_softmax
from ..tensor import Tensor, as_tensor, concatenate
from .containers import ModuleList
from .layers import Linear
from .module import Module, Sequential

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: ``forward(input, target)`` gives ``(output, loss)`` with the
    target log-probabilities and their negated mean; :meth:`log_prob` the full
    ``(N, n_classes)`` log-probabilities; :meth:`predict` the most likely class."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Any, div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        name = "AdaptiveLogSoftmaxWithLoss"
        for arg, val in (("in_features", in_features), ("n_classes", n_classes)):
            if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < 1:
                raise ValueError(f"{name}: {arg}={val!r} must be a positive int")
        if not isinstance(cutoffs, list | tuple) or not cutoffs:
            raise ValueError(f"{name}: cutoffs={cutoffs!r} must be a non-empty sequence of "
                             "ints")
        cutoffs = list(cutoffs)
        if (any(isinstance(c, bool) or not isinstance(c, numbers.Integral) for c in cutoffs)
                or cutoffs != sorted(cutoffs) or min(cutoffs) <= 0
                or max(cutoffs) > n_classes - 1 or len(set(cutoffs)) != len(cutoffs)):
            raise ValueError(f"{name}: cutoffs={cutoffs!r} must be unique positive ints in "
                             f"increasing order, each between 1 and n_classes-1 "
                             f"({n_classes - 1})")
        if isinstance(div_value, bool) or not isinstance(div_value, numbers.Real) or not (
                div_value > 0):
            raise ValueError(f"{name}: div_value={div_value!r} must be a positive number")
        if not isinstance(head_bias, bool):
            raise TypeError(f"{name}: head_bias={head_bias!r} must be a bool")
        self.in_features = int(in_features)
        self.n_classes = int(n_classes)
        self.cutoffs = [int(c) for c in cutoffs] + [self.n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (div_value ** (i + 1)))
            if hsz < 1:
                raise ValueError(f"{name}: div_value={div_value!r} leaves cluster {i} a "
                                 f"projection of {hsz} features (in_features // div_value "
                                 f"** {i + 1}); expected at least 1")
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(self.in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        """Re-draw every weight as a fresh ``Linear`` would."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input_: Any, target: Any) -> Any:
        """``(output, loss)``: each row's log-probability of its target, and
        ``-output.mean()``; a 1-d input with a 0-d target is one unbatched row."""
        name = "AdaptiveLogSoftmaxWithLoss"
        x = as_tensor(input_)
        t = np.asarray(target.data if isinstance(target, Tensor) else target)
        if t.dtype.kind not in "iu":
            raise TypeError(f"{name}: target of dtype {t.dtype} must be integer")
        if t.ndim == 1:
            if x.ndim != 2:
                raise ValueError(f"{name}: a 1-d target needs a 2-d input, got input of "
                                 f"shape {tuple(x.shape)}")
            if x.shape[0] != t.shape[0]:
                raise ValueError(f"{name}: input of shape {tuple(x.shape)} and target of "
                                 f"shape {t.shape} must have the same batch size")
        elif t.ndim == 0:
            if x.ndim != 1:
                raise ValueError(f"{name}: a 0-d target needs a 1-d input, got input of "
                                 f"shape {tuple(x.shape)}")
        else:
            raise ValueError(f"{name}: target of shape {t.shape} must be 0-d or 1-d "
                             "(multi-target is not supported)")
        batched = t.ndim > 0
        if not batched:
            x, t = x.unsqueeze(0), t.reshape(1)
        if t.size and (t.min() < 0 or t.max() >= self.n_classes):
            raise ValueError(f"{name}: target values must be in [0, {self.n_classes - 1}], "
                             f"got values in [{t.min()}, {t.max()}]")
        gather = np.where(t < self.shortlist_size, t, 0).astype(np.int64)
        rows_all, pieces = [np.flatnonzero(t < self.shortlist_size)], []
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            rows = np.flatnonzero((t >= low) & (t < high))
            if rows.size == 0:
                continue
            gather[rows] = self.shortlist_size + i
            cluster = log_softmax(self.tail[i](x[rows]), dim=1)
            local = cluster.gather(1, Tensor._wrap((t[rows] - low)[:, None].astype(np.int64)))
            rows_all.append(rows)
            pieces.append(local.reshape(-1))
        head = log_softmax(self.head(x), dim=1)
        output = head.gather(1, Tensor._wrap(gather[:, None])).reshape(-1)
        if pieces:  # the in-cluster log-probabilities, put back in row order
            tail = concatenate([as_tensor(np.zeros(rows_all[0].size, x.dtype))] + pieces)
            output = output + tail[np.argsort(np.concatenate(rows_all), kind="stable")]
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, x: Tensor, head_output: Tensor) -> Tensor:
        head = log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = log_softmax(self.tail[i](x), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return concatenate(parts, 1)

    def _rows(self, input: Any, fn: str) -> Tensor:
        x = as_tensor(input)
        if x.ndim != 2 or x.shape[-1] != self.in_features:  # (torch's too takes 2-d only)
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss.{fn}: input of shape "
                             f"{tuple(x.shape)} must be (N, {self.in_features})")
        return x

    def log_prob(self, input: Any) -> Tensor:
        """The log-probability of every class of each row: ``(N, n_classes)``."""
        x = self._rows(input, "log_prob")
        return self._full_log_prob(x, self.head(x))

    def predict(self, input: Any) -> Tensor:
        """The most likely class of each row (int64), as ``log_prob(input).argmax(1)``
        but scoring the tail clusters only for rows whose head prefers one."""
        x = self._rows(input, "predict")
        head_output = self.head(x)
        best = np.argmax(head_output.data, axis=1).astype(np.int64)
        tail_rows = np.flatnonzero(best >= self.shortlist_size)
        if tail_rows.size:
            full = self._full_log_prob(x[tail_rows], head_output[tail_rows])
            best[tail_rows] = np.argmax(full.data, axis=1)
        return Tensor._wrap(best)
