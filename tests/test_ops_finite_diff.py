"""Oracle: central finite differences in float64."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from convgrad.ops import ConvSpec, conv_forward, conv_input_grad, conv_weight_grad

EPS = 1e-6


def _spec(nd, stride=None, padding=None, kdil=None, idil=None, groups=1, flip=False):
    return ConvSpec(stride=stride or (1,) * nd, padding=padding or ((0, 0),) * nd,
                    kernel_dilation=kdil or (1,) * nd, input_dilation=idil or (1,) * nd,
                    groups=groups, flip=flip)


# (name, x shape, w shape, spec): tiny, so every element is differentiated
SMALL = [
    ("plain-1d", (1, 1, 5), (1, 1, 3), _spec(1)),
    ("batch-channels-1d", (2, 2, 4), (3, 2, 2), _spec(1, padding=((1, 1),))),
    ("asym-pad-1d", (1, 2, 5), (2, 2, 3), _spec(1, padding=((2, 0),))),
    ("negative-pad-1d", (2, 1, 7), (2, 1, 2), _spec(1, padding=((-2, -1),))),
    ("stride-unused-tail-1d", (1, 2, 8), (2, 2, 2), _spec(1, stride=(3,))),  # x[7] unused
    ("stride-gt-kernel-1d", (2, 1, 9), (1, 1, 2), _spec(1, stride=(4,))),  # gaps unused
    ("kdil-1d", (1, 2, 8), (2, 2, 3), _spec(1, kdil=(3,))),
    ("idil-1d", (1, 2, 4), (2, 2, 3), _spec(1, idil=(3,), padding=((1, 2),))),
    ("transposed-1d", (2, 1, 3), (2, 1, 4), _spec(1, idil=(2,), padding=((3, 3),))),
    ("idil-stride-negpad-1d", (1, 1, 6), (2, 1, 3),
     _spec(1, idil=(2,), stride=(3,), padding=((-1, 2),))),
    ("flip-1d", (1, 2, 6), (2, 2, 3), _spec(1, flip=True, padding=((0, 1),))),
    ("groups-1d", (1, 4, 5), (4, 2, 2), _spec(1, groups=2, stride=(2,))),
    ("depthwise-mult-1d", (2, 2, 5), (6, 1, 3), _spec(1, groups=2, padding=((1, -1),))),
    ("flip-groups-dil-1d", (1, 4, 4), (2, 2, 2),
     _spec(1, groups=2, flip=True, kdil=(2,), idil=(3,), stride=(2,), padding=((1, 0),))),
    ("plain-2d", (1, 1, 4, 3), (1, 1, 2, 2), _spec(2)),
    ("stride-unused-2d", (1, 2, 5, 4), (2, 2, 2, 1), _spec(2, stride=(2, 3))),
    ("negpad-kdil-2d", (1, 1, 6, 5), (2, 1, 2, 2),
     _spec(2, padding=((-1, 0), (1, -2)), kdil=(2, 1))),
    ("idil-2d", (1, 1, 3, 3), (2, 1, 2, 3), _spec(2, idil=(2, 3), padding=((1, 1), (0, 2)))),
    ("flip-groups-idil-2d", (1, 2, 3, 3), (4, 1, 2, 2),
     _spec(2, groups=2, flip=True, idil=(2, 1), kdil=(1, 2), stride=(2, 1),
           padding=((0, 1), (1, 0)))),
    ("all-3d", (1, 2, 3, 2, 3), (2, 1, 2, 1, 2),
     _spec(3, groups=2, flip=True, stride=(2, 1, 1), idil=(2, 1, 2), kdil=(1, 1, 2),
           padding=((1, -1), (0, 0), (1, 1)))),
]


def _loss(x, w, gy, spec):
    return float(np.sum(conv_forward(x, w, spec) * gy))


def _numeric_grad(f, a):
    g = np.empty_like(a)
    for idx in np.ndindex(a.shape):
        old = a[idx]
        a[idx] = old + EPS
        fp = f()
        a[idx] = old - EPS
        fm = f()
        a[idx] = old
        g[idx] = (fp - fm) / (2 * EPS)
    return g


def _data(rng, x_shape, w_shape, spec):
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    gy = rng.standard_normal(spec.output_shape(x_shape, w_shape))
    return x, w, gy


@pytest.mark.parametrize("name,x_shape,w_shape,spec", SMALL, ids=[c[0] for c in SMALL])
def test_input_grad_matches_central_differences(name, x_shape, w_shape, spec):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x, w, gy = _data(rng, x_shape, w_shape, spec)
    numeric = _numeric_grad(lambda: _loss(x, w, gy, spec), x)
    analytic = conv_input_grad(gy, w, x_shape, spec)
    assert analytic.shape == x.shape and analytic.dtype == np.float64
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,x_shape,w_shape,spec", SMALL, ids=[c[0] for c in SMALL])
def test_weight_grad_matches_central_differences(name, x_shape, w_shape, spec):
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    x, w, gy = _data(rng, x_shape, w_shape, spec)
    numeric = _numeric_grad(lambda: _loss(x, w, gy, spec), w)
    analytic = conv_weight_grad(x, gy, w_shape, spec)
    assert analytic.shape == w.shape and analytic.dtype == np.float64
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)


def test_unused_inputs_get_zero_gradient():
    # stride 3 over length 8 with a 2-tap kernel reads x[0, 1, 3, 4, 6, 7]; x[2], x[5] unused
    spec = _spec(1, stride=(3,))
    rng = np.random.default_rng(7)
    x, w, gy = _data(rng, (2, 2, 8), (3, 2, 2), spec)
    gx = conv_input_grad(gy, w, x.shape, spec)
    assert np.all(gx[..., [2, 5]] == 0)
    assert np.all(gx[..., [0, 1, 3, 4, 6, 7]] != 0)


def _random_spec(rng):
    nd = int(rng.integers(1, 4))
    stride, pad, kdil, idil, K, L = [], [], [], [], [], []
    for _ in range(nd):
        while True:
            k, kd = int(rng.integers(1, 6)), int(rng.integers(1, 4))
            di, s = int(rng.choice([1, 1, 2, 3, 4])), int(rng.integers(1, 4))
            n = int(rng.integers(1, {1: 40, 2: 14, 3: 7}[nd]))
            lo, hi = (int(v) for v in rng.integers(-5, 6, size=2))
            out = ((n - 1) * di + 1 + lo + hi - (k - 1) * kd - 1) // s + 1
            if out >= 1 and any((p * s + t * kd - lo) % di == 0
                                and 0 <= (p * s + t * kd - lo) // di < n
                                for p in range(out) for t in range(k)):
                break  # some output of this dim meets a real input sample
        for lst, v in zip((stride, pad, kdil, idil, K, L), (s, (lo, hi), kd, di, k, n)):
            lst.append(v)
    G = int(rng.integers(1, 4))
    cg, og = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    spec = ConvSpec(stride=tuple(stride), padding=tuple(pad), kernel_dilation=tuple(kdil),
                    input_dilation=tuple(idil), groups=G, flip=bool(rng.integers(0, 2)))
    return spec, (int(rng.integers(1, 4)), G * cg, *L), (G * og, cg, *K)


@pytest.mark.parametrize("seed", range(40))
def test_adjoint_identities(seed):
    """<conv(x, w), gy> == <x, conv_input_grad(gy, w)> == <w, conv_weight_grad(x, gy)>."""
    rng = np.random.default_rng([99, seed])
    spec, x_shape, w_shape = _random_spec(rng)
    x, w, gy = _data(rng, x_shape, w_shape, spec)
    y = conv_forward(x, w, spec)
    gx = conv_input_grad(gy, w, x_shape, spec)
    gw = conv_weight_grad(x, gy, w_shape, spec)
    a, b, c = np.sum(y * gy), np.sum(x * gx), np.sum(w * gw)
    # rounding scale: the same sums with every term made non-negative
    tol = 1e-11 * float(np.sum(conv_forward(np.abs(x), np.abs(w), spec) * np.abs(gy)))
    tol = max(tol, 1e-300)
    assert abs(a - b) <= tol, (spec, x_shape, w_shape, a, b)
    assert abs(a - c) <= tol, (spec, x_shape, w_shape, a, c)
