"""``SyncBatchNorm`` and ``DataParallel`` in one process, against torch's outside a
process group and without GPUs: values, gradients, running buffers, the conversion of a
model's batch norms, state-dict keys."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 3)])
def test_sync_batch_norm_equals_torchs(shape):
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    theirs = torch.nn.SyncBatchNorm(3, momentum=0.2).double()
    ours = cg.nn.SyncBatchNorm(3, momentum=0.2, dtype=cg.float64)
    xt, xc = torch.tensor(x, requires_grad=True), cg.tensor(x, requires_grad=True)
    yt, yc = theirs(xt), ours(xc)
    np.testing.assert_allclose(yc.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(0).standard_normal(shape)
    (yt * torch.tensor(w)).sum().backward()
    (yc * cg.tensor(w)).sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10)
    for k in ("running_mean", "running_var"):
        np.testing.assert_allclose(ours.state_dict()[k], theirs.state_dict()[k].numpy(),
                                   rtol=1e-12)
    assert repr(ours) == repr(theirs)


def test_convert_sync_batchnorm_keeps_the_parameters_and_buffers():
    model = cg.nn.Sequential(cg.nn.Conv2d(2, 4, 3), cg.nn.BatchNorm2d(4),
                             cg.nn.Sequential(cg.nn.BatchNorm2d(4, affine=False)))
    model.eval()
    weight, mean = model[1].weight, model[1].running_mean
    converted = cg.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    t_model = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4),
                                  torch.nn.Sequential(torch.nn.BatchNorm2d(4, affine=False)))
    assert repr(converted) == repr(torch.nn.SyncBatchNorm.convert_sync_batchnorm(t_model))
    assert type(converted[1]) is cg.nn.SyncBatchNorm and converted[1].weight is weight
    assert converted[1].running_mean is mean and not converted[1].training
    assert type(converted[2][0]) is cg.nn.SyncBatchNorm and converted[2][0].weight is None
    with pytest.raises(ValueError, match="process_group"):
        cg.nn.SyncBatchNorm(3, process_group="world")


def test_data_parallel_runs_the_module_with_torchs_keys():
    torch.manual_seed(0)
    inner = torch.nn.Linear(3, 2, dtype=torch.float64)
    theirs = torch.nn.DataParallel(inner)
    ours = cg.nn.DataParallel(cg.nn.Linear(3, 2, dtype=cg.float64))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["module.weight",
                                                                    "module.bias"]
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((4, 3))  # float64: the same module, exactly
    np.testing.assert_allclose(ours(cg.tensor(x)).numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-13,
                               atol=1e-15)
    assert repr(ours) == repr(theirs) and ours.device_ids == []
    assert cg.nn.parallel.DataParallel is cg.nn.DataParallel
    with pytest.raises(TypeError, match="DataParallel: module"):
        cg.nn.DataParallel(lambda x: x)
