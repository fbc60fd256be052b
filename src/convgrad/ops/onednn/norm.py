"""oneDNN's batch normalization primitive: the ``norm`` family's plans.

One :class:`NormPlan` is one pass of batch normalization over a dense float32 array
(N, C, *spatial) in NCHW or channels-last memory, handed to oneDNN as it is (no
reorder: a plain layout described by its strides; the output has the input's layout):

* ``"forward_training"``: y from the batch mean and biased variance, given
  (``use_global_stats``: oneDNN's own float32 statistics were off by 1e-5 to 3.5e-5
  relative on (8, 64, 64..128, 128..128), torch's by 5e-8), and the fused ReLU's mask;
* ``"forward_inference"``: y from the running mean and variance (``use_global_stats``);
* ``"backward"``: the input gradient, and the scale and shift gradients when the plan's
  flags have the scale and shift (``prop_kind`` backward), from x, the gradient, the
  batch mean and variance (and the ReLU workspace when fused).

Flags are oneDNN's (``USE_SCALE``, ``USE_SHIFT``, ``FUSE_NORM_RELU``): with
``FUSE_NORM_RELU`` the forward applies ReLU and writes a workspace (a bit mask) that the
backward reads.  The statistics are (C,) float32 arrays.  Plans are cached per (pass,
shape, layout, flags, eps, thread count) in the convolution's bounded LRU type.
"""

from __future__ import annotations

import ctypes
from math import prod

import numpy as np

from ..layouts import dense_strides
from ..parallel import num_threads
from . import _Cache, _library
from . import _library as L
from ._runtime import F32, Execution, Operand, build_with_threads

__all__ = ["NormPlan", "batch_norm_plan", "clear_cache"]

PASSES = ("forward_training", "forward_inference", "backward")
_cache = _Cache(64)


def clear_cache() -> None:
    """Drop every cached normalisation plan."""
    _cache.clear()


class NormPlan(Execution):
    """A cached oneDNN batch normalization pass (see the module docstring).

    Attributes: ``name`` (``"onednn:"`` and oneDNN's implementation), ``pass_name``,
    ``shape``, ``channels_last``, ``flags``, ``eps``, ``workspace_size`` (bytes of the
    fused ReLU's mask, 0 without it), ``threads``.
    """

    def __init__(self, lib: L.Library, pass_name: str, shape: tuple, channels_last: bool,
                 flags: int, eps: float, threads: int) -> None:
        super().__init__(lib, threads)
        self.pass_name, self.shape, self.channels_last = pass_name, shape, channels_last
        self.flags, self.eps = flags, eps
        self.name, self.workspace_size = "", 0

    def _create(self, fn: str, *args: object) -> ctypes.c_void_p:
        return self._descriptor("batch normalization", fn, *args)

    def build(self) -> None:
        lib, flags, name = self.lib, self.flags, self.pass_name
        c = self.shape[1]
        data = self._md(self.shape, dense_strides(self.shape, self.channels_last))
        stat = self._md((c,), tag=L.FORMAT_A)
        attr = self._attr()
        prop = L.FORWARD_INFERENCE if name == "forward_inference" else L.FORWARD_TRAINING
        if name == "backward":  # the hint: the training forward that computes its statistics
            fwd = self._create("dnnl_batch_normalization_forward_primitive_desc_create", prop,
                               data, data, ctypes.c_float(self.eps), flags, None)
        else:  # the statistics come in (the accurate sums of ops.reduction)
            pd = self._create("dnnl_batch_normalization_forward_primitive_desc_create", prop,
                              data, data, ctypes.c_float(self.eps),
                              flags | L.USE_GLOBAL_STATS, attr)
        if name == "backward":
            prop = L.BACKWARD if flags & (L.USE_SCALE | L.USE_SHIFT) else L.BACKWARD_DATA
            pd = self._create("dnnl_batch_normalization_backward_primitive_desc_create", prop,
                              data, data, data, ctypes.c_float(self.eps), flags, fwd, attr)
        self.name = f"onednn:{self._implementation(pd)}"
        ws = lib.raw("dnnl_primitive_desc_query_md")(pd, L.QUERY_WORKSPACE_MD, 0)
        self.workspace_size = int(lib.raw("dnnl_memory_desc_get_size")(ws)) if ws else 0
        self._main = self._primitive(pd)

        def operand(arg: int, key: str, md, output: bool = False) -> Operand:
            op = Operand(arg, key, output)
            op.user_md = op.prim_md = md
            return op

        ops = [operand(L.ARG_SRC, "src", data)]
        if name == "backward":
            ops += [operand(L.ARG_DIFF_DST, "diff_dst", data),
                    operand(L.ARG_DIFF_SRC, "diff_src", data, True)]
        else:
            ops.append(operand(L.ARG_DST, "dst", data, True))
        ops += [operand(L.ARG_MEAN, "mean", stat), operand(L.ARG_VARIANCE, "var", stat)]
        backward_weights = name == "backward" and prop == L.BACKWARD
        if flags & L.USE_SCALE:
            ops.append(operand(L.ARG_SCALE, "scale", stat))
            if backward_weights:
                ops.append(operand(L.ARG_DIFF_SCALE, "diff_scale", stat, True))
        if flags & L.USE_SHIFT:
            if name != "backward":
                ops.append(operand(L.ARG_SHIFT, "shift", stat))
            elif backward_weights:
                ops.append(operand(L.ARG_DIFF_SHIFT, "diff_shift", stat, True))
        if self.workspace_size:
            ops.append(operand(L.ARG_WORKSPACE, "ws", ws, name == "forward_training"))
        self._operands = ops
        self._place_in_arena()

    def run(self, arrays: dict) -> None:
        """Run on ``arrays`` by operand key (``src``, ``dst``/``diff_dst``, ``diff_src``,
        ``mean``, ``var``, ``scale``, ``shift``, ``diff_scale``, ``diff_shift``, ``ws``):
        float32 arrays of the plan's shape and layout ((C,) contiguous for statistics), the
        workspace a uint8 array of ``workspace_size`` bytes.  Raises ValueError."""
        ptrs = {}
        for op in self._operands:
            a = arrays.get(op.key)
            if op.key == "ws":
                ok = (isinstance(a, np.ndarray) and a.dtype == np.uint8
                      and a.nbytes >= self.workspace_size and a.flags.c_contiguous)
            elif op.key in ("src", "dst", "diff_dst", "diff_src"):
                ok = (isinstance(a, np.ndarray) and a.dtype == F32 and a.shape == self.shape
                      and all(n == 1 or s == 4 * d for n, s, d in zip(
                          a.shape, a.strides, dense_strides(self.shape, self.channels_last))))
            else:
                ok = (isinstance(a, np.ndarray) and a.dtype == F32
                      and a.shape == (self.shape[1],) and a.flags.c_contiguous)
            if not ok or (op.output and not a.flags.writeable):
                raise ValueError(f"onednn norm plan {self.pass_name}: {op.key} must be a "
                                 f"writeable aligned array of the plan's shape {self.shape} "
                                 f"and layout, got {getattr(a, 'dtype', type(a).__name__)} "
                                 f"{getattr(a, 'shape', '')} {getattr(a, 'strides', '')}")
            ptrs[op.key] = a.ctypes.data
        self.execute(arrays, ptrs)

    def __repr__(self) -> str:
        return (f"<onednn norm plan {self.pass_name} {self.name} shape={self.shape} "
                f"channels_last={self.channels_last} flags={self.flags}>")


def batch_norm_plan(pass_name: str, shape: tuple, channels_last: bool, flags: int,
                    eps: float) -> NormPlan | str:
    """The cached plan for one batch normalization pass, or why there is none (a string)."""
    if pass_name not in PASSES:
        raise ValueError(f"batch_norm_plan: pass_name={pass_name!r} must be one of {PASSES}")
    lib = _library.library()
    if lib is None:
        return f"oneDNN unavailable: {_library.failure()}"
    shape, threads = tuple(int(n) for n in shape), num_threads()
    if len(shape) < 2 or len(shape) > 5 or prod(shape) == 0:
        return f"shape {shape}: oneDNN normalises 2-5 dim non-empty arrays"
    key = (pass_name, shape, bool(channels_last), int(flags), float(eps), threads)
    return _cache.get_or_build(key, lambda: build_with_threads(
        NormPlan(lib, pass_name, shape, bool(channels_last), int(flags), float(eps), threads),
        threads))
