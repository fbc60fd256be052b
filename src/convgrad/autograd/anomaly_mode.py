"""Anomaly mode: ``detect_anomaly``, ``set_detect_anomaly`` and their flags, as torch's.

While the mode is on, ``Function.apply`` records in each new node where it was created
(``node.metadata["traceback_"]``, the formatted stack of the forward call, as torch), and
the engine, around each backward rule, checks its gradients for NaN (unless
``check_nan=False``: a RuntimeError naming the Function) and, when a rule fails, warns
with the traceback of the forward call that made the node.  The mode is process-wide (as
torch's, not per thread).  Off, it costs one flag check per node.
"""

from __future__ import annotations

import functools
import traceback
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "set_anomaly_enabled", "set_detect_anomaly"]

_ENABLED_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime "
                    "and should only be enabled for debugging.")


class _AnomalyMode:
    enabled = False
    check_nan = True


_mode = _AnomalyMode()  # read directly (one attribute) by Function.apply and the engine


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on."""
    return _mode.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode checks the gradients of each backward rule for NaN."""
    return _mode.check_nan


def _bool(fn: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{fn}: {name}={value!r} must be a bool")
    return value


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off (``check_nan``: whether backward checks for NaN)."""
    enabled = _bool("set_anomaly_enabled", "enabled", enabled)
    _mode.check_nan = _bool("set_anomaly_enabled", "check_nan", check_nan)
    _mode.enabled = enabled


class detect_anomaly:
    """``with detect_anomaly():`` (or ``@detect_anomaly()``): anomaly mode inside.

    Warns once on entry that the mode is slow (as torch); restores the previous mode on
    exit.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = _bool("detect_anomaly", "check_nan", check_nan)
        self._saved: list[tuple[bool, bool]] = []
        warnings.warn(_ENABLED_WARNING, UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._saved.append((_mode.enabled, _mode.check_nan))
        _mode.enabled, _mode.check_nan = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        _mode.enabled, _mode.check_nan = self._saved.pop()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Set anomaly mode at once (``mode``, ``check_nan``); as a context manager it restores
    the previous mode on exit, as torch's."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        mode = _bool("set_detect_anomaly", "mode", mode)
        check_nan = _bool("set_detect_anomaly", "check_nan", check_nan)
        self._saved = (_mode.enabled, _mode.check_nan)
        _mode.enabled, _mode.check_nan = mode, check_nan

    def __enter__(self) -> None:  # the mode was set by __init__
        pass

    def __exit__(self, *exc: object) -> None:
        _mode.enabled, _mode.check_nan = self._saved


def forward_stack() -> list[str]:
    """The formatted stack of the caller of ``Function.apply`` (apply's own frame off)."""
    return traceback.format_stack()[:-2]


def check_rule(name: str, grads: tuple, isnan: Callable[[Any], bool]) -> None:
    """Raise if one of a backward rule's gradients holds NaN (torch's message)."""
    if not _mode.check_nan:
        return
    for i, g in enumerate(grads):
        if g is not None and isnan(g):
            raise RuntimeError(f"Function '{name}' returned nan values in its {i}th output.")


def warn_forward_trace(name: str, node: Any) -> None:
    """Warn with the traceback of the forward call that recorded ``node`` (a rule failed)."""
    stack = node.__dict__.get("metadata", {}).get("traceback_")
    if stack is None:
        text = ("No forward pass information available. Enable detect anomaly during "
                "forward pass for more information.")
    else:
        text = "Traceback of forward call that caused the error:\n" + "".join(stack)
    warnings.warn(f"Error detected in {name}. {text}", UserWarning, stacklevel=4)
