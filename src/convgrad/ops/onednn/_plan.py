"""One pass of one convolution as oneDNN primitives, built once and run many times.

A :class:`Plan` describes oneDNN's primitive (forward, backward-data or
backward-weights of a convolution or deconvolution, see :mod:`._geometry`) and the
reorders between the caller's arrays and the layouts oneDNN chose; running it (the
per-thread arena, contexts, steps) is :mod:`._runtime`'s, shared by every family.

Layout: a dense activation is handed to oneDNN as it is where that measured faster
(:func:`hand_over`: most channels-last passes, NCHW 1x1 convolutions); any other
activation, and every weight, is described with ``format_tag_any`` (a large weight of a
2-D convolution: 16x16 blocks, :func:`weights_16x16`) and reordered from or to the
caller's array (a reorder that keeps the layout is skipped).  The
arrays' strides are part of the plan.
"""

from __future__ import annotations

import ctypes
from math import prod

import numpy as np

from ..layouts import channels_last_strides, dense_channels_last
from ..spec import Pass
from . import _library as L
from ._geometry import Geometry, Unsupported
from ._runtime import F32, ITEMSIZE, Execution, Operand, build_with_threads, dims

__all__ = ["Plan", "WEIGHTS_16X16", "WIDE_MIN_CHANNELS", "build", "elem_strides", "hand_over",
           "weights_16x16", "wide"]


def hand_over(geo: Geometry, layout: str) -> bool:
    """Whether dense activations in ``layout`` ("channels_last" or "nchw") go to oneDNN
    as they are, or are reordered to its blocked layout first (the default).

    Measured on W1-W8 (2 threads, AVX-512, a shared machine: provisional), direct
    over blocked, channels-last: forward 0.44-0.89, input gradient 0.54-0.99; weight
    gradient 0.50-0.87 for W2, W4, W6, 0.36-1.02 for W5, 0.71-1.14 for W1, but
    1.11-1.31 for W7 (1-D) and 1.03-1.18 for W8 (8 groups of 16).  A weight gradient
    reading few input channels (a network's first layer) goes direct too: its blocked
    kernel alone was 0.99-1.54x faster on W3 (3 channels), but the reorder of the
    output's gradient to blocks costs more than that (Xeon, AVX-512, cold caches, whole
    pass with its reorders, ms, blocked -> direct: W3 10.6 -> 8.4, ResNet-18's 7x7 stem
    2.9 -> 2.6, DCGAN's 3 -> 64 4x4/2 1.44 -> 0.97, 1 -> 32 3x3/2 0.36 -> 0.21, 4 and 6
    channels 1.48 -> 0.49 and 0.96 -> 0.41, a 3-D U-Net's 1 -> 16 3^3 5.1 -> 3.2; the
    float32 error the same or lower, at torch channels_last's).  NCHW: only unpadded,
    unstrided 1x1 convolutions gain (W2, forward and input gradient 0.63-0.79 of
    blocked, 0.61-0.72 of torch; oneDNN runs them as one GEMM); for their weight
    gradient the measurements disagreed (0.70-1.9), so it keeps the blocked layout.
    One channel in and out (MS-SSIM's window on a grey image): NCHW memory is
    channels-last memory, and goes as such;
    blocked, oneDNN pads the channel to 16 (measured on the demo's 5-tap window over
    (40, 1, 96, 96), interleaved, ms: forward 3.1 -> 0.59, input gradient 8.5 -> 0.69).

    Accuracy: oneDNN's channels-last kernels sum in another order than its blocked ones,
    and their float32 error measured 1.6-10x torch NCHW's (as torch channels_last's).
    For a :func:`wide` convolution, whose activations are small beside its weight and
    work, blocked activations in the forward and the unstrided input gradient cost
    1.0-1.05x the time (ResNet-18's 128x128 3x3 on (8, 128, 16, 16) 1.02x and 1.05x,
    256x256 and 512x512 0.95-1.05x; its step 182-203 -> 174-188 ms in separate
    processes, with the 256- and 512-channel layers blocked), so those go blocked, at
    torch NCHW's error (128x128: 5.8x and 4.3x -> 1.0x; 256x256: 8.8x and 7.0x -> 1.0x).
    Narrower layers keep channels-last: blocked cost 1.05-1.13x for 64 channels and
    1.3-1.44x for the U-Net's 16-48 on 64x64.  Strided input gradients run
    ``brgconv_strided`` either way, at torch NCHW's error.
    """
    if wide(geo) and (geo.pass_name == Pass.FORWARD or (
            geo.pass_name == Pass.INPUT_GRAD and all(s == 1 for s in geo.strides))):
        return False
    if layout == "nchw" and geo.x_shape[1] == geo.y_shape[1] == 1:
        layout = "channels_last"
    grouped = len(geo.weight_dims) > len(geo.w_shape)
    c_per_group = geo.w_shape[1]
    if layout == "nchw":
        pointwise = (all(k == 1 for k in geo.w_shape[2:]) and all(s == 1 for s in geo.strides)
                     and not any((*geo.pad_l, *geo.pad_r)) and not geo.cropped
                     and not geo.padded)
        return pointwise and not grouped and geo.pass_name != "weight_grad"
    if geo.pass_name != Pass.WEIGHT_GRAD:
        return True
    depthwise = grouped and c_per_group == 1
    return len(geo.strides) > 1 and (depthwise or not grouped)


#: oneDNN's 16x16-blocked weight layouts of a 2-D convolution (dnnl_format_tag_t):
#: the forward's (out, in) blocks and the input gradient's (in, out) blocks
WEIGHTS_16X16 = {Pass.FORWARD: 79, Pass.INPUT_GRAD: 75}  # ABcd16b16a, ABcd16a16b
#: From this many channels in and out (and at most 3x3 taps) a convolution is
#: :func:`wide`: blocked activations and 16x16 weights in its forward
WIDE_MIN_CHANNELS = 128


def wide(geo: Geometry) -> bool:
    """An ungrouped 2-D convolution with at least :data:`WIDE_MIN_CHANNELS` channels in
    and out and at most 3x3 taps (ResNet-18 from its second stage on)."""
    return (geo.family == "convolution" and len(geo.weight_dims) == 4
            and len(geo.strides) == 2 and prod(geo.weight_dims[2:]) <= 9
            and min(geo.weight_dims[:2]) >= WIDE_MIN_CHANNELS)


def weights_16x16(geo: Geometry) -> bool:
    """Whether a pass asks oneDNN for its weight in 16x16 blocks (:data:`WEIGHTS_16X16`)
    rather than in the layout oneDNN picks (``format_tag_any``): the forward of a
    :func:`wide` convolution, and both passes of a strided 1x1 projection.

    Measured on 2 threads of an AVX-512 EPYC, channels-last activations, cold caches,
    15 interleaved runs (ms, 16x16 / oneDNN's own): ResNet-18's 512x512 3x3 forward 2.52 /
    3.03, 256->512 3x3 stride 2 1.50 / 1.85, 256x256 3x3 0.92x, 128->256 0.95x; 1x1
    stride-2 projections 0.76-0.93x forward and 0.80-0.90x input gradient at any size;
    in a ResNet-18 training step the weight reorders went from 27 to 13 ms (with
    channels-last activations; blocked ones, see :func:`hand_over`, take 16x16 weights
    anyway).  Kept on
    oneDNN's choice: DCGAN's 4x4 stride-2 forward (1.15x with 2.1M weights), smaller 3x3
    weights (0.94-1.26x; U-Net's 16 and 48 channels the worst), and the input gradient of
    3x3 and larger kernels: 0.79-0.93x the time, but its float32 error reached 2.6x
    torch's (channels-last, same layout; the forward's 1.37x at most, the 1x1's equal).
    Only ungrouped 2-D convolutions (the layouts are 4-D) on AVX-512 (where measured:
    :meth:`Plan.build` keeps the request only where oneDNN answers with a ``jit`` kernel
    for ``avx512``).
    """
    if (geo.family != "convolution" or geo.pass_name not in WEIGHTS_16X16
            or len(geo.weight_dims) != 4 or len(geo.strides) != 2):
        return False
    if prod(geo.weight_dims[2:]) == 1 and any(s > 1 for s in geo.strides):
        return True
    return geo.pass_name == Pass.FORWARD and wide(geo)


def _layout(shape: tuple, strides: tuple) -> str:
    """"channels_last", "nchw" (dense, C-contiguous) or "strided" (anything else)."""
    if dense_channels_last(shape, strides):
        return "channels_last"
    if strides == elem_strides(shape, None) or all(
            n == 1 or s == d for n, s, d in zip(shape, strides, elem_strides(shape, None))):
        return "nchw"
    return "strided"


def elem_strides(shape: tuple, strides: tuple | None, itemsize: int = ITEMSIZE
                 ) -> tuple[int, ...]:
    """Element strides of an array (C-contiguous when ``strides`` is None); size-1 dims
    get a stride past the whole array.  Raises :class:`Unsupported`."""
    if strides is None:
        out, acc = [], 1
        for n in reversed(shape):
            out.append(acc)
            acc *= n
        return tuple(reversed(out))
    if len(strides) != len(shape):
        raise ValueError(f"onednn.plan: strides {strides} do not match shape {shape}")
    out = []
    for n, s in zip(shape, strides):
        if n > 1 and (s <= 0 or s % itemsize):
            raise Unsupported(f"strides {strides} (not positive whole elements)")
        out.append(s // itemsize)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, out) if n > 1)
    return tuple(s if n > 1 else span for n, s in zip(shape, out))


def _normalized(shape: tuple, strides: tuple) -> tuple[int, ...]:
    """Strides with size-1 dims given the value of the dense layout they belong to, so
    oneDNN recognises a plain layout."""
    layout = _layout(shape, strides)
    if layout == "strided":
        return strides
    dense = channels_last_strides(shape) if layout == "channels_last" else elem_strides(
        shape, None)
    return tuple(d if n == 1 else s for n, s, d in zip(shape, strides, dense))


class Plan(Execution):
    """A cached oneDNN execution of one convolution pass (see the module docstring).

    Attributes: ``name`` (``"onednn:"`` and oneDNN's implementation, e.g.
    ``onednn:brg:avx512_core``), ``flops``, ``workspace_bytes`` (arena bytes one run
    needs), ``reorders`` (the arguments copied between the caller's layout and
    oneDNN's), ``pass_name``, ``shapes`` and ``byte_strides`` (of lhs, rhs, out;
    ``None``: C-contiguous), ``bias``, ``relu_slope`` (a forward whose output goes
    through a (leaky) ReLU in the same primitive, as oneDNN's eltwise post-op; ``None``:
    none), ``threads``.
    """

    def __init__(self, lib: L.Library, geo: Geometry, shapes: tuple, byte_strides: tuple,
                 bias: bool, threads: int, relu_slope: float | None = None) -> None:
        super().__init__(lib, threads)
        self.geometry = geo
        self.pass_name = geo.pass_name
        self.shapes, self.byte_strides, self.bias = shapes, byte_strides, bias
        self.relu_slope = relu_slope
        self.strides = tuple(_normalized(sh, elem_strides(sh, st))
                             for sh, st in zip(shapes, byte_strides))
        self._expect = tuple(  # what run() checks: key, shape, strides, C-contiguous strides
            (key, sh, st, tuple(ITEMSIZE * v for v in elem_strides(sh, None)))
            for key, sh, st in zip(("lhs", "rhs", "out"), shapes, byte_strides))
        self.name, self.flops, self.reorders = "", 0, ()

    # -- building ----------------------------------------------------------------
    def build(self) -> None:
        geo, lib, name = self.geometry, self.lib, self.pass_name
        key_of = dict(zip(geo.roles, ("lhs", "rhs", "out")))
        strides = dict(zip(("lhs", "rhs", "out"), self.strides))
        fwd, bwd_data, bwd_weights = (name == p for p in (Pass.FORWARD, Pass.INPUT_GRAD,
                                                          Pass.WEIGHT_GRAD))
        x = Operand(L.ARG_DIFF_SRC if bwd_data else L.ARG_SRC, key_of["x"], bwd_data)
        w = Operand(L.ARG_DIFF_WEIGHTS if bwd_weights else L.ARG_WEIGHTS, key_of["w"],
                     bwd_weights)
        y = Operand(L.ARG_DST if fwd else L.ARG_DIFF_DST, key_of["y"], fwd)

        # the caller's side of each operand
        xs = strides[x.key]
        x.offset = ITEMSIZE * sum(a * s for (a, _), s in zip(geo.crop, xs[2:]))
        crop_dims = (*geo.x_shape[:2], *(b - a for a, b in geo.crop))
        x.user_md = self._md(crop_dims, xs)
        y.user_md = self._md(geo.y_shape, strides[y.key])
        if geo.flip_weights:
            w.flip_nd, w.staging_shape = len(geo.strides), geo.w_shape
            w.user_md = self._md(geo.weight_dims, tag=L.FORMAT_A + len(geo.weight_dims) - 1)
        else:
            ws = strides[w.key]
            grouped = ws if len(geo.weight_dims) == len(ws) else (geo.weight_dims[1] * ws[0],
                                                                  *ws)
            w.user_md = self._md(geo.weight_dims, grouped)

        # what the primitive is asked to use
        # plain NCHW only goes as it is when both activations have it (oneDNN has no
        # fast kernel for one plain and one channels-last activation)
        x_layout, y_layout = _layout(geo.x_shape, xs), _layout(geo.y_shape, strides[y.key])
        x_direct, y_direct = (
            a != "strided" and hand_over(geo, a) and (a != "nchw" or b == "nchw")
            for a, b in ((x_layout, y_layout), (y_layout, x_layout)))
        w_any = self._md(geo.weight_dims, tag=L.FORMAT_ANY)
        b_md = self._md((geo.y_shape[1],), tag=L.FORMAT_A) if self.bias else None
        any_x = self._md(geo.src_dims, tag=L.FORMAT_ANY)
        any_y = self._md(geo.y_shape, tag=L.FORMAT_ANY)
        x_req, y_req = any_x, any_y
        if x_direct:
            dense = (channels_last_strides(geo.src_dims) if x_layout == "channels_last"
                     else elem_strides(geo.src_dims, None))
            x_req = (x.user_md if not geo.cropped and not geo.padded
                     else self._md(geo.src_dims, dense))
        if y_direct:
            y_req = y.user_md
        attempts = [(x_req, w_any, y_req)]
        if x_direct or y_direct:  # oneDNN's own layouts when it has nothing fast for ours
            attempts.append((any_x, w_any, any_y))
        if weights_16x16(geo):
            attempts.insert(0, (x_req, self._md(geo.weight_dims,
                                                tag=WEIGHTS_16X16[name]), y_req))
        for i, (x_md, w_md, y_md) in enumerate(attempts, 1):
            try:
                pd, impl = self._primitive_desc(x_md, w_md, y_md, b_md)
            except Unsupported:
                if i == len(attempts):
                    raise
                continue
            if w_md is not w_any and not (impl.startswith("jit") and "avx512" in impl):
                continue  # the 16x16 blocks only where they were measured faster
            if not impl.startswith("ref"):
                break
        if impl.startswith("ref"):
            raise Unsupported(f"oneDNN has only its reference implementation ({impl})")
        self.name = f"onednn:{impl}"
        query = lib.raw("dnnl_primitive_desc_query_md")
        x.prim_md = query(pd, L.QUERY_DIFF_SRC_MD if bwd_data else L.QUERY_SRC_MD, 0)
        w.prim_md = query(pd, L.QUERY_DIFF_WEIGHTS_MD if bwd_weights else L.QUERY_WEIGHTS_MD, 0)
        y.prim_md = query(pd, L.QUERY_DST_MD if fwd else L.QUERY_DIFF_DST_MD, 0)
        self._main = self._primitive(pd)

        # reorders between the caller's side and the primitive's
        equal = lib.raw("dnnl_memory_desc_equal")
        for op in (x, w, y):
            if op is x and geo.padded:
                sub = ctypes.c_void_p()
                offsets = (0, 0, *(lo for lo, _ in geo.extra))
                lib.call("dnnl_memory_desc_create_submemory", ctypes.byref(sub), op.prim_md,
                         dims(crop_dims), dims(offsets))
                op.inner_md = self._own("dnnl_memory_desc_destroy", sub)
                op.zero = not op.output
            elif equal(op.user_md, op.prim_md):
                continue
            else:
                op.inner_md = op.prim_md
            self._reorder(op)
        self._operands = [x, w, y]
        if self.bias:
            b = Operand(L.ARG_BIAS, "bias", False)
            b.user_md = b.prim_md = b_md
            self._operands.append(b)
        self.reorders = tuple(op.key for op in self._operands if op.reorder)

        self._place_in_arena()
        N, C_out = geo.y_shape[:2]
        self.flops = 2 * N * C_out * prod(geo.w_shape[1:]) * prod(geo.y_shape[2:])

    def _primitive_desc(self, x_md, w_md, y_md, b_md) -> tuple[ctypes.c_void_p, str]:
        """The primitive descriptor for these memory descriptors, and its implementation."""
        geo, lib, name = self.geometry, self.lib, self.pass_name
        kind = geo.family
        params = (dims(geo.strides), dims(geo.dilates), dims(geo.pad_l), dims(geo.pad_r))
        alg = L.CONVOLUTION_DIRECT if kind == "convolution" else L.DECONVOLUTION_DIRECT

        def create(fn: str, *args: object) -> ctypes.c_void_p:
            pd = ctypes.c_void_p()
            try:
                lib.call(fn, ctypes.byref(pd), lib.engine, *args)
            except L.DnnlError as e:
                if e.status in (L.UNIMPLEMENTED, L.INVALID_ARGUMENTS):
                    raise Unsupported(f"oneDNN rejects this {kind} ({e})") from None
                raise
            return self._own("dnnl_primitive_desc_destroy", pd)

        def impl_of(pd: ctypes.c_void_p) -> tuple[ctypes.c_void_p, str]:
            info = ctypes.c_char_p()
            lib.call("dnnl_primitive_desc_query", pd, L.QUERY_IMPL_INFO_STR, 0,
                     ctypes.byref(info))
            return pd, (info.value or b"?").decode()

        attr = self._attr()
        if self.relu_slope is not None:  # y = relu(conv(x, w) + b), slope below zero
            post = ctypes.c_void_p()
            lib.call("dnnl_post_ops_create", ctypes.byref(post))
            self._own("dnnl_post_ops_destroy", post)
            lib.call("dnnl_post_ops_append_eltwise", post, L.ELTWISE_ALGS["relu"],
                     float(self.relu_slope), 0.0)
            lib.call("dnnl_primitive_attr_set_post_ops", attr, post)
        hint = create(f"dnnl_{kind}_forward_primitive_desc_create", L.FORWARD_TRAINING, alg,
                      x_md, w_md, b_md if name == Pass.FORWARD else None, y_md, *params,
                      attr if name == Pass.FORWARD else None)
        if name == Pass.FORWARD:
            return impl_of(hint)
        if name == Pass.INPUT_GRAD:
            return impl_of(create(f"dnnl_{kind}_backward_data_primitive_desc_create", alg,
                                  x_md, w_md, y_md, *params, hint, attr))
        return impl_of(create(f"dnnl_{kind}_backward_weights_primitive_desc_create", alg,
                              x_md, w_md, None, y_md, *params, hint, attr))  # no diff_bias

    # -- running -----------------------------------------------------------------
    def run(self, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
            bias: np.ndarray | None = None) -> np.ndarray:
        """Compute the pass into ``out``; returns ``out``.

        The arrays must be float32 with the shapes and strides of the plan; ``bias``, of
        shape (C_out,), exactly when the (forward) plan was made with ``bias=True``.
        Raises ValueError otherwise.
        """
        arrays = {"lhs": lhs, "rhs": rhs, "out": out}
        ptrs = {}
        for (key, shape, strides, dense), a in zip(self._expect, (lhs, rhs, out)):
            if (not isinstance(a, np.ndarray) or a.dtype != F32 or a.shape != shape
                    or (a.strides != strides if strides is not None
                        else a.strides != dense and not a.flags.c_contiguous)
                    or (ptrs.setdefault(key, a.ctypes.data) % ITEMSIZE)):
                raise ValueError(
                    f"onednn plan {self.pass_name}: {key} must be an aligned float32 array of "
                    f"shape {shape} and strides {strides or 'C-contiguous'}, got "
                    f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')} "
                    f"{getattr(a, 'strides', '')}")
        if not out.flags.writeable:
            raise ValueError(f"onednn plan {self.pass_name}: out is read-only")
        if (bias is not None) != self.bias:
            raise ValueError(f"onednn plan {self.pass_name}: made with bias={self.bias}; got "
                             f"bias={type(bias).__name__}")
        if self.bias:
            n = self.geometry.y_shape[1]
            if not isinstance(bias, np.ndarray) or bias.shape != (n,):
                raise ValueError(f"onednn plan {self.pass_name}: bias must be an array of "
                                 f"shape ({n},), got "
                                 f"{getattr(bias, 'shape', type(bias).__name__)}")
            if bias.dtype != F32 or not bias.flags.c_contiguous:
                bias = np.ascontiguousarray(bias, dtype=np.float32)
            arrays["bias"] = bias
            ptrs["bias"] = bias.ctypes.data
        self.execute(arrays, ptrs)
        return out

    def before_run(self, arrays: dict) -> None:
        """An input gradient whose forward cropped its input: zeros outside the crop."""
        geo = self.geometry
        if self.pass_name != Pass.INPUT_GRAD or not geo.cropped:
            return
        gx = arrays["out"]
        for d, (a, b) in enumerate(geo.crop):
            lead = (slice(None),) * (2 + d)
            gx[(*lead, slice(0, a))] = 0
            gx[(*lead, slice(b, None))] = 0

    def __repr__(self) -> str:
        return (f"<onednn plan {self.pass_name} {self.name} shapes={self.shapes} "
                f"reorders={self.reorders} workspace={self.workspace_bytes}>")


def build(lib: L.Library, geo: Geometry, shapes: tuple, byte_strides: tuple, bias: bool,
          threads: int, relu_slope: float | None = None) -> Plan:
    """Build a plan with ``threads`` OpenMP threads; raises :class:`Unsupported`."""
    return build_with_threads(Plan(lib, geo, shapes, byte_strides, bias, threads, relu_slope),
                              threads)
