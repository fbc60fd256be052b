"""torch's window functions (for spectral analysis): ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window``.

Each takes ``window_length`` and ``periodic`` (True by default, as torch: the window of
length ``window_length + 1`` without its last value, for use with an FFT), and torch's
``dtype`` (a float dtype; by default the default float dtype), ``device`` and
``requires_grad``.  The values are computed in float64 (in the order of torch's float64
computation) and then rounded to ``dtype``.  A length of 1 gives ``[1.]``, a length of 0
an empty Tensor.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from .. import devices as _device
from ..autograd import tensor_type
from ..default_dtype import get_default_dtype
from .args import check_dtype

Tensor = Any  # annotations: the registered Tensor class

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
           "kaiser_window"]


def _window(fn: str, window_length: Any, periodic: Any, dtype: Any, device: Any,
            requires_grad: bool, shape: Any) -> Tensor:
    """``shape(n, N)``: the window's values at ``n = 0 .. window_length - 1`` for a
    symmetric window of ``N`` points (float64), as a Tensor."""
    if isinstance(window_length, bool) or not isinstance(window_length, Integral):
        raise TypeError(f"{fn}: window_length={window_length!r} must be an int")
    if window_length < 0:
        raise ValueError(f"{fn}: window_length={window_length} must be >= 0")
    if not isinstance(periodic, bool | np.bool_):
        raise TypeError(f"{fn}: periodic={periodic!r} must be a bool")
    dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
    _device.check_device(fn, device)
    length = int(window_length)
    if length <= 1:
        values = np.ones(length)
    else:
        n_points = length + 1 if periodic else length
        values = shape(np.arange(length, dtype=np.float64), n_points)
    t = tensor_type()._wrap(np.asarray(values, np.float64).astype(dt))
    return t.requires_grad_(True) if requires_grad else t


def _cosine(alpha: float, beta: float) -> Any:
    def shape(n: np.ndarray, big_n: int) -> np.ndarray:
        return alpha - beta * np.cos(n * (2 * np.pi / (big_n - 1)))
    return shape


def _number(fn: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{fn}: {name}={value!r} must be a number")
    return float(value)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                device: Any = None, requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine(0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2 pi n / (N - 1))``."""
    a = _number("hamming_window", "alpha", alpha)
    b = _number("hamming_window", "beta", beta)
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine(a, b))


def _blackman(n: np.ndarray, big_n: int) -> np.ndarray:
    x = n * (np.pi / (big_n - 1))
    return 0.08 * np.cos(4 * x) - 0.5 * np.cos(2 * x) + 0.42


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _blackman)


def _bartlett(n: np.ndarray, big_n: int) -> np.ndarray:
    x = n * (2.0 / (big_n - 1))
    return np.where(n <= (big_n - 1) / 2, x, 2.0 - x)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """The triangle ``1 - |2 n / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   _bartlett)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, device: Any = None, requires_grad: bool = False
                  ) -> Tensor:
    """``I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)`` with ``a = (N - 1) / 2`` (I0
    the modified Bessel function of order 0)."""
    b = _number("kaiser_window", "beta", beta)
    if b < 0:
        raise ValueError(f"kaiser_window: beta={beta!r} must be >= 0")

    def shape(n: np.ndarray, big_n: int) -> np.ndarray:
        a = (big_n - 1) / 2
        return np.i0(b * np.sqrt(np.abs(1 - ((n - a) / a) ** 2))) / np.i0(b)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   shape)
