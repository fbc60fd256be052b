"""cg.load reads torch.save's zip format (state dicts) without unpickling code; cg.save
to a .pt/.pth path writes a file torch.load(weights_only=True) reads."""

import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import convgrad as cg


def _torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16, 2))


def _cg_model():
    return cg.nn.Sequential(cg.nn.Conv2d(3, 4, 3), cg.nn.BatchNorm2d(4), cg.nn.ReLU(),
                            cg.nn.Flatten(), cg.nn.Linear(16, 2))


def test_a_torch_state_dict_loads_into_the_same_model(tmp_path):
    tm = _torch_model()
    tm.train()(torch.randn(5, 3, 4, 4))  # running statistics and num_batches_tracked move
    path = tmp_path / "model.pth"
    torch.save(tm.state_dict(), path)
    sd = cg.load(path)
    assert list(sd) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert sd[k].dtype == v.numpy().dtype
        np.testing.assert_array_equal(sd[k], v.numpy())
    m = _cg_model()
    m.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    got = m.eval()(cg.tensor(x)).numpy()
    want = tm.eval()(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_views_dtypes_and_nested_containers_as_torch_wrote_them(tmp_path):
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    obj = {"t": base.t(), "s": base[1:, ::2], "i": torch.arange(5, dtype=torch.int32),
           "b": torch.tensor([True, False]), "h": torch.tensor([1.5, -2.0], dtype=torch.half),
           "bf": torch.tensor([1.5, -3.25], dtype=torch.bfloat16), "e": torch.zeros(0, 3),
           "meta": [1, 2.5, None, "x", (True, 3)], "n": {7: torch.ones(1)}}
    path = tmp_path / "obj.pt"
    torch.save(obj, path)
    got = cg.load(path)
    for k in ("t", "s", "i", "b", "h", "e"):
        assert got[k].dtype == obj[k].numpy().dtype
        np.testing.assert_array_equal(got[k], obj[k].numpy())
    assert got["bf"].dtype == np.float32 and got["bf"].tolist() == [1.5, -3.25]
    assert got["meta"] == [1, 2.5, None, "x", (True, 3)]
    assert got["n"][7].tolist() == [1.0]


def test_cg_save_to_pt_is_read_by_torch_weights_only(tmp_path):
    m = _cg_model()
    path = tmp_path / "ours.pt"
    cg.save(m.state_dict(), path)
    sd = torch.load(path, weights_only=True)
    assert isinstance(sd, OrderedDict) and list(sd) == list(m.state_dict())
    tm = _torch_model()
    tm.load_state_dict(sd)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(sd[k].numpy(), v)
    nested = {"epoch": 3, "lr": [0.1, 0.01], "w": cg.ones(2, 3).T, "none": None,
              "flags": (True, False), "i": np.arange(4, dtype=np.int64)}
    cg.save(nested, tmp_path / "n.pth")
    back = torch.load(tmp_path / "n.pth", weights_only=True)
    assert back["epoch"] == 3 and back["lr"] == [0.1, 0.01] and back["none"] is None
    assert back["flags"] == (True, False) and back["i"].tolist() == [0, 1, 2, 3]
    assert back["w"].shape == (3, 2) and back["w"].dtype == torch.float32
    assert cg.load(tmp_path / "n.pth")["lr"] == [0.1, 0.01]


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_pickled_code_and_modules_are_refused(tmp_path):
    path = tmp_path / "module.pth"
    torch.save(torch.nn.Linear(2, 2), path)  # a pickled module, not a state dict
    with pytest.raises(ValueError, match="torch.nn.modules.linear.Linear"):
        cg.load(path)
    evil = tmp_path / "evil.pt"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("evil/data.pkl", pickle.dumps({"x": _Evil()}, protocol=2))
    with pytest.raises(ValueError, match="system"):
        cg.load(evil)


def test_a_tensor_record_reaching_past_its_storage_is_refused(tmp_path):
    path = tmp_path / "bad.pt"
    torch.save({"w": torch.ones(4)}, path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    pkl = next(n for n in members if n.endswith("data.pkl"))
    members[pkl] = members[pkl].replace(b"K\x04\x85", b"K\x09\x85")  # size (4,) -> (9,)
    with zipfile.ZipFile(path, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    with pytest.raises(ValueError, match="storage"):
        cg.load(path)


def test_a_torch_state_dict_loads_where_torch_cannot_be_imported(tmp_path):
    """The loader needs no torch: a fresh interpreter where ``import torch`` fails reads
    the file torch wrote, to the same values."""
    import subprocess
    import sys

    tm = _torch_model()
    path = tmp_path / "model.pth"
    torch.save(tm.state_dict(), path)
    want = {k: v.numpy() for k, v in tm.state_dict().items()}
    np.savez(tmp_path / "want.npz", **want)
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any `import torch` now raises
        "import numpy as np, convgrad as cg\n"
        f"sd = cg.load({str(path)!r}); want = np.load({str(tmp_path / 'want.npz')!r})\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "assert sorted(sd) == sorted(want.files)\n"
        "for k in want.files: np.testing.assert_array_equal(np.asarray(sd[k]), want[k])\n"
        "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


class _SuperRes(cg.nn.Module):
    """A user's model class (importable by name, as pickle needs)."""

    def __init__(self):
        super().__init__()
        self.conv = cg.nn.Conv2d(1, 9, 3, padding=1)
        self.shuffle = cg.nn.PixelShuffle(3)

    def forward(self, x):
        return self.shuffle(self.conv(x))


def test_a_whole_model_saved_loads_back_only_with_weights_only_false(tmp_path):
    """``torch.save(model, path)`` (pytorch/examples' super_resolution) and torch.load's
    arguments: by default the pickled model is refused as torch 2.6+ refuses it; with
    weights_only=False it comes back, a model of the same class computing the same
    values bit for bit (after a training step moved its parameters)."""
    model = _SuperRes()
    x = cg.tensor(np.random.default_rng(0).standard_normal((2, 1, 8, 8)).astype(np.float32))
    opt = cg.optim.Adam(model.parameters(), lr=0.1)
    model(x).pow(2).mean().backward()
    opt.step()
    path = tmp_path / "model_epoch_1.pth"
    cg.save(model, path)
    with pytest.raises(ValueError, match="weights_only=False"):
        cg.load(path)
    back = cg.load(path, map_location="cpu", weights_only=False)
    assert type(back) is _SuperRes and back is not model
    np.testing.assert_array_equal(back(x).data, model(x).data)
    sd = cg.load(path, map_location=lambda storage, loc: storage, weights_only=False)
    assert isinstance(sd, _SuperRes)


def test_load_takes_torchs_arguments(tmp_path):
    m = _cg_model()
    path = tmp_path / "sd.pt"
    cg.save(m.state_dict(), path)
    for where in ("cpu", cg.device("cpu"), torch.device("cpu"), {"cuda:0": "cpu"},
                  lambda storage, loc: storage):
        sd = cg.load(path, map_location=where, weights_only=True, mmap=True)
        assert list(sd) == list(m.state_dict())
    with pytest.raises(ValueError, match="map_location.*cuda"):
        cg.load(path, map_location="cuda:0")
    with pytest.raises(ValueError, match="map_location.*cuda"):
        cg.load(path, map_location={"cpu": "cuda"})
    with pytest.raises(TypeError, match="weights_only"):
        cg.load(path, weights_only="yes")
    with pytest.raises(ValueError, match="pickle_module"):
        cg.load(path, pickle_module=os)
    with pytest.raises(TypeError, match="neither plain state nor picklable"):
        cg.save({"f": lambda: 0}, tmp_path / "bad.pt")


def test_a_whole_model_loads_state_only_with_its_classes_allowed(tmp_path):
    """pytorch/examples' super_resolve.py: ``torch.load(f)`` of a whole model inside
    ``torch.serialization.safe_globals([Net, ReLU, Conv2d, PixelShuffle])`` named by
    their ``torch.nn.modules`` paths, from an open file. The arrays are ``.npy`` members
    (an array held twice comes back as one), the classes the only globals."""
    model = _SuperRes()
    model.tied = model.conv.weight  # a second reference to one parameter
    path = tmp_path / "model.pth"
    cg.save(model, path)
    with zipfile.ZipFile(path) as z:
        assert sum(n.endswith(".npy") for n in z.namelist()) == 2  # weight, bias
    allowed = [_SuperRes, cg.nn.modules.conv.Conv2d, cg.nn.modules.pixelshuffle.PixelShuffle]
    with open(path, "rb") as f, cg.serialization.safe_globals(allowed):
        back = cg.load(f)
    assert cg.serialization.get_safe_globals() == []
    assert back.tied is back.conv.weight
    x = cg.tensor(np.random.default_rng(1).standard_normal((1, 1, 6, 6)).astype(np.float32))
    np.testing.assert_array_equal(back(x).data, model(x).data)
    with pytest.raises(ValueError, match="PixelShuffle"):  # a class not allowed
        with cg.serialization.safe_globals(allowed[:2]):
            cg.load(path)
    buf = io.BytesIO()
    cg.save(model.state_dict(), buf)  # a file object: torch's format
    buf.seek(0)
    assert list(torch.load(buf, weights_only=True)) == list(model.state_dict())
