"""Samplers: the order in which a loader reads a map-style dataset, and batches of it.

A random sampler draws a fresh order each time it is iterated (each epoch) from its
generator: the one it was given (a numpy Generator, or an int seed that makes one),
else the library-wide generator that ``cg.manual_seed`` seeds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from numbers import Integral
from typing import Any

import numpy as np

from ...random import default_generator
from ...random import generator as _generator

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler"]


def _own_generator(fn: str, generator: Any) -> np.random.Generator | None:
    """``None`` (draw from the library-wide generator at each epoch) or a Generator."""
    return None if generator is None else _generator(generator, fn)


def _positive(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value <= 0:
        raise ValueError(f"{fn}: {name}={value!r} must be a positive int")
    return int(value)


class Sampler:
    """Base class: iterate to get dataset indices (or batches of them)."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices, new at each iteration.

    Without ``replacement`` each epoch is a permutation (``num_samples`` larger than the
    dataset chains several); with it, ``num_samples`` independent uniform draws.
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        fn = "RandomSampler"
        if not isinstance(replacement, bool):
            raise TypeError(f"{fn}: replacement={replacement!r} must be a bool")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = None if num_samples is None else _positive(fn, "num_samples",
                                                                        num_samples)
        self.generator = _own_generator(fn, generator)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        rng = self.generator if self.generator is not None else default_generator()
        if n == 0:
            return iter(())
        if self.replacement:
            return iter(rng.integers(0, n, size=self.num_samples).tolist())
        full, rest = divmod(self.num_samples, n)
        order = [rng.permutation(n) for _ in range(full)]
        if rest:
            order.append(rng.permutation(n)[:rest])
        return iter(np.concatenate(order).tolist() if order else [])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order, new at each iteration."""

    def __init__(self, indices: Iterable[int], generator: Any = None) -> None:
        self.indices = [int(i) for i in indices]
        self.generator = _own_generator("SubsetRandomSampler", generator)

    def __iter__(self) -> Iterator[int]:
        rng = self.generator if self.generator is not None else default_generator()
        return iter([self.indices[i] for i in rng.permutation(len(self.indices)).tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last may be short unless
    ``drop_last``."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        fn = "BatchSampler"
        if not isinstance(sampler, Iterable):
            raise TypeError(f"{fn}: sampler must be iterable, got {type(sampler).__name__}")
        self.sampler = sampler
        self.batch_size = _positive(fn, "batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise TypeError(f"{fn}: drop_last={drop_last!r} must be a bool")
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
