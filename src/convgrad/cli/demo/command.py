"""The ``convgrad demo`` command: train (:mod:`.training`), print, write the figure and weights."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from ...serialization import save
from .training import BATCH, CROP, LEARNING_RATE, NOISE_SIGMA, WIN_SIZE, DemoResult, train

__all__ = ["run_demo", "save_figure"]


def save_figure(result: DemoResult, path: str) -> None:
    """A PNG: noisy, denoised and clean held-out image, and the training loss curve."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 3.8), layout="constrained")
    FigureCanvasAgg(fig)  # render with Agg; the user's pyplot backend is untouched
    axes = fig.subplots(1, 4)
    panels = [
        (result.noisy, f"noisy (sigma {NOISE_SIGMA})\nPSNR {result.psnr_noisy:.2f} dB, "
                       f"MS-SSIM {result.msssim_noisy:.4f}"),
        (result.denoised, f"denoised\nPSNR {result.psnr_denoised:.2f} dB, "
                          f"MS-SSIM {result.msssim_denoised:.4f}"),
        (result.clean, "clean (held out: camera)"),
    ]
    for ax, (img, title) in zip(axes, panels):
        ax.imshow(img, cmap="gray", vmin=0.0, vmax=1.0)
        ax.set_title(title, fontsize=10)
        ax.set_axis_off()
    ax = axes[3]
    losses = np.asarray(result.losses)
    ax.plot(np.arange(1, len(losses) + 1), losses, lw=0.8, alpha=0.5, label="per step")
    if len(losses) >= 20:
        k = max(len(losses) // 20, 5)
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        ax.plot(np.arange(k, len(losses) + 1), smooth, lw=1.8, label=f"mean of {k}")
    ax.set_xlabel("step")
    ax.set_ylabel("0.84 (1 - MS-SSIM) + 0.16 L1")
    ax.set_title("training loss", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=90)


def _report_profile(result: DemoResult) -> tuple[str, bool]:
    prof = result.step_profile
    weight_grads = prof.count("conv_weight_grad")
    window_convs = prof.count("conv_forward") - result.trainable_conv_layers
    ok = weight_grads == result.trainable_conv_layers
    verdict = "as expected" if ok else "UNEXPECTED"
    text = (f"conv_weight_grad ran {weight_grads} times = {result.trainable_conv_layers} "
            f"trainable conv layers ({verdict}); the {window_convs} constant-kernel "
            f"convolutions of MS-SSIM (its Gaussian windows) ran conv_forward and "
            f"conv_input_grad only: their kernels are constants")
    return text, ok


def run_demo(args: argparse.Namespace) -> int:
    """The ``convgrad demo`` command: train, evaluate, print, write figure and weights."""
    out_dir = args.out if args.out is not None else "convgrad-demo"
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        print(f"convgrad demo: error: cannot create --out folder {out_dir!r}: {e}",
              file=sys.stderr)
        return 2
    source = ("the bundled scikit-image photographs" if args.images is None
              else f"the images in {args.images!r}")
    print(f"convgrad demo: denoising autoencoder on {CROP}x{CROP} gray crops of {source}, "
          f"Gaussian noise sigma {NOISE_SIGMA}, loss 0.84 * (1 - MS-SSIM[win {WIN_SIZE}]) "
          f"+ 0.16 * L1, Adam lr {LEARNING_RATE} with cosine decay, batch {BATCH}, "
          f"seed {args.seed}")
    try:
        result = train(steps=args.steps, seed=args.seed, images=args.images,
                       progress=not args.no_progress)
    except (ValueError, TypeError) as e:
        print(f"convgrad demo: error: {e}", file=sys.stderr)
        return 2
    n_params = sum(p.numel() for p in result.model.parameters())
    print(f"trained on {len(result.image_names)} images: {', '.join(result.image_names)}")
    print(f"model: {n_params} parameters\n{result.model}")
    print(f"trained {result.steps} steps in {result.seconds:.1f} s "
          f"({result.steps_per_second:.2f} steps/s); loss {result.losses[0]:.4f} -> "
          f"{np.mean(result.losses[-10:]):.4f} (mean of the last 10)")
    print(f"held-out image 'camera' ({result.clean.shape[0]}x{result.clean.shape[1]}), "
          f"noise sigma {NOISE_SIGMA}; MS-SSIM with the standard 11-tap window:")
    print(f"  {'':10}{'PSNR (dB)':>10}{'MS-SSIM':>10}")
    print(f"  {'noisy':10}{result.psnr_noisy:10.2f}{result.msssim_noisy:10.4f}")
    print(f"  {'denoised':10}{result.psnr_denoised:10.2f}{result.msssim_denoised:10.4f}")
    print("profile of one training step (forward, backward, Adam update):")
    print(result.step_profile.summary())
    text, ok = _report_profile(result)
    print(text)
    figure = os.path.join(out_dir, "demo.png")
    weights = os.path.join(out_dir, "weights.npz")
    save_figure(result, figure)
    save(result.model.state_dict(), weights)
    print(f"wrote {figure} and {weights}")
    return 0 if ok else 1
