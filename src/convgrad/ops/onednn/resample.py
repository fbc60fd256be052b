"""oneDNN's resampling primitive (nearest, linear; forward and backward) as cached plans.

A :class:`ResamplePlan` maps x (N, C, *L) to y (N, C, *P) (forward) or gy to gx
(backward, the adjoint) on the caller's dense NCHW or channels-last arrays, both in the
same layout, without reorders.  oneDNN places output ``o`` at source ``(o + 1/2) L/P -
1/2`` (half-pixel, torch's ``align_corners=False``), clamped at the edges; ``nearest``
rounds it (torch's ``nearest`` only for whole upsampling factors, where both take
``o // s``).  The factors are left to oneDNN (from the shapes).
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import layouts
from ..parallel import num_threads
from . import _Cache, _library
from . import _library as L
from ._plan import _normalized, elem_strides
from ._runtime import ITEMSIZE, Execution, Operand, build_with_threads

__all__ = ["ResamplePlan", "resample_plan"]

_cache = _Cache(64)


class ResamplePlan(Execution):
    """One resampling pass (``forward`` or ``backward``) of fixed shapes and layout."""

    def __init__(self, lib: L.Library, pass_name: str, mode: str, x_shape: tuple,
                 y_shape: tuple, strides: tuple, threads: int) -> None:
        super().__init__(lib, threads)
        self.pass_name, self.mode, self.x_shape, self.y_shape = pass_name, mode, x_shape, y_shape
        self.x_strides, self.y_strides = strides
        self.name = ""

    def build(self) -> None:
        x_md = self._md(self.x_shape, self.x_strides)
        y_md = self._md(self.y_shape, self.y_strides)
        alg = L.RESAMPLING_NEAREST if self.mode == "nearest" else L.RESAMPLING_LINEAR

        def create(fn: str, *args: object) -> ctypes.c_void_p:
            return self._descriptor("resampling", fn, *args)

        attr = self._attr()
        pd = create("dnnl_resampling_forward_primitive_desc_create", L.FORWARD_TRAINING, alg,
                    None, x_md, y_md, attr)
        forward = self.pass_name == "forward"
        if not forward:
            pd = create("dnnl_resampling_backward_primitive_desc_create", alg, None, x_md,
                        y_md, pd, attr)
        self.name = f"onednn:{self._implementation(pd)}"
        self._main = self._primitive(pd)
        roles = ((L.ARG_SRC, "x", False, x_md), (L.ARG_DST, "y", True, y_md)) if forward else (
            (L.ARG_DIFF_DST, "y", False, y_md), (L.ARG_DIFF_SRC, "x", True, x_md))
        for arg, key, output, md in roles:
            op = Operand(arg, key, output)
            op.user_md = op.prim_md = md
            self._operands.append(op)
        self._place_in_arena()

    def run(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Forward: ``src`` x, ``dst`` y; backward: ``src`` gy, ``dst`` gx (the plan's
        shapes and strides: the caller looked the plan up for these arrays).

        ``dst`` should be aligned (:func:`..layouts.is_aligned`): oneDNN's kernel may write
        a large one with non-temporal stores, which fault on an unaligned address; any
        other is written through an aligned copy."""
        if not layouts.is_aligned(dst):
            staged = layouts.empty(dst.shape, channels_last=layouts.is_channels_last(dst),
                                   aligned=True)
            self.run(src, staged)
            np.copyto(dst, staged)
            return
        arrays = {"x": src, "y": dst} if self.pass_name == "forward" else {"y": src, "x": dst}
        self.execute(arrays, {key: a.ctypes.data for key, a in arrays.items()})


def resample_plan(pass_name: str, mode: str, x: tuple, y: tuple) -> ResamplePlan | str:
    """The cached plan for x and y, each (shape, element strides), or the reason (a string)
    there is none."""
    lib = _library.library()
    if lib is None:
        return f"oneDNN unavailable: {_library.failure()}"
    (x_shape, xs), (y_shape, ys) = x, y
    if not 3 <= len(x_shape) <= 5:
        return f"{len(x_shape) - 2} spatial dims: oneDNN resamples 1-3"
    threads = num_threads()
    key = (pass_name, mode, x_shape, xs, y_shape, ys, threads)

    def make():
        return build_with_threads(ResamplePlan(
            lib, pass_name, mode, x_shape, y_shape,
            tuple(_normalized(sh, elem_strides(sh, tuple(ITEMSIZE * v for v in st)))
                  for sh, st in ((x_shape, xs), (y_shape, ys))), threads), threads)

    return _cache.get_or_build(key, make)
