"""A convolution weight's gradient computed when its ``.grad`` is read (and never when
``zero_grad`` drops it first).  Oracles: torch float64 (the values after training steps)
and convgrad with deferral off (the same bits); the profiler counts the weight-gradient
kernels that ran."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import convgrad as cg
from convgrad.autograd import deferred
from convgrad.ops import onednn_available

torch = pytest.importorskip("torch")

rng = np.random.default_rng(11)


@pytest.fixture
def eager():
    """Deferral off for the test's body (restored after)."""
    saved = deferred.ENABLED
    deferred.ENABLED = False
    yield
    deferred.ENABLED = saved


def _gan(lib, dtype="float64"):
    """A small DCGAN: G transposes 8 -> 3 channels up to 8x8, D convolves back to 1."""
    nn = lib.nn
    G = nn.Sequential(nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False), nn.BatchNorm2d(16),
                      nn.ReLU(), nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False), nn.Tanh())
    D = nn.Sequential(nn.Conv2d(3, 16, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
                      nn.Conv2d(16, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.LeakyReLU(0.2),
                      nn.Conv2d(32, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    return (G.double(), D.double()) if dtype == "float64" else (G.float(), D.float())


def _gan_steps(lib, state, real, z, steps, counts=None, dtype="float64", ran=None):
    """``steps`` DCGAN steps (pytorch/examples' loop: D on real and fake, then G, whose
    backward adds to D's gradients what the next step's zero_grad drops); the weights."""
    G, D = _gan(lib, dtype)
    for net, prefix in ((G, "G."), (D, "D.")):
        net.load_state_dict({k[2:]: lib.tensor(v) for k, v in state.items()
                             if k.startswith(prefix)})
    # (SGD: Adam would scale the rounding noise of D's bias before its BatchNorm, whose
    # gradient is zero, up to a step of lr)
    opt_d = lib.optim.SGD(D.parameters(), lr=0.05, momentum=0.5)
    opt_g = lib.optim.SGD(G.parameters(), lr=0.05, momentum=0.5)
    bce = lib.nn.BCELoss()
    real, z = lib.tensor(real.astype(dtype)), lib.tensor(z.astype(dtype))
    ones, zeros = lib.ones(real.shape[0], dtype=real.dtype), lib.zeros(real.shape[0],
                                                                      dtype=real.dtype)
    for _ in range(steps):
        D.zero_grad()  # pytorch/examples' loop: two backward calls, then the step
        bce(D(real).view(-1), ones).backward()
        fake = G(z)
        bce(D(fake.detach()).view(-1), zeros).backward()
        opt_d.step()
        opt_g.zero_grad()
        if counts is not None:
            with cg.profile() as prof:
                bce(D(fake).view(-1), ones).backward()
                opt_g.step()
            counts.append(prof.count("conv_weight_grad") + prof.count("conv_input_grad"))
            if ran is not None:
                ran.update(e.algorithm.split(":")[0] for e in prof.of("conv"))
        else:
            bce(D(fake).view(-1), ones).backward()
            opt_g.step()
    arr = (lambda v: v.numpy().copy()) if lib is torch else np.array  # (ndarrays in convgrad)
    out = {f"G.{k}": arr(v) for k, v in G.state_dict().items()}
    out.update({f"D.{k}": arr(v) for k, v in D.state_dict().items()})
    return out


def _gan_state():
    G, D = _gan(torch)
    state = {f"G.{k}": v.detach().numpy().copy() for k, v in G.state_dict().items()}
    state.update({f"D.{k}": v.detach().numpy().copy() for k, v in D.state_dict().items()})
    return state


def test_a_gan_step_matches_torch_and_skips_the_gradients_it_drops():
    torch.manual_seed(0)
    state = _gan_state()
    real = np.tanh(rng.standard_normal((4, 3, 8, 8)))
    z = rng.standard_normal((4, 8, 1, 1))
    want = _gan_steps(torch, state, real, z, 3)
    counts: list[int] = []
    got = _gan_steps(cg, state, real, z, 3, counts)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-9, atol=1e-11, err_msg=k)
    # G's step: D's input gradients (3 convolutions, down to the fake) and G's two weight
    # gradients (its transposed convolutions' input gradients are forward convolutions);
    # D's 3 weight gradients never run
    assert counts == [3 + 2] * 3


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_same_bits_as_computing_them_during_backward(eager, dtype):
    """float64 runs the NumPy engine; float32 the fast path (oneDNN where it loaded,
    asserted through the profiler)."""
    torch.manual_seed(1)
    state = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in _gan_state().items()}
    real = np.tanh(rng.standard_normal((4, 3, 8, 8)))
    z = rng.standard_normal((4, 8, 1, 1))
    counts_eager: list[int] = []
    want = _gan_steps(cg, state, real, z, 2, counts_eager, dtype)
    deferred.ENABLED = True
    counts: list[int] = []
    ran: set[str] = set()
    got = _gan_steps(cg, state, real, z, 2, counts, dtype, ran)
    for k in want:
        assert got[k].dtype.kind != "f" or got[k].dtype == np.dtype(dtype), k
        assert np.array_equal(got[k], want[k]), k
    assert counts_eager == [c + 3 for c in counts]  # D's three weight gradients
    if dtype == "float32" and onednn_available():
        assert "onednn" in ran, ran
    else:
        assert "onednn" not in ran and ran, ran  # the NumPy engine's algorithms


def _two_layers():
    """x -> conv1 -> relu -> conv2 -> sum; conv2 reads an activation (deferred), conv1
    the batch (computed during backward)."""
    c1 = cg.nn.Conv2d(2, 4, 3, padding=1).double()
    c2 = cg.nn.Conv2d(4, 3, 3, padding=1).double()
    x = cg.tensor(rng.standard_normal((2, 2, 6, 6)))
    return c1, c2, x


def _torch_grads(c1, c2, x, times=1):
    t1 = torch.nn.Conv2d(2, 4, 3, padding=1).double()
    t2 = torch.nn.Conv2d(4, 3, 3, padding=1).double()
    with torch.no_grad():
        for t, c in ((t1, c1), (t2, c2)):
            t.weight.copy_(torch.from_numpy(np.array(c.weight.data)))
            t.bias.copy_(torch.from_numpy(np.array(c.bias.data)))
    for _ in range(times):
        (t2(torch.relu(t1(torch.from_numpy(np.array(x.data))))) ** 2).sum().backward()
    return t1.weight.grad.numpy(), t2.weight.grad.numpy()


def test_reading_grad_computes_it_there_once():
    c1, c2, x = _two_layers()
    with cg.profile() as prof:
        (c2(cg.relu(c1(x))) ** 2).sum().backward()
    assert prof.count("conv_weight_grad") == 1  # conv1's: its input is the caller's batch
    assert deferred.pending(c2.weight) and not deferred.pending(c1.weight)
    with cg.profile() as prof:
        g2 = c2.weight.grad
        again = c2.weight.grad
    assert prof.count("conv_weight_grad") == 1 and again is g2
    w1, w2 = _torch_grads(c1, c2, x)
    np.testing.assert_allclose(np.array(g2.data), w2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.array(c1.weight.grad.data), w1, rtol=1e-12, atol=1e-12)


def test_zero_grad_drops_a_pending_gradient_uncomputed():
    c1, c2, x = _two_layers()
    opt = cg.optim.SGD([*c1.parameters(), *c2.parameters()], lr=0.1)
    for set_to_none in (True, False):
        (c2(cg.relu(c1(x))) ** 2).sum().backward()
        with cg.profile() as prof:
            opt.zero_grad(set_to_none=set_to_none)
            c2.zero_grad(set_to_none=set_to_none)
        assert prof.count("conv_weight_grad") == 0
        if set_to_none:
            assert c2.weight.grad is None
        else:
            assert np.array_equal(c2.weight.grad.data, np.zeros(c2.weight.shape))


def test_accumulating_over_backward_calls_turns_a_leaf_eager():
    c1, c2, x = _two_layers()
    pending = []
    for _ in range(4):  # gradient accumulation: four backward calls, then one read
        (c2(cg.relu(c1(x))) ** 2).sum().backward()
        pending.append(deferred.pending(c2.weight))
    # each call computes the previous call's gradient; after two such calls the leaf
    # is eager (no micro-batch's inputs kept through the next one's forward)
    assert pending == [True, True, False, False]
    w1, w2 = _torch_grads(c1, c2, x, times=4)
    np.testing.assert_allclose(np.array(c2.weight.grad.data), w2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.array(c1.weight.grad.data), w1, rtol=1e-12, atol=1e-12)


def test_a_leaf_whose_pending_gradient_was_dropped_stays_deferred():
    c1, c2, x = _two_layers()
    (c2(cg.relu(c1(x))) ** 2).sum().backward()
    c2.zero_grad()
    pending = []
    for _ in range(4):
        (c2(cg.relu(c1(x))) ** 2).sum().backward()
        pending.append(deferred.pending(c2.weight))
    assert pending == [True] * 4
    c1.zero_grad()
    _, w2 = _torch_grads(c1, c2, x, times=4)
    np.testing.assert_allclose(np.array(c2.weight.grad.data), w2, rtol=1e-12, atol=1e-12)


def test_what_pending_gradients_hold_is_bounded(monkeypatch):
    c1, c2, x = _two_layers()
    monkeypatch.setattr(deferred, "MAX_HELD_BYTES", 0)
    with cg.profile() as prof:
        (c2(cg.relu(c1(x))) ** 2).sum().backward()
    assert prof.count("conv_weight_grad") == 2 and not deferred.pending(c2.weight)


def test_an_in_place_change_of_what_it_reads_is_an_error_not_a_wrong_gradient():
    c1, c2, x = _two_layers()
    h = cg.relu(c1(x))
    (c2(h) ** 2).sum().backward()
    with cg.no_grad():
        h.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified in place after backward"):
        _ = c2.weight.grad


@pytest.mark.parametrize("how", ["hook", "create_graph", "autograd.grad", "anomaly"])
def test_computed_during_backward_where_it_must_be(how):
    c1, c2, x = _two_layers()
    if how == "hook":
        seen = []
        c2.weight.register_hook(lambda g: seen.append(g))
    with cg.profile() as prof, cg.autograd.set_detect_anomaly(how == "anomaly"):
        loss = (c2(cg.relu(c1(x))) ** 2).sum()
        if how == "autograd.grad":
            (g2,) = cg.autograd.grad(loss, [c2.weight])
        else:
            loss.backward(create_graph=how == "create_graph")
    assert prof.count("conv_weight_grad") == (1 if how == "autograd.grad" else 2)
    assert not deferred.pending(c2.weight)
    if how == "hook":
        assert len(seen) == 1


def test_a_copy_or_pickle_carries_the_gradient():
    c1, c2, x = _two_layers()
    (c2(cg.relu(c1(x))) ** 2).sum().backward()
    assert deferred.pending(c2.weight)
    copied = copy.deepcopy(c2)
    pickled = pickle.loads(pickle.dumps(c2.weight))
    _, w2 = _torch_grads(c1, c2, x)
    for g in (copied.weight.grad, pickled.grad, c2.weight.grad):
        np.testing.assert_allclose(np.array(g.data), w2, rtol=1e-12, atol=1e-12)


def test_a_linear_weight_too():
    torch.manual_seed(2)
    t1, t2 = torch.nn.Linear(5, 7).double(), torch.nn.Linear(7, 3).double()
    l1, l2 = cg.nn.Linear(5, 7).double(), cg.nn.Linear(7, 3).double()
    for c, t in ((l1, t1), (l2, t2)):
        c.load_state_dict({k: cg.tensor(v.detach().numpy().copy())
                           for k, v in t.state_dict().items()})
    x = rng.standard_normal((4, 5))
    (t2(torch.tanh(t1(torch.from_numpy(x)))) ** 2).sum().backward()
    with cg.profile() as prof:
        (l2(cg.tanh(l1(cg.tensor(x)))) ** 2).sum().backward()
    # forward 2, backward: l2's input gradient and l1's weight gradient (its input is x)
    assert prof.count("matmul") == 4
    assert deferred.pending(l2.weight) and not deferred.pending(l1.weight)
    for c, t in ((l1, t1), (l2, t2)):
        np.testing.assert_allclose(np.array(c.weight.grad.data), t.weight.grad.numpy(),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("value", ["0", "yes"])
def test_the_environment_variable(value):
    import os
    import subprocess
    import sys

    code = ("import numpy as np, convgrad as cg\n"
            "from convgrad.autograd import deferred\n"
            "c1, c2 = cg.nn.Conv2d(2, 4, 3), cg.nn.Conv2d(4, 3, 3)\n"
            "with cg.profile() as prof:\n"
            "    c2(cg.relu(c1(cg.randn(2, 2, 8, 8)))).sum().backward()\n"
            "print(prof.count('conv_weight_grad'), deferred.pending(c2.weight))\n")
    env = {**os.environ, "CONVGRAD_DEFERRED_GRADS": value}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    if value == "0":
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["2", "False"]
    else:
        assert out.returncode != 0 and "CONVGRAD_DEFERRED_GRADS='yes'" in out.stderr
