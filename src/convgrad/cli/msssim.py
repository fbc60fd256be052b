"""``convgrad msssim A B``: SSIM and MS-SSIM of two image files.

Both files are read with Pillow (:func:`convgrad.cli.images.read_image`: 8-bit scaled to
[0, 1], gray as one channel, colour as three, RGBA -> RGB) and compared in float64 with
``data_range=1`` and the standard window (11 taps, sigma 1.5).  Problems a user can
cause (a missing or unreadable file, different sizes, an image too small for five
scales) print one ``convgrad msssim: error: ...`` line on stderr and exit with 2.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..metrics import ms_ssim, ssim

__all__ = ["compare", "run_msssim"]

WIN_SIZE = 11
MIN_SIDE = (WIN_SIZE - 1) * 2**4  # MS-SSIM's five scales need the smaller side > 160


def _describe(arr: np.ndarray) -> str:
    kind = "gray" if arr.shape[0] == 1 else "colour"
    return f"{arr.shape[2]}x{arr.shape[1]} {kind}"


def compare(a: np.ndarray, b: np.ndarray, name_a: str = "A", name_b: str = "B"
            ) -> tuple[float, float]:
    """(SSIM, MS-SSIM) of two (C, H, W) images in [0, 1]; ValueError on unusable inputs."""
    if a.shape != b.shape:
        raise ValueError(f"the images differ in size or channels: {name_a} is {_describe(a)}, "
                         f"{name_b} is {_describe(b)} (width x height)")
    if min(a.shape[1:]) <= MIN_SIDE:
        raise ValueError(f"the images are {_describe(a)}: MS-SSIM's five scales need both "
                         f"sides > {MIN_SIDE} pixels (window {WIN_SIZE})")
    x, y = a[None], b[None]
    return (float(ssim(x, y, data_range=1.0, win_size=WIN_SIZE).item()),
            float(ms_ssim(x, y, data_range=1.0, win_size=WIN_SIZE).item()))


def run_msssim(args: argparse.Namespace) -> int:
    """Print ``SSIM: <value>`` and ``MS-SSIM: <value>`` for ``args.a`` and ``args.b``."""
    from .images import read_image

    try:
        a, b = read_image(args.a), read_image(args.b)
        s, ms = compare(a, b, args.a, args.b)
    except (ValueError, FileNotFoundError, PermissionError, IsADirectoryError) as e:
        print(f"convgrad msssim: error: {e}", file=sys.stderr)
        return 2
    print(f"SSIM: {s:.10f}")
    print(f"MS-SSIM: {ms:.10f}")
    return 0
