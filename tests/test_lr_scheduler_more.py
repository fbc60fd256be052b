"""Oracle: torch.optim.lr_scheduler (torch 2.13) on torch's optimiser with the same settings:
MultiplicativeLR, ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts (with fractional
``step(epoch)``), CyclicLR and ChainedScheduler give the same learning rates (and cycled
momenta) bit for bit at every step; a run resumed from the state dicts equals the
uninterrupted run; torch's ValueError for the same bad arguments."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import convgrad as cg  # noqa: E402
from convgrad import nn  # noqa: E402
from convgrad.optim import lr_scheduler as ours_sched  # noqa: E402

STEPS = 40


def _lam(epoch):
    return 0.97 if epoch % 4 else 1.05


def _lam2(epoch):
    return 1.0 / (1 + 0.1 * epoch)


class Halving:
    """A callable object: its attributes go into the state dict."""

    def __init__(self):
        self.base = 2.0

    def __call__(self, x):
        return 1 / (self.base ** (x - 1))


def _cyclic(lib, opt, **kwargs):
    return lib.optim.lr_scheduler.CyclicLR(opt, **kwargs)


CASES = {
    "multiplicative": lambda lib, opt: lib.optim.lr_scheduler.MultiplicativeLR(opt, _lam),
    "multiplicative_per_group": lambda lib, opt: lib.optim.lr_scheduler.MultiplicativeLR(
        opt, [_lam, _lam2]),
    "constant": lambda lib, opt: lib.optim.lr_scheduler.ConstantLR(opt),
    "constant_half": lambda lib, opt: lib.optim.lr_scheduler.ConstantLR(opt, factor=0.5,
                                                                         total_iters=7),
    "polynomial": lambda lib, opt: lib.optim.lr_scheduler.PolynomialLR(opt),
    "polynomial_power": lambda lib, opt: lib.optim.lr_scheduler.PolynomialLR(
        opt, total_iters=30, power=2.5),
    "warm_restarts": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        opt, T_0=6, eta_min=1e-3),
    "warm_restarts_mult": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        opt, T_0=3, T_mult=2),
    "cyclic_triangular": lambda lib, opt: _cyclic(lib, opt, base_lr=0.01, max_lr=0.1,
                                                  step_size_up=4),
    "cyclic_triangular2": lambda lib, opt: _cyclic(lib, opt, base_lr=[0.01, 0.02],
                                                   max_lr=[0.1, 0.3], step_size_up=3,
                                                   step_size_down=5, mode="triangular2",
                                                   base_momentum=[0.7, 0.75]),
    "cyclic_exp_range": lambda lib, opt: _cyclic(lib, opt, base_lr=0.001, max_lr=0.05,
                                                 step_size_up=5, mode="exp_range", gamma=0.95,
                                                 max_momentum=0.95),
    "cyclic_scale_fn": lambda lib, opt: _cyclic(lib, opt, base_lr=0.01, max_lr=0.2,
                                                step_size_up=2.5, scale_fn=_lam2,
                                                scale_mode="iterations", cycle_momentum=False),
    "cyclic_scale_object": lambda lib, opt: _cyclic(lib, opt, base_lr=0.01, max_lr=0.2,
                                                    step_size_up=3, scale_fn=Halving()),
    "chained": lambda lib, opt: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=5),
         lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)]),
    "chained_three": lambda lib, opt: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.MultiplicativeLR(opt, _lam2),
         lib.optim.lr_scheduler.PolynomialLR(opt, total_iters=20, power=0.5),
         lib.optim.lr_scheduler.StepLR(opt, step_size=7, gamma=0.5)], optimizer=opt),
    "sequential_of_new": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.ConstantLR(opt, factor=0.2, total_iters=3),
              lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=5),
              lib.optim.lr_scheduler.PolynomialLR(opt, total_iters=9, power=2.0)],
        milestones=[8, 20]),
    "sequential_hand_over": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.PolynomialLR(opt, total_iters=4),
              lib.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3),
              lib.optim.lr_scheduler.MultiplicativeLR(opt, _lam),
              lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3)],
        milestones=[6, 12, 20]),
}


def _optimizer(lib, params, kind):
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.03}]
    if kind == "sgd":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.01)


def _params(lib, init):
    if lib is torch:
        return [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in init]
    return [nn.Parameter(p.copy()) for p in init]


def _same_groups(opt, topt):
    for g, tg in zip(opt.param_groups, topt.param_groups):
        assert g["lr"] == tg["lr"]
        assert g.get("momentum") == tg.get("momentum")
        assert tuple(g.get("betas", ())) == tuple(tg.get("betas", ()))


def _drive(case, kind, epochs=None):
    """Both libraries, the same gradients, ``STEPS`` steps (or ``step(e)`` for each ``e``
    of ``epochs``): the rates after every step."""
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s) for s in [(7, 5), (16,)]]
    ours_p, theirs_p = _params(cg, init), _params(torch, init)
    opt, topt = _optimizer(cg, ours_p, kind), _optimizer(torch, theirs_p, kind)
    sched, tsched = CASES[case](cg, opt), CASES[case](torch, topt)
    assert sched.get_last_lr() == tsched.get_last_lr()
    _same_groups(opt, topt)
    rates = [sched.get_last_lr()]
    for e in epochs if epochs is not None else [None] * STEPS:
        for a, b in zip(ours_p, theirs_p):
            g = rng.standard_normal(a.shape)
            a.grad, b.grad = cg.tensor(g), torch.from_numpy(g.copy())
        opt.step()
        topt.step()
        if e is None:
            sched.step()
            tsched.step()
        else:
            sched.step(e)
            tsched.step(e)
        assert sched.get_last_lr() == tsched.get_last_lr(), (case, len(rates))
        _same_groups(opt, topt)
        rates.append(sched.get_last_lr())
    for a, b in zip(ours_p, theirs_p):
        np.testing.assert_allclose(a.data, b.detach().numpy(), rtol=1e-12, atol=1e-13)
    return rates


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's warnings about step order and epochs
        yield


@pytest.mark.parametrize("case", list(CASES))
def test_rates_equal_torchs_bit_for_bit(case):
    rates = _drive(case, "sgd")
    assert len({tuple(r) for r in rates}) >= 2  # the schedule really moves


@pytest.mark.parametrize("case", ["cyclic_triangular2", "cyclic_exp_range", "chained",
                                  "warm_restarts_mult"])
def test_schedules_drive_adam_as_torch(case):
    """With Adam, CyclicLR cycles ``betas[0]`` (checked at every step)."""
    _drive(case, "adam")


@pytest.mark.parametrize("case", ["warm_restarts", "warm_restarts_mult"])
def test_warm_restarts_with_fractional_epochs(case):
    """``step(epoch + i / iters)`` once per batch, as torch documents, then jumps back and
    forth (interleaved use)."""
    iters = 4
    epochs = [e + i / iters for e in range(12) for i in range(iters)]
    epochs += [3, 0.5, 17.25, 9, 2.0, 45.5, 44]
    rates = _drive(case, "sgd", epochs)
    assert len({tuple(r) for r in rates}) > 20


def _run(case, kind, steps, resume_at=None):
    """Our run of ``steps`` steps; with ``resume_at``, the optimiser and scheduler are saved
    there and loaded into fresh objects built the ordinary way, which carry on."""
    rng = np.random.default_rng(3)
    init = [rng.standard_normal(s) for s in [(3, 2), (4,)]]
    params = _params(cg, init)
    opt = _optimizer(cg, params, kind)
    sched = CASES[case](cg, opt)
    rates = []
    for i in range(steps):
        if i == resume_at:
            opt_state, sched_state = opt.state_dict(), sched.state_dict()
            params = [nn.Parameter(p.data.copy()) for p in params]
            opt = _optimizer(cg, params, kind)
            sched = CASES[case](cg, opt)
            opt.load_state_dict(opt_state)
            sched.load_state_dict(sched_state)
        for p in params:
            p.grad = cg.tensor(rng.standard_normal(p.shape))
        opt.step()
        sched.step()
        rates.append(sched.get_last_lr())
    return rates, [p.data for p in params]


@pytest.mark.parametrize("case", list(CASES))
def test_state_dict_round_trip_resumes_exactly(case):
    whole, params = _run(case, "adam" if "cyclic" in case else "sgd", 30)
    resumed, params2 = _run(case, "adam" if "cyclic" in case else "sgd", 30, resume_at=13)
    assert resumed == whole
    for a, b in zip(params, params2):
        np.testing.assert_array_equal(a, b)


def test_callable_objects_keep_their_state():
    p = nn.Parameter(np.zeros(2))
    opt = cg.optim.SGD([p], lr=0.1, momentum=0.9)
    f = Halving()
    sched = ours_sched.CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=f)
    f.base = 3.0
    state = sched.state_dict()
    assert state["_scale_fn_custom"] == {"base": 3.0}
    g = Halving()
    fresh = ours_sched.CyclicLR(cg.optim.SGD([nn.Parameter(np.zeros(2))], lr=0.1, momentum=0.9),
                                0.01, 0.1, step_size_up=2, scale_fn=g)
    fresh.load_state_dict(state)
    assert g.base == 3.0
    m = ours_sched.MultiplicativeLR(cg.optim.SGD(
        [{"params": [nn.Parameter(np.zeros(2))]}, {"params": [nn.Parameter(np.zeros(1))]}],
        lr=0.1), [_lam, Halving()])
    assert m.state_dict()["lr_lambdas"] == [None, {"base": 2.0}]


def test_cyclic_sets_the_momentum_it_starts_from():
    p, tp = nn.Parameter(np.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    opt, topt = cg.optim.Adam([p], lr=0.5), torch.optim.Adam([tp], lr=0.5)
    ours_sched.CyclicLR(opt, 0.01, 0.1, max_momentum=0.93)
    torch.optim.lr_scheduler.CyclicLR(topt, 0.01, 0.1, max_momentum=0.93)
    _same_groups(opt, topt)
    assert opt.param_groups[0]["betas"][0] == 0.93
    assert {k: v for k, v in topt.param_groups[0].items() if k in opt.param_groups[0]
            and k != "params"} == {k: v for k, v in opt.param_groups[0].items() if k != "params"}


def _sgd():
    return cg.optim.SGD([nn.Parameter(np.zeros(2))], lr=0.1, momentum=0.9)


def _tsgd():
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1, momentum=0.9)


@pytest.mark.parametrize("name,kwargs,pattern", [
    ("ConstantLR", dict(factor=1.5), "factor=1.5"),
    ("ConstantLR", dict(factor=-0.5), "factor=-0.5"),
    ("CosineAnnealingWarmRestarts", dict(T_0=0), "T_0=0"),
    ("CosineAnnealingWarmRestarts", dict(T_0=5, T_mult=0), "T_mult=0"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, mode="sawtooth"), "mode='sawtooth'"),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.1), "base_lr has 2 entries"),
    ("ChainedScheduler", dict(schedulers=[]), "schedulers must be a non-empty"),
])
def test_bad_arguments_are_value_errors_as_in_torch(name, kwargs, pattern):
    with pytest.raises(ValueError, match=f"{name}: {pattern}"):
        if name == "ChainedScheduler":
            getattr(ours_sched, name)(**kwargs)
        else:
            getattr(ours_sched, name)(_sgd(), **kwargs)
    with pytest.raises(ValueError):  # the oracle refuses them too
        if name == "ChainedScheduler":
            getattr(torch.optim.lr_scheduler, name)(**kwargs)
        else:
            getattr(torch.optim.lr_scheduler, name)(_tsgd(), **kwargs)


@pytest.mark.parametrize("make,exc,pattern", [
    (lambda: ours_sched.MultiplicativeLR(_sgd(), 0.9), TypeError, "lr_lambda\\[0\\]=0.9"),
    (lambda: ours_sched.MultiplicativeLR(_sgd(), [_lam, _lam]), ValueError, "2 entries"),
    (lambda: ours_sched.MultiplicativeLR(None, _lam), TypeError, "optimizer=NoneType"),
    (lambda: ours_sched.ConstantLR(_sgd(), factor=0), ValueError, "factor=0"),
    (lambda: ours_sched.ConstantLR(_sgd(), total_iters=2.5), TypeError, "total_iters=2.5"),
    (lambda: ours_sched.PolynomialLR(_sgd(), total_iters=-1), ValueError, "total_iters=-1"),
    (lambda: ours_sched.PolynomialLR(_sgd(), power=-1.0), ValueError, "power=-1.0"),
    (lambda: ours_sched.CosineAnnealingWarmRestarts(_sgd(), T_0=2.5), TypeError, "T_0=2.5"),
    (lambda: ours_sched.CosineAnnealingWarmRestarts(_sgd(), T_0=3, eta_min="low"), TypeError,
     "eta_min='low'"),
    (lambda: ours_sched.CosineAnnealingWarmRestarts(_sgd(), T_0=3).step(-1), ValueError,
     "epoch=-1"),
    (lambda: ours_sched.CosineAnnealingWarmRestarts(_sgd(), T_0=3).step("2"), TypeError,
     "epoch='2'"),
    (lambda: ours_sched.CyclicLR(_sgd(), 0.01, 0.1, step_size_up=0), ValueError,
     "empty cycle"),
    (lambda: ours_sched.CyclicLR(_sgd(), 0.01, 0.1, step_size_up=-2), ValueError,
     "step_size_up=-2"),
    (lambda: ours_sched.CyclicLR(_sgd(), 0.01, 0.1, scale_mode="epochs"), ValueError,
     "scale_mode='epochs'"),
    (lambda: ours_sched.CyclicLR(_sgd(), 0.01, 0.1, scale_fn=2.0), TypeError, "scale_fn=2.0"),
    (lambda: ours_sched.CyclicLR(cg.optim.Adagrad([nn.Parameter(np.zeros(2))]), 0.01, 0.1),
     ValueError, "cycle_momentum=True needs"),
    (lambda: ours_sched.CyclicLR(_sgd(), 0.01, -0.1), ValueError, "max_lr=-0.1"),
    (lambda: ours_sched.ChainedScheduler([ours_sched.ConstantLR(_sgd()),
                                          ours_sched.ConstantLR(_sgd())]), ValueError,
     "schedulers\\[1\\] \\(ConstantLR\\) adjusts another"),
    (lambda: ours_sched.ChainedScheduler([ours_sched.ReduceLROnPlateau(_sgd())]), ValueError,
     "ReduceLROnPlateau"),
    (lambda: ours_sched.ChainedScheduler([_sgd()]), TypeError, "schedulers\\[0\\] is a SGD"),
])
def test_errors_name_the_argument(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make()


def test_chained_state_dict_must_match():
    opt = _sgd()
    chain = ours_sched.ChainedScheduler([ours_sched.ConstantLR(opt),
                                         ours_sched.ExponentialLR(opt, 0.9)])
    state = chain.state_dict()
    state["_schedulers"] = state["_schedulers"][:1]
    with pytest.raises(ValueError, match="one '_schedulers' entry per scheduler \\(2\\)"):
        chain.load_state_dict(state)
