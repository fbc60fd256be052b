"""PyTorch's default initialisation, on NumPy generators.

Layers draw their initial weights from ``rng`` when given (a ``numpy.random.Generator``
or an int seed), otherwise from the library-wide generator of ``convgrad.random``,
which :func:`manual_seed` (``cg.manual_seed``) reseeds.  The in-place
functions accept a ``Tensor`` (its ``.data`` is filled) or an ndarray.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..random import default_generator, manual_seed
from ..random import generator as _generator
from ..tensor import Tensor

__all__ = [
    "calculate_fan_in_and_fan_out",
    "calculate_gain",
    "default_generator",
    "kaiming_uniform_",
    "manual_seed",
    "ones_",
    "uniform_",
    "zeros_",
]


def _array(t: Any, fn: str) -> np.ndarray:
    arr = t.data if isinstance(t, Tensor) else t
    if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
        raise TypeError(f"{fn}: expected a Tensor or a float ndarray, got {type(t).__name__}")
    return arr


def calculate_fan_in_and_fan_out(shape: tuple[int, ...]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of ``shape``, as ``torch.nn.init`` computes them.

    ``fan_in = shape[1] * prod(shape[2:])`` and ``fan_out = shape[0] * prod(shape[2:])``;
    for a transposed convolution's weight ``(C_in, C_out / groups, *K)`` this makes
    ``fan_in = C_out / groups * prod(K)``, exactly as PyTorch does.
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        raise ValueError(f"calculate_fan_in_and_fan_out: shape={shape} needs at least 2 dims")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain of ``torch.nn.init.calculate_gain``."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, int | float):
            raise ValueError(f"calculate_gain: negative_slope={slope!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"calculate_gain: unsupported nonlinearity={nonlinearity!r}")


def uniform_(t: Any, a: float = 0.0, b: float = 1.0, rng: Any = None) -> Any:
    """Fill ``t`` in place with samples of U(a, b); returns ``t``."""
    arr = _array(t, "uniform_")
    if not a <= b:
        raise ValueError(f"uniform_: a={a} must be <= b={b}")
    arr[...] = _generator(rng, "uniform_").uniform(a, b, size=arr.shape)
    return t


def zeros_(t: Any) -> Any:
    _array(t, "zeros_")[...] = 0
    return t


def ones_(t: Any) -> Any:
    _array(t, "ones_")[...] = 1
    return t


def kaiming_uniform_(t: Any, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", rng: Any = None) -> Any:
    """He initialisation: U(-bound, bound), ``bound = gain * sqrt(3 / fan)``.

    With ``a = sqrt(5)`` (PyTorch's layer default) the bound is ``1 / sqrt(fan_in)``.
    """
    arr = _array(t, "kaiming_uniform_")
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming_uniform_: mode={mode!r} must be 'fan_in' or 'fan_out'")
    if 0 in arr.shape:  # nothing to fill (torch warns and returns)
        return t
    fan_in, fan_out = calculate_fan_in_and_fan_out(arr.shape)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(t, -bound, bound, rng)
