"""Order statistics, statistics, searching and index writes against torch.

Oracle: torch (CPU) in float64 on the same values: results (values and indices), the
gradients of a random weighting of the float outputs, a second-order check where the
operation is smooth, and float32 errors within twice torch's own float32 error.  Ties are
tested where torch documents them (cummax/cummin: the last index; mode: the smallest most
frequent value); otherwise the data are tie-free.
"""

# ruff: noqa: B023 (the lambdas made in loops run within their iteration)
from __future__ import annotations

import numpy as np
import pytest
import torch

import convgrad as cg

RNG = np.random.default_rng(7)
pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")


def _arrays(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def _compare(fn_t, fn_c, arrays, grad=True, second=False, ints=()):
    """``fn_t`` on torch float64 tensors and ``fn_c`` on convgrad ones (arrays at the
    positions ``ints`` are integer constants for both): results equal, gradients of a
    random weighting equal (and of the gradients' weighting with ``second``)."""
    def make(lib, a, i):
        if i in ints:  # integer or bool constants (convgrad's tensor() makes float32 else)
            return lib.tensor(a, dtype=lib.bool if a.dtype == bool else lib.int64)
        return lib.tensor(a, dtype=lib.float64, requires_grad=grad)

    ti = [make(torch, a, i) for i, a in enumerate(arrays)]
    ci = [make(cg, a, i) for i, a in enumerate(arrays)]
    to, co = _arrays(fn_t(*ti)), _arrays(fn_c(*ci))
    assert len(to) == len(co)
    for t, c in zip(to, co):
        t = t.detach().numpy()
        assert tuple(c.shape) == t.shape
        assert np.asarray(c.numpy()).dtype == t.dtype, (c.numpy().dtype, t.dtype)
        np.testing.assert_allclose(c.numpy(), t, rtol=1e-12, atol=1e-12, equal_nan=True)
    if not grad:
        return
    floats = [(t, c) for t, c in zip(to, co) if t.dtype.is_floating_point and t.requires_grad]
    ws = [RNG.standard_normal(tuple(t.shape)) for t, _ in floats]
    lt = sum((t * torch.tensor(w)).sum() for (t, _), w in zip(floats, ws))
    lc = sum((c * cg.tensor(w, dtype=cg.float64)).sum() for (_, c), w in zip(floats, ws))
    wrt_t = [t for i, t in enumerate(ti) if i not in ints]
    wrt_c = [c for i, c in enumerate(ci) if i not in ints]
    gt = torch.autograd.grad(lt, wrt_t, create_graph=second, allow_unused=True)
    gc = cg.grad(lc, wrt_c, create_graph=second, allow_unused=True)
    for t, c, x in zip(gt, gc, wrt_t):
        t = torch.zeros_like(x) if t is None else t
        c = np.zeros(x.shape) if c is None else c.numpy()
        np.testing.assert_allclose(c, t.detach().numpy(), rtol=1e-10, atol=1e-12)
    if second:
        vs = [RNG.standard_normal(tuple(x.shape)) for x in wrt_t]
        st = sum((g * torch.tensor(v)).sum() for g, v in zip(gt, vs) if g is not None)
        sc = sum((g * cg.tensor(v, dtype=cg.float64)).sum() for g, v in zip(gc, vs)
                 if g is not None)
        ht = torch.autograd.grad(st, wrt_t, allow_unused=True)
        hc = cg.grad(sc, wrt_c, allow_unused=True)
        for t, c, x in zip(ht, hc, wrt_t):
            t = np.zeros(x.shape) if t is None else t.numpy()
            c = np.zeros(x.shape) if c is None else c.numpy()
            np.testing.assert_allclose(c, t, rtol=1e-9, atol=1e-11)


def _i(values):
    return cg.tensor(values, dtype=cg.int64)


def _distinct(*shape):
    """Tie-free values."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) + RNG.uniform(0.1, 0.9, n)).reshape(shape) / n


# ----------------------------------------------------------------------------- order stats
TIES = np.array([[1., 3, 3, 2, 3, 1, 1], [2, 2, 5, 5, 0, 0, 5]])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cumulative_extrema_with_ties(name):
    _compare(lambda x: getattr(torch, name)(x, 1), lambda x: getattr(cg, name)(x, 1), [TIES])
    _compare(lambda x: getattr(x, name)(0), lambda x: getattr(x, name)(0), [_distinct(4, 3)])


def test_cummax_nan():
    a = np.array([1., np.nan, 3, np.nan, 0])
    t, c = torch.tensor(a).cummax(0), cg.tensor(a).cummax(0)
    np.testing.assert_array_equal(c.indices.numpy(), t.indices.numpy())


def test_logcumsumexp():
    a = RNG.standard_normal((3, 9)) * 30
    _compare(lambda x: torch.logcumsumexp(x, 1), lambda x: cg.logcumsumexp(x, 1), [a],
             second=True)
    _compare(lambda x: x.logcumsumexp(0), lambda x: x.logcumsumexp(0), [a])


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_mode_nanmedian(keepdim):
    a = _distinct(3, 6)
    _compare(lambda x: torch.kthvalue(x, 2, 1, keepdim), lambda x: cg.kthvalue(x, 2, 1, keepdim),
             [a])
    _compare(lambda x: x.mode(1, keepdim), lambda x: x.mode(1, keepdim), [TIES])
    _compare(lambda x: x.mode(0, keepdim), lambda x: x.mode(0, keepdim), [TIES])
    b = a.copy()
    b[0, [1, 4]] = np.nan
    _compare(lambda x: x.nanmedian(1, keepdim), lambda x: x.nanmedian(1, keepdim), [b])
    _compare(lambda x: x.nanmedian(), lambda x: x.nanmedian(), [b])
    b[2, :] = np.nan  # an all-NaN row: NaN (which NaN's index torch gives is undocumented)
    _compare(lambda x: x.nanmedian(1, keepdim).values, lambda x: x.nanmedian(1, keepdim).values,
             [b], grad=False)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation):
    a = _distinct(4, 7)
    q = np.array([0.0, 0.25, 0.4, 0.5, 1.0])
    for dim, keepdim in ((1, False), (0, True), (None, False), (None, True)):
        _compare(lambda x: torch.quantile(x, torch.tensor(q), dim, keepdim,
                                          interpolation=interpolation),
                 lambda x: cg.quantile(x, cg.tensor(q, dtype=cg.float64), dim, keepdim,
                                       interpolation=interpolation), [a])
    _compare(lambda x: x.quantile(0.3, 1, interpolation=interpolation),
             lambda x: x.quantile(0.3, 1, interpolation=interpolation), [a])
    _compare(lambda x: x.quantile(0.3, 0, True), lambda x: x.quantile(0.3, 0, True),
             [np.array(2.5)])  # 0-d stays 0-d
    b = a.copy()
    b[1, 2] = np.nan
    for fn in ("quantile", "nanquantile"):
        _compare(lambda x: getattr(x, fn)(0.6, 1, interpolation=interpolation),
                 lambda x: getattr(x, fn)(0.6, 1, interpolation=interpolation), [b])
        b[3, :] = np.nan  # all NaN: NaN (the gradient's NaN element is torch's sort's choice)
        _compare(lambda x: getattr(x, fn)(0.6, 1, interpolation=interpolation),
                 lambda x: getattr(x, fn)(0.6, 1, interpolation=interpolation), [b],
                 grad=False)
        b[3, :] = a[3, :]


def test_aminmax_msort_unique_consecutive():
    a = _distinct(3, 4)
    _compare(lambda x: torch.aminmax(x, dim=1, keepdim=True),
             lambda x: cg.aminmax(x, dim=1, keepdim=True), [a])
    _compare(lambda x: x.aminmax(), lambda x: x.aminmax(), [a])
    _compare(torch.msort, cg.msort, [a])
    v = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    _compare(lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True),
             lambda x: cg.unique_consecutive(x, return_inverse=True, return_counts=True),
             [v], grad=False, ints=(0,))
    m = np.array([[1, 1, 2, 2], [1, 1, 2, 2], [0, 0, 2, 3]])
    for dim in (0, 1):
        _compare(lambda x: x.unique_consecutive(True, True, dim),
                 lambda x: x.unique_consecutive(True, True, dim), [m], grad=False, ints=(0,))


# ----------------------------------------------------------------------------- statistics
def test_histc_histogram():
    a = RNG.uniform(-2, 3, 50)
    _compare(lambda x: torch.histc(x, 7, -1, 2), lambda x: cg.histc(x, 7, -1, 2), [a], grad=False)
    _compare(lambda x: torch.histc(x, 5), lambda x: cg.histc(x, 5), [a], grad=False)
    w = RNG.uniform(0, 2, 50)
    for density in (False, True):
        _compare(lambda x, ww: torch.histogram(x, 6, range=(-1., 2.), weight=ww,
                                               density=density),
                 lambda x, ww: cg.histogram(x, 6, range=(-1., 2.), weight=ww, density=density),
                 [a, w], grad=False)
    same = np.array([2.0, 2.0])  # an empty range widens as torch's (histc 1, histogram 0.5)
    _compare(lambda x: torch.histogram(x, 3), lambda x: cg.histogram(x, 3), [same], grad=False)
    _compare(lambda x: torch.histc(x, 3), lambda x: cg.histc(x, 3), [same], grad=False)
    edges = np.array([-2.0, -0.5, 0.0, 1.5, 3.0])
    _compare(lambda x, e: torch.histogram(x, e), lambda x, e: cg.histogram(x, e), [a, edges],
             grad=False)


def test_cov_corrcoef():
    a = RNG.standard_normal((3, 8))
    fw = RNG.integers(0, 4, 8)
    aw = RNG.uniform(0.1, 2, 8)
    _compare(torch.cov, cg.cov, [a], second=True)
    _compare(lambda x: x.cov(correction=0), lambda x: x.cov(correction=0), [a[0]])
    _compare(lambda x, f, w: torch.cov(x, correction=2, fweights=f, aweights=w),
             lambda x, f, w: cg.cov(x, correction=2, fweights=f, aweights=w),
             [a, fw, aw], ints=(1,))
    _compare(lambda x, f: torch.cov(x, fweights=f), lambda x, f: cg.cov(x, fweights=f),
             [a, fw], ints=(1,))
    _compare(torch.corrcoef, cg.corrcoef, [a], second=True)


def test_dist_renorm():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4,))
    for p in (2, 1, 3.5, float("inf"), float("-inf"), 0):
        _compare(lambda x, y: torch.dist(x, y, p), lambda x, y: cg.dist(x, y, p), [a, b],
                 grad=p != 0)
    for p, dim in ((2, 0), (1, 1), (3, -1)):
        _compare(lambda x: torch.renorm(x, p, dim, 1.2), lambda x: cg.renorm(x, p, dim, 1.2),
                 [a * 2], second=True)


def test_trapezoid():
    y = RNG.standard_normal((3, 6))
    x1 = np.sort(RNG.uniform(0, 5, 6))
    xs = np.sort(RNG.uniform(0, 5, (3, 6)), axis=1)
    for fn in ("trapezoid", "trapz", "cumulative_trapezoid"):
        tf, cf = getattr(torch, fn), getattr(cg, fn)
        _compare(lambda v: tf(v), lambda v: cf(v), [y])
        _compare(lambda v: tf(v, dx=0.3, dim=0), lambda v: cf(v, dx=0.3, dim=0), [y])
        _compare(lambda v, x: tf(v, x), lambda v, x: cf(v, x), [y, x1], second=True)
        _compare(lambda v, x: tf(v, x, dim=1), lambda v, x: cf(v, x, dim=1), [y, xs])


# ----------------------------------------------------------------------------- searching
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize_isin(right):
    seq = np.array([1., 3, 3, 5, 7])
    v = np.array([[0., 3, 4], [7, 8, 1]])
    for i32 in (False, True):
        _compare(lambda s, x: torch.searchsorted(s, x, right=right, out_int32=i32),
                 lambda s, x: cg.searchsorted(s, x, right=right, out_int32=i32), [seq, v],
                 grad=False)
        _compare(lambda x, s: torch.bucketize(x, s, right=right, out_int32=i32),
                 lambda x, s: cg.bucketize(x, s, right=right, out_int32=i32), [v, seq],
                 grad=False)
    side = "right" if right else "left"
    rows = np.sort(RNG.uniform(0, 5, (2, 5)), axis=1)
    _compare(lambda s, x: torch.searchsorted(s, x, side=side),
             lambda s, x: cg.searchsorted(s, x, side=side), [rows, v], grad=False)
    unsorted = np.array([5., 1, 7, 3, 3])
    order = np.argsort(unsorted, kind="stable")
    _compare(lambda s, x, o: torch.searchsorted(s, x, right=right, sorter=o),
             lambda s, x, o: cg.searchsorted(s, x, right=right, sorter=o),
             [unsorted, v, order], grad=False, ints=(2,))
    _compare(lambda x, t: torch.isin(x, t, invert=right), lambda x, t: cg.isin(x, t, invert=right),
             [v, seq], grad=False)


def test_unravel_index():
    idx = np.array([[0, 5], [23, 17]])
    t = torch.unravel_index(torch.tensor(idx), (2, 3, 4))
    c = cg.unravel_index(_i(idx), (2, 3, 4))
    assert len(t) == len(c)
    for a, b in zip(t, c):
        np.testing.assert_array_equal(b.numpy(), a.numpy())
        assert b.numpy().dtype == np.int64


# ----------------------------------------------------------------------------- index writes
def test_index_copy_fill():
    a, s = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 2))
    idx = np.array([3, 0])
    _compare(lambda x, src, i: x.index_copy(1, i, src), lambda x, src, i: x.index_copy(1, i, src),
             [a, s, idx], ints=(2,))
    _compare(lambda x, i: torch.index_fill(x, 0, i, -2.5),
             lambda x, i: cg.index_fill(x, 0, i, -2.5), [a, idx], ints=(1,))
    _compare(lambda x, v, i: x.index_fill(1, i, v), lambda x, v, i: x.index_fill(1, i, v),
             [a, np.array(1.5), idx], ints=(2,))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    a = RNG.standard_normal((4, 3, 2))
    rows, cols = np.array([0, 2, 3]), np.array([1, 1, 0])
    vals = RNG.standard_normal((3, 2))
    _compare(lambda x, v, r, c: x.index_put((r, c), v, accumulate),
             lambda x, v, r, c: x.index_put((r, c), v, accumulate), [a, vals, rows, cols],
             ints=(2, 3))
    mask = RNG.uniform(size=(4, 3)) > 0.5
    _compare(lambda x, v, m: x.index_put((m,), v, accumulate),
             lambda x, v, m: x.index_put((m,), v, accumulate), [a, np.array([0.5, -1.0]), mask],
             ints=(2,))
    if accumulate:  # repeated places add up
        rep = np.array([1, 1, 3])
        _compare(lambda x, v, r: torch.index_put(x, (r,), v, True),
                 lambda x, v, r: cg.index_put(x, (r,), v, True),
                 [a, RNG.standard_normal((3, 3, 2)), rep], ints=(2,))


def test_masked_scatter():
    a = RNG.standard_normal((3, 4))
    mask = RNG.uniform(size=(4,)) > 0.4
    src = RNG.standard_normal((5, 4))
    _compare(lambda x, s, m: x.masked_scatter(m, s), lambda x, s, m: x.masked_scatter(m, s),
             [a, src, mask], ints=(2,))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    a = _distinct(3, 5)
    src = _distinct(2, 6) - 0.5  # (torch's backward needs index and src of one shape)
    idx = RNG.integers(0, 5, (2, 6))
    _compare(lambda x, s, i: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
             lambda x, s, i: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
             [a, src, idx], ints=(2,), second=reduce == "prod")
    if reduce in ("amax", "amin") and include_self:  # ties share the gradient evenly
        # (without self torch also counts self's equal value; convgrad shares among the
        # src values only, so their gradients add up to the result's)
        tied = np.array([[1., 2, 2, 0], [3, 3, 1, 1]])
        _compare(lambda x, s, i: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
                 lambda x, s, i: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
                 [np.full((1, 4), 2.0), tied, np.zeros((2, 4), np.int64)], ints=(2,))
    if reduce != "sum":
        idx1 = np.array([0, 2, 0, 1])
        _compare(lambda x, s, i: x.index_reduce(0, i, s, reduce, include_self=include_self),
                 lambda x, s, i: x.index_reduce(0, i, s, reduce, include_self=include_self),
                 [_distinct(3, 2), _distinct(4, 2), idx1], ints=(2,))


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
def test_scatter_reduce_skewed_places_bounded_memory(reduce):
    """One place receiving half of 6000 values and 3000 places receiving one each: the
    values and gradients are torch's, and the reduction's tables stay a small multiple of
    the input (one (3000 x 3001) table of indices would be 72 MB)."""
    import tracemalloc

    n = 6000
    idx = np.concatenate([np.zeros(n // 2, np.int64), 1 + np.arange(n // 2)])
    src = RNG.uniform(0.999, 1.001, n) if reduce == "prod" else _distinct(n)
    _compare(lambda x, s, i: x.scatter_reduce(0, i, s, reduce),
             lambda x, s, i: x.scatter_reduce(0, i, s, reduce),
             [_distinct(n // 2 + 1), src, idx], ints=(2,))
    x = cg.tensor(_distinct(n // 2 + 1), requires_grad=True)
    tracemalloc.start()
    try:
        x.scatter_reduce(0, cg.tensor(idx, dtype=cg.int64), cg.tensor(src), reduce).sum() \
            .backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


def test_scatter_reduce_prod_with_zero():
    src = np.array([[2.0, 0.0, 3.0, 0.5]])
    _compare(lambda x, s, i: x.scatter_reduce(1, i, s, "prod"),
             lambda x, s, i: x.scatter_reduce(1, i, s, "prod"),
             [np.array([[1.5, 2.0]]), src, np.array([[0, 0, 0, 1]])], ints=(2,))


def test_view_scatters_and_diagonals():
    a = RNG.standard_normal((4, 5))
    _compare(lambda x, s: torch.select_scatter(x, s, 1, -2),
             lambda x, s: cg.select_scatter(x, s, 1, -2), [a, RNG.standard_normal(4)])
    _compare(lambda x, s: x.slice_scatter(s, 1, 1, 5, 2),
             lambda x, s: x.slice_scatter(s, 1, 1, 5, 2), [a, RNG.standard_normal((4, 2))])
    _compare(lambda x, s: x.diagonal_scatter(s, 1), lambda x, s: x.diagonal_scatter(s, 1),
             [a, RNG.standard_normal(4)])
    _compare(lambda x, s: x.diagonal_scatter(s, -1, 1, 0),
             lambda x, s: x.diagonal_scatter(s, -1, 1, 0), [a, RNG.standard_normal(4)])
    b = RNG.standard_normal((2, 3))
    for args in ((0, -2, -1), (1, 0, 2), (-1, 2, 0)):
        _compare(lambda x: torch.diag_embed(x, *args), lambda x: cg.diag_embed(x, *args), [b])
    _compare(lambda x: torch.diagflat(x, -1), lambda x: cg.diagflat(x, -1), [b])


def test_in_place_forms_and_version_checks():
    a = RNG.standard_normal((3, 4))
    found = {}
    for lib in (torch, cg):
        def i64(v, lib=lib):
            return lib.tensor(v, dtype=lib.int64)

        def f64(v, lib=lib):
            return lib.tensor(v, dtype=lib.float64)

        x = f64(a).requires_grad_()
        y = x * 1
        assert y.index_copy_(0, i64([2]), f64(np.ones((1, 4)))) is y
        y.index_fill_(1, i64([0]), 3.0)
        y.index_put_((i64([1]), i64([2])), f64(7.0), accumulate=True)
        y.masked_scatter_(lib.tensor(a > 0, dtype=lib.bool), f64(np.arange(12.0)))
        y.scatter_reduce_(1, i64([[0, 0]]), f64([[2.0, 5.0]]), "amax")
        (y * y).sum().backward()
        found[lib] = y.detach().numpy(), x.grad.numpy()
        x.grad = None
        y = x * 1
        y.index_reduce_(0, i64([1, 1]), f64(np.full((2, 4), 2.0)), "prod")
        (y * y).sum().backward()
        found[lib] += y.detach().numpy(), x.grad.numpy()
        # values a recorded operation reads, overwritten in place: backward refuses
        for write in (lambda t: t.index_fill_(0, i64([0]), 1.0),
                      lambda t: t.index_copy_(0, i64([0]), f64(np.zeros((1, 4))))):
            y = x * 1
            z = y * y
            write(y)
            with pytest.raises(RuntimeError):
                z.sum().backward()
    for t, c in zip(found[torch], found[cg]):
        np.testing.assert_allclose(c, t, rtol=1e-12)


# ----------------------------------------------------------------------------- float32
FLOAT32_CASES = {
    "logcumsumexp": (lambda x: torch.logcumsumexp(x, 1), lambda x: cg.logcumsumexp(x, 1),
                     (6, 40)),
    "quantile": (lambda x: torch.quantile(x, torch.tensor([0.1, 0.37, 0.9], dtype=x.dtype), 1),
                 lambda x: cg.quantile(x, cg.tensor([0.1, 0.37, 0.9]), 1), (6, 40)),
    "cov": (torch.cov, cg.cov, (6, 40)),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES))
def test_float32_within_twice_torchs_error(name):
    fn_t, fn_c, shape = FLOAT32_CASES[name]
    a = RNG.uniform(0.6, 1.6, shape).astype(np.float32).astype(np.float64)
    w = None
    found = []
    for lib, dtype in ((torch, torch.float64), (torch, torch.float32), (cg, None)):
        if lib is torch:
            x = torch.tensor(a, dtype=dtype, requires_grad=True)
        else:
            x = cg.tensor(a.astype(np.float32), requires_grad=True)
        out = fn_t(x) if lib is torch else fn_c(x)
        if w is None:
            w = RNG.standard_normal(tuple(out.shape))
        wd = w if dtype == torch.float64 else w.astype(np.float32)
        (out * lib.tensor(wd)).sum().backward()
        values = out.detach().numpy() if lib is torch else out.numpy()
        assert lib is torch or values.dtype == np.float32
        found.append([np.asarray(values, np.float64), np.asarray(x.grad.numpy(), np.float64)])
    exact, theirs, ours = found
    for e, t, o in zip(exact, theirs, ours):
        scale = np.linalg.norm(e)
        t_err, o_err = np.linalg.norm(t - e) / scale, np.linalg.norm(o - e) / scale
        assert o_err <= 2 * max(t_err, 2.0 ** -24), (name, o_err, t_err)


# ----------------------------------------------------------------------------- errors
def test_error_messages():
    x = cg.tensor(_distinct(3, 4).astype(np.float32))
    with pytest.raises(ValueError, match=r"cummax: dim=5 is out of range"):
        x.cummax(5)
    with pytest.raises(ValueError, match=r"quantile: q=1.5 must hold values in \[0, 1\]"):
        x.quantile(1.5)
    with pytest.raises(ValueError, match=r"nanquantile: q=.* must hold values in \[0, 1\]"):
        x.nanquantile(cg.tensor([0.5, -0.1]))
    with pytest.raises(ValueError, match="interpolation='cubic' must be one of"):
        x.quantile(0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="quantile: q of dtype float64 must have the input's"):
        x.quantile(cg.tensor([0.5], dtype=cg.float64))
    with pytest.raises(ValueError, match="kthvalue: k=5 is out of range for dim 1 of size 4"):
        x.kthvalue(5, 1)
    with pytest.raises(IndexError, match="index_copy: index 7 is out of range for dim 0"):
        x.index_copy(0, _i([7]), cg.zeros(1, 4))
    with pytest.raises(IndexError, match="index_fill: index -4 is out of range for dim 0"):
        x.index_fill(0, _i([-4]), 1.0)
    with pytest.raises(IndexError, match="index_put: index 9 is out of range for dim 1"):
        x.index_put((_i([0]), _i([9])), cg.tensor(1.0))
    with pytest.raises(IndexError, match="scatter_reduce: index 5 is out of range for dim 1"):
        x.scatter_reduce(1, _i([[5]]), cg.zeros(1, 1), "sum")
    with pytest.raises(ValueError, match="scatter_reduce: reduce='max' must be one of"):
        x.scatter_reduce(1, _i([[0]]), cg.zeros(1, 1), "max")
    with pytest.raises(TypeError, match="index_copy: source of dtype float64 must have self's"):
        x.index_copy(0, _i([0]), cg.zeros(1, 4, dtype=cg.float64))
    with pytest.raises(ValueError, match=r"masked_scatter: source has 2 elements, the mask"):
        x.masked_scatter(cg.tensor(np.ones((3, 4), bool), dtype=cg.bool), cg.zeros(2))
    with pytest.raises(ValueError, match="select_scatter: src of shape"):
        x.select_scatter(cg.zeros(5), 0, 0)
    with pytest.raises(ValueError, match="searchsorted: side='left' contradicts right=True"):
        cg.searchsorted(cg.tensor([1.0]), cg.tensor([1.0]), right=True, side="left")
    with pytest.raises(ValueError, match="unravel_index: index 24 is out of range"):
        cg.unravel_index(_i([24]), (2, 3, 4))
    with pytest.raises(ValueError, match="cov: fweights must hold non-negative values"):
        cg.cov(x, fweights=_i([1, -1, 2, 0]))
    with pytest.raises(ValueError, match=r"renorm: the input of shape \(4,\) must have"):
        x[0].renorm(2, 0, 1.0)
    with pytest.raises(TypeError, match="dist: input of dtype int64 must be float"):
        _i([1, 2]).dist(_i([0, 0]))
    with pytest.raises(ValueError, match="renorm: p=0 must be a number > 0"):
        x.renorm(0, 0, 1.0)
    with pytest.raises(ValueError, match="trapezoid: pass one of x and dx"):
        cg.trapezoid(x, cg.tensor([1.0, 2, 3, 4]), dx=1.0)
    with pytest.raises(ValueError, match="histc: bins=0 must be an int >= 1"):
        x.histc(0)
    with pytest.raises(ValueError, match="diag_embed: dim1=0 and dim2=0 must differ"):
        x.diag_embed(0, 0, 0)
