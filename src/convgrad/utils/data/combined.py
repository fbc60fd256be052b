"""Datasets made of others, read side by side or one after another: ``StackDataset``
(sample ``i`` of each, as a tuple or a dict) and ``ChainDataset`` (iterable datasets in
turn), as torch's."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .dataset import Dataset, IterableDataset

__all__ = ["ChainDataset", "StackDataset"]


class StackDataset(Dataset):
    """``StackDataset(a, b)[i] == (a[i], b[i])``, ``StackDataset(x=a, y=b)[i] ==
    {"x": a[i], "y": b[i]}``: datasets of one length, given all by position or all by
    name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fn = "StackDataset"
        if args and kwargs:
            raise ValueError(f"{fn}: give the datasets all by position (tuple samples) or "
                             "all by name (dict samples), not both")
        if not args and not kwargs:
            raise ValueError(f"{fn}: needs at least one dataset")
        named = kwargs if kwargs else {i: d for i, d in enumerate(args)}
        lengths = {k: len(d) for k, d in named.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"{fn}: the datasets differ in length: {lengths}")
        self.datasets: tuple | dict = dict(kwargs) if kwargs else tuple(args)
        self._length = next(iter(lengths.values()))

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """The samples at ``indices`` (a loader's batch), as ``__getitem__`` gives each."""
        return [self[i] for i in indices]

    def __len__(self) -> int:
        return self._length


class ChainDataset(IterableDataset):
    """The iterable datasets in ``datasets`` read one after another; its length (when
    each has one) is the sum of theirs."""

    def __init__(self, datasets: Iterable[IterableDataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset: datasets[{i}] must be an IterableDataset, "
                                f"got {type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        total = 0
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset: datasets[{i}] must be an IterableDataset, "
                                f"got {type(d).__name__}")
            total += len(d)  # type: ignore[arg-type]
        return total
