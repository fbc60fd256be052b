"""Datasets: the map-style base class, one over arrays (``TensorDataset``), subsets,
concatenation, and ``random_split``."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from ...random import generator as _generator
from ...tensor import Tensor

__all__ = ["ConcatDataset", "Dataset", "IterableDataset", "Subset", "TensorDataset",
           "random_split"]


class Dataset:
    """A map-style dataset: ``dataset[i]`` is sample ``i`` and ``len(dataset)`` the count.

    Subclass it and define ``__getitem__`` and ``__len__``; ``a + b`` concatenates.
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset:
    """A dataset read as a stream: define ``__iter__`` (and ``__len__`` if known)."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


def _index(fn: str, index: Any, n: int) -> int:
    if isinstance(index, bool) or not isinstance(index, Integral):
        raise TypeError(f"{fn}: index {index!r} must be an int")
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"{fn}: index {i} is out of range for {n} samples")
    return i % n


class TensorDataset(Dataset):
    """Sample ``i`` is ``(t[i] for t in tensors)``: Tensors or ndarrays sharing dim 0.

    A float Tensor or array gives Tensor rows; an integer array (class labels) gives
    integer rows, as NumPy values.
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset: needs at least one Tensor or array")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor | np.ndarray):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}; expected "
                                "a Tensor or an ndarray")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: argument {i} is 0-d; expected a leading "
                                 "sample dimension")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) != 1:
            raise ValueError(f"TensorDataset: the tensors hold {sizes} samples along dim 0; "
                             "expected the same number")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        i = _index("TensorDataset", index, len(self))
        return tuple(_row(t, i) for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


def _row(t: Any, i: int) -> Any:
    if isinstance(t, Tensor):
        return t[i] if t.requires_grad else Tensor._wrap(t.data[i])
    return t[i]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[_index("Subset", index, len(self))]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Datasets one after another."""

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets is empty")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset: datasets[{i}] is an IterableDataset; expected "
                                "map-style datasets")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        i = _index("ConcatDataset", index, len(self))
        k = bisect.bisect_right(self.cumulative_sizes, i)
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][i - start]


def random_split(dataset: Any, lengths: Sequence[int | float], generator: Any = None
                 ) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to 1 (the
    remainder of the rounding goes one by one to the first subsets, as torch does).
    ``generator`` is a numpy Generator or an int seed (default: the library-wide one).
    """
    fn = "random_split"
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(x, Real) and not isinstance(x, Integral) for x in lengths) \
            and math.isclose(sum(lengths), 1.0):
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if not all(isinstance(x, Integral) and not isinstance(x, bool) and x >= 0 for x in lengths):
        raise TypeError(f"{fn}: lengths={lengths!r} must be non-negative ints (or fractions "
                        "summing to 1)")
    if sum(lengths) != n:
        raise ValueError(f"{fn}: lengths={lengths!r} sum to {sum(lengths)}, but the dataset has "
                         f"{n} samples")
    order = _generator(generator, fn).permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out
