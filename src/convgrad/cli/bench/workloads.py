"""The benchmark workloads as data (their inputs are made by :mod:`.inputs`).

Three kinds: single convolutions (W1-W8; ``op`` a ``convgrad.functional`` name),
image-metric losses (MS, S1; ``op`` ``ms_ssim`` or ``ssim``, the loss ``1 - op(X, Y)``)
and training steps of small networks (N1, N2; ``op`` ``train_classifier`` or
``train_autoencoder``: forward, backward and one Adam update, see :mod:`.networks`).

Shapes are in PyTorch's layout: ``x`` (N, C_in, *spatial); convolution weight
(C_out, C_in // groups, *kernel); transposed-convolution weight
(C_in, C_out // groups, *kernel).  A convolution's ``kwargs`` go unchanged to
``convgrad.functional.<op>`` and ``torch.nn.functional.<op>``; a metric's to
``convgrad.metrics.<op>`` and ``pytorch_msssim.<op>``; a network's describe it
(``lr`` is Adam's learning rate).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["PASSES", "MS_PASSES", "STEP_PASSES", "METRIC_OPS", "NETWORK_OPS", "NET_OPS",
           "WORKLOADS",
           "Workload", "Inputs", "select", "select_for", "tiny_requested", "TINY_ENV"]

#: forward; forward + every gradient; input gradient only (weight frozen);
#: weight and bias gradients only (input not requiring grad)
PASSES = ("fwd", "fwd+bwd", "fwd+bwd_input", "fwd+bwd_weight")
#: a metric loss (MS-SSIM, SSIM) has one differentiable input (X)
MS_PASSES = ("fwd", "fwd+bwd")
#: a network workload's one pass: forward, backward and the optimiser's update
STEP_PASSES = ("step",)
METRIC_OPS = ("ms_ssim", "ssim")
#: N3-N6, the real networks (defined in :mod:`.nets`)
NET_OPS = ("train_resnet18", "train_unet", "train_unet3d", "train_dcgan")
NETWORK_OPS = ("train_classifier", "train_autoencoder", *NET_OPS)

#: every implementation runs on this many threads
THREADS = 2
#: set to 1 to shrink every workload to a toy size (used by the test suite)
TINY_ENV = "CONVGRAD_BENCH_TINY"


@dataclass(frozen=True)
class Workload:
    id: str
    op: str  # conv1d, conv2d, conv3d, conv_transpose2d, a METRIC_OPS or a NETWORK_OPS name
    description: str
    x_shape: tuple
    w_shape: tuple | None = None
    kwargs: dict = field(default_factory=dict)

    @property
    def is_metric(self) -> bool:
        return self.op in METRIC_OPS

    @property
    def is_network(self) -> bool:
        return self.op in NETWORK_OPS

    @property
    def is_real_net(self) -> bool:
        """N3-N6: the real networks of :mod:`.nets` (peers: torch, torch_cl, torch.compile)."""
        return self.op in NET_OPS

    @property
    def is_conv(self) -> bool:
        return not (self.is_metric or self.is_network)

    @property
    def passes(self) -> tuple:
        if self.is_network:
            return STEP_PASSES
        return MS_PASSES if self.is_metric else PASSES

    @property
    def is_transpose(self) -> bool:
        return self.op.startswith("conv_transpose")

    @property
    def nd(self) -> int:
        return len(self.x_shape) - 2

    def per_dim(self, name: str, default: int) -> tuple:
        v = self.kwargs.get(name, default)
        return tuple(v) if isinstance(v, tuple | list) else (int(v),) * self.nd

    @property
    def c_out(self) -> int:
        g = self.kwargs.get("groups", 1)
        return self.w_shape[1] * g if self.is_transpose else self.w_shape[0]

    def y_shape(self) -> tuple:
        """Output shape (PyTorch's formulas); ``()`` for a loss (metrics, networks)."""
        if not self.is_conv:
            return ()
        s, p = self.per_dim("stride", 1), self.per_dim("padding", 0)
        d = self.per_dim("dilation", 1)
        ks, ls = self.w_shape[2:], self.x_shape[2:]
        if self.is_transpose:
            op = self.per_dim("output_padding", 0)
            out = [(n - 1) * s_ - 2 * p_ + d_ * (k - 1) + o + 1
                   for n, s_, p_, d_, k, o in zip(ls, s, p, d, ks, op)]
        else:
            out = [(n + 2 * p_ - d_ * (k - 1) - 1) // s_ + 1
                   for n, s_, p_, d_, k in zip(ls, s, p, d, ks)]
        return (self.x_shape[0], self.c_out, *out)

    def fwd_flops(self) -> int | None:
        """Forward FLOPs: 2 * N * C_out * prod(out_spatial) * C_in / groups * prod(kernel).

        A transposed convolution counts its multiply-adds the same way seen from its
        input: 2 * N * C_in * prod(in_spatial) * C_out / groups * prod(kernel).
        """
        if not self.is_conv:
            return None
        g = self.kwargs.get("groups", 1)
        k = math.prod(self.w_shape[2:])
        if self.is_transpose:
            n, c_in, *sp = self.x_shape
            return 2 * n * c_in * math.prod(sp) * (self.c_out // g) * k
        n, c_out, *sp = self.y_shape()
        return 2 * n * c_out * math.prod(sp) * (self.x_shape[1] // g) * k

    def with_batch(self, n: int) -> Workload:
        return replace(self, x_shape=(n, *self.x_shape[1:]))

    def shrunk(self, quick: bool, tiny: bool) -> Workload:
        """``quick``: a quarter of the batch (at least 1), or half the sides of an image
        whose batch is 1 already (S1); ``tiny``: batch 1 and small images.

        Tiny sides respect what the operation needs: MS-SSIM's five scales need the
        smaller side > (win_size - 1) * 16 (176 for the 11-tap window; N2's 5-tap loss
        keeps its 96), SSIM a side >= its window, N1 a quarter (two stride-2 layers).
        """
        w = self
        n, c, *sp = self.x_shape
        if self.is_real_net:
            from .nets import shrink

            return shrink(self, quick, tiny)
        if quick and not tiny:
            if n > 1:
                w = w.with_batch(max(1, n // 4))
            else:
                w = replace(w, x_shape=(n, c, *(max(16, s // 2) for s in sp)))
        if tiny:
            if self.op == "ms_ssim":
                # pytorch-msssim needs the smaller side > (11 - 1) * 2**4 = 160
                sp = [min(s, 176) for s in sp]
            elif self.op == "train_autoencoder":
                pass  # MS-SSIM with win_size 5 needs sides > 64; 96 is already small
            else:
                sp = [max(self.kwargs.get("win_size", 8), s // 4) for s in sp]
            w = replace(w, x_shape=(1, c, *sp))
        return w
    def shape_text(self) -> str:
        def t(s: tuple) -> str:
            return "(" + ", ".join(map(str, s)) + ")"

        if self.is_metric:
            return f"X, Y {t(self.x_shape)}"
        if self.op == "train_classifier":
            return f"x {t(self.x_shape)}, {self.kwargs['classes']} classes"
        if self.op == "train_autoencoder":
            return f"x, clean {t(self.x_shape)}"
        if self.op == "train_dcgan":
            return f"real {t(self.x_shape)}, z ({self.x_shape[0]}, {self.kwargs['nz']}, 1, 1)"
        if self.is_real_net:
            return f"x {t(self.x_shape)}"
        return f"x {t(self.x_shape)}, w {t(self.w_shape)}"

    def to_json(self) -> dict:
        return {"id": self.id, "op": self.op, "description": self.description,
                "x_shape": list(self.x_shape),
                "w_shape": list(self.w_shape) if self.w_shape else None,
                "y_shape": list(self.y_shape()) or None, "kwargs": dict(self.kwargs),
                "fwd_flops": self.fwd_flops()}


WORKLOADS: tuple[Workload, ...] = (
    Workload("W1", "conv2d", "conv2d 3x3, stride 1, pad 1", (8, 64, 56, 56), (64, 64, 3, 3),
             {"stride": 1, "padding": 1}),
    Workload("W2", "conv2d", "conv2d 1x1", (8, 256, 28, 28), (64, 256, 1, 1), {}),
    Workload("W3", "conv2d", "conv2d 7x7, stride 2, pad 3", (8, 3, 224, 224), (64, 3, 7, 7),
             {"stride": 2, "padding": 3}),
    Workload("W4", "conv2d", "depthwise conv2d 3x3, pad 1, groups 128", (8, 128, 56, 56),
             (128, 1, 3, 3), {"padding": 1, "groups": 128}),
    Workload("W5", "conv_transpose2d", "conv_transpose2d k4, stride 2, pad 1", (8, 64, 32, 32),
             (64, 32, 4, 4), {"stride": 2, "padding": 1}),
    Workload("W6", "conv3d", "conv3d 3x3x3, pad 1", (2, 16, 32, 32, 32), (16, 16, 3, 3, 3),
             {"padding": 1}),
    Workload("W7", "conv1d", "conv1d k5, pad 4, dilation 2", (16, 64, 4096), (64, 64, 5),
             {"padding": 4, "dilation": 2}),
    Workload("W8", "conv2d", "grouped conv2d 3x3, pad 1, groups 8", (8, 128, 28, 28),
             (128, 16, 3, 3), {"padding": 1, "groups": 8}),
    Workload("MS", "ms_ssim", "loss 1 - ms_ssim(X, Y), data_range 1, X requires grad",
             (4, 3, 256, 256), None, {"data_range": 1.0}),
    Workload("S1", "ssim", "loss 1 - ssim(X, Y), 11-tap Gaussian window sigma 1.5, "
             "data_range 1, X = 1 - Y requires grad", (1, 3, 600, 900), None,
             {"data_range": 1.0, "win_size": 11, "win_sigma": 1.5}),
    Workload("N1", "train_classifier", "classifier training step: 5 conv3x3 + ReLU (two "
             "stride 2), mean over H and W, Linear(128, 10); cross-entropy; Adam(lr=1e-3)",
             (16, 3, 64, 64), None, {"classes": 10, "lr": 1e-3}),
    Workload("N2", "train_autoencoder", "the demo's denoising autoencoder training step: "
             "0.84 * (1 - MS-SSIM, 5-tap window) + 0.16 * L1; Adam(lr=2e-3)",
             (8, 1, 96, 96), None, {"channels": 32, "win_size": 5, "noise_sigma": 0.1,
                                    "lr": 2e-3}),
    Workload("N3", "train_resnet18", "ResNet-18 (torchvision's) training step, 10 classes; "
             "cross-entropy; SGD(lr=0.1, momentum=0.9, weight_decay=1e-4)", (8, 3, 128, 128),
             None, {"classes": 10, "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}),
    Workload("N4", "train_unet", "the U-Net of examples/train_unet.py (width 16, depth 2, "
             "GroupNorm, SiLU, bilinear up, concatenated skips); MSE; "
             "AdamW(lr=2e-3, weight_decay=1e-4)", (8, 1, 64, 64), None,
             {"channels": 1, "width": 16, "depth": 2, "sigma": 0.1, "lr": 2e-3,
              "weight_decay": 1e-4}),
    Workload("N5", "train_unet3d", "3-D U-Net (nnU-Net style: Conv3d-InstanceNorm3d-"
             "LeakyReLU, 16-32-64, strided down, ConvTranspose3d up); voxel-wise "
             "cross-entropy; Adam(lr=3e-4)", (2, 1, 64, 64, 64), None,
             {"in_channels": 1, "classes": 3, "lr": 3e-4}),
    Workload("N6", "train_dcgan", "DCGAN 64x64 (nz 100, ngf = ndf = 64, N(0, 0.02) "
             "weights): one D step (real + fake) and one G step; BCE; "
             "Adam(lr=2e-4, betas=(0.5, 0.999))", (32, 3, 64, 64), None,
             {"nz": 100, "ngf": 64, "ndf": 64, "lr": 2e-4, "betas": (0.5, 0.999)}),
)


def tiny_requested() -> bool:
    return os.environ.get(TINY_ENV, "").strip() not in ("", "0")


def select(only: str | None) -> list[Workload]:
    """The workloads named in ``only`` (comma separated ids), or all of them."""
    if not only:
        return list(WORKLOADS)
    by_id = {w.id.upper(): w for w in WORKLOADS}
    ids = [s.strip().upper() for s in only.split(",") if s.strip()]
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise ValueError(f"--only: unknown workload id(s) {', '.join(unknown)}; "
                         f"expected some of {', '.join(by_id)}")
    return [by_id[i] for i in dict.fromkeys(ids)]


def select_for(option: str, only: str, keep: Callable[[Workload], bool], expected: str
               ) -> list[Workload] | None:
    """The workloads ``only`` names for the option ``--<option>``, each one ``keep``
    accepts; else None, after saying why on stderr (``expected``: what ``keep`` accepts,
    e.g. "a network workload (N1-N6)")."""
    try:
        selected = select(only)
    except ValueError as e:
        print(f"convgrad bench: {e}", file=sys.stderr)
        return None
    bad = [w.id for w in selected if not keep(w)]
    if bad:
        print(f"convgrad bench: --{option}: {', '.join(bad)} is not {expected}",
              file=sys.stderr)
        return None
    return selected


@dataclass
class Inputs:
    """NumPy float32 inputs shared by every implementation (PyTorch layout)."""

    x: np.ndarray
    w: np.ndarray | None = None
    b: np.ndarray | None = None
    gy: np.ndarray | None = None  # the output gradient fed to backward
    # metrics: the second image Y; N1: the class labels (int64); N2: the clean images
    y_target: np.ndarray | None = None
    params: dict[str, np.ndarray] | None = None  # networks: the initial weights, by name

    def nbytes(self) -> int:
        arrays = [self.x, self.w, self.b, self.gy, self.y_target, *(self.params or {}).values()]
        return sum(a.nbytes for a in arrays if a is not None)
