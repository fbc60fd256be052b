"""Oracle: PyTorch and pytorch-msssim results (agreement check) and the JSON schema."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from convgrad.cli.bench import inputs, networks, peers, report, runner, workloads
from convgrad.cli.bench.workloads import PASSES, TINY_ENV, WORKLOADS


def _workload(wid: str) -> workloads.Workload:
    return next(w for w in WORKLOADS if w.id == wid)


# ----------------------------------------------------------------------------- the table


def test_workload_output_shapes_match_torch():
    torch = pytest.importorskip("torch")
    for w in WORKLOADS:
        if not w.is_conv:
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
    inp = inputs.make_inputs(w)
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
    # torch brings its channels_last and torch.compile twins along; they run networks only
    assert data["implementations"] == ["convgrad", "torch", "torch_cl", "torch_compile"]
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
        assert "torch_cl" not in p["times_ms"] and "network" in p["skipped"]["torch_cl"]
        assert "torch_compile" not in p["times_ms"] and "N3-N6" in p["skipped"]["torch_compile"]
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


# ----------------------------------------------------------------------------- N1, N2, S1


def test_network_and_seed_workloads_in_the_default_set():
    ids = [w.id for w in workloads.select(None)]
    assert {"N1", "N2", "S1"} <= set(ids)
    assert [w.id for w in workloads.select("s1,n2,N1")] == ["S1", "N2", "N1"]
    n1, n2, s1 = _workload("N1"), _workload("N2"), _workload("S1")
    assert n1.passes == n2.passes == ("step",) and s1.passes == ("fwd", "fwd+bwd")
    assert n1.x_shape == (16, 3, 64, 64) and n2.x_shape == (8, 1, 96, 96)
    assert s1.x_shape == (1, 3, 600, 900)
    # quick: a quarter of the batch; S1 (batch 1) halves its sides instead
    assert n1.shrunk(True, False).x_shape == (4, 3, 64, 64)
    assert n2.shrunk(True, False).x_shape == (2, 1, 96, 96)
    assert s1.shrunk(True, False).x_shape == (1, 3, 300, 450)
    # tiny: batch 1 and small images that the operation still accepts
    assert n1.shrunk(False, True).x_shape == (1, 3, 16, 16)
    assert n2.shrunk(True, True).x_shape == (1, 1, 96, 96)  # 5-scale MS-SSIM needs > 64
    assert s1.shrunk(True, True).x_shape == (1, 3, 150, 225)
    assert n1.shape_text() == "x (16, 3, 64, 64), 10 classes"


def test_n2_is_the_demos_autoencoder_and_loss():
    from convgrad.cli.demo import training

    n2 = _workload("N2")
    assert n2.kwargs["win_size"] == training.WIN_SIZE
    assert n2.kwargs["lr"] == training.LEARNING_RATE
    assert n2.kwargs["channels"] == training.CHANNELS
    assert n2.kwargs["noise_sigma"] == training.NOISE_SIGMA
    assert (1, *n2.x_shape[1:]) == (1, 1, training.CROP, training.CROP)
    assert n2.x_shape[0] == training.BATCH


def test_s1_inputs_are_complementary_images():
    inp = inputs.make_inputs(_workload("S1").shrunk(False, True))
    assert inp.x.dtype == inp.y_target.dtype == np.float32
    assert 0 <= inp.y_target.min() and inp.y_target.max() < 1
    np.testing.assert_allclose(inp.x, 1 - inp.y_target, atol=1e-7)


def test_no_jax_or_mlx_training_step_peer():
    for impl in (peers.JaxImpl(), peers.MlxImpl()):
        for wid in ("N1", "N2"):
            assert "training-step" in impl.unsupported(_workload(wid), "step")
        assert "SSIM" in impl.unsupported(_workload("S1"), "fwd")
    assert "network" in peers.TorchChannelsLastImpl().unsupported(_workload("S1"), "fwd")


def _torch_peers() -> list:
    return [peers.ConvgradImpl(), peers.TorchImpl(), peers.TorchChannelsLastImpl()]


@pytest.mark.parametrize("wid", ["N1", "N2"])
def test_network_step_agrees_with_torch_both_layouts(wid):
    pytest.importorskip("torch")
    if wid == "N2":
        pytest.importorskip("pytorch_msssim")
    w = _workload(wid).shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    r = runner.run_pass(w, "step", _torch_peers(), inp, runs=2)
    assert r.errors == {} and r.skipped == {}
    assert r.reference == "torch" and r.agree is True and not r.failed
    names = networks.param_names(w)
    assert names[0] == ("features.0.weight" if wid == "N1" else "enc1.weight")
    for peer in ("torch", "torch_cl"):
        c = r.checks[peer]
        assert c["agree"] is True, (peer, c)
        errs = c["max_rel_err"]
        assert set(errs) == set(networks.result_keys(w))
        assert errs["loss"] < 1e-5
        assert all(errs[f"grad/{n}"] < 1e-3 for n in names), errs
        # the update is torch's Adam on convgrad's own gradients, to rounding
        assert all(errs[f"param/{n}"] < 1e-5 for n in names), errs
        assert c["tolerance"]["grad/" + names[0]] == networks.GRAD_TOLERANCE
        assert len(r.times[peer]) == 2 and all(t > 0 for t in r.times[peer])
    assert r.ratio("torch") > 0 and r.ratio("torch_cl") > 0
    # one weight gradient per model convolution (MS-SSIM's windows are constants)
    convs = 5 if wid == "N1" else 4
    assert r.kernel_calls["conv_weight_grad"] == convs
    assert r.kernel_calls["conv_forward"] >= convs


def test_network_step_starts_from_the_shared_weights_and_trains():
    torch = pytest.importorskip("torch")
    w = _workload("N1").shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    # the torch twin with the shared weights computes the same logits' loss as convgrad
    run_t, to_numpy_t = networks.torch_step(w, inp, channels_last=True)
    run_c, to_numpy_c = networks.convgrad_step(w, inp)
    first_t, first_c = to_numpy_t(run_t()), to_numpy_c(run_c())
    ref = torch.nn.functional.cross_entropy(
        torch.from_numpy(_torch_logits(inp)), torch.from_numpy(inp.y_target)).item()
    assert first_t["loss"] == pytest.approx(ref, rel=1e-5)
    assert first_c["loss"] == pytest.approx(ref, rel=1e-5)
    # every run is one more step: the loss of the same batch goes down
    losses = [float(run_c().item()) for _ in range(5)]
    assert losses[-1] < first_c["loss"]


def _torch_logits(inp: workloads.Inputs) -> np.ndarray:
    """N1's forward written out with torch.nn.functional and the shared weights."""
    import torch
    import torch.nn.functional as F

    p = {k: torch.from_numpy(v) for k, v in inp.params.items()}
    h = torch.from_numpy(inp.x)
    for i, (_, _, stride) in enumerate(networks.CLASSIFIER_CONVS):
        h = F.relu(F.conv2d(h, p[f"features.{2 * i}.weight"], p[f"features.{2 * i}.bias"],
                            stride=stride, padding=1))
    return F.linear(h.mean((2, 3)), p["fc.weight"], p["fc.bias"]).numpy()


class _WrongStep(peers.ConvgradImpl):
    """convgrad's training step with one reported array scaled by ``factor``."""

    def __init__(self, key: str, factor: float) -> None:
        self.key, self.factor = key, factor

    def prepare(self, w, pass_, inp):
        good = super().prepare(w, pass_, inp)

        def to_numpy(r):
            out = good.to_numpy(r)
            out[self.key] = out[self.key] * np.float32(self.factor)
            return out

        return peers.Prepared(good, to_numpy)


@pytest.mark.parametrize("key, factor, bad", [
    ("loss", 1.01, {"loss"}),
    # Adam's update does not change when a gradient is scaled, so only the gradient fails
    ("grad/features.4.weight", 1.05, {"grad/features.4.weight"}),
    # a gradient of the wrong sign: the update convgrad made no longer follows from it
    ("grad/fc.bias", -1.0, {"grad/fc.bias", "param/fc.bias"}),
    ("param/features.0.weight", 1.01, {"param/features.0.weight"}),
])
def test_network_step_check_catches_a_wrong_result(key, factor, bad):
    pytest.importorskip("torch")
    w = _workload("N1").shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    r = runner.run_pass(w, "step", [_WrongStep(key, factor), peers.TorchImpl()], inp, runs=1)
    assert r.agree is False and r.failed
    errs, tols = r.checks["torch"]["max_rel_err"], r.checks["torch"]["tolerance"]
    assert {k for k, e in errs.items() if not e <= tols[k]} == bad
    fails, _ = report.mismatch_lines([r])
    assert len(fails) == 1 and all(k in fails[0] for k in bad) and "tolerance" in fails[0]


def test_s1_agrees_with_pytorch_msssim():
    pytest.importorskip("torch")
    pytest.importorskip("pytorch_msssim")
    w = _workload("S1").shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    for p in w.passes:
        r = runner.run_pass(w, p, [peers.ConvgradImpl(), peers.TorchImpl()], inp, runs=1)
        assert r.agree is True and r.errors == {}
        errs = r.checks["torch"]["max_rel_err"]
        assert set(errs) == ({"y", "x"} if p == "fwd+bwd" else {"y"})
        assert all(e < 1e-4 for e in errs.values()), errs


def test_bench_networks_and_seed_end_to_end(monkeypatch, tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("pytorch_msssim")
    from convgrad.cli import main

    monkeypatch.setenv(TINY_ENV, "1")
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    argv = ["bench", "--quick", "--only", "N1,N2,S1", "--against", "torch,jax",
            "--json", str(out)]
    try:
        import matplotlib  # noqa: F401

        argv += ["--plot", str(png)]
    except ImportError:
        png = None
    assert main(argv) == 0
    text = capsys.readouterr().out
    rows = [ln.split() for ln in text.splitlines() if ln[:3] in ("N1 ", "N2 ", "S1 ")]
    assert [r[:2] for r in rows] == [["N1", "step"], ["N2", "step"], ["S1", "fwd"],
                                     ["S1", "fwd+bwd"]]
    assert all("ok" in r for r in rows), rows
    assert "cg/torch_cl" in text
    bounds = text[text.index("convolution bound"):].splitlines()[1:3]
    assert [ln.split(":")[0].strip() for ln in bounds] == ["N1", "N2"]
    assert all("x torch eager" in ln for ln in bounds), bounds

    data = json.loads(out.read_text())
    assert data["agreement"] is True and data["failures"] == []
    assert data["agreement_checked"] == 4
    by_id = {wl["id"]: wl for wl in data["workloads"]}
    assert list(by_id) == ["N1", "N2", "S1"]
    for wid in ("N1", "N2"):
        step = by_id[wid]["passes"]["step"]
        assert set(step["ratio"]) == {"torch", "torch_cl"}
        assert all(v > 0 for v in step["ratio"].values())
        assert "training-step" in step["skipped"]["jax"]
        assert step["checks"]["torch_cl"]["agree"] is True
        assert step["checks"]["torch"]["measure"]["loss"] == "relative max-norm"
        assert by_id[wid]["fwd_flops"] is None
        assert step["conv_gflop"] > 0
    s1 = by_id["S1"]["passes"]
    assert set(s1) == {"fwd", "fwd+bwd"} and set(s1["fwd+bwd"]["ratio"]) == {"torch"}
    assert s1["fwd+bwd"]["agree"] is True
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
    """The probe in a child with the tool's malloc policy (as ``measure`` runs it): in
    this process, freed memory that convgrad's heap policy keeps resident could serve
    the allocation without the resident set growing."""
    import subprocess

    from convgrad.cli.bench import memory

    probe = ("import numpy as np; from convgrad.cli.bench.memory import _peak_above; "
             "peak, method, out = _peak_above(lambda: np.ones(16 * 2 ** 20, np.float32)); "
             "print(peak, method.replace(' ', '_'), out.nbytes)")  # 64 MiB
    p = subprocess.run([sys.executable, "-c", probe], env=memory._child_env(),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    peak, method, nbytes = p.stdout.split()
    assert int(nbytes) == 64 * 2 ** 20
    assert 60 * 2 ** 20 <= int(peak) < 80 * 2 ** 20, (peak, method)


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


def test_conv_bound_is_the_flops_at_the_faster_ceiling():
    from convgrad.ops.profiler import Event

    r = runner.PassResult(_workload("N1"), "step")
    assert runner.conv_bound_ms(r, 200.0) is None  # no profiled step
    events = [Event("conv_forward", 0.002, 4 * 10**8, (), family="conv"),      # 200 GFLOP/s
              Event("conv_weight_grad", 0.001, 3 * 10**8, (), family="conv"),  # 300 GFLOP/s
              Event("conv_input_grad", 1e-7, 10**6, (), family="conv"),        # too short
              Event("conv_bias_grad", 1e-7, 10**8, (), family="conv"),         # a sum
              Event("relu_forward", 0.001, 10**9, (), family="eltwise")]       # no convolution
    runner._conv_work(r, events)
    assert r.conv_flops == 7 * 10**8 + 10**6
    assert r.conv_best_rate == pytest.approx(3e11)
    assert runner.conv_bound_ms(r, 200.0) == pytest.approx(r.conv_flops / 3e11 * 1e3)
    assert runner.conv_bound_ms(r, 500.0) == pytest.approx(r.conv_flops / 5e11 * 1e3)
    r.times = {"convgrad": [0.004], "torch": [0.003]}
    text = report.format_bounds([r], {"gflops": 200.0})
    assert "N1: 0.70 GFLOP at 300 GFLOP/s: >= 2.3 ms = 0.78x torch eager" in text
    assert "0.8x not ruled out" in text
    r.times["torch"] = [0.0025]
    assert "0.8x ruled out" in report.format_bounds([r], {"gflops": 200.0})


def test_network_conv_flops_count_every_pass_that_ran():
    """N1's profiled step: forward, weight gradient and input gradient of each convolution,
    but no input gradient into the image (the oracle: the layers' shapes and the FLOP
    formula, counted by hand)."""
    w = _workload("N1").shrunk(quick=True, tiny=True)
    r = runner.run_pass(w, "step", [peers.ConvgradImpl()], inputs.make_inputs(w), runs=1)
    n, _, h, wd = w.x_shape
    fwd = []
    for c_in, c_out, stride in networks.CLASSIFIER_CONVS:
        h, wd = -(-h // stride), -(-wd // stride)
        fwd.append(2 * n * c_out * h * wd * c_in * 9)
    assert r.conv_flops == 3 * sum(fwd) - fwd[0]
    assert max(fwd) < runner.BOUND_MIN_FLOPS and r.conv_best_rate == 0  # none long enough


def test_each_implementation_is_prepared_right_before_its_own_first_run(monkeypatch):
    """A peer's preparation (torch.compile's starts compile workers) must not run into
    another implementation's first, timed-as-first step: prepare, first run, prepare,
    first run, ... then the interleaved timing."""
    pytest.importorskip("torch")
    monkeypatch.setenv(TINY_ENV, "1")
    w = _workload("W2").shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    log: list[tuple[str, str]] = []

    def recorded(base):
        class Recorded(base):
            def prepare(self, w, pass_, inp):
                log.append(("prepare", self.name))
                good = super().prepare(w, pass_, inp)

                def run():
                    log.append(("run", self.name))
                    return good()
                return peers.Prepared(run, good.to_numpy)
        return Recorded()

    monkeypatch.setattr(runner.heap, "release_free", lambda: log.append(("release", "")))
    r = runner.run_pass(w, "fwd+bwd", [recorded(peers.ConvgradImpl), recorded(peers.TorchImpl)],
                        inp, runs=2, warmup=1)
    assert r.agree is True
    # the heap's free memory released right before each first run: no first step
    # inherits the pages an earlier run faulted in
    assert log[:6] == [("prepare", "convgrad"), ("release", ""), ("run", "convgrad"),
                       ("prepare", "torch"), ("release", ""), ("run", "torch")], log[:8]
    assert set(r.first) == {"convgrad", "torch"}
