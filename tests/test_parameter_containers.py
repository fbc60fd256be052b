"""ParameterList and ParameterDict against torch's: registration names (state dict keys,
named_parameters), conversion of tensors to parameters sharing their memory, gradients
and an optimiser step through them, list and dict operations, errors."""

import numpy as np
import pytest
import torch

import convgrad as cg


class _Net(cg.nn.Module):
    def __init__(self, lib):
        super().__init__()
        nn = lib.nn
        self.scales = nn.ParameterList([nn.Parameter(lib.ones(3)), nn.Parameter(lib.ones(2))])
        self.gains = nn.ParameterDict({"red": nn.Parameter(lib.ones(3) * 2)})


def _torch_net():
    net = torch.nn.Module()
    net.scales = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(3)),
                                         torch.nn.Parameter(torch.ones(2))])
    net.gains = torch.nn.ParameterDict({"red": torch.nn.Parameter(torch.ones(3) * 2)})
    return net


def test_names_gradients_and_an_optimiser_step_as_torchs():
    net, tnet = _Net(cg), _torch_net()
    assert list(net.state_dict()) == list(tnet.state_dict()) == [
        "scales.0", "scales.1", "gains.red"]
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    x = np.arange(3, dtype=np.float32)
    for lib, m in ((cg, net), (torch, tnet)):
        t = lib.tensor(x)
        loss = (m.scales[0] * t * m.gains["red"]).sum() + m.scales[1].sum() * 3
        loss.backward()
    for (_, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())
    cg.optim.SGD(net.parameters(), lr=0.5).step()
    torch.optim.SGD(tnet.parameters(), lr=0.5).step()
    for (_, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        np.testing.assert_array_equal(p.numpy(), tp.detach().numpy())


def test_list_operations_and_tensor_conversion():
    a = np.zeros(4, np.float32)
    pl = cg.nn.ParameterList()
    pl.append(a).extend([cg.tensor(np.ones(2, np.float32))])
    pl += [cg.nn.Parameter(np.ones(1, np.float32))]
    assert len(pl) == 3 and all(isinstance(p, cg.nn.Parameter) for p in pl)
    assert pl[0].requires_grad and np.shares_memory(pl[0].data, a)
    pl[-1] = np.full(5, 2.0, np.float32)
    assert pl[2].shape == (5,) and isinstance(pl[1:], cg.nn.ParameterList)
    assert len(pl[1:]) == 2 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert "(0): Parameter containing: [float32 of size 4]" in repr(pl)
    with pytest.raises(IndexError, match="ParameterList index 3 is out of range"):
        pl[3]
    with pytest.raises(TypeError, match="ParameterList.append: the value is a str"):
        pl.append("w")


def test_dict_operations():
    pd = cg.nn.ParameterDict([("a", np.ones(2, np.float32))])
    pd["b"] = cg.nn.Parameter(np.zeros(3, np.float32))
    pd.update({"c": cg.tensor(np.ones(1, np.float32))})
    assert list(pd) == pd.keys() == ["a", "b", "c"] and "b" in pd and len(pd) == 3
    assert pd.get("z") is None and pd.pop("a").shape == (2,) and pd.keys() == ["b", "c"]
    assert [n for n, _ in pd.named_parameters()] == ["b", "c"]
    with pytest.raises(KeyError, match="ParameterDict has no key 'z'"):
        pd["z"]
    with pytest.raises(ValueError, match="must be non-empty and contain no '.'"):
        pd["x.y"] = np.ones(1, np.float32)
    with pytest.raises(TypeError, match="ParameterDict: the value for key 'n' is a int"):
        pd["n"] = 3
    pd.clear()
    assert len(pd) == 0 and not list(pd.parameters())
