"""Resampling kernels on ndarrays: the ``resample`` kernel family.

Nearest and linear upsampling by whole factors of float32 activations run on oneDNN's
resampling primitive (:mod:`.onednn.resample`), on the caller's layout (dense NCHW or
channels-last, the output in the input's); everything else runs on the NumPy reference
(per-axis maps, :mod:`convgrad.functional.interpolate`).  :func:`choose` is the one
decision; each kernel records one profiler event.
"""

from __future__ import annotations

import numpy as np

from . import layouts
from .onednn import resample as onednn_resample
from .registry import family

__all__ = ["RESAMPLE", "choose", "resample_backward", "resample_forward"]

RESAMPLE = family("resample", ("onednn", "numpy"))


def _strides_like(x: np.ndarray, shape: tuple) -> tuple:
    if layouts.is_channels_last(x):
        return layouts.channels_last_strides(shape)
    return tuple(int(np.prod(shape[d + 1:])) for d in range(len(shape)))


def _pair(x: np.ndarray, shape: tuple) -> tuple:
    return shape, _strides_like(x, shape)


def choose(mode: str, x: np.ndarray, out: tuple, scales: tuple,
           align_corners: bool = False) -> str:
    """``"onednn"`` or ``"numpy"`` for ``mode`` ("nearest" or "linear") from x to spatial
    size ``out`` with torch's ``scales`` (None: from the sizes).

    oneDNN: float32, dense channels-last, ``nearest``, every axis upsampled by a
    whole factor s (and the given scale factor, if any, exactly s): there oneDNN's
    half-pixel rounding takes ``o // s`` as torch's ``nearest``.  Its backward
    (``simple:any``) measured 20-100 ms on (8, 64, 64, 64), 2-10x NumPy's block sum, so the
    backward is the block sum (:func:`resample_backward`).
    ``linear`` stays NumPy: oneDNN's values agree with torch's bilinear/trilinear
    (half-pixel, within torch's own float32 error, tested) and its forward is fast, but its
    backward (``simple:any``) took 88-99 ms against NumPy's maps' ~10 ms.
    """
    if (RESAMPLE.pinned() == "numpy" or type(x) is not np.ndarray or x.dtype != np.float32
            or not layouts.is_channels_last(x) or align_corners or mode != "nearest"):
        # NCHW: NumPy's selection maps measured 0.19x torch (forward and backward, (8, 64,
        # 32, 32) upsampled 2x), oneDNN's forward with the block sum 0.35x
        return "numpy"
    for n, m, sf in zip(x.shape[2:], out, scales):
        s = m // n
        if s < 1 or m != s * n or (sf is not None and sf != s):
            return "numpy"
    if all(m == n for n, m in zip(x.shape[2:], out)):
        return "numpy"  # the identity: nothing to resample
    y_shape = (*x.shape[:2], *out)
    plan = onednn_resample.resample_plan("forward", mode, _pair(x, x.shape), _pair(x, y_shape))
    return "onednn" if not isinstance(plan, str) else "numpy"


def _plan(pass_name: str, mode: str, like: np.ndarray, x_shape: tuple, y_shape: tuple):
    plan = onednn_resample.resample_plan(pass_name, mode, _pair(like, x_shape),
                                         _pair(like, y_shape))
    if isinstance(plan, str):
        raise RuntimeError(f"oneDNN resampling {pass_name}: {plan}")
    return plan


def _in_layout(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``a`` as float32 in ``like``'s dense layout (a copy only when it is not)."""
    cl = layouts.is_channels_last(like)
    if a.dtype == np.float32 and (layouts.is_channels_last(a) if cl else a.flags.c_contiguous):
        return a
    out = layouts.empty(a.shape, channels_last=cl)
    np.copyto(out, a, casting="same_kind")
    return out


def resample_forward(x: np.ndarray, y_shape: tuple, mode: str, like: np.ndarray
                     ) -> np.ndarray:
    """oneDNN: x resampled to ``y_shape``, in ``like``'s layout."""
    x = _in_layout(x, like)
    y = layouts.empty(y_shape, channels_last=layouts.is_channels_last(like))
    with RESAMPLE.record(f"{mode}_forward", x.shape, y_shape) as rec:
        plan = _plan("forward", mode, like, x.shape, y_shape)
        rec.algorithm = plan.name
        plan.run(x, y)
    return y


def resample_backward(gy: np.ndarray, x_shape: tuple, mode: str, like: np.ndarray
                      ) -> np.ndarray:
    """The adjoint of :func:`resample_forward` (each gradient spread back over the sources
    with the same weights), in ``like``'s layout: for ``nearest`` by whole factors the sum
    of each output block (NumPy, faster than oneDNN's backward, see :func:`choose`), else
    oneDNN's backward."""
    gx = layouts.empty(x_shape, channels_last=layouts.is_channels_last(like))
    with RESAMPLE.record(f"{mode}_backward", gy.shape, x_shape) as rec:
        if mode == "nearest":
            rec.algorithm = "numpy:block_sum"  # one strided view per offset in the block
            factors = [m // n for n, m in zip(x_shape[2:], gy.shape[2:])]
            for t, offs in enumerate(np.ndindex(*factors)):
                view = gy[(Ellipsis, *(slice(o, None, f) for o, f in zip(offs, factors)))]
                if t == 0:
                    np.copyto(gx, view, casting="same_kind")
                else:
                    np.add(gx, view, out=gx, casting="same_kind")
            return gx
        gy = _in_layout(gy, like)
        plan = _plan("backward", mode, like, x_shape, gy.shape)
        rec.algorithm = plan.name
        plan.run(gy, gx)
    return gx
