"""``convgrad bench --cold-start``: a network's first step in fresh processes; oracle: the
same first step taken in this process (its loss, which the child must reproduce), torch
for torch's child."""

from __future__ import annotations

import numpy as np
import pytest

from convgrad.cli.bench import cold, inputs, networks, workloads

torch = pytest.importorskip("torch")


def _workload(wid: str) -> workloads.Workload:
    w = next(w for w in workloads.WORKLOADS if w.id == wid)
    return w.shrunk(quick=True, tiny=True)


def test_inputs_survive_the_file(tmp_path):
    w = _workload("N1")
    inp = inputs.make_inputs(w)
    path = str(tmp_path / "in.npz")
    cold.save_inputs(inp, path)
    back = cold.load_inputs(path)
    assert np.array_equal(back.x, inp.x) and back.x.dtype == inp.x.dtype
    assert np.array_equal(back.y_target, inp.y_target) and back.y_target.dtype == np.int64
    assert back.w is None and set(back.params) == set(inp.params)
    assert all(np.array_equal(back.params[k], v) for k, v in inp.params.items())


@pytest.mark.parametrize("wid", ["N1", "N6"])
def test_each_child_takes_the_first_step_this_process_takes(wid):
    """The fresh processes compute the same first step (the loss at the shared initial
    weights) as convgrad and torch in this process, and report positive times; DCGAN
    shrunk as the suite shrinks it, to 8 filters (the child shrinks it alike)."""
    w = _workload(wid)
    inp = inputs.make_inputs(w)
    r = cold.cold_start(w, inp, workloads.THREADS, runs=1, shrunk=(True, True))
    run, _ = networks.convgrad_step(w, inp)
    ours = _loss(run())
    trun, _ = networks.torch_step(w, inp, channels_last=False)
    theirs = _loss(trun())
    assert r["convgrad"]["loss"] == pytest.approx(ours, rel=1e-6)
    assert r["torch"]["loss"] == pytest.approx(theirs, rel=1e-6)
    for lib in ("convgrad", "torch"):
        assert r[lib]["import"] > 0 and r[lib]["step"] > 0
        assert r[lib]["total"] == pytest.approx(r[lib]["import"] + r[lib]["step"])
    text = cold.format_cold_start([(wid, r)])
    assert text.splitlines()[1].split()[0] == f"{wid}:"
    assert text.splitlines()[1].split()[-1] == f"{r['convgrad']['total'] / r['torch']['total']:.2f}"


def _loss(out) -> float:
    return float((out["loss"] if isinstance(out, dict) else out).item())


def test_a_failing_child_is_reported():
    w = _workload("N1")
    with pytest.raises(RuntimeError, match="child process failed"):
        cold._child("convgrad", w.id, 2, "/nonexistent/inputs.npz")


def test_cold_start_cli_rejects_a_single_convolution(capsys):
    from convgrad.cli import main

    assert main(["bench", "--cold-start", "W1"]) == 2
    assert "N1-N6" in capsys.readouterr().err
    assert main(["bench", "--cold-start", "N9"]) == 2
    assert "unknown workload" in capsys.readouterr().err
