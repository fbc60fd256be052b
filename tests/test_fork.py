"""Forked children (DataLoader workers, os.fork) run convgrad's kernels: they neither hang
nor die, and compute what torch float64 computes (float32 within 2x torch float32's own
error).

Each scenario runs in a fresh interpreter with a timeout: before ``ops/fork.py`` a worker
hung (a lock held by the warm-up thread at the fork, the parent's dead thread pool, GNU
OpenMP after the parent's parallel regions) or was killed by Numba (SIGTERM), and a hang
must fail the test, not stall the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from .test_accuracy import assert_as_accurate

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

# the workers' job: a float32 convolution + ReLU + batch norm, and a float64 convolution
# (the NumPy engine's chunks on the thread pool); each returns its results, the
# algorithms its kernels ran and its thread count
_DATASET = textwrap.dedent("""
    import os, sys
    import numpy as np
    import convgrad as cg
    import convgrad.functional as F
    from convgrad.ops.parallel import num_threads
    from convgrad.utils.data import DataLoader, Dataset

    def inputs(i):
        rng = np.random.default_rng(i)
        x = rng.standard_normal((2, 16, 24, 24), dtype=np.float32)
        w = (0.2 * rng.standard_normal((8, 16, 3, 3))).astype(np.float32)
        return x, w

    def job(i):
        x, w = inputs(i)
        with cg.profile() as prof:
            y = F.batch_norm(F.relu(F.conv2d(cg.tensor(x), cg.tensor(w), padding=1)),
                             None, None, training=True)
            y64 = F.conv2d(cg.tensor(x.astype(np.float64)), cg.tensor(w.astype(np.float64)),
                           padding=1)
        algos = sorted({f"{e.name}:{e.algorithm}" for e in prof.events})
        return y.numpy(), y64.numpy(), " ".join(algos), num_threads(), os.getpid()

    class Jobs(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return job(i)

    def load(out):
        got = {}
        for i, b in enumerate(DataLoader(Jobs(), batch_size=None, num_workers=2)):
            y, y64, algos, threads, pid = b
            assert pid != os.getpid()
            got[f"y{i}"], got[f"y64_{i}"] = np.asarray(y.data), np.asarray(y64.data)
            got[f"algos{i}"], got[f"threads{i}"] = np.array(algos), np.array(threads)
        np.savez(out, **got)
""")


def _run(tmp_path, before: str) -> dict:
    """Run ``before`` (the parent's work) then the DataLoader in a fresh interpreter;
    the workers' results."""
    out = tmp_path / "got.npz"
    code = _DATASET + textwrap.dedent(before) + f"\nload({str(out)!r})\n"
    # two threads in the parent whatever an earlier test left in the environment
    # (OMP_NUM_THREADS=1 would leave OpenMP unstarted, and the scenario untested)
    env = {**os.environ, "CONVGRAD_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", code], timeout=240, capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    with np.load(out) as f:
        return {k: f[k] for k in f.files}


def _check_against_torch(got: dict) -> None:
    for i in range(4):
        rng = np.random.default_rng(i)
        x = rng.standard_normal((2, 16, 24, 24), dtype=np.float32)
        w = (0.2 * rng.standard_normal((8, 16, 3, 3))).astype(np.float32)

        def ref(dtype, x=x, w=w):
            y = TF.relu(TF.conv2d(torch.tensor(x, dtype=dtype), torch.tensor(w, dtype=dtype),
                                  padding=1))
            return TF.batch_norm(y, None, None, training=True)
        assert_as_accurate(f"worker {i}", got[f"y{i}"], ref(torch.float32), ref(torch.float64))
        y64 = TF.conv2d(torch.tensor(x, dtype=torch.float64),
                        torch.tensor(w, dtype=torch.float64), padding=1).numpy()
        np.testing.assert_allclose(got[f"y64_{i}"], y64, rtol=1e-12, atol=1e-12)


def test_workers_forked_while_the_network_is_warming_up(tmp_path):
    # the workers fork at once after a layer starts the background warm-ups: the fork
    # waits for them (before: a worker's convolution hung on the lock oneDNN's warm-up
    # thread held at the fork)
    got = _run(tmp_path, """
        import convgrad.nn as nn
        nn.Conv2d(3, 8, 3)
    """)
    _check_against_torch(got)


def test_workers_of_a_parent_that_trained_run_on_one_thread(tmp_path):
    # the parent ran oneDNN and Numba's loops on OpenMP threads and the NumPy engine's
    # chunks on its thread pool; before, a worker hung (OpenMP, the pool) or was killed
    got = _run(tmp_path, """
        from convgrad.ops import jit, onednn
        x = cg.randn(4, 16, 32, 32, rng=0)
        w = cg.randn(16, 16, 3, 3, rng=1, requires_grad=True)
        F.relu(F.conv2d(x, w, padding=1)).sum().backward()
        F.conv2d(x.double(), w.detach().double(), padding=1)
        assert num_threads() == 2
        print("numba layer", jit.parallel_launched() and jit.numba().threading_layer())
    """)
    _check_against_torch(got)
    from convgrad.ops import jit, onednn

    for i in range(4):
        algos = str(got[f"algos{i}"])
        assert int(got[f"threads{i}"]) == 1, algos  # as torch's DataLoader workers
        assert "conv_forward:im2col" in algos  # the float64 convolution, chunks inline
        if onednn.available():
            assert "conv_forward:onednn" in algos
        if jit.enabled() and jit.thread_safe():  # Numba's layer is OpenMP: its loops off
            assert "relu_forward:numba" not in algos, algos


def test_a_forked_child_after_training_exits_cleanly():
    # Numba ends a child that launches its GNU OpenMP loops after the parent did
    # ("fork() called from a process already using GNU OpenMP"): the child must not
    code = textwrap.dedent("""
        import os
        import convgrad as cg
        import convgrad.functional as F
        x = cg.randn(8, 16, 64, 64, rng=0)
        F.relu(x)
        pid = os.fork()
        if pid == 0:
            y = F.relu(x)
            ok = bool((y.numpy() == x.numpy().clip(0)).all())
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=120,
                         capture_output=True, text=True)
    assert out.stdout.split()[-1] == "0", out.stdout + out.stderr


def test_a_forked_child_trains_a_network_as_its_parent_does():
    # every family a U-Net-like step runs (group and batch norm, SiLU, leaky ReLU,
    # bilinear upsampling, max pooling, Adam and SGD), in a child of a parent that ran
    # it on OpenMP's threads: the child (one thread, no Numba loops) reaches the loss
    # the parent reached (the oracle: the parent's own kernels, another engine)
    code = textwrap.dedent("""
        import os
        import numpy as np
        import convgrad as cg
        import convgrad.functional as F
        import convgrad.nn as nn
        from convgrad.optim import SGD, Adam

        def train():
            cg.manual_seed(0)
            x = cg.randn(2, 16, 32, 32, rng=0)
            m = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU(),
                              nn.Upsample(scale_factor=2, mode="bilinear"),
                              nn.Conv2d(16, 8, 3, padding=1), nn.BatchNorm2d(8),
                              nn.LeakyReLU(0.2), nn.MaxPool2d(2))
            adam, sgd = Adam(m.parameters(), lr=1e-3), SGD(m.parameters(), lr=0.1, momentum=0.9)
            for _ in range(2):
                loss = F.cross_entropy(m(x).mean((2, 3)), np.array([1, 2]))
                loss.backward()
                adam.step()
                sgd.step()
                adam.zero_grad()
            return float(loss.item())

        parent = train()
        pid = os.fork()
        if pid == 0:
            child = train()
            os._exit(0 if abs(child - parent) <= 1e-5 * abs(parent) else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    out = subprocess.run([sys.executable, "-c", code], timeout=240, capture_output=True,
                         text=True, env={**os.environ, "CONVGRAD_NUM_THREADS": "2"})
    assert out.returncode == 0 and out.stdout.split()[-1] == "0", out.stdout + out.stderr
