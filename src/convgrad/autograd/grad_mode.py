"""Grad mode: whether operations run now are recorded (per thread).

``no_grad``, ``enable_grad`` and ``set_grad_enabled`` are context managers and decorators,
as in torch.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled"]


class _GradMode(threading.local):
    enabled = True


_mode = _GradMode()


def is_grad_enabled() -> bool:
    """Whether operations run now are recorded for differentiation (per thread)."""
    return _mode.enabled


def set_mode(enabled: bool) -> None:
    """Set this thread's grad mode (the engine's switch; users call ``set_grad_enabled``)."""
    _mode.enabled = enabled


class _GradModeSwitch:
    """Base of the grad-mode context managers; each one also works as a decorator."""

    mode: bool

    def __init__(self) -> None:
        self._saved: list[bool] = []  # a stack, so one object can be re-entered

    def __enter__(self) -> None:
        self._saved.append(_mode.enabled)
        _mode.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _mode.enabled = self._saved.pop()

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with enable_grad() if mode else no_grad():  # fresh per call: thread-safe
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeSwitch):
    """``with no_grad():``, ``@no_grad()`` or ``@no_grad``: record nothing."""

    mode = False

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        return self if fn is None else self(fn)  # bare decorator: no_grad(fn)


class enable_grad(_GradModeSwitch):
    """``with enable_grad():``, ``@enable_grad()`` or ``@enable_grad``: record again."""

    mode = True

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        return self if fn is None else self(fn)


class set_grad_enabled(_GradModeSwitch):
    """Set grad mode at once, as torch does: a plain call, a context manager (restoring the
    previous mode on exit) or a decorator."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._saved = [_mode.enabled]
        _mode.enabled = self.mode

    def __enter__(self) -> None:  # the mode was set by __init__
        pass

    def __call__(self, fn: Callable) -> Callable:
        _mode.enabled = self._saved.pop()  # decorating must not change the mode now
        return super().__call__(fn)


class inference_mode(_GradModeSwitch):
    """``with inference_mode():``, ``@inference_mode()`` or ``@inference_mode``: torch's
    inference mode is ``no_grad`` here (nothing recorded; tensors made inside stay
    ordinary tensors); ``inference_mode(False)`` leaves the grad mode as it is."""

    def __new__(cls, mode: Any = True):
        self = super().__new__(cls)
        if callable(mode):  # bare decorator: inference_mode(fn)
            self.__init__(True)
            return self(mode)
        return self

    def __init__(self, mode: Any = True) -> None:
        super().__init__()
        self._disable = bool(mode) if not callable(mode) else True

    def __enter__(self) -> None:
        self._saved.append(_mode.enabled)
        if self._disable:
            _mode.enabled = False

    def __call__(self, fn: Callable) -> Callable:
        disable = self._disable

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(disable):
                return fn(*args, **kwargs)

        return wrapper
