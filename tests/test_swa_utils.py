"""Oracle: torch.optim.swa_utils (float64), run on the same weights with the same updates."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.optim import swa_utils as tsu

import convgrad as cg
from convgrad.optim import swa_utils as su


def _pair():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).double()
    c = cg.nn.Sequential(cg.nn.Linear(4, 3), cg.nn.BatchNorm1d(3)).double()
    c.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    return t, c


def _perturb(t, c, seed):
    g = np.random.default_rng(seed)
    with torch.no_grad():
        for (_, pt), pc in zip(t.named_parameters(), c.parameters()):
            d = g.standard_normal(pt.shape)
            pt.add_(torch.from_numpy(d))
            pc.data += d
        x = g.standard_normal((5, 4))
    t.train(), c.train()
    t(torch.from_numpy(x)), c(cg.tensor(x))  # moves the running statistics


@pytest.mark.parametrize("kind", ["swa", "swa_multi", "ema", "ema_multi"])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_torch(kind, use_buffers):
    t, c = _pair()
    fns = {"swa": ({}, {}), "swa_multi": ({"multi_avg_fn": tsu.get_swa_multi_avg_fn()},
                                          {"multi_avg_fn": su.get_swa_multi_avg_fn()}),
           "ema": ({"avg_fn": tsu.get_ema_avg_fn(0.9)}, {"avg_fn": su.get_ema_avg_fn(0.9)}),
           "ema_multi": ({"multi_avg_fn": tsu.get_ema_multi_avg_fn(0.7)},
                         {"multi_avg_fn": su.get_ema_multi_avg_fn(0.7)})}[kind]
    if kind == "swa_multi" and use_buffers:  # torch refuses integer buffers there
        pytest.skip("torch raises on num_batches_tracked")
    at = tsu.AveragedModel(t, use_buffers=use_buffers, **fns[0])
    ac = su.AveragedModel(c, use_buffers=use_buffers, **fns[1])
    for step in range(5):
        _perturb(t, c, step)
        at.update_parameters(t)
        ac.update_parameters(c)
    st, sc = at.state_dict(), ac.state_dict()
    assert list(st) == list(sc)
    for k in st:
        np.testing.assert_allclose(sc[k], st[k].numpy(), rtol=1e-14, atol=1e-14, err_msg=k)
        assert sc[k].dtype == st[k].numpy().dtype, k
    x = np.random.default_rng(9).standard_normal((3, 4))
    at.eval(), ac.eval()
    np.testing.assert_allclose(ac(cg.tensor(x)).numpy(), at(torch.from_numpy(x)).detach(),
                               rtol=1e-13)


def test_update_bn_matches_torch():
    t, c = _pair()
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((6, 4)) * 3 + 1 for _ in range(4)]
    t.eval(), c.eval()
    tsu.update_bn([(torch.from_numpy(b), 0) for b in batches], t)
    su.update_bn([(cg.tensor(b), 0) for b in batches], c)
    assert not c.training and c[1].momentum == 0.1
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(c.state_dict()[k], v.numpy(), rtol=1e-13, err_msg=k)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
def test_swalr_matches_torch(strategy, anneal_epochs):
    pt = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(1))]
    pc = [cg.nn.Parameter(np.zeros(2)), cg.nn.Parameter(np.zeros(1))]
    ot = torch.optim.SGD([{"params": pt[:1]}, {"params": pt[1:], "lr": 0.3}], lr=0.5)
    oc = cg.optim.SGD([{"params": pc[:1]}, {"params": pc[1:], "lr": 0.3}], lr=0.5)
    st = tsu.SWALR(ot, [0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    sc = su.SWALR(oc, [0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    seq_t, seq_c = [st.get_last_lr()], [sc.get_last_lr()]
    for _ in range(7):
        ot.step(), oc.step()
        st.step(), sc.step()
        seq_t.append(st.get_last_lr()), seq_c.append(sc.get_last_lr())
    np.testing.assert_allclose(seq_c, seq_t, rtol=1e-15)
    # resume from the state dict
    sc2 = su.SWALR(oc, [0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    sc2.load_state_dict(sc.state_dict())
    st.step(), sc2.step()
    np.testing.assert_allclose(sc2.get_last_lr(), st.get_last_lr(), rtol=1e-15)


def test_errors():
    m = cg.nn.Linear(2, 2)
    o = cg.optim.SGD(m.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="decay=1.5"):
        su.get_ema_multi_avg_fn(1.5)
    with pytest.raises(ValueError, match="anneal_strategy='step'"):
        su.SWALR(o, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs=-1"):
        su.SWALR(o, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr has 2 entries"):
        su.SWALR(o, [0.1, 0.2])
    with pytest.raises(TypeError, match="model=int"):
        su.AveragedModel(3)
    with pytest.raises(ValueError, match="cuda"):
        su.AveragedModel(m, device="cuda")
    a = su.AveragedModel(m)
    with pytest.raises(ValueError, match="has 4 parameters"):
        a.update_parameters(cg.nn.Sequential(m, cg.nn.Linear(2, 2)))
    with pytest.raises(TypeError, match="model=list"):
        su.update_bn([], [])


def test_exported_like_torch():
    assert cg.optim.swa_utils is su
    assert isinstance(su.AveragedModel(cg.nn.Linear(2, 2)).module, cg.nn.Linear)
