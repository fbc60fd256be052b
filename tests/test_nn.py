"""Oracle: torch.nn layers (torch 2.13 CPU), our weights copied in: outputs, gradients, init."""

from __future__ import annotations

import math

import numpy as np
import pytest

import convgrad as cg
from convgrad import nn

from .tolerances import assert_close

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _torch_float64_default():
    """torch layers built here are float64; restore the default for other test modules."""
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(saved)
TORCH_DTYPE = {np.float32: torch.float32, np.float64: torch.float64}


def _copy_into_torch(ours: nn.Module, theirs: torch.nn.Module) -> None:
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})


def _compare(ours: nn.Module, theirs: torch.nn.Module, x: np.ndarray, dtype, **kwargs) -> None:
    """Forward and every gradient (input, each parameter) against torch."""
    ours.to(dtype)
    theirs.to(TORCH_DTYPE[dtype])
    ours.zero_grad()
    theirs.zero_grad()
    _copy_into_torch(ours, theirs)
    x = x.astype(dtype)
    xs = cg.tensor(x, requires_grad=True)
    xt = torch.from_numpy(x.copy()).requires_grad_()
    ys, yt = ours(xs, **kwargs), theirs(xt, **kwargs)
    assert_close(ys.data, yt.detach().numpy(), dtype, "forward")
    g = np.random.default_rng(1).standard_normal(ys.shape).astype(dtype)
    ys.backward(g)
    yt.backward(torch.from_numpy(g))
    assert_close(xs.grad.data, xt.grad.numpy(), dtype, "input grad")
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad.data, theirs_params[name].grad.numpy(), dtype, f"grad of {name}")
        assert p.grad.dtype == dtype


CONV_CASES = [
    # (nd, kwargs, spatial size)
    (1, dict(in_channels=3, out_channels=4, kernel_size=3), (11,)),
    (1, dict(in_channels=4, out_channels=6, kernel_size=5, stride=2, padding=2, dilation=2,
             groups=2, bias=False), (17,)),
    (1, dict(in_channels=2, out_channels=3, kernel_size=4, padding="same",
             padding_mode="circular"), (9,)),
    (2, dict(in_channels=3, out_channels=5, kernel_size=3, stride=2, padding=1), (9, 8)),
    (2, dict(in_channels=4, out_channels=4, kernel_size=(3, 2), padding=(1, 0),
             dilation=(2, 1), groups=4, padding_mode="reflect"), (8, 7)),
    (2, dict(in_channels=2, out_channels=2, kernel_size=3, padding="valid"), (6, 6)),
    (2, dict(in_channels=2, out_channels=3, kernel_size=3, padding=1,
             padding_mode="replicate"), (5, 6)),
    (3, dict(in_channels=2, out_channels=3, kernel_size=(2, 3, 2), stride=(1, 2, 1),
             padding=1), (5, 6, 4)),
]

CONVT_CASES = [
    (1, dict(in_channels=3, out_channels=2, kernel_size=3, stride=2), (7,)),
    (1, dict(in_channels=4, out_channels=6, kernel_size=3, stride=3, padding=1,
             output_padding=2, groups=2, dilation=2, bias=False), (5,)),
    (2, dict(in_channels=4, out_channels=2, kernel_size=4, stride=2, padding=1), (6, 5)),
    (2, dict(in_channels=3, out_channels=6, kernel_size=(3, 2), stride=(2, 3), padding=(1, 0),
             output_padding=(1, 2), groups=3), (4, 3)),
    (3, dict(in_channels=2, out_channels=2, kernel_size=2, stride=2), (3, 2, 3)),
]

OURS = {("conv", 1): nn.Conv1d, ("conv", 2): nn.Conv2d, ("conv", 3): nn.Conv3d,
        ("convt", 1): nn.ConvTranspose1d, ("convt", 2): nn.ConvTranspose2d,
        ("convt", 3): nn.ConvTranspose3d}
THEIRS = {("conv", 1): torch.nn.Conv1d, ("conv", 2): torch.nn.Conv2d,
          ("conv", 3): torch.nn.Conv3d, ("convt", 1): torch.nn.ConvTranspose1d,
          ("convt", 2): torch.nn.ConvTranspose2d, ("convt", 3): torch.nn.ConvTranspose3d}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind,case", [("conv", c) for c in CONV_CASES]
                         + [("convt", c) for c in CONVT_CASES])
def test_conv_layers_match_torch(kind, case, dtype):
    nd, kwargs, spatial = case
    ours = OURS[kind, nd](**kwargs, rng=0)
    theirs = THEIRS[kind, nd](**kwargs)
    x = np.random.default_rng(2).standard_normal((2, kwargs["in_channels"], *spatial))
    _compare(ours, theirs, x, dtype)
    assert repr(ours) == repr(theirs)


def test_conv_transpose_output_size_matches_torch():
    kwargs = dict(in_channels=2, out_channels=3, kernel_size=3, stride=3, padding=1)
    ours, theirs = nn.ConvTranspose2d(**kwargs, rng=0), torch.nn.ConvTranspose2d(**kwargs)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5))
    for size in [(10, 13), (12, 14), (1, 3, 11, 15)]:
        _compare(ours, theirs, x, np.float64, output_size=size)
    with pytest.raises(ValueError, match="output_size"):
        ours(cg.tensor(x), output_size=(13, 13))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_matches_torch(dtype):
    ours, theirs = nn.Linear(7, 5, rng=0), torch.nn.Linear(7, 5)
    _compare(ours, theirs, np.random.default_rng(0).standard_normal((4, 3, 7)), dtype)
    ours, theirs = nn.Linear(3, 2, bias=False, rng=0), torch.nn.Linear(3, 2, bias=False)
    _compare(ours, theirs, np.random.default_rng(0).standard_normal((6, 3)), dtype)
    assert repr(ours) == repr(theirs)


def _layer_pairs():
    return [
        (nn.ReLU(), torch.nn.ReLU()),
        (nn.LeakyReLU(), torch.nn.LeakyReLU()),
        (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
        (nn.Sigmoid(), torch.nn.Sigmoid()),
        (nn.Tanh(), torch.nn.Tanh()),
        (nn.Flatten(), torch.nn.Flatten()),
        (nn.Flatten(0, 2), torch.nn.Flatten(0, 2)),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(2)),
        (nn.MaxPool2d(3, stride=2, padding=1), torch.nn.MaxPool2d(3, stride=2, padding=1)),
        (nn.AvgPool2d(2), torch.nn.AvgPool2d(2)),
        (nn.AvgPool2d((3, 2), stride=(2, 1), padding=(1, 1)),
         torch.nn.AvgPool2d((3, 2), stride=(2, 1), padding=(1, 1))),
        (nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
        (nn.Upsample(scale_factor=(3, 2)), torch.nn.Upsample(scale_factor=(3, 2))),
        (nn.Upsample(size=(12, 14)), torch.nn.Upsample(size=(12, 14))),
    ]


@pytest.mark.parametrize("pair", _layer_pairs(), ids=lambda p: repr(p[0]))
def test_parameterless_layers_match_torch(pair):
    ours, theirs = pair
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 7))
    _compare(ours, theirs, x, np.float64)
    _compare(ours, theirs, x, np.float32)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("shape,scale", [((2, 3, 5), 3), ((1, 2, 2, 3, 2), 2)])
def test_upsample_1d_and_3d_match_torch(shape, scale):
    x = np.random.default_rng(4).standard_normal(shape)
    _compare(nn.Upsample(scale_factor=scale), torch.nn.Upsample(scale_factor=scale), x,
             np.float64)


class _Net(nn.Module):
    def __init__(self, rng=None):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, rng=rng), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(4, 8, 3, stride=2, rng=rng),
                                      nn.Tanh())
        self.up = nn.ConvTranspose2d(8, 2, 2, stride=2, rng=rng)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * 2 * 2, 3, rng=rng))

    def forward(self, x):
        return self.head(self.up(self.features(x)).sigmoid())


class _TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(4, 8, 3, stride=2), torch.nn.Tanh())
        self.up = torch.nn.ConvTranspose2d(8, 2, 2, stride=2)
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(2 * 2 * 2, 3))

    def forward(self, x):
        return self.head(torch.sigmoid(self.up(self.features(x))))


def test_nested_model_keys_outputs_gradients_and_repr_match_torch():
    ours, theirs = _Net(rng=5), _TorchNet()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert repr(ours) == repr(theirs).replace("_TorchNet", "_Net")
    _compare(ours, theirs, np.random.default_rng(0).standard_normal((3, 1, 8, 8)), np.float64)
    _compare(ours, theirs, np.random.default_rng(0).standard_normal((3, 1, 8, 8)), np.float32)


def test_load_state_dict_from_torch_and_errors():
    theirs = _TorchNet().double()
    ours = _Net()
    params_before = list(ours.parameters())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert list(ours.parameters()) == params_before  # loaded in place
    assert all(p.dtype == np.float32 for p in ours.parameters())
    x = np.random.default_rng(0).standard_normal((2, 1, 8, 8))
    assert_close(ours(cg.tensor(x, dtype=np.float32)).data,
                 theirs(torch.from_numpy(x)).detach().numpy(), np.float32)
    sd = ours.state_dict()
    sd["extra"] = np.zeros(1)
    with pytest.raises(ValueError, match="unexpected key.*'extra'"):
        ours.load_state_dict(sd)
    res = ours.load_state_dict(sd, strict=False)
    assert res.unexpected_keys == ["extra"] and res.missing_keys == []
    del sd["extra"], sd["up.bias"]
    with pytest.raises(ValueError, match="missing key.*'up.bias'"):
        ours.load_state_dict(sd)
    sd = ours.state_dict()
    sd["up.weight"] = np.zeros((1, 2, 3))
    before = ours.state_dict()
    with pytest.raises(ValueError, match="size mismatch for 'up.weight'"):
        ours.load_state_dict(sd)
    for k, v in ours.state_dict().items():  # a failed load changes nothing
        np.testing.assert_array_equal(v, before[k])


def test_state_dict_is_a_copy_and_parameters_are_float32():
    m = nn.Sequential(nn.Conv2d(1, 2, 3, rng=0), nn.ReLU(), nn.Linear(2, 2, rng=0))
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(p.dtype == np.float32 for p in m.parameters())
    sd = m.state_dict()
    sd["0.weight"][...] = 7
    assert not np.any(m[0].weight.data == 7)


def test_train_eval_zero_grad_requires_grad():
    m = _Net(rng=0)
    assert m.training and all(c.training for c in m.modules())
    assert m.eval() is m and not any(c.training for c in m.modules())
    m.train()
    assert all(c.training for c in m.modules())
    m(cg.randn(2, 1, 8, 8, rng=0)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_frozen_parameter_runs_no_weight_gradient_kernel():
    m = nn.Sequential(nn.Conv2d(1, 3, 3, rng=0), nn.ReLU(), nn.Conv2d(3, 2, 3, rng=0),
                      nn.ConvTranspose2d(2, 1, 2, stride=2, rng=0))
    x = cg.randn(2, 1, 9, 9, rng=1)
    with cg.profile() as prof:
        m(x).sum().backward()
        grads = [p.grad for p in m.parameters()]  # (computed when read: deferred)
    assert prof.count("conv_weight_grad") == 3 and None not in grads
    assert prof.count("conv_bias_grad") == 3
    assert prof.count("conv_input_grad") == 2  # x does not require grad
    m.zero_grad()
    m[2].weight.requires_grad_(False)
    m[3].requires_grad_(False)
    with cg.profile() as prof:
        m(x).sum().backward()
        grads = [p.grad for p in m.parameters()]
    assert prof.count("conv_weight_grad") == 1 and sum(g is None for g in grads) == 3
    assert prof.count("conv_bias_grad") == 2
    assert m[2].weight.grad is None and m[3].weight.grad is None
    assert m[0].weight.grad is not None and m[2].bias.grad is not None


def test_shared_parameter_is_listed_once():
    lin = nn.Linear(2, 2, rng=0)
    m = nn.Sequential(lin, nn.Tanh(), lin)
    assert len(list(m.parameters())) == 2
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def _ks_uniform(samples: np.ndarray, bound: float) -> float:
    """Kolmogorov-Smirnov distance between the samples and U(-bound, bound)."""
    s = np.sort(samples.ravel())
    cdf = (s + bound) / (2 * bound)
    n = s.size
    return float(max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n)))


INIT_CASES = [
    (nn.Conv2d, torch.nn.Conv2d, dict(in_channels=16, out_channels=64, kernel_size=3)),
    (nn.Conv1d, torch.nn.Conv1d, dict(in_channels=6, out_channels=256, kernel_size=5,
                                      groups=2)),
    (nn.Conv3d, torch.nn.Conv3d, dict(in_channels=4, out_channels=32, kernel_size=(3, 2, 2))),
    (nn.ConvTranspose2d, torch.nn.ConvTranspose2d,
     dict(in_channels=64, out_channels=12, kernel_size=4, stride=2)),
    (nn.ConvTranspose1d, torch.nn.ConvTranspose1d,
     dict(in_channels=129, out_channels=9, kernel_size=3, groups=3)),
    (nn.ConvTranspose3d, torch.nn.ConvTranspose3d,
     dict(in_channels=32, out_channels=5, kernel_size=2)),
    (nn.Linear, torch.nn.Linear, dict(in_features=300, out_features=200)),
]


@pytest.mark.parametrize("ours_cls,theirs_cls,kwargs", INIT_CASES,
                         ids=[c[0].__name__ + str(i) for i, c in enumerate(INIT_CASES)])
def test_default_init_has_torchs_bounds_and_distribution(ours_cls, theirs_cls, kwargs):
    theirs = theirs_cls(**kwargs)
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)
    bound = 1 / math.sqrt(fan_in)
    # torch's own draws respect this bound: the oracle for which fan_in (ConvTranspose!)
    assert float(theirs.weight.detach().abs().max()) <= bound
    assert float(theirs.weight.detach().abs().max()) > 0.9 * bound
    ours = ours_cls(**kwargs, rng=0)
    assert ours.weight.shape == tuple(theirs.weight.shape)
    for name in ("weight", "bias"):
        w = getattr(ours, name).data
        assert w.dtype == np.float32
        assert np.abs(w).max() <= bound
        n = w.size
        if n >= 200:
            # KS test against U(-b, b) at the 0.1% level; a wrong fan_in fails it
            assert _ks_uniform(w, bound) < 1.95 / math.sqrt(n), name
            assert np.abs(w).max() > bound * (1 - 10 / n)


def test_init_is_deterministic_with_rng_and_manual_seed():
    a, b = nn.Conv2d(3, 4, 3, rng=7), nn.Conv2d(3, 4, 3, rng=7)
    np.testing.assert_array_equal(a.weight.data, b.weight.data)
    nn.init.manual_seed(3)
    c = nn.Linear(5, 5)
    nn.init.manual_seed(3)
    d = nn.Linear(5, 5)
    np.testing.assert_array_equal(c.weight.data, d.weight.data)
    np.testing.assert_array_equal(c.bias.data, d.bias.data)


def test_fan_in_helpers_match_torch():
    for shape in [(4, 3), (8, 2, 3, 3), (2, 5, 4), (3, 6, 2, 2, 2)]:
        t = torch.empty(shape)
        assert nn.init.calculate_fan_in_and_fan_out(shape) == \
            torch.nn.init._calculate_fan_in_and_fan_out(t)
    for nl, p in [("relu", None), ("tanh", None), ("leaky_relu", math.sqrt(5)),
                  ("conv2d", None), ("sigmoid", None)]:
        assert nn.init.calculate_gain(nl, p) == pytest.approx(torch.nn.init.calculate_gain(nl, p))


def test_sequential_indexing_and_container_behaviour():
    layers = [nn.Linear(2, 3, rng=0), nn.ReLU(), nn.Linear(3, 1, rng=0)]
    m = nn.Sequential(*layers)
    assert len(m) == 3 and m[0] is layers[0] and m[-1] is layers[2]
    assert list(m) == layers
    sub = m[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == layers[1:]
    with pytest.raises(IndexError):
        m[3]
    with pytest.raises(TypeError, match="Module"):
        nn.Sequential(nn.ReLU(), "relu")


class _NoInit(nn.Module):
    def __init__(self):
        self.w = nn.Parameter(np.zeros(2))


@pytest.mark.parametrize("make,exc,pattern", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "groups=2 must divide in_channels=3"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), ValueError, "groups=2 must divide out_channels=3"),
    (lambda: nn.Conv2d(0, 3, 3), ValueError, "in_channels=0"),
    (lambda: nn.Conv2d(1, 3, (3, 3, 3)), ValueError, "kernel_size"),
    (lambda: nn.Conv2d(1, 3, 3, padding_mode="mirror"), ValueError, "padding_mode='mirror'"),
    (lambda: nn.Conv2d(1, 3, 3, stride=2, padding="same"), ValueError, "padding='same'"),
    (lambda: nn.Conv1d(1, 3, 3, padding="full"), ValueError, "padding='full'"),
    (lambda: nn.ConvTranspose2d(1, 3, 3, padding_mode="reflect"), ValueError, "padding_mode"),
    (lambda: nn.ConvTranspose2d(1, 3, 3, stride=2, output_padding=2), ValueError,
     "output_padding"),
    (lambda: nn.Conv2d(1, 3, 3, dtype=np.int32), TypeError, "dtype"),
    (lambda: nn.Linear(3, 2, bias=1), TypeError, "bias=1"),
    (lambda: nn.Upsample(scale_factor=2, mode="bilinearr"), ValueError, "mode='bilinearr'"),
    (lambda: nn.Upsample(), ValueError, "exactly one of them"),
    (lambda: nn.MaxPool2d(3, padding=2), ValueError, "padding=2"),
    (lambda: _NoInit(), AttributeError, "super\\(\\).__init__"),
])
def test_constructor_errors_name_the_argument(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make()


def test_forward_and_assignment_errors():
    with pytest.raises(ValueError, match="in_features=3"):
        nn.Linear(3, 2, rng=0)(cg.randn(2, 4))
    with pytest.raises(ValueError, match=r"size=\(5, 5, 5\)"):
        nn.Upsample(size=(5, 5, 5))(cg.randn(1, 1, 2, 2))
    m = nn.Linear(2, 2, rng=0)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.weight = cg.randn(2, 2)
    m.bias = None
    assert m.bias is None and list(m.state_dict()) == ["weight"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        m.nope  # noqa: B018
