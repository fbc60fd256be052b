"""Resampling layers: ``Upsample`` (every mode of ``interpolate``), ``PixelShuffle``,
``PixelUnshuffle``; arguments and ``repr`` as ``torch.nn``."""

from __future__ import annotations

from typing import Any

from ..functional.interpolate import MODES, interpolate
from ..functional.pixel_shuffle import _factor, channel_shuffle, pixel_shuffle, pixel_unshuffle
from ..ops import jit
from ..tensor import Tensor
from .module import Module

__all__ = ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle", "Upsample",
           "UpsamplingBilinear2d", "UpsamplingNearest2d"]


class Upsample(Module):
    """Resample ``(N, C, *spatial)`` input to ``size`` or by ``scale_factor`` with ``mode``
    (see :func:`convgrad.functional.interpolate`)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        jit.warm_up("resampling")  # a network is being built: its kernels load
        fn = "Upsample"
        if not isinstance(mode, str) or mode not in MODES:
            raise ValueError(f"{fn}: mode={mode!r} is not supported; expected one of "
                             f"{MODES}")
        if (size is None) == (scale_factor is None):
            raise ValueError(f"{fn}: size={size!r}, scale_factor={scale_factor!r}; give "
                             "exactly one of them")
        self.size = size
        try:
            if isinstance(scale_factor, tuple | list):
                self.scale_factor = tuple(float(f) for f in scale_factor)
            else:
                self.scale_factor = float(scale_factor) if scale_factor else None
        except (TypeError, ValueError):
            raise TypeError(f"{fn}: scale_factor={scale_factor!r} must be a number or a "
                            "sequence of numbers") from None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Any) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, self.mode,
                              self.align_corners, self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode="nearest")`` of ``(N, C, H, W)`` input (torch's
    older name)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode="bilinear", align_corners=True)`` of
    ``(N, C, H, W)`` input (torch's older name; its corners aligned)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """``(*, C r^2, H, W) -> (*, C, H r, W r)`` with ``r = upscale_factor``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = _factor("PixelShuffle", "upscale_factor", upscale_factor)

    def forward(self, input: Any) -> Tensor:
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H r, W r) -> (*, C r^2, H, W)`` with ``r = downscale_factor``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = _factor("PixelUnshuffle", "downscale_factor",
                                           downscale_factor)

    def forward(self, input: Any) -> Tensor:
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """The channels of ``groups`` groups interleaved (see
    :func:`convgrad.functional.channel_shuffle`)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = _factor("ChannelShuffle", "groups", groups)

    def forward(self, input: Any) -> Tensor:
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
