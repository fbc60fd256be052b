"""The device-specific aliases ``convgrad.cuda.amp`` and ``convgrad.cpu.amp`` (torch's
``torch.cuda.amp.autocast(...)`` and the like): each warns, as torch does, that it is
deprecated in favour of ``convgrad.amp.<name>(device_type, ...)``, then makes that."""

from __future__ import annotations

import warnings
from typing import Any

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast_for", "grad_scaler_for"]


def _deprecated(device: str, name: str) -> None:
    warnings.warn(f"`convgrad.{device}.amp.{name}(args...)` is deprecated (as in torch). "
                  f"Please use `convgrad.amp.{name}('{device}', args...)` instead.",
                  FutureWarning, stacklevel=3)


def autocast_for(device: str, default_dtype: str) -> type:
    """The ``autocast`` class of ``convgrad.<device>.amp``: torch's signature
    ``autocast(enabled=True, dtype=<device default>, cache_enabled=True)``."""

    class autocast(_autocast):  # noqa: N801 (torch's name)
        __doc__ = (f"``convgrad.{device}.amp.autocast(enabled=True, dtype={default_dtype}, "
                   f"cache_enabled=True)``: ``convgrad.amp.autocast('{device}', ...)``.")

        def __init__(self, enabled: bool = True, dtype: Any = default_dtype,
                     cache_enabled: bool = True) -> None:
            _deprecated(device, "autocast")
            super().__init__(device, dtype=dtype, enabled=enabled,
                             cache_enabled=cache_enabled)

    autocast.__module__, autocast.__qualname__ = f"convgrad.{device}.amp", "autocast"
    return autocast


def grad_scaler_for(device: str) -> type:
    """The ``GradScaler`` class of ``convgrad.<device>.amp`` (torch's signature, no
    ``device`` argument)."""

    class GradScaler(_GradScaler):
        __doc__ = (f"``convgrad.{device}.amp.GradScaler(init_scale=2.**16, ...)``: "
                   f"``convgrad.amp.GradScaler('{device}', ...)``.")

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            _deprecated(device, "GradScaler")
            super().__init__(device, init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled)

    GradScaler.__module__, GradScaler.__qualname__ = f"convgrad.{device}.amp", "GradScaler"
    return GradScaler
