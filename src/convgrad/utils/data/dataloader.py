"""``DataLoader``: batches of a dataset, in order or shuffled, joined by ``collate_fn``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from numbers import Integral
from typing import Any

from ... import random as _random
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .workers import WorkerPool

__all__ = ["DataLoader"]


class DataLoader:
    """Iterate over ``dataset`` in batches (torch's arguments and their meaning).

    - ``batch_size`` samples per batch (``None``: samples one by one, unbatched), the
      last batch short unless ``drop_last``;
    - ``shuffle=True``: a new random order each epoch, drawn from ``generator`` (a numpy
      Generator or an int seed) or else from the library-wide generator, so the order
      repeats under ``cg.manual_seed``;
    - ``sampler`` (an iterable of indices) or ``batch_sampler`` (of index lists) replace
      the built-in order;
    - ``collate_fn`` joins a list of samples (default :func:`default_collate`: Tensors or
      tuples/dicts of them).

    - ``num_workers=k > 0``: batches are loaded by ``k`` worker processes in parallel
      (``workers.py``), ``prefetch_factor`` (default 2) batches per worker ahead, each
      worker seeded with ``base_seed + worker_id`` and set up by ``worker_init_fn``;
      ``persistent_workers=True`` keeps them between epochs; ``multiprocessing_context``
      as torch (default ``fork`` where available).

    ``len(loader)`` is the number of batches, so a progress bar (``tqdm(loader)``) knows
    its length.  ``pin_memory`` is accepted for scripts written for torch and changes
    nothing (there is no device to copy to).
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool = False,
                 sampler: Iterable | None = None, batch_sampler: Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable | None = None, multiprocessing_context: Any = None,
                 generator: Any = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False) -> None:
        fn = "DataLoader"
        self.dataset = dataset
        iterable = isinstance(dataset, IterableDataset)
        if not iterable and not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
            raise TypeError(f"{fn}: dataset must define __getitem__ and __len__ (a Dataset) or "
                            f"__iter__ (an IterableDataset), got {type(dataset).__name__}")
        for name, flag in (("shuffle", shuffle), ("drop_last", drop_last),
                           ("pin_memory", pin_memory)):
            if not isinstance(flag, bool):
                raise TypeError(f"{fn}: {name}={flag!r} must be a bool")
        if isinstance(num_workers, bool) or not isinstance(num_workers, Integral) \
                or num_workers < 0:
            raise ValueError(f"{fn}: num_workers={num_workers!r} must be an int >= 0")
        if num_workers == 0 and (prefetch_factor is not None or persistent_workers):
            raise ValueError(f"{fn}: prefetch_factor and persistent_workers need "
                             f"num_workers > 0 (got num_workers={num_workers})")
        if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or not isinstance(
                prefetch_factor, Integral) or prefetch_factor < 1):
            raise ValueError(f"{fn}: prefetch_factor={prefetch_factor!r} must be an int >= 1")
        if not isinstance(persistent_workers, bool):
            raise TypeError(f"{fn}: persistent_workers={persistent_workers!r} must be a bool")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"{fn}: worker_init_fn={worker_init_fn!r} must be callable")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(
                batch_size, Integral) or batch_size <= 0):
            raise ValueError(f"{fn}: batch_size={batch_size!r} must be a positive int or None")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"{fn}: collate_fn={collate_fn!r} must be callable")
        if iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError(f"{fn}: an IterableDataset is read in its own order; shuffle, "
                             "sampler and batch_sampler do not apply")
        if sampler is not None and shuffle:
            raise ValueError(f"{fn}: sampler and shuffle=True are mutually exclusive (the "
                             "sampler decides the order)")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(f"{fn}: batch_sampler is mutually exclusive with "
                                 "batch_size, shuffle, sampler and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(f"{fn}: drop_last=True needs a batch_size (got batch_size=None)")
        for name, value in (("sampler", sampler), ("batch_sampler", batch_sampler)):
            if value is not None and not isinstance(value, Iterable):
                raise TypeError(f"{fn}: {name} must be an iterable of indices, got "
                                f"{type(value).__name__}")
        if not iterable and sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if not iterable and batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler: Sampler | Iterable | None = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = int(num_workers)
        self.pin_memory = pin_memory
        self.generator = generator
        self._auto_collation = batch_size is not None or batch_sampler is not None
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = (2 if num_workers else None) if prefetch_factor is None \
            else int(prefetch_factor)
        self.persistent_workers = persistent_workers
        self._pool: WorkerPool | None = None

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers > 0:
            return self._parallel()
        if isinstance(self.dataset, IterableDataset):
            return self._stream()
        if self.batch_sampler is not None:
            return (self.collate_fn([self.dataset[i] for i in indices])
                    for indices in self.batch_sampler)
        return (self.collate_fn(self.dataset[i]) for i in self.sampler)

    def _parallel(self) -> Iterator[Any]:
        """Batches from the worker processes, in the sampler's order."""
        iterable = isinstance(self.dataset, IterableDataset)
        pool = self._pool
        if pool is None or iterable:  # (an IterableDataset's workers restart their stream)
            base_seed = int(_random.generator(self.generator, "DataLoader").integers(2**62))
            fetch = _StreamFetch(self) if iterable else _MapFetch(self)
            pool = WorkerPool(self.num_workers, self.dataset, fetch, self.worker_init_fn,
                              base_seed, self.multiprocessing_context)
            if self.persistent_workers and not iterable:
                self._pool = pool
        try:
            if iterable:
                yield from pool.stream(self.prefetch_factor)
            else:
                tasks = (self.batch_sampler if self.batch_sampler is not None
                         else self.sampler)
                yield from pool.run(tasks, self.prefetch_factor)
        finally:
            if pool is not self._pool:
                pool.close()

    def __del__(self) -> None:
        if getattr(self, "_pool", None) is not None:
            self._pool.close()

    def _stream(self) -> Iterator[Any]:
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch: list[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # a TypeError when the stream has no length, as torch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)


class _MapFetch:
    """In a worker: one task (a list of indices, or one index) to one batch."""

    def __init__(self, loader: DataLoader) -> None:
        self.collate_fn, self.auto = loader.collate_fn, loader._auto_collation

    def __call__(self, dataset: Any, task: Any) -> Any:
        if self.auto:
            return self.collate_fn([dataset[i] for i in task])
        return self.collate_fn(dataset[task])


class _StreamFetch:
    """In a worker: an IterableDataset's copy as a stream of batches."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader

    def __call__(self, dataset: Any) -> Iterator[Any]:
        return self.loader._stream()
