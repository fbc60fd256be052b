"""Layer normalisation's own kernels (convgrad.ops.layer_norm, Numba's loops): against
torch in float64 and within twice torch float32's error, the profiler naming them,
tasks of fixed size (the bits do not depend on the thread count), double backward, and
the reference path they replace."""

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
from convgrad import nn
from convgrad.ops import jit, layer_norm, parallel, prefer

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="Numba is not installed")
RNG = np.random.default_rng(17)

CASES = [  # input shape, normalized shape, (weight, bias)
    ((8, 196, 96), (96,), (True, True)),       # a vision transformer's tokens
    ((4, 1000, 40), (40,), (True, False)),     # many short rows, several tasks
    ((3, 5, 8, 12), (8, 12), (True, True)),    # two normalised dims
    ((6, 3000), (3000,), (False, False)),      # long rows, no affine
    ((1, 7), (7,), (False, True)),
]


def _params(shape, which):
    w = (1 + 0.2 * RNG.standard_normal(shape)).astype(np.float32) if which[0] else None
    b = (0.2 * RNG.standard_normal(shape)).astype(np.float32) if which[1] else None
    return w, b


def _run(lib, x, g, w, b, normalized, dtype=None):
    """y and the gradients of x, w, b (those given) as float64 arrays."""
    if lib is cg:
        ts = [None if a is None else cg.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = F.layer_norm(ts[0], normalized, ts[1], ts[2])
        y.backward(cg.tensor(g))
        out = [y.data] + [t.grad.data for t in ts if t is not None]
    else:
        ts = [None if a is None else torch.tensor(a, dtype=dtype, requires_grad=True)
              for a in (x, w, b)]
        y = TF.layer_norm(ts[0], normalized, ts[1], ts[2])
        y.backward(torch.tensor(g, dtype=dtype))
        out = [y.detach().numpy()] + [t.grad.numpy() for t in ts if t is not None]
    return [np.asarray(o, np.float64) for o in out]


@pytest.mark.parametrize("shape,normalized,which", CASES)
def test_layer_norm_is_as_accurate_as_torch(shape, normalized, which):
    """Inputs 3 standard deviations off zero; y and every gradient within twice torch
    float32's error against torch float64 (floor: one float32 rounding), one kernel each
    way."""
    x = (3 + 2 * RNG.standard_normal(shape)).astype(np.float32)
    g = RNG.standard_normal(shape).astype(np.float32)
    w, b = _params(normalized, which)
    with cg.profile() as prof:
        ours = _run(cg, x, g, w, b, normalized)
    assert {e.name: e.algorithm for e in prof.of("norm")} == {
        "layer_norm_forward": "numba", "layer_norm_backward": "numba"}
    exact = _run(torch, x, g, w, b, normalized, torch.float64)
    theirs = _run(torch, x, g, w, b, normalized, torch.float32)
    for k, (o, e, t) in enumerate(zip(ours, exact, theirs)):
        scale = np.abs(e).max()
        err, torch_err = np.abs(o - e).max() / scale, np.abs(t - e).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -24), (k, err, torch_err)


def test_layer_norm_module_matches_the_reference_path():
    """``nn.LayerNorm`` on float32 through the kernels against the same module under
    ``prefer("numpy")`` (the batch-norm view and broadcast affine it replaces): the same
    values to float32's rounding."""
    m = nn.LayerNorm(48)
    m.weight.data[...] = 1 + 0.3 * RNG.standard_normal(48)
    m.bias.data[...] = 0.3 * RNG.standard_normal(48)
    x0 = RNG.standard_normal((5, 33, 48)).astype(np.float32)
    g = RNG.standard_normal((5, 33, 48)).astype(np.float32)
    results = []
    for pin in (None, "numpy"):
        x = cg.tensor(x0, requires_grad=True)
        m.zero_grad()
        with cg.profile() as prof, prefer(pin or "numba"):
            y = m(x)
            y.backward(cg.tensor(g))
        names = {e.name for e in prof.of("norm")}
        assert ("layer_norm_forward" in names) == (pin is None), names
        results.append([y.data, x.grad.data, m.weight.grad.data, m.bias.grad.data])
    for fast, ref in zip(*results):
        np.testing.assert_allclose(fast, ref, rtol=2e-5, atol=2e-5)


def test_layer_norm_bits_do_not_depend_on_the_thread_count(monkeypatch):
    x = RNG.standard_normal((64, 300, 32)).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    w, b = _params((32,), (True, True))
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(parallel, "num_threads", lambda t=threads: t)
        runs.append(_run(cg, x, g, w, b, (32,)))
    for one, *others in zip(*runs):
        for other in others:
            np.testing.assert_array_equal(one, other)


def test_layer_norm_double_backward_in_float32():
    """The create_graph path (Tensor operations, the statistics recomputed from x): the
    gradient of a function of the first gradients against torch float64, within twice
    torch float32's error."""
    x = (1 + RNG.standard_normal((6, 10, 24))).astype(np.float32)
    w, b = _params((24,), (True, True))
    v = RNG.standard_normal(x.shape).astype(np.float32)
    u = RNG.standard_normal(x.shape).astype(np.float32)

    def second(lib, dtype=None):
        if lib is cg:
            ts = [cg.tensor(a, requires_grad=True) for a in (x, w, b)]
            y = F.layer_norm(ts[0], (24,), ts[1], ts[2])
            gx, gw = cg.autograd.grad((y * cg.tensor(v)).sum(), ts[:2], create_graph=True)
            ((gx * cg.tensor(u)).sum() + gw.sum()).backward()
            return [np.asarray(t.grad.data, np.float64) for t in ts[:2]]
        ts = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in (x, w, b)]
        y = TF.layer_norm(ts[0], (24,), ts[1], ts[2])
        gx, gw = torch.autograd.grad((y * torch.tensor(v, dtype=dtype)).sum(), ts[:2],
                                     create_graph=True)
        ((gx * torch.tensor(u, dtype=dtype)).sum() + gw.sum()).backward()
        return [t.grad.double().numpy() for t in ts[:2]]

    with cg.profile() as prof:
        ours = second(cg)
    assert "layer_norm_forward" in {e.name for e in prof.of("norm")}
    exact, theirs = second(torch, torch.float64), second(torch, torch.float32)
    for k, (o, e, t) in enumerate(zip(ours, exact, theirs)):
        scale = np.abs(e).max()
        err, torch_err = np.abs(o - e).max() / scale, np.abs(t - e).max() / scale
        assert err <= 2 * max(torch_err, 2.0 ** -23), (k, err, torch_err)


def test_a_strided_input_takes_the_reference_path():
    """A transposed (not C-contiguous) float32 input: the batch-norm view, torch's
    values."""
    x = RNG.standard_normal((16, 6, 20)).astype(np.float32).transpose(1, 0, 2)
    assert not layer_norm.available(x, 20)
    xs = cg.tensor(x, requires_grad=True)
    with cg.profile() as prof:
        y = F.layer_norm(xs, (20,))
    assert "layer_norm_forward" not in {e.name for e in prof.of("norm")}
    np.testing.assert_allclose(y.data, TF.layer_norm(torch.tensor(x), (20,)).numpy(),
                               rtol=1e-5, atol=1e-5)
