"""Oracle: torch 2.13 models and the safetensors package's torch API (save_file/load_file):
weights move both ways and give torch's outputs; malformed files are clean errors."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")

import convgrad as cg  # noqa: E402
from convgrad import nn  # noqa: E402


def _torch_model():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, 4, 3, stride=2), torch.nn.Tanh(),
                               torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 5))


def _ours(rng=None):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, rng=rng), nn.ReLU(),
                         nn.Conv2d(8, 4, 3, stride=2, rng=rng), nn.Tanh(), nn.Flatten(),
                         nn.Linear(4 * 3 * 3, 5, rng=rng))


X = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)


def test_torch_file_loads_into_convgrad_and_gives_torchs_outputs(tmp_path):
    torch.manual_seed(0)
    theirs = _torch_model()
    path = tmp_path / "torch_weights.safetensors"
    st_torch.save_file(theirs.state_dict(), str(path))
    ours = _ours()
    state = cg.load(path)
    assert sorted(state) == sorted(theirs.state_dict())
    assert all(v.dtype == np.float32 and v.flags.writeable for v in state.values())
    result = ours.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    want = theirs(torch.from_numpy(X)).detach().numpy()
    np.testing.assert_allclose(ours(X).data, want, rtol=1e-5, atol=1e-6)


def test_convgrad_file_loads_into_torch_and_gives_the_same_outputs(tmp_path):
    ours = _ours(rng=3)
    path = tmp_path / "ours.safetensors"
    cg.save(ours.state_dict(), path)
    theirs = _torch_model()
    loaded = st_torch.load_file(str(path))
    theirs.load_state_dict(loaded)
    for key, value in ours.state_dict().items():
        np.testing.assert_array_equal(loaded[key].numpy(), value)
    want = theirs(torch.from_numpy(X)).detach().numpy()
    np.testing.assert_allclose(ours(X).data, want, rtol=1e-5, atol=1e-6)


def test_dtypes_and_tensors_round_trip(tmp_path):
    state = {"f64": np.linspace(0, 1, 7), "i64": np.arange(3, dtype=np.int64),
             "f16": np.ones((2, 2), np.float16), "flag": np.array([True, False]),
             "t": cg.tensor([1.5, 2.5]), "scalar": np.array(4.0, np.float32)}
    path = tmp_path / "mixed.safetensors"
    cg.save(state, path)
    back = cg.load(path)
    theirs = st_torch.load_file(str(path))
    for key, value in state.items():
        want = np.asarray(value.data if isinstance(value, cg.Tensor) else value)
        assert back[key].dtype == want.dtype and back[key].shape == want.shape, key
        np.testing.assert_array_equal(back[key], want)
        np.testing.assert_array_equal(theirs[key].numpy(), want)


def test_bfloat16_is_a_clean_error_naming_the_tensor(tmp_path):
    path = tmp_path / "bf16.safetensors"
    st_torch.save_file({"w": torch.ones(2, dtype=torch.bfloat16)}, str(path))
    with pytest.raises(ValueError, match="'w'.*BF16"):
        cg.load(path)


def test_what_safetensors_cannot_hold_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="flat mapping"):
        cg.save([np.ones(2)], tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="'opt' is a dict"):
        cg.save({"opt": {"lr": 0.1}}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="'s' has dtype"):
        cg.save({"s": np.array(["a"])}, tmp_path / "x.safetensors")


def test_truncated_and_crafted_files_are_clean_errors(tmp_path):
    good = tmp_path / "good.safetensors"
    cg.save(_ours(rng=0).state_dict(), good)
    data = good.read_bytes()
    bad = tmp_path / "bad.safetensors"
    for n in list(range(0, 64)) + list(range(64, len(data), 97)):
        bad.write_bytes(data[:n])
        with pytest.raises(ValueError, match="bad.safetensors"):
            cg.load(bad)
    header = json.dumps({"w": {"dtype": "F32", "shape": [10**9, 10**9],
                               "data_offsets": [0, 16]}}).encode()
    bad.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)
    with pytest.raises(ValueError, match="bad.safetensors"):
        cg.load(bad)
    bad.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    with pytest.raises(ValueError, match="bad.safetensors"):
        cg.load(bad)
