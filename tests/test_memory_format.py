"""Memory formats (channels_last and friends) against torch's semantics (the oracle)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import convgrad as cg

torch = pytest.importorskip("torch")

FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")


def _pair(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return cg.tensor(a), torch.from_numpy(a.copy())


def _strides(t) -> tuple:
    return tuple(s // t.data.itemsize for s in t.data.strides)


def _outcome(fn):
    """The result of ``fn()``, or the exception type and message it raised."""
    try:
        return fn()
    except (RuntimeError, TypeError) as e:
        return type(e), str(e)


def test_formats_are_named_singletons():
    for name in FORMATS:
        f = getattr(cg, name)
        assert isinstance(f, cg.memory_format) and repr(f) == f"convgrad.{name}"
        assert pickle.loads(pickle.dumps(f)) is f
    assert cg.channels_last is not cg.contiguous_format


# a dim of size 1 (C, H or W) may have any stride in torch's rule
SHAPES = [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 4, 5), (2, 3, 4, 5, 6), (3, 4, 5),
          (4, 5), (2, 1, 1, 5, 6)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", FORMATS)
def test_contiguous_and_predicates_follow_torch(shape, name):
    ours, theirs = _pair(shape)
    fmt, tfmt = getattr(cg, name), getattr(torch, name)
    got = _outcome(lambda: ours.contiguous(memory_format=fmt))
    want = _outcome(lambda: theirs.contiguous(memory_format=tfmt))
    if isinstance(want, tuple):  # torch raised: so do we, the same type and message
        assert got == want
        return
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert _strides(got) == want.stride() or got.numel() == 1
    for other in FORMATS:
        assert got.is_contiguous(memory_format=getattr(cg, other)) == \
            want.is_contiguous(memory_format=getattr(torch, other)), other
    assert got.is_contiguous() == want.is_contiguous()


@pytest.mark.parametrize("name, shape", [("channels_last", (2, 3, 4, 5)),
                                         ("channels_last_3d", (2, 3, 4, 5, 6))])
def test_round_trips_and_views_follow_torch(name, shape):
    ours, theirs = _pair(shape)
    fmt, tfmt = getattr(cg, name), getattr(torch, name)
    cl, tcl = ours.to(memory_format=fmt), theirs.to(memory_format=tfmt)
    assert _strides(cl) == tcl.stride() and not cl.is_contiguous()
    # already in the format: the same tensor, as torch
    assert cl.to(memory_format=fmt) is cl and cl.contiguous(memory_format=fmt) is cl
    assert cl.to(memory_format=cg.preserve_format) is cl
    assert ours.contiguous() is ours
    back = cl.contiguous()
    assert _strides(back) == tcl.contiguous().stride() and back.is_contiguous()
    assert _strides(cl.to(memory_format=cg.contiguous_format)) == \
        tcl.to(memory_format=torch.contiguous_format).stride()
    # a dtype change keeps the layout (preserve_format is to()'s default)
    assert _strides(cl.to(cg.float64)) == tcl.to(torch.float64).stride()
    assert _strides(cl.double()) == tcl.double().stride()
    # torch's predicates on a sliced channels-last view (not dense in either format)
    view, tview = cl[:, :, 1:], tcl[:, :, 1:]
    for other in FORMATS:
        assert view.is_contiguous(memory_format=getattr(cg, other)) == \
            tview.is_contiguous(memory_format=getattr(torch, other))
    np.testing.assert_array_equal(view.contiguous(memory_format=fmt).numpy(), tview.numpy())


def test_preserve_format_is_refused_by_contiguous_on_a_strided_view():
    ours, theirs = _pair((2, 3, 4, 5))
    got = _outcome(lambda: ours.permute(0, 1, 3, 2).contiguous(
        memory_format=cg.preserve_format))
    want = _outcome(lambda: theirs.permute(0, 1, 3, 2).contiguous(
        memory_format=torch.preserve_format))
    assert got == want and got[0] is RuntimeError


def test_wrong_rank_and_wrong_type_errors():
    x = cg.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        x.to(memory_format=cg.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        cg.zeros(2, 3, 4, 5).contiguous(memory_format=cg.channels_last_3d)
    assert not x.is_contiguous(memory_format=cg.channels_last)  # no error, as torch
    with pytest.raises(TypeError, match="memory_format"):
        cg.zeros(2, 3, 4, 5).contiguous(memory_format="channels_last")
    with pytest.raises(TypeError, match="memory_format"):
        cg.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)


def test_relayout_is_differentiable_twice():
    x = cg.randn(2, 3, 4, 5, dtype=cg.float64, requires_grad=True)
    y = x.contiguous(memory_format=cg.channels_last)
    assert y.requires_grad and y.is_contiguous(memory_format=cg.channels_last)
    (g,) = cg.grad((y ** 3).sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    (gg,) = cg.grad(g.sum(), [x])
    np.testing.assert_allclose(gg.numpy(), 6 * x.numpy())


def _module_pair(make_cg, make_torch):
    m, tm = make_cg(), make_torch()
    tm.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in m.state_dict().items()})
    return m, tm


@pytest.mark.parametrize("name", ["channels_last", "channels_last_3d", "contiguous_format"])
@pytest.mark.parametrize("kind", ["conv2d", "conv3d", "linear"])
def test_module_to_memory_format_follows_torch(name, kind):
    makers = {"conv2d": (lambda: cg.nn.Conv2d(3, 4, 3), lambda: torch.nn.Conv2d(3, 4, 3)),
              "conv3d": (lambda: cg.nn.Conv3d(3, 4, 3), lambda: torch.nn.Conv3d(3, 4, 3)),
              "linear": (lambda: cg.nn.Linear(3, 4), lambda: torch.nn.Linear(3, 4))}
    m, tm = _module_pair(*makers[kind])
    got = _outcome(lambda: m.to(memory_format=getattr(cg, name)))
    want = _outcome(lambda: tm.to(memory_format=getattr(torch, name)))
    if isinstance(want, tuple):
        assert got == want
        return
    assert got is m
    for (n, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
        assert _strides(p) == tp.stride() or p.numel() == 1, n
        np.testing.assert_array_equal(p.numpy(), tp.detach().numpy())


def test_channels_last_model_trains_like_the_contiguous_one():
    def run(fmt):
        cg.manual_seed(0)
        m = cg.nn.Sequential(cg.nn.Conv2d(3, 8, 3, padding=1), cg.nn.BatchNorm2d(8),
                             cg.nn.ReLU(), cg.nn.Conv2d(8, 4, 3))
        if fmt is not None:
            m.to(memory_format=fmt)
        opt = cg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x = cg.tensor(np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32))
        if fmt is not None:
            x = x.to(memory_format=fmt)
        for _ in range(2):
            opt.zero_grad()
            loss = (m(x) ** 2).mean()
            loss.backward()
            opt.step()
        return m, loss.item()

    m_cl, loss_cl = run(cg.channels_last)
    m_c, loss_c = run(None)
    assert m_cl[0].weight.is_contiguous(memory_format=cg.channels_last)
    assert loss_cl == pytest.approx(loss_c, rel=1e-5)
    for p, q in zip(m_cl.parameters(), m_c.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like", "full_like",
                                "rand_like", "randn_like"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "channels_last_3d",
                                    "transposed"])
@pytest.mark.parametrize("fmt", [None, "contiguous_format", "channels_last"])
def test_like_functions_lay_out_their_result_as_torch(fn, layout, fmt):
    """torch's ``memory_format=preserve_format`` default: a dense input's layout kept."""
    shape = (2, 3, 4, 5, 6) if layout == "channels_last_3d" else (2, 3, 4, 5)
    c, t = _pair(shape)
    if layout == "transposed":
        c, t = c.transpose(1, 3), t.transpose(1, 3)
    elif layout != "contiguous":
        c = c.contiguous(memory_format=getattr(cg, layout))
        t = t.contiguous(memory_format=getattr(torch, layout))
    extra = (2.5,) if fn == "full_like" else ()
    kw = {} if fmt is None else {"memory_format": getattr(cg, fmt)}
    tkw = {} if fmt is None else {"memory_format": getattr(torch, fmt)}
    ours = _outcome(lambda: getattr(cg, fn)(c, *extra, **kw))
    theirs = _outcome(lambda: getattr(torch, fn)(t, *extra, **tkw))
    if isinstance(theirs, tuple):  # torch refused (a channels-last format of another rank)
        assert isinstance(ours, tuple) and ours[0] == theirs[0], (ours, theirs)
        return
    assert _strides(ours) == theirs.stride() and ours.dtype == cg.float32
    if fn in ("zeros_like", "ones_like", "full_like"):
        np.testing.assert_array_equal(ours.data, theirs.numpy())
