"""``cg.optim.LBFGS``.  Oracle: ``torch.optim.LBFGS`` on the same problem from the same
start: float64 losses, iterates and evaluation counts per ``step`` (with and without the
strong Wolfe line search, the history full and dropping its oldest pairs), a network's
parameters; float32 iterates within twice torch's float32 error (against float64)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import convgrad as cg

START = np.array([-1.5, 2.0, 0.5, -0.3, 1.2])


def _rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _minimise(lib, x0: np.ndarray, calls: int, dtype, **kw) -> list:
    """(loss, x, func_evals, n_iter) after each of ``calls`` steps on Rosenbrock."""
    x = lib.tensor(x0.copy(), dtype=dtype, requires_grad=True)
    opt = lib.optim.LBFGS([x], **kw)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    out = []
    for _ in range(calls):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: float() of a tensor needing grad
            loss = float(opt.step(closure))
        arr = x.detach().numpy() if lib is torch else x.numpy()
        out.append((loss, arr.astype(np.float64).copy(), opt.state[x]["func_evals"],
                    opt.state[x]["n_iter"]))
    return out


@pytest.mark.parametrize("kw", [
    {"lr": 0.1, "max_iter": 6, "history_size": 3},
    {"lr": 1.0, "max_iter": 6, "history_size": 3, "line_search_fn": "strong_wolfe"},
    {"lr": 1.0, "max_iter": 40, "max_eval": 30, "line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "max_iter": 10, "tolerance_change": 1e-3},
])
def test_float64_iterates_equal_torchs(kw):
    theirs = _minimise(torch, START, 4, torch.float64, **kw)
    ours = _minimise(cg, START, 4, cg.float64, **kw)
    for (lt, xt, et, nt), (lo, xo, eo, no) in zip(theirs, ours):
        assert (eo, no) == (et, nt)  # the same evaluations: the same path
        # rounding (torch's fused multiply-adds) grows over ill-conditioned iterations:
        # 1.8e-9 after 4 x 40 of them
        np.testing.assert_allclose(lo, lt, rtol=1e-8)
        np.testing.assert_allclose(xo, xt, rtol=1e-7, atol=1e-10)


def test_float32_within_twice_torchs_error():
    kw = {"lr": 1.0, "max_iter": 8, "line_search_fn": "strong_wolfe"}
    x0 = np.array([-0.8, 0.9, 0.4, 0.7, 1.1])
    exact = _minimise(torch, x0, 1, torch.float64, **kw)[0][1]
    theirs = _minimise(torch, x0, 1, torch.float32, **kw)[0][1]
    ours = _minimise(cg, x0, 1, cg.float32, **kw)[0][1]
    err, torch_err = (float(np.linalg.norm(a - exact)) / float(np.linalg.norm(exact))
                      for a in (ours, theirs))
    assert err <= 2 * max(torch_err, 2.0 ** -24), (err, torch_err)


def test_a_network_trains_as_torchs():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((6, 2, 8, 8)), rng.standard_normal((6, 3))
    models = []
    for lib in (torch, cg):
        nn = lib.nn
        models.append(nn.Sequential(nn.Conv2d(2, 4, 3), nn.Tanh(), nn.Flatten(),
                                    nn.Linear(144, 3)).to(lib.float64))
    models[1].load_state_dict({k: v.detach().numpy() for k, v in models[0].state_dict().items()})
    params = []
    for lib, model in zip((torch, cg), models):
        opt = lib.optim.LBFGS(model.parameters(), max_iter=5, line_search_fn="strong_wolfe")
        xt, yt = lib.tensor(x), lib.tensor(y)

        def closure(opt=opt, model=model, xt=xt, yt=yt, lib=lib):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(xt), yt)
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        params.append([np.asarray(p.detach().numpy() if lib is torch else p.numpy())
                       for p in model.parameters()])
    for o, t in zip(params[1], params[0]):
        np.testing.assert_allclose(o, t, rtol=1e-7, atol=1e-10)


def test_state_dict_resumes_the_same_run():
    kw = {"lr": 1.0, "max_iter": 4, "history_size": 3, "line_search_fn": "strong_wolfe"}
    x = cg.tensor(START.copy(), requires_grad=True)
    opt = cg.optim.LBFGS([x], **kw)

    def closure_for(opt, x):
        def closure():
            opt.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            return loss
        return closure

    opt.step(closure_for(opt, x))
    saved, x_saved = opt.state_dict(), x.numpy().copy()
    opt.step(closure_for(opt, x))
    x2 = cg.tensor(x_saved, requires_grad=True)
    opt2 = cg.optim.LBFGS([x2], **kw)
    opt2.load_state_dict(saved)
    opt2.step(closure_for(opt2, x2))
    np.testing.assert_array_equal(x2.numpy(), x.numpy())
    assert opt2.state[x2]["n_iter"] == opt.state[x]["n_iter"]
    bad = {**saved, "state": {0: {**saved["state"][0], "d": np.zeros(3)}}}
    with pytest.raises(ValueError, match="total size"):
        cg.optim.LBFGS([x2], **kw).load_state_dict(bad)


def test_stops_at_once_where_the_gradient_is_zero_and_reads_missing_gradients_as_zero():
    x = cg.tensor(np.ones(5), requires_grad=True)  # Rosenbrock's minimum
    unused = cg.tensor(np.ones(2), requires_grad=True)  # never gets a gradient
    opt = cg.optim.LBFGS([x, unused])

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 0.0
    assert opt.state[x] == {"func_evals": 1, "n_iter": 0}
    np.testing.assert_array_equal(unused.numpy(), np.ones(2))


def test_wrong_arguments_name_themselves():
    x = cg.tensor(START, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn='backtracking'"):
        cg.optim.LBFGS([x], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="max_iter=0"):
        cg.optim.LBFGS([x], max_iter=0)
    with pytest.raises(ValueError, match="history_size=2.5"):
        cg.optim.LBFGS([x], history_size=2.5)
    with pytest.raises(ValueError, match="parameter groups"):
        cg.optim.LBFGS([{"params": [x]}, {"params": [cg.tensor(np.ones(2),
                                                               requires_grad=True)]}])
    with pytest.raises(TypeError, match="dtypes"):
        cg.optim.LBFGS([x, cg.tensor(np.ones(2, np.float32), requires_grad=True)])
    with pytest.raises(TypeError, match="closure"):
        cg.optim.LBFGS([x]).step()
