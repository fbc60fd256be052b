"""Oracle: torch.optim.SGD and torch.optim.Adam (torch 2.13 CPU) fed the same gradients."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad import nn
from convgrad.optim import SGD, Adam

torch = pytest.importorskip("torch")

# below the compiled loops' vectorised build (1K elements), between it and their OpenMP
# size (64K: update_loops.VECTOR_MIN, PARALLEL_MIN), above, and a scalar
SHAPES = [(33, 17), (64,), (5, 3, 3, 3), (40, 100), (300, 257), ()]
# torch's vectorised CPU kernels fuse multiply-adds exactly as convgrad's float32 path does
FUSED_CPU = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")

CONFIGS = [
    ("sgd", dict(lr=0.1)),
    ("sgd", dict(lr=0.05, momentum=0.9)),
    ("sgd", dict(lr=0.05, momentum=0.5, weight_decay=1e-2)),
    ("sgd", dict(lr=0.3, weight_decay=0.1)),
    ("adam", dict()),
    ("adam", dict(lr=1e-2, weight_decay=1e-2)),
    ("adam", dict(lr=3e-3, betas=(0.5, 0.99), eps=1e-6)),
    ("adam", dict(lr=1e-2, betas=(0.3, 0.9), weight_decay=0.5)),  # lerp's other branch
]


def _run(kind: str, kwargs: dict, dtype, steps: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    init = [np.asarray(rng.standard_normal(s), dtype=dtype) for s in SHAPES]
    grads = [[np.asarray(rng.standard_normal(s) * 10.0 ** rng.uniform(-3, 1), dtype=dtype)
              for s in SHAPES] for _ in range(steps)]
    ours = [nn.Parameter(p.copy()) for p in init]
    theirs = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in init]
    opt = (SGD if kind == "sgd" else Adam)(ours, **kwargs)
    topt = (torch.optim.SGD if kind == "sgd" else torch.optim.Adam)(theirs, **kwargs)
    for step_grads in grads:
        for a, b, g in zip(ours, theirs, step_grads):
            a.grad = cg.tensor(g, dtype=dtype)
            b.grad = torch.from_numpy(g.copy())
        opt.step()
        topt.step()
    return [a.data for a in ours], [b.detach().numpy() for b in theirs], init


def _eps_error(a: np.ndarray, b: np.ndarray, start: np.ndarray) -> float:
    """Max difference relative to the values' scale (final or initial), in machine epsilons."""
    scale = max(float(np.abs(b).max()), float(np.abs(start).max()), 1e-30)
    err = np.abs(a.astype(np.float64) - b).max() / scale
    return float(err / np.finfo(b.dtype).eps)


@pytest.mark.parametrize("steps", [1, 10])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind,kwargs", CONFIGS, ids=[f"{k}-{v}" for k, v in CONFIGS])
def test_updates_equal_torch(kind, kwargs, dtype, steps):
    ours, theirs, init = _run(kind, kwargs, dtype, steps)
    for a, b, start in zip(ours, theirs, init):
        assert a.dtype == dtype and a.shape == b.shape
        if kind == "sgd" and dtype == np.float32 and FUSED_CPU:
            np.testing.assert_array_equal(a, b)  # bit for bit
        else:
            # float64 (torch fuses, NumPy cannot) and Adam (torch's float32 sqrt is not
            # correctly rounded): within a few epsilons of the largest entry
            assert _eps_error(a, b, start) <= 16, (kind, kwargs)


def test_param_groups_and_parameters_without_grad():
    rng = np.random.default_rng(0)
    a = nn.Parameter(rng.standard_normal(4).astype(np.float32))
    b = nn.Parameter(rng.standard_normal(3).astype(np.float32))
    c = nn.Parameter(rng.standard_normal(2).astype(np.float32))
    ta, tb, tc = (torch.nn.Parameter(torch.from_numpy(p.data.copy())) for p in (a, b, c))
    opt = SGD([{"params": [a]}, {"params": [b, c], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    topt = torch.optim.SGD([{"params": [ta]}, {"params": [tb, tc], "lr": 0.5, "momentum": 0.9}],
                           lr=0.1)
    for _ in range(3):
        g_a, g_b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(3).astype(
            np.float32)
        a.grad, b.grad = cg.tensor(g_a), cg.tensor(g_b)  # c has no gradient: untouched
        ta.grad, tb.grad = torch.from_numpy(g_a), torch.from_numpy(g_b)
        opt.step()
        topt.step()
    for p, t in ((a, ta), (b, tb), (c, tc)):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-6, atol=1e-7)
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_training_a_model_matches_torch():
    """Adam on a conv net, gradients from each library's own backward: same trajectory."""
    rng = np.random.default_rng(0)
    ours = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, rng=0), nn.Tanh(), nn.Flatten(),
                         nn.Linear(4 * 3 * 3, 1, rng=0)).double()
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, stride=2), torch.nn.Tanh(),
                                 torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 1)).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    opt, topt = Adam(ours.parameters(), lr=1e-2), torch.optim.Adam(theirs.parameters(), lr=1e-2)
    for _ in range(10):
        x, y = rng.standard_normal((8, 1, 7, 7)), rng.standard_normal((8, 1))
        loss = ((ours(cg.tensor(x)) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        tloss = ((theirs(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
        topt.zero_grad()
        tloss.backward()
        topt.step()
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k], v.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make,exc,pattern", [
    (lambda p: SGD(p, lr=-0.1), ValueError, "lr=-0.1"),
    (lambda p: SGD(p, lr="fast"), TypeError, "lr='fast'"),
    (lambda p: SGD(p, lr=0.1, momentum=-1), ValueError, "momentum=-1"),
    (lambda p: Adam(p, betas=(0.9, 1.0)), ValueError, "betas\\[1\\]=1.0"),
    (lambda p: Adam(p, betas=0.9), TypeError, "betas=0.9"),
    (lambda p: Adam(p, eps=float("nan")), ValueError, "eps=nan"),
    (lambda p: Adam([], lr=1e-3), ValueError, "empty"),
    (lambda p: Adam(p[0], lr=1e-3), TypeError, "single Tensor"),
    (lambda p: Adam([p[0], p[0]]), ValueError, "more than one place"),
    (lambda p: Adam([np.zeros(3)]), TypeError, "params\\[0\\]"),
    (lambda p: Adam([{"params": p, "momentum": 0.9}]), ValueError, "momentum"),
])
def test_errors_name_the_argument(make, exc, pattern):
    params = [nn.Parameter(np.zeros(3, np.float32)), nn.Parameter(np.zeros(2, np.float32))]
    with pytest.raises(exc, match=pattern):
        make(params)


def test_non_leaf_parameter_is_rejected():
    p = nn.Parameter(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="not a leaf"):
        SGD([p * 2], lr=0.1)
