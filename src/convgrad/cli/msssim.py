"""``convgrad msssim A B``: SSIM and MS-SSIM of two image files.

Both files are read with Pillow (:func:`convgrad.cli.images.read_image`: 8-bit scaled to
[0, 1], gray as one channel, colour as three, RGBA -> RGB) and compared in float64 with
a Gaussian window of ``--win-size`` taps (sigma 1.5) and ``--data-range`` (the span of
the scaled pixel values).  Output, exit status 0::

    SSIM: <value>
    MS-SSIM: <value>

Images too small for MS-SSIM's five scales (the smaller side must exceed
``(win_size - 1) * 16``) print their SSIM and, instead of a value,
``MS-SSIM: not computed (...)`` with the reason; the exit status is still 0.  Problems a
user can cause (a missing or unreadable file, different sizes, images smaller than the
window) print one ``convgrad msssim: error: ...`` line on stderr and exit with 2.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..metrics import ms_ssim, ssim

__all__ = ["DATA_RANGE", "SCALES", "WIN_SIZE", "compare", "ms_ssim_unavailable", "run_msssim"]

WIN_SIZE = 11
DATA_RANGE = 1.0
SCALES = 5  # MS-SSIM's standard weights


def _describe(arr: np.ndarray) -> str:
    kind = "gray" if arr.shape[0] == 1 else "colour"
    return f"{arr.shape[2]}x{arr.shape[1]} {kind}"


def ms_ssim_unavailable(a: np.ndarray, win_size: int = WIN_SIZE) -> str | None:
    """Why MS-SSIM cannot be computed for (C, H, W) images like ``a``, or None if it can."""
    need = (win_size - 1) * 2 ** (SCALES - 1)
    if min(a.shape[1:]) > need:
        return None
    why = (f"the images are {_describe(a)} (width x height); MS-SSIM's {SCALES} scales with "
           f"a {win_size}-tap window need both sides > {need} pixels")
    largest = min(a.shape[1:]) - 1  # the largest odd window with (win - 1) * 16 < side
    largest = largest // 2 ** (SCALES - 1) + 1
    largest -= 1 - largest % 2
    if largest >= 3:
        why += f"; --win-size {largest} or smaller would allow it"
    return why


def compare(a: np.ndarray, b: np.ndarray, name_a: str = "A", name_b: str = "B",
            data_range: float = DATA_RANGE, win_size: int = WIN_SIZE
            ) -> tuple[float, float | None]:
    """(SSIM, MS-SSIM) of two (C, H, W) images in [0, 1]; MS-SSIM is None when the images
    are too small for it (:func:`ms_ssim_unavailable` says why); ValueError on unusable
    inputs (different shapes, images smaller than the window)."""
    if a.shape != b.shape:
        raise ValueError(f"the images differ in size or channels: {name_a} is {_describe(a)}, "
                         f"{name_b} is {_describe(b)} (width x height)")
    if min(a.shape[1:]) < win_size:
        raise ValueError(f"the images are {_describe(a)}: SSIM needs both sides >= the "
                         f"window (--win-size {win_size})")
    x, y = a[None], b[None]
    s = float(ssim(x, y, data_range=data_range, win_size=win_size).item())
    if ms_ssim_unavailable(a, win_size) is not None:
        return s, None
    return s, float(ms_ssim(x, y, data_range=data_range, win_size=win_size).item())


def run_msssim(args: argparse.Namespace) -> int:
    """Print ``SSIM: <value>`` and ``MS-SSIM: <value>`` for ``args.a`` and ``args.b``."""
    from .images import read_image

    data_range = getattr(args, "data_range", DATA_RANGE)
    win_size = getattr(args, "win_size", WIN_SIZE)
    try:
        a, b = read_image(args.a), read_image(args.b)
        s, ms = compare(a, b, args.a, args.b, data_range=data_range, win_size=win_size)
    except (ValueError, FileNotFoundError, PermissionError, IsADirectoryError) as e:
        print(f"convgrad msssim: error: {e}", file=sys.stderr)
        return 2
    print(f"SSIM: {s:.10f}")
    if ms is None:
        print(f"MS-SSIM: not computed ({ms_ssim_unavailable(a, win_size)})")
    else:
        print(f"MS-SSIM: {ms:.10f}")
    return 0
