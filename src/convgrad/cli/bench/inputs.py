"""The inputs of each workload: deterministic arrays, and a network's initial weights."""

from __future__ import annotations

import math

import numpy as np

from .networks import initial_params
from .workloads import Inputs, Workload

__all__ = ["make_inputs"]


def make_inputs(w: Workload, seed: int = 0) -> Inputs:
    """Deterministic inputs: normal data, weights scaled like PyTorch's default init.

    S1: Y uniform in [0, 1), X = 1 - Y.  N1: normal images, uniform labels, the
    classifier's initial weights; N2: uniform clean images, ``x`` = clean + Gaussian
    noise (the demo's sigma), the autoencoder's initial weights.
    """
    rng = np.random.default_rng(seed)
    f32 = np.float32
    if w.is_real_net:
        from .nets import make_net_inputs

        x, target = make_net_inputs(w, rng)
        return Inputs(x=x, y_target=target, params=initial_params(w, rng))
    if w.is_network:
        x = rng.standard_normal(w.x_shape, dtype=f32)
        if w.op == "train_classifier":
            target = rng.integers(0, w.kwargs["classes"], w.x_shape[0]).astype(np.int64)
        else:
            target = rng.random(w.x_shape, dtype=f32)
            x = target + f32(w.kwargs["noise_sigma"]) * x
        return Inputs(x=x, y_target=target, params=initial_params(w, rng))
    if w.op == "ssim":
        y = rng.random(w.x_shape, dtype=f32)
        return Inputs(x=(1 - y).astype(f32), y_target=y)
    if w.op == "ms_ssim":
        x = rng.random(w.x_shape, dtype=f32)
        # Y: X plus noise, clipped to [0, 1], so the two images are similar but not equal
        y = np.clip(x + f32(0.1) * rng.standard_normal(w.x_shape, dtype=f32), 0, 1).astype(f32)
        return Inputs(x=x, y_target=y)
    fan_in = math.prod(w.w_shape[1:]) if not w.is_transpose else w.w_shape[0] * math.prod(
        w.w_shape[2:])
    bound = f32(1.0 / math.sqrt(fan_in))
    x = rng.standard_normal(w.x_shape, dtype=f32)
    wt = rng.uniform(-bound, bound, w.w_shape).astype(f32)
    b = rng.uniform(-bound, bound, (w.c_out,)).astype(f32)
    gy = rng.standard_normal(w.y_shape(), dtype=f32)
    return Inputs(x=x, w=wt, b=b, gy=gy)
