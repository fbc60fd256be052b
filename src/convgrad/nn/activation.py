"""Activation layers (arguments and ``repr`` as ``torch.nn``): smooth ones, ``GELU``,
``SiLU``, ``ELU``, ``Softplus``, ``SELU``, ``CELU``, ``Softsign``, ``Tanhshrink``,
``LogSigmoid``, ``GLU``; piecewise ones, ``Hardtanh``, ``ReLU6``, ``Hardswish``, ``Mish``,
``PReLU``, ``Hardsigmoid``, ``Threshold``, ``Hardshrink``, ``Softshrink``; and along a dim,
``Softmax``, ``Softmin``, ``LogSoftmax``, ``Softmax2d``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional import activation as Fa
from ..functional import piecewise_activation as Fp
from ..functional import smooth_activation as Fs
from ..tensor import Tensor, as_tensor
from ..tensor.args import check_dtype
from .module import Module, Parameter

__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
           "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU6", "RReLU", "SELU", "SiLU", "Softmax",
           "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanhshrink",
           "Threshold"]


class GELU(Module):
    """``x Phi(x)`` (``approximate="tanh"``: the tanh approximation)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in Fs._GELU_APPROXIMATIONS:
            raise ValueError(f"GELU: approximate={approximate!r} must be one of "
                             f"{Fs._GELU_APPROXIMATIONS}")
        self.approximate = approximate

    def forward(self, input: Any) -> Tensor:
        return Fs.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x sigmoid(x)``.  ``inplace`` is accepted; the result is a new Tensor."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Any) -> Tensor:
        return Fs.silu(input)

    activation_of = forward  # see convgrad.nn.fusion

    def fused_activation(self) -> str:
        return "silu"

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """``x`` where positive, else ``alpha (e^x - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        Fs._real("ELU", "alpha", alpha)
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Any) -> Tensor:
        return Fs.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + e^(beta x)) / beta`` (linear where ``beta x > threshold``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        Fs._real("Softplus", "beta", beta)
        Fs._real("Softplus", "threshold", threshold)
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Any) -> Tensor:
        return Fs.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim``.  ``dim=None`` picks torch's legacy default
    (0 for 0-, 1- and 3-d input, else 1) with a warning."""

    _along = staticmethod(Fa.softmax)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Any) -> Tensor:
        x = as_tensor(input)
        dim = self.dim
        if dim is None:
            warnings.warn(f"{type(self).__name__}: dim=None picks a dim from the input's "
                          "rank; pass dim", stacklevel=2)
            dim = 0 if x.ndim in (0, 1, 3) else 1
        return self._along(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Softmax):
    """``softmax(-x)`` along ``dim`` (``dim=None`` as :class:`Softmax`)."""

    _along = staticmethod(Fa.softmin)


class LogSoftmax(Softmax):
    """``x - logsumexp(x)`` along ``dim`` (``dim=None`` as :class:`Softmax`)."""

    _along = staticmethod(Fa.log_softmax)


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    def forward(self, input: Any) -> Tensor:
        x = as_tensor(input)
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: input of shape {x.shape} must be (N, C, H, W) or "
                             "(C, H, W)")
        return Fa.softmax(x, -3)


class _Elementwise(Module):
    """An activation with no arguments: ``forward`` is the functional form ``_fn``."""

    _fn: Any = None

    def forward(self, input: Any) -> Tensor:
        return type(self)._fn(input)


class Softsign(_Elementwise):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(Fs.softsign)


class Tanhshrink(_Elementwise):
    """``x - tanh(x)``."""

    _fn = staticmethod(Fs.tanhshrink)


class LogSigmoid(_Elementwise):
    """``log(sigmoid(x))``, without overflow."""

    _fn = staticmethod(Fs.logsigmoid)


class _InPlaceFlag(_Elementwise):
    """An activation with torch's ``inplace`` flag (accepted; the result is new)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SELU(_InPlaceFlag):
    """``scale * elu(x, alpha)`` with SELU's constants."""

    _fn = staticmethod(Fs.selu)


class Hardsigmoid(_InPlaceFlag):
    """``(x + 3) / 6`` on ``(-3, 3)``, 0 below, 1 above."""

    _fn = staticmethod(Fp.hardsigmoid)


class CELU(Module):
    """``x`` where positive, else ``alpha (e^(x / alpha) - 1)``."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        Fs.celu(as_tensor(0.0), alpha)  # checks alpha now
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Any) -> Tensor:
        return Fs.celu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """``a * sigmoid(b)`` of the halves ``a``, ``b`` of the input along ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Any) -> Tensor:
        return Fs.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        Fp.threshold(as_tensor(0.0), threshold, value)  # checks the arguments now
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Any) -> Tensor:
        return Fp.threshold(input, self.threshold, self.value)

    def extra_repr(self) -> str:
        return (f"threshold={self.threshold}, value={self.value}"
                + (", inplace=True" if self.inplace else ""))


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    _fn = staticmethod(Fp.hardshrink)

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        type(self)._fn(as_tensor(0.0), lambd)  # checks lambd now
        self.lambd = lambd

    def forward(self, input: Any) -> Tensor:
        return type(self)._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""

    _fn = staticmethod(Fp.softshrink)


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
                 ) -> None:
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        Fp.hardtanh(as_tensor(0.0), min_val, max_val)  # checks the bounds now

    def forward(self, input: Any) -> Tensor:
        return Fp.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class RReLU(Module):
    """Randomized leaky ReLU (:func:`..functional.piecewise_activation.rrelu`): random
    negative slopes in training, their mean in evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace
        Fp.rrelu(as_tensor(0.0), lower, upper)  # checks the bounds now

    def forward(self, input: Any) -> Tensor:
        return Fp.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                            else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return ""


class Hardswish(Module):
    """``x * relu6(x + 3) / 6``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Any) -> Tensor:
        return Fp.hardswish(input)


class Mish(Module):
    """``x * tanh(softplus(x))``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Any) -> Tensor:
        return Fp.mish(input)


class PReLU(Module):
    """``x`` where positive, else ``weight * x``: a learned slope (``num_parameters`` = 1
    or the channel count), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        check_device("PReLU", device)
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) \
                or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters={num_parameters!r} must be an int >= 1")
        dt = get_default_dtype() if dtype is None else check_dtype("PReLU", dtype)
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(np.full(num_parameters, init, dt))

    def forward(self, input: Any) -> Tensor:
        return Fp.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
