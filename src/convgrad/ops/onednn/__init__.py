"""oneDNN as a convolution backend: float32 passes through oneDNN's C API (ctypes).

The three passes of a convolution ``y = conv(x, w)`` per a :class:`~convgrad.ops.ConvSpec`:

* ``"forward"``: (x, w) -> y, the bias added in the same primitive, and a (leaky) ReLU
  after it when asked (``relu_slope``: oneDNN's eltwise post-op);
* ``"input_grad"``: (gy, w) -> gx, oneDNN's backward-data (a transposed convolution
  is the input gradient of the convolution it transposes);
* ``"weight_grad"``: (x, gy) -> gw, oneDNN's backward-weights.  The bias gradient is
  not fused into it: it is a sum, and every sum goes through the accurate reduction
  (:mod:`convgrad.ops.reduction`).

:func:`plan` returns a cached :class:`Plan` whose ``run(lhs, rhs, out)`` computes
the pass, or ``None`` when oneDNN is unavailable or the pass is outside what it
does well (float64, 4+ spatial dims, input dilation with a stride, a reference-only
implementation, a workspace above the limit); :func:`reason` says why.  Plans are
kept per (pass, shapes, strides, spec, dtype, bias, thread count, workspace limit)
in a bounded LRU cache; a plan over the limit is released at once.  The library loads
on first use; ``CONVGRAD_ONEDNN=0`` disables it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

from ..parallel import Background, num_threads
from ..spec import ConvSpec, Pass
from ..workspace import get_workspace_limit
from . import _library
from ._geometry import PASSES, Unsupported, geometry
from ._plan import Plan, build
from ._runtime import Execution, arena_bytes, release_arena

__all__ = ["OVER_WORKSPACE", "PASSES", "Plan", "after_fork_in_child", "available",
           "cache_info", "clear_cache", "generation", "loaded", "plan", "plan_for", "reason",
           "reason_for", "unavailable_reason", "wait_for_warm_up", "warm_up"]

CACHE_CAPACITY = 128
OVER_WORKSPACE = "workspace"  # how the reason of a plan over the workspace limit begins
_F32 = np.dtype(np.float32)
_FN = "onednn.plan"


def available() -> bool:
    """Whether oneDNN loaded (False when disabled by ``CONVGRAD_ONEDNN=0``)."""
    return _library.library() is not None


def unavailable_reason() -> str:
    """Why :func:`available` is False ('' when it is True)."""
    return _library.failure()


class _Cache:
    """Plans (or the reason a key is unsupported) in least-recently-used order."""

    #: every cache (each kernel family keeps one), for :func:`after_fork_in_child`
    instances: weakref.WeakSet[_Cache] = weakref.WeakSet()

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict = OrderedDict()
        self.hits = self.misses = 0
        self.new_locks()
        _Cache.instances.add(self)

    def new_locks(self) -> None:
        """Unlocked locks for the cache and each plan in it (a forked child's: another
        thread of the parent may have held one at the fork)."""
        self._lock = threading.Lock()        # guards the dictionary (held briefly)
        self._building = threading.Lock()    # one plan built at a time
        for entry in list(self._entries.values()):
            if isinstance(entry, Execution):
                entry._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return entry

    def get_or_build(self, key, make):
        entry = self.get(key)
        if entry is not None:
            return entry
        with self._building:
            entry = self.get(key)
            if entry is not None:
                return entry
            try:
                entry = make()
            except Unsupported as e:
                entry = str(e)
            except _library.DnnlError as e:  # out of memory, a runtime error: NumPy runs it
                entry = f"oneDNN failed: {e}"
                _library.log.debug("oneDNN plan %s failed: %s", key, e)
            with self._lock:
                self.misses += 1
                self._entries[key] = entry
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)  # a running plan stays alive
            return entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def info(self) -> dict:
        with self._lock:
            plans = sum(isinstance(e, Plan) for e in self._entries.values())
            return {"entries": len(self._entries), "plans": plans, "capacity": self.capacity,
                    "hits": self.hits, "misses": self.misses}


_cache = _Cache(CACHE_CAPACITY)


def cache_info() -> dict:
    """Entries (plans and unsupported keys), plans, capacity, hits and misses of the cache,
    and the bytes of this thread's arena."""
    return {**_cache.info(), "arena_bytes": arena_bytes()}


def clear_cache() -> None:
    """Drop every cached plan and this thread's arena (callers keeping plans of their
    own drop those made before: :func:`generation`)."""
    _cache.clear()
    release_arena()
    _generation[0] += 1


def generation() -> int:
    """How many times :func:`clear_cache` has run."""
    return _generation[0]


_generation = [0]


def _check_strides(strides) -> tuple:
    if strides is None:
        return (None, None, None)
    if not isinstance(strides, tuple | list) or len(strides) != 3:
        raise TypeError(f"{_FN}: strides={strides!r} must be (lhs, rhs, out) byte strides "
                        "(each a tuple or None)")
    return tuple(None if st is None else tuple(st) for st in strides)


def _lookup(pass_name: str, lhs_shape: tuple, rhs_shape: tuple, out_shape: tuple,
            spec: ConvSpec, dtype, strides, bias: bool, checked: bool = True,
            relu_slope: float | None = None):
    """A Plan, or the reason (a string) there is none."""
    if not isinstance(spec, ConvSpec):
        raise TypeError(f"{_FN}: spec must be a ConvSpec, got {type(spec).__name__}")
    lib = _library.library()
    if lib is None:
        return f"oneDNN unavailable: {_library.failure()}"
    if np.dtype(dtype) != np.float32:
        return f"dtype {np.dtype(dtype)}: oneDNN convolves float32 only on CPU"
    if bias and pass_name != Pass.FORWARD:
        raise ValueError(f"{_FN}: bias=True is for pass 'forward' only (the bias is added "
                         f"there), got pass {pass_name!r}")
    if relu_slope is not None and pass_name != Pass.FORWARD:
        raise ValueError(f"{_FN}: relu_slope={relu_slope!r} is for pass 'forward' only, got "
                         f"pass {pass_name!r}")
    shapes = (tuple(lhs_shape), tuple(rhs_shape), tuple(out_shape))
    strides = _check_strides(strides)
    threads, limit = num_threads(), get_workspace_limit()
    key = (pass_name, shapes, strides, spec, bool(bias), relu_slope, threads, limit)

    def make():
        geo = geometry(pass_name, *shapes, spec, _FN, checked)
        built = build(lib, geo, shapes, strides, bool(bias), threads, relu_slope)
        if built.workspace_bytes > limit:  # keep the reason, not the primitives' memory
            needed = built.workspace_bytes
            built.close()
            raise Unsupported(f"{OVER_WORKSPACE} {needed} bytes > the limit {limit}")
        return built

    try:
        entry = _cache.get_or_build(key, make)
    except Unsupported as e:  # from the stride check, before the cache
        return str(e)
    return entry


def plan(pass_name: str, lhs_shape: tuple, rhs_shape: tuple, out_shape: tuple,
         spec: ConvSpec, dtype=np.float32, strides=None, bias: bool = False) -> Plan | None:
    """The cached oneDNN plan for one convolution pass, or ``None`` if it cannot run.

    ``pass_name`` is ``"forward"`` (lhs x, rhs w, out y), ``"input_grad"`` (gy, w ->
    gx) or ``"weight_grad"`` (x, gy -> gw); shapes in convgrad's layout, x (N, C_in, *L),
    w (C_out, C_in/groups, *K), y per ``spec``.  ``strides``: the numpy (byte) strides of
    (lhs, rhs, out), ``None`` for C-contiguous.  ``bias``: the forward adds a bias.
    Shapes that disagree with ``spec`` raise ValueError.
    """
    entry = _lookup(pass_name, lhs_shape, rhs_shape, out_shape, spec, dtype, strides, bias)
    return entry if isinstance(entry, Plan) else None


def reason(pass_name: str, lhs_shape: tuple, rhs_shape: tuple, out_shape: tuple,
           spec: ConvSpec, dtype=np.float32, strides=None, bias: bool = False) -> str | None:
    """Why :func:`plan` returns ``None`` for these arguments (``None`` when it does not)."""
    entry = _lookup(pass_name, lhs_shape, rhs_shape, out_shape, spec, dtype, strides, bias)
    return None if isinstance(entry, Plan) else entry


def _lookup_for(pass_name: str, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
                spec: ConvSpec, bias: bool, checked: bool, relu_slope: float | None = None):
    arrays = (lhs, rhs, out)
    if any(a.dtype != _F32 for a in arrays):
        return "dtype: oneDNN convolves float32 only on CPU"
    if not all(a.flags.aligned for a in arrays):
        return "an array is not aligned to its item size"
    return _lookup(pass_name, lhs.shape, rhs.shape, out.shape, spec, np.float32,
                   tuple(a.strides for a in arrays), bias, checked, relu_slope)


def plan_for(pass_name: str, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
             spec: ConvSpec, bias: bool = False, checked: bool = True,
             relu_slope: float | None = None) -> Plan | None:
    """:func:`plan` for these arrays (shapes, dtypes, strides, alignment taken from them);
    ``checked=False`` for callers that have applied the shape rule (the dispatch point);
    ``relu_slope``: the forward's output goes through a (leaky) ReLU in the primitive."""
    entry = _lookup_for(pass_name, lhs, rhs, out, spec, bias, checked, relu_slope)
    return entry if isinstance(entry, Plan) else None


def reason_for(pass_name: str, lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray,
               spec: ConvSpec, bias: bool = False, checked: bool = True) -> str | None:
    """Why :func:`plan_for` returns ``None`` for these arrays (``None`` when it does not);
    it begins with :data:`OVER_WORKSPACE` when only the workspace limit is in the way."""
    entry = _lookup_for(pass_name, lhs, rhs, out, spec, bias, checked)
    return None if isinstance(entry, Plan) else entry


def warm_up() -> None:
    """Load the library and run a tiny one-channel convolution both ways on a background
    thread, once: a network is being built.  oneDNN compiles its GEMM kernels (what it
    runs a one-channel pass with, MS-SSIM's windows) on their first use in the process,
    whatever the shape: measured, the first such input gradient took 28 ms, every later
    one of any shape 0.1-0.3 ms; loading the library and creating its engine took 6 ms.
    Not a daemon thread, so the interpreter never exits inside oneDNN."""
    _warming.start()


def wait_for_warm_up(timeout: float) -> None:
    """Wait (at most ``timeout`` seconds) for :func:`warm_up`'s thread to finish, unless
    called from it."""
    _warming.wait(timeout)


def loaded() -> bool:
    """The library is loaded in this process (its kernels may have started OpenMP's
    threads)."""
    return _library.loaded()


def after_fork_in_child() -> None:
    """In a forked child (see :mod:`..fork`): every plan cache's and plan's lock unlocked
    again, and this thread's OpenMP teams of one thread (the kernels' plans are made for
    the child's one thread: :func:`..parallel.num_threads`)."""
    for cache in list(_Cache.instances):
        cache.new_locks()
    _library.after_fork_in_child()


def _warm() -> None:
    try:
        if not available():
            return
        spec = ConvSpec((1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1))
        x, w = np.ones((1, 1, 8, 8), np.float32), np.ones((1, 1, 3, 1), np.float32)
        y = np.empty((1, 1, 6, 8), np.float32)
        for pass_name, arrays in ((Pass.FORWARD, (x, w, y)), (Pass.INPUT_GRAD, (y, w, x))):
            found = plan_for(pass_name, *arrays, spec)
            if found is not None:
                found.run(*arrays)
    except Exception:  # a caller's own call meets the failure, where it is made
        _library.log.debug("oneDNN's warm-up failed", exc_info=True)


_warming = Background("convgrad-onednn-warm-up", _warm)
