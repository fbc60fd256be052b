"""`ConvSpec`: the complete description of one general convolution, and its shape rule.

A spec holds one entry per spatial dimension for every per-dimension field; padding
is one ``(lo, hi)`` pair per dimension, negative values crop.  User-facing argument
forms (ints, ``"same"``, transposed convolutions, ...) are turned into a spec once,
at the edge, by :mod:`convgrad.functional.conv_args`; kernels only ever see specs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from numbers import Integral

import numpy as np

__all__ = ["ConvSpec", "Pass", "check_float_array", "is_int", "output_length"]


def is_int(v: object) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool)


def _int_tuple(name: str, value: object, minimum: int | None) -> tuple[int, ...]:
    if not isinstance(value, tuple | list) or not all(is_int(v) for v in value):
        raise TypeError(f"ConvSpec: {name}={value!r} must be a tuple of ints, one per spatial dim")
    out = tuple(int(v) for v in value)
    if minimum is not None and any(v < minimum for v in out):
        raise ValueError(f"ConvSpec: {name}={out} must be >= {minimum} in every dim")
    return out


def output_length(length: int, kernel: int, stride: int, lo: int, hi: int,
                  kernel_dilation: int, input_dilation: int) -> int:
    """Output size of one spatial dim: floor((Ld + lo + hi - Kd) / stride) + 1.

    Ld = (L - 1) * input_dilation + 1 and Kd = (K - 1) * kernel_dilation + 1 are the
    dilated input and kernel extents.  The result may be < 1 (callers reject it).
    """
    if length == 0:
        return 0
    padded = (length - 1) * input_dilation + 1 + lo + hi
    return (padded - ((kernel - 1) * kernel_dilation + 1)) // stride + 1


class Pass(str, Enum):
    """The three passes of a convolution ``y = conv(x, w)``: each is itself a convolution
    (see :mod:`.lowering`).  A ``str`` too, so a pass prints and compares as its name."""

    FORWARD = "forward"          # x, w -> y
    INPUT_GRAD = "input_grad"    # gy, w -> gx
    WEIGHT_GRAD = "weight_grad"  # x, gy -> gw

    __str__ = str.__str__
    __format__ = str.__format__


@dataclass(frozen=True)
class ConvSpec:
    """Parameters of one general convolution (cross-correlation unless ``flip``).

    ``y[n, o, p] = sum_{c, k} xdp[n, g*Cg + c, p*stride + k*kernel_dilation] * w[o, c, k]``
    where ``xdp`` is the input dilated by ``input_dilation`` then padded by
    ``padding`` (negative = crop), and ``g = o // (C_out / groups)``.
    """

    stride: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    kernel_dilation: tuple[int, ...]
    input_dilation: tuple[int, ...]
    groups: int = 1
    flip: bool = False

    def __post_init__(self) -> None:
        stride = _int_tuple("stride", self.stride, 1)
        kd = _int_tuple("kernel_dilation", self.kernel_dilation, 1)
        idl = _int_tuple("input_dilation", self.input_dilation, 1)
        pad = self.padding
        if not isinstance(pad, tuple | list) or not all(
            isinstance(p, tuple | list) and len(p) == 2 and all(is_int(v) for v in p) for p in pad
        ):
            raise TypeError(
                f"ConvSpec: padding={pad!r} must be a tuple of (lo, hi) int pairs, "
                "one per spatial dim"
            )
        pad = tuple((int(lo), int(hi)) for lo, hi in pad)
        nd = len(stride)
        if nd < 1:
            raise ValueError("ConvSpec: stride=() must have one entry per spatial dim (>= 1 dims)")
        for name, v in (("padding", pad), ("kernel_dilation", kd), ("input_dilation", idl)):
            if len(v) != nd:
                raise ValueError(
                    f"ConvSpec: {name}={v} has {len(v)} entries but stride={stride} has {nd}; "
                    "every field needs one entry per spatial dim"
                )
        if not is_int(self.groups) or self.groups < 1:
            raise ValueError(f"ConvSpec: groups={self.groups!r} must be an int >= 1")
        if not isinstance(self.flip, bool | np.bool_):
            raise TypeError(f"ConvSpec: flip={self.flip!r} must be a bool")
        object.__setattr__(self, "stride", stride)
        object.__setattr__(self, "padding", pad)
        object.__setattr__(self, "kernel_dilation", kd)
        object.__setattr__(self, "input_dilation", idl)
        object.__setattr__(self, "groups", int(self.groups))
        object.__setattr__(self, "flip", bool(self.flip))

    @property
    def ndim(self) -> int:
        """Number of spatial dimensions."""
        return len(self.stride)

    def output_shape(self, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                     fn: str = "conv_general") -> tuple[int, ...]:
        """Shape rule: full output shape ``(N, C_out, *spatial)``; raises on bad shapes."""
        nd = self.ndim
        x_shape, w_shape = tuple(x_shape), tuple(w_shape)
        if len(x_shape) != nd + 2:
            raise ValueError(
                f"{fn}: input must have {nd + 2} dims (N, C_in, {nd} spatial) for a {nd}-d spec, "
                f"got shape {x_shape}"
            )
        if len(w_shape) != nd + 2:
            raise ValueError(
                f"{fn}: weight must have {nd + 2} dims (C_out, C_in/groups, {nd} kernel), "
                f"got shape {w_shape}"
            )
        n, c_in = x_shape[:2]
        c_out, c_per_group = w_shape[:2]
        g = self.groups
        if c_in % g:
            raise ValueError(f"{fn}: groups={g} must divide C_in={c_in}")
        if c_out % g:
            raise ValueError(f"{fn}: groups={g} must divide C_out={c_out} (weight.shape[0])")
        if c_per_group * g != c_in:
            raise ValueError(
                f"{fn}: weight.shape[1]={c_per_group} must equal C_in/groups={c_in}/{g}="
                f"{c_in // g} (input shape {x_shape}, weight shape {w_shape})"
            )
        if any(k < 1 for k in w_shape[2:]):
            raise ValueError(f"{fn}: kernel size {w_shape[2:]} must be >= 1 in every dim")
        spatial = []
        for d in range(nd):
            length, k = x_shape[2 + d], w_shape[2 + d]
            lo, hi = self.padding[d]
            out = output_length(length, k, self.stride[d], lo, hi,
                                self.kernel_dilation[d], self.input_dilation[d])
            if length > 0 and out < 1:
                raise ValueError(
                    f"{fn}: output length {out} < 1 in spatial dim {d}: input {length} "
                    f"(input_dilation {self.input_dilation[d]}), padding {(lo, hi)}, kernel {k} "
                    f"(dilation {self.kernel_dilation[d]}), stride {self.stride[d]}"
                )
            spatial.append(max(out, 0))
        return (n, c_out, *spatial)


    def transposed_shape(self, y_shape: tuple[int, ...], w_shape: tuple[int, ...],
                         fn: str = "conv_transpose") -> tuple[int, ...]:
        """The smallest input shape ``(N, C_in, *L)`` whose output is ``y_shape``.

        That is the output shape of the transposed convolution of ``y`` (the input
        gradient of this one): per dim the least ``L`` with
        ``(L - 1) * input_dilation + 1 + lo + hi - Kd >= (P - 1) * stride``.  Raises when
        it is < 1.  Channels are the caller's to check.
        """
        n, _, *P = y_shape
        c_out, c_per_group, *K = w_shape
        if any(k < 1 for k in K):
            raise ValueError(f"{fn}: kernel size {tuple(K)} must be >= 1 in every dim")
        spatial = []
        for d in range(self.ndim):
            lo, hi = self.padding[d]
            need = (P[d] - 1) * self.stride[d] + (K[d] - 1) * self.kernel_dilation[d] - lo - hi
            length = -(-need // self.input_dilation[d]) + 1  # ceil division, then + 1
            if length < 1:
                raise ValueError(
                    f"{fn}: output length {length} < 1 in spatial dim {d}: input {P[d]}, "
                    f"kernel {K[d]} (dilation {self.kernel_dilation[d]}), stride "
                    f"{self.stride[d]}, padding {(lo, hi)}")
            spatial.append(length)
        return (n, c_per_group * self.groups, *spatial)


def check_float_array(name: str, a: object, fn: str) -> np.ndarray:
    """Return ``a`` as a float32/float64 ndarray, or raise TypeError naming ``name``."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{fn}: {name} must be a numpy.ndarray, got {type(a).__name__}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{fn}: {name} has dtype {a.dtype}; expected float32 or float64")
    return a
