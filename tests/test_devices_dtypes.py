"""Devices and dtypes as a PyTorch script uses them: "cpu" changes nothing, other
devices are a ValueError, .to(device) never changes a dtype, layers refuse the dtypes
torch refuses, creation functions take dtype/device/requires_grad/generator."""

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.functional as F


def test_device_objects_and_queries():
    d = cg.device("cpu")
    assert d == "cpu" and d == cg.device("cpu:0").type and str(d) == "cpu"
    assert repr(d) == repr(torch.device("cpu")).replace("torch.", "")
    assert not cg.cuda.is_available() and cg.cuda.device_count() == 0
    assert not cg.accelerator.is_available() and cg.accelerator.current_accelerator() is None
    t = cg.ones(2)
    assert t.device == cg.device("cpu") and t.is_cuda is False and t.cpu() is t
    assert (t.is_xpu, t.is_mps, t.is_meta, t.is_cpu) == (False, False, False, True)
    for bad in ("cuda", "cuda:0", "mps"):
        with pytest.raises(ValueError, match="convgrad runs on the CPU"):
            cg.device(bad)
        with pytest.raises(ValueError, match=f"device='{bad}'.*CPU"):
            t.to(bad)
    with pytest.raises(ValueError, match="CPU"):
        t.cuda()


def test_to_never_changes_a_dtype_unless_asked():
    x = cg.tensor([1.0, 2.0], dtype=cg.float64, requires_grad=True)
    assert x.to("cpu") is x and x.to(cg.device("cpu")) is x
    assert x.to(torch.device("cpu")) is x  # a torch.device names the CPU too
    y = x.to("cpu", cg.float32)
    assert y.dtype == np.float32 and y.grad_fn is not None
    assert x.to(cg.zeros(1, dtype=cg.int64)).dtype == np.int64
    assert x.to(dtype=cg.float32, device="cpu").dtype == np.float32
    m = cg.nn.Sequential(cg.nn.Conv2d(1, 2, 3), cg.nn.BatchNorm2d(2))
    assert m.to("cpu") is m and m.cpu() is m
    assert all(p.dtype == np.float32 for p in m.parameters())
    m.to(cg.device("cpu"), cg.float64)
    assert all(p.dtype == np.float64 for p in m.parameters())
    assert m[1].num_batches_tracked.dtype == np.int64
    with pytest.raises(ValueError, match="Module.to: device='cuda'"):
        m.to("cuda")
    with pytest.raises(ValueError):
        m.cuda()


@pytest.mark.parametrize("make", [lambda: cg.nn.Conv2d(1, 2, 3), lambda: cg.nn.Linear(5, 2),
                                  lambda: cg.nn.BatchNorm2d(1),
                                  lambda: cg.nn.InstanceNorm2d(1, affine=True),
                                  lambda: cg.nn.GroupNorm(1, 1), lambda: cg.nn.LayerNorm(5)])
def test_layers_refuse_the_dtypes_torch_refuses(make):
    layer = make()
    tname = type(layer).__name__
    tlayer = getattr(torch.nn, tname)(*{"Conv2d": (1, 2, 3), "Linear": (5, 2),
                                       "BatchNorm2d": (1,), "InstanceNorm2d": (1,),
                                       "GroupNorm": (1, 1), "LayerNorm": (5,)}[tname],
                                     **({"affine": True} if tname == "InstanceNorm2d" else {}))
    x = np.random.default_rng(0).standard_normal((2, 1, 5, 5))
    with pytest.raises(TypeError, match="float64.*float32"):
        layer(x)  # a float64 input to a float32 model: no silent promotion
    with pytest.raises(RuntimeError):
        tlayer(torch.tensor(x))
    for dt in (np.int64, np.uint8, np.float16):
        with pytest.raises(TypeError, match=f"input has dtype {np.dtype(dt)}"):
            layer(x.astype(dt))
    assert layer(x.astype(np.float32)).dtype == np.float32
    layer.double()
    assert layer(x).dtype == np.float64


def test_torch_tensors_are_named_in_messages_and_copied_by_tensor():
    t = torch.arange(6.0).reshape(2, 3).requires_grad_()
    with pytest.raises(TypeError, match="input is a torch.Tensor; expected a convgrad.Tensor"):
        cg.nn.Linear(3, 2)(t)
    c = cg.tensor(t)
    assert c.dtype == np.float32 and not c.requires_grad and c.tolist() == t.tolist()
    c.data[0, 0] = 7  # a copy
    assert t[0, 0].item() == 0
    shared = cg.from_dlpack(torch.arange(3, dtype=torch.int64))
    assert shared.dtype == np.int64 and shared.tolist() == [0, 1, 2]
    back = torch.from_dlpack(cg.tensor([1.0, 2.0]))
    assert back.tolist() == [1.0, 2.0]


def test_a_plain_array_weight_takes_the_inputs_dtype():
    window = [[[[0.25, 0.25], [0.25, 0.25]]]]
    for dt in (np.float32, np.float64):
        x = cg.ones(1, 1, 3, 3, dtype=dt)
        assert F.conv2d(x, window).dtype == dt
        assert F.conv2d(x, np.asarray(window)).dtype == dt
    with pytest.raises(TypeError, match="input has dtype float32 but the weight has dtype "
                                        "float64"):
        F.conv2d(cg.ones(1, 1, 3, 3), cg.tensor(window, dtype=cg.float64))


@pytest.mark.parametrize("name,args,kwargs", [
    ("full", ((2, 3), 1.5), {}), ("full", ((2,), 7), {}), ("full", ((2,), True), {}),
    ("zeros_like", (np.ones((2, 2), np.float64),), {}), ("ones_like", (np.ones(3),), {}),
    ("full_like", (np.ones(3), 4), {}), ("arange", (5,), {}), ("arange", (1, 2.5, 0.5), {}),
    ("arange", (0, 10, 3), {"dtype": "float64"}), ("linspace", (0, 1, 5), {}),
    ("eye", (3, 4), {}), ("empty", (2, 3), {"dtype": "int64"}),
])
def test_creation_functions_match_torch(name, args, kwargs):
    def conv(a, lib):
        if isinstance(a, np.ndarray):
            return cg.tensor(a) if lib is cg else torch.tensor(a)
        return a
    tk = {k: getattr(torch, v) for k, v in kwargs.items()}
    ck = {k: getattr(cg, v) for k, v in kwargs.items()}
    ours = getattr(cg, name)(*[conv(a, cg) for a in args], **ck, device="cpu")
    theirs = getattr(torch, name)(*[conv(a, torch) for a in args], **tk, device="cpu")
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    if name != "empty":
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="CPU"):
        getattr(cg, name)(*[conv(a, cg) for a in args], **ck, device="cuda")


def test_random_creation_with_generator_and_requires_grad():
    a = cg.rand(3, 4, generator=np.random.default_rng(1), requires_grad=True)
    b = cg.rand(3, 4, generator=np.random.default_rng(1))
    assert a.requires_grad and np.array_equal(a.numpy(), b.numpy())
    assert ((a.numpy() >= 0) & (a.numpy() < 1)).all()
    r = cg.randint(2, 5, (100,), generator=0)
    assert r.dtype == np.int64 and r.numpy().min() >= 2 and r.numpy().max() <= 4
    assert sorted(cg.randperm(6, generator=3).tolist()) == list(range(6))
    assert cg.randn(2, device="cpu", generator=4).tolist() == cg.randn(2, rng=4).tolist()
    assert cg.randn_like(a).shape == (3, 4) and cg.rand_like(a).dtype == np.float32
    cg.manual_seed(0)
    first = cg.randint(0, 100, (5,)).tolist()
    cg.manual_seed(0)
    assert cg.randint(0, 100, (5,)).tolist() == first


def test_a_scripts_cudnn_switches_are_accepted_as_torch_accepts_them_without_cuda():
    import convgrad.backends.cudnn as cudnn

    cudnn.benchmark = True  # pytorch/examples' DCGAN sets it
    cudnn.deterministic = True
    assert cudnn.is_available() is False and cudnn.version() is None
    assert torch.backends.cudnn.is_available() is False  # torch here: CPU wheel, the oracle
    cudnn.benchmark = cudnn.deterministic = False


def test_data_parallel_on_one_device_equals_the_module():
    import convgrad.nn.parallel

    m = cg.nn.Linear(4, 3)
    x = cg.randn(5, 4, generator=1)
    np.testing.assert_array_equal(convgrad.nn.parallel.data_parallel(m, x, range(1)).data,
                                  m(x).data)


_LAYER_ARGS = {  # the leading arguments of each layer with parameters
    "Linear": (4, 3), "Conv1d": (2, 3, 3), "Conv2d": (2, 3, 3), "Conv3d": (2, 3, 3),
    "ConvTranspose1d": (2, 3, 3), "ConvTranspose2d": (2, 3, 3), "ConvTranspose3d": (2, 3, 3),
    "BatchNorm1d": (3,), "BatchNorm2d": (3,), "BatchNorm3d": (3,), "InstanceNorm1d": (3,),
    "InstanceNorm2d": (3,), "InstanceNorm3d": (3,), "GroupNorm": (1, 3), "LayerNorm": (3,),
    "PReLU": (),
}


@pytest.mark.parametrize("name", sorted(_LAYER_ARGS))
def test_layers_take_device_and_dtype_where_torch_does(name):
    """Every layer with parameters has torch's positional parameters in torch's order,
    ``device`` and ``dtype`` included (``nn.Linear(i, o, bias, device, dtype)`` as a
    subclass passes them, or ``**factory_kwargs``): the CPU in any spelling builds it,
    the dtype applies, any other device is a ValueError naming it."""
    import inspect

    def positional(cls):
        return [p.name for p in inspect.signature(cls.__init__).parameters.values()
                if p.name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD]

    theirs, ours = positional(getattr(torch.nn, name)), positional(getattr(cg.nn, name))
    assert ours[:len(theirs)] == theirs, (ours, theirs)
    cls, lead = getattr(cg.nn, name), _LAYER_ARGS[name]
    tail = len(theirs) - len(lead) - 2  # the defaults between the leading args and device
    defaults = [inspect.signature(cls.__init__).parameters[n].default
                for n in theirs[len(lead):len(lead) + tail]]
    for dev in ("cpu", cg.device("cpu"), torch.device("cpu"), None):
        layer = cls(*lead, *defaults, dev, cg.float64)
        assert {p.dtype for p in layer.parameters()} <= {cg.float64}
        layer = cls(*lead, device=dev, dtype=cg.float32)
        assert {p.dtype for p in layer.parameters()} <= {cg.float32}
    with pytest.raises(ValueError, match="device='cuda:1'"):
        cls(*lead, device="cuda:1")


@pytest.mark.parametrize("call,low", [
    (lambda m: m.randint(7, (500,)), 0), (lambda m: m.randint(7, size=(500,)), 0),
    (lambda m: m.randint(3, 7, (500,)), 3), (lambda m: m.randint(3, 7, size=(500,)), 3),
    (lambda m: m.randint(low=3, high=7, size=(500,)), 3),
    (lambda m: m.randint(high=7, size=(500,)), 0)])
def test_randint_takes_torchs_call_forms(call, low):
    """``randint(high, size)``, ``randint(low, high, size)``, size by keyword or position
    (pytorch/examples' forward-forward MNIST calls ``randint(n, size=(1,))``): torch's
    shape and dtype, and every value of [low, 7) drawn (500 draws), none outside."""
    ours, theirs = call(cg), call(torch)
    assert ours.shape == tuple(theirs.shape) and ours.dtype == cg.int64
    assert set(ours.numpy().tolist()) == set(range(low, 7)) == set(theirs.tolist())
    with pytest.raises(TypeError, match="size"):
        cg.randint(3, 7)
