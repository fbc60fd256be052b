"""Oracle: torch.optim.lr_scheduler (torch 2.13) driving torch's optimiser with the same
gradients: the learning rates (and cycled momenta) are equal bit for bit at every step,
and so are SGD's float32 parameters where torch's kernels fuse multiply-adds."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import convgrad as cg  # noqa: E402
from convgrad import nn  # noqa: E402
from convgrad.optim import lr_scheduler as ours_sched  # noqa: E402

FUSED_CPU = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
STEPS = 25


def _lam(epoch):
    return 0.97 ** epoch + 0.01 * (epoch % 3)


def _lam2(epoch):
    return 1.0 / (1 + epoch)


def _seq(lib, opt):
    s = lib.optim.lr_scheduler
    return s.SequentialLR(opt, [s.LinearLR(opt, start_factor=0.2, total_iters=4),
                                s.ExponentialLR(opt, gamma=0.8),
                                s.CosineAnnealingLR(opt, T_max=7, eta_min=1e-3)],
                          milestones=[4, 9])


CASES = {
    "step": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5),
    "multistep": lambda lib, opt: lib.optim.lr_scheduler.MultiStepLR(
        opt, milestones=[2, 5, 5, 11], gamma=0.3),
    "exponential": lambda lib, opt: lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9),
    "cosine": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6,
                                                                         eta_min=0.01),
    "cosine_zero_min": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=11),
    "linear": lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.25,
                                                               end_factor=0.9, total_iters=7),
    "lambda": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, _lam),
    "lambda_per_group": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, [_lam, _lam2]),
    "sequential": _seq,
    "onecycle_cos": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=[0.5, 0.2], total_steps=STEPS),
    "onecycle_linear_3phase": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.4, epochs=5, steps_per_epoch=5, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, base_momentum=0.8, max_momentum=[0.9, 0.95]),
    "onecycle_no_momentum": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.3, total_steps=STEPS + 3, cycle_momentum=False, div_factor=10.0,
        final_div_factor=100.0),
}


def _setup(lib, params, optimizer):
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.03}]
    if optimizer == "sgd":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.01)


def _drive(case, optimizer, dtype=np.float32):
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s).astype(dtype) for s in [(7, 5), (16,)]]
    ours_p = [nn.Parameter(p.copy()) for p in init]
    theirs_p = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in init]
    opt, topt = _setup(cg, ours_p, optimizer), _setup(torch, theirs_p, optimizer)
    sched, tsched = CASES[case](cg, opt), CASES[case](torch, topt)
    assert sched.get_last_lr() == tsched.get_last_lr()
    for _ in range(STEPS):
        for a, b in zip(ours_p, theirs_p):
            g = rng.standard_normal(a.shape).astype(dtype)
            a.grad, b.grad = cg.tensor(g), torch.from_numpy(g.copy())
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        assert sched.get_last_lr() == tsched.get_last_lr(), case
        for g, tg in zip(opt.param_groups, topt.param_groups):
            assert g["lr"] == tg["lr"]
            assert g.get("momentum") == tg.get("momentum")
            assert tuple(g.get("betas", ())) == tuple(tg.get("betas", ()))
    return ours_p, theirs_p


@pytest.mark.parametrize("case", list(CASES))
def test_learning_rates_equal_torchs_bit_for_bit(case):
    ours_p, theirs_p = _drive(case, "sgd")
    for a, b in zip(ours_p, theirs_p):
        if FUSED_CPU:
            np.testing.assert_array_equal(a.data, b.detach().numpy())
        else:
            np.testing.assert_allclose(a.data, b.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["onecycle_cos", "onecycle_linear_3phase", "cosine"])
def test_schedules_drive_adam_as_torch(case):
    ours_p, theirs_p = _drive(case, "adam", np.float64)
    for a, b in zip(ours_p, theirs_p):
        np.testing.assert_allclose(a.data, b.detach().numpy(), rtol=1e-12, atol=1e-13)


PLATEAU = [
    dict(),
    dict(mode="max", factor=0.5, patience=1, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(patience=0, cooldown=1, min_lr=[0.05, 0.001], factor=0.3),
    dict(patience=2, eps=0.05, factor=0.7, threshold=1e-2),
]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=[str(k) for k in PLATEAU])
def test_reduce_on_plateau_equals_torch(kwargs):
    p, tp = nn.Parameter(np.zeros(2, np.float32)), torch.nn.Parameter(torch.zeros(2))
    opt = cg.optim.SGD([{"params": [p]}, {"params": [nn.Parameter(np.zeros(1, np.float32))],
                                          "lr": 0.02}], lr=0.1)
    topt = torch.optim.SGD([{"params": [tp]}, {"params": [torch.nn.Parameter(torch.zeros(1))],
                                               "lr": 0.02}], lr=0.1)
    sched = ours_sched.ReduceLROnPlateau(opt, **kwargs)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    metrics = np.random.default_rng(2).permutation(40) % 7 + np.linspace(5, 0, 40)
    for i, m in enumerate(metrics):
        value = cg.tensor(m) if i % 2 else float(m)  # a one-element Tensor works too
        sched.step(value)
        tsched.step(float(m))
        assert sched.get_last_lr() == tsched.get_last_lr(), i
        assert sched.num_bad_epochs == tsched.num_bad_epochs
        assert sched.best == tsched.best


def test_one_cycle_stepping_past_the_end_is_an_error_like_torch():
    opt = cg.optim.SGD([nn.Parameter(np.zeros(1, np.float32))], lr=0.1, momentum=0.9)
    sched = ours_sched.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="total_steps=3"):
        sched.step()


def _opt():
    return cg.optim.SGD([nn.Parameter(np.zeros(2, np.float32))], lr=0.1, momentum=0.9)


@pytest.mark.parametrize("make,exc,pattern", [
    (lambda o: ours_sched.StepLR([nn.Parameter(np.zeros(1))], 3), TypeError,
     "StepLR: optimizer=list is not an Optimizer"),
    (lambda o: ours_sched.CosineAnnealingLR(None, T_max=3), TypeError, "optimizer=NoneType"),
    (lambda o: ours_sched.OneCycleLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)],
                                                     lr=0.1), max_lr=1, total_steps=3),
     TypeError, "optimizer=SGD is not an Optimizer"),
    (lambda o: ours_sched.ReduceLROnPlateau("adam"), TypeError, "optimizer=str"),
    (lambda o: ours_sched.StepLR(o, step_size=0), ValueError, "step_size=0"),
    (lambda o: ours_sched.StepLR(o, step_size=2.5), TypeError, "step_size=2.5"),
    (lambda o: ours_sched.MultiStepLR(o, milestones=3), TypeError, "milestones=3"),
    (lambda o: ours_sched.ExponentialLR(o, gamma="fast"), TypeError, "gamma='fast'"),
    (lambda o: ours_sched.CosineAnnealingLR(o, T_max=0), ValueError, "T_max=0"),
    (lambda o: ours_sched.LinearLR(o, start_factor=2.0), ValueError, "start_factor=2.0"),
    (lambda o: ours_sched.LinearLR(o, start_factor=0), ValueError, "start_factor=0"),
    (lambda o: ours_sched.LambdaLR(o, [_lam, _lam]), ValueError, "lr_lambda has 2 entries"),
    (lambda o: ours_sched.LambdaLR(o, 0.5), TypeError, "lr_lambda\\[0\\]=0.5"),
    (lambda o: ours_sched.OneCycleLR(o, max_lr=1.0), ValueError, "total_steps"),
    (lambda o: ours_sched.OneCycleLR(o, max_lr=1.0, total_steps=5, anneal_strategy="exp"),
     ValueError, "anneal_strategy='exp'"),
    (lambda o: ours_sched.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=1.5),
     ValueError, "pct_start=1.5"),
    (lambda o: ours_sched.ReduceLROnPlateau(o, mode="lowest"), ValueError, "mode='lowest'"),
    (lambda o: ours_sched.ReduceLROnPlateau(o, factor=1.0), ValueError, "factor=1.0"),
    (lambda o: ours_sched.ReduceLROnPlateau(o, min_lr=[0.1, 0.2]), ValueError, "min_lr"),
    (lambda o: ours_sched.SequentialLR(o, [ours_sched.ReduceLROnPlateau(o)], []), ValueError,
     "ReduceLROnPlateau"),
    (lambda o: ours_sched.SequentialLR(o, [ours_sched.StepLR(_opt(), 2)], []), ValueError,
     "another optimiser"),
    (lambda o: ours_sched.SequentialLR(o, [ours_sched.StepLR(o, 2)], [3]), ValueError,
     "milestones=\\[3\\]"),
    (lambda o: ours_sched.StepLR(o, 2, last_epoch=4), ValueError, "initial_lr"),
])
def test_bad_arguments_name_themselves(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make(_opt())


def test_load_state_dict_rejects_another_schedulers_state():
    opt = _opt()
    step = ours_sched.StepLR(opt, step_size=2)
    cosine = ours_sched.CosineAnnealingLR(opt, T_max=4)
    with pytest.raises(ValueError, match="unknown key.*'step_size'"):
        cosine.load_state_dict(step.state_dict())
    with pytest.raises(TypeError, match="mapping"):
        cosine.load_state_dict([1, 2])
    with pytest.raises(TypeError, match="metrics="):
        ours_sched.ReduceLROnPlateau(opt).step("low")
