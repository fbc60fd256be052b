"""DataLoader(num_workers=k): batches from worker processes, as torch loads them."""

import os

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import convgrad as cg
from convgrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    default_collate,
    get_worker_info,
)


class _Pid(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return (np.full(2, i, np.float32), i, os.getpid(),
                -1 if info is None else info.id, float(cg.rand(1).item()))


def test_batches_come_in_the_samplers_order_from_other_processes():
    ds = _Pid()
    serial = list(DataLoader(ds, batch_size=5, shuffle=True, generator=3))
    parallel = list(DataLoader(ds, batch_size=5, shuffle=True, generator=3, num_workers=2))
    assert len(serial) == len(parallel) == 3
    for a, b in zip(serial, parallel):
        np.testing.assert_array_equal(a[0].data, b[0].data)
        assert a[1].dtype == np.int64 and np.array_equal(a[1].data, b[1].data)
        assert set(b[2].tolist()).isdisjoint({os.getpid()})
    assert [b[3].tolist()[0] for b in parallel] == [0, 1, 0]  # batch i from worker i % 2


def test_worker_seeds_differ_per_worker_and_repeat_with_the_generator():
    def draws(gen):
        return [b[4].tolist() for b in DataLoader(_Pid(), batch_size=3, num_workers=2,
                                                   generator=gen)]
    first, again = draws(7), draws(7)
    assert first == again
    assert first[0] != first[1]  # two workers, two streams


def test_worker_init_fn_persistent_workers_and_prefetch():
    seen = []
    loader = DataLoader(_Pid(), batch_size=4, num_workers=2, persistent_workers=True,
                        prefetch_factor=1, worker_init_fn=lambda i: seen.append(i))
    pids = [set(b[2].tolist()) for _ in range(2) for b in loader]
    assert len(set().union(*pids)) == 2  # the same two processes in both epochs
    for i, _batch in enumerate(loader):  # leaving early leaves the pool clean
        if i == 0:
            break
    assert [b[1].tolist() for b in loader][0] == [0, 1, 2, 3]
    assert seen == []  # worker_init_fn ran in the workers, not here


class _Fails(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError(f"no sample {i}")
        return np.zeros(1, np.float32)


def test_an_exception_in_a_worker_reaches_the_loop_with_its_type():
    with pytest.raises(KeyError, match="no sample 2"):
        list(DataLoader(_Fails(), batch_size=1, num_workers=2))


class _Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        lo, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(lo, 10, step))


def test_iterable_dataset_split_by_worker_info_as_torch():
    class TStream(tdata.IterableDataset):
        def __iter__(self):
            info = tdata.get_worker_info()
            return iter(range(info.id, 10, info.num_workers))
    ours = [b.tolist() for b in DataLoader(_Stream(), batch_size=2, num_workers=2)]
    theirs = [b.tolist() for b in tdata.DataLoader(TStream(), batch_size=2, num_workers=2)]
    assert ours == theirs


@pytest.mark.parametrize("bad", [{"num_workers": 0, "prefetch_factor": 2},
                                 {"num_workers": 0, "persistent_workers": True},
                                 {"num_workers": 2, "prefetch_factor": 0}])
def test_worker_arguments_are_checked_as_torch(bad):
    with pytest.raises(ValueError, match="DataLoader"):
        DataLoader(_Pid(), **bad)
    if bad["num_workers"] == 0:  # (torch accepts prefetch_factor=0 and then loads nothing)
        with pytest.raises(ValueError):
            tdata.DataLoader(_Pid(), **bad)


def test_default_collate_makes_int64_tensors_of_ints_and_integer_arrays():
    samples = [(3, np.array([1, 2], np.int16), True), (4, np.array([5, 6], np.int16), False)]
    ours, theirs = default_collate(samples), tdata.default_collate(samples)
    assert isinstance(ours[0], cg.Tensor) and ours[0].dtype == np.int64
    assert theirs[0].dtype == torch.int64 and ours[0].tolist() == theirs[0].tolist()
    assert ours[1].dtype == np.int64 and ours[1].tolist() == theirs[1].tolist()
    assert ours[2].dtype == np.bool_ and ours[2].tolist() == theirs[2].tolist()


class _Images(Dataset):
    """Images large enough for shared memory, and a small label next to each."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        img = np.random.default_rng(i).random((3, 64, 64), dtype=np.float32)
        return cg.tensor(img), {"raw": img[0] * 2, "label": i}


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no shared-memory filesystem")
def test_large_arrays_travel_through_shared_memory(monkeypatch):
    """Oracle: the same batches loaded in the main process; the transport is observed
    (every large array arrives as a shared-memory record, every file is gone after)."""
    from convgrad.utils.data import transport

    seen = []
    unpack = transport.SharedDir.unpack

    def spy(obj):
        if isinstance(obj, transport._SharedArray):
            seen.append(obj.path)
        return unpack(obj)

    monkeypatch.setattr(transport.SharedDir, "unpack", staticmethod(spy))
    serial = list(DataLoader(_Images(), batch_size=4))
    loader = DataLoader(_Images(), batch_size=4, num_workers=2)
    parallel = list(loader)
    assert len(seen) == 4  # per batch: the stacked images and the stacked "raw" arrays
    assert not any(os.path.exists(p) for p in seen)
    assert not any(name.startswith("convgrad-loader-") for name in os.listdir("/dev/shm"))
    for (x0, d0), (x1, d1) in zip(serial, parallel):
        assert isinstance(x1, cg.Tensor) and x1.dtype == np.float32
        np.testing.assert_array_equal(x0.data, x1.data)
        np.testing.assert_array_equal(d0["raw"].data, d1["raw"].data)
        np.testing.assert_array_equal(d0["label"].data, d1["label"].data)
