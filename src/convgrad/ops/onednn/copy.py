"""oneDNN's reorder primitive as a strided copy, for the ``layout`` family.

A plan copies a float32 array of one shape from one set of element strides to another:
a layout conversion (NCHW to channels-last and back), or any permutation of axes that
a reshape exposes (a pixel shuffle is a copy between two 6-D views).  oneDNN's
jitted reorder runs it on every thread at memory speed, where NumPy's copy loops over
the destination's innermost dim, however short (a pixel unshuffle by 2: an inner loop
of 2 elements, 14 ms for 17 MB).

Plans are cached per (shape, strides, thread count); a copy oneDNN runs only with its
reference implementation is refused.  :func:`plan` returns ``None`` when oneDNN is
unavailable or refuses.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _Cache, _library
from . import _library as L
from ._geometry import Unsupported
from ._runtime import F32, Execution, Operand, build_with_threads

__all__ = ["CopyPlan", "plan"]

CACHE_CAPACITY = 64  # a network copies between a few layouts of a few shapes


class CopyPlan(Execution):
    """A cached oneDNN reorder from ``src`` to ``dst``, arrays of one shape with fixed
    element strides.  ``run(src, dst)``; ``name`` is ``"onednn:"`` and oneDNN's
    implementation."""

    hold_blas = False  # a memory-bound pass: holding BLAS costs more than it saves

    def __init__(self, lib: L.Library, shape: tuple, strides: tuple, threads: int) -> None:
        super().__init__(lib, threads)
        self.shape, self.strides = shape, strides
        self.name = ""

    def build(self) -> None:
        ops = []
        for (arg, key, output), strides in zip(((L.ARG_SRC, "src", False),
                                                 (L.ARG_DST, "dst", True)), self.strides):
            op = Operand(arg, key, output)
            op.user_md = op.prim_md = self._md(self.shape, strides)
            ops.append(op)
        pd = ctypes.c_void_p()
        try:
            self.lib.call("dnnl_reorder_primitive_desc_create", ctypes.byref(pd),
                          ops[0].user_md, self.lib.engine, ops[1].user_md, self.lib.engine,
                          self._attr())
        except L.DnnlError as e:
            if e.status in (L.UNIMPLEMENTED, L.INVALID_ARGUMENTS):
                raise Unsupported(f"oneDNN rejects this copy ({e})") from None
            raise
        self._own("dnnl_primitive_desc_destroy", pd)
        impl = self._implementation(pd)
        src, dst = self.strides
        order = sorted(range(len(self.shape)), key=lambda d: -src[d])
        if not impl.startswith("jit") and order != sorted(range(len(self.shape)),
                                                         key=lambda d: -dst[d]):
            # "simple" names its copy of one memory order to another with gaps (runs
            # copied whole: faster than NumPy's) and its element-by-element loop alike
            raise Unsupported(f"oneDNN has no jitted reorder for this copy ({impl})")
        self.name = f"onednn:{impl}"
        self._main = self._primitive(pd)
        self._operands = ops
        self._place_in_arena()

    def run(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Copy ``src`` into ``dst`` (float32, the plan's shape and strides; unchecked
        beyond the dtype: the caller chose the plan for them); returns ``dst``."""
        if src.dtype != F32 or dst.dtype != F32:
            raise ValueError(f"onednn copy plan: float32 arrays expected, got {src.dtype} "
                             f"and {dst.dtype}")
        arrays = {"src": src, "dst": dst}
        self.execute(arrays, {"src": src.ctypes.data, "dst": dst.ctypes.data})
        return dst

    def __repr__(self) -> str:
        return f"<onednn copy {self.name} shape={self.shape} strides={self.strides}>"


_cache = _Cache(CACHE_CAPACITY)


def plan(shape: tuple, strides: tuple, threads: int) -> CopyPlan | None:
    """The cached plan copying an array of ``shape`` with element strides ``strides[0]``
    into one with ``strides[1]``, or ``None`` when oneDNN is unavailable or has no jitted
    reorder for it."""
    lib = _library.library()
    if lib is None:
        return None
    key = (shape, strides, threads)
    entry = _cache.get(key)
    if entry is None:
        entry = _cache.get_or_build(key, lambda: build_with_threads(
            CopyPlan(lib, shape, strides, threads), threads))
    return entry if isinstance(entry, CopyPlan) else None
