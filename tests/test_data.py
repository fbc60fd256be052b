"""Oracle: torch.utils.data (torch 2.13) for batching, lengths and collation of the same
samples (values and structure), and counting for shuffling (every sample exactly once per
epoch; the same order for the same seed)."""

from __future__ import annotations

from collections import Counter, namedtuple

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.utils.data as tdata  # noqa: E402

import convgrad as cg  # noqa: E402
from convgrad.utils.data import (  # noqa: E402
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    random_split,
)

N = 23
X = np.arange(N * 6, dtype=np.float32).reshape(N, 2, 3)
Y = np.arange(N, dtype=np.int64) % 5


def _numpy(batch):
    """Both libraries' batches as plain Python/NumPy, for comparison."""
    if isinstance(batch, cg.Tensor | torch.Tensor):
        return np.asarray(batch.detach().numpy() if isinstance(batch, torch.Tensor)
                          else batch.data)
    if isinstance(batch, np.ndarray):
        return batch
    if isinstance(batch, dict):
        return {k: _numpy(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch).__name__, [_numpy(v) for v in batch]
    if isinstance(batch, list | tuple):
        return [_numpy(v) for v in batch]
    return batch


def _assert_same(a, b):
    a, b = _numpy(a), _numpy(b)
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype, (a, b)
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (4, False), (4, True),
                                                  (23, True), (30, False), (30, True),
                                                  (None, False)])
def test_sequential_batches_equal_torchs(batch_size, drop_last):
    ours = DataLoader(TensorDataset(cg.tensor(X), Y), batch_size=batch_size,
                      drop_last=drop_last)
    theirs = tdata.DataLoader(tdata.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)),
                              batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    got, want = list(ours), list(theirs)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert isinstance(a, tuple) and isinstance(a[0], cg.Tensor)
        if batch_size is None:  # unbatched: the sample as it is (a NumPy integer)
            assert isinstance(a[1], np.integer)
        else:  # integer labels collate to an int64 Tensor, as torch
            assert isinstance(a[1], cg.Tensor) and a[1].dtype == np.int64
        _assert_same(a, b)


Point = namedtuple("Point", ["xy", "label"])


class _Structured(Dataset):
    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 7

    def __getitem__(self, i):
        arr = np.full((2, 2), i, np.float64)
        return {"image": arr, "label": i % 3, "weight": 0.5 * i, "flag": i % 2 == 0,
                "name": f"s{i}", "pair": (np.float32(i), np.arange(3) + i),
                "point": Point(arr[0], np.int64(i)), "nested": [{"a": arr.T}]}


def test_default_collate_of_nested_samples_equals_torchs():
    samples = [_Structured(None)[i] for i in range(5)]
    ours, theirs = default_collate(samples), tdata.default_collate(samples)
    assert isinstance(ours["image"], cg.Tensor) and ours["image"].dtype == np.float64
    assert isinstance(ours["weight"], cg.Tensor) and ours["weight"].dtype == np.float64
    assert ours["label"].dtype == np.int64 and ours["flag"].dtype == bool
    assert ours["name"] == ["s0", "s1", "s2", "s3", "s4"]
    assert isinstance(ours["pair"], tuple) and isinstance(ours["point"], Point)
    _assert_same(ours, theirs)
    loader = DataLoader(_Structured(None), batch_size=3)
    tloader = tdata.DataLoader(_Structured(None), batch_size=3)
    for a, b in zip(loader, tloader):
        _assert_same(a, b)


def test_every_sample_once_per_epoch_and_orders_repeat_under_manual_seed():
    data = TensorDataset(cg.tensor(np.arange(N, dtype=np.float32)))

    def epochs(loader, n=3):
        return [np.concatenate([b[0].data for b in loader]).tolist() for _ in range(n)]

    cg.manual_seed(123)
    first = epochs(DataLoader(data, batch_size=5, shuffle=True))
    cg.manual_seed(123)
    again = epochs(DataLoader(data, batch_size=5, shuffle=True))
    assert first == again
    for order in first:
        assert sorted(order) == list(range(N))  # every sample exactly once
    assert first[0] != first[1] and first[0] != sorted(first[0])  # a new order each epoch
    cg.manual_seed(124)
    assert epochs(DataLoader(data, batch_size=5, shuffle=True)) != first
    # a loader's own generator: independent of the library-wide one
    a = epochs(DataLoader(data, batch_size=4, shuffle=True, generator=7))
    cg.manual_seed(0)
    b = epochs(DataLoader(data, batch_size=4, shuffle=True,
                          generator=np.random.default_rng(7)))
    assert a == b
    dropped = epochs(DataLoader(data, batch_size=5, shuffle=True, drop_last=True), 1)[0]
    assert len(dropped) == 20 and len(set(dropped)) == 20


def test_samplers_and_batch_sampler():
    data = list(range(10))
    assert list(SequentialSampler(data)) == list(tdata.SequentialSampler(data))
    sampler = RandomSampler(data, num_samples=25, generator=0)
    drawn = list(sampler)
    assert len(drawn) == len(sampler) == 25
    counts = Counter(drawn)
    assert all(counts[i] in (2, 3) for i in data)  # two full permutations and a part
    with_replacement = list(RandomSampler(data, replacement=True, num_samples=200, generator=1))
    assert len(with_replacement) == 200 and set(with_replacement) <= set(data)
    subset = list(SubsetRandomSampler([3, 5, 7], generator=2))
    assert sorted(subset) == [3, 5, 7]
    for drop in (False, True):
        ours = list(BatchSampler(SequentialSampler(data), 4, drop))
        theirs = list(tdata.BatchSampler(tdata.SequentialSampler(data), 4, drop))
        assert ours == theirs and len(BatchSampler(data, 4, drop)) == len(theirs)
    loader = DataLoader(TensorDataset(cg.tensor(X)), batch_sampler=[[0, 1], [5], [2, 3, 4]])
    assert [b[0].shape[0] for b in loader] == [2, 1, 3] and len(loader) == 3
    loader = DataLoader(TensorDataset(cg.tensor(X)), sampler=[4, 2], batch_size=2)
    np.testing.assert_array_equal(next(iter(loader))[0].data, X[[4, 2]])


def test_collate_fn_datasets_and_tqdm():
    tqdm = pytest.importorskip("tqdm").tqdm
    loader = DataLoader(list(range(10)), batch_size=3, collate_fn=lambda b: sum(b))
    assert list(loader) == [3, 12, 21, 9]
    bar = tqdm(loader, disable=True)
    assert len(bar) == 4 and list(bar) == [3, 12, 21, 9]
    both = ConcatDataset([TensorDataset(cg.tensor(X[:5])), TensorDataset(cg.tensor(X[5:]))])
    tboth = tdata.ConcatDataset([tdata.TensorDataset(torch.from_numpy(X[:5])),
                                 tdata.TensorDataset(torch.from_numpy(X[5:]))])
    assert len(both) == len(tboth) == N
    for i in (0, 4, 5, N - 1, -1):
        _assert_same(both[i], tboth[i])
    parts = random_split(TensorDataset(cg.tensor(X)), [0.5, 0.3, 0.2], generator=0)
    tparts = tdata.random_split(tdata.TensorDataset(torch.from_numpy(X)), [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [len(p) for p in tparts]
    seen = sorted(i for p in parts for i in p.indices)
    assert seen == list(range(N))
    sub = Subset(TensorDataset(cg.tensor(X)), [3, 1])
    np.testing.assert_array_equal(sub[1][0].data, X[1])


class _Rows:
    def __init__(self, n, sized=True):
        self.n, self.sized = n, sized

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.float32).reshape(self.n, 1))

    def __len__(self):
        if not self.sized:
            raise TypeError("no length")
        return self.n


class _Stream(_Rows, IterableDataset):
    pass


class _TStream(_Rows, tdata.IterableDataset):
    pass


def test_iterable_datasets():
    for drop in (False, True):
        ours = DataLoader(_Stream(10), batch_size=4, drop_last=drop)
        theirs = tdata.DataLoader(_TStream(10), batch_size=4, drop_last=drop)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b)
    with pytest.raises(TypeError):
        len(DataLoader(_Stream(3, sized=False)))
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(_Stream(3), shuffle=True)


def test_requires_grad_samples_keep_their_graph():
    w = cg.tensor(np.ones((4, 2), np.float32), requires_grad=True)
    (batch,) = next(iter(DataLoader(TensorDataset(w * 3), batch_size=4)))
    batch.sum().backward()
    np.testing.assert_array_equal(w.grad.data, np.full((4, 2), 3.0))


@pytest.mark.parametrize("make,exc,pattern", [
    (lambda: DataLoader(3), TypeError, "dataset must define"),
    (lambda: DataLoader(list(range(4)), batch_size=0), ValueError, "batch_size=0"),
    (lambda: DataLoader(list(range(4)), batch_size=2.5), ValueError, "batch_size=2.5"),
    (lambda: DataLoader(list(range(4)), shuffle=1), TypeError, "shuffle=1"),
    (lambda: DataLoader(list(range(4)), sampler=[0], shuffle=True), ValueError,
     "mutually exclusive"),
    (lambda: DataLoader(list(range(4)), batch_sampler=[[0]], batch_size=2), ValueError,
     "batch_sampler"),
    (lambda: DataLoader(list(range(4)), batch_size=None, drop_last=True), ValueError,
     "drop_last"),
    (lambda: DataLoader(list(range(4)), num_workers=-1), ValueError, "num_workers=-1"),
    (lambda: DataLoader(list(range(4)), collate_fn=3), TypeError, "collate_fn=3"),
    (lambda: DataLoader(list(range(4)), shuffle=True, generator="seed"), TypeError,
     "rng='seed'"),
    (lambda: TensorDataset(cg.tensor(X), Y[:3]), ValueError, "\\[23, 3\\] samples"),
    (lambda: TensorDataset([1, 2]), TypeError, "argument 0 is a list"),
    (lambda: random_split(list(range(5)), [2, 2]), ValueError, "sum to 4.*5 samples"),
    (lambda: TensorDataset(cg.tensor(X))[N], IndexError, "out of range"),
    (lambda: default_collate([np.ones(2), np.ones(3)]), ValueError, "shapes"),
    (lambda: default_collate([(1, 2), (1,)]), ValueError, "lengths"),
    (lambda: default_collate([object()]), TypeError, "object"),
    (lambda: default_collate([np.array(["a"])]), TypeError, "dtype"),
    (lambda: default_collate([]), ValueError, "non-empty"),
])
def test_bad_input_names_itself(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make()


def test_integer_tensor_labels_stay_integers():
    torch = pytest.importorskip("torch")
    labels = np.arange(6)
    ours = DataLoader(TensorDataset(cg.tensor(labels, dtype=np.int64)), batch_size=4)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(labels)), batch_size=4)
    for (a,), (b,) in zip(ours, theirs):
        assert a.dtype == np.int64 and b.dtype == torch.int64
        assert np.array_equal(a.data, b.numpy())
