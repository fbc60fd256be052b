"""Dropout: ``dropout`` (elementwise) and ``dropout1d/2d/3d`` (whole channels);
``alpha_dropout`` and ``feature_alpha_dropout``, SELU's (dropped values set to SELU's
negative saturation, then an affine map that keeps the mean and variance).

In training each element (or channel) is zeroed with probability ``p`` and the survivors
are scaled by ``1 / (1 - p)``, so the expectation is unchanged; otherwise the input comes
back as it is.  The mask is a constant drawn from the library's generator (seeded by
``manual_seed``), so the gradient is the mask times the output's gradient.
"""

from __future__ import annotations

import warnings
from numbers import Real
from typing import Any

import numpy as np

from ..tensor import Tensor, as_tensor

__all__ = ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d",
           "feature_alpha_dropout"]


def _probability(fn: str, p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{fn}: p={p!r} is a dropout probability; expected 0 <= p <= 1")
    return float(p)


def _masked(x: Tensor, p: float, mask_shape: tuple) -> Tensor:
    """``x`` times a scaled Bernoulli(1 - p) mask of ``mask_shape`` (broadcast over x)."""
    from ..nn.init import default_generator  # (nn imports functional: resolved at call time)

    if p == 1.0:
        return x * np.zeros(mask_shape, x.dtype)
    keep = default_generator().random(mask_shape) >= p
    return x * (keep * (1.0 / (1.0 - p))).astype(x.dtype)


def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` in training, scaling the rest by 1/(1-p).

    ``inplace`` is accepted for compatibility; the result is always a new Tensor.
    """
    p = _probability("dropout", p)
    x = as_tensor(input)
    if not training or p == 0.0:
        return x
    return _masked(x, p, x.shape)


def _feature_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Drop whole channels: one mask entry per (sample, channel), i.e. per dims 0 and 1."""
    if not training or p == 0.0:
        return x
    return _masked(x, p, x.shape[:2] + (1,) * (x.ndim - 2))


def dropout1d(input: Any, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` or unbatched ``(C, L)`` input."""
    fn = "dropout1d"
    p = _probability(fn, p)
    x = as_tensor(input)
    if x.ndim not in (2, 3):
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, L) or (C, L)")
    if x.ndim == 2:
        return _feature_dropout(x.unsqueeze(0), p, training).squeeze(0)
    return _feature_dropout(x, p, training)


def dropout2d(input: Any, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` input.

    As torch (for now): a 3-D input is read as ``(N, C, L)``, with a warning.
    """
    fn = "dropout2d"
    p = _probability(fn, p)
    x = as_tensor(input)
    if x.ndim not in (3, 4):
        warnings.warn(f"{fn}: input of shape {x.shape} has {x.ndim} dims; channel-wise "
                      "dropout expects (N, C, H, W) (use dropout for other shapes)",
                      stacklevel=2)
    if x.ndim == 3:
        warnings.warn(f"{fn}: a 3-D input of shape {x.shape} is read as (N, C, L) and its "
                      "channels are dropped (use dropout1d for that)", stacklevel=2)
    return _feature_dropout(x, p, training)


def dropout3d(input: Any, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` input."""
    fn = "dropout3d"
    p = _probability(fn, p)
    x = as_tensor(input)
    if x.ndim not in (4, 5):
        warnings.warn(f"{fn}: input of shape {x.shape} has {x.ndim} dims; channel-wise "
                      "dropout expects (N, C, D, H, W) or (C, D, H, W)", stacklevel=2)
    if x.ndim != 5:
        return _feature_dropout(x.unsqueeze(0), p, training).squeeze(0)
    return _feature_dropout(x, p, training)


#: SELU's negative saturation, -scale * alpha (torch's alpha dropout constant)
ALPHA_PRIME = -1.7580993408473766


def _alpha_masked(x: Tensor, p: float, mask_shape: tuple) -> Tensor:
    """``a (x m + alpha' (1 - m)) + b`` with a Bernoulli(1 - p) mask ``m`` of
    ``mask_shape``, ``a = ((1 - p)(1 + p alpha'^2))^-1/2`` and ``b = -a alpha' p`` (so a
    zero-mean, unit-variance input keeps both); the dropped elements become
    ``a alpha' + b``, as torch's."""
    from ..nn.init import default_generator  # (nn imports functional: resolved at call time)

    keep = default_generator().random(mask_shape) >= p
    a = ((1.0 - p) * (1.0 + p * ALPHA_PRIME ** 2)) ** -0.5
    b = -a * ALPHA_PRIME * p
    scale = (keep * a).astype(x.dtype)
    shift = ((~keep) * (a * ALPHA_PRIME) + b).astype(x.dtype)
    return x * scale + shift


def alpha_dropout(input: Any, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """SELU's dropout (torch's ``F.alpha_dropout``): in training each element is set
    to SELU's negative saturation with probability ``p``, then ``a x + b`` keeps the
    mean and variance; otherwise (and with ``p`` 0) the input as it is."""
    p = _probability("alpha_dropout", p)
    x = as_tensor(input)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * np.zeros((), x.dtype)
    return _alpha_masked(x, p, x.shape)


def feature_alpha_dropout(input: Any, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """:func:`alpha_dropout` of whole channels (one mask entry per (sample, channel))."""
    fn = "feature_alpha_dropout"
    p = _probability(fn, p)
    x = as_tensor(input)
    if x.ndim < 2:
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, *)")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * np.zeros((), x.dtype)
    return _alpha_masked(x, p, x.shape[:2] + (1,) * (x.ndim - 2))
