"""Learning-rate schedules (``cg.optim.lr_scheduler``) with torch's names, arguments and values.

A scheduler rewrites ``group["lr"]`` of each parameter group of its optimiser every
time :meth:`LRScheduler.step` is called (once per epoch or per batch, after
``optimizer.step()``).  Building one performs the first step, so ``get_last_lr()`` is the
rate of step 0 at once.  The chainable schedules (step, exponential, cosine, linear,
multiplicative, constant, polynomial; ``ChainedScheduler`` steps several together)
update the current rate multiplicatively, in the same floating-point operations as
torch, so a run reproduces torch's learning rates exactly and composes with other
schedulers acting on the same optimiser.

``state_dict()`` holds every number the schedule needs (not the optimiser), so saving
it next to the optimiser's state and loading both into fresh objects continues the
schedule exactly.
"""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from numbers import Integral
from typing import Any

from ..tensor.args import number as _real
from .optimizer import Optimizer

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]


# ----------------------------------------------------------------------------- arguments
def _optimizer(fn: str, optimizer: Any) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{fn}: optimizer={type(optimizer).__name__} is not an Optimizer; "
                        "build the optimiser first and pass it (e.g. "
                        f"{fn}(cg.optim.SGD(model.parameters(), lr=0.1), ...))")
    return optimizer


def _int(fn: str, name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: {name}={value!r} must be an int")
    if value < low:
        raise ValueError(f"{fn}: {name}={value!r} must be >= {low}")
    return int(value)


def _per_group(fn: str, name: str, value: Any, optimizer: Optimizer) -> list:
    """``value`` once per parameter group (a list or tuple must have one entry per group)."""
    n = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ValueError(f"{fn}: {name} has {len(value)} entries but the optimiser has "
                             f"{n} parameter groups")
        return list(value)
    return [value] * n


# ----------------------------------------------------------------------------- base
class LRScheduler:
    """Base class: ``step()``, ``get_last_lr()``, ``state_dict()``, ``load_state_dict()``.

    Subclasses define :meth:`get_lr`, the rates of step ``last_epoch`` (called once per
    step, after ``last_epoch`` advanced).  ``last_epoch=-1`` starts a new schedule (each
    group remembers its starting rate as ``group["initial_lr"]``).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        fn = type(self).__name__
        self.optimizer = _optimizer(fn, optimizer)
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, Integral) \
                or last_epoch < -1:
            raise ValueError(f"{fn}: last_epoch={last_epoch!r} must be an int >= -1")
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise ValueError(f"{fn}: last_epoch={last_epoch} resumes a schedule, but "
                                     f"param_groups[{i}] has no 'initial_lr' (load the "
                                     "optimiser's state first, or use last_epoch=-1)")
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = int(last_epoch)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def step(self) -> None:
        """Advance the schedule by one step and write the new rates into the optimiser."""
        self._step_count += 1
        self.last_epoch += 1
        self._set_lrs(self.get_lr())

    def _set_lrs(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def _closed_form(self) -> list[float]:
        """The rates of step ``last_epoch`` computed from the initial rates directly."""
        return self.get_lr()

    def _undo_step(self) -> None:
        self.last_epoch -= 1

    def _restart(self) -> None:
        """Take over at epoch 0 with the closed-form rates (how SequentialLR hands over)."""
        self.last_epoch = 0
        self._set_lrs(self._closed_form())

    def get_last_lr(self) -> list[float]:
        """The rates set by the latest step, one per parameter group."""
        return list(self._last_lr)

    # -- saving and resuming
    _transient = ("optimizer",)

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimiser (numbers, lists, flags)."""
        return {k: _copy(v) for k, v in self.__dict__.items() if k not in self._transient}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` of the same kind of scheduler."""
        fn = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"{fn}: state_dict must be a mapping, got "
                            f"{type(state_dict).__name__}")
        known = set(self.__dict__) - set(self._transient)
        unknown = [k for k in state_dict if k not in known]
        if unknown:
            raise ValueError(f"{fn}: unknown key(s) {unknown}; expected some of "
                             f"{sorted(known)} (a state dict of another scheduler?)")
        for k, v in state_dict.items():
            self.__dict__[k] = _copy(v)
        self._after_load()

    def _after_load(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, lr={self._last_lr})"


def _copy(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return type(value)(_copy(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------- schedules
class _LambdaScheduler(LRScheduler):
    """A schedule driven by ``lr_lambda(epoch)``, one function for all groups or one per
    group: the functions checked once, and ``state_dict`` keeping the attributes of
    callable objects (a plain function has no state and is saved as ``None``), as torch."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list,
                 last_epoch: int = -1) -> None:
        name = type(self).__name__
        _optimizer(name, optimizer)
        lambdas = _per_group(name, "lr_lambda", lr_lambda, optimizer)
        for i, f in enumerate(lambdas):
            if not callable(f):
                raise TypeError(f"{name}: lr_lambda[{i}]={f!r} must be callable")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    _transient = ("optimizer", "lr_lambdas")

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["lr_lambdas"] = _save_callables(self.lr_lambdas)
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        super().load_state_dict(state)
        _load_callables(f"{type(self).__name__}.load_state_dict", self.lr_lambdas, saved)


class LambdaLR(_LambdaScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``, one function for all groups or one per group."""

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]


def _is_function(f: Any) -> bool:
    """A plain function (or builtin) carries no state worth saving; a callable object does."""
    return isinstance(f, types.FunctionType) or not hasattr(f, "__dict__")


def _save_callables(fs: list) -> list:
    """The state of each callable as torch saves it: a callable object's attributes, None
    for a plain function."""
    return [None if _is_function(f) else dict(vars(f)) for f in fs]


def _load_callables(fn: str, fs: list, saved: Any) -> None:
    if not isinstance(saved, list | tuple) or len(saved) != len(fs):
        raise ValueError(f"{fn}: the state dict holds {saved!r}, expected a list of "
                         f"{len(fs)} entries (None or a dict of attributes)")
    for f, attrs in zip(fs, saved):
        if attrs is not None:
            vars(f).update(attrs)


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = _int("StepLR", "step_size", step_size, 1)
        self.gamma = _real("StepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _closed_form(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each milestone (a milestone listed twice, twice)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        if not isinstance(milestones, Iterable) or isinstance(milestones, str):
            raise TypeError(f"MultiStepLR: milestones={milestones!r} must be a list of ints")
        self.milestones = Counter(_int("MultiStepLR", "milestones[]", m, 0) for m in milestones)
        self.gamma = _real("MultiStepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current()]

    def _closed_form(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["milestones"] = dict(self.milestones)
        return state

    def _after_load(self) -> None:
        self.milestones = Counter({int(k): int(v) for k, v in dict(self.milestones).items()})


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = _real("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _closed_form(self) -> list[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_max`` steps (SGDR
    without restarts); past ``T_max`` the cosine continues, rising again.

    Computed as torch computes it, step to step: ``lr_t = eta_min + (lr_{t-1} - eta_min)
    * (1 + cos(pi t / T)) / (1 + cos(pi (t - 1) / T))``, with the step after each trough
    adding ``(base - eta_min) (1 - cos(pi / T)) / 2``.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max = _int("CosineAnnealingLR", "T_max", T_max, 1)
        self.eta_min = _real("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current()
        if self._step_count == 1 and t > 0:  # resumed at epoch t: the closed form
            return [low + (base - low) * (1 + math.cos(t * math.pi / T)) / 2
                    for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:  # leaving a trough
            return [lr + (base - low) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, self._current())]
        ratio_num = 1 + math.cos(math.pi * t / T)
        ratio_den = 1 + math.cos(math.pi * (t - 1) / T)
        return [ratio_num / ratio_den * (lr - low) + low for lr in self._current()]

    def _closed_form(self) -> list[float]:
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        return [low + (base - low) * (1 + math.cos(math.pi * t / T)) / 2
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the rate linearly from ``start_factor`` to ``end_factor`` times the initial rate
    over ``total_iters`` steps, then keep it."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        fn = "LinearLR"
        self.start_factor = _real(fn, "start_factor", start_factor, 0.0, 1.0)
        if start_factor == 0:
            raise ValueError(f"{fn}: start_factor=0 must be in (0, 1]")
        self.end_factor = _real(fn, "end_factor", end_factor, 0.0, 1.0)
        self.total_iters = _int(fn, "total_iters", total_iters, 1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, a, b, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
        if t == 0:
            return [lr * a for lr in self._current()]
        if self._is_initial or t > n:
            return self._current()
        factor = 1.0 + (b - a) / (n * a + (t - 1) * (b - a))
        return [lr * factor for lr in self._current()]

    def _closed_form(self) -> list[float]:
        a, b, n = self.start_factor, self.end_factor, self.total_iters
        return [base * (a + (b - a) * min(n, self.last_epoch) / n) for base in self.base_lrs]


class _HoldsSchedulers:
    """State of a scheduler made of schedulers (``SequentialLR``, ``ChainedScheduler``):
    its own entries plus one state dict per held scheduler, under ``_schedulers``."""

    _transient = ("optimizer", "_schedulers")
    _schedulers: list

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("_schedulers", None)
        if not isinstance(saved, list | tuple) or len(saved) != len(self._schedulers):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state dict must hold "
                             f"one '_schedulers' entry per scheduler ({len(self._schedulers)})")
        super().load_state_dict(state)
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)


class SequentialLR(_HoldsSchedulers, LRScheduler):
    """Run ``schedulers`` one after another, switching at each of ``milestones`` (one fewer
    than schedulers); each scheduler starts afresh from the initial rates."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler],
                 milestones: list[int], last_epoch: int = -1) -> None:
        fn = "SequentialLR"
        _optimizer(fn, optimizer)
        if not isinstance(schedulers, list | tuple) or not schedulers:
            raise ValueError(f"{fn}: schedulers must be a non-empty list of schedulers, got "
                             f"{schedulers!r}")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{fn}: schedulers[{i}] is a ReduceLROnPlateau, which steps on "
                                 "a metric and cannot be sequenced")
            if not isinstance(s, LRScheduler):
                raise TypeError(f"{fn}: schedulers[{i}] is a {type(s).__name__}, expected a "
                                "scheduler")
            if s.optimizer is not optimizer:
                raise ValueError(f"{fn}: schedulers[{i}] ({type(s).__name__}) adjusts another "
                                 "optimiser than the one given")
        if not isinstance(milestones, list | tuple) or len(milestones) != len(schedulers) - 1:
            raise ValueError(f"{fn}: milestones={milestones!r} must list "
                             f"{len(schedulers) - 1} step(s), one fewer than the schedulers")
        self._schedulers = list(schedulers)
        self._milestones = [_int(fn, "milestones[]", m, 0) for m in milestones]
        self.last_epoch = _int(fn, "last_epoch", last_epoch, -1) + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in self._schedulers:  # each sub-scheduler already took its first step
            s._undo_step()
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_step(self) -> None:
        for s in self._schedulers:
            s._undo_step()

    def step(self) -> None:
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        current = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            current._restart()
        else:
            current.step()
        self._last_lr = current.get_last_lr()


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin): warm up from ``max_lr / div_factor`` to ``max_lr``
    over ``pct_start`` of ``total_steps``, then anneal to ``initial_lr / final_div_factor``
    (``three_phase``: back to the initial rate first); momentum (or Adam's ``beta1``)
    cycles the opposite way between ``max_momentum`` and ``base_momentum``.

    Call ``step()`` once per batch; stepping past ``total_steps`` is a ValueError.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        fn = "OneCycleLR"
        _optimizer(fn, optimizer)
        if total_steps is not None:
            self.total_steps = _int(fn, "total_steps", total_steps, 1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = (_int(fn, "epochs", epochs, 1)
                                * _int(fn, "steps_per_epoch", steps_per_epoch, 1))
        else:
            raise ValueError(f"{fn}: give total_steps, or both epochs and steps_per_epoch")
        pct_start = _real(fn, "pct_start", pct_start, 0.0, 1.0)
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{fn}: anneal_strategy={anneal_strategy!r} must be 'cos' or "
                             "'linear'")
        self.anneal_strategy = anneal_strategy
        if not isinstance(three_phase, bool) or not isinstance(cycle_momentum, bool):
            raise TypeError(f"{fn}: three_phase and cycle_momentum must be bools")
        n = self.total_steps
        up = float(pct_start * n) - 1
        if three_phase:
            self._phases = [
                [up, "initial_lr", "max_lr", "max_momentum", "base_momentum"],
                [float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum",
                 "max_momentum"],
                [n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"],
            ]
        else:
            self._phases = [
                [up, "initial_lr", "max_lr", "max_momentum", "base_momentum"],
                [n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"],
            ]
        max_lrs = [_real(fn, "max_lr", v, 0.0)
                   for v in _per_group(fn, "max_lr", max_lr, optimizer)]
        div_factor = _real(fn, "div_factor", div_factor)
        final_div_factor = _real(fn, "final_div_factor", final_div_factor)
        if last_epoch == -1:
            for lr, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"{fn}: cycle_momentum=True needs an optimiser with momentum "
                                 f"or betas; {type(optimizer).__name__} has neither")
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group(fn, "max_momentum", max_momentum, optimizer)
            lows = _per_group(fn, "base_momentum", base_momentum, optimizer)
            if last_epoch == -1:
                for high, low, group in zip(highs, lows, optimizer.param_groups):
                    self._set_momentum(group, _real(fn, "max_momentum", high))
                    group["max_momentum"] = high
                    group["base_momentum"] = _real(fn, "base_momentum", low)
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"OneCycleLR: step {t} is past total_steps={self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            begin = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if t <= end or i == len(self._phases) - 1:
                    pct = (t - begin) / (end - begin)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[m0], group[m1], pct))
                    break
                begin = end
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` once a metric has stopped improving for more than
    ``patience`` steps; ``step(metric)`` after each evaluation.

    ``mode="min"`` (a loss) or ``"max"`` (an accuracy); an improvement must beat the best
    so far by ``threshold`` (relative, or absolute with ``threshold_mode="abs"``); after a
    reduction ``cooldown`` steps pass before counting again; rates never go below
    ``min_lr`` and a change smaller than ``eps`` is skipped.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        fn = "ReduceLROnPlateau"
        self.optimizer = _optimizer(fn, optimizer)
        self.factor = _real(fn, "factor", factor, 0.0)
        if factor >= 1.0:
            raise ValueError(f"{fn}: factor={factor!r} must be < 1")
        if mode not in ("min", "max"):
            raise ValueError(f"{fn}: mode={mode!r} must be 'min' or 'max'")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"{fn}: threshold_mode={threshold_mode!r} must be 'rel' or 'abs'")
        self.min_lrs = [_real(fn, "min_lr", v, 0.0)
                        for v in _per_group(fn, "min_lr", min_lr, optimizer)]
        self.patience = _int(fn, "patience", patience, 0)
        self.cooldown = _int(fn, "cooldown", cooldown, 0)
        self.threshold = _real(fn, "threshold", threshold)
        self.eps = _real(fn, "eps", eps, 0.0)
        self.mode, self.threshold_mode = mode, threshold_mode
        self.last_epoch = 0
        self._last_lr = self._current()
        self.best = math.inf if mode == "min" else -math.inf
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _is_better(self, value: float) -> bool:
        best, th = self.best, self.threshold
        if self.mode == "min":
            return value < best * (1.0 - th) if self.threshold_mode == "rel" else value < best - th
        return value > best * (th + 1.0) if self.threshold_mode == "rel" else value > best + th

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        """Record one evaluation of the monitored metric (a number or one-element Tensor)."""
        try:
            current = float(metrics)
        except (TypeError, ValueError):
            raise TypeError(f"ReduceLROnPlateau.step: metrics={metrics!r} must be a number"
                            ) from None
        self.last_epoch += 1
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs, strict=True):
                old = float(group["lr"])
                new = max(old * self.factor, floor)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current()


# ----------------------------------------------------------------------------- more schedules
class MultiplicativeLR(_LambdaScheduler):
    """Multiply the current rate by ``lr_lambda(epoch)`` every step (one function for all
    groups or one per group); the first rate is the initial one."""

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current()
        return [lr * f(self.last_epoch) for f, lr in zip(self.lr_lambdas, self._current())]


class ConstantLR(LRScheduler):
    """Multiply the rate by ``factor`` (in (0, 1]) for the first ``total_iters`` steps,
    then give the factor back (divide by it: other schedulers may act meanwhile)."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        self.factor = _real("ConstantLR", "factor", factor, 0.0, 1.0)
        if factor == 0:
            raise ValueError("ConstantLR: factor=0 must be in (0, 1] (it is divided out after "
                             "total_iters steps)")
        self.total_iters = _int("ConstantLR", "total_iters", total_iters, 0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current()]
        if self.last_epoch != self.total_iters:
            return self._current()
        return [lr * (1.0 / self.factor) for lr in self._current()]

    def _closed_form(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [base * (self.factor + done * (1 - self.factor)) for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the rate as ``initial_lr * (1 - t / total_iters) ** power`` (computed step to
    step, as torch), reaching 0 at ``total_iters`` and staying there."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = _int("PolynomialLR", "total_iters", total_iters, 0)
        self.power = _real("PolynomialLR", "power", power, 0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, n = self.last_epoch, self.total_iters
        if self._is_initial or t > n:
            return self._current()
        factor = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * factor for lr in self._current()]

    def _closed_form(self) -> list[float]:
        n = self.total_iters
        if n == 0:
            return list(self.base_lrs)
        return [base * (1.0 - min(n, self.last_epoch) / n) ** self.power
                for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter): cosine annealing from the initial rate to ``eta_min``
    over ``T_i`` steps, then a restart; the first period is ``T_0`` steps and each next
    one ``T_mult`` times longer.  ``lr = eta_min + (base - eta_min) (1 + cos(pi T_cur /
    T_i)) / 2``.

    ``step()`` advances one step; ``step(epoch)`` jumps to ``epoch``, which may be
    fractional (``epoch + i / iters`` per batch), as torch's.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        fn = "CosineAnnealingWarmRestarts"
        self.T_0 = _int(fn, "T_0", T_0, 1)
        self.T_i = self.T_0
        self.T_mult = _int(fn, "T_mult", T_mult, 1)
        self.eta_min = _real(fn, "eta_min", eta_min, None)
        self.T_cur: float = _int(fn, "last_epoch", last_epoch, -1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        low = self.eta_min
        return [low + (base - low) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:  # type: ignore[override]
        """One step, or, given ``epoch`` (a number >= 0, fractional allowed), the rates of
        that point of the schedule."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            _real("CosineAnnealingWarmRestarts.step", "epoch", epoch, 0.0)  # ints stay ints
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self._step_count += 1
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())

    def _restart(self) -> None:
        self.step(0)


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017): the rate rises from ``base_lr`` to ``max_lr``
    over ``step_size_up`` steps and falls back over ``step_size_down`` (default the same),
    the amplitude scaled by ``scale_fn`` (or by ``mode``: ``"triangular"`` keeps it,
    ``"triangular2"`` halves it every cycle, ``"exp_range"`` multiplies it by ``gamma``
    every step); ``scale_mode`` says whether ``scale_fn`` takes the cycle number or the
    step.  With ``cycle_momentum`` the momentum (or Adam's ``beta1``) cycles the opposite
    way between ``max_momentum`` and ``base_momentum``.  Call ``step()`` once per batch.

    ``state_dict`` keeps the attributes of a callable-object ``scale_fn`` (a plain
    function is saved as ``None``), as torch does.
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: float = 2000,
                 step_size_down: float | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.8,
                 max_momentum: float | list[float] = 0.9, last_epoch: int = -1) -> None:
        fn = "CyclicLR"
        _optimizer(fn, optimizer)
        base_lrs = [_real(fn, "base_lr", v, 0.0)
                    for v in _per_group(fn, "base_lr", base_lr, optimizer)]
        self.max_lrs = [_real(fn, "max_lr", v, 0.0)
                        for v in _per_group(fn, "max_lr", max_lr, optimizer)]
        up = _real(fn, "step_size_up", step_size_up, 0.0)
        down = up if step_size_down is None else _real(fn, "step_size_down", step_size_down,
                                                       0.0)
        if up + down == 0:
            raise ValueError(f"{fn}: step_size_up={step_size_up!r} and step_size_down="
                             f"{step_size_down!r} make an empty cycle")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise ValueError(f"{fn}: mode={mode!r} must be 'triangular', 'triangular2' or "
                             "'exp_range' (or give scale_fn)")
        if scale_fn is not None and not callable(scale_fn):
            raise TypeError(f"{fn}: scale_fn={scale_fn!r} must be callable or None")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"{fn}: scale_mode={scale_mode!r} must be 'cycle' or 'iterations'")
        if not isinstance(cycle_momentum, bool):
            raise TypeError(f"{fn}: cycle_momentum={cycle_momentum!r} must be a bool")
        self.mode = mode
        self.gamma = _real(fn, "gamma", gamma, None)
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        if scale_fn is None:  # the built-in policies fix their own scale_mode
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"{fn}: cycle_momentum=True needs an optimiser with momentum "
                                 f"or betas; {type(optimizer).__name__} has neither")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = [_real(fn, "base_momentum", v, None) for v in
                                   _per_group(fn, "base_momentum", base_momentum, optimizer)]
            self.max_momentums = [_real(fn, "max_momentum", v, None) for v in
                                  _per_group(fn, "max_momentum", max_momentum, optimizer)]
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
            if cycle_momentum:
                for high, low, group in zip(self.max_momentums, self.base_momentums,
                                            optimizer.param_groups):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    _transient = ("optimizer", "_scale_fn_custom")

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or step) ``x``: ``scale_fn``'s, or the mode's."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        t = self.last_epoch
        cycle = math.floor(1 + t / self.total_size)
        x = 1.0 + t / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        x_scale = cycle if self.scale_mode == "cycle" else t
        # scale_fn is called once per group and value, as torch calls it
        lrs = [base + (high - base) * scale_factor * self.scale_fn(x_scale)
               for base, high in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums,
                                        self.max_momentums):
                self._set_momentum(group, high - (high - low) * scale_factor
                                   * self.scale_fn(x_scale))
        return lrs

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["_scale_fn_custom"] = (None if self._scale_fn_custom is None
                                     else _save_callables([self._scale_fn_custom])[0])
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("_scale_fn_custom", None)
        if saved is not None:
            if self._scale_fn_custom is None:
                raise ValueError("CyclicLR.load_state_dict: the state dict holds a scale_fn's "
                                 "attributes, but this scheduler has no scale_fn")
            _load_callables("CyclicLR.load_state_dict", [self._scale_fn_custom], [saved])
        super().load_state_dict(state)


class ChainedScheduler(_HoldsSchedulers, LRScheduler):
    """Step several schedulers of one optimiser together: each ``step()`` steps every one
    of ``schedulers`` in order, so their (chainable) changes compose."""

    def __init__(self, schedulers: list[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        fn = "ChainedScheduler"
        if not isinstance(schedulers, list | tuple) or not schedulers:
            raise ValueError(f"{fn}: schedulers must be a non-empty list of schedulers, got "
                             f"{schedulers!r}")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{fn}: schedulers[{i}] is a ReduceLROnPlateau, which steps on "
                                 "a metric and cannot be chained")
            if not isinstance(s, LRScheduler):
                raise TypeError(f"{fn}: schedulers[{i}] is a {type(s).__name__}, expected a "
                                "scheduler")
        optimizer = schedulers[0].optimizer if optimizer is None else _optimizer(fn, optimizer)
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(f"{fn}: schedulers[{i}] ({type(s).__name__}) adjusts another "
                                 "optimiser than the others")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._current()

    def step(self) -> None:
        for s in self._schedulers:
            s.step()
        self._last_lr = self._current()

    def _undo_step(self) -> None:
        for s in self._schedulers:
            s._undo_step()

    def _restart(self) -> None:
        for s in self._schedulers:
            s._restart()
        self._last_lr = self._current()

    def __repr__(self) -> str:
        return f"ChainedScheduler({self._schedulers}, lr={self._last_lr})"
