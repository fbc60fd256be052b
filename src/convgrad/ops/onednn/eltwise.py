"""oneDNN's eltwise (forward, backward) and binary primitives, for the ``eltwise`` family.

A plan runs one primitive on the caller's arrays as they lie in memory, without
reorders: the caller (:mod:`convgrad.ops.eltwise`) describes each operand by its shape
and element strides.  An activation of dense arrays that share one layout is described
as one flat run of ``n`` elements (it is elementwise: the layout does not matter), so
one plan serves NCHW and channels-last alike; a binary operation keeps the operands'
dims, with size-1 dims of ``src1`` broadcast over ``src0``'s.

* ``"forward"``:  x -> out, ``out = f(x)``;
* ``"backward"``: (g, x) -> out, ``out = g f'(x)``, where ``x`` is the forward's input,
  or its output for the ``*_use_dst_for_bwd`` algorithms;
* ``"binary"``:   (a, b) -> out, ``out = a op b``.

Plans are cached per (kind, algorithm, alpha, beta, shapes, strides, thread count); a
case oneDNN runs only with its reference implementation is refused (the NumPy kernel
runs it, faster).  :func:`plan` returns ``None`` when oneDNN is unavailable or refuses.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _Cache, _library
from . import _library as L
from ._geometry import Unsupported
from ._runtime import F32, Execution, Operand, build_with_threads

__all__ = ["EltwisePlan", "cache_info", "clear_cache", "plan"]

CACHE_CAPACITY = 256  # an activation plan is small; a network has a few dozen shapes

_ROLES = {  # kind -> ((argument, key, output), ...)
    "forward": ((L.ARG_SRC, "x", False), (L.ARG_DST, "out", True)),
    "backward": ((L.ARG_DIFF_DST, "g", False), (L.ARG_SRC, "x", False),
                 (L.ARG_DIFF_SRC, "out", True)),
    "binary": ((L.ARG_SRC, "a", False), (L.ARG_SRC_1, "b", False), (L.ARG_DST, "out", True)),
}


class EltwisePlan(Execution):
    """A cached oneDNN eltwise or binary primitive on arrays of fixed shapes and strides.

    ``run(**arrays)`` with the keys of its kind (``x``/``g``/``a``/``b`` and ``out``);
    ``name`` is ``"onednn:"`` and oneDNN's implementation."""

    # a memory-bound pass of microseconds to milliseconds: holding BLAS (~10 us a call,
    # measured) costs more than its spinning threads do here
    hold_blas = False

    def __init__(self, lib: L.Library, kind: str, alg: str, alpha: float, beta: float,
                 shapes: tuple, strides: tuple, threads: int) -> None:
        super().__init__(lib, threads)
        self.kind, self.alg, self.alpha, self.beta = kind, alg, alpha, beta
        self.shapes, self.strides = shapes, strides
        self.name = ""
        self._keys = tuple(key for _, key, _ in _ROLES[kind])

    def build(self) -> None:
        lib = self.lib
        ops = []
        for (arg, key, output), shape, strides in zip(_ROLES[self.kind], self.shapes,
                                                      self.strides):
            if key == "x" and self.alg.endswith("_use_dst_for_bwd"):
                arg = L.ARG_DST  # the backward reads the forward's output
            op = Operand(arg, key, output)
            op.user_md = op.prim_md = self._md(shape, strides)
            ops.append(op)
        pd = ctypes.c_void_p()
        attr = self._attr()
        try:
            if self.kind == "binary":
                a, b, out = ops
                lib.call("dnnl_binary_primitive_desc_create", ctypes.byref(pd), lib.engine,
                         L.BINARY_ALGS[self.alg], a.user_md, b.user_md, out.user_md, attr)
                self._own("dnnl_primitive_desc_destroy", pd)
            else:
                alg = L.ELTWISE_ALGS[self.alg]
                src = ops[1 if self.kind == "backward" else 0].user_md
                hint = ctypes.c_void_p()
                lib.call("dnnl_eltwise_forward_primitive_desc_create", ctypes.byref(hint),
                         lib.engine, L.FORWARD_TRAINING, alg, src, src, self.alpha,
                         self.beta, None if self.kind == "backward" else attr)
                self._own("dnnl_primitive_desc_destroy", hint)
                if self.kind == "forward":
                    pd = hint
                else:
                    g, x, out = ops
                    lib.call("dnnl_eltwise_backward_primitive_desc_create", ctypes.byref(pd),
                             lib.engine, alg, out.user_md, g.user_md, x.user_md, self.alpha,
                             self.beta, hint, attr)
                    self._own("dnnl_primitive_desc_destroy", pd)
        except L.DnnlError as e:
            if e.status in (L.UNIMPLEMENTED, L.INVALID_ARGUMENTS):
                raise Unsupported(f"oneDNN rejects this {self.kind} {self.alg} ({e})") from None
            raise
        self.name = f"onednn:{self._implementation(pd)}"
        self._main = self._primitive(pd)
        self._operands = ops
        self._place_in_arena()

    def run(self, **arrays: np.ndarray) -> np.ndarray:
        """Run on ``arrays`` (float32, the plan's shapes and strides; unchecked beyond
        that: the caller chose the plan for them); returns ``arrays["out"]``."""
        ptrs = {}
        for key in self._keys:
            a = arrays[key]
            if a.dtype != F32:
                raise ValueError(f"onednn eltwise plan: {key} must be float32, got {a.dtype}")
            ptrs[key] = a.ctypes.data
        self.execute(arrays, ptrs)
        return arrays["out"]

    def __repr__(self) -> str:
        return f"<onednn {self.kind} {self.alg} {self.name} shapes={self.shapes}>"


_cache = _Cache(CACHE_CAPACITY)


def plan(kind: str, alg: str, shapes: tuple, strides: tuple, threads: int,
         alpha: float = 0.0, beta: float = 0.0) -> EltwisePlan | None:
    """The cached plan for ``kind`` (``forward``, ``backward``, ``binary``) of ``alg`` on
    operands of these shapes and element strides (in the kind's operand order), or
    ``None`` when oneDNN is unavailable or runs it only with its reference code."""
    lib = _library.library()
    if lib is None:
        return None
    key = (kind, alg, float(alpha), float(beta), shapes, strides, threads)
    entry = _cache.get(key)
    if entry is None:
        entry = _cache.get_or_build(key, lambda: build_with_threads(
            EltwisePlan(lib, kind, alg, float(alpha), float(beta), shapes, strides, threads),
            threads))
    return entry if isinstance(entry, EltwisePlan) else None


def reason(kind: str, alg: str, shapes: tuple, strides: tuple, threads: int,
           alpha: float = 0.0, beta: float = 0.0) -> str | None:
    """Why :func:`plan` returns ``None`` (``None`` when it does not)."""
    if _library.library() is None:
        return f"oneDNN unavailable: {_library.failure()}"
    entry = _cache.get((kind, alg, float(alpha), float(beta), shapes, strides, threads))
    if entry is None:
        plan(kind, alg, shapes, strides, threads, alpha, beta)
        return reason(kind, alg, shapes, strides, threads, alpha, beta)
    return None if isinstance(entry, EltwisePlan) else entry


def cache_info() -> dict:
    return _cache.info() | {"plans": sum(  # _Cache counts convolution plans only
        isinstance(e, EltwisePlan) for e in list(_cache._entries.values()))}


def clear_cache() -> None:
    _cache.clear()
