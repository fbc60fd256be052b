"""The ``norm`` kernel family: batch normalization on ndarrays, forward and backward.

One decision per call picks the algorithm: ``onednn`` (oneDNN's batch normalization
primitive, :mod:`.onednn.norm`) for float32 arrays in NCHW or channels-last memory where
it meets torch's accuracy; ``chunked`` (NumPy on fixed chunks of the array, on the
thread pool, :class:`_Chunks`) for the accurate sums and where oneDNN does not run; else
``numpy``, the reference (exact in float64; strided views, ``prefer("numpy")``).

* statistics (:func:`batch_stats`): always accurate sums (never E[x^2] - E[x]^2: each
  chunk's deviations from an origin near its values, summed and squared in float64);
  oneDNN's own float32 statistics were 100-700x less accurate than torch's (see
  :mod:`.onednn.norm`), so they are handed to it;
* forward (:func:`batch_norm_forward`): ``y = (x - mean) (var + eps)^-1/2 w + b``, with a
  fused ReLU on request (oneDNN then writes a bit mask its backward reads);
* backward (:func:`batch_norm_backward`): with ``xh = (x - mean) inv``,
  ``gb = sum g``, ``gw = sum g xh``, ``gx = w inv (g - gb/n - xh gw/n)`` (the batch
  statistics differentiated), only the gradients asked for.  oneDNN's backward sums in
  float32 (less accurate than torch): it runs only when pinned; the chunked kernel
  (two passes: the sums, then gx) runs it otherwise, 1.7-3.4x faster than oneDNN's
  elementwise passes with accurate sums in between, which it replaced.

Outputs have the input's memory layout (:mod:`.layouts`).
"""

from __future__ import annotations

import threading
from math import prod

import numpy as np

from . import jit, layouts, parallel, reduction, relayout
from .norm_loops import loops
from .onednn import _library as L
from .onednn.norm import NormPlan, batch_norm_plan
from .registry import family

__all__ = ["NORM", "batch_norm_backward", "batch_norm_forward", "batch_stats",
           "channel_affine", "channel_affine_backward", "fuses_leaky_relu"]

#: the normalisation family: ``prefer("onednn")`` / ``prefer("numpy")`` pin it
NORM = family("norm", ("onednn", "numba", "chunked", "numpy"))
_F32 = np.dtype(np.float32)


def _channels_last(x: np.ndarray) -> bool | None:
    """True for channels-last, False for C-contiguous memory, None for anything else."""
    if layouts.is_channels_last(x):
        return True
    return False if x.flags.c_contiguous and x.flags.aligned else None


def _plan(pass_name: str, x: np.ndarray, flags: int, eps: float) -> NormPlan | None:
    """The oneDNN plan for this call, or None: the NumPy reference runs it."""
    pinned = NORM.pinned()
    if (pinned in ("numpy", "chunked") or type(x) is not np.ndarray or x.dtype != _F32
            or x.ndim < 2):
        return None  # (a dask array: the reference keeps it lazy)
    layout = _channels_last(x)
    if layout is None:  # a strided view: the reference reads it as it is
        return None
    if pass_name == "backward" and pinned != "onednn":
        # oneDNN's backward sums in float32: NCHW gx off by 7e-7..1.3e-5 relative on
        # (32, 16, 8, 8)..(8, 64, 128, 128) (torch: 1.1e-7..1.5e-7); channels-last gw off
        # by 1.2e-6 on (4, 16, 96, 96) (torch: 2.1e-7), so the accurate reference runs it
        return None
    plan = batch_norm_plan(pass_name, x.shape, layout, flags, eps)
    return plan if isinstance(plan, NormPlan) else None


def _flags(weight, bias, relu: bool) -> int:
    return ((L.USE_SCALE if weight is not None else 0) | (L.USE_SHIFT if bias is not None else 0)
            | (L.FUSE_NORM_RELU if relu else 0))


def _stat(v: np.ndarray | None, dtype) -> np.ndarray | None:
    return None if v is None else np.ascontiguousarray(v, dtype=dtype).reshape(-1)


def _bcast(v: np.ndarray, ndim: int) -> np.ndarray:
    return v.reshape((1, -1) + (1,) * (ndim - 2))


# ------------------------------------------------------------------- the chunked kernels
#: elements in one chunk of the chunked kernels (512 KB of float32): a chunk and its
#: temporaries stay in a core's L2 cache.  Fixed, so the sums do not depend on the threads
CHUNK = 1 << 17
#: an array of fewer than ``SMALL_CHUNKS`` chunks is cut into that many smaller ones (of
#: at least ``MIN_CHUNK`` elements): ResNet-18's (8, 256, 8, 8) was one chunk, run on one
#: thread (backward 69 + 55 us in its two passes; in four chunks, 38 + 30).  A function
#: of the size alone, so the sums still do not depend on the threads
SMALL_CHUNKS, MIN_CHUNK = 4, 1 << 13


def _chunk_elements(size: int) -> int:
    """The chunk size for an array of ``size`` elements."""
    return min(CHUNK, max(MIN_CHUNK, size // SMALL_CHUNKS))


_TASKS_PER_THREAD = 4
_local = threading.local()


def _scratch(count: int, size: int) -> list[np.ndarray]:
    """``count`` float32 scratch arrays of ``size`` elements, kept per thread (a fresh
    512 KB array costs its page faults on every call)."""
    bufs = getattr(_local, "bufs", None)
    if bufs is None or len(bufs) < count or bufs[0].size < size:
        bufs = _local.bufs = [np.empty(max(size, CHUNK), np.float32)
                              for _ in range(max(count, 2))]
    return bufs[:count]


class _Chunks:
    """A dense float32 ``x`` (N, C, *) cut into fixed chunks, each over a range of channels.

    Channels-last (or spatially flat) x is a (rows, C) matrix, cut into ranges of whole
    :data:`reduction.BLOCK_ROWS` blocks of rows (and of channels when a block is larger
    than a chunk), summed as :func:`reduction.column_sums` does.  C-contiguous x is
    (N, C, S), cut into ranges of channels (then of samples, then of S, when a channel is
    larger than a chunk), each (sample, channel) row summed pairwise in float32 over its
    S, the rows in float64.  The chunks run on the thread pool, contiguous runs of them
    per thread; their per-channel float64 partial sums are combined in chunk order, so
    the result does not depend on the thread count.
    """

    def __init__(self, shape: tuple, rows: bool):
        size = prod(shape)
        self.rows, self.c, self.size = rows, shape[1], size
        c, chunk = self.c, _chunk_elements(size)
        # channels last: the dims' order that puts C innermost (a transpose, no copy)
        self._order = (0, *range(2, len(shape)), 1)
        if rows:
            r = size // c
            block = reduction.BLOCK_ROWS
            width = c if block * c <= chunk else max(1, chunk // block)
            step = max(block, chunk // c // block * block)
            self.parts = [((slice(a, a + step), slice(b, b + width)), slice(b, b + width))
                          for b in range(0, c, width) for a in range(0, r, step)]
            self.width, self.span = min(width, c), min(step, r)  # the largest chunk's
        else:
            n, s = shape[0], size // (shape[0] * c)
            ss = min(s, chunk)
            nn = min(n, max(1, chunk // ss))
            cc = min(c, max(1, chunk // (nn * ss)))
            self.parts = [((slice(i, i + nn), slice(b, b + cc), slice(a, a + ss)),
                           slice(b, b + cc))
                          for b in range(0, c, cc) for i in range(0, n, nn)
                          for a in range(0, s, ss)]
            self.width, self.samples, self.span = cc, nn, ss  # the largest chunk's
        self.most = min(chunk, size)
        dims = (size // c, c) if rows else (shape[0], c, size // (shape[0] * c))
        #: each chunk's index ranges in the view, flat (start, stop, start, stop, ...)
        self.bounds = [tuple(v for k, d in zip(key, dims) for v in (k.start, min(k.stop, d)))
                       for key, _ in self.parts]
        self._bounds = None

    def view_or_none(self, a: np.ndarray) -> np.ndarray | None:
        """:meth:`view` when it is C-contiguous (``a`` in x's memory order), else None."""
        try:
            v = self.view(a)
        except ValueError:
            return None
        return v if v.flags.c_contiguous else None

    def view(self, a: np.ndarray) -> np.ndarray:
        """``a`` (x's shape and strides) as the (rows, C) or (N, C, S) array, no copy."""
        if self.rows:
            return np.reshape(a.transpose(self._order), (-1, self.c), copy=False)
        return np.reshape(a, (a.shape[0], self.c, -1), copy=False)

    def sums(self, a: np.ndarray) -> np.ndarray:
        """The per-channel float64 sums of a chunk."""
        if self.rows:
            out = np.empty(a.shape[1], np.float64)
            reduction.column_sums(a, out)
            return out
        return a.sum(axis=2).sum(axis=0, dtype=np.float64)

    def run(self, fn, *arrays: np.ndarray, temps: int = 1) -> list:
        """``fn(chunk of x, p, tmp)`` for every chunk, on the pool: ``p(v)`` is a (C,)
        vector's part for the chunk's channels, broadcastable against the chunk; ``tmp``,
        ``temps`` scratch arrays of the chunk's shape.  ``arrays`` (x, then others of x's
        shape and strides) are passed as their chunks after the first."""
        views = [self.view(a) for a in arrays]
        results: list = [None] * len(self.parts)

        def task(lo: int, hi: int) -> int:
            scratch = _scratch(temps, self.most)
            for i in range(lo, hi):
                key, ch = self.parts[i]
                chunks = [v[key] for v in views]
                tmp = [t[:chunks[0].size].reshape(chunks[0].shape) for t in scratch]
                if self.rows:
                    results[i] = fn(*chunks, lambda v, ch=ch: v[ch], tmp)
                else:
                    results[i] = fn(*chunks, lambda v, ch=ch: v[ch, None], tmp)
            return 0

        self._on_pool(task)
        return results

    def loop(self, kernel, *arrays: np.ndarray, args: tuple = (), out: tuple = (),
             scratch: int = 0) -> np.ndarray | None:
        """``kernel(*views, *args, bounds[, scratch][, out])``, a compiled pass of
        :mod:`.norm_loops` over every chunk: the views are ``arrays`` (x and others of its
        layout) as whole C-contiguous (rows, C) or (N, C, S) arrays (a compiled loop then
        knows its rows are contiguous: a chunk's view would not tell it); ``bounds``, the
        chunks' index ranges in them, one row per chunk; ``scratch``, a float32 array of
        that many elements per chunk; ``out``, a float64 array of this shape per chunk,
        returned (chunk p's in row p).  One call, on Numba's threads, or runs of chunks
        on the pool (:class:`.norm_loops.Loops`)."""
        views = [self.view(a) for a in arrays]
        k = len(self.parts)
        bounds = self.bound_array()
        extra = [np.empty((k, scratch), np.float32)] if scratch else []
        results = np.empty((k, *out)) if out else None
        extra += [results] if out else []
        lp = self.loops
        if lp.parallel:
            threads = 1 if self.size < jit.PARALLEL_MIN_SIZE else parallel.num_threads()
            jit.set_threads(threads)
            kernel(*views, *args, bounds, *extra)
            return results

        def task(lo: int, hi: int) -> int:
            kernel(*views, *args, bounds[lo:hi], *(e[lo:hi] for e in extra))
            return 0

        self._on_pool(task)
        return results

    def bound_array(self) -> np.ndarray:
        """:attr:`bounds` as a (chunks, 4 or 6) int64 array (made once)."""
        if self._bounds is None:
            self._bounds = np.array(self.bounds, dtype=np.int64)
        return self._bounds

    def _on_pool(self, task) -> None:
        k = len(self.parts)
        # a few runs of chunks per thread: a thread slowed by another process hands over
        # the rest (each task costs ~20 us)
        tasks = min(_TASKS_PER_THREAD * parallel.num_threads(), k)
        if self.size < reduction.PARALLEL_MIN_SIZE:
            tasks = 1
        cuts = [k * i // tasks for i in range(tasks + 1)]
        parallel.run_chunks([lambda a=a, b=b: task(a, b) for a, b in zip(cuts, cuts[1:])])

    def combine(self, results: list) -> list[np.ndarray]:
        """The chunks' per-channel partial sums added in chunk order, one (C,) array per
        sum the chunks returned."""
        out = [np.zeros(self.c) for _ in results[0]]
        for (_, ch), sums in zip(self.parts, results):
            for o, s in zip(out, sums):
                o[ch] += s
        return out


def _chunks(x: np.ndarray) -> _Chunks | None:
    """The chunked kernels' cut of ``x``, or None: the reference runs it (float64 and
    other dtypes, strided views, dask arrays (NumPy's functions keep them lazy), or
    ``prefer("numpy")``).  Its ``loops`` are the compiled passes (:mod:`.norm_loops`,
    algorithm ``numba``) where Numba is installed, unless ``prefer("chunked")`` pins the
    NumPy passes; its ``algorithm`` says which."""
    pinned = NORM.pinned()
    if (pinned == "numpy" or type(x) is not np.ndarray or x.dtype != _F32 or x.ndim < 2
            or x.size == 0):
        return None
    if x.flags.c_contiguous:
        rows = x.size == x.shape[0] * x.shape[1]  # no spatial dims: rows
    elif layouts.is_channels_last(x):
        rows = True
    else:
        return None
    return _cut(x.shape, rows, None if pinned == "chunked" else loops())


def _cut(shape: tuple, rows: bool, lp: dict | None) -> _Chunks:
    """The cut of an array of ``shape`` run by the compiled passes ``lp`` (None: NumPy's),
    made once per shape: a network's layers call the kernels every step with the same few
    shapes, and cutting took 6-25 us a call.  (A cut holds its ``lp``, so the identity in
    the key is never reused by another.)"""
    key = (shape, rows, None if lp is None else id(lp))
    chunks = _cuts.get(key)
    if chunks is None:
        chunks = _Chunks(shape, rows)
        chunks.loops = lp
        chunks.algorithm = "chunked" if lp is None else "numba"
        if len(_cuts) >= _CUTS_KEPT:
            _cuts.clear()
        _cuts[key] = chunks
    return chunks


_cuts: dict = {}
_CUTS_KEPT = 256  # a network has a few dozen shapes


def batch_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and biased variance of ``x`` (N, C, *) over every other dim, as
    (C,) float64 arrays (float32 x's mean carries the float32 mean's rounding residual):
    the accurate sums, two passes (the residual is the mean of the deviations).

    The chunked kernel takes the deviations of a chunk from an origin ``m`` of each of
    its rows, while the chunk is in cache (a channels-last chunk: one origin per channel,
    the chunk's mean in NumPy's two passes, its first row in the compiled one pass; an
    (N, C, S) chunk: the mean of each (sample, channel) row, summed in float64, so
    samples far apart do not cancel in float32): the deviations' sum ``s1`` and sum of
    squares ``s2`` are moved to the batch mean ``M`` in float64 (Chan et al.'s pairwise
    update: ``sum (x - M)^2 = s2 + 2 (m - M) s1 + k (m - M)^2`` over the row's ``k``
    elements), so x is read from memory once and the pool woken once."""
    dims = (0, *range(2, x.ndim))
    n = prod(x.shape[d] for d in dims)
    chunks = _chunks(x)
    with NORM.record("batch_stats", x.shape) as rec:
        if chunks is not None:
            rec.algorithm = chunks.algorithm
            lp = chunks.loops

            def moments(xc, p, tmp):  # k, m, s1, s2 of the chunk's rows
                if chunks.rows:  # one (1, C) row: the chunk's mean over its rows
                    k = xc.shape[0]
                    m = (chunks.sums(xc) / k).astype(x.dtype)[None]
                    d = np.subtract(xc, m, out=tmp[0])
                    s1 = chunks.sums(d)[None]
                    np.multiply(d, d, out=d)
                    return k, m.astype(np.float64), s1, chunks.sums(d)[None]
                # (N, C, S): each (sample, channel) row from its own mean (samples far
                # apart would cancel in float32 sums of one mean's deviations)
                k = xc.shape[2]
                m = (xc.sum(axis=2) / x.dtype.type(k))[..., None]
                d = np.subtract(xc, m, out=tmp[0])
                s1 = d.sum(axis=2, dtype=np.float64)
                np.multiply(d, d, out=d)
                return k, m[..., 0].astype(np.float64), s1, d.sum(axis=2, dtype=np.float64)

            if lp is not None:  # float64 means, deviations and squares in one loop
                if chunks.rows:
                    out = chunks.loop(lp["moments_rows"], x, out=(3, chunks.width))
                    out = out.reshape(len(out), 3, 1, -1)
                else:
                    out = chunks.loop(lp["moments_ncs"], x,
                                      out=(3, chunks.samples, chunks.width))
                mean, var = np.empty(chunks.c), np.empty(chunks.c)
                lp["combine_moments"](out, chunks.bound_array(), n, mean, var)
                return mean, np.maximum(var, 0.0)
            results = chunks.run(moments, x)
            parts = list(zip((ch for _, ch in chunks.parts), results))
            total = np.zeros(chunks.c)
            for ch, (k, m, s1, _) in parts:  # in chunk order: independent of the threads
                total[ch] += (k * m + s1).sum(axis=0)
            mean = total / n
            squares = np.zeros(chunks.c)
            for ch, (k, m, s1, s2) in parts:
                dm = m - mean[ch]
                squares[ch] += (s2 + 2 * dm * s1 + k * dm * dm).sum(axis=0)
            return mean, np.maximum(squares / n, 0.0)
        rec.algorithm = "numpy"
        hi = reduction.total(x, axis=dims, keepdims=True) / x.dtype.type(n)
        d = x - hi
        lo = reduction.total(d, axis=dims).astype(np.float64) / n
        np.multiply(d, d, out=d)
        var = reduction.total(d, axis=dims).astype(np.float64) / n - lo * lo
        return hi.reshape(-1).astype(np.float64) + lo, np.maximum(var, 0.0)


def fuses_leaky_relu(x: np.ndarray) -> bool:
    """Whether the compiled loops run ``x``'s batch normalisation, and so can end it in a
    leaky ReLU (elsewhere oneDNN fuses only a plain ReLU: callers apply a leaky one as its
    own operation)."""
    chunks = _chunks(x)
    return chunks is not None and chunks.loops is not None and NORM.pinned() != "onednn"


def _leaky(y: np.ndarray, slope: float) -> np.ndarray:
    """``y`` times ``slope`` where not positive, in place, in y's float type (as the
    LeakyReLU Function and the compiled loops compute it; NaN and -0 kept)."""
    np.copyto(y, y * y.dtype.type(slope), where=~(y > 0))
    return y


def _split(mean: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """``mean`` as its rounding to ``dtype`` (what the kernels subtract) and the float64
    residual (folded into the shift: a mean of 50 rounded to float32 alone put 1.7e-6
    relative error into y, torch's being 5.8e-7)."""
    mean = np.asarray(mean).reshape(-1)
    hi = np.ascontiguousarray(mean, dtype=dtype)
    return hi, mean.astype(np.float64) - hi


def batch_norm_forward(x: np.ndarray, mean: np.ndarray, var: np.ndarray,
                       weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                       relu: bool = False, training: bool = True, slope: float = 0.0
                       ) -> tuple[np.ndarray, np.ndarray | None]:
    """``y = (x - mean) (var + eps)^-1/2 weight + bias`` per channel (then ReLU with
    ``relu``, a leaky one of ``slope`` > 0 where :func:`fuses_leaky_relu`), in x's layout,
    and the fused ReLU's mask (a uint8 array, or None) for :func:`batch_norm_backward`.
    ``training``: the statistics are the batch's (a training forward), else the running
    ones (inference)."""
    c = x.shape[1]
    mean64, var64 = _stat(mean, np.float64), _stat(var, np.float64)
    s = _scale(var64, _stat(weight, x.dtype), eps)
    bias64 = np.zeros(c) if bias is None else _stat(bias, np.float64)
    pass_name = "forward_training" if training else "forward_inference"
    chunks = _chunks(x)
    lp = chunks.loops if chunks is not None and NORM.pinned() != "onednn" else None
    if lp is not None:  # float32((x - mean) s + b) in float64: one rounding
        with NORM.record(f"batch_norm_{pass_name}", x.shape) as rec:
            rec.algorithm = chunks.algorithm
            y = np.empty_like(x)  # x is dense: its layout
            chunks.loop(lp["forward_rows" if chunks.rows else "forward_ncs"], x,
                        args=(mean64, s, bias64, relu, float(slope), chunks.view(y)))
            return y, None
    if relu and slope:  # a leaky ReLU outside the compiled loops (a pin): its own step
        return _leaky(batch_norm_forward(x, mean, var, weight, bias, eps,
                                         training=training)[0], slope), None
    mean, lo = _split(mean, x.dtype)
    var = _stat(var, x.dtype)
    # the mean's residual: y = (x - hi) inv w + (b - inv w lo)
    shift = (bias64 - s * lo).astype(x.dtype)
    weight = np.ones(c, x.dtype) if weight is None else _stat(weight, x.dtype)
    plan = _plan(pass_name, x, _flags(weight, shift, relu), eps)
    with NORM.record(f"batch_norm_{pass_name}", x.shape) as rec:
        y = layouts.empty(x.shape, layouts.is_channels_last(x), x.dtype)
        ws = None
        if plan is not None:
            rec.algorithm = plan.name
            arrays = {"src": x, "dst": y, "mean": mean, "var": var, "scale": weight,
                      "shift": shift}
            if plan.workspace_size:
                ws = arrays["ws"] = np.empty(plan.workspace_size, dtype=np.uint8)
            plan.run(arrays)
            return y, ws
        if chunks is not None:
            rec.algorithm = "chunked"
            _chunked_forward(chunks, x, mean, s.astype(x.dtype), shift, relu, y)
            return y, None
        rec.algorithm = "numpy"
        _reference_forward(x, mean, s.astype(x.dtype), shift, relu, y)
        return y, None


def _inv(var: np.ndarray, eps: float) -> np.ndarray:
    """``(var + eps)^-1/2`` in float64: in float32 its three roundings put 1.5e-7
    relative error into every y of a channel (torch's error: 4.6e-8)."""
    return 1.0 / np.sqrt(var.astype(np.float64) + eps)


def _scale(var: np.ndarray, weight: np.ndarray | None, eps: float) -> np.ndarray:
    inv = _inv(var, eps)
    return inv if weight is None else inv * weight


def _chunked_forward(chunks: _Chunks, x, mean, scale, shift, relu, out) -> None:
    def forward(xc, yc, p, tmp):
        np.subtract(xc, p(mean), out=yc)
        yc *= p(scale)
        yc += p(shift)
        if relu:
            np.maximum(yc, 0, out=yc)

    chunks.run(forward, x, out, temps=0)


def _reference_forward(x, mean, scale, shift, relu, out) -> np.ndarray:
    np.subtract(x, _bcast(mean, x.ndim), out=out)
    out *= _bcast(scale, x.ndim)
    out += _bcast(shift, x.ndim)
    if relu:
        np.maximum(out, 0, out=out)
    return out


def batch_norm_backward(g: np.ndarray, x: np.ndarray, mean: np.ndarray, var: np.ndarray,
                        weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                        need: tuple[bool, bool, bool], relu_mask: np.ndarray | None = None,
                        relu: bool = False, slope: float = 0.0) -> tuple:
    """The gradients (x, weight, bias) of a training :func:`batch_norm_forward` (batch
    statistics differentiated) at ``g``; None for those ``need`` does not ask.  A fused
    ReLU's gradient comes from ``relu_mask`` (oneDNN's) or, in the reference, from the
    output recomputed from x (``relu``; ``bias`` is read for it); a leaky one's
    (``slope`` > 0) from the output recomputed by the compiled loops (outside them, as
    when a pin differs from the forward's, by a forward recomputed here)."""
    if relu and slope and not fuses_leaky_relu(x):
        y = batch_norm_forward(x, mean, var, weight, bias, eps)[0]
        g = np.where(y > 0, g, g * g.dtype.type(slope))  # the leaky ReLU's derivative
        relu, slope = False, 0.0
    var64 = _stat(var, np.float64)
    mean, lo = _split(mean, x.dtype)
    var, weight = _stat(var, x.dtype), _stat(weight, x.dtype)
    # oneDNN's backward runs only where pinned (see _plan): the plan is not looked up else
    plan = (_plan("backward", x, _flags(weight, bias if need[2] or relu else None, relu), eps)
            if NORM.pinned() == "onednn" and (relu_mask is not None or not relu) else None)
    with NORM.record("batch_norm_backward", x.shape) as rec:
        if plan is not None:
            rec.algorithm = plan.name
            cl = plan.channels_last
            if _channels_last(g) is not cl or g.dtype != _F32:  # to x's layout
                g = relayout.laid_out(g, x)
            arrays = {"src": x, "diff_dst": g, "diff_src": layouts.empty(x.shape, cl, x.dtype),
                      "mean": mean, "var": var, "scale": weight, "ws": relu_mask}
            c = x.shape[1]
            if plan.flags & L.USE_SCALE:
                arrays["diff_scale"] = np.empty(c, x.dtype)
            if plan.flags & L.USE_SHIFT:
                arrays["diff_shift"] = np.empty(c, x.dtype)
            plan.run(arrays)
            return (arrays["diff_src"] if need[0] else None,
                    arrays.get("diff_scale") if need[1] else None,
                    arrays.get("diff_shift") if need[2] else None)
        bias = _stat(bias, x.dtype)
        chunks = _chunks(x)
        if chunks is not None:
            rec.algorithm = chunks.algorithm
            return _chunked_backward(chunks, g, x, mean, lo, var64, weight, bias, eps, need,
                                     relu, slope)
        rec.algorithm = "numpy"
        return _reference_backward(g, x, mean, lo, var64, weight, bias, eps, need, relu)


def _chunked_backward(chunks: _Chunks, g, x, hi, lo, var, weight, bias, eps, need,
                      relu, slope=0.0) -> tuple:
    """The reference's rule on chunks (:class:`_Chunks`), two passes over memory, with
    ``d = x - hi`` recomputed in each chunk and ``xh = inv d - inv lo``:
    ``gb = sum g``, ``gw = sum g xh = inv (sum g d - lo gb)``; then
    ``gx = a g + k xh + c = a g + (k inv) d + (c - k inv lo)`` with ``a = w inv``,
    ``k = -a gw/n``, ``c = -a gb/n``."""
    n = x.size // x.shape[1]
    if g.dtype != x.dtype:
        g = g.astype(x.dtype)
    lp = chunks.loops
    if chunks.view_or_none(g) is None:  # another layout (the loops index x's memory order)
        g = relayout.laid_out(g, x)
    inv = _inv(var, eps)
    gx = np.empty_like(x) if need[0] else None  # x is dense: its layout
    if lp is not None:  # the compiled passes: the ReLU's mask recomputed in each
        return _looped_backward(chunks, lp, g, x, hi, lo, inv, weight, bias, n, need, gx,
                                relu, slope)
    if relu:  # the output recomputed as the forward rounds it: y = s d + t
        s = inv if weight is None else inv * weight
        t = ((0.0 if bias is None else bias.astype(np.float64)) - s * lo).astype(x.dtype)
        s = s.astype(x.dtype)

    def sums(xc, gc, *rest):  # sum g and sum g d in a chunk (g masked by the ReLU, kept in gx)
        p, tmp = rest[-2:]
        d = np.subtract(xc, p(hi), out=tmp[0])
        if relu:  # the ReLU's gradient: g where the output (recomputed) is positive
            y = np.multiply(d, p(s), out=tmp[1])
            y += p(t)
            mask = y > 0
            gm = rest[0] if need[0] else y
            np.copyto(gm, 0.0)
            np.copyto(gm, gc, where=mask)
            gc = gm
        gb = chunks.sums(gc)
        np.multiply(d, gc, out=d)
        return gb, chunks.sums(d)

    arrays = (x, g, gx) if need[0] else (x, g)
    gb, gd = chunks.combine(chunks.run(sums, *arrays, temps=2 if relu else 1))
    gw = inv * (gd - lo * gb)
    if need[0]:
        a = inv if weight is None else inv * weight
        k = -a * gw / n
        c = ((-a * gb / n) - k * inv * lo).astype(x.dtype)
        k, a = (k * inv).astype(x.dtype), a.astype(x.dtype)

        def grad(xc, gc, oc, p, tmp):
            d = np.subtract(xc, p(hi), out=tmp[0])
            d *= p(k)
            d += p(c)
            np.multiply(oc if relu else gc, p(a), out=oc)  # the masked g is in oc
            oc += d

        chunks.run(grad, x, g, gx)
    gw, gb = gw.astype(x.dtype), gb.astype(x.dtype)
    return gx, (gw if need[1] else None), (gb if need[2] else None)


def _looped_backward(chunks: _Chunks, lp: dict, g, x, hi, lo, inv, weight, bias, n, need,
                     gx, relu, slope=0.0) -> tuple:
    """:func:`_chunked_backward`'s two passes as the compiled loops (:mod:`.norm_loops`),
    a fused ReLU's mask from the forward's output recomputed as it computed it, from the
    float64 mean ``m``, scale ``s`` and shift ``t``."""
    kind, c = "rows" if chunks.rows else "ncs", x.shape[1]
    m = hi.astype(np.float64) + lo
    s = inv if weight is None else inv * weight
    t = np.zeros(c) if bias is None else bias.astype(np.float64)
    out = chunks.loop(lp["sums_" + kind], x, g, args=(hi, m, s, t, relu, float(slope)),
                      out=(2, chunks.width), scratch=0 if chunks.rows else chunks.span)
    # the sums combined and every per-channel coefficient in one compiled call (NumPy's
    # dozen small operations here cost 15-20 us a call, as much as a late ResNet
    # layer's pass), the arithmetic of _chunked_backward's in the same order
    gw, gb, k, b, a = (np.empty(c, x.dtype) for _ in range(5))
    lp["backward_coefficients"](out, chunks.bound_array(), inv, lo,
                                _ones32(c) if weight is None else weight, n, gw, gb, k, b, a)
    if need[0]:
        chunks.loop(lp["grad_" + kind], x, g, gx,
                    args=(hi, k, b, a, m, s, t, relu, float(slope)))
    return gx, (gw if need[1] else None), (gb if need[2] else None)


def _ones32(c: int) -> np.ndarray:
    """A float32 vector of ``c`` ones (a missing weight; ``inv * 1`` is ``inv``), kept."""
    ones = _ones.get(c)
    if ones is None:
        ones = _ones[c] = np.ones(c, np.float32)
        ones.flags.writeable = False
    return ones


_ones: dict = {}


def _reference_backward(g, x, mean, lo, var, weight, bias, eps, need, relu) -> tuple:
    nd, dims = x.ndim, (0, *range(2, x.ndim))
    n = prod(x.shape[d] for d in dims)
    inv = _inv(var, eps)
    xh = layouts.empty(x.shape, layouts.is_channels_last(x), x.dtype)
    np.subtract(x, _bcast(mean, nd), out=xh)
    xh *= _bcast(inv, nd)
    if lo.any():  # the float32 mean's residual
        xh -= _bcast((inv * lo).astype(x.dtype), nd)
    if relu:  # the ReLU's gradient: g where the output is positive
        y = xh * _bcast(weight, nd) if weight is not None else xh.copy()
        if bias is not None:
            y += _bcast(bias, nd)
        g = np.where(y > 0, g, g.dtype.type(0))
    gb = reduction.total(g, axis=dims)
    t = g * xh
    gw = reduction.total(t, axis=dims)
    gx = None
    if need[0]:
        s = inv if weight is None else inv * weight
        # gx = w inv (g - gb/n - xh gw/n), in xh's memory
        np.multiply(xh, _bcast(gw / n, nd), out=xh)
        np.subtract(g, xh, out=xh)
        xh -= _bcast(gb / n, nd)
        xh *= _bcast(s, nd)
        gx = xh
    return gx, (gw if need[1] else None), (gb if need[2] else None)


# ---------------------------------------------------------------- the affine step
def channel_affine(x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None
                   ) -> np.ndarray:
    """``x * weight + bias`` per channel of ``x`` (N, C, *) (either may be None), in x's
    layout: the affine step of group and instance normalisation.  One pass (``numba``)
    for float32 x and parameters, else NumPy's broadcasting (``numpy``, its dtype rules):
    both round the product, then the sum."""
    chunks = _affine_chunks(x, weight, bias)
    with NORM.record("channel_affine", x.shape) as rec:
        if chunks is None:
            rec.algorithm = "numpy"
            y = x if weight is None else x * _bcast(weight, x.ndim)
            return y if bias is None else y + _bcast(bias, x.ndim)
        rec.algorithm = chunks.algorithm
        y = layouts.empty(x.shape, layouts.is_channels_last(x), x.dtype)
        unit = np.zeros(x.shape[1], x.dtype)  # unread
        chunks.loop(chunks.loops["affine_rows" if chunks.rows else "affine_ncs"], x,
                    args=(unit if weight is None else weight, unit if bias is None else bias,
                          weight is not None, bias is not None, chunks.view(y)))
        return y


def channel_affine_backward(g: np.ndarray, x: np.ndarray, weight: np.ndarray | None,
                            need: tuple[bool, bool, bool], float64_sums: bool = False
                            ) -> tuple:
    """The gradients (x, weight, bias) of :func:`channel_affine` at ``g`` (None where
    ``need`` does not ask): ``g * weight``, ``sum g x`` and ``sum g`` over every dim but
    the channels (float64 sums, one pass, with ``numba``), the sums in x's dtype unless
    ``float64_sums`` (for a caller that combines them before rounding)."""
    out_dtype = np.float64 if float64_sums else x.dtype
    chunks = _affine_chunks(x, weight, None)
    if chunks is not None and (g.dtype != x.dtype or chunks.view_or_none(g) is None):
        g = relayout.laid_out(g, x)  # x's layout and dtype: one copy, the pass still fused
    dims = (0, *range(2, x.ndim))
    with NORM.record("channel_affine_backward", x.shape) as rec:
        if chunks is None:
            rec.algorithm = "numpy"
            gx = (g if weight is None else g * _bcast(weight, x.ndim)) if need[0] else None
            if float64_sums:
                g = g.astype(np.float64)
            gw = reduction.total(g * x, axis=dims) if need[1] else None
            gb = reduction.total(g, axis=dims) if need[2] else None
            return gx, gw, gb
        rec.algorithm = chunks.algorithm
        gx = layouts.empty(x.shape, layouts.is_channels_last(x), x.dtype) if need[0] else x
        unit = np.zeros(x.shape[1], x.dtype)  # unread
        out = chunks.loop(chunks.loops["affine_grad_rows" if chunks.rows else "affine_grad_ncs"],
                          g, x, gx, args=(unit if weight is None else weight,
                                          weight is not None, need[0]),
                          out=(2, chunks.width))
        gw, gb = chunks.combine([o[:, :b[3] - b[2]] for b, o in zip(chunks.bounds, out)])
        return (gx if need[0] else None, gw.astype(out_dtype) if need[1] else None,
                gb.astype(out_dtype) if need[2] else None)


def _affine_chunks(x, weight, bias) -> _Chunks | None:
    """The chunks of ``x`` for the compiled affine passes, or None: NumPy runs it (no
    Numba, another dtype anywhere, a strided x)."""
    if any(v is not None and (v.dtype != x.dtype or v.ndim != 1) for v in (weight, bias)):
        return None
    chunks = _chunks(x)
    return chunks if chunks is not None and chunks.loops is not None else None


@jit.exercise
def _exercise() -> None:
    """Every compiled pass once, on tiny arrays of both layouts (:func:`.jit.warm_up`)."""
    for channels_last in (False, True):
        x = layouts.empty((2, 3, 4, 4), channels_last, np.float32)
        x[...] = np.arange(x.size, dtype=np.float32).reshape(x.shape) % 5
        w, b = np.ones(3, np.float32), np.zeros(3, np.float32)
        mean, var = batch_stats(x)
        y, _ = batch_norm_forward(x, mean, var, w, b, 1e-5, relu=True)
        batch_norm_backward(y, x, mean, var, w, b, 1e-5, (True, True, True), relu=True)
        channel_affine_backward(channel_affine(x, w, b), x, w, (True, True, True))
