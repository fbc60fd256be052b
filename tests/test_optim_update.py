"""Oracle: the optimiser updates as they were written before the chunked kernels (whole
arrays, float64 temporaries, copied here verbatim in effect), bit for bit, on the pool's
NumPy rules (``threads``) and on the compiled loops (``numba``); and the ``optim``
family's profiler events."""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
from convgrad import nn
from convgrad.ops import jit, update, update_loops
from convgrad.optim import SGD, Adadelta, Adam, AdamW, RMSprop


# ----------------------------------------------------------------------------- legacy oracle
def _fma(a, b, c):
    if c.dtype == np.float32:
        return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + c).astype(np.float32)
    return a * b + c


def _lerp_(start, end, weight):
    dt = start.dtype.type
    w = dt(weight)
    diff = end - start
    start[...] = _fma(diff, w, start) if abs(w) < 0.5 else _fma(diff, w - dt(1), end)


def _legacy_sgd(p, grad, state, lr, momentum, dampening, wd, nesterov):
    dt = p.dtype.type
    if wd != 0:
        grad = _fma(p, dt(wd), grad)
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = np.array(grad, copy=True)
        else:
            buf *= dt(momentum)
            if dampening == 0:
                buf += grad
            else:
                buf[...] = _fma(grad, dt(1 - dampening), buf)
        grad = _fma(buf, dt(momentum), grad) if nesterov else buf
    p[...] = _fma(grad, dt(-lr), p)


def _legacy_adam(p, grad, state, lr, betas, eps, wd, decoupled, amsgrad):
    dt = p.dtype.type
    beta1, beta2 = betas
    if not state:
        state.update(step=0, exp_avg=np.zeros_like(p), exp_avg_sq=np.zeros_like(p))
        if amsgrad:
            state["max_exp_avg_sq"] = np.zeros_like(p)
    state["step"] += 1
    step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
    if wd != 0:
        if decoupled:
            p *= dt(1 - lr * wd)
        else:
            grad = _fma(p, dt(wd), grad)
    _lerp_(m, grad, 1 - beta1)
    v *= dt(beta2)
    v[...] = _fma(dt(1 - beta2) * grad, grad, v)
    step_size = lr / (1 - beta1**step)
    if amsgrad:
        np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
        v = state["max_exp_avg_sq"]
    denom = np.sqrt(v) / dt((1 - beta2**step) ** 0.5)
    denom += dt(eps)
    p += dt(-step_size) * m / denom


def _legacy_rmsprop(p, grad, state, lr, alpha, eps, wd, momentum, centered):
    dt = p.dtype.type
    if not state:
        state.update(square_avg=np.zeros_like(p), momentum_buffer=np.zeros_like(p),
                     grad_avg=np.zeros_like(p))
    if wd != 0:
        grad = _fma(p, dt(wd), grad)
    s = state["square_avg"]
    s *= dt(alpha)
    s[...] = _fma(dt(1 - alpha) * grad, grad, s)
    if centered:
        a = state["grad_avg"]
        _lerp_(a, grad, 1 - alpha)
        avg = np.sqrt(_fma(-a, a, s))
    else:
        avg = np.sqrt(s)
    avg += dt(eps)
    if momentum > 0:
        buf = state["momentum_buffer"]
        buf *= dt(momentum)
        buf += grad / avg
        p[...] = _fma(buf, dt(-lr), p)
    else:
        p += dt(-lr) * grad / avg


def _legacy_adadelta(p, grad, state, lr, rho, eps, wd):
    dt = p.dtype.type
    eps = dt(eps)
    if not state:
        state.update(square_avg=np.zeros_like(p), acc_delta=np.zeros_like(p))
    if wd != 0:
        grad = _fma(p, dt(wd), grad)
    s, u = state["square_avg"], state["acc_delta"]
    s *= dt(rho)
    s[...] = _fma(dt(1 - rho) * grad, grad, s)
    delta = np.sqrt(u + eps) / np.sqrt(s + eps) * grad
    u *= dt(rho)
    u[...] = _fma(dt(1 - rho) * delta, delta, u)
    p[...] = _fma(delta, dt(-lr), p)


CASES = [
    (SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-4),
     lambda p, g, s: _legacy_sgd(p, g, s, 0.1, 0.9, 0.0, 1e-4, False)),
    (SGD, dict(lr=0.05, momentum=0.5, dampening=0.25, weight_decay=1e-2),
     lambda p, g, s: _legacy_sgd(p, g, s, 0.05, 0.5, 0.25, 1e-2, False)),
    (SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
     lambda p, g, s: _legacy_sgd(p, g, s, 0.05, 0.9, 0.0, 1e-3, True)),
    (SGD, dict(lr=0.3), lambda p, g, s: _legacy_sgd(p, g, s, 0.3, 0.0, 0.0, 0.0, False)),
    # the compiled loop's one-pass branches: momentum without decay, decay without momentum
    (SGD, dict(lr=0.1, momentum=0.9),
     lambda p, g, s: _legacy_sgd(p, g, s, 0.1, 0.9, 0.0, 0.0, False)),
    (SGD, dict(lr=0.3, weight_decay=1e-2),
     lambda p, g, s: _legacy_sgd(p, g, s, 0.3, 0.0, 0.0, 1e-2, False)),
    (Adam, dict(lr=1e-2, weight_decay=1e-2),
     lambda p, g, s: _legacy_adam(p, g, s, 1e-2, (0.9, 0.999), 1e-8, 1e-2, False, False)),
    (Adam, dict(lr=1e-2, betas=(0.3, 0.9), amsgrad=True),  # lerp's other branch
     lambda p, g, s: _legacy_adam(p, g, s, 1e-2, (0.3, 0.9), 1e-8, 0.0, False, True)),
    (AdamW, dict(lr=1e-3),
     lambda p, g, s: _legacy_adam(p, g, s, 1e-3, (0.9, 0.999), 1e-8, 1e-2, True, False)),
    (RMSprop, dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=1e-3),
     lambda p, g, s: _legacy_rmsprop(p, g, s, 1e-2, 0.99, 1e-8, 1e-3, 0.9, True)),
    (RMSprop, dict(lr=1e-2),
     lambda p, g, s: _legacy_rmsprop(p, g, s, 1e-2, 0.99, 1e-8, 0.0, 0.0, False)),
    (Adadelta, dict(lr=1.0, weight_decay=1e-2),
     lambda p, g, s: _legacy_adadelta(p, g, s, 1.0, 0.9, 1e-6, 1e-2)),
]

# a multi-MB parameter (many chunks, an uneven last one), a channels-last one, a
# non-contiguous gradient, small ones (whole chunks; one of them between the compiled
# loops' one-thread and OpenMP sizes, update_loops.VECTOR_MIN and PARALLEL_MIN) and a scalar
SHAPES = [(3 * update.CHUNK + 123, 11), (8, 64, 12, 12), (300, 257), (40, 100), (64,), ()]


def _arrays(dtype, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i, s in enumerate(SHAPES):
        p = rng.standard_normal(s).astype(dtype)
        g = (rng.standard_normal(s) * 10.0 ** rng.uniform(-3, 1)).astype(dtype)
        if i == 1:  # parameter and gradient channels-last
            p = np.ascontiguousarray(p.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
            g = np.ascontiguousarray(g.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        if i == 2:  # a transposed (Fortran-ordered) gradient
            g = np.asfortranarray(g)
        out.append((p, g))
    return out


@pytest.fixture(params=["numba", "threads", "numba-on-the-pool"])
def algorithm(request, monkeypatch):
    """The algorithm pinned, and the one an SGD or Adam step then runs (``numba-on-the-
    pool``: the serial loops on the pool, as where Numba's threads are not thread safe)."""
    name = request.param.split("-")[0]
    if name == "numba" and not jit.enabled():
        pytest.skip("Numba is not installed")
    if request.param == "numba-on-the-pool":
        monkeypatch.setattr(jit, "thread_safe", lambda: False)
        serial = update_loops._compile(jit.numba())
        assert all(not parallel for _, _, parallel in serial)
        monkeypatch.setattr(update_loops, "_compiled", [serial])
    with cg.ops.prefer(name):
        yield name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kwargs,legacy", CASES,
                         ids=[f"{c.__name__}-{k}" for c, k, _ in CASES])
def test_equal_legacy_bit_for_bit(cls, kwargs, legacy, dtype, algorithm):
    steps = 3
    data = [_arrays(dtype, seed) for seed in range(steps)]
    ours = [nn.Parameter(p.copy(order="K")) for p, _ in data[0]]
    ref = [p.copy(order="K") for p, _ in data[0]]
    opt = cls(ours, **kwargs)
    states = [{} for _ in ref]
    for step in range(steps):
        for a, (_, g) in zip(ours, data[step]):
            a.grad = cg.tensor(g)
        with cg.profile() as prof:
            opt.step()
        for p, (_, g), s in zip(ref, data[step], states):
            legacy(p, g.copy(order="K"), s)
        [event] = prof.of("optim")
        looped = algorithm == "numba" and cls in (SGD, Adam, AdamW)
        assert event.algorithm == ("numba" if looped else "threads")
        assert event.shapes == ((len(SHAPES), sum(int(np.prod(s)) for s in SHAPES)),)
    for a, b in zip(ours, ref):
        assert a.data.dtype == dtype
        np.testing.assert_array_equal(a.data, b)
    assert ours[1].data.strides == ref[1].strides  # updated in place, layout kept


@pytest.mark.parametrize("cls,kwargs,legacy", CASES[:1] + CASES[4:5],
                         ids=["SGD", "Adam"])
def test_prefer_numpy_runs_the_reference_with_the_same_bits(cls, kwargs, legacy):
    data = _arrays(np.float32, 0)
    a = [nn.Parameter(p.copy()) for p, _ in data]
    b = [nn.Parameter(p.copy()) for p, _ in data]
    opt_a, opt_b = cls(a, **kwargs), cls(b, **kwargs)
    for _ in range(2):
        for x, y, (_, g) in zip(a, b, data):
            x.grad, y.grad = cg.tensor(g), cg.tensor(g)
        with cg.profile() as prof:
            opt_a.step()
            with cg.ops.prefer("numpy"):
                opt_b.step()
        default = "numba" if jit.enabled() else "threads"
        assert [e.algorithm for e in prof.of("optim")] == [default, "numpy"]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.data, y.data)


def test_one_event_per_group_and_maximize():
    rng = np.random.default_rng(1)
    p = nn.Parameter(rng.standard_normal(5 * update.CHUNK).astype(np.float32))
    q = nn.Parameter(rng.standard_normal(7).astype(np.float32))
    r = nn.Parameter(rng.standard_normal(3).astype(np.float32))  # no gradient: untouched
    g = rng.standard_normal(p.shape).astype(np.float32)
    p0, r0 = p.data.copy(), r.data.copy()
    opt = SGD([{"params": [p], "maximize": True}, {"params": [q, r]}], lr=0.5)
    p.grad, q.grad = cg.tensor(g), cg.tensor(np.ones(7, np.float32))
    with cg.profile() as prof:
        opt.step()
    assert [(e.name, e.shapes) for e in prof.of("optim")] == [
        ("sgd", ((1, p0.size),)), ("sgd", ((1, 7),))]
    np.testing.assert_array_equal(p.data, _fma(g, np.float32(0.5), p0))  # ascends
    np.testing.assert_array_equal(r.data, r0)


def test_fma_rounds_once():
    # (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly (a float32); a float32 product would round
    # 1 + 2^-11 + 2^-24 to 1 + 2^-11 first and give 2^-11
    a = np.array([1 + 2.0**-12], np.float32)
    c = np.array([-1.0], np.float32)
    out = np.empty(1, np.float32)
    update.fma(out, a, a, c, update.Scratch())
    assert out[0] == np.float32(2.0**-11 + 2.0**-24)
    assert a * a + c == np.float32(2.0**-11)


@pytest.mark.parametrize("threads", [1, 2])
def test_mid_sized_parameters_run_the_vectorised_build(threads, monkeypatch):
    # the compiled loops' choice by size: the serial build below VECTOR_MIN, the parallel
    # (prange, vectorised) build on this thread from there, on every thread from
    # PARALLEL_MIN (with more than one thread)
    if not jit.enabled() or not jit.thread_safe():
        pytest.skip("needs Numba's thread-safe (prange) loops")
    loops = update_loops.rules()
    calls = []
    wrapped = {k: (lambda *a, k=k, f=f: (calls.append((k[2], a[0].size)), f(*a))[1])
               for k, f in loops.items()}
    monkeypatch.setattr(update_loops, "rules", lambda: wrapped)
    sizes = [update_loops.VECTOR_MIN - 1, update_loops.VECTOR_MIN, update_loops.PARALLEL_MIN]
    rng = np.random.default_rng(2)
    params = [nn.Parameter(rng.standard_normal(n).astype(np.float32)) for n in sizes]
    for p in params:
        p.grad = cg.tensor(rng.standard_normal(p.shape).astype(np.float32))
    opt = Adam(params, lr=1e-2)
    monkeypatch.setattr(update, "num_threads", lambda: threads)
    with cg.ops.prefer("numba"):
        opt.step()
    assert sorted(calls, key=lambda c: c[1]) == [(False, sizes[0]), (True, sizes[1]),
                                                 (True, sizes[2])]
