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
    "constant_",
    "default_generator",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "manual_seed",
    "normal_",
    "ones_",
    "orthogonal_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
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
    if nonlinearity == "selu":
        return 3.0 / 4
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


def _gen(fn: str, rng: Any, generator: Any) -> np.random.Generator:
    """torch's ``generator=`` or this module's ``rng=`` (one of them)."""
    if rng is not None and generator is not None:
        raise ValueError(f"{fn}: got rng={rng!r} and generator={generator!r}; pass one")
    return _generator(generator if rng is None else rng, fn)


def uniform_(t: Any, a: float = 0.0, b: float = 1.0, rng: Any = None, *,
             generator: Any = None) -> Any:
    """Fill ``t`` in place with samples of U(a, b); returns ``t``."""
    arr = _array(t, "uniform_")
    if not a <= b:
        raise ValueError(f"uniform_: a={a} must be <= b={b}")
    arr[...] = _gen("uniform_", rng, generator).uniform(a, b, size=arr.shape)
    return t


def normal_(t: Any, mean: float = 0.0, std: float = 1.0, rng: Any = None, *,
            generator: Any = None) -> Any:
    """Fill ``t`` in place with samples of N(mean, std^2); returns ``t``."""
    arr = _array(t, "normal_")
    if not std >= 0:
        raise ValueError(f"normal_: std={std} must be >= 0")
    arr[...] = _gen("normal_", rng, generator).normal(mean, std, size=arr.shape)
    return t


def trunc_normal_(t: Any, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, rng: Any = None, *, generator: Any = None) -> Any:
    """N(mean, std^2) truncated to [a, b] (redrawn until inside, so exactly that law)."""
    arr = _array(t, "trunc_normal_")
    if not a < b or not std > 0:
        raise ValueError(f"trunc_normal_: need a={a} < b={b} and std={std} > 0")
    g = _gen("trunc_normal_", rng, generator)
    out = g.normal(mean, std, size=arr.shape)
    bad = (out < a) | (out > b)
    while bad.any():  # rejection sampling (the cut mass of a sensible [a, b] is small)
        out[bad] = g.normal(mean, std, size=int(bad.sum()))
        bad = (out < a) | (out > b)
    arr[...] = out
    return t


def constant_(t: Any, val: float) -> Any:
    _array(t, "constant_")[...] = val
    return t


def eye_(t: Any) -> Any:
    """The identity matrix in a 2-D ``t``."""
    arr = _array(t, "eye_")
    if arr.ndim != 2:
        raise ValueError(f"eye_: the tensor has {arr.ndim} dims; expected 2")
    arr[...] = np.eye(*arr.shape, dtype=arr.dtype)
    return t


def dirac_(t: Any, groups: int = 1) -> Any:
    """A convolution weight (3-5 dims) that passes each input channel to its output
    channel unchanged (per group), as torch's ``dirac_``."""
    arr = _array(t, "dirac_")
    if arr.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: the tensor has {arr.ndim} dims; expected 3, 4 or 5")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 \
            or arr.shape[0] % groups:
        raise ValueError(f"dirac_: groups={groups!r} must divide dim 0 ({arr.shape[0]})")
    out_per = arr.shape[0] // groups
    arr[...] = 0
    centre = tuple(k // 2 for k in arr.shape[2:])
    for g in range(groups):
        for d in range(min(out_per, arr.shape[1])):
            arr[(g * out_per + d, d) + centre] = 1
    return t


def _fans(arr: np.ndarray, fn: str) -> tuple[int, int]:
    if arr.ndim < 2:
        raise ValueError(f"{fn}: fan in and fan out need a tensor of >= 2 dims, got "
                         f"{arr.ndim}")
    return calculate_fan_in_and_fan_out(arr.shape)


def xavier_uniform_(t: Any, gain: float = 1.0, rng: Any = None, *, generator: Any = None
                    ) -> Any:
    """Glorot: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(_array(t, "xavier_uniform_"), "xavier_uniform_")
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -a, a, rng, generator=generator)


def xavier_normal_(t: Any, gain: float = 1.0, rng: Any = None, *, generator: Any = None
                   ) -> Any:
    """Glorot: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(_array(t, "xavier_normal_"), "xavier_normal_")
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), rng,
                   generator=generator)


def kaiming_normal_(t: Any, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", rng: Any = None, *,
                    generator: Any = None) -> Any:
    """He: N(0, std^2) with ``std = gain / sqrt(fan)``."""
    arr = _array(t, "kaiming_normal_")
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming_normal_: mode={mode!r} must be 'fan_in' or 'fan_out'")
    if 0 in arr.shape:
        return t
    fan_in, fan_out = _fans(arr, "kaiming_normal_")
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(t, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), rng,
                   generator=generator)


def orthogonal_(t: Any, gain: float = 1.0, rng: Any = None, *, generator: Any = None) -> Any:
    """A (semi-)orthogonal matrix (the Q of a QR of a normal draw, signs fixed by R's
    diagonal, as torch), times ``gain``; dims after the first are flattened."""
    arr = _array(t, "orthogonal_")
    if arr.ndim < 2:
        raise ValueError(f"orthogonal_: the tensor has {arr.ndim} dims; expected >= 2")
    if arr.size == 0:
        return t
    rows, cols = arr.shape[0], arr.size // arr.shape[0]
    flat = _gen("orthogonal_", rng, generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    arr[...] = (gain * q).reshape(arr.shape)
    return t


def zeros_(t: Any) -> Any:
    _array(t, "zeros_")[...] = 0
    return t


def ones_(t: Any) -> Any:
    _array(t, "ones_")[...] = 1
    return t


def kaiming_uniform_(t: Any, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", rng: Any = None, *,
                     generator: Any = None) -> Any:
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
    return uniform_(t, -bound, bound, rng, generator=generator)
