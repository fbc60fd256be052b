"""Oracle: PyTorch results (agreement check) and the JSON schema."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

from convgrad.cli.bench import peers, report, runner, workloads
from convgrad.cli.bench.workloads import PASSES, TINY_ENV, WORKLOADS


def _workload(wid: str) -> workloads.Workload:
    return next(w for w in WORKLOADS if w.id == wid)


# ----------------------------------------------------------------------------- the table


def test_workload_output_shapes_match_torch():
    torch = pytest.importorskip("torch")
    for w in WORKLOADS:
        if w.op == "ms_ssim":
            continue
        x = torch.empty(w.x_shape, device="meta")
        wt = torch.empty(w.w_shape, device="meta")
        y = getattr(torch.nn.functional, w.op)(x, wt, None, **w.kwargs)
        assert tuple(y.shape) == w.y_shape(), w.id


def test_forward_flops_formula():
    # 2 * N * C_out * prod(out_spatial) * C_in / groups * prod(kernel)
    assert _workload("W1").fwd_flops() == 2 * 8 * 64 * 56 * 56 * 64 * 9
    assert _workload("W2").fwd_flops() == 2 * 8 * 64 * 28 * 28 * 256
    assert _workload("W4").fwd_flops() == 2 * 8 * 128 * 56 * 56 * 1 * 9
    assert _workload("W8").fwd_flops() == 2 * 8 * 128 * 28 * 28 * 16 * 9
    # transposed: every input element meets every tap once
    assert _workload("W5").fwd_flops() == 2 * 8 * 64 * 32 * 32 * 32 * 16
    assert _workload("MS").fwd_flops() is None


def test_select_rejects_unknown_ids():
    assert [w.id for w in workloads.select("w2, W1")] == ["W2", "W1"]
    with pytest.raises(ValueError, match="W9"):
        workloads.select("W1,W9")


# ----------------------------------------------------------------------------- the checker


def test_check_agreement_tolerance_and_shapes():
    rng = np.random.default_rng(1)
    ref = {"y": rng.standard_normal((3, 4)).astype(np.float32),
           "x": rng.standard_normal((5,)).astype(np.float32)}
    scale = float(np.abs(ref["y"]).max())
    ok, errs = runner.check_agreement({k: v.copy() for k, v in ref.items()}, ref)
    assert ok and all(e == 0.0 for e in errs.values())

    close = {"y": ref["y"] + np.float32(5e-4 * scale), "x": ref["x"]}
    assert runner.check_agreement(close, ref)[0]

    far = {"y": ref["y"] + np.float32(2e-3 * scale), "x": ref["x"]}
    ok, errs = runner.check_agreement(far, ref)
    assert not ok and errs["y"] == pytest.approx(2e-3, rel=1e-2) and errs["x"] == 0.0

    assert not runner.check_agreement({"y": ref["y"]}, ref)[0]  # a gradient missing
    assert not runner.check_agreement({"y": ref["y"].T, "x": ref["x"]}, ref)[0]  # shape
    nan = ref["x"].copy()
    nan[0] = np.nan
    assert not runner.check_agreement({"y": ref["y"], "x": nan}, ref)[0]
    assert not runner.check_agreement({}, {})[0]  # nothing compared is not agreement


def _off_by_one_percent(good: peers.Prepared, key: str) -> peers.Prepared:
    """The same pass with one result deliberately off by 1%."""

    def to_numpy(r):
        out = good.to_numpy(r)
        if key in out:
            out[key] = out[key] * np.float32(1.01)
        return out

    return peers.Prepared(good, to_numpy)


class _WrongConvgrad(peers.ConvgradImpl):
    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, w, pass_, inp):
        return _off_by_one_percent(super().prepare(w, pass_, inp), self.key)


@pytest.mark.parametrize("key", ["y", "x", "weight", "bias"])
def test_wrong_implementation_is_caught(monkeypatch, key):
    pytest.importorskip("torch")
    monkeypatch.setenv(TINY_ENV, "1")
    w = _workload("W2").shrunk(quick=True, tiny=True)
    inp = workloads.make_inputs(w)
    r = runner.run_pass(w, "fwd+bwd", [_WrongConvgrad(key), peers.TorchImpl()], inp, runs=1)
    assert r.reference == "torch"
    assert r.agree is False and r.failed
    errs = r.checks["torch"]["max_rel_err"]
    assert errs[key] > 5e-3
    assert all(e < 1e-4 for k, e in errs.items() if k != key)
    fails, _ = report.mismatch_lines([r])
    assert len(fails) == 1 and "torch" in fails[0] and key in fails[0]

    good = runner.run_pass(w, "fwd+bwd", [peers.ConvgradImpl(), peers.TorchImpl()], inp, runs=1)
    assert good.agree is True and not good.failed


def test_cli_exit_code_nonzero_on_mismatch(monkeypatch, tmp_path, capsys):
    pytest.importorskip("torch")
    from convgrad.cli import main

    monkeypatch.setenv(TINY_ENV, "1")
    right = peers.ConvgradImpl.prepare
    monkeypatch.setattr(peers.ConvgradImpl, "prepare",
                        lambda self, w, p, inp: _off_by_one_percent(right(self, w, p, inp), "x"))
    out = tmp_path / "bench.json"
    rc = main(["bench", "--quick", "--only", "W2", "--against", "torch", "--json", str(out)])
    assert rc == 1
    text = capsys.readouterr().out
    assert "MISMATCH" in text and "AGREEMENT FAILED" in text
    data = json.loads(out.read_text())
    assert data["agreement"] is False
    assert data["workloads"][0]["passes"]["fwd+bwd"]["agree"] is False
    assert data["workloads"][0]["passes"]["fwd"]["agree"] is True  # forward has no "x"


# ----------------------------------------------------------------------------- end to end


def test_bench_quick_w2_against_torch(monkeypatch, tmp_path, capsys):
    pytest.importorskip("torch")
    from convgrad.cli import main

    monkeypatch.setenv(TINY_ENV, "1")
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    argv = ["bench", "--quick", "--only", "W2", "--against", "torch", "--json", str(out)]
    try:
        import matplotlib  # noqa: F401

        argv += ["--plot", str(png)]
    except ImportError:
        png = None
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "cg/torch" in text and "W2" in text and "note: --quick" in text

    data = json.loads(out.read_text())
    assert data["schema"] == report.SCHEMA
    assert data["agreement"] is True and data["agreement_checked"] == len(PASSES)
    assert data["failures"] == [] and data["tolerance"] == runner.TOLERANCE
    assert data["quick"] is True and data["runs"] == 3
    assert data["implementations"] == ["convgrad", "torch"]
    env = data["environment"]
    for k in ("numpy", "torch", "convgrad"):
        assert env["versions"][k]
    assert env["cpu_count"] >= 1 and env["cpu_model"]
    assert "OPENBLAS_CORETYPE" in env["env"] and "OPENBLAS_L2_SIZE" in env["env"]
    assert all({"internal_api", "architecture", "num_threads"} <= set(p)
               for p in env["threadpool_info"])
    assert data["matmul_peak"]["gflops"] > 0

    (wl,) = data["workloads"]
    assert wl["id"] == "W2" and wl["op"] == "conv2d" and wl["fwd_flops"] > 0
    assert set(wl["passes"]) == set(PASSES)
    for name, p in wl["passes"].items():
        for impl in ("convgrad", "torch"):
            times = p["times_ms"][impl]
            assert len(times) == 3 and all(t > 0 for t in times), (name, impl)
            assert p["median_ms"][impl] > 0
        assert p["ratio"]["torch"] > 0
        assert p["agree"] is True and p["reference"] == "torch"
        errs = p["checks"]["torch"]["max_rel_err"]
        assert errs and all(e is not None and e <= runner.TOLERANCE for e in errs.values())
        assert "conv_forward" in p["algorithms"] and p["algorithms"]["conv_forward"]
        assert p["errors"] == {}
    fwd = wl["passes"]["fwd"]
    assert fwd["gflops"]["convgrad"] > 0 and fwd["gflops"]["torch"] > 0
    assert set(fwd["checks"]["torch"]["max_rel_err"]) == {"y"}
    assert set(wl["passes"]["fwd+bwd"]["checks"]["torch"]["max_rel_err"]) == {
        "y", "x", "weight", "bias"}
    # conditional gradients, as the profiler saw them
    calls = {name: p["kernel_calls"] for name, p in wl["passes"].items()}
    assert "conv_input_grad" not in calls["fwd"] and "conv_weight_grad" not in calls["fwd"]
    assert "conv_weight_grad" not in calls["fwd+bwd_input"]
    assert "conv_input_grad" not in calls["fwd+bwd_weight"]
    assert calls["fwd+bwd"]["conv_input_grad"] == 1 == calls["fwd+bwd"]["conv_weight_grad"]
    assert set(data["gflops_vs_matmul"]["W2"]) == {"convgrad", "torch"}
    if png is not None:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_peer_is_a_usage_error(capsys):
    from convgrad.cli import main

    assert main(["bench", "--against", "tensorflow"]) == 2
    assert "tensorflow" in capsys.readouterr().err


def test_missing_peer_is_skipped(monkeypatch, tmp_path, capsys):
    from convgrad.cli import main

    monkeypatch.setenv(TINY_ENV, "1")
    monkeypatch.setitem(sys.modules, "mlx", None)  # import mlx.core fails
    monkeypatch.setitem(sys.modules, "mlx.core", None)
    out = tmp_path / "b.json"
    assert main(["bench", "--quick", "--only", "W2", "--against", "mlx", "--json", str(out)]) == 0
    assert "skipping peer mlx" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert "mlx" in data["skipped_peers"] and data["implementations"] == ["convgrad"]
    assert data["agreement_checked"] == 0


# ----------------------------------------------------------------------------- memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_memory_peak_sees_an_allocation():
    from convgrad.cli.bench.memory import _peak_above

    peak, method, out = _peak_above(lambda: np.ones(16 * 2 ** 20, np.float32))  # 64 MiB
    assert out.nbytes == 64 * 2 ** 20
    assert peak >= 60 * 2 ** 20, (peak, method)
    assert math.isfinite(peak)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_memory_cli_runs_convgrad_in_a_subprocess(monkeypatch, tmp_path, capsys):
    from convgrad.cli.bench import memory

    monkeypatch.setenv(TINY_ENV, "1")  # inherited by the child
    out = tmp_path / "mem.json"
    assert memory.main(["--impl", "convgrad", "--quick", "--json", str(out)]) == 0
    assert "steady MiB" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())["results"]
    assert row["impl"] == "convgrad" and row["workload"] == "W1" and row["method"]
    # the output and three gradients are held at the end, so the peak is at least that
    assert row["result_bytes"] > 0 and row["first_bytes"] >= row["result_bytes"]
