"""The ``eltwise`` kernel family: activations (forward and backward) and the binary
operations ``+ - * /`` on ndarrays, on oneDNN's eltwise and binary primitives or NumPy.

The NumPy reference of each kernel is its Function's own code (:mod:`convgrad.tensor`),
handed in as a callable: this module only decides which runs (:func:`_algorithm`, the
one decision), runs oneDNN's primitive when it is chosen and records every run.

oneDNN runs a call when the arrays are float32 ndarrays, oneDNN is available and not
pinned away (``prefer("numpy")``), the result is large enough to pay for the call, and
the layouts fit:

* an activation: the input dense in any order of its dims (NCHW, channels-last), its
  gradient (backward) copied into that layout if it lies otherwise; the result takes
  that layout;
* a binary operation: both operands dense with the same strides, or the second (the
  first for ``+`` and ``*``, which commute bit for bit) a number or a C-contiguous
  array broadcast over the other, which is dense; the result takes the full operand's
  layout.  Each result is one IEEE float32 operation, bit for bit NumPy's.

ReLU's forward, whose oneDNN kernel turns NaN into 0, and LeakyReLU's backward, whose
oneDNN kernel does not scale a NaN input's gradient, run Numba's loops instead
(:mod:`.eltwise_loops`, algorithm ``numba``) on large dense float32 arrays, and so does a
binary operation of a dense array with a channel slice of a channels-last one (rows at
another pitch, :func:`.relayout.row_matrix`): one pass over the rows, where oneDNN needs
the slice copied into the dense layout first.  Anything
else (float64, dask arrays, small arrays, other layouts and broadcasts, a case oneDNN
runs only with its reference code) runs the NumPy reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import eltwise_loops, jit, onednn, reduction, relayout
from .layouts import LAYOUT, is_dense
from .onednn import eltwise as _dnnl
from .onednn._plan import _normalized
from .parallel import num_threads, run_chunks
from .registry import family

__all__ = ["ACTIVATIONS", "ELTWISE", "FLOAT64_CHUNK", "MIN_BINARY_SIZE", "MIN_COMPILED_RELU_SIZE",
           "MIN_ONEDNN_SIZE", "MIN_PIECEWISE_SIZE", "MIN_STAGED_BINARY_SIZE", "activation",
           "activation_grad", "bce_with_logits", "binary", "log_sigmoid", "relu_grad_with_sums",
           "relu_in_place"]

#: the eltwise family: ``prefer("numpy")`` pins the Functions' NumPy code
ELTWISE = family("eltwise", ("onednn", "numba", "numpy"))

#: Below these many result elements NumPy runs.  A oneDNN call costs 25-100 us from
#: Python (ctypes, the plan's context, the profiler event); measured on this 2-core
#: machine, one thread each, medians (the machine was shared: +-50%):
#: * binary: on a 2-core AMD EPYC (add: NumPy 38 us at 65536 elements, 90 us at 262144,
#:   oneDNN 126 and 213 us, before the per-call glue was trimmed) oneDNN paid only from
#:   1M; on a 2-core Intel Xeon, the whole call on 2 threads (NumPy / oneDNN, us): 65536
#:   19 / 32, 131072 52 / 44, 262144 154 / 87, 590000 311 / 216, 1048576 505 / 322;
#: * piecewise-linear forward (relu at 262144: NumPy 227 us, oneDNN 164 us);
#: * every backward and every smooth forward (sigmoid at 8192: NumPy 81 us, oneDNN 62 us;
#:   relu's backward mask is 2-3 ns an element in NumPy).
#: The compiled ReLU (:mod:`.eltwise_loops`, no oneDNN call) from MIN_COMPILED_RELU_SIZE:
#: NumPy's ``maximum`` against a scalar does not vectorise (against an array of zeros it
#: does, 2.8x faster), measured on one float32 array, us, NumPy / compiled on 2 threads:
#: 4096 2.4 / 2.1, 16384 6.8 / 2.9, 65536 26.8 / 4.5, 262144 100 / 14 (ResNet-18's
#: (8, 512, 4, 4) and (8, 256, 8, 8) ReLUs ran in NumPy).
MIN_BINARY_SIZE = 1 << 17
#: A view and a dense array of another layout are staged into one layout for oneDNN from
#: this size: below it the copy cost more than NumPy's one strided pass saved
MIN_STAGED_BINARY_SIZE = 1 << 20
MIN_PIECEWISE_SIZE = 1 << 18
MIN_ONEDNN_SIZE = 1 << 13
MIN_COMPILED_RELU_SIZE = 1 << 12
_PIECEWISE = ("leaky_relu",)

#: activation name -> (forward algorithm, backward algorithm): the backward reads the
#: forward's input, or its output for the ``*_use_dst_for_bwd`` algorithms (the
#: Function's ``reads`` says which)
ACTIVATIONS = {
    # oneDNN's relu and clip lose NaN (vmaxps returns its second operand, 0 or the
    # bound; NumPy and torch return NaN): their forwards stay off oneDNN (relu: Numba's
    # loop, :mod:`.eltwise_loops`, else NumPy)
    "relu": (None, "relu_use_dst_for_bwd"),            # reads the output
    "leaky_relu": ("relu", "relu"),                    # alpha: the negative slope
    "elu": ("elu", "elu"),                             # alpha
    "sigmoid": ("logistic", "logistic_use_dst_for_bwd"),  # reads the output
    "tanh": ("tanh", "tanh_use_dst_for_bwd"),          # reads the output
    "silu": ("swish", "swish"),                        # alpha 1
    "gelu": ("gelu_erf", "gelu_erf"),
    "gelu_tanh": ("gelu_tanh", "gelu_tanh"),
    "softplus": ("soft_relu", "soft_relu"),            # alpha: beta
    "hardswish": ("hardswish", "hardswish"),           # alpha 1/6, beta 1/2
}
_F32 = np.dtype(np.float32)
_WEAK = (int, float)  # Python numbers take the array's dtype (NumPy 2)


def _algorithm(arrays: tuple, size: int, min_size: int) -> str:
    """The one decision: "onednn" or "numpy" for a call on ``arrays`` (ndarrays) with a
    result of ``size`` elements, where oneDNN pays from ``min_size``."""
    pinned = ELTWISE.pinned()
    if pinned == "numpy":
        return "numpy"
    if not all(type(a) is np.ndarray and a.dtype == _F32 and a.flags.aligned
               for a in arrays):
        return "numpy"  # float64 stays exact on NumPy; dask arrays are chunked there
    if pinned != "onednn" and size < min_size:
        return "numpy"
    return "onednn" if onednn.available() else "numpy"


def _shape(a: Any) -> tuple:
    """The shape of an array or a number, never computing a dask array (NumPy's
    ``np.shape``/``np.size`` would)."""
    return tuple(getattr(a, "shape", ()))


def _size(a: Any) -> int:
    return int(getattr(a, "size", 1))


def _elem(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def activation(name: str, x: Any, reference: Callable[[], Any], alpha: float = 0.0,
               beta: float = 0.0, supported: bool = True) -> Any:
    """``f(x)`` for the activation ``name`` (:data:`ACTIVATIONS`) with oneDNN's ``alpha``
    and ``beta``; ``reference()`` is the NumPy result; ``supported=False``: oneDNN's
    formula differs from the reference for these parameters.  The result has ``x``'s
    layout."""
    with ELTWISE.record(f"{name}_forward", _shape(x)) as rec:
        least = MIN_PIECEWISE_SIZE if name in _PIECEWISE else MIN_ONEDNN_SIZE
        alg = ACTIVATIONS[name][0]
        if (name == "relu" and ELTWISE.pinned() in (None, "numba") and type(x) is np.ndarray
                and x.dtype == _F32 and x.size >= MIN_COMPILED_RELU_SIZE and is_dense(x)
                and eltwise_loops.loops() is not None):
            rec.algorithm = "numba"  # np.maximum(x, 0) bit for bit, on every core
            out = np.empty_like(x)
            _set_threads()
            eltwise_loops.loops()["relu"](_flat(x), _flat(out))
            return out
        if (alg and supported and _algorithm((x,), _size(x), least) == "onednn"
                and is_dense(x)):
            n = x.size
            plan = _dnnl.plan("forward", alg, ((n,), (n,)), ((1,), (1,)),
                              num_threads(), alpha, beta)
            if plan is not None:
                rec.algorithm = "onednn"
                return plan.run(x=x, out=np.empty_like(x))
        rec.algorithm = "numpy"
        return reference()


#: elements per task of a float64 pass (:func:`log_sigmoid`, :func:`bce_with_logits`):
#: its temporaries (8 bytes an element) stay in a core's cache
FLOAT64_CHUNK = 1 << 15


def _log1p_exp_neg_abs(d: np.ndarray) -> np.ndarray:
    """``log1p(exp(-|d|))`` of a float64 array (in [0, log 2], no overflow)."""
    e = np.abs(d)
    np.negative(e, out=e)
    np.exp(e, out=e)
    return np.log1p(e, out=e)


def _float64_pass(x: np.ndarray, others: tuple, formula: Callable[..., np.ndarray]
                  ) -> np.ndarray:
    """``formula`` of float64 chunks of ``x`` and of ``others`` (dense, ``x``'s strides),
    rounded once into a new array in ``x``'s layout; the chunks over the thread pool."""
    out = np.empty_like(x)
    flats, dst, n = [_flat(a) for a in (x, *others)], _flat(out), x.size

    def chunk(a: int, b: int) -> int:
        dst[a:b] = formula(*(f[a:b].astype(np.float64) for f in flats))
        return 0

    run_chunks([lambda a=a: chunk(a, min(a + FLOAT64_CHUNK, n))
                for a in range(0, n, FLOAT64_CHUNK)])
    return out


def _float32_dense(*arrays: Any) -> bool:
    """Large dense float32 ndarrays of one shape, not pinned to NumPy."""
    x = arrays[0]
    return (ELTWISE.pinned() != "numpy" and all(
        type(a) is np.ndarray and a.dtype == _F32 and a.shape == x.shape for a in arrays)
        and x.size >= MIN_ONEDNN_SIZE and is_dense(x))


def log_sigmoid(x: Any, reference: Callable[[], Any]) -> Any:
    """``log(sigmoid(x))``.  A large dense float32 array: ``min(x, 0) - log1p(exp(-|x|))``
    evaluated in float64 and rounded once, in cache-sized chunks over the thread pool
    (``numpy:float64``): NumPy's float32 ``logaddexp`` (the reference) took 74-84 ms
    for 4M elements, this 25 ms on one thread, within half an ulp (the float32 formula
    had 2.5x torch's error: its ``exp`` and ``log1p`` round each; oneDNN's ``soft_relu``
    of ``-x`` loses the tiny values of large x altogether)."""
    with ELTWISE.record("log_sigmoid_forward", _shape(x)) as rec:
        if not _float32_dense(x):
            rec.algorithm = "numpy"
            return reference()
        rec.algorithm = "numpy:float64"
        return _float64_pass(x, (), lambda d: np.minimum(d, 0.0) - _log1p_exp_neg_abs(d))


def bce_with_logits(x: Any, t: Any, reference: Callable[[], Any]) -> Any:
    """Binary cross-entropy of logits ``x`` against targets ``t``, elementwise:
    ``max(x, 0) - x t + log1p(exp(-|x|))``.  Large dense float32 ``x`` and ``t``: that
    formula in float64 cache-sized chunks over the thread pool, rounded once
    (``numpy:float64``; ``t`` copied into ``x``'s layout first if it lies otherwise);
    anything else the reference.  One pass where the composed form (``(1 - t) x -
    logsigmoid(x)`` and its Functions) took 36-54 ms forward and backward for 4M
    elements (torch 7-18)."""
    with ELTWISE.record("bce_with_logits_forward", _shape(x)) as rec:
        if not _float32_dense(x, t):
            rec.algorithm = "numpy"
            return reference()
        rec.algorithm = "numpy:float64"
        if t.strides != x.strides:  # (an NCHW mask for channels-last logits): one copy
            with LAYOUT.record("copy", t.shape) as copy:
                laid = np.empty_like(x)
                copy.algorithm = relayout.copy(laid, t)
                t = laid
        return _float64_pass(x, (t,), lambda d, u: (
            np.maximum(d, 0.0) - d * u + _log1p_exp_neg_abs(d)))


def _flat(a: np.ndarray) -> np.ndarray:
    """A dense array as a flat view in its memory order."""
    return np.ravel(a, order="K")


def _set_threads() -> None:
    if jit.thread_safe():
        jit.set_threads(num_threads())


def activation_grad(name: str, g: Any, x: Any, reference: Callable[[], Any],
                    alpha: float = 0.0, beta: float = 0.0, supported: bool = True) -> Any:
    """``g f'(x)`` for the activation ``name``, ``x`` its input (its output where the
    backward algorithm reads the output); ``reference`` and ``supported`` as for
    :func:`activation`."""
    with ELTWISE.record(f"{name}_backward", _shape(x)) as rec:
        if (supported and _algorithm((g, x), _size(x), MIN_ONEDNN_SIZE) == "onednn"
                and g.shape == x.shape and is_dense(x)):
            if g.strides != x.strides:
                # one copy into x's layout (a gradient from a pass that wrote NCHW, a
                # broadcast): ~0.1 ms on (8, 16, 64, 64), where NumPy's passes took 2 ms
                g = _laid_like(g, x)
            if (name in ("leaky_relu", "relu") and ELTWISE.pinned() in (None, "numba")
                    and eltwise_loops.loops() is not None):
                # leaky: torch's gradient at a NaN (oneDNN's is not); relu: 2.7x oneDNN's
                rec.algorithm = "numba"
                out = np.empty_like(x)
                _set_threads()
                if name == "relu":
                    eltwise_loops.loops()["relu_grad"](_flat(g), _flat(x), _flat(out))
                else:
                    eltwise_loops.loops()["leaky_relu_grad"](_flat(g), _flat(x),
                                                             x.dtype.type(alpha), _flat(out))
                return out
            if name == "leaky_relu" and ELTWISE.pinned() != "onednn":
                # without the loop: NumPy's rule (torch's at a NaN), unless oneDNN is pinned
                rec.algorithm = "numpy"
                return reference()
            n = x.size
            plan = _dnnl.plan("backward", ACTIVATIONS[name][1], ((n,),) * 3, ((1,),) * 3,
                              num_threads(), alpha, beta)
            if plan is not None:
                rec.algorithm = "onednn"
                return plan.run(g=g, x=x, out=np.empty_like(x))
        rec.algorithm = "numpy"
        return reference()


def relu_in_place(y: Any) -> bool:
    """``y = max(y, 0)`` in place by the compiled ReLU (NaN kept, as :func:`activation`'s)
    where it runs (a large dense float32 ndarray, no pin elsewhere, Numba loaded); whether
    it did.  A ``relu_forward`` event."""
    if not (ELTWISE.pinned() in (None, "numba") and type(y) is np.ndarray
            and y.dtype == _F32 and y.size >= MIN_COMPILED_RELU_SIZE and is_dense(y)
            and y.flags.writeable and eltwise_loops.loops() is not None):
        return False
    with ELTWISE.record("relu_forward", _shape(y)) as rec:
        rec.algorithm = "numba"
        _set_threads()
        eltwise_loops.loops()["relu_in_place"](_flat(y))
    return True


def relu_grad_with_sums(g: Any, y: Any, axes: tuple) -> tuple[np.ndarray, np.ndarray] | None:
    """ReLU's gradient ``g`` where the output ``y`` passed (:func:`activation_grad`'s) and
    its sum over ``axes`` (:func:`.reduction.total`'s bits), in one compiled pass: a
    convolution's input gradient and bias gradient after the ReLU that followed it.  None
    where the two kernels would not both be the compiled ones (float64, small or strided
    arrays, a pin, no Numba): the caller runs them one after the other."""
    if not (type(g) is np.ndarray and type(y) is np.ndarray and g.dtype == y.dtype == _F32
            and g.shape == y.shape and y.size >= MIN_ONEDNN_SIZE and is_dense(y)
            and ELTWISE.pinned() is None and onednn.available()
            and eltwise_loops.loops() is not None):
        return None
    geometry = reduction.compiled_channel_sums(y, axes)
    if geometry is None:
        return None
    with ELTWISE.record("relu_bias_backward", _shape(y)) as rec:
        rec.algorithm = "numba"
        if g.strides != y.strides:
            g = _laid_like(g, y)
        out = np.empty_like(y)
        parts = reduction.part_sums(*geometry)
        _set_threads()
        eltwise_loops.loops()["relu_grad_sums"](_flat(g), _flat(y), _flat(out), geometry[1],
                                                reduction.BLOCK_ROWS, parts)
        return out, reduction.finish_channel_sums(parts, out, axes)


def _same_order(a: np.ndarray, b: np.ndarray) -> bool:
    """Arrays of one shape lie in memory in the same order (size-1 dims aside)."""
    return all(s == t for s, t, n in zip(a.strides, b.strides, a.shape) if n > 1)


def _laid_like(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``a`` copied into ``like``'s memory order (a ``layout`` event ``copy``)."""
    with LAYOUT.record("copy", a.shape) as copy:
        staged = np.empty_like(like)
        copy.algorithm = relayout.copy(staged, a)
    return staged


def binary(op: str, a: Any, b: Any, reference: Callable[[], Any]) -> Any:
    """``a op b`` (``op`` one of add, sub, mul, div) with NumPy's broadcasting;
    ``reference()`` is the NumPy result."""
    with ELTWISE.record(op, _shape(a), _shape(b)) as rec:
        if type(b) in _WEAK or (isinstance(b, np.generic) and b.dtype == _F32):
            b = np.array(b, dtype=np.float32)
        if type(a) in _WEAK and op in ("add", "mul"):
            a, b = b, np.array(a, dtype=np.float32)
        if type(a) is np.ndarray and type(b) is np.ndarray:
            out = _binary_rows(op, a, b)
            if out is not None:
                rec.algorithm = "numba"
                return out
        if (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and _algorithm((a, b), max(a.size, b.size), MIN_BINARY_SIZE) == "onednn"):
            if (a.shape == b.shape and a.strides != b.strides and is_dense(a) != is_dense(b)
                    and min((*a.strides, *b.strides), default=1) > 0
                    and a.size >= MIN_STAGED_BINARY_SIZE):
                # a view (a concatenation's gradient slice) with a dense array, where the
                # row loop above did not run (no Numba, oneDNN pinned): the view copied
                # into the other's layout, then one flat pass on every thread (NumPy's
                # strided pass over (2, 16, 64, 64, 64) took 14.4 ms, the two 6.9, the
                # row loop 4.5); a broadcast operand (a zero stride) stays NumPy's pass
                a, b = (a, _laid_like(b, a)) if is_dense(a) else (_laid_like(a, b), b)
            elif a.shape == b.shape and is_dense(a) and is_dense(b) and not _same_order(a, b):
                # two dense layouts (a channels-last activation and an NCHW target in a
                # loss, an NCHW input added to a network's output): b copied into a's
                # layout, then one flat pass; oneDNN's binary over the two layouts took
                # 2-4x the copy and the pass (sub, 2 threads, ms: (8, 64, 64, 64) 3.15 ->
                # 1.65, (8, 3, 256, 256) 1.96 -> 0.56, (2, 16, 64, 64, 64) 8.70 -> 5.39)
                b = _laid_like(b, a)
            if a.shape != b.shape and a.size < b.size and op in ("add", "mul"):
                a, b = b, a  # IEEE addition and multiplication commute exactly
            plan = _binary_plan(op, a, b)
            if plan is not None:
                rec.algorithm = "onednn"
                return plan.run(a=a, b=b, out=np.empty_like(a))
        rec.algorithm = "numpy"
        return reference()


def _binary_rows(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """``a op b`` by the compiled row loop (:mod:`.eltwise_loops`), into an array in the
    dense operand's layout, where the operands are float32 arrays of one shape and
    different strides, one dense, the other a matrix of the same rows at its own pitch
    (a channel slice of a channels-last array) of at least ``ROWS_MIN_SIZE`` elements;
    else None (the other paths run)."""
    if (a.shape != b.shape or a.strides == b.strides or a.dtype != _F32 or b.dtype != _F32
            or a.size < relayout.ROWS_MIN_SIZE or ELTWISE.pinned() not in (None, "numba")):
        return None
    like = a if is_dense(a) else b if is_dense(b) else None
    if like is None:
        return None
    out = np.empty_like(like)
    found = [relayout.row_matrix(out, v) for v in (a, b)]
    if None in found or found[0][:2] != found[1][:2] or eltwise_loops.loops() is None:
        return None
    (rows, run, a_pitch, pitch), (_, _, b_pitch, _) = found
    _set_threads()
    eltwise_loops.loops()["binary_rows"](
        eltwise_loops.BINARY_OPS[op], relayout.span(a, rows, a_pitch, run), a_pitch,
        relayout.span(b, rows, b_pitch, run), b_pitch, relayout.span(out, rows, pitch, run),
        pitch, rows, run)
    return out


def _binary_plan(op: str, a: np.ndarray, b: np.ndarray):
    """The oneDNN plan for ``a op b`` with ``a`` the full operand, or ``None``."""
    if not is_dense(a):
        return None
    if a.shape == b.shape and a.strides == b.strides:  # one layout: flat
        n = a.size
        return _dnnl.plan("binary", op, ((n,),) * 3, ((1,),) * 3, num_threads())
    if b.ndim > a.ndim or not b.flags.c_contiguous:
        return None
    b_shape = (1,) * (a.ndim - b.ndim) + b.shape
    if any(m != 1 and m != n for m, n in zip(b_shape, a.shape)):
        return None  # a would broadcast too (NumPy's result is larger than a)
    if b.size == 1:  # a number: flat
        n = a.size
        return _dnnl.plan("binary", op, ((n,), (1,), (n,)), ((1,),) * 3, num_threads())
    b_strides, acc = [0] * len(b_shape), 1
    for d in range(len(b_shape) - 1, -1, -1):
        b_strides[d] = acc
        acc *= b_shape[d]
    a_strides = _normalized(a.shape, _elem(a))  # size-1 dims: the dense layout's strides
    return _dnnl.plan("binary", op, (a.shape, b_shape, a.shape),
                      (a_strides, tuple(b_strides), a_strides), num_threads())


@jit.exercise
def _exercise() -> None:
    """The compiled loops once (:func:`.jit.warm_up`), in the order a network's first step
    meets them: a convolution's fused ReLU (in place) right after its first convolution,
    so first (its first ReLU waited 5-9 ms for the loops before it)."""
    lp = eltwise_loops.loops()
    x = np.zeros(4, np.float32)
    lp["relu_in_place"](np.zeros(4, np.float32))
    lp["relu"](x, np.empty_like(x))
    lp["relu_grad_sums"](x, x, np.empty_like(x), 2, 16, np.empty((1, 1, 2)))
    lp["relu_grad"](x, x, np.empty_like(x))
    lp["leaky_relu_grad"](x, x, np.float32(0.2), np.empty_like(x))
    lp["binary_rows"](0, x, 2, x, 2, np.empty_like(x), 2, 2, 2)
