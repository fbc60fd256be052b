"""Oracle: torch.nn.Module (torch 2.13) built the same way: names, orders, buffers, loading."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import convgrad as cg  # noqa: E402
from convgrad import nn  # noqa: E402


# ---------------------------------------------------------------- twin models
class _Stats(nn.Module):
    """Buffers of every kind: persistent float and int, non-persistent, absent."""

    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(np.ones(n, np.float32))
        self.register_buffer("shift", np.zeros(n, np.float32))
        self.register_buffer("scratch", np.ones(2, np.float32), persistent=False)
        self.register_buffer("count", np.array(0, np.int64))
        self.register_buffer("unused", None)

    def forward(self, x):
        return x * self.scale + self.shift


class _TStats(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(n))
        self.register_buffer("shift", torch.zeros(n))
        self.register_buffer("scratch", torch.ones(2), persistent=False)
        self.register_buffer("count", torch.tensor(0, dtype=torch.int64))
        self.register_buffer("unused", None)

    def forward(self, x):
        return x * self.scale + self.shift


def _ours():
    shared = nn.Linear(3, 3, rng=0)
    m = nn.Module()
    m.stem = nn.Sequential(nn.Linear(4, 3, rng=1), _Stats(3))
    m.blocks = nn.ModuleList([nn.Sequential(shared, nn.ReLU()), _Stats(3),
                              nn.ModuleList([nn.Linear(3, 3, rng=2), shared])])
    m.heads = nn.ModuleDict(OrderedDict([("cls", nn.Linear(3, 2, rng=3)),
                                         ("aux", nn.Sequential(_Stats(3), nn.Tanh()))]))
    m.register_buffer("step", np.array(0.0, np.float32))
    m.last = shared
    return m


def _theirs():
    shared = torch.nn.Linear(3, 3)
    m = torch.nn.Module()
    m.stem = torch.nn.Sequential(torch.nn.Linear(4, 3), _TStats(3))
    m.blocks = torch.nn.ModuleList([torch.nn.Sequential(shared, torch.nn.ReLU()), _TStats(3),
                                    torch.nn.ModuleList([torch.nn.Linear(3, 3), shared])])
    m.heads = torch.nn.ModuleDict(OrderedDict([
        ("cls", torch.nn.Linear(3, 2)),
        ("aux", torch.nn.Sequential(_TStats(3), torch.nn.Tanh()))]))
    m.register_buffer("step", torch.tensor(0.0))
    m.last = shared
    return m


def _kinds(pairs):
    return [(name, type(m).__name__.lstrip("_T").lstrip("_")) for name, m in pairs]


def test_traversal_names_and_orders_match_torch():
    ours, theirs = _ours(), _theirs()
    assert _kinds(ours.named_modules()) == _kinds(theirs.named_modules())
    assert _kinds(ours.named_modules(remove_duplicate=False)) == \
        _kinds(theirs.named_modules(remove_duplicate=False))
    assert _kinds(ours.named_modules(prefix="net")) == _kinds(theirs.named_modules(prefix="net"))
    assert _kinds(ours.named_children()) == _kinds(theirs.named_children())
    assert len(list(ours.children())) == len(list(theirs.children()))
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in theirs.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in ours.named_parameters(recurse=False)] == []
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_buffers(recurse=False)] == \
        [n for n, _ in theirs.named_buffers(recurse=False)]
    assert [n for n, _ in ours.blocks.named_buffers(prefix="b")] == \
        [n for n, _ in theirs.blocks.named_buffers(prefix="b")]
    assert len(list(ours.buffers())) == len(list(theirs.buffers()))


def test_state_dict_keys_shapes_and_dtypes_match_torch():
    ours, theirs = _ours(), _theirs()
    ours_sd, theirs_sd = ours.state_dict(), theirs.state_dict()
    assert list(ours_sd) == list(theirs_sd)  # non-persistent and None buffers left out
    for key, value in theirs_sd.items():
        assert ours_sd[key].shape == tuple(value.shape), key
        assert ours_sd[key].dtype == value.numpy().dtype, key
    assert list(ours.state_dict(prefix="model.")) == list(theirs.state_dict(prefix="model."))
    kept = ours.state_dict(keep_vars=True)
    assert kept["stem.0.weight"] is ours.stem[0].weight
    assert kept["stem.1.shift"] is ours.stem[1].shift
    copied = ours.state_dict()
    copied["stem.1.shift"][...] = 5  # a copy
    assert not np.any(ours.stem[1].shift == 5)


def test_state_dict_moves_between_the_libraries():
    ours, theirs = _ours(), _theirs()
    with torch.no_grad():
        for i, t in enumerate(theirs.state_dict().values()):
            if t.dtype.is_floating_point:
                t.copy_(torch.linspace(-1, 1, t.numel()).reshape(t.shape) * (i + 1))
            else:
                t.fill_(7 + i)
    result = ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    for key, value in ours.state_dict().items():
        np.testing.assert_array_equal(value, theirs.state_dict()[key].numpy())
    assert ours.stem[1].count.dtype == np.int64
    assert ours.stem[1].count == int(theirs.stem[1].count) != 0
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(ours.heads["aux"](ours.blocks[1](x)).data,
                               theirs.heads["aux"](theirs.blocks[1](torch.from_numpy(x)))
                               .detach().numpy(), rtol=1e-6)
    # back: torch loads what convgrad saved
    fresh = _theirs()
    fresh.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    for key, value in fresh.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), ours.state_dict()[key])


def test_missing_and_unexpected_keys_in_torchs_order():
    ours, theirs = _ours(), _theirs()
    state = {k: v.numpy() for k, v in theirs.state_dict().items()}
    for key in ("stem.1.count", "blocks.2.0.bias", "step"):
        del state[key]
    extra = OrderedDict([("heads.cls.scale", np.ones(2, np.float32)),
                         ("bogus", np.ones(1, np.float32)),
                         ("blocks.1.scratch", np.ones(2, np.float32)),  # non-persistent
                         ("stem.1.unused", np.ones(1, np.float32)),
                         ("blocks.9.weight", np.ones(1, np.float32))])
    state.update(extra)
    tstate = {k: torch.from_numpy(v) for k, v in state.items()}
    want = theirs.load_state_dict(tstate, strict=False)
    got = ours.load_state_dict(state, strict=False)
    assert got.missing_keys == want.missing_keys
    assert got.unexpected_keys == want.unexpected_keys
    with pytest.raises(ValueError, match="missing key.*'stem.1.count'.*unexpected key.*'bogus'"):
        ours.load_state_dict(state)


def test_buffer_shape_mismatch_names_the_key_and_changes_nothing():
    ours = _ours()
    state = ours.state_dict()
    state["stem.1.shift"] = np.ones(4, np.float32)
    state["stem.0.weight"] = state["stem.0.weight"] + 1
    before = ours.state_dict()
    with pytest.raises(ValueError, match="size mismatch for 'stem.1.shift'.*buffer"):
        ours.load_state_dict(state)
    for key, value in ours.state_dict().items():
        np.testing.assert_array_equal(value, before[key])
    with pytest.raises(TypeError, match="strict="):
        ours.load_state_dict(before, strict="yes")
    with pytest.raises(TypeError, match="key 3"):
        ours.load_state_dict({3: np.ones(1)})


def test_buffers_are_arrays_that_compute_and_follow_dtype_casts():
    m = _Stats(3)
    assert isinstance(m.shift, np.ndarray)
    y = m(cg.ones(2, 3))
    assert isinstance(y, cg.Tensor) and y.dtype == np.float32
    m.shift = cg.tensor([1.0, 2.0, 3.0])  # a Tensor is stored as its data
    assert isinstance(m.shift, np.ndarray) and list(m.state_dict()["shift"]) == [1, 2, 3]
    np.testing.assert_array_equal(m(cg.ones(1, 3)).data, [[2.0, 3.0, 4.0]])
    m.shift = None
    assert "shift" not in m.state_dict()
    m.shift = np.zeros(3, np.float32)
    t = _TStats(3).double()
    m.double()
    assert m.scale.dtype == np.float64 and m.shift.dtype == np.float64
    assert m.scratch.dtype == np.float64 and m.count.dtype == np.int64
    assert t.shift.dtype == torch.float64 and t.count.dtype == torch.int64
    m.float()
    assert m.shift.dtype == np.float32
    del m.shift
    assert "shift" not in dict(m.named_buffers())
    with pytest.raises(TypeError, match="buffer 'count'"):
        m.count = 3
    with pytest.raises(TypeError, match="buffer 'x'"):
        m.register_buffer("x", [1, 2])
    with pytest.raises(TypeError, match="persistent="):
        m.register_buffer("x", np.ones(1), persistent=1)
    with pytest.raises(KeyError, match="'scale'"):
        m.register_buffer("scale", np.ones(1))
    with pytest.raises(ValueError, match="'a.b'"):
        m.register_buffer("a.b", np.ones(1))
    with pytest.raises(TypeError, match="dtype"):
        m.register_buffer("s", np.array(["text"]))


def test_apply_visits_children_first_like_torch():
    ours, theirs = _ours(), _theirs()
    seen, tseen = [], []
    assert ours.apply(lambda m: seen.append(type(m).__name__)) is ours
    theirs.apply(lambda m: tseen.append(type(m).__name__))
    assert seen == [name.replace("_T", "_") for name in tseen]

    def init(m):
        if isinstance(m, nn.Linear):
            m.weight.data[...] = 0.5

    ours.apply(init)
    assert all(np.all(m.weight.data == 0.5) for m in ours.modules() if isinstance(m, nn.Linear))
    with pytest.raises(TypeError, match="fn="):
        ours.apply(3)


def test_requires_grad_and_get_submodule():
    m = _ours()
    assert m.requires_grad_(False) is m and not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters())
    assert m.get_submodule("blocks.2.0") is m.blocks[2][0]
    assert m.get_submodule("") is m
    with pytest.raises(AttributeError, match="'nope'"):
        m.get_submodule("blocks.nope")
    with pytest.raises(TypeError, match="requires_grad="):
        m.requires_grad_("no")


def _names(container):
    return [n for n, _ in container.named_children()]


def test_module_list_operations_match_torch():
    def build(lib):
        return lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid()])

    import types
    libs = (types.SimpleNamespace(nn=nn), torch)
    ours, theirs = build(libs[0]), build(libs[1])

    def same():
        assert _names(ours) == _names(theirs)
        assert [type(m).__name__ for m in ours] == [type(m).__name__ for m in theirs]

    for lib, lst in zip(libs, (ours, theirs)):
        lst.insert(1, lib.nn.Identity())
        lst.append(lib.nn.ReLU())
        lst.extend([lib.nn.Tanh(), lib.nn.Identity()])
        lst.insert(4, lib.nn.Sigmoid())
        del lst[0]
        lst.pop(2)
        lst += [lib.nn.ReLU()]
        lst[1] = lib.nn.Tanh()
        del lst[1:3]
    same()
    assert len(ours) == len(theirs)
    assert type(ours[-1]).__name__ == type(theirs[-1]).__name__
    assert [type(m).__name__ for m in ours[1:]] == [type(m).__name__ for m in theirs[1:]]
    assert isinstance(ours[1:], nn.ModuleList)
    assert isinstance(ours + ours, nn.ModuleList) and len(ours + ours) == 2 * len(ours)
    with pytest.raises(IndexError, match="out of range"):
        ours[len(ours)]
    with pytest.raises(TypeError, match="Module"):
        ours.append("relu")
    with pytest.raises(TypeError, match="entry 1"):
        nn.ModuleList([nn.ReLU(), 3])
    with pytest.raises(TypeError, match="indices"):
        ours["0"]
    with pytest.raises(NotImplementedError):
        ours(cg.ones(1))


def test_module_dict_operations_match_torch():
    ours = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    theirs = torch.nn.ModuleDict({"b": torch.nn.ReLU(), "a": torch.nn.Tanh()})
    ours.update([("c", nn.Sigmoid()), ("b", nn.Identity())])
    theirs.update([("c", torch.nn.Sigmoid()), ("b", torch.nn.Identity())])
    ours["d"] = nn.ReLU()
    theirs["d"] = torch.nn.ReLU()
    assert ours.pop("a").__class__.__name__ == theirs.pop("a").__class__.__name__
    assert list(ours) == list(theirs) == ours.keys() == list(theirs.keys())
    assert [type(v).__name__ for v in ours.values()] == \
        [type(v).__name__ for v in theirs.values()]
    assert "c" in ours and "a" not in ours and len(ours) == len(theirs)
    del ours["c"]
    assert ours.keys() == ["b", "d"]
    with pytest.raises(TypeError, match="'x'"):
        ours["x"] = 3
    with pytest.raises(TypeError, match="pair"):
        ours.update([("x",)])
    with pytest.raises(TypeError, match="mapping"):
        ours.update(3)
    with pytest.raises(KeyError, match="'zz'"):
        ours["zz"]
    ours.clear()
    assert len(ours) == 0


def test_reassigning_keeps_registration_order():
    m, t = nn.Module(), torch.nn.Module()
    for mod, lib in ((m, nn), (t, torch.nn)):
        mod.a = lib.Parameter(lib.Parameter(np.zeros(1, np.float32)).data
                              if lib is nn else torch.zeros(1))
        mod.b = lib.Parameter(lib.Parameter(np.zeros(1, np.float32)).data
                              if lib is nn else torch.zeros(1))
        mod.a = lib.Parameter(lib.Parameter(np.ones(1, np.float32)).data
                              if lib is nn else torch.ones(1))
    assert list(m.state_dict()) == list(t.state_dict()) == ["a", "b"]
    m.c = None
    m.c = nn.Linear(1, 1, rng=0)  # a plain attribute becomes a child
    assert "c.weight" in m.state_dict()
