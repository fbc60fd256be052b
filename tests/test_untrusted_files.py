"""Oracle: files crafted byte by byte (zip, .npy headers, pickles) and torch.nn state_dict keys.

``cg.load`` must never unpickle (an object array or a pickle file is an error and its
payload never runs), must reject a truncated, corrupted or malformed archive with a
``ValueError`` naming the path (never another exception, never a huge allocation), and
``load_state_dict`` must report missing, unexpected and mis-shaped keys by name and
change nothing when it fails.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F

MARKER_NAME = "pwned"


class _Payload:
    """Unpickling this creates a marker file: proof that code ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture
def no_pickle(monkeypatch):
    """Any use of pickle while loading fails the test."""
    def forbidden(*args, **kwargs):
        raise AssertionError("pickle was used while loading an untrusted file")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)


def _npy_bytes(header: dict, body: bytes = b"") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + body


def _zip(path, members: dict[str, bytes], compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _good_file(tmp_path):
    path = tmp_path / "good.npz"
    cg.save(OrderedDict([("0.weight", np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)),
                         ("0.bias", np.array([0.5, -1.0], np.float32))]), path)
    return path


def _expect_clean_rejection(path):
    with pytest.raises(ValueError) as info:
        cg.load(path)
    assert str(path) in str(info.value) or path.name in str(info.value), str(info.value)


# ------------------------------------------------------------------------- no pickles
def test_round_trip(tmp_path):
    path = _good_file(tmp_path)
    out = cg.load(path)
    assert list(out) == ["0.weight", "0.bias"]
    np.testing.assert_array_equal(out["0.weight"], np.arange(24).reshape(2, 3, 2, 2))
    assert out["0.weight"].dtype == np.float32


def test_object_array_is_refused_and_its_payload_never_runs(tmp_path, no_pickle):
    marker = tmp_path / MARKER_NAME
    path = tmp_path / "evil.npz"
    with open(path, "wb") as f:
        np.savez(f, weight=np.ones(3), evil=np.array([_Payload(marker)], dtype=object))
    _expect_clean_rejection(path)
    assert not marker.exists()


def test_pickle_file_is_refused(tmp_path, no_pickle):
    marker = tmp_path / MARKER_NAME
    path = tmp_path / "state.npz"
    path.write_bytes(pickle.dumps({"weight": _Payload(marker)}))
    _expect_clean_rejection(path)
    assert not marker.exists()


def test_npy_with_object_header_is_refused(tmp_path, no_pickle):
    marker = tmp_path / MARKER_NAME
    body = pickle.dumps(np.array([_Payload(marker)], dtype=object))
    path = _zip(tmp_path / "obj.npz",
                {"w.npy": _npy_bytes({"descr": "|O", "fortran_order": False, "shape": (1,)},
                                     body)})
    _expect_clean_rejection(path)
    assert not marker.exists()


def test_plain_npy_file_is_refused(tmp_path):
    path = tmp_path / "w.npz"
    np.save(path.open("wb"), np.ones(3))
    _expect_clean_rejection(path)


# ----------------------------------------------------------------- broken archives
def test_every_truncation_is_a_clean_error(tmp_path):
    data = _good_file(tmp_path).read_bytes()
    path = tmp_path / "cut.npz"
    for n in range(len(data)):
        path.write_bytes(data[:n])
        _expect_clean_rejection(path)


def test_every_flipped_byte_is_a_clean_error_or_a_numeric_load(tmp_path):
    data = _good_file(tmp_path).read_bytes()
    path = tmp_path / "flip.npz"
    for i in range(len(data)):
        for value in (data[i] ^ 0xFF, 0):
            corrupted = bytearray(data)
            corrupted[i] = value
            path.write_bytes(bytes(corrupted))
            try:
                out = cg.load(path)
            except ValueError as e:
                assert path.name in str(e)
                continue
            assert all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf"
                       for a in out.values())


@pytest.mark.parametrize("header, body", [
    ({"descr": "<f8", "fortran_order": False, "shape": (10**9,)}, b"\0" * 64),  # short data
    ({"descr": "<f8", "fortran_order": False, "shape": (-1,)}, b""),
    ({"descr": "<f8", "fortran_order": False, "shape": (2, 3)}, b"\0" * 47),
    ({"descr": [("a", "<f4"), ("b", "<i4")], "fortran_order": False, "shape": (2,)},
     b"\0" * 16),  # structured
    ({"descr": "<c16", "fortran_order": False, "shape": (1,)}, b"\0" * 16),  # complex
    ({"descr": "<U3", "fortran_order": False, "shape": (1,)}, b"\0" * 12),  # text
])
def test_malformed_npy_headers_are_clean_errors(tmp_path, header, body):
    path = _zip(tmp_path / "bad.npz", {"w.npy": _npy_bytes(header, body)})
    _expect_clean_rejection(path)


def test_header_claiming_a_huge_shape_is_a_clean_error(tmp_path):
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
    path = _zip(tmp_path / "huge.npz", {"w.npy": _npy_bytes(header, b"\0" * 64)})
    _expect_clean_rejection(path)


def test_member_that_is_not_an_array_is_a_clean_error(tmp_path):
    buf = io.BytesIO()
    np.save(buf, np.ones(3))
    path = _zip(tmp_path / "mixed.npz", {"a.npy": buf.getvalue(), "notes.txt": b"hello"})
    _expect_clean_rejection(path)


def test_not_a_zip_and_odd_paths(tmp_path):
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    _expect_clean_rejection(empty)
    text = tmp_path / "text.npz"
    text.write_text("weight = [1, 2, 3]\n")
    _expect_clean_rejection(text)
    with pytest.raises(FileNotFoundError):
        cg.load(tmp_path / "missing.npz")
    with pytest.raises((FileNotFoundError, IsADirectoryError, ValueError)):
        cg.load(tmp_path)
    with pytest.raises(TypeError, match="path"):
        cg.load(123)


def test_compressed_archive_loads(tmp_path):
    """np.savez_compressed output is a valid state file too (deflate members)."""
    path = tmp_path / "z.npz"
    with open(path, "wb") as f:
        np.savez_compressed(f, w=np.linspace(0, 1, 50).reshape(5, 10))
    np.testing.assert_array_equal(cg.load(path)["w"], np.linspace(0, 1, 50).reshape(5, 10))


# ------------------------------------------------------------------ load_state_dict
def _models():
    """Our model and torch's (its state_dict keys and values are the oracle)."""
    torch = pytest.importorskip("torch")
    ours = cg.nn.Sequential(cg.nn.Conv2d(2, 3, 3, padding=1), cg.nn.ReLU(),
                            cg.nn.Conv2d(3, 1, 3))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.ReLU(),
                                 torch.nn.Conv2d(3, 1, 3)).float()  # whatever torch's default
    return ours, theirs


def test_torch_checkpoint_through_a_file(tmp_path):
    torch = pytest.importorskip("torch")
    ours, theirs = _models()
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    path = tmp_path / "torch.npz"
    cg.save(state, path)
    result = ours.load_state_dict(cg.load(path))
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    x = np.random.default_rng(0).standard_normal((1, 2, 8, 8)).astype(np.float32)
    want = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours(x).data, want, rtol=1e-5, atol=1e-5)
    assert F.conv2d(x, ours[0].weight).dtype == np.float32


def _snapshot(model):
    return {k: v.copy() for k, v in model.state_dict().items()}


def test_missing_and_unexpected_keys_are_named(tmp_path):
    ours, theirs = _models()
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    before = _snapshot(ours)
    broken = dict(state)
    del broken["2.bias"]
    broken["2.scale"] = np.ones(1, np.float32)
    path = tmp_path / "broken.npz"
    cg.save(broken, path)
    with pytest.raises(ValueError) as info:
        ours.load_state_dict(cg.load(path))
    msg = str(info.value)
    assert "'2.bias'" in msg and "missing" in msg, msg
    assert "'2.scale'" in msg and "unexpected" in msg, msg
    for k, v in _snapshot(ours).items():
        np.testing.assert_array_equal(v, before[k], err_msg="a failed load changed " + k)
    result = ours.load_state_dict(cg.load(path), strict=False)
    assert list(result.missing_keys) == ["2.bias"]
    assert list(result.unexpected_keys) == ["2.scale"]
    np.testing.assert_array_equal(ours[0].weight.data, state["0.weight"])


def test_mis_shaped_key_is_named_and_nothing_changes(tmp_path):
    ours, theirs = _models()
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    state["2.weight"] = np.ones((1, 3, 2, 2), np.float32)
    path = tmp_path / "shape.npz"
    cg.save(state, path)
    before = _snapshot(ours)
    with pytest.raises(ValueError) as info:
        ours.load_state_dict(cg.load(path))
    msg = str(info.value)
    assert "'2.weight'" in msg and "(1, 3, 2, 2)" in msg and "(1, 3, 3, 3)" in msg, msg
    for k, v in _snapshot(ours).items():
        np.testing.assert_array_equal(v, before[k], err_msg="a failed load changed " + k)


def test_state_values_of_the_wrong_kind(tmp_path):
    ours, _ = _models()
    state = ours.state_dict()
    state["0.bias"] = np.array(["a", "b", "c"])
    with pytest.raises(TypeError, match="0.bias"):
        ours.load_state_dict(state)
    with pytest.raises(TypeError):
        ours.load_state_dict([("0.bias", np.zeros(3))])
    with pytest.raises(TypeError, match="0.bias"):
        cg.save({"0.bias": np.array([object()])}, tmp_path / "x.npz")
