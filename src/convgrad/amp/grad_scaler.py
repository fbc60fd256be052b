"""``GradScaler``: torch's dynamic loss scaling (``scale``, ``unscale_``, ``step``,
``update``), with torch's numbers.

The loss is multiplied by a float32 scale before ``backward``; ``unscale_`` divides the
gradients of an optimiser's parameters by it in place (multiplying by the float32
reciprocal, as torch) and records whether any was inf or NaN; ``step`` then runs the
optimiser's step only if none was; ``update`` halves the scale after a skipped step
(``backoff_factor``) and doubles it after ``growth_interval`` clean steps in a row
(``growth_factor``).  In convgrad's float32 the scaling is not needed against underflow,
but it reproduces torch's run exactly: the same skipped steps, the same parameters.

As in torch, a scaler for a device other than the CPU (``GradScaler()``'s default
``'cuda'``) warns that the device is not available and disables itself: every method
then passes through (``scale`` returns the loss, ``step`` just steps).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from enum import Enum
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..devices import DEVICE_TYPES
from ..tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """``GradScaler(device='cuda', init_scale=2.**16, growth_factor=2., backoff_factor=.5,
    growth_interval=2000, enabled=True)``: torch's loss scaler.

    Use: ``scaler.scale(loss).backward()``, then ``scaler.step(optimizer)`` (skipped when a
    gradient is inf/NaN), then ``scaler.update()``; ``unscale_(optimizer)`` before
    gradient clipping.  Only ``device='cpu'`` scales: another device is not available
    here, so, as torch does without it, the scaler warns and is disabled.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        fn = "GradScaler"
        if not isinstance(device, str) or device.partition(":")[0] not in DEVICE_TYPES:
            raise ValueError(f"{fn}: device={device!r} must be a device type such as 'cpu' "
                             "or 'cuda'")
        if not isinstance(enabled, bool | np.bool_):
            raise TypeError(f"{fn}: enabled={enabled!r} must be a bool")
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device.partition(":")[0] != "cpu":
            warnings.warn(f"GradScaler: device={device!r} is not available (convgrad runs on "
                          "the CPU); the scaler is disabled, as torch's is without that "
                          "device (use GradScaler('cpu') to scale)", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            self._init_scale = _positive(fn, "init_scale", init_scale)
            self._growth_factor = _real(fn, "growth_factor", growth_factor)
            if not self._growth_factor > 1.0:
                raise ValueError(f"{fn}: growth_factor={growth_factor!r} must be > 1.0")
            self._backoff_factor = _real(fn, "backoff_factor", backoff_factor)
            if not self._backoff_factor < 1.0:
                raise ValueError(f"{fn}: backoff_factor={backoff_factor!r} must be < 1.0")
            self._growth_interval = _interval(fn, growth_interval)
            self._init_growth_tracker = 0
            self._scale: np.float32 | None = None   # made at the first scale()
            self._growth_tracker = 0
            self._per_optimizer: dict[int, dict[str, Any]] = {}

    # -- scaling
    def scale(self, outputs: Any) -> Any:
        """``outputs`` times the scale: a Tensor, or an iterable (list, tuple or other) of
        Tensors, nested; disabled, ``outputs`` unchanged."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = np.float32(self._init_scale)
        factor = float(self._scale)

        def apply(value: Any) -> Any:
            if isinstance(value, Tensor):
                return value * factor
            if isinstance(value, Iterable) and not isinstance(value, str | bytes):
                mapped = map(apply, value)
                return type(value)(mapped) if isinstance(value, list | tuple) else mapped
            raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of "
                             f"Tensors, got {type(value).__name__}")

        return apply(outputs)

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), _fresh())

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and
        record whether any is inf or NaN (once per optimiser between updates)."""
        if not self._enabled:
            return
        _check_optimizer("unscale_", optimizer)
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise RuntimeError("GradScaler.unscale_: no scale yet; call scale(loss) (and "
                               "backward) first")
        inv_scale = np.float32(1.0 / float(self._scale))  # torch: in double, then float32
        found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.data
                found = found or not bool(np.isfinite(g).all())
                factor = g.dtype.type(inv_scale)
                if isinstance(g, np.ndarray) and g.flags.writeable:
                    np.multiply(g, factor, out=g)
                else:
                    p.grad = Tensor._wrap(np.multiply(g, factor))
        state["found_inf"] = found
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)`` unless a gradient is inf or NaN (unscaling
        the gradients first if ``unscale_`` was not called); the step's return value, or
        None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        _check_optimizer("step", optimizer)
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale: Any = None) -> None:
        """Set the next scale: ``new_scale`` if given (a float or a 1-element Tensor), else
        backed off after an inf/NaN step, grown after ``growth_interval`` clean ones."""
        if not self._enabled:
            return
        if self._scale is None:
            raise RuntimeError("GradScaler.update: no scale yet; call scale(loss) first")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.data.size != 1 or new_scale.requires_grad:
                    raise ValueError("GradScaler.update: new_scale must be a float or a "
                                     "1-element Tensor with requires_grad=False")
                new_scale = new_scale.data.reshape(()).item()
            elif isinstance(new_scale, bool) or not isinstance(new_scale, Real):
                raise TypeError(f"GradScaler.update: new_scale={new_scale!r} must be a float "
                                "or a 1-element Tensor")
            self._scale = np.float32(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values()
                     if s["found_inf"] is not None]
            if not found:
                raise RuntimeError("No inf checks were recorded prior to update.")
            if any(found):
                self._scale = np.float32(float(self._scale) * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = np.float32(float(self._scale) * self._growth_factor)
                    if np.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer = {}

    # -- accessors
    def get_scale(self) -> float:
        """The current scale (``init_scale`` before the first ``scale``); 1.0 disabled."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = _real("set_growth_factor", "new_factor", new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = _real("set_backoff_factor", "new_factor", new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = _interval("set_growth_interval", new_interval)

    def _get_growth_tracker(self) -> int:
        return self._growth_tracker if self._enabled else 0

    def is_enabled(self) -> bool:
        return self._enabled

    # -- saving and resuming
    def state_dict(self) -> dict[str, Any]:
        """torch's keys: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker``; ``{}`` when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` (torch's or convgrad's)."""
        if not self._enabled:
            return
        fn = "GradScaler.load_state_dict"
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"{fn}: state_dict must be a mapping, got "
                            f"{type(state_dict).__name__}")
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was "
                               "saved from a disabled instance of GradScaler.")
        keys = ("scale", "growth_factor", "backoff_factor", "growth_interval",
                "_growth_tracker")
        missing = [k for k in keys if k not in state_dict]
        if missing:
            raise ValueError(f"{fn}: missing key(s) {missing}; expected {list(keys)}")
        self._init_scale = _positive(fn, "scale", float(state_dict["scale"]))
        self._growth_factor = _real(fn, "growth_factor", float(state_dict["growth_factor"]))
        self._backoff_factor = _real(fn, "backoff_factor", float(state_dict["backoff_factor"]))
        self._growth_interval = _interval(fn, int(state_dict["growth_interval"]))
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        self._scale = np.float32(self._init_scale)
        self._growth_tracker = self._init_growth_tracker

    def __repr__(self) -> str:
        return (f"GradScaler(device={self._device!r}, enabled={self._enabled}, "
                f"scale={self.get_scale()})")


def _real(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
        raise TypeError(f"{fn}: {name}={value!r} must be a finite number")
    return float(value)


def _positive(fn: str, name: str, value: Any) -> float:
    v = _real(fn, name, value)
    if v <= 0:
        raise ValueError(f"{fn}: {name}={value!r} must be > 0")
    return v


def _interval(fn: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{fn}: growth_interval={value!r} must be an int")
    if value <= 0:
        raise ValueError(f"{fn}: growth_interval={value!r} must be > 0")
    return int(value)


def _check_optimizer(fn: str, optimizer: Any) -> None:
    if not hasattr(optimizer, "param_groups") or not hasattr(optimizer, "step"):
        raise TypeError(f"GradScaler.{fn}: optimizer={type(optimizer).__name__} is not an "
                        "optimizer (it needs param_groups and step)")
