"""Where the compiled loops' machine code comes from: Numba's disk cache, filled once per
install by a builder process of its own, never by a user's training step.

Numba compiles a loop on its first call and keeps the machine code in its disk cache
(``__pycache__`` beside the sources, or ``NUMBA_CACHE_DIR``); loading it from there takes
10-50 ms a loop, compiling it 0.3-30 s (every module's loops: about 120 s of one core of
an AMD EPYC).  Compiled in the process that needs them, a small classifier's first
training step waited 41 s for its own loops after an install, against torch's 0.1 s.

So a process decides once, when it first asks for the loops (:func:`loops_usable`):

* a *stamp* for this build (the loop modules' files as Numba keys its cache: name, size
  and modification time; the Numba and Python versions; the CPU) is in the cache
  directory: the loops are built, the process loads them;
* no stamp: the process starts a builder process (:func:`start_builder`: one at a
  time, under a file lock; at the lowest priority; in a process group of its own, so it
  finishes after a short script) and, until it ends, runs as with
  ``CONVGRAD_DISABLE_NUMBA=1`` (the NumPy and oneDNN kernels) on one core fewer, which
  the builder takes; when it has written the stamp, the process loads the loops and runs
  them on every core (:func:`.jit.loops_built`).  Later processes find the stamp.  A
  build that failed leaves its traceback beside the stamp and is not started again for
  this build (a warning names the file);
* ``CONVGRAD_JIT_BUILD=inline``, or ``use_deterministic_algorithms(True)`` (the switch
  above makes a process's results depend on when the build ends): the process compiles
  what it calls itself, as Numba would (the builder, the test suite and ``convgrad
  bench`` run so; so does a process whose cache directory it cannot write, or without
  ``fcntl``'s locks).

:func:`build` is the builder's work (also called in the process by :func:`ensure_built`,
which ``convgrad bench`` runs first): load every module's loops and run every registered
exercise (:func:`.jit.exercise`), then write the stamp.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import pkgutil
import platform
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path

from . import jit, parallel

__all__ = ["MODE_ENV", "MODES", "build", "builder", "compile_on_this_thread", "ensure_built",
           "loops_usable", "main", "note_requests", "paths", "require_reproducible",
           "start_builder", "wait_for_builder"]

#: the environment variable choosing how a process without built loops gets them
MODE_ENV = "CONVGRAD_JIT_BUILD"
#: its values: ``background`` (the default) or ``inline``
MODES = ("background", "inline")
#: the builder's priority (``nice``): the lowest, beside the training that started it (the
#: core that process leaves it is idle; at 0 it switched N1 to the loops no sooner, ~45 s)
BUILDER_NICE = 19
#: the builder's program (argv: the stamp, then the kernels to build first)
BUILDER = "import sys; from convgrad.ops.jit_build import main; sys.exit(main(sys.argv[1:]))"
#: seconds between a waiting process's looks at the builder's files
POLL_S = 0.5

_builder: list = []  # the builder process this process started (subprocess.Popen)
_warned: list = []  # [True] once a failed build was warned about
_watchers: list = []  # the thread waiting for the builder to end (_watch)
_wanted: list = []  # the file telling the builder which kernels this process waits for
_reproducible: list = []  # [True] under use_deterministic_algorithms(True)


def mode() -> str:
    """``CONVGRAD_JIT_BUILD``, checked (unset or empty: ``background``)."""
    value = os.environ.get(MODE_ENV, "") or "background"
    if value not in MODES:
        raise ValueError(f"{MODE_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def _cache_dir(numba) -> Path:
    """The directory Numba caches this package's loops in (all of them live in ``ops``)."""
    def anchor(x):
        return x

    return Path(numba.njit(cache=True)(anchor)._cache._cache_path)


def _key(numba) -> str:
    """What a build's machine code depends on, hashed: the ``ops`` modules' files as Numba
    stamps its cache (name, size, modification time), Numba's and Python's versions and
    the CPU Numba compiles for."""
    import llvmlite.binding as llvm

    h = hashlib.sha256()
    for part in (numba.__version__, sys.version, platform.machine(),
                 llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()):
        h.update(part.encode() + b"\0")
    here = Path(__file__).resolve().parent
    for f in sorted(here.glob("*.py")):
        st = f.stat()
        h.update(f"{f.name} {st.st_size} {st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:20]


def paths(numba) -> dict[str, Path]:
    """``{"dir", "stamp", "failed", "progress", "lock", "log"}``: the build's files in
    Numba's cache directory."""
    d = _cache_dir(numba)
    name = f"convgrad-loops-{_key(numba)}"
    return {"dir": d, "stamp": d / f"{name}.built", "failed": d / f"{name}.failed",
            "progress": d / f"{name}.progress", "lock": d / "convgrad-loops.lock",
            "log": d / f"{name}.log"}


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(d, os.W_OK)


def loops_usable(numba) -> bool:
    """Whether this process may run the compiled loops (decided once, by :mod:`.jit`):
    inline mode, or a stamp for this build; else a builder is started (unless one runs
    or this build failed) and the answer is False."""
    if mode() == "inline" or _reproducible:
        return True
    try:
        import fcntl  # noqa: F401 (the builders' lock)
    except ImportError:
        return True
    p = paths(numba)
    if p["stamp"].exists():
        return True
    if not _writable(p["dir"]):
        return True  # no stamp can be written: compiled here, as Numba would
    if p["failed"].exists():
        if not _warned:
            _warned.append(True)
            warnings.warn(f"convgrad: building the compiled loops failed (see {p['failed']});"
                          " running the NumPy and oneDNN kernels instead", RuntimeWarning,
                          stacklevel=3)
        return False
    proc = start_builder(p, jit.requested())
    if proc is not None:
        logging.getLogger("convgrad").info(
            "convgrad: compiling the Numba loops in a background process (once per install; "
            "log: %s); until it ends this process runs the NumPy and oneDNN kernels", p["log"])
    _watch(p, proc)
    return False


def _watch(p: dict[str, Path], proc: subprocess.Popen | None) -> None:
    """While the builder works (``proc``, or whichever process holds the builders' lock),
    leave it a core; as soon as it has built the kernels this process asked for (its
    progress file) or all of them (the stamp), switch this process to the loops."""
    def wait() -> None:
        try:
            while True:
                if p["stamp"].exists() or _covers(p["progress"]):
                    jit.loops_built()
                    return
                if not _running(proc, p["lock"]):
                    if p["stamp"].exists():
                        jit.loops_built()
                    return
                time.sleep(POLL_S)
        finally:
            parallel.reserve_cores(0)

    _wanted[:] = [p["progress"].with_suffix(".wanted")]
    parallel.reserve_cores(1)
    _watchers[:] = [threading.Thread(target=wait, name="convgrad-jit-watch", daemon=True)]
    _watchers[0].start()
    note_requests(jit.requested())


def _running(proc: subprocess.Popen | None, lock: Path) -> bool:
    if proc is not None:
        return proc.poll() is None
    held = _locked(lock)
    if held is None:
        return True
    held.close()
    return False


def _covers(progress: Path) -> bool:
    """The builder's progress file lists every exercise of the kernels this process asked
    for (at least one)."""
    done = set(_read(progress))
    needed = jit.exercises_of(jit.requested())
    return bool(needed) and needed <= done


def require_reproducible(on: bool) -> None:
    """``on``: this process's kernels from now on give the bits of a process started after
    the build (``use_deterministic_algorithms``): a process yet to decide compiles what it
    calls itself, as inline; one running without the loops waits until it runs them; a
    kernel whose loops the warm-up is loading waits for them (:func:`.jit.still_loading`)."""
    _reproducible[:] = [True] if on else []
    jit.wait_for_loops(on)  # and no kernel passed over while the warm-up loads its loops
    if on:
        wait_for_builder()


def wait_for_builder(timeout: float | None = None) -> None:
    """Wait (at most ``timeout`` seconds) until this process's watch of the builder ends:
    switched to the loops, or the builder gone without building them."""
    if _watchers:
        _watchers[0].join(timeout)


def _locked(lock_path: Path):
    """The lock file, open and locked (exclusive), or None when another process holds it."""
    import fcntl

    f = open(lock_path, "a")  # noqa: SIM115 (held until released by the caller)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    return f


def start_builder(p: dict[str, Path], first: tuple = ()) -> subprocess.Popen | None:
    """Start a builder process (:data:`BUILDER`) for this build unless one holds the lock,
    the kernels ``first`` (:func:`.jit.warm_up`'s names) built first; its output goes to
    the build's log.  Returns the process (None if one ran)."""
    held = _locked(p["lock"])
    if held is None:
        return None
    held.close()  # released: the builder takes it (a second builder started meanwhile exits)
    env = dict(os.environ)
    env[MODE_ENV] = "inline"
    # one thread: the exercises' parallel loops would leave OpenMP threads spinning on the
    # cores the training runs on (the machine code does not depend on the count)
    env["NUMBA_NUM_THREADS"] = env["OMP_NUM_THREADS"] = "1"
    root = str(Path(__file__).resolve().parents[2])  # the directory holding convgrad
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    with open(p["log"], "w") as log:
        proc = subprocess.Popen([sys.executable, "-c", BUILDER, str(p["stamp"]), *first],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, close_fds=True)
    _builder[:] = [proc]
    return proc


def builder() -> subprocess.Popen | None:
    """The builder process this process started, if any."""
    return _builder[0] if _builder else None


def _import_all() -> None:
    """Import every module of this package's own directory (each registers its loops and
    exercises there; the subpackages, ``onednn`` and ``dask``, have none, and ``dask``'s
    library is optional)."""
    here = Path(__file__).resolve().parent
    for info in pkgutil.iter_modules([str(here)], __package__ + "."):
        if not info.ispkg:
            importlib.import_module(info.name)


def _load_all() -> None:
    """From now on this process runs the loops (:func:`.jit.compile_here`); every module
    imported and its loops compiled or loaded."""
    jit.compile_here()
    _import_all()
    for load in list(jit._loaders):
        load()


def compile_on_this_thread() -> None:
    """Compile (or load) every module's loops and run every exercise now, on the calling
    thread, without a stamp; the warm-up thread then has nothing left to compile.  Numba's
    compiler swaps the process's warning filters while it types a loop (Python's
    ``warnings.catch_warnings`` is process-wide, not per thread): compiling on the warm-up
    thread made a ``catch_warnings`` block on another thread miss its warning (194 of
    32,633 blocks).  The test suite calls this before its first test.  Nothing without
    Numba or with it disabled."""
    if not jit.enabled_by_environment():
        return
    _load_all()
    with jit._serving:
        todo = [run for run in jit._exercises if run not in jit._exercised]
        jit._exercised.extend(todo)
    for run in todo:
        run()
        with jit._serving:
            jit._finished.append(run)


def build(stamp: Path | str, first: tuple = ()) -> bool:
    """Compile (or load) every registered module's loops and run every exercise in this
    process, those of the kernels ``first`` first, listing each one done in the progress
    file beside ``stamp``; then write ``stamp``.  A failure writes its traceback beside it
    and raises.  Returns False without building when another process holds the builders'
    lock."""
    stamp = Path(stamp)
    name = stamp.name[:-len(".built")] if stamp.name.endswith(".built") else stamp.name
    held = _locked(stamp.parent / "convgrad-loops.lock")
    if held is None:
        return False
    try:
        if stamp.exists():
            return True
        t0 = time.perf_counter()
        try:
            _load_all()
            pending = dict.fromkeys(jit._exercises)  # in registration order, each once
            done: list[str] = []
            while pending:
                # the kernels the waiting process has asked for by now, first
                wanted = first + _read(stamp.parent / f"{name}.wanted")
                run = next((r for k in wanted for r in pending if jit.serves(r, k)),
                           next(iter(pending)))
                del pending[run]
                run()
                done.append(run.kernel)
                _write(stamp.parent / f"{name}.progress", json.dumps(done))
        except Exception:
            (stamp.parent / f"{name}.failed").write_text(traceback.format_exc())
            raise
        _write(stamp, json.dumps({"seconds": round(time.perf_counter() - t0, 1),
                                  "exercises": len(jit._exercises)}))
        return True
    finally:
        held.close()


def _read(path: Path) -> tuple:
    """A JSON list file's items (none when it is missing or being replaced)."""
    try:
        return tuple(json.loads(path.read_text()))
    except (OSError, ValueError):
        return ()


def note_requests(kernels: tuple[str, ...]) -> None:
    """Tell the builder this process waits for (if it waits) which kernels it has asked
    for, so that it builds them next."""
    if _watchers and _watchers[0].is_alive() and _wanted:
        try:
            _write(_wanted[0], json.dumps(list(kernels)))
        except OSError:
            pass  # only an order


def _nice(n: int) -> None:
    try:
        os.nice(n)
    except (AttributeError, OSError):
        pass  # not on this platform


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` at once (a reader sees the old file or the new one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def ensure_built() -> float:
    """Build the loops in this process unless they are built (waiting for a running
    builder); from then on this process runs them.  Returns the seconds it took.  Nothing
    in inline mode (the process compiles what it calls)."""
    t0 = time.perf_counter()
    numba = jit.numba()
    if numba is None or not jit.enabled_by_environment() or mode() == "inline":
        return 0.0
    p = paths(numba)
    if not _writable(p["dir"]):
        jit.compile_here()
        return 0.0
    while not p["stamp"].exists():
        if build(p["stamp"]):
            break
        time.sleep(0.2)  # another process builds: wait for it
    jit.compile_here()
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    """The builder process (:data:`BUILDER`): ``argv`` is the stamp to write, then the
    kernels to build first."""
    os.environ[MODE_ENV] = "inline"
    if not argv:
        print("usage: jit_build.main([STAMP, KERNEL, ...])", file=sys.stderr)
        return 2
    # a process group of its own in the same session: the script's Ctrl-C and hang-up
    # do not reach it, and its nice value counts against the training's (a new session
    # would be a new scheduler autogroup, which shares the CPU with the training equally:
    # N1's step took 344 ms beside it against 80 at nice 19 in the same session)
    _nice(BUILDER_NICE)
    for call in (lambda: os.setpgid(0, 0),
                 lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
                 lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)):
        try:
            call()
        except (AttributeError, OSError, ValueError):
            pass  # not on this platform
    built = build(argv[0], tuple(argv[1:]))
    print("built" if built else "another process builds", flush=True)
    return 0


jit.set_build_rule(loops_usable, note_requests)
