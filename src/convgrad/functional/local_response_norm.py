"""``local_response_norm``: each channel divided by a power of the mean square of its
``size`` neighbouring channels (AlexNet's normalisation), made of differentiable Tensor
operations."""

from __future__ import annotations

from numbers import Integral
from typing import Any

from ..tensor import Tensor, as_tensor
from ..tensor.args import number as _real
from ..tensor.operands import widened
from .padding import pad

__all__ = ["local_response_norm"]


def local_response_norm(input: Any, size: int, alpha: float = 1e-4,  # noqa: A002
                        beta: float = 0.75, k: float = 1.0) -> Tensor:
    """``x / (k + alpha * mean(x^2 over the size channels around c)) ** beta`` per channel
    ``c`` of (N, C, *) input, the window centred (``size // 2`` channels before, the rest
    after, zeros past the ends) and the mean always over ``size`` terms, as torch's;
    float32 input evaluated in float64."""
    fn = "local_response_norm"
    if isinstance(size, bool) or not isinstance(size, Integral) or size < 1:
        raise ValueError(f"{fn}: size={size!r} must be a positive int")
    alpha, beta, k = (_real(fn, "alpha", alpha), _real(fn, "beta", beta), _real(fn, "k", k))
    x = as_tensor(input)._floating()
    if x.ndim < 3:
        raise ValueError(f"{fn}: input of shape {x.shape} must be (N, C, *) with at least "
                         "one spatial dim")
    # float64, rounded once: in float32 the window's sum and the power put up to 2.3x
    # torch's error into a 9-channel window
    (x,), single = widened(x)
    c = x.shape[1]
    sq = (x * x).movedim(1, -1)  # the channels last: pad them as the last dim
    sq = pad(sq, (int(size) // 2, (int(size) - 1) // 2))
    total = sq[..., 0:c]
    for j in range(1, int(size)):
        total = total + sq[..., j:j + c]
    div = (total.movedim(-1, 1) * (alpha / size) + k) ** beta
    out = x / div
    return out.float() if single else out
