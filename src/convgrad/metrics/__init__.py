"""Differentiable image metrics: SSIM, MS-SSIM and PSNR."""

from __future__ import annotations

from .ssim import MS_SSIM_WEIGHTS, gaussian_filter, gaussian_window, ms_ssim, psnr, ssim

__all__ = ["MS_SSIM_WEIGHTS", "gaussian_filter", "gaussian_window", "ms_ssim", "psnr", "ssim"]
