"""Oracle: NumPy's own readers (np.load, allow_pickle=False) and json for the nested format,
exact equality (values, types, float bits) for round trips, and files crafted byte by byte.

Nested checkpoints must round-trip every kind of value a training script saves, must
never unpickle, and must reject malformed structures with a ValueError naming the path.
"""

from __future__ import annotations

import io
import json
import math
import pickle
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import convgrad as cg
from convgrad import nn


def _sample():
    model = nn.Sequential(nn.Conv2d(1, 2, 3, rng=0), nn.ReLU(), nn.Linear(2, 2, rng=0))
    return {
        "model": model.state_dict(),
        "optimizer": {"state": {0: {"step": 10, "exp_avg": np.arange(3, dtype=np.float32)},
                                3: {"momentum_buffer": None}},
                      "param_groups": [{"lr": 0.1 / 3, "betas": (0.9, 0.999), "amsgrad": False,
                                        "params": [0, 1, 2, 3]}]},
        "scheduler": {"best": math.inf, "worst": -math.inf, "nan": math.nan, "zero": -0.0,
                      "tiny": 5e-324, "big": 2**80, "milestones": {2: 1, 5: 2}},
        "epoch": 7,
        "name": "unet \u2192 d\u00e9bruitage",
        "flags": [True, False, None],
        "scalars": (np.float32(1.5), np.int64(-3), np.bool_(True)),
        "tensor": cg.tensor([[1.0, 2.0]], requires_grad=True),
        "t64": cg.tensor([3.0], dtype=np.float64),
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "empty": np.zeros((0, 4), np.int16),
        "zero_d": np.array(2.5),
        "": "empty key",
    }


def _same(a, b, where="obj"):
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, cg.Tensor):
        assert a.requires_grad == b.requires_grad, where
        _same(a.data, b.data, where)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tobytes() == np.ascontiguousarray(b).tobytes(), where
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b), (where, a, b)
    else:
        assert a == b, where


@pytest.fixture
def no_pickle(monkeypatch):
    import convgrad.serialization  # noqa: F401  (loaded before pickle is taken away: its
    # torch reader subclasses pickle.Unpickler, to admit nothing but tensors)

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle was used while loading")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)


def test_round_trip_is_exact(tmp_path, no_pickle):
    obj = _sample()
    path = tmp_path / "ckpt.ckpt"  # (a .pt or .pth path is written in torch's format)
    cg.save(obj, path)
    back = cg.load(path)
    _same(back, {**obj, "model": OrderedDict(obj["model"])})
    assert isinstance(back["model"], OrderedDict)
    assert isinstance(back["scalars"][0], np.float32)
    back["fortran"][0, 0] = 9  # writeable, owning its memory


def test_file_is_an_npz_with_a_json_structure(tmp_path):
    obj = _sample()
    path = tmp_path / "ckpt.npz"
    cg.save(obj, path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        tree = json.loads(z.read("structure.json"))
    assert names[0] == "structure.json" and all(n.endswith(".npy") for n in names[1:])
    assert tree["format"] == "convgrad.checkpoint" and tree["version"] == 1
    with np.load(path, allow_pickle=False) as f:  # the arrays are plain .npy members
        arrays = [f[n[:-4]] for n in names[1:]]
    assert len(arrays) == len(names) - 1
    np.testing.assert_array_equal(arrays[0], obj["model"]["0.weight"])


def test_flat_state_dicts_stay_plain_archives(tmp_path):
    state = nn.Linear(3, 2, rng=0).state_dict()
    path = tmp_path / "w.npz"
    cg.save(state, path)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["bias.npy", "weight.npy"]
    back = cg.load(path)
    assert list(back) == list(state) and isinstance(back, OrderedDict)


def _good(tmp_path):
    path = tmp_path / "good.npz"
    cg.save({"w": np.arange(4.0), "step": 3, "opt": {"lr": 0.1, "t": (1, 2)}}, path)
    return path


def test_every_truncation_is_a_clean_error(tmp_path, no_pickle):
    data = _good(tmp_path).read_bytes()
    path = tmp_path / "cut.npz"
    for n in range(len(data)):
        path.write_bytes(data[:n])
        with pytest.raises(ValueError, match="cut.npz"):
            cg.load(path)


def test_every_flipped_byte_is_a_clean_error_or_a_faithful_load(tmp_path, no_pickle):
    data = _good(tmp_path).read_bytes()
    path = tmp_path / "flip.npz"
    for i in range(0, len(data)):
        corrupted = bytearray(data)
        corrupted[i] ^= 0xFF
        path.write_bytes(bytes(corrupted))
        try:
            out = cg.load(path)
        except ValueError as e:
            assert "flip.npz" in str(e)
            continue
        assert isinstance(out, dict)  # a byte the zip format ignores (e.g. a timestamp)


def _crafted(tmp_path, tree, arrays=(), extra=None):
    path = tmp_path / "crafted.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("structure.json", tree if isinstance(tree, bytes) else json.dumps(tree))
        for i, a in enumerate(arrays):
            buf = io.BytesIO()
            np.save(buf, a)
            z.writestr(f"arr_{i}.npy", buf.getvalue())
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return path


def _tree(root):
    return {"format": "convgrad.checkpoint", "version": 1, "root": root}


@pytest.mark.parametrize("tree,arrays,pattern", [
    (_tree({"array": 1}), [np.ones(2)], "array 1"),
    (_tree([{"array": 0}, {"array": 0}]), [np.ones(2)], "twice"),
    (_tree({"array": 0}), [np.ones(2), np.ones(3)], "not referred"),
    (_tree({"pickle": "x"}), [], "unexpected node"),
    (_tree({"tensor": 0}), [np.ones(2)], "requires_grad"),
    (_tree({"tensor": 0, "requires_grad": True}), [np.arange(2)], "cannot require grad"),
    (_tree({"tensor": 0, "requires_grad": False}), [np.arange(2.0).astype(np.float16)],
     "dtype float16"),
    (_tree({"scalar": 0}), [np.ones(2)], "shape"),
    (_tree({"dict": [[1, 2, 3]]}), [], "pair"),
    (_tree({"dict": [[[1], 2]]}), [], "key"),
    (_tree({"float": "pi"}), [], "unexpected node"),
    ({"format": "convgrad.checkpoint", "version": 99, "root": 1}, [], "version 99"),
    ({"format": "other", "root": 1}, [], "not a convgrad"),
    (b'{"format": "convgrad.checkpoint", "version": 1, "root": NaN}', [], "NaN"),
    (b"\xff\xfe not json", [], "not valid JSON"),
    (b"[" * 100000 + b"]" * 100000, [], ""),
])
def test_malformed_structures_are_clean_errors(tmp_path, no_pickle, tree, arrays, pattern):
    path = _crafted(tmp_path, tree, arrays)
    with pytest.raises(ValueError, match="crafted.npz") as info:
        cg.load(path)
    assert pattern in str(info.value)


def test_deep_nesting_in_a_valid_tree_is_a_clean_error(tmp_path):
    root = '{"tuple": [' * 5000 + "1" + "]}" * 5000
    text = '{"format": "convgrad.checkpoint", "version": 1, "root": ' + root + "}"
    path = _crafted(tmp_path, text.encode())
    with pytest.raises(ValueError, match="crafted.npz"):
        cg.load(path)


def test_structure_members_that_do_not_belong(tmp_path):
    path = _crafted(tmp_path, _tree({"array": 0}), [np.ones(2)], {"weights.npy": b"x"})
    with pytest.raises(ValueError, match="crafted.npz"):
        cg.load(path)
    path = _crafted(tmp_path, _tree(1), [], {"notes.txt": b"hello"})
    with pytest.raises(ValueError, match="not a .npy"):
        cg.load(path)


def test_integer_and_bool_tensors_round_trip(tmp_path):
    path = tmp_path / "ints.npz"
    state = {"idx": cg.tensor([3, 1, 2], dtype=np.int64), "mask": cg.tensor([True, False],
                                                                            dtype=bool)}
    cg.save(state, path)
    back = cg.load(path)
    for k, v in state.items():
        assert back[k].dtype == v.dtype and np.array_equal(back[k].data, v.data), k
