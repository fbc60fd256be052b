"""Oracle: torch 2.13 (torch.nn.functional conv/conv_transpose, nn.ConvNd padding modes, autograd).

Hypothesis draws configurations (1-3 spatial dims, stride, every padding form and mode,
dilation, groups, output_padding, batch 0, unbatched inputs).  Every draw ends in exactly
one of: torch accepts it and convgrad's output shape, dtype, forward and every requested
gradient match; or torch rejects it and convgrad raises ``ValueError``/``TypeError``
whose message starts with the function's name and names the offending argument.  About
a third of the draws carry one deliberate fault (a bad stride, a mis-shaped bias, ...);
when the same draw without the fault is valid, the message must name the faulted
argument itself (and quote its value for per-dim arguments).

Where torch is lax, docs/API.md decides: with an empty batch torch checks almost nothing
(it accepts dilation=0 and empty outputs), so a draw with N=0 is valid when the same
draw with N=1 is; torch's float32 path misses checks its float64 path makes, so the
float64 path gives the verdict; an empty output or input spatial dim is an error.  Padding modes
other than "zeros" follow ``torch.nn.ConvNd`` (pad with the mode, then convolve).
C_in=0 is never drawn (torch returns 0 output channels where the weight has C_out).

Profiles (tests/conftest.py): ``ci`` (default) and ``--hypothesis-profile=thorough``;
``--hypothesis-show-statistics`` prints the accepted/rejected split.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import convgrad as cg
import convgrad.functional as F

from .draw_limits import time_limit
from .tolerances import assert_close

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

pytestmark = pytest.mark.usefixtures("backend")  # with oneDNN, then without

TORCH_CONV = {1: TF.conv1d, 2: TF.conv2d, 3: TF.conv3d}
TORCH_CONVT = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}
TORCH_LAYER = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}
OURS_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
OURS_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
# words that name an argument (or a part of one) in an error message
ARG_WORDS = ("input", "weight", "bias", "stride", "padding", "dilation", "groups",
             "output_padding", "kernel", "C_in", "C_out", "padding_mode")
SECONDS_PER_DRAW = 30  # a hang fails the draw instead of the whole run
# torch 2.13's float32 (oneDNN) convolutions crash with a segmentation fault for strides
# of 10**5 and more (conv1d, N=2, C=1, L=1, K=1, stride=10**6); test_hostile_inputs.py
# checks convgrad's strides and dilations up to 10**15 against exact values instead
BIG_STRIDE = 1000


@dataclass(frozen=True)
class Draw:
    """One call: shapes, keyword arguments, which tensors require grad, an optional fault."""

    transposed: bool
    nd: int
    dtype: str
    x_shape: tuple
    w_shape: tuple
    b_shape: tuple | None
    kwargs: dict
    needs: tuple  # requires_grad of (x, w, b)
    seed: int
    fault: str | None = None
    words: tuple = ()  # an error about the fault must name one of these
    base: Draw | None = field(default=None, repr=False)  # the same draw without the fault

    @property
    def fn(self) -> str:
        return f"conv_transpose{self.nd}d" if self.transposed else f"conv{self.nd}d"


def _per_dim(draw, values: list[int]):
    """The same per-dim values written as an int (when all equal), tuple, list or np ints."""
    form = draw(st.sampled_from(("int", "int", "tuple", "list", "numpy")))
    if form == "int" and len(set(values)) == 1:
        return values[0]
    if form == "list":
        return list(values)
    if form == "numpy":
        return tuple(np.int64(v) for v in values)
    return tuple(values)


def _as_list(value, nd: int) -> list[int]:
    if not isinstance(value, tuple | list):
        return [int(value)] * nd
    return [int(v[0]) if isinstance(v, tuple) else int(v) for v in value]  # pairs: lo side


def _pairs(padding) -> list[tuple[int, int]] | None:
    """(lo, hi) per dim if ``padding`` uses docs/API.md's pair form (torch has none), else None."""
    if isinstance(padding, tuple) and any(isinstance(p, tuple) for p in padding):
        return [tuple(p) if isinstance(p, tuple) else (p, p) for p in padding]
    return None


@st.composite
def draws(draw, transposed: bool) -> Draw:
    nd = draw(st.sampled_from((1, 2, 3)))
    dtype = draw(st.sampled_from(("float32", "float64")))
    g = draw(st.integers(1, 3))
    cin_g, cout_g = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kmax, lmax, dmax = (4, 9, 3) if nd < 3 else (3, 6, 2)
    K = [draw(st.integers(1, kmax)) for _ in range(nd)]
    S = [draw(st.integers(1, 3)) for _ in range(nd)]
    D = [draw(st.integers(1, dmax)) for _ in range(nd)]
    L = [draw(st.integers(1, lmax)) for _ in range(nd)]
    batch = draw(st.sampled_from((0, 1, 1, 2, 3, None)))  # None: unbatched input
    if draw(st.integers(0, 9)) == 0:  # a stride far beyond the input in one dim
        d = draw(st.integers(0, nd - 1))
        S[d] = BIG_STRIDE
        if transposed:
            L[d] = 1  # else the output is ~BIG_STRIDE long
    c_in, c_out = g * cin_g, g * cout_g
    lead = () if batch is None else (batch,)
    x_shape = (*lead, c_in, *L)
    if transposed:
        w_shape = (c_in, cout_g, *K)
        pads = [draw(st.integers(0, D[d] * (K[d] - 1) + 1)) for d in range(nd)]
        opad = [draw(st.integers(0, min(max(S[d], D[d]) - 1, 3))) for d in range(nd)]
        kwargs = dict(stride=_per_dim(draw, S), padding=_per_dim(draw, pads),
                      output_padding=_per_dim(draw, opad), groups=g,
                      dilation=_per_dim(draw, D))
    else:
        w_shape = (c_out, cin_g, *K)
        form = draw(st.sampled_from(("int", "int", "same", "valid")))
        if form == "same":
            padding = "same"
            if draw(st.integers(0, 4)):
                S = [1] * nd
        elif form == "valid":
            padding = "valid"
        elif draw(st.integers(0, 3)):
            padding = _per_dim(draw, [draw(st.integers(0, 3)) for _ in range(nd)])
        else:  # docs/API.md's (lo, hi) pairs (an int for a symmetric dim, sometimes)
            pairs = [(draw(st.integers(0, 3)), draw(st.integers(0, 3))) for _ in range(nd)]
            padding = tuple(lo if lo == hi and draw(st.booleans()) else (lo, hi)
                            for lo, hi in pairs)
        mode = draw(st.sampled_from(("zeros", "zeros", "zeros", "reflect", "replicate",
                                     "circular")))
        kwargs = dict(stride=_per_dim(draw, S), padding=padding, dilation=_per_dim(draw, D),
                      groups=g, padding_mode=mode)
    b_shape = (c_out,) if draw(st.booleans()) else None
    needs = draw(st.sampled_from(((True, True, True), (True, True, True), (True, False, False),
                                  (False, True, False), (False, True, True),
                                  (True, False, True))))
    d = Draw(transposed, nd, dtype, x_shape, w_shape, b_shape, kwargs, needs,
             draw(st.integers(0, 2**32 - 1)))
    if draw(st.integers(0, 2)) == 0:
        d = _with_fault(draw, d)
    return d


def _with_fault(draw, d: Draw) -> Draw:
    """The draw with one deliberate mistake; ``words`` says what the error must name."""
    nd, kw = d.nd, dict(d.kwargs)
    batched = len(d.x_shape) == nd + 2
    faults = ["stride", "dilation", "padding", "groups_nonpos", "groups_mismatch",
              "weight_channels", "bias", "length", "x_ndim", "w_ndim", "kernel_zero",
              "spatial_zero", "type", "channels_zero"]
    faults += ["output_padding", "padding_str"] if d.transposed else ["same_strided",
                                                                      "padding_mode"]
    fault = draw(st.sampled_from(faults))
    x_shape, w_shape, b_shape = d.x_shape, d.w_shape, d.b_shape
    words: tuple = (fault,)
    if fault in ("stride", "dilation", "padding", "output_padding"):
        bad = draw(st.integers(-3, 0)) if fault in ("stride", "dilation") else draw(
            st.integers(-3, -1))
        vals = _as_list(kw[fault], nd) if not isinstance(kw[fault], str) else [0] * nd
        vals[draw(st.integers(0, nd - 1))] = bad
        if fault == "output_padding" and draw(st.booleans()):  # too large instead
            s, dl = _as_list(kw["stride"], nd), _as_list(kw["dilation"], nd)
            i = draw(st.integers(0, nd - 1))
            vals = _as_list(kw[fault], nd)
            vals[i] = max(s[i], dl[i]) + draw(st.integers(0, 2))
        kw[fault] = vals[0] if nd == 1 and draw(st.booleans()) else tuple(vals)
    elif fault == "groups_nonpos":
        kw["groups"] = draw(st.integers(-2, 0))
        words = ("groups",)
    elif fault == "groups_mismatch":
        kw["groups"] = kw["groups"] + draw(st.integers(1, 3))
        words = ("groups", "weight", "C_in", "C_out", "input")
    elif fault == "weight_channels":
        i = 0 if d.transposed else 1
        w_shape = tuple(v + draw(st.integers(1, 2)) if j == i else v
                        for j, v in enumerate(w_shape))
        words = ("weight", "C_in", "groups", "input")
    elif fault == "bias":
        c_out = d.w_shape[1] * kw["groups"] if d.transposed else d.w_shape[0]
        b_shape = draw(st.sampled_from(((c_out + 1,), (c_out, 1), (), (1, c_out))))
    elif fault == "length":
        name = draw(st.sampled_from(("stride", "dilation") + (
            ("padding", "output_padding") if d.transposed else ("padding",))))
        words = (name,)
        if isinstance(kw[name], str):
            kw[name] = 0
        n = draw(st.sampled_from([k for k in (0, nd - 1, nd + 1) if k != nd and k >= 0]))
        kw[name] = tuple([1 if name in ("stride", "dilation") else 0] * n)
        if n == 1:  # a 1-tuple is an int for every dim: make it a real mistake
            kw[name] = (kw[name][0],) * 2 if nd != 2 else (kw[name][0],) * 3
    elif fault == "x_ndim":
        x_shape = (2, *x_shape) if batched else x_shape[1:]
        if not batched and nd == 1:
            x_shape = (1, 1, 1, *d.x_shape)
        words = ("input",)
    elif fault == "w_ndim":
        w_shape = draw(st.sampled_from((w_shape[:-1], (1, *w_shape))))
        words = ("weight",)
    elif fault == "kernel_zero":
        i = draw(st.integers(2, nd + 1))
        w_shape = tuple(0 if j == i else v for j, v in enumerate(w_shape))
        words = ("kernel", "weight")
    elif fault == "spatial_zero":
        i = len(x_shape) - 1 - draw(st.integers(0, nd - 1))
        x_shape = tuple(0 if j == i else v for j, v in enumerate(x_shape))
        words = ("input",)
    elif fault == "channels_zero":  # C_out = 0 (conv) or C_in = 0 (transposed)
        w_shape = (0, *w_shape[1:])
        if d.transposed:
            i = 1 if batched else 0
            x_shape = tuple(0 if j == i else v for j, v in enumerate(x_shape))
        b_shape = None
        words = ("weight", "C_out", "C_in", "groups")
    elif fault == "type":
        name = draw(st.sampled_from(("stride", "dilation", "groups", "padding")))
        kw[name] = draw(st.sampled_from((1.0, True, "2", None, np.array([1] * nd), 1.5)))
        if name == "padding" and not d.transposed and isinstance(kw[name], str):
            kw[name] = "full"  # an unknown padding string
        words = (name,)
    elif fault == "same_strided":
        kw["padding"] = "same"
        s = _as_list(kw["stride"], nd)
        s[draw(st.integers(0, nd - 1))] = draw(st.integers(2, 3))
        kw["stride"] = tuple(s)
        words = ("padding", "stride")
    elif fault == "padding_str":
        kw["padding"] = draw(st.sampled_from(("same", "valid")))
        words = ("padding",)
    elif fault == "padding_mode":
        kw["padding_mode"] = draw(st.sampled_from(("mirror", "Zeros", "constant", "")))
    return replace(d, x_shape=x_shape, w_shape=w_shape, b_shape=b_shape, kwargs=kw,
                   fault=fault, words=words, base=d)


# ------------------------------------------------------------------------ the two sides
def torch_call(d: Draw, x, w, b):
    if d.transposed:
        return TORCH_CONVT[d.nd](x, w, b, **d.kwargs)
    kw = dict(d.kwargs)
    mode = kw.pop("padding_mode")
    TORCH_LAYER[d.nd](1, 1, 1, padding_mode=mode)  # torch's check of the mode, before the
    # explicit padding below (TF.pad takes "constant", which torch.nn.ConvNd rejects)
    pairs = _pairs(kw["padding"])
    if pairs is not None:  # asymmetric padding: pad explicitly, with the mode, as torch would
        flat = tuple(v for lo_hi in reversed(pairs) for v in lo_hi)
        x = TF.pad(x, flat, mode="constant" if mode == "zeros" else mode)
        kw["padding"], mode = 0, "zeros"
    y = TORCH_CONV[d.nd](x, w, b, **kw)  # the rules of torch.nn.functional
    if mode == "zeros":
        return y
    # torch.nn.ConvNd(padding_mode=mode): pad with the mode, then convolve without padding
    layer = TORCH_LAYER[d.nd](x.shape[-d.nd - 1], w.shape[0], tuple(w.shape[2:]), bias=False,
                              padding_mode=mode, **kw)
    return layer._conv_forward(x, w, b)


def ours_call(d: Draw, x, w, b):
    fn = OURS_CONVT[d.nd] if d.transposed else OURS_CONV[d.nd]
    return fn(x, w, b, **d.kwargs)


def _arrays(d: Draw):
    rng = np.random.default_rng(d.seed)
    x = rng.standard_normal(d.x_shape).astype(d.dtype)
    w = rng.standard_normal(d.w_shape).astype(d.dtype)
    b = None if d.b_shape is None else rng.standard_normal(d.b_shape).astype(d.dtype)
    return rng, x, w, b


def torch_verdict(d: Draw) -> object:
    """None if torch (and docs/API.md) accept the draw, else why not.

    The verdict comes from torch's float64 path with a non-empty batch: its float32
    (oneDNN) path misses checks (it accepts dilation=0 with a one-tap transposed kernel)
    and an empty batch skips almost all of them (dilation=0, empty outputs).
    """
    if len(d.x_shape) == d.nd + 2 and d.x_shape[0] == 0:
        d = replace(d, x_shape=(1, *d.x_shape[1:]))
    d = replace(d, dtype="float64")
    _, x, w, b = _arrays(d)
    try:
        with torch.no_grad():
            y = torch_call(d, *(None if a is None else torch.from_numpy(a) for a in (x, w, b)))
    except Exception as e:  # torch rejects the configuration
        return e
    # docs/API.md: an output length must be >= 1, and an input's spatial dims must be non-empty
    if 0 in y.shape[-d.nd:]:
        return "an empty output spatial dim"
    if 0 in d.x_shape[-d.nd:]:
        return "an empty input spatial dim"
    return None


def _torch_accepts(d: Draw) -> bool:
    return torch_verdict(d) is None


def reference(d: Draw, x, w, b):
    """torch's output and its (x, w, b) leaves for a valid draw (float64 if float32 fails)."""
    for dtype in (None, torch.float64):
        leaves = tuple(None if a is None else
                       torch.tensor(a, dtype=dtype, requires_grad=n)
                       for a, n in zip((x, w, b), d.needs))
        try:
            return torch_call(d, *leaves), leaves
        except Exception:
            if dtype is not None:
                raise
    raise AssertionError("unreachable")



def check(d: Draw) -> str:
    """Run one draw on both sides; returns the outcome (for hypothesis' statistics)."""
    rng, x, w, b = _arrays(d)
    why = torch_verdict(d)
    must_reject = why is not None
    if not must_reject:
        ty, theirs = reference(d, x, w, b)

    cx, cw = (cg.tensor(a, requires_grad=n) for a, n in zip((x, w), d.needs))
    cb = None if b is None else cg.tensor(b, requires_grad=d.needs[2])
    with time_limit(SECONDS_PER_DRAW):
        try:
            cy = ours_call(d, cx, cw, cb)
            ours_error = None
        except Exception as e:
            ours_error = e
        if must_reject:
            assert ours_error is not None, (
                f"the reference rejects ({why!r}) but convgrad returned shape {cy.shape}")
            _check_error(d, ours_error)
            return f"rejected ({d.fault or 'natural'})"
        if ours_error is not None:
            raise AssertionError(f"torch accepts, convgrad raised {ours_error!r}") from ours_error
        _compare(d, rng, ty, cy, theirs, (cx, cw, cb))
        return "accepted" + (" (batch 0)" if d.x_shape[0] == 0 else "")


def _check_error(d: Draw, err: Exception) -> None:
    assert isinstance(err, ValueError | TypeError), f"wrong exception type {err!r}"
    msg = str(err)
    assert msg.startswith(d.fn + ":"), f"message does not start with {d.fn!r}: {msg}"
    if d.base is not None and _torch_accepts(d.base):
        # only the fault is wrong: it must be named
        assert any(w in msg for w in d.words), f"fault {d.fault}: {d.words} not in {msg!r}"
        if d.fault in ("stride", "dilation", "padding", "output_padding", "groups_nonpos"):
            name = "groups" if d.fault == "groups_nonpos" else d.fault
            assert f"{name}=" in msg, f"the value of {name} is not quoted: {msg}"
    else:
        assert any(w in msg for w in ARG_WORDS), f"no argument named in {msg!r}"


def _compare(d: Draw, rng, ty, cy, theirs, ours) -> None:
    want = ty.detach().numpy()
    assert isinstance(cy, cg.Tensor)
    assert cy.shape == want.shape, f"shape {cy.shape} != torch {want.shape}"
    assert cy.dtype == np.dtype(d.dtype), f"dtype {cy.dtype} != {d.dtype}"
    assert_close(cy.data, want, d.dtype, "forward")
    gy = rng.standard_normal(want.shape).astype(d.dtype)
    ty.backward(torch.from_numpy(gy).to(ty.dtype))
    cy.backward(gy)
    for name, t, c in zip(("input", "weight", "bias"), theirs, ours):
        if t is None:
            continue
        if t.requires_grad:
            assert c.grad is not None, f"no {name} gradient"
            assert c.grad.dtype == np.dtype(d.dtype)
            assert_close(c.grad.data, t.grad.numpy(), d.dtype, f"{name} gradient")
        else:
            assert c.grad is None, f"{name} does not require grad but got a gradient"


@given(draws(transposed=False))
def test_conv_agrees_with_torch(d):
    event(check(d))


@given(draws(transposed=True))
def test_conv_transpose_agrees_with_torch(d):
    event(check(d))


# a few fixed draws that must always be part of the run (hypothesis may not find them)
FIXED = [
    # batch 0, forward and backward
    Draw(False, 2, "float64", (0, 4, 5, 6), (6, 2, 3, 3), (6,), dict(
        stride=2, padding=1, dilation=1, groups=2, padding_mode="zeros"), (True, True, True), 1),
    Draw(True, 1, "float32", (0, 3, 4), (3, 2, 3), (2,), dict(
        stride=2, padding=1, output_padding=1, groups=1, dilation=1), (True, True, True), 2),
    # unbatched with reflect padding and "same"
    Draw(False, 3, "float64", (2, 4, 5, 3), (3, 2, 2, 3, 2), None, dict(
        stride=1, padding="same", dilation=(1, 2, 1), groups=1, padding_mode="reflect"),
        (True, True, False), 3),
    # huge stride
    Draw(False, 1, "float32", (2, 1, 9), (1, 1, 3), (1,), dict(
        stride=BIG_STRIDE, padding=2, dilation=3, groups=1, padding_mode="circular"),
        (True, True, True), 4),
    # padding larger than the kernel extent in a transposed convolution: a crop
    Draw(True, 2, "float64", (1, 2, 6, 5), (2, 3, 3, 2), None, dict(
        stride=(3, 2), padding=(3, 1), output_padding=(2, 1), groups=1, dilation=(1, 2)),
        (True, True, False), 5),
    # an invalid padding mode with asymmetric padding (found by the fuzzer: the reference
    # padded explicitly with it, so accepted what torch.nn.Conv1d rejects)
    Draw(False, 1, "float32", (2, 1, 3), (1, 1, 1), None, dict(
        stride=1, padding=((0, 1),), dilation=1, groups=1, padding_mode="constant"),
        (True, True, True), 6, "padding_mode", ("padding_mode",)),
]


@pytest.mark.parametrize("d", FIXED, ids=[f"fixed{i}" for i in range(len(FIXED))])
def test_fixed_draws(d):
    check(d)


def test_faults_are_rejected_by_torch():
    """The fault injection is meaningful: a fault on an accepted draw makes torch reject."""
    d = FIXED[0]
    for fault_kwargs in (dict(stride=0), dict(groups=3), dict(dilation=(1, -1)),
                         dict(padding=-1), dict(padding="same", stride=2)):
        bad = replace(d, kwargs={**d.kwargs, **fault_kwargs})
        assert not _torch_accepts(bad)
    assert _torch_accepts(d)

