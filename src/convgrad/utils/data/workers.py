"""Worker processes for ``DataLoader(num_workers=k)``, as torch runs them.

Each worker is a process (forked on Linux, so the dataset is inherited, not pickled)
with its own queue of tasks and its own queue of results.  The loader hands batch ``i``
to worker ``i % k`` and reads the results back in the same rotation, so batches arrive
in the sampler's order; it keeps ``prefetch_factor`` batches per worker in flight.  A
worker seeds the library-wide generator and Python's ``random`` with ``base_seed +
worker_id`` (``base_seed`` drawn once per epoch from the loader's generator), sets
:func:`get_worker_info`, then calls ``worker_init_fn(worker_id)``.  For an
``IterableDataset`` each worker iterates its own copy (split the stream with
:func:`get_worker_info`, as with torch) and batches are read round-robin.

Processes, not threads: the work of a typical dataset (decoding images with Pillow,
augmenting with NumPy) holds the GIL for much of its time, which threads would share.
Large arrays of a result travel through shared memory (:mod:`.transport`), the rest
through the result queue.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import random
import traceback
from dataclasses import dataclass
from typing import Any

from ... import random as _random
from .transport import SharedDir

__all__ = ["WorkerInfo", "WorkerPool", "get_worker_info"]

_POLL_S = 1.0  # how often a waiting loader checks that its workers are alive


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo`` inside a DataLoader worker; None in the main process."""
    return _info


class _Failure:
    """An exception raised in a worker, carried to the loader with its traceback."""

    def __init__(self, worker_id: int, exc: BaseException) -> None:
        self.text = f"in DataLoader worker {worker_id}:\n{traceback.format_exc()}"
        try:
            import pickle

            pickle.dumps(exc)
            self.exc: BaseException | None = exc
        except Exception:  # noqa: BLE001 (an unpicklable exception: its text only)
            self.exc = None

    def reraise(self) -> None:
        if self.exc is not None:
            raise self.exc from RuntimeError(self.text)
        raise RuntimeError(self.text)


class _End:
    """An IterableDataset worker's stream is exhausted."""


def _loop(worker_id: int, num_workers: int, seed: int, dataset: Any, fetch: Any,
          init_fn: Any, tasks: Any, results: Any, shared: SharedDir) -> None:
    global _info
    _random.manual_seed(seed % 2**63)
    random.seed(seed)
    _info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as e:  # noqa: BLE001 (reported to the loader)
        results.put(_Failure(worker_id, e))
        return
    stream = None
    while True:
        task = tasks.get()
        if task is None:
            return
        try:
            if task == "next":  # IterableDataset: the next batch of this worker's stream
                if stream is None:
                    stream = fetch(dataset)
                try:
                    results.put(shared.pack(worker_id, next(stream)))
                except StopIteration:
                    results.put(_End())
            else:
                results.put(shared.pack(worker_id, fetch(dataset, task)))
        except Exception as e:  # noqa: BLE001 (reported to the loader)
            results.put(_Failure(worker_id, e))


class WorkerPool:
    """``num_workers`` worker processes; ``run`` yields the results of the tasks in order."""

    def __init__(self, num_workers: int, dataset: Any, fetch: Any, init_fn: Any,
                 base_seed: int, context: Any = None) -> None:
        ctx = context if context is not None else mp.get_context(
            "fork" if "fork" in mp.get_all_start_methods() else None)
        if isinstance(ctx, str):
            ctx = mp.get_context(ctx)
        self.tasks = [ctx.Queue() for _ in range(num_workers)]
        self.results = [ctx.Queue() for _ in range(num_workers)]
        self.shared = SharedDir()
        self.procs = [ctx.Process(target=_loop, args=(i, num_workers, base_seed + i, dataset,
                                                      fetch, init_fn, self.tasks[i],
                                                      self.results[i], self.shared),
                                  daemon=True)
                      for i in range(num_workers)]
        for p in self.procs:
            p.start()

    def _get(self, w: int) -> Any:
        while True:
            try:
                out = self.results[w].get(timeout=_POLL_S)
            except queue.Empty:
                if not self.procs[w].is_alive():
                    self.close()
                    raise RuntimeError(f"DataLoader worker {w} (pid {self.procs[w].pid}) "
                                       f"exited unexpectedly with code "
                                       f"{self.procs[w].exitcode}") from None
                continue
            if isinstance(out, _Failure):
                self.close()
                out.reraise()
            return SharedDir.unpack(out)

    def run(self, tasks: Any, prefetch: int) -> Any:
        """The results of ``tasks`` (an iterable), in order, ``prefetch`` per worker ahead."""
        k = len(self.procs)
        it, sent, received = iter(tasks), 0, 0
        for task in it:
            self.tasks[sent % k].put(task)
            sent += 1
            if sent >= prefetch * k:
                break
        try:
            while received < sent:
                out = self._get(received % k)
                received += 1
                task = next(it, None)
                if task is not None:
                    self.tasks[sent % k].put(task)
                    sent += 1
                yield out
        finally:  # left early (a break): collect what is in flight, so a kept pool is clean
            while self.procs and received < sent:
                self._get(received % k)
                received += 1

    def stream(self, prefetch: int) -> Any:
        """IterableDataset batches from the workers round-robin until every one ends."""
        live = list(range(len(self.procs)))
        for w in live:
            for _ in range(prefetch):
                self.tasks[w].put("next")
        while live:
            for w in list(live):
                out = self._get(w)
                if isinstance(out, _End):
                    live.remove(w)
                    continue
                self.tasks[w].put("next")
                yield out

    def close(self) -> None:
        for q, p in zip(self.tasks, self.procs):
            if p.is_alive():
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
        for q in self.tasks + self.results:
            q.cancel_join_thread()
            q.close()
        self.procs = []
        self.shared.remove()
