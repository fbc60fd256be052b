"""``autocast``: torch's mixed-precision context manager and decorator, as an honest no-op.

convgrad computes in float32 (or float64): it has no float16 or bfloat16 tensors.  A
script's ``with autocast("cuda"):`` / ``@autocast("cpu", dtype=torch.bfloat16)`` therefore
runs its region in the dtypes of its tensors, float32 for a float32 model: the results are
*more* accurate than torch's autocast gives, never silently lower.  The first time a
lower-precision region is entered, a ``UserWarning`` says so (once per process).
``enabled=False`` and ``dtype=float32`` are silent no-ops; another dtype (float64, an
integer type) disables the region with a warning, as torch's CPU autocast does.
"""

from __future__ import annotations

import functools
import warnings
from numbers import Integral
from typing import Any

import numpy as np

from ..devices import DEVICE_TYPES

__all__ = ["autocast", "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled"]

# torch's lower-precision default per device type
_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "mps": "float16", "xpu": "float16"}
_LOW = ("float16", "bfloat16")
_warned = [False]
_stack: list[tuple[str, str, bool]] = []  # (device type, dtype name, enabled) of open regions

FLOAT32_NOTE = ("convgrad has no float16/bfloat16 tensors: this autocast region computes in "
                "float32 (results are more accurate than torch's autocast, never lower); "
                "this warning is shown once")


def _flag(fn: str, name: str, value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, Integral) and value in (0, 1):  # torch accepts enabled=1
        return bool(value)
    raise TypeError(f"{fn}: {name}={value!r} must be a bool")


def _device_type(fn: str, device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"{fn}: device_type={device_type!r} must be a str such as 'cpu' or "
                        "'cuda'")
    if device_type not in DEVICE_TYPES:
        raise ValueError(f"{fn}: device_type={device_type!r} is not a device type; expected "
                         "'cpu', 'cuda', ...")
    return device_type


def dtype_name(fn: str, dtype: Any) -> str:
    """The name of a floating dtype: a NumPy/convgrad dtype, a torch dtype or a str
    (``"float16"``, ``"torch.bfloat16"``); a TypeError for anything else."""
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.")
    elif type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        name = str(dtype).removeprefix("torch.")
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            raise TypeError(f"{fn}: dtype={dtype!r} is not a dtype (expected e.g. "
                            "convgrad.float16 or 'bfloat16')") from None
    aliases = {"half": "float16", "float": "float32", "double": "float64"}
    return aliases.get(name, name)


class autocast:  # noqa: N801 (torch's name)
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context
    manager or decorator for a mixed-precision region.

    convgrad keeps every tensor's dtype inside the region (float32 stays float32); with a
    lower-precision ``dtype`` (float16, bfloat16, or ``None``: torch's default for the
    device) it warns once that the region computes in float32.  ``enabled=False`` does
    nothing.  ``cache_enabled`` is accepted (None or a bool) and has nothing to cache.
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        fn = "autocast"
        self.device = _device_type(fn, device_type)
        self._enabled = _flag(fn, "enabled", enabled)
        if cache_enabled is not None:
            _flag(fn, "cache_enabled", cache_enabled)
        self.fast_dtype = (_DEFAULT_DTYPE.get(self.device, "float16") if dtype is None
                           else dtype_name(fn, dtype))
        if self._enabled and self.fast_dtype not in (*_LOW, "float32"):
            warnings.warn(f"autocast: dtype={self.fast_dtype} is not a lower-precision float "
                          "type (expected float16 or bfloat16); autocast is disabled, as in "
                          "torch", UserWarning, stacklevel=2)
            self._enabled = False

    def __enter__(self) -> autocast:
        if self._enabled and self.fast_dtype in _LOW and not _warned[0]:
            _warned[0] = True
            warnings.warn(FLOAT32_NOTE, UserWarning, stacklevel=2)
        _stack.append((self.device, self.fast_dtype, self._enabled))
        return self

    def __exit__(self, *exc: Any) -> None:
        _stack.pop()

    def __call__(self, func: Any) -> Any:
        if not callable(func):
            raise TypeError(f"autocast: used as a decorator, it needs a function, got "
                            f"{type(func).__name__}")

        @functools.wraps(func)
        def decorated(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.fast_dtype, self._enabled):
                return func(*args, **kwargs)

        return decorated

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast(device_type)`` is accepted (every device type: it is a no-op)."""
    return _device_type("is_autocast_available", device_type) in DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an enabled autocast region for ``device_type`` (default ``'cuda'``, as
    torch) is open.  Inside it, computation still runs in float32."""
    dev = "cuda" if device_type is None else _device_type("is_autocast_enabled", device_type)
    return any(d == dev and on for d, _, on in _stack)


def get_autocast_dtype(device_type: str) -> str:
    """The lower-precision dtype name the innermost region for ``device_type`` asked for
    (torch's default when none is open); convgrad computes in float32 regardless."""
    dev = _device_type("get_autocast_dtype", device_type)
    for d, name, _ in reversed(_stack):
        if d == dev:
            return name
    return _DEFAULT_DTYPE.get(dev, "float16")
