"""The real-network workloads N3-N6 and the breakdown; oracle: torch (same code, same
weights), torchvision's ResNet-18 and the example's U-Net for the architectures."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from convgrad.cli.bench import breakdown, inputs, networks, peers, report, runner, workloads
from convgrad.cli.bench.breakdown import torch_family
from convgrad.cli.bench.nets import initial_state, model_class

torch = pytest.importorskip("torch")

IDS = ("N3", "N4", "N5", "N6")


def _workload(wid: str) -> workloads.Workload:
    return next(w for w in workloads.WORKLOADS if w.id == wid)


def test_real_networks_as_benchmarks_md_says():
    n3, n4, n5, n6 = (_workload(i) for i in IDS)
    assert n3.x_shape == (8, 3, 128, 128) and n3.kwargs["lr"] == 0.1
    assert (n3.kwargs["momentum"], n3.kwargs["weight_decay"]) == (0.9, 1e-4)
    assert n5.x_shape == (2, 1, 64, 64, 64) and n5.kwargs["lr"] == 3e-4
    assert n6.x_shape == (32, 3, 64, 64) and n6.kwargs["betas"] == (0.5, 0.999)
    assert (n6.kwargs["nz"], n6.kwargs["ngf"], n6.kwargs["ndf"]) == (100, 64, 64)
    # N4: the example's defaults (batch, crop, width, depth, lr, weight decay, sigma)
    ex = _example().parser().parse_args([])
    assert n4.x_shape == (ex.batch_size, 1, ex.crop, ex.crop)
    assert (n4.kwargs["width"], n4.kwargs["depth"]) == (ex.width, ex.depth)
    assert (n4.kwargs["lr"], n4.kwargs["weight_decay"], n4.kwargs["sigma"]) == \
        (ex.lr, ex.weight_decay, ex.sigma)
    for w in (n3, n4, n5, n6):
        assert w.is_real_net and w.passes == ("step",)
        assert w.shrunk(True, False).x_shape[0] >= 2  # batch norm needs two values


def _example():
    path = pathlib.Path(__file__).parents[1] / "examples" / "train_unet.py"
    spec = importlib.util.spec_from_file_location("train_unet_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _shapes(model) -> dict:
    return {k: tuple(np.shape(v)) for k, v in model.state_dict().items()}


def test_n4_is_the_examples_unet():
    ex = _example().UNet(width=16, depth=2)
    ours = model_class("train_unet", "convgrad")(**_workload("N4").kwargs)
    assert _shapes(ours) == _shapes(ex)


def test_n3_is_torchvisions_resnet18():
    tv = pytest.importorskip("torchvision")
    ref = tv.models.resnet18(num_classes=10)
    ours = model_class("train_resnet18", "torch")(classes=10)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in ref.state_dict().items()}
    x = torch.randn(2, 3, 64, 64)
    ref.load_state_dict(ours.state_dict())
    ours.eval(), ref.eval()
    torch.testing.assert_close(ours(x), ref(x))


def test_dcgan_weights_follow_the_example():
    w = _workload("N6").shrunk(False, True)
    state = initial_state(w, np.random.default_rng(0))
    conv, bn_w, bn_b = state["G.main.0.weight"], state["G.main.1.weight"], state["G.main.1.bias"]
    assert abs(conv.mean()) < 0.01 and 0.015 < conv.std() < 0.025
    assert abs(bn_w.mean() - 1) < 0.01 and np.all(bn_b == 0)


@pytest.mark.parametrize("wid", IDS)
def test_real_network_step_agrees_with_torch_both_layouts(wid):
    w = _workload(wid).shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    impls = [peers.ConvgradImpl(), peers.TorchImpl(), peers.TorchChannelsLastImpl()]
    r = runner.run_pass(w, "step", impls, inp, runs=1, warmup=1)
    assert r.errors == {} and r.skipped == {}
    assert r.reference == "torch" and r.agree is True, report.mismatch_lines([r])
    names = networks.param_names(w)
    for peer in ("torch", "torch_cl"):
        errs = r.checks[peer]["max_rel_err"]
        assert set(errs) == set(networks.result_keys(w))
        assert all(errs[k] < runner.TOLERANCE for k in networks.loss_keys(w)), errs
        assert all(errs[f"param/{n}"] < runner.TOLERANCE for n in names), errs
        assert max(errs[f"grad/{n}"] for n in names) < 5e-3, errs
    # the very first step is timed on its own, for every implementation
    assert set(r.first) == {"convgrad", "torch", "torch_cl"}
    assert all(t > 0 for t in r.first.values())
    assert r.kernel_calls["conv_weight_grad"] >= 3
    assert "first ms" in report.format_first_steps([r], ["torch", "torch_cl"])
    js = report.pass_json(r, ["torch", "torch_cl"])
    assert set(js["first_step_ms"]) == {"convgrad", "torch", "torch_cl"}


def test_a_wrong_generator_gradient_fails_the_check():
    w = _workload("N6").shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    run, to_numpy = networks.convgrad_step(w, inp)
    ours = to_numpy(run())
    trun, tto_numpy = networks.torch_step(w, inp, channels_last=False)
    theirs = tto_numpy(trun())
    assert networks.check_step(w, inp, ours, theirs, runner.TOLERANCE)["agree"]
    ours["grad/G.main.3.weight"] = ours["grad/G.main.3.weight"] * np.float32(1.05)
    ours["loss_g"] = ours["loss_g"] * np.float32(1.01)
    c = networks.check_step(w, inp, ours, theirs, runner.TOLERANCE)
    bad = {k for k, e in c["max_rel_err"].items() if not e <= c["tolerance"][k]}
    assert bad == {"grad/G.main.3.weight", "loss_g"}


def test_torch_compile_peer_runs_the_real_networks_only():
    impl = peers.TorchCompileImpl()
    assert "N3-N6" in impl.unsupported(_workload("N1"), "step")
    assert impl.unsupported(_workload("N3"), "step") is None
    assert "torch_compile" in peers.PEERS


def test_torch_ops_grouped_into_convgrad_families():
    assert torch_family("aten::mkldnn_convolution") == "conv"
    assert torch_family("aten::convolution_backward") == "conv"
    assert torch_family("aten::native_batch_norm_backward") == "norm"
    assert torch_family("aten::max_pool2d_with_indices") == "pool"
    assert torch_family("aten::threshold_backward") == "activation"
    assert torch_family("aten::_foreach_add_") == "optim"
    assert torch_family("aten::add_") == "elementwise"
    assert torch_family("autograd::engine::evaluate_function: AddBackward0") == "other"


def test_breakdown_of_dcgan():
    w = _workload("N6").shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    ours = breakdown.breakdown(w, inp, "convgrad", warmup=1)
    theirs = breakdown.breakdown(w, inp, "torch", warmup=1)
    assert ours["layers"] == theirs["layers"] and ours["layers"][0] == "G.main.0"
    assert len(ours["layers"]) == 14 + 13
    # every layer ran forward (D three times a step), and the convolutions were profiled
    assert set(ours["fwd"]) == set(ours["layers"]) == set(theirs["fwd"])
    assert ours["family"]["conv"] > 0 and theirs["family"]["conv"] > 0
    assert sum(ours["family"].values()) == pytest.approx(ours["wall"], rel=1e-6)
    text = breakdown.format_breakdown(w, ours, theirs)
    assert "D.main.11" in text and "step (wall)" in text and "torch_cl" not in text
    # the channels_last peer: its own column, every layer timed
    theirs_cl = breakdown.breakdown(w, inp, "torch", warmup=1, channels_last=True)
    assert set(theirs_cl["fwd"]) == set(ours["layers"])
    text = breakdown.format_breakdown(w, ours, theirs, theirs_cl)
    head = next(line for line in text.splitlines() if line.startswith("layer"))
    assert head.split() == ["layer", "convgrad", "fwd", "torch", "fwd", "torch_cl", "fwd",
                            "convgrad", "bwd~", "torch", "bwd~", "torch_cl", "bwd~"]
    wall = next(line for line in text.splitlines() if line.startswith("step (wall)"))
    assert wall.split()[-1] == f"{theirs_cl['wall'] * 1e3:.1f}"


def test_breakdown_cli_rejects_a_small_workload(capsys):
    from convgrad.cli import main

    assert main(["bench", "--breakdown", "N1"]) == 2
    assert "N3-N6" in capsys.readouterr().err


def test_torch_spread_widens_a_gradient_bound_only_as_far_as_torch_itself_strays():
    w = _workload("N6").shrunk(quick=True, tiny=True)
    inp = inputs.make_inputs(w)
    trun, tto_numpy = networks.torch_step(w, inp, channels_last=False)
    theirs = tto_numpy(trun())
    key = "grad/G.main.3.weight"
    ours = dict(theirs)
    ours[key] = theirs[key] * np.float32(1.03)  # 3e-2 off: beyond GRAD_TOLERANCE
    c = networks.check_step(w, inp, ours, theirs, runner.TOLERANCE)
    assert not c["max_rel_err"][key] <= c["tolerance"][key]
    # torch's own NCHW/channels-last runs 2e-2 apart: twice that admits 3e-2
    c = networks.check_step(w, inp, ours, theirs, runner.TOLERANCE, spread={key: 2e-2})
    assert c["max_rel_err"][key] <= c["tolerance"][key] == 4e-2
    ours[key] = theirs[key] * np.float32(1.05)  # but not 5e-2
    c = networks.check_step(w, inp, ours, theirs, runner.TOLERANCE, spread={key: 2e-2})
    assert not c["max_rel_err"][key] <= c["tolerance"][key]
    first = {"torch": theirs, "torch_cl": {**theirs, key: theirs[key] * np.float32(1.02)}}
    assert abs(runner._torch_spread(first)[key] - 0.02) < 1e-6
