"""Small drop-in pieces of torch that training scripts use: anomaly mode, the RNG state,
global flags (deterministic algorithms, matmul precision, print options), ``nn.Buffer``,
``gumbel_softmax``, ``pdist``, the triplet loss with a distance function and the
samplers/datasets of ``utils.data``.

Oracle: torch 2.13 where the values are deterministic (pdist, the triplet loss: float64
values and gradients of a random weighting to rounding, float32 within twice torch's
own error against torch float64); torch's documented behaviour otherwise (anomaly mode
raises naming the op, an RNG state round trip replays the stream, sampler frequencies).
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch

import convgrad as cg
import convgrad.autograd as ag
from convgrad.autograd import Function

RNG = np.random.default_rng(2026)


# ---------------------------------------------------------------- anomaly mode


@pytest.fixture
def anomaly_off():
    yield
    cg.set_anomaly_enabled(False)


def test_anomaly_flags_and_switches(anomaly_off):
    assert (cg.is_anomaly_enabled(), cg.is_anomaly_check_nan_enabled()) == (False, True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = ag.detect_anomaly(check_nan=False)
    with mode:
        assert (cg.is_anomaly_enabled(), cg.is_anomaly_check_nan_enabled()) == (True, False)
        with ag.set_detect_anomaly(False):
            assert not cg.is_anomaly_enabled()
        assert (cg.is_anomaly_enabled(), cg.is_anomaly_check_nan_enabled()) == (True, False)
    assert (cg.is_anomaly_enabled(), cg.is_anomaly_check_nan_enabled()) == (False, True)
    ag.set_detect_anomaly(True)  # a plain call sets it, as torch
    assert cg.is_anomaly_enabled()
    cg.set_anomaly_enabled(False)
    assert not cg.is_anomaly_enabled()

    with pytest.warns(UserWarning):
        @ag.detect_anomaly()
        def inside():
            return cg.is_anomaly_enabled()
    assert inside() and not cg.is_anomaly_enabled()


def test_anomaly_argument_errors():
    with pytest.raises(TypeError, match="check_nan=3 must be a bool"):
        cg.set_anomaly_enabled(True, 3)
    with pytest.raises(TypeError, match="mode='yes' must be a bool"):
        ag.set_detect_anomaly("yes")
    with pytest.raises(TypeError, match="check_nan=None must be a bool"):
        ag.detect_anomaly(check_nan=None)
    assert not cg.is_anomaly_enabled()


def _sqrt_nan_backward():
    x = cg.tensor([0.0, 1.0], requires_grad=True)
    y = cg.sqrt(x) * 0  # d/dx at 0: inf * 0 = nan (torch: SqrtBackward0 returns nan)
    return x, y.sum()


def test_anomaly_raises_naming_the_op_and_warns_with_the_forward_trace(anomaly_off):
    tx = torch.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="Sqrt"):
            (torch.sqrt(tx) * 0).sum().backward()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with ag.detect_anomaly():
            x, loss = _sqrt_nan_backward()
            assert "traceback_" in loss.grad_fn.inputs[0].grad_fn.inputs[0].grad_fn.metadata
            with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward' returned nan "
                                                   r"values in its 0th output"):
                loss.backward()
    found = [str(w.message) for w in seen if "Error detected in SqrtBackward" in str(w.message)]
    assert len(found) == 1
    assert "Traceback of forward call" in found[0] and "_sqrt_nan_backward" in found[0]


def test_anomaly_off_or_check_nan_off_lets_nan_through(anomaly_off):
    with np.errstate(all="ignore"):
        x, loss = _sqrt_nan_backward()
        assert "metadata" not in loss.grad_fn.__dict__  # nothing recorded when off
        loss.backward()
        assert np.isnan(x.grad.numpy()[0])
        with pytest.warns(UserWarning):
            mode = ag.detect_anomaly(check_nan=False)
        with mode:
            x, loss = _sqrt_nan_backward()
            loss.backward()
        assert np.isnan(x.grad.numpy()[0])


class _NanRule(Function):
    """A Function whose backward returns NaN for its second input only."""

    reads = ()

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad * float("nan")


class _FailingRule(Function):
    reads = ()

    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("broken rule")


def test_anomaly_names_a_custom_function_and_its_output_index(anomaly_off):
    a = cg.tensor([1.0, 2.0], requires_grad=True)
    b = cg.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ag.detect_anomaly():
            out = _NanRule.apply(a, b).sum()
            with pytest.raises(RuntimeError, match="'_NanRuleBackward' returned nan values "
                                                   "in its 1th output"):
                out.backward()


def test_anomaly_warns_the_forward_trace_of_a_failing_rule(anomaly_off):
    a = cg.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with ag.detect_anomaly():
            out = _FailingRule.apply(a).sum()
            with pytest.raises(ValueError, match="broken rule"):
                out.backward()
    text = [str(w.message) for w in seen if "_FailingRuleBackward" in str(w.message)]
    assert len(text) == 1 and "test_anomaly_warns_the_forward_trace" in text[0]
    # a node made with the mode off has no trace to show
    out = _FailingRule.apply(a).sum()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with ag.detect_anomaly(), pytest.raises(ValueError):
            out.backward()
    assert any("No forward pass information" in str(w.message) for w in seen)


# ---------------------------------------------------------------- RNG state and flags


def _draws():
    gen = cg.random.default_generator()
    return np.concatenate([cg.randn(4).numpy(), cg.rand(3).numpy(),
                           gen.integers(0, 1000, 3, dtype=np.uint32).astype(np.float32)])


def test_rng_state_round_trip_replays_the_stream():
    cg.manual_seed(11)
    cg.random.default_generator().integers(0, 9, dtype=np.uint32)  # leaves half a word
    state = cg.get_rng_state()
    assert state.dtype == cg.uint8 and state.shape == (48,)
    first = _draws()
    assert not np.array_equal(_draws(), first)
    cg.set_rng_state(state)
    np.testing.assert_array_equal(_draws(), first)
    state.numpy()[:] = 0  # a new tensor each time: changing it changes nothing
    cg.set_rng_state(cg.get_rng_state())
    again = cg.get_rng_state()
    cg.set_rng_state(again.numpy())  # the uint8 array a saved state loads back as
    np.testing.assert_array_equal(cg.get_rng_state().numpy(), again.numpy())


def test_rng_state_errors():
    good = cg.get_rng_state().numpy()
    with pytest.raises(TypeError, match="new_state must be a uint8 Tensor.*float32"):
        cg.set_rng_state(cg.zeros(48))
    with pytest.raises(TypeError, match="new_state must be a uint8 Tensor"):
        cg.set_rng_state([0] * 48)
    with pytest.raises(ValueError, match=r"shape \(3,\), expected \(48,\)"):
        cg.set_rng_state(good[:3])
    bad = good.copy()
    bad[16] &= 0xFE  # an even increment is no PCG64 state
    with pytest.raises(ValueError, match="must be odd"):
        cg.set_rng_state(bad)
    np.testing.assert_array_equal(cg.get_rng_state().numpy(), good)


def test_seeds_and_fork_rng():
    cg.manual_seed(5)
    assert cg.initial_seed() == 5
    fresh = cg.seed()
    assert isinstance(fresh, int) and cg.initial_seed() == fresh
    cg.manual_seed(5)
    with cg.random.fork_rng():
        cg.randn(10)
    after_fork = cg.randn(3).numpy()
    cg.manual_seed(5)
    np.testing.assert_array_equal(cg.randn(3).numpy(), after_fork)
    cg.manual_seed(5)
    with cg.random.fork_rng(enabled=False):
        cg.randn(10)
    assert not np.array_equal(cg.randn(3).numpy(), after_fork)
    with pytest.raises(TypeError, match="enabled=1 must be a bool"), cg.random.fork_rng(
            enabled=1):
        pass


def test_deterministic_and_matmul_precision_flags():
    assert not cg.are_deterministic_algorithms_enabled()
    assert not cg.is_deterministic_algorithms_warn_only_enabled()
    try:
        cg.use_deterministic_algorithms(True, warn_only=True)
        assert cg.are_deterministic_algorithms_enabled()
        assert cg.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(TypeError):  # warn_only is keyword-only, as torch's
            cg.use_deterministic_algorithms(True, False)
        with pytest.raises(TypeError, match="mode=1 must be a bool"):
            cg.use_deterministic_algorithms(1)
    finally:
        cg.use_deterministic_algorithms(False)
    assert cg.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    try:
        for p in ("high", "medium", "highest"):
            cg.set_float32_matmul_precision(p)
            assert cg.get_float32_matmul_precision() == p
        with pytest.raises(ValueError, match="precision='low' must be one of 'highest', "
                                             "'high', 'medium'"):
            cg.set_float32_matmul_precision("low")
    finally:
        cg.set_float32_matmul_precision("highest")


@pytest.fixture
def printoptions_reset():
    yield
    printing = importlib.import_module("convgrad.tensor.printing")
    printing._options.values, printing._options.sci_mode = {}, None
    torch.set_printoptions(profile="default", sci_mode=None)


PRINTED = [np.array([1.123456789, 2.5, 1e-5, 300.0]), np.array([1.5, 2.0]),
           np.array([[0.1, -2.25], [3.5, 4.125]]), np.array(3.25), np.arange(3.0)]


@pytest.mark.parametrize("opts", [{"profile": "default"}, {"precision": 2},
                                  {"precision": 2, "sci_mode": False},
                                  {"precision": 3, "sci_mode": True}, {"profile": "short"}])
def test_set_printoptions_prints_as_torch(opts, printoptions_reset):
    torch.set_printoptions(**opts)
    cg.set_printoptions(**opts)
    for a in PRINTED:
        assert repr(cg.tensor(a.astype(np.float32))) == repr(torch.tensor(a, dtype=torch.float32))
    assert repr(cg.arange(3)) == repr(torch.arange(3))


def test_set_printoptions_threshold_profiles_and_errors(printoptions_reset):
    cg.set_printoptions(threshold=5, edgeitems=2)
    text = repr(cg.arange(10.0))
    assert "..." in text and "2." not in text and "8." in text
    cg.set_printoptions(profile="full")
    assert "..." not in repr(cg.arange(2000.0))
    cg.set_printoptions(sci_mode=True)
    cg.set_printoptions(precision=2)  # sci_mode is reset by every call, as torch
    assert repr(cg.tensor([1.5, 2.25])) == "tensor([1.50, 2.25])"
    with pytest.raises(ValueError, match="profile='long' must be one of"):
        cg.set_printoptions(profile="long")
    with pytest.raises(TypeError, match="precision='x' must be an int"):
        cg.set_printoptions(precision="x")
    with pytest.raises(ValueError, match="linewidth=0 must be >= 1"):
        cg.set_printoptions(linewidth=0)
    with pytest.raises(TypeError, match="sci_mode=1 must be True, False or None"):
        cg.set_printoptions(sci_mode=1)


# ---------------------------------------------------------------- nn.Buffer


class _WithBuffers:
    """The same module built in both libraries (lib is torch or cg)."""

    @staticmethod
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.nn.Linear(2, 2)
                self.scale = lib.nn.Buffer(lib.ones(2))
                self.cache = lib.nn.Buffer(lib.zeros(3), persistent=False)

        return Net()


def test_buffer_registers_on_assignment_as_torch():
    ours, theirs = _WithBuffers.build(cg), _WithBuffers.build(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    np.testing.assert_array_equal(ours.scale, np.ones(2, np.float32))
    # re-assigned as non-persistent: it leaves the state dict, as torch
    ours.scale, theirs.scale = cg.nn.Buffer(cg.ones(2), persistent=False), torch.nn.Buffer(
        torch.ones(2), persistent=False)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    # a plain Tensor assigned to a buffer keeps its persistence (torch's rule)
    ours.cache, theirs.cache = cg.ones(4), torch.ones(4)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    b = cg.nn.Buffer(np.arange(3.0))
    assert isinstance(b, cg.Tensor) and b.persistent and not b.requires_grad


def test_buffer_errors():
    ours, theirs = _WithBuffers.build(cg), _WithBuffers.build(torch)
    with pytest.raises(TypeError, match="cannot assign Buffer as child module 'lin'"):
        ours.lin = cg.nn.Buffer(cg.ones(1))
    with pytest.raises(TypeError):
        theirs.lin = torch.nn.Buffer(torch.ones(1))
    ours.register_parameter("p", cg.nn.Parameter(cg.ones(1)))
    with pytest.raises(TypeError, match="cannot assign Buffer as parameter 'p'"):
        ours.p = cg.nn.Buffer(cg.ones(1))
    ours.plain = 5
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        ours.plain = cg.nn.Buffer(cg.ones(1))
    with pytest.raises(TypeError, match="persistent=1 must be a bool"):
        cg.nn.Buffer(cg.ones(1), persistent=1)
    with pytest.raises(TypeError, match="data must be a Tensor or an ndarray, got list"):
        cg.nn.Buffer([1.0])


# ---------------------------------------------------------------- pdist, triplet, gumbel


def _compare(fn_t, fn_c, *arrays, tol=1e-12):
    """float64 values and gradients of a random weighting, torch against ours."""
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    cs = [cg.tensor(a, requires_grad=True) for a in arrays]
    want, got = fn_t(*ts), fn_c(*cs)
    assert got.shape == tuple(want.shape) and got.dtype == cg.float64
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=tol, atol=tol)
    w = RNG.standard_normal(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * cg.tensor(w)).sum().backward()
    for t, c in zip(ts, cs):
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


def _float32_within_twice_torchs_error(fn_t, fn_c, *arrays):
    """float32 values and gradients against torch float64 on the same values: within
    twice torch float32's error (relative 2-norm)."""
    arrays = [a.astype(np.float32).astype(np.float64) for a in arrays]
    found, w = [], None
    for lib, dtype in ((torch, torch.float64), (torch, torch.float32), (cg, cg.float32)):
        if lib is torch:
            ins = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
            out = fn_t(*ins)
        else:
            ins = [cg.tensor(a.astype(np.float32), requires_grad=True) for a in arrays]
            out = fn_c(*ins)
            assert out.dtype == cg.float32
        if w is None:
            w = RNG.standard_normal(tuple(out.shape))
        (out * lib.tensor(w.astype(np.float64 if dtype == torch.float64 else np.float32))
         ).sum().backward()
        values = out.detach().numpy() if lib is torch else out.numpy()
        found.append([np.asarray(values, np.float64)]
                     + [np.asarray(i.grad.numpy(), np.float64) for i in ins])
    for e, t, o in zip(*found):
        scale = np.linalg.norm(e)
        t_err, o_err = np.linalg.norm(t - e) / scale, np.linalg.norm(o - e) / scale
        assert o_err <= 2 * max(t_err, 2.0 ** -24), (o_err, t_err)


def _rows_with_ties():
    x = RNG.standard_normal((6, 4))
    x[4] = x[1]  # a zero distance: a zero gradient, as torch
    x[3, 2] = x[0, 2]  # one equal coordinate
    return x


@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3, float("inf")])
def test_pdist_values_and_gradients_equal_torchs(p):
    _compare(lambda x: torch.pdist(x, p), lambda x: cg.functional.pdist(x, p),
             _rows_with_ties())


def test_pdist_float32_second_order_and_edge_cases():
    for p in (1, 2, 3):
        _float32_within_twice_torchs_error(lambda x, p=p: torch.pdist(x, p),
                                           lambda x, p=p: cg.functional.pdist(x, p),
                                           RNG.standard_normal((7, 5)))
    # second order (torch's pdist has none): against the same distances composed in torch
    x = RNG.standard_normal((4, 3))
    t, c = torch.tensor(x, requires_grad=True), cg.tensor(x, requires_grad=True)
    i, j = torch.triu_indices(4, 4, 1)
    for p in (2, 3):
        (gt,) = torch.autograd.grad(((t[i] - t[j]).norm(p, dim=-1) ** 2).sum(), t,
                                    create_graph=True)
        (gc,) = cg.grad((cg.functional.pdist(c, p) ** 2).sum(), c, create_graph=True)
        (ht,) = torch.autograd.grad((gt ** 2).sum(), t)
        (hc,) = cg.grad((gc ** 2).sum(), c)
        np.testing.assert_allclose(hc.numpy(), ht.numpy(), rtol=1e-10, atol=1e-12)
    assert cg.functional.pdist(cg.ones(1, 3)).shape == tuple(torch.pdist(torch.ones(1, 3)).shape)


@pytest.mark.parametrize("p", [0, 1, 2, 3, float("inf")])
def test_distances_in_blocks_equal_torchs(p, monkeypatch):
    """pdist and cdist built a few pairs' differences at a time (a block of 13 elements
    here) give torch's values and gradients: blocks join in order."""
    from convgrad.tensor import distances

    monkeypatch.setattr(distances, "BLOCK", 13)
    _compare(lambda x: torch.pdist(x, p), lambda x: cg.functional.pdist(x, p),
             _rows_with_ties())
    a, b = RNG.standard_normal((2, 5, 4)), RNG.standard_normal((1, 3, 4))
    _compare(lambda u, v: torch.cdist(u, v, p=p), lambda u, v: cg.cdist(u, v, p=p), a, b)


def test_distances_workspace_is_bounded():
    """2000 rows of 64: all pairs' differences at once would be 1 GB (pdist) and 256 MB
    (cdist of 1000 x 1000); the blocks keep the peak near the result."""
    import tracemalloc

    x = cg.tensor(RNG.standard_normal((2000, 64)).astype(np.float32), requires_grad=True)
    tracemalloc.start()
    try:
        cg.functional.pdist(x).sum().backward()
        cg.cdist(x[:1000], x[1000:]).sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 << 20, peak


def test_pdist_errors():
    F = cg.functional
    with pytest.raises(ValueError, match=r"input must be 2-D \(N, M\), got shape \(2, 3, 4\)"):
        F.pdist(cg.ones(2, 3, 4))
    with pytest.raises(ValueError, match="p=-1.0 must be >= 0"):
        F.pdist(cg.ones(2, 3), -1)
    with pytest.raises(TypeError, match="p='2' must be a number"):
        F.pdist(cg.ones(2, 3), "2")
    with pytest.raises(TypeError, match="input must be a float Tensor, got dtype int64"):
        F.pdist(cg.arange(6).reshape(2, 3))


def _triplets(n=8, d=5):
    a, pos = RNG.standard_normal((n, d)), RNG.standard_normal((n, d))
    neg = a + 0.3 * RNG.standard_normal((n, d))  # near the anchor: positive losses
    neg[::2] = pos[::2] + 0.1 * RNG.standard_normal((n // 2, d))  # swap decides these
    return a, pos, neg


def _cos_distance(lib):
    return lambda x, y: 1.0 - lib.nn.functional.cosine_similarity(x, y)


@pytest.mark.parametrize("kw", [{}, {"swap": True}, {"margin": 2.5, "reduction": "sum"},
                                {"reduction": "none", "swap": True}, {"distance": "cos"},
                                {"distance": "l1", "margin": 0.5}])
def test_triplet_with_distance_equals_torchs(kw):
    kw = dict(kw)
    dist = kw.pop("distance", None)
    kt, kc = dict(kw), dict(kw)
    if dist == "cos":
        kt["distance_function"], kc["distance_function"] = _cos_distance(torch), _cos_distance(cg)
    elif dist == "l1":
        kt["distance_function"] = lambda x, y: (x - y).abs().sum(-1)
        kc["distance_function"] = lambda x, y: (x - y).abs().sum(-1)
    _compare(lambda *a: torch.nn.functional.triplet_margin_with_distance_loss(*a, **kt),
             lambda *a: cg.functional.triplet_margin_with_distance_loss(*a, **kc),
             *_triplets())
    _compare(lambda *a: torch.nn.TripletMarginWithDistanceLoss(**kt)(*a),
             lambda *a: cg.nn.TripletMarginWithDistanceLoss(**kc)(*a), *_triplets())


def test_triplet_with_distance_float32_and_layer():
    for swap in (False, True):
        _float32_within_twice_torchs_error(
            lambda *a, s=swap: torch.nn.functional.triplet_margin_with_distance_loss(
                *a, swap=s, reduction="none"),
            lambda *a, s=swap: cg.functional.triplet_margin_with_distance_loss(
                *a, swap=s, reduction="none"), *_triplets())
    layer = cg.nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True)
    assert repr(layer) == repr(torch.nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True))
    assert (layer.margin, layer.swap, layer.reduction) == (2.0, True, "mean")
    one = [RNG.standard_normal(5) for _ in range(3)]  # unbatched (D,) triplets
    _compare(lambda *a: torch.nn.functional.triplet_margin_with_distance_loss(*a),
             lambda *a: cg.functional.triplet_margin_with_distance_loss(*a), *one)


def test_triplet_with_distance_errors():
    F = cg.functional
    a = cg.ones(2, 3)
    with pytest.raises(ValueError, match="margin=0.0 must be > 0"):
        F.triplet_margin_with_distance_loss(a, a, a, margin=0)
    with pytest.raises(ValueError, match="same number of dimensions, got 2, 2 and 1"):
        F.triplet_margin_with_distance_loss(a, a, cg.ones(3))
    with pytest.raises(ValueError, match="reduction='avg' must be one of"):
        F.triplet_margin_with_distance_loss(a, a, a, reduction="avg")
    with pytest.raises(TypeError, match="distance_function=3 must be callable"):
        F.triplet_margin_with_distance_loss(a, a, a, distance_function=3)
    with pytest.raises(TypeError, match="swap=1 must be a bool"):
        F.triplet_margin_with_distance_loss(a, a, a, swap=1)
    with pytest.raises(TypeError):  # keyword-only, as torch
        F.triplet_margin_with_distance_loss(a, a, a, None)
    with pytest.raises(ValueError, match="margin=-1 must be > 0"):
        cg.nn.TripletMarginWithDistanceLoss(margin=-1)
    with pytest.raises(ValueError, match="reduction='x'"):
        cg.nn.TripletMarginWithDistanceLoss(reduction="x")


def test_gumbel_softmax_samples_and_straight_through():
    F = cg.functional
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    cg.manual_seed(3)
    x = cg.tensor(np.tile(logits, (4000, 1)), requires_grad=True)
    soft = F.gumbel_softmax(x, tau=0.5)
    np.testing.assert_allclose(soft.numpy().sum(-1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(x, tau=0.5, hard=True)
    assert set(np.unique(hard.numpy())) == {0.0, 1.0}
    np.testing.assert_array_equal(hard.numpy().sum(-1), 1.0)
    # the Gumbel-max trick: the hard sample's class has the softmax's probabilities
    freq = hard.numpy().mean(0)
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    # straight through: the hard sample's gradient is the soft sample's (same noise)
    w = cg.tensor(RNG.standard_normal((4000, 4)))
    grads = []
    for hard_flag in (False, True):
        cg.manual_seed(9)
        y = F.gumbel_softmax(x, tau=0.7, hard=hard_flag, dim=1)
        grads.append(cg.grad((y * w).sum(), x)[0].numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-15)
    # repeatable under manual_seed; float32 stays float32; dim=0 works
    cg.manual_seed(1)
    a = F.gumbel_softmax(cg.zeros(3, 5), dim=0).numpy()
    cg.manual_seed(1)
    b = F.gumbel_softmax(cg.zeros(3, 5), dim=0)
    np.testing.assert_array_equal(a, b.numpy())
    assert b.dtype == cg.float32
    np.testing.assert_allclose(a.sum(0), 1.0, rtol=1e-6)


def test_gumbel_softmax_errors():
    F = cg.functional
    with pytest.raises(ValueError, match="tau=0.0 must be > 0"):
        F.gumbel_softmax(cg.zeros(2, 3), tau=0)
    with pytest.raises(TypeError, match="hard=1 must be a bool"):
        F.gumbel_softmax(cg.zeros(2, 3), hard=1)
    with pytest.raises(ValueError, match=r"dim=2 must be an int in \[-2, 1\]"):
        F.gumbel_softmax(cg.zeros(2, 3), dim=2)
    with pytest.raises(TypeError, match="logits must be a float Tensor"):
        F.gumbel_softmax(cg.arange(3))


# ---------------------------------------------------------------- utils.data


def test_weighted_random_sampler_frequencies():
    D = cg.utils.data
    weights = [1.0, 2.0, 3.0, 4.0, 0.0]
    sampler = D.WeightedRandomSampler(cg.tensor(weights), 20000, generator=4)
    drawn = list(sampler)
    assert len(sampler) == len(drawn) == 20000 and all(isinstance(i, int) for i in drawn)
    freq = np.bincount(drawn, minlength=5) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4, 0.0], atol=0.015)
    assert list(sampler) != drawn  # a new draw at each epoch
    again = D.WeightedRandomSampler(weights, 20000, generator=4)
    assert list(again) == drawn  # an int seed makes it repeatable
    once = list(D.WeightedRandomSampler(weights, 4, replacement=False, generator=0))
    assert sorted(once) == [0, 1, 2, 3]  # each index at most once; weight 0 never
    cg.manual_seed(2)
    a = list(D.WeightedRandomSampler(np.array([1, 1, 5]), 50))
    cg.manual_seed(2)
    assert list(D.WeightedRandomSampler(np.array([1, 1, 5]), 50)) == a
    loader = D.DataLoader(np.arange(10.0), batch_size=4,
                          sampler=D.WeightedRandomSampler([0] * 9 + [1], 8))
    assert all(np.all(b.numpy() == 9.0) for b in loader)


def test_weighted_random_sampler_errors():
    W = cg.utils.data.WeightedRandomSampler
    with pytest.raises(ValueError, match="num_samples=0 must be a positive int"):
        W([1.0, 2.0], 0)
    with pytest.raises(TypeError, match="replacement=1 must be a bool"):
        W([1.0, 2.0], 2, replacement=1)
    with pytest.raises(ValueError, match=r"weights must be a 1-D sequence, got shape \(1, 2\)"):
        W([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="finite and >= 0 with a positive sum"):
        W([1.0, -2.0], 2)
    with pytest.raises(ValueError, match="finite and >= 0 with a positive sum"):
        W([0.0, 0.0], 2)
    with pytest.raises(ValueError, match="num_samples=3 exceeds the 2 indices"):
        W([1.0, 0.0, 2.0], 3, replacement=False)
    with pytest.raises(TypeError, match="rng='x' must be a convgrad Generator, a numpy Generator"):
        W([1.0], 1, generator="x")


def test_stack_and_chain_datasets_as_torch():
    from torch.utils.data import ChainDataset as TChain
    from torch.utils.data import IterableDataset as TIterable
    from torch.utils.data import StackDataset as TStack

    D = cg.utils.data
    a, b = [1, 2, 3], ["x", "y", "z"]
    for args, kwargs in (((a, b), {}), ((), {"num": a, "name": b})):
        ours, theirs = D.StackDataset(*args, **kwargs), TStack(*args, **kwargs)
        assert len(ours) == len(theirs)
        assert [ours[i] for i in range(3)] == [theirs[i] for i in range(3)]
        assert ours.__getitems__([2, 0]) == theirs.__getitems__([2, 0])

    def stream(base, n):
        class Stream(base):
            def __iter__(self):
                return iter(range(n))

            def __len__(self):
                return n

        return Stream()

    ours = D.ChainDataset([stream(D.IterableDataset, 2), stream(D.IterableDataset, 3)])
    theirs = TChain([stream(TIterable, 2), stream(TIterable, 3)])
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    batches = [x.tolist() for x in D.DataLoader(ours, batch_size=2)]
    assert batches == [[0, 1], [0, 1], [2]]


def test_stack_and_chain_dataset_errors():
    D = cg.utils.data
    with pytest.raises(ValueError, match="differ in length"):
        D.StackDataset([1, 2], [1])
    with pytest.raises(ValueError, match="not both"):
        D.StackDataset([1, 2], b=[1, 2])
    with pytest.raises(ValueError, match="at least one dataset"):
        D.StackDataset()
    with pytest.raises(TypeError, match=r"datasets\[0\] must be an IterableDataset, got list"):
        list(D.ChainDataset([[1, 2]]))


def test_distributed_sampler_is_exported_and_partitions():
    from convgrad.utils.data import distributed

    D = cg.utils.data
    assert D.DistributedSampler is distributed.DistributedSampler
    data = list(range(10))
    for drop_last in (False, True):
        shards = [list(D.DistributedSampler(data, 3, r, seed=5, drop_last=drop_last))
                  for r in range(3)]
        assert len({len(s) for s in shards}) == 1
        seen = sorted(i for s in shards for i in s)
        if drop_last:  # 9 of the 10, each once
            assert len(seen) == 9 and len(set(seen)) == 9
        else:  # all 10, padded with repeats to 12
            assert set(seen) == set(data) and len(seen) == 12
    s = D.DistributedSampler(data, 2, 0, seed=1)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first and sorted(first) != first


# ---------------------------------------------------------------- creation by keyword


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones", "rand", "randn"])
def test_creation_takes_the_shape_as_size_keyword_as_torch(fn):
    # pytorch/examples' GAT: torch.empty(size=(in_features, n_hidden * n_heads))
    for kw in ({"size": (2, 3)}, {"size": [2, 3]}):
        got, want = getattr(cg, fn)(**kw), getattr(torch, fn)(**kw)
        assert tuple(got.shape) == tuple(want.shape) == (2, 3)
        assert got.dtype == cg.float32
    assert tuple(getattr(cg, fn)(size=4).shape) == tuple(getattr(torch, fn)(size=(4,)).shape)
    if fn in ("zeros", "ones"):
        np.testing.assert_array_equal(getattr(cg, fn)(size=(2, 3)).numpy(),
                                      getattr(torch, fn)(size=(2, 3)).numpy())
    with pytest.raises(TypeError, match=r"given twice.*size=\(2, 3\)"):
        getattr(cg, fn)(2, 3, size=(2, 3))
