"""Stochastic weight averaging and EMA (``cg.optim.swa_utils``), with torch's names and
numbers: ``AveragedModel``, the averaging functions, ``SWALR`` and ``update_bn``.

``AveragedModel(model)`` holds a deep copy of ``model`` (``module``) and the count
``n_averaged`` (an int64 buffer); ``update_parameters(model)`` folds the model's current
parameters (and buffers, with ``use_buffers=True``) into the running average, in torch's
order of floating-point operations: ``avg + (cur - avg) / (n + 1)`` for SWA, torch's
two-branch ``lerp`` for the multi-tensor functions.  Integer buffers
(``num_batches_tracked``) are averaged in float32 and truncated, as torch's default does
(torch's ``get_swa_multi_avg_fn`` raises on them; here it truncates the same way).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..autograd import no_grad
from ..devices import check_device
from ..nn.module import Module
from ..nn.normalization import _BatchNorm
from ..ops.update import Scratch, fma
from ..tensor import Tensor
from ..tensor.version import bump as _bump_version
from .lr_scheduler import LRScheduler, _optimizer, _per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn", "update_bn"]


def _array(value: Any) -> np.ndarray:
    return value.data if isinstance(value, Tensor) else np.asarray(value)


def _count(n: Any) -> int:
    return int(_array(n).reshape(()).item()) if not isinstance(n, Integral) else int(n)


def _result(avg: np.ndarray, cur: np.ndarray) -> type:
    """The dtype torch computes ``avg op cur`` in: theirs if floating, else float32."""
    dt = np.result_type(avg, cur)
    return dt.type if dt.kind == "f" else np.float32


def _swa(avg: np.ndarray, cur: np.ndarray, n: int) -> np.ndarray:
    """``avg + (cur - avg) / (n + 1)`` (integers: the division in float32)."""
    dt = _result(avg, cur)
    diff = np.subtract(cur, avg)
    if diff.dtype.kind != "f":
        diff = diff.astype(dt)
    return np.add(avg.astype(dt, copy=False), diff / dt(n + 1))


def _ema(avg: np.ndarray, cur: np.ndarray, decay: float) -> np.ndarray:
    """``decay * avg + (1 - decay) * cur``, the scalars rounded to the computing dtype."""
    dt = _result(avg, cur)
    return (dt(decay) * avg.astype(dt, copy=False)
            + dt(1 - decay) * cur.astype(dt, copy=False))


def _lerp_(start: np.ndarray, end: np.ndarray, weight: float) -> None:
    """``start.lerp_(end, weight)`` as torch's vectorised kernel: ``start + w * (end -
    start)`` for ``|w| < 0.5``, else ``end + (w - 1) * (end - start)``, each one fused."""
    dt = start.dtype.type
    w = dt(weight)
    end = end.astype(start.dtype, copy=False)
    diff = np.subtract(end, start)
    scratch = Scratch()
    if abs(w) < 0.5:
        fma(start, diff, np.float64(w), start, scratch)
    else:
        fma(start, diff, np.float64(w - dt(1)), end, scratch)


def _store(target: Any, value: np.ndarray) -> None:
    arr = _array(target)
    np.copyto(arr, value, casting="unsafe")  # as copy_: cast (integers truncate)
    _bump_version(arr)


def _decay(fn: str, decay: Any) -> float:
    if isinstance(decay, bool) or not isinstance(decay, Real) or not 0.0 <= decay <= 1.0:
        raise ValueError(f"{fn}: decay={decay!r} must be a number in [0, 1]")
    return float(decay)


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """``f(ema_params, current_params, n_averaged)``: each ``ema`` lerped in place towards
    ``current`` by ``1 - decay`` (integers: ``ema * decay + cur * (1 - decay)``)."""
    decay = _decay("get_ema_multi_avg_fn", decay)

    def ema_update(ema_param_list: list, current_param_list: list, _: Any) -> None:
        for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
            a, c = _array(p_ema), _array(p_model)
            if a.dtype.kind == "f":
                _lerp_(a, c, 1 - decay)
                _bump_version(a)
            else:
                _store(a, _ema(a, c, decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """``f(averaged_params, current_params, n_averaged)``: each average lerped in place
    towards the current value by ``1 / (n_averaged + 1)`` (float32 when ``n_averaged`` is
    a Tensor, as torch); integers as :func:`get_swa_avg_fn`."""

    def swa_update(averaged_param_list: list, current_param_list: list,
                   num_averaged: Any) -> None:
        n = _count(num_averaged)
        weight = float(np.float32(1) / np.float32(n + 1)) if not isinstance(
            num_averaged, Integral) else 1.0 / (n + 1)
        for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
            a, c = _array(p_avg), _array(p_model)
            if a.dtype.kind == "f":
                _lerp_(a, c, weight)
                _bump_version(a)
            else:
                _store(a, _swa(a, c, n))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``f(ema_param, current_param, n_averaged) = decay * ema + (1 - decay) * current``."""
    decay = _decay("get_ema_avg_fn", decay)

    def ema_update(ema_param: Any, current_param: Any, num_averaged: Any) -> Tensor:
        return Tensor._wrap(_ema(_array(ema_param), _array(current_param), decay))

    return ema_update


def get_swa_avg_fn() -> Callable:
    """``f(averaged, current, n_averaged) = averaged + (current - averaged) / (n + 1)``."""

    def swa_update(averaged_param: Any, current_param: Any, num_averaged: Any) -> Tensor:
        return Tensor._wrap(_swa(_array(averaged_param), _array(current_param),
                                 _count(num_averaged)))

    return swa_update


class AveragedModel(Module):
    """``AveragedModel(model, device=None, avg_fn=None, multi_avg_fn=None,
    use_buffers=False)``: a running average (SWA by default, or EMA through ``avg_fn`` /
    ``multi_avg_fn``) of ``model``'s parameters.

    ``module`` is a deep copy of ``model``; calling the averaged model calls it.
    ``avg_fn(averaged, current, n_averaged)`` returns the new average of one Tensor;
    ``multi_avg_fn(averaged_list, current_list, n_averaged)`` updates lists in place.
    With ``use_buffers=True`` buffers are averaged too, else copied from ``model``.
    """

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        fn = "AveragedModel"
        if not isinstance(model, Module):
            raise TypeError(f"{fn}: model={type(model).__name__} is not a Module")
        if device is not None:
            check_device(fn, device)
        for name, f in (("avg_fn", avg_fn), ("multi_avg_fn", multi_avg_fn)):
            if f is not None and not callable(f):
                raise TypeError(f"{fn}: {name}={f!r} must be callable or None")
        if not isinstance(use_buffers, bool):
            raise TypeError(f"{fn}: use_buffers={use_buffers!r} must be a bool")
        self.module = copy.deepcopy(model)
        self.register_buffer("n_averaged", np.array(0, np.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _pairs(self, model: Module) -> list[tuple[Any, Any]]:
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.module.parameters()), list(model.parameters())
        _same("update_parameters", mine, theirs)
        return list(zip(mine, theirs))

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current values into the average (the first call copies them)."""
        if not isinstance(model, Module):
            raise TypeError(f"update_parameters: model={type(model).__name__} is not a "
                            "Module")
        pairs = self._pairs(model)
        n = int(self.n_averaged)
        if n == 0:
            for mine, theirs in pairs:
                _store(mine, _array(theirs))
        else:
            with no_grad():
                self._average(pairs, n)
        if not self.use_buffers:  # the buffers follow the model
            mine, theirs = list(self.module.buffers()), list(model.buffers())
            _same("update_parameters", mine, theirs)
            for b_mine, b_theirs in zip(mine, theirs):
                _store(b_mine, _array(b_theirs))
        self.n_averaged[...] += 1

    def _average(self, pairs: list[tuple[Any, Any]], n: int) -> None:
        count = Tensor(np.array(n, np.int64))
        if self.multi_avg_fn is not None or self.avg_fn is None:
            groups: dict[Any, tuple[list, list]] = {}
            for mine, theirs in pairs:  # grouped by dtype, as torch (by device and dtype)
                group = groups.setdefault(_array(mine).dtype, ([], []))
                group[0].append(Tensor._wrap(_array(mine)))
                group[1].append(Tensor._wrap(_array(theirs)))
            for averaged, current in groups.values():
                if self.multi_avg_fn is not None:
                    self.multi_avg_fn(averaged, current, count)
                else:  # torch on the CPU: the one-tensor SWA rule
                    for a, c in zip(averaged, current):
                        _store(a, _swa(a.data, c.data, n))
        else:
            for mine, theirs in pairs:
                new = self.avg_fn(Tensor._wrap(_array(mine)), Tensor._wrap(_array(theirs)),
                                  count)
                _store(mine, _array(new))


def _same(fn: str, mine: list, theirs: list) -> None:
    if len(mine) != len(theirs):
        raise ValueError(f"{fn}: the model has {len(theirs)} parameters/buffers to average, "
                         f"the averaged model {len(mine)}; pass a model of the same "
                         "architecture")
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if _array(a).shape != _array(b).shape:
            raise ValueError(f"{fn}: entry {i} has shape {_array(b).shape} in the model but "
                             f"{_array(a).shape} in the averaged model")


@no_grad()
def update_bn(loader: Iterable, model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every BatchNorm of ``model`` with one pass over
    ``loader`` (a cumulative average, ``momentum=None``, as torch); a batch that is a list
    or tuple contributes its first element.  The training mode is restored after."""
    if not isinstance(model, Module):
        raise TypeError(f"update_bn: model={type(model).__name__} is not a Module")
    if not isinstance(loader, Iterable):
        raise TypeError(f"update_bn: loader={type(loader).__name__} is not iterable")
    if device is not None:
        check_device("update_bn", device)
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    try:
        for batch in loader:
            if isinstance(batch, list | tuple):
                batch = batch[0]
            model(batch)
    finally:
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """``SWALR(optimizer, swa_lr, anneal_epochs=10, anneal_strategy='cos', last_epoch=-1)``:
    anneal each group's rate to ``swa_lr`` (one value, or one per group) over
    ``anneal_epochs`` steps, by a cosine or a line, then keep it."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        fn = "SWALR"
        _optimizer(fn, optimizer)
        swa_lrs = _per_group(fn, "swa_lr", swa_lr, optimizer)
        for i, lr in enumerate(swa_lrs):
            if isinstance(lr, bool) or not isinstance(lr, Real):
                raise TypeError(f"{fn}: swa_lr[{i}]={lr!r} must be a number")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{fn}: anneal_strategy={anneal_strategy!r} must be 'cos' or "
                             "'linear'")
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, Integral) \
                or anneal_epochs < 0:
            raise ValueError(f"{fn}: anneal_epochs={anneal_epochs!r} must be an int >= 0")
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        self.anneal_strategy = anneal_strategy
        self.anneal_epochs = int(anneal_epochs)
        self._after_load()
        super().__init__(optimizer, last_epoch)

    _transient = ("optimizer", "anneal_func")

    def _after_load(self) -> None:
        self.anneal_func = (self._cosine_anneal if self.anneal_strategy == "cos"
                            else self._linear_anneal)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
