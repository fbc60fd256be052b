"""N5: a 3-D U-Net in nnU-Net's style: per level two Conv3d 3^3 - InstanceNorm3d(affine)
- LeakyReLU(0.01), the first of them strided (2) below the top level; 16-32-64
channels; ConvTranspose3d 2^3 stride 2 up; concatenated skips; a 1x1x1 head to 3
classes; voxel-wise cross-entropy; Adam.

The convolutions before a normalisation have no bias: instance norm subtracts each
channel's mean, so such a bias changes nothing and its exact gradient is zero (two
correct implementations then differ by rounding noise only, which no relative
tolerance can check)."""

from __future__ import annotations

from typing import Any

__all__ = ["define", "loss", "optimizer", "LEVELS"]

LEVELS = (16, 32, 64)


def define(nn: Any, cat: Any) -> Any:
    class ConvBlock(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
            super().__init__()
            self.block = nn.Sequential(
                nn.Conv3d(c_in, c_out, 3, stride=stride, padding=1, bias=False),
                nn.InstanceNorm3d(c_out, affine=True), nn.LeakyReLU(0.01),
                nn.Conv3d(c_out, c_out, 3, padding=1, bias=False),
                nn.InstanceNorm3d(c_out, affine=True), nn.LeakyReLU(0.01))

        def forward(self, x: Any) -> Any:
            return self.block(x)

    class UNet3d(nn.Module):
        def __init__(self, in_channels: int = 1, classes: int = 3, **_: Any) -> None:
            super().__init__()
            c = LEVELS
            self.enc = nn.ModuleList([ConvBlock(in_channels, c[0])] +
                                     [ConvBlock(c[k - 1], c[k], stride=2)
                                      for k in range(1, len(c))])
            self.up = nn.ModuleList(nn.ConvTranspose3d(c[k], c[k - 1], 2, stride=2)
                                    for k in reversed(range(1, len(c))))
            self.dec = nn.ModuleList(ConvBlock(2 * c[k - 1], c[k - 1])
                                     for k in reversed(range(1, len(c))))
            self.head = nn.Conv3d(c[0], classes, 1)

        def forward(self, x: Any) -> Any:
            skips = []
            for enc in self.enc:
                x = enc(x)
                skips.append(x)
            skips.pop()
            for up, dec in zip(self.up, self.dec):
                x = dec(cat([up(x), skips.pop()], dim=1))
            return self.head(x)

    return UNet3d


def loss(lib: Any, out: Any, target: Any) -> Any:
    return lib.nn.functional.cross_entropy(out, target)


def optimizer(lib: Any, params: Any, kw: dict) -> Any:
    return lib.optim.Adam(params, lr=kw["lr"])
