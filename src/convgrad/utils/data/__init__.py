"""``convgrad.utils.data``: datasets, samplers and the ``DataLoader`` that batches them.

Map-style datasets (``__getitem__`` and ``__len__``) are read through a sampler (in
order, or shuffled by a seeded generator) in batches that ``collate_fn`` joins;
iterable datasets are read in order.  Shuffling draws from the generator given to the
loader, else from the library-wide generator that ``cg.manual_seed`` seeds, so a run
is repeatable.  Batches are loaded in the calling thread, or with ``num_workers > 0``
in worker processes (``workers.py``).
"""

from __future__ import annotations

from .collate import default_collate, default_convert
from .combined import ChainDataset, StackDataset
from .dataloader import DataLoader
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler
from .weighted_sampler import WeightedRandomSampler
from .workers import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
    "TensorDataset", "default_collate", "default_convert", "random_split", "WorkerInfo",
    "get_worker_info", "WeightedRandomSampler", "ChainDataset", "StackDataset",
    "DistributedSampler",
]
