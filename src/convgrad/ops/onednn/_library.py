"""Finding and loading ``libdnnl`` through ctypes, and the few C entry points used.

The library comes from the ``onednn-cpu-gomp`` wheel, which installs it under
``<prefix>/lib`` (not on the loader's path).  It is looked up in the wheel's file
list, then in ``sys.prefix/lib``; ``CONVGRAD_ONEDNN_LIBRARY`` names a file to use
instead.  Any failure leaves :func:`library` returning ``None`` (said once, at debug
level): the callers then run on the NumPy engine.

Handles (engines, streams, descriptors, primitives, memories) are ``c_void_p``.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import logging
import os
import sys
import threading

log = logging.getLogger("convgrad.ops.onednn")

MAX_NDIMS = 12
Dims = ctypes.c_int64 * MAX_NDIMS

# dnnl_status_t
SUCCESS, OUT_OF_MEMORY, INVALID_ARGUMENTS, UNIMPLEMENTED = 0, 1, 2, 3
# dnnl_data_type_t, dnnl_format_tag_t (any), dnnl_engine_kind_t
F32, FORMAT_ANY, FORMAT_A, CPU = 3, 1, 2, 1
# dnnl_prop_kind_t, dnnl_alg_kind_t, dnnl_scratchpad_mode_t
FORWARD_TRAINING, FORWARD_INFERENCE, BACKWARD_DATA, BACKWARD_WEIGHTS = 64, 96, 160, 192
BACKWARD = 128  # data and the normalisation's scale/shift gradients
# dnnl_normalization_flags_t
USE_GLOBAL_STATS, USE_SCALE, USE_SHIFT, FUSE_NORM_RELU = 0x1, 0x2, 0x4, 0x8
CONVOLUTION_DIRECT, DECONVOLUTION_DIRECT = 0x1, 0xA
POOLING_MAX, POOLING_AVG_INCLUDE_PADDING, POOLING_AVG_EXCLUDE_PADDING = 0x1FF, 0x2FF, 0x3FF
RESAMPLING_NEAREST, RESAMPLING_LINEAR = 0x2FFF0, 0x2FFF1
SCRATCHPAD_USER = 1
# dnnl_query_t
QUERY_IMPL_INFO_STR = 8
QUERY_SRC_MD, QUERY_DIFF_SRC_MD, QUERY_WEIGHTS_MD, QUERY_DIFF_WEIGHTS_MD = 129, 130, 131, 132
QUERY_DST_MD, QUERY_DIFF_DST_MD, QUERY_WORKSPACE_MD, QUERY_SCRATCHPAD_MD = 133, 134, 135, 136
QUERY_DATA_TYPE = 258  # of a memory descriptor (dnnl_memory_desc_query)
# dnnl_data_type_t of a workspace
S32, U8 = 4, 6
# execution argument indices (DNNL_ARG_*)
ARG_SRC, ARG_DST, ARG_WEIGHTS, ARG_BIAS, ARG_WORKSPACE, ARG_SCRATCHPAD = 1, 17, 33, 41, 64, 80
ARG_DIFF_SRC, ARG_DIFF_DST, ARG_DIFF_WEIGHTS, ARG_DIFF_BIAS = 129, 145, 161, 169
ARG_FROM, ARG_TO = ARG_SRC, ARG_DST
ARG_SRC_1 = 2
# eltwise and binary algorithms (dnnl_alg_kind_t)
ELTWISE_ALGS = {
    "relu": 0x20, "tanh": 0x21, "elu": 0x22, "soft_relu": 0x27, "logistic": 0x29,
    "gelu_tanh": 0x2B, "swish": 0x2C, "clip_v2": 0x2F, "gelu_erf": 0x31, "hardswish": 0x34,
    "relu_use_dst_for_bwd": 0x100, "tanh_use_dst_for_bwd": 0x101,
    "logistic_use_dst_for_bwd": 0x104,
}
BINARY_ALGS = {"add": 0x1FFF0, "mul": 0x1FFF1, "div": 0x1FFF4, "sub": 0x1FFF5}
ARG_MEAN, ARG_VARIANCE, ARG_SCALE, ARG_SHIFT = 49, 50, 51, 52
ARG_DIFF_SCALE, ARG_DIFF_SHIFT = 255, 256

_STATUS = {1: "out of memory", 2: "invalid arguments", 3: "unimplemented",
           4: "last implementation reached", 5: "runtime error", 6: "not required"}


class ExecArg(ctypes.Structure):
    """``dnnl_exec_arg_t``: an argument index and a memory object."""

    _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]


class DnnlError(RuntimeError):
    """A oneDNN call returned a status other than success."""

    def __init__(self, call: str, status: int) -> None:
        super().__init__(f"{call} failed: {_STATUS.get(status, status)}")
        self.status = status


_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES = {
    # name: (restype, argtypes); restype int means a dnnl_status_t to check
    "dnnl_version": (_P, []),
    "dnnl_engine_create": (ctypes.c_int, [_PP, ctypes.c_int, ctypes.c_size_t]),
    "dnnl_stream_create": (ctypes.c_int, [_PP, _P, ctypes.c_uint]),
    "dnnl_stream_destroy": (ctypes.c_int, [_P]),
    "dnnl_memory_desc_create_with_tag": (ctypes.c_int, [_PP, ctypes.c_int, Dims, ctypes.c_int,
                                                        ctypes.c_int]),
    "dnnl_memory_desc_create_with_strides": (ctypes.c_int, [_PP, ctypes.c_int, Dims,
                                                            ctypes.c_int, Dims]),
    "dnnl_memory_desc_create_with_string_tag": (ctypes.c_int, [_PP, ctypes.c_int, Dims,
                                                               ctypes.c_int, ctypes.c_char_p]),
    "dnnl_memory_desc_create_submemory": (ctypes.c_int, [_PP, _P, Dims, Dims]),
    "dnnl_memory_desc_destroy": (ctypes.c_int, [_P]),
    "dnnl_memory_desc_equal": (ctypes.c_int, [_P, _P]),
    "dnnl_memory_desc_get_size": (ctypes.c_size_t, [_P]),
    "dnnl_memory_desc_query": (ctypes.c_int, [_P, ctypes.c_int, _P]),
    "dnnl_memory_create": (ctypes.c_int, [_PP, _P, _P, _P]),
    "dnnl_memory_set_data_handle": (ctypes.c_int, [_P, _P]),
    # row-major C = alpha op(A) op(B) + beta C: (transa, transb, M, N, K, alpha, A, lda, B,
    # ldb, beta, C, ldc), dims as dnnl_dim_t (int64)
    "dnnl_sgemm": (ctypes.c_int, [ctypes.c_char, ctypes.c_char, ctypes.c_int64,
                                  ctypes.c_int64, ctypes.c_int64, ctypes.c_float, _P,
                                  ctypes.c_int64, _P, ctypes.c_int64, ctypes.c_float, _P,
                                  ctypes.c_int64]),
    "dnnl_memory_destroy": (ctypes.c_int, [_P]),
    "dnnl_primitive_attr_create": (ctypes.c_int, [_PP]),
    "dnnl_primitive_attr_destroy": (ctypes.c_int, [_P]),
    "dnnl_primitive_attr_set_scratchpad_mode": (ctypes.c_int, [_P, ctypes.c_int]),
    "dnnl_primitive_attr_set_post_ops": (ctypes.c_int, [_P, _P]),
    "dnnl_post_ops_create": (ctypes.c_int, [_PP]),
    "dnnl_post_ops_destroy": (ctypes.c_int, [_P]),
    "dnnl_post_ops_append_eltwise": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_float,
                                                     ctypes.c_float]),
    "dnnl_primitive_desc_destroy": (ctypes.c_int, [_P]),
    "dnnl_primitive_desc_query": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_int, _P]),
    "dnnl_primitive_desc_query_md": (_P, [_P, ctypes.c_int, ctypes.c_int]),
    "dnnl_primitive_create": (ctypes.c_int, [_PP, _P]),
    "dnnl_primitive_destroy": (ctypes.c_int, [_P]),
    "dnnl_primitive_execute": (ctypes.c_int, [_P, _P, ctypes.c_int, ctypes.POINTER(ExecArg)]),
    "dnnl_reorder_primitive_desc_create": (ctypes.c_int, [_PP, _P, _P, _P, _P, _P]),
    "dnnl_set_primitive_cache_capacity": (ctypes.c_int, [ctypes.c_int]),
}
_F = ctypes.c_float
# (pd, engine, prop_kind, alg, src, dst, alpha, beta, attr)
_SIGNATURES["dnnl_eltwise_forward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, ctypes.c_int, _P, _P, _F, _F, _P])
# (pd, engine, alg, diff_src, diff_dst, data, alpha, beta, hint, attr)
_SIGNATURES["dnnl_eltwise_backward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, _P, _F, _F, _P, _P])
# (pd, engine, alg, src0, src1, dst, attr)
_SIGNATURES["dnnl_binary_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, _P, _P])
_PARAMS = [Dims, Dims, Dims, Dims]  # strides, dilates, padding_l, padding_r
# pooling: (pd, engine, [prop_kind,] alg_kind, src or diff_src, dst or diff_dst, strides,
# kernel, dilation, padding_l, padding_r, [hint,] attr)
_SIGNATURES["dnnl_pooling_forward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, ctypes.c_int, _P, _P, Dims, *_PARAMS, _P])
_SIGNATURES["dnnl_pooling_backward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, Dims, *_PARAMS, _P, _P])
# resampling: (pd, engine, [prop_kind,] alg_kind, factors (float*, NULL: from the shapes),
# src or diff_src, dst or diff_dst, [hint,] attr)
_SIGNATURES["dnnl_resampling_forward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, ctypes.c_int, _P, _P, _P, _P])
_SIGNATURES["dnnl_resampling_backward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, _P, _P, _P])
for _kind in ("convolution", "deconvolution"):
    # (pd, engine, [prop_kind,] alg_kind, 3 or 4 memory descs, params, [hint,] attr)
    _SIGNATURES[f"dnnl_{_kind}_forward_primitive_desc_create"] = (
        ctypes.c_int, [_PP, _P, ctypes.c_int, ctypes.c_int, _P, _P, _P, _P, *_PARAMS, _P])
    _SIGNATURES[f"dnnl_{_kind}_backward_data_primitive_desc_create"] = (
        ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, _P, *_PARAMS, _P, _P])
    _SIGNATURES[f"dnnl_{_kind}_backward_weights_primitive_desc_create"] = (
        ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, _P, _P, *_PARAMS, _P, _P])
# batch normalization: (pd, engine, prop_kind, src, dst, epsilon, flags, attr) and
# (pd, engine, prop_kind, diff_src, diff_dst, src, epsilon, flags, hint, attr)
_SIGNATURES["dnnl_batch_normalization_forward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, ctypes.c_float, ctypes.c_uint, _P])
_SIGNATURES["dnnl_batch_normalization_backward_primitive_desc_create"] = (
    ctypes.c_int, [_PP, _P, ctypes.c_int, _P, _P, _P, ctypes.c_float, ctypes.c_uint, _P, _P])


class Library:
    """The loaded ``libdnnl``: checked C calls, one CPU engine, one stream per thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._dll = ctypes.CDLL(path)
        self._fn = {}
        for name, (restype, argtypes) in _SIGNATURES.items():
            f = getattr(self._dll, name)
            f.restype, f.argtypes = restype, argtypes
            self._fn[name] = f
        version = ctypes.cast(self._fn["dnnl_version"](), ctypes.POINTER(ctypes.c_int * 3))
        self.version = tuple(version.contents) if version else (0, 0, 0)
        if self.version[0] != 3:
            raise OSError(f"{path}: oneDNN {self.version} found, version 3 needed")
        # the OpenMP runtime libdnnl is linked against (dlsym searches its dependencies)
        try:
            self._omp_get = self._dll.omp_get_max_threads
            self._omp_set = self._dll.omp_set_num_threads
            self._omp_get.restype, self._omp_get.argtypes = ctypes.c_int, []
            self._omp_set.restype, self._omp_set.argtypes = None, [ctypes.c_int]
        except AttributeError:  # pragma: no cover - a build without OpenMP
            self._omp_get = self._omp_set = None
        # convgrad caches its plans itself (bounded); oneDNN's own primitive cache would
        # keep a second copy of each, and of every plan released for its workspace
        self.call("dnnl_set_primitive_cache_capacity", 0)
        engine = ctypes.c_void_p()
        self.call("dnnl_engine_create", ctypes.byref(engine), CPU, 0)
        self.engine = engine
        self._local = threading.local()
        self.execute = self._fn["dnnl_primitive_execute"]
        self.set_handle = self._fn["dnnl_memory_set_data_handle"]

    def call(self, name: str, *args: object) -> None:
        """Call a status-returning entry point; raise :class:`DnnlError` on failure."""
        status = self._fn[name](*args)
        if status != SUCCESS:
            raise DnnlError(name, status)

    def raw(self, name: str):
        """The ctypes function itself (for calls that do not return a status)."""
        return self._fn[name]

    def stream(self) -> ctypes.c_void_p:
        """This thread's stream (streams are not shared between threads)."""
        holder = getattr(self._local, "stream", None)
        if holder is None:
            holder = self._local.stream = _Stream(self)
        return holder.handle

    def omp_threads(self) -> int:
        """OpenMP threads a parallel region started by this thread gets now."""
        return self._omp_get() if self._omp_get is not None else 1

    def set_omp_threads(self, n: int) -> None:
        """Set this thread's OpenMP thread count (other threads keep theirs)."""
        if self._omp_set is not None:
            self._omp_set(n)


class _Stream:
    """Owns one thread's stream; destroyed with the thread's local storage."""

    def __init__(self, lib: Library) -> None:
        self._destroy = lib.raw("dnnl_stream_destroy")
        self.handle = ctypes.c_void_p()
        lib.call("dnnl_stream_create", ctypes.byref(self.handle), lib.engine, 1)

    def __del__(self) -> None:
        if self.handle:
            self._destroy(self.handle)


def _candidates() -> list[str]:
    override = os.environ.get("CONVGRAD_ONEDNN_LIBRARY", "")
    if override:
        return [override]
    found = []
    try:
        files = importlib.metadata.files("onednn-cpu-gomp") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    names = sorted((f for f in files if f.name.startswith("libdnnl.so")),
                   key=lambda f: (f.name != "libdnnl.so.3", f.name))
    found += [str(f.locate()) for f in names]
    lib_dir = os.path.join(sys.prefix, "lib")
    found += [os.path.join(lib_dir, n) for n in ("libdnnl.so.3", "libdnnl.so")]
    return [p for p in dict.fromkeys(found) if os.path.exists(p)]


_state: dict = {}
_lock = threading.Lock()


def disabled_by_env() -> bool:
    """``CONVGRAD_ONEDNN=0`` (or ``false``/``off``/``no``), read once at import."""
    return _DISABLED


_DISABLED = os.environ.get("CONVGRAD_ONEDNN", "").strip().lower() in ("0", "false", "off", "no")


def library() -> Library | None:
    """The loaded library, or ``None`` if disabled, missing or unloadable (cached)."""
    if "lib" in _state:
        return _state["lib"]
    with _lock:
        if "lib" not in _state:
            _state["lib"] = _load()
        return _state["lib"]


def loaded() -> bool:
    """:func:`library` loaded the library in this process."""
    return _state.get("lib") is not None


def after_fork_in_child() -> None:
    """A forked child's: a new load lock; one OpenMP thread for this thread's teams."""
    global _lock
    _lock = threading.Lock()
    lib = _state.get("lib")
    if lib is not None:
        lib.set_omp_threads(1)


def failure() -> str:
    """Why :func:`library` returned ``None`` ('' when it loaded)."""
    library()
    return _state.get("why", "")


def _load() -> Library | None:
    if _DISABLED:
        _state["why"] = "disabled by CONVGRAD_ONEDNN=0"
        log.debug("oneDNN backend %s", _state["why"])
        return None
    if sys.platform != "linux":
        _state["why"] = f"no oneDNN build is used on {sys.platform}"
        log.debug("oneDNN backend unavailable: %s", _state["why"])
        return None
    errors = []
    for path in _candidates():
        try:
            return Library(path)
        except (OSError, AttributeError, DnnlError) as e:
            errors.append(f"{path}: {e}")
    _state["why"] = "; ".join(errors) or "libdnnl not found (install onednn-cpu-gomp)"
    log.debug("oneDNN backend unavailable, using the NumPy engine: %s", _state["why"])
    return None
