"""Oracle: torch 2.13 (its DistributedSampler's split, unshuffled, index for index) and
the processes' own outputs.

A training script's distributed imports work in one process: ``distributed`` reports no
process group (and refuses to start one), ``utils.data.distributed.DistributedSampler``
splits a dataset as torch does for given replicas, ``multiprocessing.spawn`` runs a
function in new processes and reports a failure with its traceback.
"""

from __future__ import annotations

import pytest

import convgrad as cg
import convgrad.distributed as dist
import convgrad.multiprocessing as mp
from convgrad.utils.data.distributed import DistributedSampler

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True),
                                                  (9, 3, False), (2, 4, False), (7, 2, True)])
def test_the_unshuffled_split_is_torchs(n, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_the_shuffled_split_covers_the_dataset_once_per_epoch():
    data = list(range(20))
    shards = [DistributedSampler(data, 4, r, seed=3) for r in range(4)]
    first = [list(s) for s in shards]
    assert sorted(sum(first, [])) == data  # disjoint, complete
    assert first != [list(range(r, 20, 4)) for r in range(4)]  # shuffled
    assert [list(s) for s in shards] == first  # the same epoch, the same order
    for s in shards:
        s.set_epoch(1)
    second = [list(s) for s in shards]
    assert sorted(sum(second, [])) == data and second != first
    with pytest.raises(RuntimeError, match="num_replicas and rank"):
        DistributedSampler(data)
    with pytest.raises(ValueError, match="rank=4"):
        DistributedSampler(data, 4, 4)
    with pytest.raises(TypeError, match="epoch"):
        shards[0].set_epoch(1.5)


def test_there_is_no_process_group():
    assert cg.distributed.is_available() is False and dist.is_initialized() is False
    assert dist.ReduceOp.SUM.name == "SUM"
    with pytest.raises(RuntimeError, match="one process"):
        dist.init_process_group(backend="gloo")
    with pytest.raises(RuntimeError, match="one process"):
        dist.all_reduce(cg.ones(2))


def _write(rank, folder):
    (folder / f"{rank}.txt").write_text(str(cg.tensor([rank, 2.0]).sum().item()))


def _fail(rank):
    if rank == 1:
        raise ValueError("worker one failed")


def test_spawn_runs_each_rank_and_reports_a_failure(tmp_path):
    mp.spawn(_write, args=(tmp_path,), nprocs=2)
    assert sorted(p.read_text() for p in tmp_path.glob("*.txt")) == ["2.0", "3.0"]
    with pytest.raises(RuntimeError, match="(?s)process 1 raised.*worker one failed"):
        mp.spawn(_fail, nprocs=2)
    with pytest.raises(ValueError, match="nprocs"):
        mp.spawn(_write, args=(tmp_path,), nprocs=0)


def _add_in_place(rank, model, queue):
    with cg.no_grad():
        model[0].weight.data += rank + 1.0  # an optimiser's step writes in place too
        model[1].running_mean += 10.0 * (rank + 1)
    queue.put((rank, model[0].weight.is_shared()))


def test_share_memory_lets_processes_update_one_model(tmp_path):
    """Hogwild training (pytorch/examples' mnist_hogwild): after ``share_memory()`` the
    processes a model is sent to write into the parent's parameters and buffers; plain
    pickling still copies, and the shared files go when the arrays do."""
    import gc
    import glob
    import pickle

    import numpy as np

    model = cg.nn.Sequential(cg.nn.Conv2d(2, 3, 3), cg.nn.BatchNorm2d(3))
    w0 = model[0].weight.data.copy()
    assert model.share_memory() is model
    assert model[0].weight.is_shared() and model[0].bias.is_shared()
    files = glob.glob("/dev/shm/convgrad-shared-*")
    assert len(files) >= 4  # weight, bias, running mean and variance (and the count)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_add_in_place, args=(r, model, queue)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert sorted(queue.get(timeout=10) for _ in procs) == [(0, True), (1, True)]
    # +1 and +2 in either order: within one rounding of w0 + 3
    np.testing.assert_allclose(model[0].weight.data, w0 + 3.0, rtol=0, atol=4.8e-7)
    np.testing.assert_array_equal(model[1].running_mean, np.full(3, 30.0, np.float32))
    copy = pickle.loads(pickle.dumps(model))  # a copy of the values, not the memory
    assert not copy[0].weight.is_shared()
    np.testing.assert_array_equal(copy[0].weight.data, model[0].weight.data)
    del model, copy
    gc.collect()
    assert not any(f in glob.glob("/dev/shm/convgrad-shared-*") for f in files)
