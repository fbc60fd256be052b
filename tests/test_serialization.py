"""Oracle: NumPy's own .npz reader (np.load) and the save/load round trip through a model."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad import nn


def _model(seed: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3, rng=seed), nn.ReLU(),
                         nn.ConvTranspose2d(4, 2, 2, stride=2, rng=seed), nn.Flatten(),
                         nn.Linear(2 * 8 * 8, 3, rng=seed))


def test_round_trip_restores_a_model(tmp_path):
    a, b = _model(0), _model(1)
    path = tmp_path / "weights.npz"
    cg.save(a.state_dict(), path)
    state = cg.load(path)
    assert list(state) == list(a.state_dict())
    for key, value in a.state_dict().items():
        assert state[key].dtype == np.float32
        np.testing.assert_array_equal(state[key], value)
    b.load_state_dict(state)
    x = cg.randn(2, 1, 6, 6, rng=3)
    np.testing.assert_array_equal(a(x).data, b(x).data)


def test_file_is_a_plain_npz_at_the_exact_path(tmp_path):
    path = tmp_path / "no_suffix.bin"
    cg.save({"w": cg.tensor([[1.0, 2.0]]), "n": np.arange(3, dtype=np.int64),
             "d": np.ones(2, np.float64)}, str(path))
    assert path.exists() and not (tmp_path / "no_suffix.bin.npz").exists()
    with np.load(path, allow_pickle=False) as f:
        assert sorted(f.files) == ["d", "n", "w"]
        np.testing.assert_array_equal(f["w"], np.array([[1.0, 2.0]], np.float32))
        assert f["n"].dtype == np.int64 and f["d"].dtype == np.float64


@pytest.mark.parametrize("cut", [10, 100, 0.5, -30])
def test_truncated_file_is_a_value_error_naming_the_path(tmp_path, cut):
    good = tmp_path / "good.npz"
    cg.save(_model(0).state_dict(), good)
    blob = good.read_bytes()
    n = int(len(blob) * cut) if isinstance(cut, float) else cut
    bad = tmp_path / "bad.npz"
    bad.write_bytes(blob[:n])
    with pytest.raises(ValueError, match="bad.npz"):
        cg.load(bad)


def test_other_malformed_files(tmp_path):
    text = tmp_path / "text.npz"
    text.write_text("not an archive")
    with pytest.raises(ValueError, match="text.npz.*not an .npz archive"):
        cg.load(text)
    npy = tmp_path / "single.npy"
    np.save(npy, np.ones(3))
    with pytest.raises(ValueError, match="single.npy"):
        cg.load(npy)
    pickled = tmp_path / "objects.npz"
    np.savez(pickled, a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError, match="objects.npz"):
        cg.load(pickled)
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        cg.load(tmp_path / "missing.npz")


def test_save_rejects_what_it_cannot_store(tmp_path):
    with pytest.raises(TypeError, match=r"obj\['fn'\] is a function"):
        cg.save({"fn": lambda x: x, "w": np.ones(2)}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match=r"obj\[1\] is a set"):
        cg.save([np.ones(2), {1, 2}], tmp_path / "x.npz")
    with pytest.raises(TypeError, match="key \\(1, 2\\)"):
        cg.save({(1, 2): 3}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="'s' has dtype"):
        cg.save({"s": np.array(["text"])}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match=r"obj\['c'\]\[0\] has dtype complex"):
        cg.save({"c": [np.ones(2, complex)], "n": 1}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="path="):
        cg.save({}, 42)
    assert not (tmp_path / "x.npz").exists()
