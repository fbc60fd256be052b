"""``DistributedSampler``: the share of a dataset that one of ``num_replicas`` replicas
reads, as torch splits it.

There is no process group in convgrad (:mod:`convgrad.distributed`), so ``num_replicas``
and ``rank`` must be given (torch takes them from its group otherwise).  The split is
torch's: the order (shuffled by a generator seeded with ``seed + epoch``, or in order),
padded by repeating its head to a multiple of ``num_replicas`` (or cut to one with
``drop_last``), then every ``num_replicas``-th index from ``rank``.  Unshuffled it is
torch's exactly; shuffled, the permutation is NumPy's, not torch's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from numbers import Integral
from typing import Any

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    def __init__(self, dataset: Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        fn = "DistributedSampler"
        if num_replicas is None or rank is None:
            raise RuntimeError(f"{fn}: num_replicas and rank must be given: convgrad has no "
                               "process group to take them from (distributed.is_available() "
                               "is False)")
        for name, v in (("num_replicas", num_replicas), ("rank", rank), ("seed", seed)):
            if isinstance(v, bool) or not isinstance(v, Integral):
                raise TypeError(f"{fn}: {name}={v!r} must be an int")
        if num_replicas < 1:
            raise ValueError(f"{fn}: num_replicas={num_replicas!r} must be >= 1")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"{fn}: rank={rank!r} must be in [0, {num_replicas - 1}]")
        for name, v in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(v, bool):
                raise TypeError(f"{fn}: {name}={v!r} must be a bool")
        self.dataset, self.num_replicas, self.rank = dataset, int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, int(seed), drop_last, 0
        n = len(dataset)
        if drop_last and n % self.num_replicas:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            order = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(order)
            if pad > 0 and order:
                order += (order * math.ceil(pad / len(order)))[:pad]
        else:
            order = order[:self.total_size]
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: Any) -> None:
        """Shuffle the next iterations with ``seed + epoch`` (every replica the same)."""
        if isinstance(epoch, bool) or not isinstance(epoch, Integral):
            raise TypeError(f"DistributedSampler.set_epoch: epoch={epoch!r} must be an int")
        self.epoch = int(epoch)
