"""oneDNN's runtime, apart from any primitive: what every plan of every kernel family
shares.

An :class:`Execution` owns oneDNN objects (memory descriptors, attributes, primitives,
reorders) and runs its steps: a main primitive and the reorders between the caller's
arrays and the layouts oneDNN chose, each argument an :class:`Operand`.  What one run
needs besides the caller's arrays (reordered tensors, staging copies, the scratchpad)
lives in a per-thread :class:`_Arena` that grows to the largest plan the thread ran
(each plan is held to the workspace limit), so concurrent runs never share a buffer and
idle plans hold no memory.  Memory objects and argument lists are kept in contexts, one
per thread running the plan at a time (one idle context is kept).  A kernel family's
plan (the convolution's is :mod:`._plan`) subclasses :class:`Execution`: it builds its
primitive descriptor and operands, checks its arguments and calls :meth:`Execution.execute`.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from math import prod

import numpy as np

from ..layouts import ALIGNMENT, LAYOUT
from ..parallel import single_threaded_blas
from ..profiler import recording
from ..workspace import get_workspace_limit
from . import _library as L
from ._geometry import Unsupported

__all__ = ["ALIGNMENT", "Execution", "F32", "ITEMSIZE", "Operand", "arena_bytes",
           "build_with_threads", "dims", "release_arena"]

ITEMSIZE = 4
F32 = np.dtype(np.float32)


def dims(values: tuple) -> L.Dims:
    d = L.Dims()
    for i, v in enumerate(values):
        d[i] = v
    return d


def round_up(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


class Operand:
    """One argument of the main primitive and how it meets the caller's array."""

    def __init__(self, arg: int, key: str, output: bool) -> None:
        self.arg, self.key, self.output = arg, key, output
        self.user_md = None          # the caller's array (its crop), or the staging copy
        self.offset = 0              # bytes from the array's data pointer to the crop
        self.flip_nd = 0             # > 0: a contiguous staging copy reversed in nd dims
        self.staging_shape = ()      # the staging copy's shape (the caller's array's)
        self.staging_at = 0          # its arena offset
        self.prim_md = None          # what the primitive reads or writes
        self.inner_md = None         # the reorder's side in the primitive's buffer
        self.reorder = None          # (primitive, scratchpad descriptor, scratchpad bytes)
        self.buffer_at = 0           # arena offset of the primitive's buffer
        self.buffer_bytes = 0        # its size (0: the primitive uses the caller's array)
        self.zero = False            # the buffer holds explicit zero padding


class Execution:
    """oneDNN objects owned together and run as steps: the reorders into the main
    primitive's layouts, the primitive, the reorders back.

    A subclass builds ``_operands`` (:class:`Operand`), ``_main`` (a :meth:`_primitive`)
    and ``workspace_bytes`` (:meth:`_place_in_arena`), and runs through :meth:`execute`;
    :meth:`before_run` is its hook for work on the caller's arrays before the steps.
    """

    #: hold BLAS to one thread while running (its idle threads spin and slow oneDNN's);
    #: a plan whose run is shorter than the ~10 us the hold costs may skip it
    hold_blas = True

    def __init__(self, lib: L.Library, threads: int) -> None:
        self._owned: list[tuple[str, ctypes.c_void_p]] = []
        self._idle: list[_Context] = []
        self._lock = threading.Lock()
        self.lib, self.threads = lib, threads
        self.workspace_bytes = 0
        self._operands: list[Operand] = []
        self._main = None             # (primitive, scratchpad descriptor, scratchpad bytes)

    def _own(self, kind: str, handle: ctypes.c_void_p) -> ctypes.c_void_p:
        self._owned.append((kind, handle))
        return handle

    def _md(self, shape: tuple, strides: tuple | None = None, tag: int | None = None):
        md = ctypes.c_void_p()
        if strides is None:
            self.lib.call("dnnl_memory_desc_create_with_tag", ctypes.byref(md), len(shape),
                          dims(shape), L.F32, tag)
        else:
            self.lib.call("dnnl_memory_desc_create_with_strides", ctypes.byref(md), len(shape),
                          dims(shape), L.F32, dims(strides))
        return self._own("dnnl_memory_desc_destroy", md)

    def _attr(self) -> ctypes.c_void_p:
        attr = ctypes.c_void_p()
        self.lib.call("dnnl_primitive_attr_create", ctypes.byref(attr))
        self._own("dnnl_primitive_attr_destroy", attr)
        self.lib.call("dnnl_primitive_attr_set_scratchpad_mode", attr, L.SCRATCHPAD_USER)
        return attr

    def _descriptor(self, what: str, fn: str, *args: object) -> ctypes.c_void_p:
        """The primitive descriptor ``fn`` creates from ``args`` (after the engine), owned
        by the plan; :class:`Unsupported` where oneDNN rejects this ``what``."""
        pd = ctypes.c_void_p()
        try:
            self.lib.call(fn, ctypes.byref(pd), self.lib.engine, *args)
        except L.DnnlError as e:
            if e.status in (L.UNIMPLEMENTED, L.INVALID_ARGUMENTS):
                raise Unsupported(f"oneDNN rejects this {what} ({e})") from None
            raise
        return self._own("dnnl_primitive_desc_destroy", pd)

    def _implementation(self, pd: ctypes.c_void_p, reference_ok: bool = False) -> str:
        """oneDNN's name for the implementation ``pd`` chose; :class:`Unsupported` for its
        slow reference kernels unless ``reference_ok``."""
        info = ctypes.c_char_p()
        self.lib.call("dnnl_primitive_desc_query", pd, L.QUERY_IMPL_INFO_STR, 0,
                      ctypes.byref(info))
        impl = (info.value or b"?").decode()
        if impl.startswith("ref") and not reference_ok:
            raise Unsupported(f"oneDNN has only its reference implementation ({impl})")
        return impl

    def _primitive(self, pd: ctypes.c_void_p) -> tuple:
        """The primitive of ``pd``, its scratchpad descriptor and the scratchpad's bytes."""
        prim = ctypes.c_void_p()
        self.lib.call("dnnl_primitive_create", ctypes.byref(prim), pd)
        self._own("dnnl_primitive_destroy", prim)
        scratch = self.lib.raw("dnnl_primitive_desc_query_md")(pd, L.QUERY_SCRATCHPAD_MD, 0)
        size = self.lib.raw("dnnl_memory_desc_get_size")(scratch) if scratch else 0
        return prim, scratch, int(size)

    def _reorder(self, op: Operand) -> None:
        """The reorder between ``op``'s caller side and its primitive-side buffer."""
        src, dst = (op.inner_md, op.user_md) if op.output else (op.user_md, op.inner_md)
        rpd = ctypes.c_void_p()
        self.lib.call("dnnl_reorder_primitive_desc_create", ctypes.byref(rpd), src,
                      self.lib.engine, dst, self.lib.engine, self._attr())
        self._own("dnnl_primitive_desc_destroy", rpd)
        op.reorder = self._primitive(rpd)
        op.buffer_bytes = int(self.lib.raw("dnnl_memory_desc_get_size")(op.prim_md))

    def _primitives(self) -> list[tuple]:
        return [op.reorder for op in self._operands if op.reorder] + [self._main]

    def _place_in_arena(self) -> None:
        """Arena offsets: the scratchpad (shared by the steps, which run in turn), then
        each operand's buffer and staging copy; sets ``workspace_bytes``."""
        at = round_up(max(step[2] for step in self._primitives()))
        for op in self._operands:
            if op.buffer_bytes:
                op.buffer_at, at = at, at + round_up(op.buffer_bytes)
            if op.flip_nd:
                op.staging_at, at = at, at + round_up(ITEMSIZE * prod(op.staging_shape))
        self.workspace_bytes = at

    def before_run(self, arrays: dict) -> None:
        """Work on the caller's arrays before the steps (nothing by default)."""

    def execute(self, arrays: dict, ptrs: dict) -> None:
        """Run the steps on ``arrays`` (by operand key), whose data pointers are ``ptrs``."""
        with self._lock:
            ctx = self._idle.pop() if self._idle else None
        if ctx is None:
            ctx = _Context(self)
        try:
            if self.hold_blas:
                with single_threaded_blas():
                    ctx.run(arrays, ptrs)
            else:
                ctx.run(arrays, ptrs)
        finally:
            with self._lock:
                if not self._idle and self._owned:
                    self._idle.append(ctx)
                    ctx = None
            if ctx is not None:
                ctx.close()

    def close(self) -> None:
        """Release every oneDNN object; the plan cannot run afterwards."""
        with self._lock:
            idle, self._idle = self._idle, []
            owned, self._owned = self._owned, []
        for ctx in idle:
            ctx.close()
        for kind, handle in reversed(owned):
            try:
                self.lib.raw(kind)(handle)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass

    def __del__(self) -> None:
        self.close()


class _Arena(threading.local):
    """This thread's buffer for plans' reordered tensors and scratchpads."""

    _ids = itertools.count(1)

    def __init__(self) -> None:
        self.raw = np.empty(0, dtype=np.uint8)
        self.base, self.shift, self.size, self.token = 0, 0, 0, 0

    def ensure(self, nbytes: int) -> None:
        """At least ``nbytes``; grows by doubling, but never past the workspace limit
        unless one plan needs more (it fitted the limit in force when it was planned)."""
        if nbytes > self.size:
            size = max(nbytes, min(2 * self.size, get_workspace_limit()))
            self.raw = np.empty(size + ALIGNMENT, dtype=np.uint8)
            ptr = self.raw.ctypes.data
            self.shift = (-ptr) % ALIGNMENT
            self.base, self.size, self.token = ptr + self.shift, size, next(self._ids)

    def view(self, at: int, shape: tuple) -> np.ndarray:
        start = self.shift + at
        return self.raw[start:start + ITEMSIZE * prod(shape)].view(np.float32).reshape(shape)


_arena = _Arena()


def arena_bytes() -> int:
    """Bytes held by this thread's arena."""
    return _arena.size


def release_arena() -> None:
    """Free this thread's arena (the next run allocates a new one)."""
    _arena.__init__()


class _Context:
    """Memory objects and argument lists for one run of a plan at a time."""

    def __init__(self, plan: Execution) -> None:
        self.plan = plan
        self.token = 0                   # the arena the memory objects point into
        self._memories: list[ctypes.c_void_p] = []
        self.user: list[tuple[ctypes.c_void_p, str, int]] = []   # (memory, key, byte offset)
        self.arena: list[tuple[ctypes.c_void_p, int]] = []       # (memory, arena offset)
        self.steps: list[tuple[ctypes.c_void_p, ctypes.Array]] = []
        self.reorders: list[str] = []   # per step: the operand a reorder converts, or ""
        # operands with work besides the primitives: zeroed padding, a flipped copy
        self.prepare = [op for op in plan._operands if op.zero or op.flip_nd]
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _memory(self, md: ctypes.c_void_p) -> ctypes.c_void_p:
        mem = ctypes.c_void_p()
        lib = self.plan.lib
        lib.call("dnnl_memory_create", ctypes.byref(mem), md, lib.engine, None)
        self._memories.append(mem)
        return mem

    def _build(self) -> None:
        plan = self.plan
        pre, post, main_args = [], [], []
        for op in plan._operands:
            user_mem = self._memory(op.user_md)
            if op.flip_nd:
                self.arena.append((user_mem, op.staging_at))
            else:
                self.user.append((user_mem, op.key, op.offset))
            if op.reorder is None:
                main_args.append((op.arg, user_mem))
                continue
            prim_mem = self._memory(op.prim_md)
            self.arena.append((prim_mem, op.buffer_at))
            inner_mem = prim_mem
            if op.inner_md is not op.prim_md:
                inner_mem = self._memory(op.inner_md)
                self.arena.append((inner_mem, op.buffer_at))
            main_args.append((op.arg, prim_mem))
            pair = [(L.ARG_FROM, inner_mem), (L.ARG_TO, user_mem)] if op.output else [
                (L.ARG_FROM, user_mem), (L.ARG_TO, inner_mem)]
            (post if op.output else pre).append((op.reorder, pair, op.key))
        for (prim, scratch_md, scratch), pairs, key in [*pre, (plan._main, main_args, ""),
                                                        *post]:
            if scratch:
                mem = self._memory(scratch_md)
                self.arena.append((mem, 0))
                pairs = [*pairs, (L.ARG_SCRATCHPAD, mem)]
            args = (L.ExecArg * len(pairs))(*(L.ExecArg(a, m) for a, m in pairs))
            self.steps.append((prim, args))
            self.reorders.append(key)

    def run(self, arrays: dict, ptrs: dict) -> None:
        plan, lib = self.plan, self.plan.lib
        set_handle = lib.set_handle
        _arena.ensure(plan.workspace_bytes)
        if self.token != _arena.token:
            for mem, at in self.arena:
                if set_handle(mem, _arena.base + at):
                    raise L.DnnlError("dnnl_memory_set_data_handle", L.INVALID_ARGUMENTS)
            self.token = _arena.token
        for mem, key, offset in self.user:
            if set_handle(mem, ptrs[key] + offset):
                raise L.DnnlError("dnnl_memory_set_data_handle", L.INVALID_ARGUMENTS)
        for op in self.prepare:
            if op.zero:
                ctypes.memset(_arena.base + op.buffer_at, 0, op.buffer_bytes)
            if op.flip_nd and not op.output:
                np.copyto(_arena.view(op.staging_at, op.staging_shape),
                          arrays[op.key][(Ellipsis, *([slice(None, None, -1)] * op.flip_nd))])
        plan.before_run(arrays)
        stream, execute = lib.stream(), lib.execute
        saved = lib.omp_threads()
        if saved != plan.threads:
            lib.set_omp_threads(plan.threads)
        try:
            if recording():  # each reorder its own event, out of the kernel's time
                for (prim, args), key in zip(self.steps, self.reorders):
                    if key:
                        with LAYOUT.record("reorder", arrays[key].shape) as rec:
                            rec.algorithm = "onednn"
                            status = execute(prim, stream, len(args), args)
                    else:
                        status = execute(prim, stream, len(args), args)
                    if status:
                        raise L.DnnlError("dnnl_primitive_execute", status)
            else:
                for prim, args in self.steps:
                    status = execute(prim, stream, len(args), args)
                    if status:
                        raise L.DnnlError("dnnl_primitive_execute", status)
        finally:
            if saved != plan.threads:
                lib.set_omp_threads(saved)
        for op in self.prepare:
            if op.flip_nd and op.output:
                np.copyto(arrays[op.key], _arena.view(op.staging_at, op.staging_shape)[
                    (Ellipsis, *([slice(None, None, -1)] * op.flip_nd))])

    def close(self) -> None:
        destroy = self.plan.lib.raw("dnnl_memory_destroy")
        mems, self._memories = self._memories, []
        for mem in mems:
            try:
                destroy(mem)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


def build_with_threads(plan: Execution, threads: int) -> Execution:
    """``plan.build()`` with ``threads`` OpenMP threads (oneDNN's kernels are generated
    for the thread count); closes the plan if it raises."""
    lib = plan.lib
    saved = lib.omp_threads()
    lib.set_omp_threads(threads)
    try:
        plan.build()
    except BaseException:
        plan.close()
        raise
    finally:
        lib.set_omp_threads(saved)
    return plan
