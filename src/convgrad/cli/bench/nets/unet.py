"""N4: the U-Net of ``examples/train_unet.py`` (GroupNorm, SiLU, max pooling, bilinear
upsampling, concatenated skips, residual output), MSE loss, AdamW.

The same architecture and parameter names as the example's ``UNet``
(tests/test_bench_nets.py holds them equal); one difference on purpose: the head keeps
its default initialisation (the example zeroes it, which makes every other gradient
of the first step zero and the agreement check empty).
"""

from __future__ import annotations

from typing import Any

__all__ = ["define", "loss", "optimizer", "GROUPS"]

GROUPS = 8  # GroupNorm groups in every block (the example's)


def define(nn: Any, cat: Any) -> Any:
    class DoubleConv(nn.Module):
        def __init__(self, c_in: int, c_out: int) -> None:
            super().__init__()
            self.block = nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.GroupNorm(GROUPS, c_out),
                nn.SiLU(),
                nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.GroupNorm(GROUPS, c_out),
                nn.SiLU())

        def forward(self, x: Any) -> Any:
            return self.block(x)

    class Up(nn.Module):
        def __init__(self, c_in: int, c_skip: int, c_out: int) -> None:
            super().__init__()
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.conv = DoubleConv(c_in + c_skip, c_out)

        def forward(self, x: Any, skip: Any) -> Any:
            return self.conv(cat([self.up(x), skip], dim=1))

    class UNet(nn.Module):
        def __init__(self, channels: int = 1, width: int = 16, depth: int = 2,
                     **_: Any) -> None:
            super().__init__()
            widths = [width * 2**k for k in range(depth + 1)]
            self.inc = DoubleConv(channels, widths[0])
            self.pool = nn.MaxPool2d(2)
            self.down = nn.ModuleList(DoubleConv(widths[k], widths[k + 1])
                                      for k in range(depth))
            self.up = nn.ModuleList(Up(widths[k + 1], widths[k], widths[k])
                                    for k in reversed(range(depth)))
            self.head = nn.Conv2d(widths[0], channels, 1)

        def forward(self, x: Any) -> Any:
            h = self.inc(x)
            skips = []
            for down in self.down:
                skips.append(h)
                h = down(self.pool(h))
            for up, skip in zip(self.up, reversed(skips)):
                h = up(h, skip)
            return x - self.head(h)

    return UNet


def loss(lib: Any, out: Any, target: Any) -> Any:
    return lib.nn.functional.mse_loss(out, target)


def optimizer(lib: Any, params: Any, kw: dict) -> Any:
    return lib.optim.AdamW(params, lr=kw["lr"], weight_decay=kw["weight_decay"])
