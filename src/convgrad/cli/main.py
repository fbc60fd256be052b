"""The ``convgrad`` command line: demo, msssim, bench, gradcheck.

Every ``--help`` shows each option's default; ``convgrad --version`` prints
``convgrad <version>``.  The commands import their modules (and heavy dependencies)
only when they run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .help_format import DefaultsHelpFormatter


def _cmd_gradcheck(args: argparse.Namespace) -> int:
    from .gradcheck import run

    return run(quick=args.quick)


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)


def _cmd_msssim(args: argparse.Namespace) -> int:
    from .msssim import run_msssim

    return run_msssim(args)


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    return run_bench(args)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def _odd_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 1 or value % 2 == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive odd integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    from .demo.training import DEFAULT_STEPS
    from .msssim import DATA_RANGE, WIN_SIZE

    defaults = DefaultsHelpFormatter
    parser = argparse.ArgumentParser(
        prog="convgrad",
        description="Convolutions with exact, conditional gradients on NumPy.",
        formatter_class=defaults,
    )
    parser.add_argument("--version", action="version", version=f"convgrad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="train a denoising autoencoder on bundled photographs",
                       formatter_class=defaults,
                       description="Train a small convolutional denoising autoencoder on crops "
                       "of photographs bundled with scikit-image, with the loss "
                       "0.84 * (1 - MS-SSIM) + 0.16 * L1, then denoise a held-out image.")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="training steps")
    p.add_argument("--seed", type=int, default=0, help="random seed (deterministic)")
    p.add_argument("--out", default="convgrad-demo", help="output folder (figure, weights)")
    p.add_argument("--images", default=None,
                   help="train on the images in this folder (default: the bundled photographs)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("msssim", help="SSIM and MS-SSIM of two image files",
                       formatter_class=defaults,
                       description="Print SSIM and MS-SSIM of two image files (8-bit scaled "
                       "to [0, 1]; gray as one channel, colour as three).  Images too small "
                       "for MS-SSIM's five scales (both sides must exceed "
                       "(win_size - 1) * 16) get their SSIM and the reason MS-SSIM is "
                       "missing; the exit status is 0 unless an error is printed (2).")
    p.add_argument("a", help="first image file")
    p.add_argument("b", help="second image file")
    p.add_argument("--data-range", type=_positive_float, default=DATA_RANGE,
                   help="span of the pixel values (after scaling to [0, 1])")
    p.add_argument("--win-size", type=_odd_int, default=WIN_SIZE,
                   help="taps of the Gaussian window (odd; sigma 1.5)")
    p.set_defaults(func=_cmd_msssim)

    p = sub.add_parser("bench", help="benchmark suite against the installed peers",
                       formatter_class=defaults,
                       description="Run the benchmark workloads for convgrad and each "
                       "installed peer, side by side.")
    p.add_argument("--quick", action="store_true", help="fewer runs and smaller shapes")
    p.add_argument("--against", default="torch,jax,mlx",
                   help="peers, comma separated (torch, torch_cl, torch_compile, jax, mlx; "
                   "torch brings torch_cl, its channels_last twin for the networks, and "
                   "torch_compile, torch.compile for N3-N6, along)")
    p.add_argument("--breakdown", default=None, metavar="IDS",
                   help="instead of the suite: a per-layer and per-kind time breakdown of "
                   "one training step of these networks (N3-N6), convgrad vs torch")
    p.add_argument("--cold-start", default=None, metavar="IDS",
                   help="instead of the suite: each network's first training step in a "
                   "fresh process (import, build, first step), convgrad vs torch (N1-N6)")
    p.add_argument("--json", default=None, help="write results as JSON to this file")
    p.add_argument("--plot", default=None, help="write a PNG chart of the ratios to this file")
    p.add_argument("--only", default=None,
                   help="workload ids, comma separated, e.g. W1,W2 (default: all)")
    p.add_argument("--memory", action="store_true",
                   help="also measure peak memory of W1 forward + backward (fresh subprocesses)")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("gradcheck", help="finite-difference gradient verification",
                       formatter_class=defaults,
                       description="Check every operation's gradient against central "
                       "finite differences in float64 over a sweep of configurations.")
    p.add_argument("--quick", action="store_true", help="a small sweep")
    p.set_defaults(func=_cmd_gradcheck)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
