"""The ``convgrad`` command line: demo, msssim, bench, gradcheck."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="convgrad",
        description="Convolutions with exact, conditional gradients on NumPy.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="train a denoising autoencoder on bundled photographs",
                       description="Train a small convolutional denoising autoencoder on crops "
                       "of photographs bundled with scikit-image, with the loss "
                       "0.84 * (1 - MS-SSIM) + 0.16 * L1, then denoise a held-out image.")
    p.add_argument("--steps", type=int, default=None, help="training steps")
    p.add_argument("--seed", type=int, default=0, help="random seed (deterministic)")
    p.add_argument("--out", default="convgrad-demo", help="output folder (figure, weights)")
    p.add_argument("--images", default=None, help="train on the images in this folder instead")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("msssim", help="SSIM and MS-SSIM of two image files",
                       description="Print SSIM and MS-SSIM of two image files (8-bit scaled "
                       "to [0, 1]; gray as one channel, colour as three).")
    p.add_argument("a", help="first image file")
    p.add_argument("b", help="second image file")
    p.set_defaults(func=_cmd_msssim)

    p = sub.add_parser("bench", help="benchmark suite against the installed peers",
                       description="Run the benchmark workloads for convgrad and each "
                       "installed peer, side by side.")
    p.add_argument("--quick", action="store_true", help="fewer runs and smaller shapes")
    p.add_argument("--against", default="torch,jax,mlx",
                   help="peers, comma separated (torch, torch_cl, jax, mlx; torch brings "
                   "torch_cl, its channels_last twin for N1 and N2, along)")
    p.add_argument("--json", default=None, help="write results as JSON to this file")
    p.add_argument("--plot", default=None, help="write a PNG chart of the ratios to this file")
    p.add_argument("--only", default=None, help="workload ids, comma separated (e.g. W1,W2)")
    p.add_argument("--memory", action="store_true",
                   help="also measure peak memory of W1 forward + backward (fresh subprocesses)")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("gradcheck", help="finite-difference gradient verification",
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
