"""Oracle: torch.optim's Adagrad, Adamax, NAdam, RAdam, Rprop and ASGD (torch 2.13 CPU) fed
the same gradients (or training the same model with each library's own backward), and
torch's own state dicts; torch's ValueError for the same bad hyper-parameters."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import convgrad as cg  # noqa: E402
from convgrad import nn  # noqa: E402

SHAPES = [(33, 17), (64,), (5, 3, 3, 3), ()]

CONFIGS = [
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5,
                     eps=1e-6, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=1e-2, betas=(0.3, 0.9), weight_decay=0.1, eps=1e-3, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, betas=(0.3, 0.99))),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01,
                   maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, betas=(0.5, 0.9))),  # rectified from step 6
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.5), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1)),  # averaging
]
IDS = [f"{k}-{v}" for k, v in CONFIGS]


def _groups(params, kind, kwargs):
    """Two groups: the defaults, and one with its own lr (and weight decay)."""
    second = {"params": params[2:], "lr": kwargs.get("lr", 1e-2) * 0.5}
    if kind != "Rprop":
        second["weight_decay"] = 0.05
    return [{"params": params[:2]}, second]


def _gradients(rng, steps, dtype):
    return [[np.asarray(rng.standard_normal(s) * 10.0 ** rng.uniform(-3, 1), dtype)
             for s in SHAPES] for _ in range(steps)]


def _torch_run(kind, kwargs, init, grads, dtype):
    params = [torch.nn.Parameter(torch.tensor(p, dtype=dtype)) for p in init]
    opt = getattr(torch.optim, kind)(_groups(params, kind, kwargs), **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = torch.tensor(g, dtype=dtype)
        opt.step()
    return [p.detach().numpy() for p in params], opt


def _our_run(kind, kwargs, init, grads, dtype):
    params = [nn.Parameter(np.array(p, dtype)) for p in init]
    opt = getattr(cg.optim, kind)(_groups(params, kind, kwargs), **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = cg.tensor(np.asarray(g, dtype))
        opt.step()
    return [p.data for p in params], opt


def _eps_error(a, b, start):
    scale = max(float(np.abs(b).max()), float(np.abs(start).max()), 1e-30)
    return float(np.abs(a.astype(np.float64) - b).max() / scale / np.finfo(a.dtype).eps)


def _state_matches(sd, tsd, dtype):
    """Our state dict has torch's group entries, parameter indices, state names and values."""
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in tsd["param_groups"]]
    for g, tg in zip(sd["param_groups"], tsd["param_groups"]):
        assert {k: v for k, v in tg.items() if k in g} == g
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for i, state in sd["state"].items():
        want = tsd["state"][i]
        assert sorted(state) == sorted(want)
        for name, value in state.items():
            w = want[name].numpy()
            if name == "step":
                assert value == int(w)
            elif name in ("eta", "mu", "mu_product"):  # float32 in torch, and here
                assert np.asarray(value).dtype == w.dtype == np.float32, name
                assert value == w, name
            else:
                assert value.dtype == dtype
                scale = float(np.abs(w).max()) or 1.0
                assert np.abs(value - w).max() <= 16 * np.finfo(dtype).eps * scale, name


@pytest.mark.parametrize("kind,kwargs", CONFIGS, ids=IDS)
def test_float64_twenty_steps_equal_torch(kind, kwargs):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = _gradients(rng, 20, np.float64)
    ours, opt = _our_run(kind, kwargs, init, grads, np.float64)
    theirs, topt = _torch_run(kind, kwargs, init, grads, torch.float64)
    for a, b, start in zip(ours, theirs, init):
        assert a.dtype == np.float64
        # torch fuses float64 multiply-adds that NumPy rounds twice: measured under 1 epsilon
        assert _eps_error(a, b, start) <= 4, (kind, kwargs)
    _state_matches(opt.state_dict(), topt.state_dict(), np.float64)


@pytest.mark.parametrize("kind,kwargs", CONFIGS, ids=IDS)
def test_float32_within_twice_torchs_error(kind, kwargs):
    """float32 runs of both libraries against torch float64 on the same float32 values
    (relative 2-norm over all parameters), after 20 steps."""
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = _gradients(rng, 20, np.float32)
    exact, _ = _torch_run(kind, kwargs, init, grads, torch.float64)
    theirs, topt = _torch_run(kind, kwargs, init, grads, torch.float32)
    ours, opt = _our_run(kind, kwargs, init, grads, np.float32)
    e = np.concatenate([x.ravel() for x in exact])
    t_err = np.linalg.norm(np.concatenate([x.ravel() for x in theirs]) - e) / np.linalg.norm(e)
    o_err = np.linalg.norm(np.concatenate([x.ravel() for x in ours]) - e) / np.linalg.norm(e)
    assert all(a.dtype == np.float32 for a in ours)
    assert o_err <= 2 * max(t_err, 2.0 ** -24), (kind, o_err, t_err)
    _state_matches(opt.state_dict(), topt.state_dict(), np.float32)


def _torch_state_to_numpy(state):
    return {"state": {i: {k: v.numpy() if isinstance(v, torch.Tensor) else v
                          for k, v in s.items()} for i, s in state["state"].items()},
            "param_groups": state["param_groups"]}


@pytest.mark.parametrize("kind,kwargs", CONFIGS[1::2], ids=IDS[1::2])
def test_torchs_state_dict_loads_and_continues(kind, kwargs):
    """Torch's state after 5 steps, loaded into a fresh convgrad optimiser, continues as
    torch does (torch casts its float32 scalar state to float64 on loading; so do we)."""
    rng = np.random.default_rng(5)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = _gradients(rng, 12, np.float64)
    _, topt = _torch_run(kind, kwargs, init, grads[:5], torch.float64)
    middle = [p.detach().numpy().copy() for g in topt.param_groups for p in g["params"]]
    ours = [nn.Parameter(p.copy()) for p in middle]
    opt = getattr(cg.optim, kind)(_groups(ours, kind, kwargs), **kwargs)
    opt.load_state_dict(_torch_state_to_numpy(topt.state_dict()))
    topt.load_state_dict(topt.state_dict())  # torch's own reload casts its scalar state too
    theirs = [p for g in topt.param_groups for p in g["params"]]
    for step in grads[5:]:
        for a, b, g in zip(ours, theirs, step):
            a.grad, b.grad = cg.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    for a, b, start in zip(ours, theirs, middle):
        assert _eps_error(a.data, b.detach().numpy(), start) <= 4, kind
    for s in opt.state.values():
        for name in ("eta", "mu", "mu_product"):
            if name in s:
                assert type(s[name]) is np.float64


@pytest.mark.parametrize("kind,kwargs", CONFIGS[::2], ids=IDS[::2])
def test_own_state_dict_resumes_bit_for_bit(kind, kwargs):
    rng = np.random.default_rng(7)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = _gradients(rng, 10, np.float32)
    whole, _ = _our_run(kind, kwargs, init, grads, np.float32)
    half, opt = _our_run(kind, kwargs, init, grads[:5], np.float32)
    params = [nn.Parameter(p.copy()) for p in half]
    fresh = getattr(cg.optim, kind)(_groups(params, kind, kwargs), **kwargs)
    fresh.load_state_dict(opt.state_dict())
    for step in grads[5:]:
        for p, g in zip(params, step):
            p.grad = cg.tensor(g)
        fresh.step()
    for a, b in zip(whole, params):
        np.testing.assert_array_equal(a, b.data)


@pytest.mark.parametrize("kind,kwargs", [
    ("Adagrad", dict(lr=0.05, lr_decay=1e-3)), ("Adamax", dict(lr=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=1e-2, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=1e-2)), ("Rprop", dict(lr=1e-3)), ("ASGD", dict(lr=0.05, t0=10))])
def test_training_a_model_matches_torch(kind, kwargs):
    """A small conv net trained 20 steps in float64, gradients from each library's own
    backward: the same parameters."""
    rng = np.random.default_rng(0)
    ours = nn.Sequential(nn.Conv2d(1, 3, 3, stride=2, rng=0), nn.Tanh(), nn.Flatten(),
                         nn.Linear(3 * 3 * 3, 1, rng=0)).double()
    theirs = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3, stride=2), torch.nn.Tanh(),
                                 torch.nn.Flatten(), torch.nn.Linear(3 * 3 * 3, 1)).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    opt = getattr(cg.optim, kind)(ours.parameters(), **kwargs)
    topt = getattr(torch.optim, kind)(theirs.parameters(), **kwargs)
    for _ in range(20):
        x, y = rng.standard_normal((4, 1, 7, 7)), rng.standard_normal((4, 1))
        loss = ((ours(cg.tensor(x)) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        tloss = ((theirs(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
        topt.zero_grad()
        tloss.backward()
        topt.step()
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k], v.numpy(), rtol=1e-10, atol=1e-12)
    if kind == "ASGD":  # the running average too
        for p, tp in zip(ours.parameters(), theirs.parameters()):
            np.testing.assert_allclose(opt.state[p]["ax"], topt.state[tp]["ax"].numpy(),
                                       rtol=1e-10, atol=1e-12)


def test_adagrad_state_exists_from_the_start():
    """As torch: every parameter has its ``sum`` (the initial accumulator) before a step,
    parameters without a gradient keep it, and a group added later starts lazily."""
    a = nn.Parameter(np.ones(3))
    b = nn.Parameter(np.ones(2))
    ta, tb = torch.nn.Parameter(torch.ones(3, dtype=torch.float64)), torch.nn.Parameter(
        torch.ones(2, dtype=torch.float64))
    opt = cg.optim.Adagrad([a, b], initial_accumulator_value=0.25)
    topt = torch.optim.Adagrad([ta, tb], initial_accumulator_value=0.25)
    _state_matches(opt.state_dict(), topt.state_dict(), np.float64)
    a.grad, ta.grad = cg.tensor(np.full(3, 0.5)), torch.full((3,), 0.5, dtype=torch.float64)
    opt.step()
    topt.step()
    _state_matches(opt.state_dict(), topt.state_dict(), np.float64)
    c = nn.Parameter(np.ones(4))
    opt.add_param_group({"params": [c], "initial_accumulator_value": 3.0})
    assert c not in opt.state
    c.grad = cg.tensor(np.ones(4))
    opt.step()  # torch takes the constructor's initial value here, not the group's
    np.testing.assert_array_equal(opt.state[c]["sum"], np.full(4, 1.25))


def test_grads_of_the_other_dtype_and_params_without_grad():
    p = nn.Parameter(np.ones(3, np.float32))
    q = nn.Parameter(np.ones(3, np.float32))
    opt = cg.optim.NAdam([p, q])
    p.grad = cg.tensor(np.full(3, 0.5))  # float64 gradient, float32 parameter
    opt.step()
    assert p.data.dtype == np.float32 and q not in opt.state
    np.testing.assert_array_equal(q.data, np.ones(3, np.float32))


P = [nn.Parameter(np.zeros(3)), nn.Parameter(np.zeros(2))]


@pytest.mark.parametrize("kind,kwargs,exc,pattern", [
    ("Adagrad", dict(lr=-0.1), ValueError, "lr=-0.1"),
    ("Adagrad", dict(lr_decay=-1), ValueError, "lr_decay=-1"),
    ("Adagrad", dict(weight_decay=-1), ValueError, "weight_decay=-1"),
    ("Adagrad", dict(initial_accumulator_value=-1), ValueError, "initial_accumulator_value=-1"),
    ("Adagrad", dict(eps=-1e-10), ValueError, "eps=-1e-10"),
    ("Adamax", dict(lr=-0.1), ValueError, "lr=-0.1"),
    ("Adamax", dict(betas=(1.0, 0.9)), ValueError, "betas\\[0\\]=1.0"),
    ("Adamax", dict(eps=-1.0), ValueError, "eps=-1.0"),
    ("NAdam", dict(lr=-0.1), ValueError, "lr=-0.1"),
    ("NAdam", dict(momentum_decay=-1e-3), ValueError, "momentum_decay=-0.001"),
    ("NAdam", dict(betas=(0.9, 1.5)), ValueError, "betas\\[1\\]=1.5"),
    ("RAdam", dict(lr=-0.1), ValueError, "lr=-0.1"),
    ("RAdam", dict(weight_decay=-0.1), ValueError, "weight_decay=-0.1"),
    ("Rprop", dict(lr=-0.1), ValueError, "lr=-0.1"),
    ("Rprop", dict(etas=(1.5, 2.0)), ValueError, "etas=\\(1.5, 2.0\\)"),
    ("Rprop", dict(etas=(0.5, 0.9)), ValueError, "etas=\\(0.5, 0.9\\)"),
    ("ASGD", dict(lr=-0.1), ValueError, "lr=-0.1"),
    ("ASGD", dict(weight_decay=-0.1), ValueError, "weight_decay=-0.1"),
])
def test_bad_hyperparameters_are_value_errors_as_in_torch(kind, kwargs, exc, pattern):
    with pytest.raises(exc, match=f"{kind}: {pattern}"):
        getattr(cg.optim, kind)(P, **kwargs)
    with pytest.raises(ValueError):  # the oracle refuses them too
        getattr(torch.optim, kind)([torch.nn.Parameter(torch.zeros(3))], **kwargs)


@pytest.mark.parametrize("make,exc,pattern", [
    (lambda: cg.optim.NAdam(P, decoupled_weight_decay="yes"), TypeError,
     "decoupled_weight_decay='yes'"),
    (lambda: cg.optim.RAdam(P, maximize=1), TypeError, "maximize=1"),
    (lambda: cg.optim.Rprop(P, etas=0.5), TypeError, "etas=0.5"),
    (lambda: cg.optim.Rprop(P, step_sizes=(1.0, 0.1)), ValueError, "step_sizes=\\(1.0, 0.1\\)"),
    (lambda: cg.optim.Rprop(P, step_sizes=(-1.0, 1.0)), ValueError, "step_sizes\\[0\\]=-1.0"),
    (lambda: cg.optim.ASGD(P, lambd=float("nan")), ValueError, "lambd=nan"),
    (lambda: cg.optim.ASGD(P, t0="soon"), TypeError, "t0='soon'"),
    (lambda: cg.optim.Adamax(P, betas=0.9), TypeError, "betas=0.9"),
    (lambda: cg.optim.Adagrad([{"params": P, "lr": -1.0}]), ValueError, "lr=-1.0"),
    (lambda: cg.optim.RAdam([{"params": P, "amsgrad": True}]), ValueError, "amsgrad"),
])
def test_errors_name_the_argument(make, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make()


def test_bad_scalar_state_is_refused():
    p = nn.Parameter(np.zeros(3))
    opt = cg.optim.ASGD([p])
    p.grad = cg.tensor(np.ones(3))
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["eta"] = np.ones(2)
    with pytest.raises(TypeError, match="state\\[0\\]\\['eta'\\] must be one number"):
        opt.load_state_dict(sd)
    sd["state"][0]["eta"] = "fast"
    with pytest.raises(TypeError, match="'fast' must be a number"):
        opt.load_state_dict(sd)
    assert type(opt.state[p]["eta"]) is np.float32  # nothing changed


@pytest.mark.parametrize("kind,kwargs", CONFIGS[1::2], ids=IDS[1::2])
def test_chunks_on_threads_give_the_reference_bits(kind, kwargs):
    """A parameter of several chunks (``update.CHUNK``), updated in slices on the thread
    pool, gets the bits of the whole-array NumPy reference (``prefer("numpy")``)."""
    rng = np.random.default_rng(9)
    init = rng.standard_normal((3, cg.ops.update.CHUNK + 1000)).astype(np.float32)
    grads = [rng.standard_normal(init.shape).astype(np.float32) for _ in range(3)]
    out = []
    for algorithm in ("threads", "numpy"):
        p = nn.Parameter(init.copy())
        opt = getattr(cg.optim, kind)([p], **kwargs)
        with cg.ops.prefer(algorithm):
            for g in grads:
                p.grad = cg.tensor(g)
                opt.step()
        out.append(p.data)
    np.testing.assert_array_equal(out[0], out[1])
