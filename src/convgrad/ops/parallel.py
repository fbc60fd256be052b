"""Chunk-level parallelism: independent chunks on a small thread pool, BLAS on one thread.

Each kernel splits its work into chunks that write disjoint parts of the output.
Running those chunks on ``n`` Python threads (NumPy releases the GIL in copies and
matrix products), each calling single-threaded BLAS, parallelises the patch copies as
well as the products, and degrades gracefully when other processes share the cores:
a multi-threaded BLAS synchronises its threads on every call and stalls badly when
one of them is descheduled.  ``CONVGRAD_NUM_THREADS`` sets ``n``; without it,
``OMP_NUM_THREADS`` as it was when convgrad was imported does (as for PyTorch's intra-op
threads and OpenMP's own, read once at start: a dask worker process is started with it
set to 1, so several single-threaded workers on one machine do not oversubscribe its
cores, while a dask nanny running in this process sets it for its workers afterwards
and must not make this process single-threaded); without either, the usable cores (read
once).
Without threadpoolctl the chunks run in order on the caller's thread and BLAS keeps its
own threading.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

_state: dict = {}
_OMP_AT_START = os.environ.get("OMP_NUM_THREADS", "")  # read once, as OpenMP does
_lock = threading.RLock()
_depth = threading.local()  # .worker: this thread is one of the pool's
_reserved = [0]  # cores left to another process (reserve_cores)
_forked: list = []  # [True] in a forked child whose parent had started OpenMP's threads


def num_threads() -> int:
    """Threads for a kernel: :func:`set_num_threads`'s count, else
    ``CONVGRAD_NUM_THREADS``, else ``OMP_NUM_THREADS`` as it was at import, else the
    usable cores; less the cores :func:`reserve_cores` leaves to another process (at least
    one); 1 in a forked child whose parent had started OpenMP (see :mod:`.fork`)."""
    if _forked:
        return 1
    return max(1, _wanted() - _reserved[0])


def reserve_cores(n: int) -> None:
    """Leave ``n`` cores to another process from now on (0: none): the Numba loops'
    builder while it compiles (:mod:`.jit_build`).  Beside kernels on every core it would
    take a core their OpenMP threads wait for each other on: N1's step 76 -> 344 ms."""
    _reserved[0] = n


def _wanted() -> int:
    if "threads" in _state:
        return _state["threads"]
    for env in (os.environ.get("CONVGRAD_NUM_THREADS", ""), _OMP_AT_START):
        env = env.strip()
        if env.isdigit() and int(env) >= 1:
            return int(env)
    cores = _state.get("cores")
    if cores is None:  # read once (a system call each kernel asked, before), as OpenMP does
        try:
            cores = max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not Linux
            cores = max(1, os.cpu_count() or 1)
        _state["cores"] = cores
    return cores


def set_num_threads(n: int) -> None:
    """Every kernel's thread count from now on (``n`` >= 1, checked by the caller), and
    BLAS's own (NumPy's products outside the kernels), as ``torch.set_num_threads``."""
    with _lock:
        _state["threads"] = n
        saved = _state.get("saved", {})
        for lib in _blas_controllers() or ():
            if lib.filepath in saved:  # a kernel holds BLAS at one thread: restored to n
                saved[lib.filepath] = (saved[lib.filepath][0], n)
            else:
                lib.set_num_threads(n)


def _blas_controllers() -> list | None:
    """The loaded BLAS libraries' controllers; scanned again after new imports (a module
    such as SciPy or torch may bring a BLAS of its own), which is cheap to notice."""
    if _state.get("modules") == len(sys.modules) and "blas" in _state:
        return _state["blas"]  # the common case, without the lock (a kernel asks each call)
    with _lock:
        if "blas" not in _state or _state.get("modules") != len(sys.modules):
            try:
                from threadpoolctl import ThreadpoolController

                _state["blas"] = list(ThreadpoolController().select(user_api="blas")
                                      .lib_controllers)
            except Exception:  # threadpoolctl missing or failing: leave BLAS alone
                _state["blas"] = None
            _state["modules"] = len(sys.modules)
        return _state["blas"]


class _SingleThreadedBlas:
    """:func:`single_threaded_blas`'s context (a class: the generator-based one cost
    ~4 us a kernel, this ~1.5)."""

    __slots__ = ("held",)

    def __enter__(self) -> bool:
        libs = _blas_controllers()
        self.held = libs is not None
        if libs is None:
            return False
        with _lock:
            # library file -> (controller, its thread count); keyed by file, not
            # controller: a rescan (after an import in another thread) makes new
            # controllers of the same libraries, whose thread count, read now, would be
            # the 1 set here
            saved = _state.setdefault("saved", {})
            for lib in libs:  # a library loaded while others are inside is limited too
                if lib.filepath not in saved:
                    saved[lib.filepath] = (lib, lib.num_threads)
                    lib.set_num_threads(1)
            _state["users"] = _state.get("users", 0) + 1
        return True

    def __exit__(self, *exc: object) -> None:
        if not self.held:
            return
        with _lock:
            _state["users"] -= 1
            if _state["users"] == 0:
                for lib, n in _state.pop("saved").values():
                    lib.set_num_threads(n)


def single_threaded_blas() -> _SingleThreadedBlas:
    """Inside (``with single_threaded_blas() as held``): BLAS uses one thread; ``held``
    says whether that holds.

    Process-wide and reference-counted: the first kernel to enter (in any thread)
    saves BLAS's thread counts, the last to leave restores them.
    """
    return _SingleThreadedBlas()


class Background:
    """A job run once per process on a background thread (not a daemon: the interpreter
    never exits inside it): :meth:`start` begins it the first time it is called,
    :meth:`wait` joins it."""

    def __init__(self, name: str, target: Callable[[], object]) -> None:
        self.name, self.target = name, target
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self.target, name=self.name)
        self._thread.start()

    def wait(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds for the job to finish (not from the job's own
        thread; nothing when it never started)."""
        t = self._thread
        if t is not None and t is not threading.current_thread() and t.ident is not None:
            t.join(timeout)


def after_fork_in_child(one_thread: bool) -> None:
    """In a forked child (:mod:`.fork`): a new lock, BLAS's thread counts as before any
    kernel entered (one may have been inside at the fork), no pool (its threads stayed in
    the parent; a new one is made on first use); ``one_thread``: every kernel on one
    thread from now on."""
    global _lock
    _lock = threading.RLock()
    for lib, n in _state.get("saved", {}).values():
        try:
            lib.set_num_threads(n)
        except Exception:  # noqa: BLE001 (BLAS then keeps the child's count)
            pass
    _state.clear()
    _reserved[0] = 0  # the parent's watch of a builder (jit_build) is not in the child
    if one_thread:
        _forked.append(True)


def _pool(n: int) -> ThreadPoolExecutor:
    with _lock:
        pool = _state.get("pool")
        if pool is None or _state.get("pool_size") != n:
            pool = _state["pool"] = ThreadPoolExecutor(n, thread_name_prefix="convgrad")
            _state["pool_size"] = n
        return pool


def run_chunks(tasks: Sequence[Callable[[], int]]) -> int:
    """Run independent tasks (each returns its FLOPs); returns the total FLOPs.

    The calling thread and ``n - 1`` pool threads take the tasks in order from one
    shared counter until none is left: a call costs one wake-up of the pool (~37 us on
    2 cores of an AMD EPYC, against 117-400 us for a future per task, which on a
    ResNet-18 step's few hundred calls was tens of ms), and a thread slowed by another
    process simply takes fewer tasks.
    """
    n = min(num_threads(), len(tasks))
    with single_threaded_blas() as limited:
        if n <= 1 or not limited or getattr(_depth, "worker", False):
            return sum(task() for task in tasks)
        claim = threading.Lock()
        state = {"next": 0, "failed": False}

        def drain() -> int:
            flops = 0
            while True:
                with claim:
                    i = state["next"]
                    if i >= len(tasks) or state["failed"]:
                        return flops
                    state["next"] = i + 1
                try:
                    flops += tasks[i]()
                except BaseException:
                    state["failed"] = True  # the others stop taking tasks
                    raise

        helpers = [_pool(num_threads()).submit(_as_worker, drain) for _ in range(n - 1)]
        _depth.worker = True  # a kernel called from a task runs its chunks inline
        try:
            mine = drain()
        except BaseException:
            for f in helpers:  # let the helpers stop before the error leaves
                f.exception()
            raise
        finally:
            _depth.worker = False
        return mine + sum(f.result() for f in helpers)


def _as_worker(task: Callable[[], int]) -> int:
    _depth.worker = True  # a kernel called from a worker runs its chunks inline
    return task()
