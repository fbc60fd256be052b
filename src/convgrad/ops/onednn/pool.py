"""oneDNN's pooling primitive (max, average; forward and backward) as cached plans.

A :class:`PoolPlan` runs one pass of one pooling on the caller's arrays: dense
channels-last as they lie (oneDNN's jit kernels read that layout given by strides), dense
NCHW through copies with the channels in blocks of 16 or 8 (the arena holds them; the
plain NCHW kernel is 2x slower), input and output in the same layout.

* ``"max_forward"``: x -> y and the workspace (where each window's maximum was, one byte
  or int32 per output in the output's layout), which the backward reads;
* ``"max_backward"``: (gy, workspace) -> gx, every gradient sent to its window's maximum;
* ``"avg_forward"`` / ``"avg_backward"``: x -> y, gy -> gx, with the padding counted in
  the divisor or not (``include_pad``).

Windows are torch's: kernel, stride, dilation (oneDNN counts dilation - 1), left padding
and the right padding that makes exactly the output's windows fit (``ceil_mode``).
:func:`pool_plan` returns a cached plan, or the reason (a string) there is none; plans
are kept per (pass, shapes, strides, window, thread count) in a bounded LRU.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..layouts import dense_channels_last
from ..parallel import num_threads
from . import _Cache, _library
from . import _library as L
from ._geometry import Unsupported
from ._plan import _normalized, elem_strides
from ._runtime import F32, ITEMSIZE, Execution, Operand, build_with_threads, dims

__all__ = ["PoolPlan", "pool_plan", "workspace_taps"]

PASSES = ("max_forward", "max_backward", "avg_forward", "avg_backward")
_cache = _Cache(128)


def layout_of(a: np.ndarray) -> str | None:
    """"channels_last", "nchw" (both dense) or None (anything else, or not aligned)."""
    if a.dtype != F32 or not a.flags.aligned:
        return None
    if a.flags.c_contiguous:
        return "nchw"
    if dense_channels_last(a.shape, tuple(s // ITEMSIZE for s in a.strides)):
        return "channels_last"
    return None


class PoolPlan(Execution):
    """One pooling pass on arrays of fixed shapes and layout (see the module docstring).

    ``window``: (kernel, stride, dilation, pad_l, pad_r), per spatial dim, torch's
    dilation.  ``name`` is ``"onednn:"`` and oneDNN's implementation; ``ws_bytes`` and
    ``ws_dtype`` describe the max pooling's workspace.
    """

    def __init__(self, lib: L.Library, pass_name: str, x_shape: tuple, y_shape: tuple,
                 strides: tuple, window: tuple, include_pad: bool, threads: int) -> None:
        super().__init__(lib, threads)
        self.pass_name, self.x_shape, self.y_shape = pass_name, x_shape, y_shape
        self.x_strides, self.y_strides = strides  # element strides
        self.window, self.include_pad = window, include_pad
        self.name, self.ws_bytes, self.ws_dtype, self.blocked = "", 0, None, 0

    def build(self) -> None:
        lib, name = self.lib, self.pass_name
        k, s, d, lo, hi = self.window
        x_md = self._md(self.x_shape, self.x_strides)
        y_md = self._md(self.y_shape, self.y_strides)
        alg = (L.POOLING_MAX if name.startswith("max") else L.POOLING_AVG_INCLUDE_PADDING
               if self.include_pad else L.POOLING_AVG_EXCLUDE_PADDING)
        params = (dims(s), dims(k), dims(tuple(dd - 1 for dd in d)), dims(lo), dims(hi))

        def create(fn: str, *args: object) -> ctypes.c_void_p:
            return self._descriptor("pooling", fn, *args)

        attr = self._attr()
        # max pooling is trained through its workspace; average pooling needs none
        prop = L.FORWARD_TRAINING if name.startswith("max") else L.FORWARD_INFERENCE
        query = lib.raw("dnnl_primitive_desc_query_md")
        forward = name.endswith("forward")
        # NCHW: oneDNN's plain kernel (simple_nchw) measured 2.2x torch on (8, 64, 64, 64)
        # 3x3/2 max pooling forward and backward; its channel-blocked jit kernel with the
        # reorders 1.2x: block the channels (16 for AVX-512, else 8), plain if neither runs
        attempts: list = [(x_md, y_md, 0)]
        if not dense_channels_last(self.x_shape, self.x_strides) and self.x_shape[1] > 1:
            attempts[:0] = [(self._tagged(self.x_shape, b), self._md(self.y_shape,
                                                                      tag=L.FORMAT_ANY), b)
                            for b in (16, 8)]
        for x_prim, y_any, block in attempts:
            try:
                fwd = create("dnnl_pooling_forward_primitive_desc_create", prop, alg, x_prim,
                             y_any, *params, attr)
                y_prim = query(fwd, L.QUERY_DST_MD, 0)
                pd = fwd if forward else create(
                    "dnnl_pooling_backward_primitive_desc_create", alg, x_prim, y_prim,
                    *params, fwd, attr)
            except Unsupported:
                if x_prim is x_md:
                    raise
                continue
            impl = self._implementation(pd, reference_ok=True)
            self.blocked = block  # the channel block of the arena's copies (0: none)
            if not impl.startswith("ref"):
                break
        if impl.startswith("ref"):
            raise Unsupported(f"oneDNN has only its reference implementation ({impl})")
        self.name = f"onednn:{impl}"
        ws_md = query(fwd, L.QUERY_WORKSPACE_MD, 0) if name.startswith("max") else None
        if ws_md:
            self.ws_bytes = int(lib.raw("dnnl_memory_desc_get_size")(ws_md))
            dt = ctypes.c_int()
            lib.call("dnnl_memory_desc_query", ws_md, L.QUERY_DATA_TYPE, ctypes.byref(dt))
            self.ws_dtype = {L.U8: np.dtype(np.uint8), L.S32: np.dtype(np.int32)}.get(dt.value)
        self._main = self._primitive(pd)
        roles = ((L.ARG_SRC, "x", False), (L.ARG_DST, "y", True)) if forward else (
            (L.ARG_DIFF_DST, "y", False), (L.ARG_DIFF_SRC, "x", True))
        prims = {"x": (x_md, x_prim), "y": (y_md, y_prim)}
        for arg, key, output in roles:
            op = Operand(arg, key, output)
            op.user_md, op.prim_md = prims[key]
            if self.blocked:  # reordered between the caller's array and the arena
                op.inner_md = op.prim_md
                self._reorder(op)
            self._operands.append(op)
        if ws_md:
            op = Operand(L.ARG_WORKSPACE, "ws", forward)
            op.user_md = op.prim_md = ws_md
            self._operands.append(op)
        self._place_in_arena()

    def _tagged(self, shape: tuple, block: int) -> ctypes.c_void_p:
        """A descriptor with the channels in blocks of ``block`` (oneDNN's nChw8c etc.)."""
        md = ctypes.c_void_p()
        tag = "aB" + "cde"[:len(shape) - 2] + f"{block}b"
        self.lib.call("dnnl_memory_desc_create_with_string_tag", ctypes.byref(md),
                      len(shape), dims(shape), L.F32, tag.encode())
        return self._own("dnnl_memory_desc_destroy", md)

    def run(self, src: np.ndarray, dst: np.ndarray, ws: np.ndarray | None = None) -> None:
        """Forward: ``src`` x, ``dst`` y; backward: ``src`` gy, ``dst`` gx; ``ws`` the max
        pooling's workspace (written by the forward, read by the backward).  The arrays
        have the plan's shapes and strides (the caller looked the plan up for them)."""
        forward = self.pass_name.endswith("forward")
        arrays = {"x": src, "y": dst} if forward else {"y": src, "x": dst}
        ptrs = {key: a.ctypes.data for key, a in arrays.items()}
        if self.ws_bytes:
            if ws is None or ws.nbytes < self.ws_bytes or not ws.flags.c_contiguous:
                raise ValueError(f"onednn pool {self.pass_name}: ws must be a contiguous "
                                 f"array of at least {self.ws_bytes} bytes")
            arrays["ws"], ptrs["ws"] = ws, ws.ctypes.data
        self.execute(arrays, ptrs)

    def new_workspace(self) -> np.ndarray:
        """An uninitialised workspace for one forward and its backward."""
        return np.empty(self.ws_bytes, dtype=np.uint8)


def pool_plan(pass_name: str, x: np.ndarray | tuple, y: np.ndarray | tuple, window: tuple,
              include_pad: bool = True) -> PoolPlan | str:
    """The cached plan for ``pass_name`` on x (N, C, *L) and y (N, C, *P) (the arrays, or
    (shape, element strides) pairs), or the reason (a string) there is none."""
    lib = _library.library()
    if lib is None:
        return f"oneDNN unavailable: {_library.failure()}"
    shapes = []
    for a in (x, y):
        if isinstance(a, np.ndarray):
            if a.dtype != F32 or not a.flags.aligned:
                return f"dtype {a.dtype}: oneDNN pools float32 only (aligned)"
            shapes.append((a.shape, tuple(s // ITEMSIZE for s in a.strides)))
        else:
            shapes.append(a)
    (x_shape, xs), (y_shape, ys) = shapes
    if not 3 <= len(x_shape) <= 5:
        return f"{len(x_shape) - 2} spatial dims: oneDNN pools 1-3"
    threads = num_threads()
    key = (pass_name, x_shape, xs, y_shape, ys, window, bool(include_pad), threads)

    def make():
        return build_with_threads(PoolPlan(
            lib, pass_name, x_shape, y_shape,
            tuple(_normalized(sh, elem_strides(sh, tuple(ITEMSIZE * v for v in st)))
                  for sh, st in ((x_shape, xs), (y_shape, ys))),
            window, include_pad, threads), threads)

    return _cache.get_or_build(key, make)


def workspace_taps(plan: PoolPlan, ws: np.ndarray, y_shape: tuple, y_strides: tuple
                   ) -> np.ndarray:
    """The tap (row-major index within the kernel window) of each window's maximum, read
    from a max pooling's workspace, laid out as its output: the caller's (element strides
    ``y_strides``) or, for a blocked plan, (N, C/block, *P, block)."""
    data = ws.view(plan.ws_dtype)
    if plan.blocked:
        n, c, *spatial = y_shape
        b = plan.blocked
        cb = -(-c // b)
        nd = len(spatial)
        blocks = data[:n * cb * b * int(np.prod(spatial))].reshape(n, cb, *spatial, b)
        order = (0, 1, nd + 2, *range(2, nd + 2))
        return blocks.transpose(order).reshape(n, cb * b, *spatial)[:, :c]
    item = plan.ws_dtype.itemsize
    return np.lib.stride_tricks.as_strided(data, y_shape, tuple(item * s for s in y_strides))
