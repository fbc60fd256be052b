"""Numba, the compiler of the loops no kernel library provides: few-channel direct
convolutions (:mod:`.direct`) and the norm family's fused chunk passes
(:mod:`.norm_loops`).

Optional: without it (or with ``CONVGRAD_DISABLE_NUMBA=1``) nothing selects those loops.
Imported on first use, not with convgrad: importing it and loading the loops from Numba's
disk cache costs 0.5 s.  Compiling them (every module's: about 120 s) is a builder
process's work, once per install (:mod:`.jit_build`): a process that finds them unbuilt
starts it and runs without them.  :func:`warm_up`, called
where a network is built (each layer names the kernel modules it calls; an optimiser),
does it on a background thread: a ResNet-18's first training step took 0.92 s with the
loading in it, 0.42 s without (torch: 0.29 s).  The thread is not a daemon: a script that
ends first waits for it (Numba writes its cache then).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import numpy as np

from .parallel import run_chunks

__all__ = ["PARALLEL_MIN_SIZE", "after_fork_in_child", "compile_here", "compiled", "enabled",
           "enabled_by_environment", "exercise", "exercises_of", "loader", "lock", "loops_built",
           "numba", "parallel_launched", "ready", "requested", "run_rows", "serves",
           "set_build_rule",
           "set_threads", "still_loading", "thread_safe", "wait_for_loops", "wait_for_warm_up",
           "warm_up"]

_numba = None  # the numba module once imported, False when it is not installed
_layer: list = []  # the threading layer Numba chose, once known
#: held while anything is compiled or loaded: a caller waits for the warm-up's loading
lock = threading.RLock()
_loaders: list[Callable[[], object]] = []
_exercises: list[Callable[[], object]] = []
_requested: list[str] = []  # the modules whose exercises :func:`warm_up` runs, in order
_exercised: list[Callable[[], object]] = []  # the exercises run (or running)
_loaded: list = []  # [True] once the warm-up ran every loader
_worker: list[threading.Thread] = []  # the warm-up's thread, once started
_finished: list[Callable[[], object]] = []  # the exercises run to their end
_failed: list = []  # [True] once a loader or an exercise raised on the thread
_serving = threading.Lock()  # guards the six lists above
_waits: list = []  # [True]: no kernel is passed over while its loops load (reproducible)
_forked_off: list = []  # [True] in a forked child where Numba's OpenMP threads were started
_usable: list = []  # [bool] once decided: the loops' machine code may run in this process
_deciding = threading.Lock()  # guards _usable
_build_rule: list = []  # [(decide, note_requests)]: set_build_rule's


def numba():
    """The numba module, or None when it is not installed."""
    global _numba
    if _numba is None:
        try:
            import numba as module
        except ImportError:
            _numba = False
        else:
            _numba = module
    return _numba or None


def enabled_by_environment() -> bool:
    """Numba is installed, not disabled by ``CONVGRAD_DISABLE_NUMBA``, and not off in a
    forked child (:func:`after_fork_in_child`)."""
    return (not _forked_off and os.environ.get("CONVGRAD_DISABLE_NUMBA", "") in ("", "0")
            and numba() is not None)


def enabled() -> bool:
    """The loops run in this process: :func:`enabled_by_environment`, and their machine
    code is built (:func:`.jit_build.loops_usable`: while a builder process compiles
    them, this one runs without them, until :func:`loops_built`)."""
    if not enabled_by_environment():
        return False
    if not _usable:
        with _deciding:
            if not _usable:
                _usable.append(_build_rule[0][0](numba()) if _build_rule else True)
    return _usable[0]


def set_build_rule(decide: Callable[[object], bool],
                   note_requests: Callable[[tuple[str, ...]], None]) -> None:
    """How this process learns whether the loops are built (:mod:`.jit_build` sets it when
    it is imported, with :mod:`convgrad.ops`): ``decide(numba)``, asked once, and
    ``note_requests(kernels)``, told each new request while the answer is no."""
    _build_rule[:] = [(decide, note_requests)]


def loops_built() -> None:
    """The builder has built what this process asked for (:mod:`.jit_build`): this process
    runs the loops from now on,
    the requested modules' loaded on the warm-up thread.  Each kernel decides at its call,
    so an operation's backward may run the loops where its forward did not, as under a
    ``prefer`` that ends between them."""
    with _deciding:
        _usable[:] = [True]
    warm_up()


def compile_here() -> None:
    """From now on this process runs the loops, compiling any not in Numba's cache (the
    builder; :func:`.jit_build.ensure_built`)."""
    with _deciding:
        _usable[:] = [True]


#: Elements from which a kernel's ``prange`` loop runs on every thread (the pool's
#: threshold, :data:`.reduction.PARALLEL_MIN_SIZE`, pays for handing tasks over): waking
#: OpenMP's team costs ~10 us, an element ~1 ns; group norm's (8, 64, 16, 16) forward took
#: 141 us on one thread, 86 on two
PARALLEL_MIN_SIZE = 1 << 15


def set_threads(n: int) -> None:
    """Numba's parallel loops launched from this thread run on ``n`` threads (at most
    the ``NUMBA_NUM_THREADS`` it started)."""
    module = numba()
    module.set_num_threads(max(1, min(n, module.config.NUMBA_NUM_THREADS)))


def loader(load: Callable[[], object]) -> Callable[[], object]:
    """Register ``load`` (a module's function returning its compiled loops) with
    :func:`warm_up`, and return it wrapped in :data:`lock`."""
    def locked():
        if _forked_off:
            return None
        with lock:
            return load()
    _loaders.append(locked)
    locked.__doc__ = load.__doc__
    return locked


def compiled(compile: Callable[[object], object]) -> Callable[[], object]:
    """A module's loader (registered with :func:`warm_up`, as :func:`loader`): the
    result of ``compile(numba)``, made on first use and kept, or None without Numba."""
    made: list = []

    def load():
        if not made:
            if not enabled():
                return None
            made.append(compile(numba()))
        return made[0]

    load.__doc__ = compile.__doc__
    return loader(load)


def exercise(run: Callable[[], object] | None = None, *, kernel: str | None = None
             ) -> Callable:
    """Register ``run`` with :func:`warm_up`, after the loaders: it calls a module's loops
    on tiny arrays, the argument types of real calls (Numba loads each signature's
    machine code on its first call, 10-50 ms apiece).  ``kernel``: the name a layer asks
    for, ``module.part`` for one part of a module's loops (``update.adam``: an optimiser
    loads its own rule's loops, not every rule's); by default the module's short name.
    A request for a module runs all its exercises.  Used bare (``@exercise``) or with
    ``kernel`` (``@exercise(kernel=...)``)."""
    if run is None:
        return lambda r: exercise(r, kernel=kernel)
    run.kernel = kernel or run.__module__.rsplit(".", 1)[-1]
    _exercises.append(run)
    return run


def run_rows(kernel: Callable[..., object], in_prange: bool, args: tuple, rows: int,
             threads: int) -> None:
    """``kernel(*args, r0, r1)`` over rows ``[0, rows)`` on ``threads`` threads: one call
    on Numba's own threads where the loop is a ``prange`` (``in_prange``: its threading
    layer is thread-safe, :func:`thread_safe`), else contiguous ranges over the pool."""
    if in_prange:
        set_threads(threads)
        kernel(*args, 0, rows)
        return
    cuts = [rows * i // threads for i in range(threads + 1)]
    run_chunks([lambda a=a, b=b: kernel(*args, a, b) or 0
                for a, b in zip(cuts, cuts[1:]) if b > a])


def warm_up(*kernels: str) -> None:
    """Import Numba and, on a background thread, load every registered module's loops
    (:func:`loader`) and run the exercises (:func:`exercise`) of the kernel modules
    ``kernels`` (short names, as ``"eltwise"``), each once (nothing without Numba).
    Layers ask for the modules they call as they are built; a module no one asked for
    loads its signatures on its first call instead.  Measured on N1's in-process first
    two steps (ms, 3-6 runs): with every module's exercises in the background 166-231 and
    54-108, with its layers' modules only 102-138 and 50-66 (the thread's loading slows
    the convolutions on the other core 2-3x).  After a failure (a loop that does not
    compile) the thread is not started again: each kernel's own call meets it."""
    with _serving:
        new = [name for name in kernels if name not in _requested]
        _requested.extend(new)
        if _failed:
            return
    with lock:  # a network built while the thread loads waits here, not in its first step
        if not enabled():
            if new and _build_rule and enabled_by_environment():  # a builder may be at work
                _build_rule[0][1](requested())
            return
    with _serving:
        if _worker:
            return  # the thread serves the new requests before it ends
        worker = threading.Thread(target=_serve, name="convgrad-warm-up")
        _worker.append(worker)
    worker.start()


def wait_for_warm_up(timeout: float) -> None:
    """Wait (at most ``timeout`` seconds) for :func:`warm_up`'s thread to finish, unless
    called from it."""
    with _serving:
        t = _worker[0] if _worker else None
    if t is not None and t is not threading.current_thread() and t.ident is not None:
        t.join(timeout)


def parallel_launched() -> bool:
    """Numba's parallel loops have started its threading layer in this process."""
    if not _numba:
        return False
    try:
        _numba.threading_layer()
    except ValueError:  # not started
        return False
    return True


def after_fork_in_child() -> None:
    """In a forked child (see :mod:`.fork`): a new :data:`lock`; where Numba's threading
    layer is OpenMP and was started, Numba's loops are off (GNU OpenMP cannot start threads
    in a forked child, and Numba ends such a child rather than hang): every loader returns
    None and :func:`enabled` False, so the NumPy and oneDNN kernels run."""
    global lock, _serving, _deciding
    lock, _serving, _deciding = threading.RLock(), threading.Lock(), threading.Lock()
    _worker.clear()  # the parent's thread is not in the child
    if parallel_launched() and _numba.threading_layer() == "omp":
        _forked_off.append(True)


def _serve() -> None:
    """The warm-up thread: the loaders once, then the requested modules' exercises not
    yet run, in the order asked, until none is left (a thread not a daemon: the
    interpreter never exits inside it; Numba writes its cache as it compiles)."""
    try:
        if not _loaded:
            for load in _loaders:
                load()
            _loaded.append(True)
        while True:
            with _serving:
                run = _next()
                if run is None:
                    _worker.clear()  # under the lock: a later request starts a new thread
                    return
                _exercised.append(run)
            run()
            with _serving:
                _finished.append(run)
    except Exception:  # the caller's own call raises it again, where it is made
        with _serving:
            _failed.append(True)
            _worker.clear()


def _next() -> Callable[[], object] | None:
    """The next exercise to run: the first not yet run of a requested kernel (a module,
    or one part of it)."""
    for name in _requested:
        for run in _exercises:
            if run not in _exercised and serves(run, name):
                return run
    return None


def serves(run: Callable[[], object], name: str) -> bool:
    """Exercise ``run`` is one a request for kernel ``name`` runs (a module: all its
    parts; ``module.part``: that part)."""
    return name in (run.kernel, run.kernel.split(".")[0])


def still_loading(kernel: str) -> bool:
    """The warm-up thread has yet to load ``kernel``'s loops (a module or ``module.part``,
    requested, its exercises not all run) and is still at work: a kernel with another
    algorithm runs that one meanwhile, rather than wait (its first call would wait for
    the thread's current load, then load its own signature: N1's first Winograd forward
    waited 45-55 ms so).  Always False under :func:`wait_for_loops` (reproducible runs)."""
    with _serving:
        if _waits or not _worker or _failed:
            return False
        return any(serves(run, kernel) and run not in _finished
                   and any(serves(run, name) for name in _requested) for run in _exercises)


def ready(kernel: str) -> bool:
    """Whether ``kernel``'s loops (a module or ``module.part``, as :func:`exercise` names
    them) run without waiting: the first call asks :func:`warm_up` for them, and until
    its thread has loaded them (:func:`still_loading`) the caller runs another algorithm
    rather than a first training step waiting for their machine code."""
    if kernel not in _requested:
        warm_up(kernel)
    return not still_loading(kernel)


def wait_for_loops(on: bool) -> None:
    """On: every kernel waits for its loops rather than run another algorithm while the
    warm-up loads them (:func:`still_loading`), so that a run's results do not depend on
    the thread's timing (``use_deterministic_algorithms(True)``)."""
    _waits[:] = [True] if on else []


def requested() -> tuple[str, ...]:
    """The kernels layers and optimisers have asked :func:`warm_up` for, in order."""
    with _serving:
        return tuple(_requested)


def exercises_of(kernels: tuple[str, ...]) -> set[str]:
    """The kernel names of the registered exercises a request for ``kernels`` runs."""
    return {run.kernel for run in _exercises if any(serves(run, k) for k in kernels)}


def thread_safe() -> bool:
    """Numba's parallel loops may be launched from several threads at once: its threading
    layer is OpenMP or TBB, not its own work queue (which aborts the process then).  The
    layer is chosen on the first parallel launch, which this makes (0.6 s, once)."""
    with lock:
        return _thread_safe()


def _thread_safe() -> bool:
    if not _layer:
        module = numba()

        @module.njit(parallel=True, cache=True)
        def probe(n):
            out = np.zeros(n)
            for i in module.prange(n):
                out[i] = i
            return out

        probe(2)
        _layer.append(module.threading_layer())
    return _layer[0] in ("omp", "tbb")
