"""Oracle: jax.lax.conv_general_dilated and jax.vjp (flip = kernel reversed first), CPU.

Hypothesis draws ``conv_general`` configurations (1-4 spatial dims, stride, negative and
asymmetric padding in every form, kernel and input dilation, groups, flip, batch 0,
C_in or C_out 0, unbatched inputs, float32 and float64).  Every draw ends in exactly one
of: the reference accepts it and convgrad matches its output shape, dtype, forward and
every gradient; or the reference rejects it and convgrad raises ``ValueError``/
``TypeError`` starting with ``conv_general:`` and naming the offending argument (the
faulted one itself when the same draw without its fault is valid).

The reference is JAX plus the rules docs/API.md adds on top of it: every output length must
be >= 1 (JAX returns an empty dim), the input's spatial dims must be non-empty (torch's
rule; JAX pads an empty dim), the bias has shape (C_out,), ``flip`` is a bool, and
``padding`` is an int, one int per spatial dim or one (lo, hi) pair per spatial dim (a
flat pair in 1-D is an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from numbers import Integral

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.usefixtures("backend")  # with oneDNN, then without
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
from jax import lax  # noqa: E402

import convgrad as cg  # noqa: E402
import convgrad.functional as F  # noqa: E402

from .draw_limits import time_limit  # noqa: E402
from .tolerances import assert_close  # noqa: E402

# compile-speed options only (the oracle's arithmetic is unchanged)
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
ARG_WORDS = ("input", "weight", "bias", "stride", "padding", "kernel_dilation",
             "input_dilation", "groups", "flip", "kernel", "C_in", "C_out", "output length")
SECONDS_PER_DRAW = 60
# XLA materialises input dilation, so extremes stay moderate here; test_hostile_inputs.py
# checks convgrad's strides and dilations up to 10**15 against exact values
BIG = 1000
# JAX compiles every new shape (~0.1 s): half as many draws as each torch fuzz test
EXAMPLES = max(20, settings().max_examples // 2)


@dataclass(frozen=True)
class Draw:
    nd: int
    dtype: str
    x_shape: tuple
    w_shape: tuple
    b_shape: tuple | None
    kwargs: dict  # stride, padding, kernel_dilation, input_dilation, groups, flip
    seed: int
    fault: str | None = None
    words: tuple = ()
    base: Draw | None = field(default=None, repr=False)


def _per_dim(draw, values: list[int]):
    form = draw(st.sampled_from(("int", "int", "tuple", "list", "numpy")))
    if form == "int" and len(set(values)) == 1:
        return values[0]
    if form == "list":
        return list(values)
    if form == "numpy":
        return tuple(np.int64(v) for v in values)
    return tuple(values)


def _padding(draw, pairs: list[tuple[int, int]]):
    """The same pads as an int, one int per dim, (lo, hi) pairs or a mix (when possible)."""
    form = draw(st.sampled_from(("int", "ints", "pairs", "pairs", "mixed")))
    sym = all(lo == hi for lo, hi in pairs)
    if form == "int" and sym and len(set(pairs)) == 1:
        return pairs[0][0]
    if form == "ints" and sym:
        return tuple(lo for lo, _ in pairs)
    if form == "mixed":
        return tuple(lo if lo == hi else (lo, hi) for lo, hi in pairs)
    return tuple((lo, hi) if draw(st.booleans()) else [lo, hi] for lo, hi in pairs)


@st.composite
def draws(draw) -> Draw:
    nd = draw(st.sampled_from((1, 2, 1, 2, 3, 4)))
    dtype = draw(st.sampled_from(("float32", "float64")))
    g = draw(st.integers(1, 3))
    cin_g = draw(st.sampled_from((1, 2, 3, 1, 2, 1, 2, 3, 0)))
    cout_g = draw(st.sampled_from((1, 2, 3, 1, 2, 1, 2, 3, 0)))
    kmax, lmax = {1: (4, 8), 2: (4, 6), 3: (3, 4), 4: (2, 3)}[nd]
    K = [draw(st.integers(1, kmax)) for _ in range(nd)]
    S = [draw(st.integers(1, 3)) for _ in range(nd)]
    KD = [draw(st.integers(1, 3)) for _ in range(nd)]
    ID = [draw(st.sampled_from((1, 1, 2, 3))) for _ in range(nd)]
    L = [draw(st.integers(1, lmax)) for _ in range(nd)]
    pad = st.sampled_from((0, 1, 2, 3, -1, -2, -3, 0, 1, 2))
    pads = [(draw(pad), draw(pad)) for _ in range(nd)]
    for d in range(nd):  # mostly long enough for the dilated kernel and the crop
        if draw(st.integers(0, 3)):
            need = (K[d] - 1) * KD[d] + 1 - min(pads[d][0], 0) - min(pads[d][1], 0)
            L[d] = max(L[d], -(-(need - 1) // ID[d]) + 1)
    if draw(st.integers(0, 9)) == 0:  # an extreme stride, kernel or input dilation
        d = draw(st.integers(0, nd - 1))
        which = draw(st.sampled_from(("stride", "input_dilation", "kernel_dilation")))
        if which == "stride":
            S[d] = BIG
        elif which == "input_dilation":  # and as big a stride: the output stays short
            ID[d] = S[d] = BIG
        else:  # a kernel extent of BIG + 1, the first tap in padding: output length 1
            KD[d], K[d], pads[d] = BIG, 2, (BIG + 1 - L[d], 0)
    batch = draw(st.sampled_from((1, 2, 1, 2, 3, None, 0)))  # None: unbatched
    c_in, c_out = g * cin_g, g * cout_g
    x_shape = (*(() if batch is None else (batch,)), c_in, *L)
    w_shape = (c_out, cin_g, *K)
    kwargs = dict(stride=_per_dim(draw, S), padding=_padding(draw, pads),
                  kernel_dilation=_per_dim(draw, KD), input_dilation=_per_dim(draw, ID),
                  groups=g, flip=draw(st.booleans()))
    b_shape = (c_out,) if draw(st.booleans()) else None
    d = Draw(nd, dtype, x_shape, w_shape, b_shape, kwargs, draw(st.integers(0, 2**32 - 1)))
    if draw(st.integers(0, 3)) == 0:
        d = _with_fault(draw, d)
    return d


def _as_list(value, nd: int) -> list[int]:
    return [int(value)] * nd if np.ndim(value) == 0 else [int(v) for v in value]


def _with_fault(draw, d: Draw) -> Draw:
    nd, kw = d.nd, dict(d.kwargs)
    batched = len(d.x_shape) == nd + 2
    faults = ["stride", "kernel_dilation", "input_dilation", "groups_nonpos",
              "groups_mismatch", "weight_channels", "bias", "length", "x_ndim",
              "kernel_zero", "spatial_zero", "flip", "type", "padding_form"]
    fault = draw(st.sampled_from(faults))
    x_shape, w_shape, b_shape = d.x_shape, d.w_shape, d.b_shape
    words: tuple = (fault,)
    if fault in ("stride", "kernel_dilation", "input_dilation"):
        vals = _as_list(kw[fault], nd)
        vals[draw(st.integers(0, nd - 1))] = draw(st.integers(-2, 0))
        kw[fault] = tuple(vals)
    elif fault == "groups_nonpos":
        kw["groups"] = draw(st.integers(-2, 0))
        words = ("groups",)
    elif fault == "groups_mismatch":
        kw["groups"] = kw["groups"] + draw(st.integers(1, 3))
        words = ("groups", "weight", "C_in", "C_out", "input")
    elif fault == "weight_channels":
        w_shape = (w_shape[0], w_shape[1] + draw(st.integers(1, 2)), *w_shape[2:])
        words = ("weight", "C_in", "groups", "input")
    elif fault == "bias":
        b_shape = draw(st.sampled_from(((d.w_shape[0] + 1,), (d.w_shape[0], 1), ())))
    elif fault == "length":
        name = draw(st.sampled_from(("stride", "kernel_dilation", "input_dilation",
                                     "padding")))
        n = draw(st.sampled_from([k for k in (0, nd - 1, nd + 1) if k != nd and k >= 1]
                                 or [0]))
        kw[name] = tuple([(0, 0) if name == "padding" else 1] * n)
        if n == 1:  # a 1-tuple of ints is not a single int
            kw[name] = (kw[name][0],) * (3 if nd == 2 else 2)
        words = (name,)
    elif fault == "x_ndim":
        x_shape = (2, *x_shape) if batched else x_shape[1:]
        if not batched and nd == 1:
            x_shape = (1, 1, 1, *d.x_shape)
        words = ("input",)
    elif fault == "kernel_zero":
        i = draw(st.integers(2, nd + 1))
        w_shape = tuple(0 if j == i else v for j, v in enumerate(w_shape))
        words = ("kernel", "weight")
    elif fault == "spatial_zero":
        i = len(x_shape) - 1 - draw(st.integers(0, nd - 1))
        x_shape = tuple(0 if j == i else v for j, v in enumerate(x_shape))
        words = ("input",)
    elif fault == "flip":
        kw["flip"] = draw(st.sampled_from((1, 0, "yes", None, np.int64(1))))
    elif fault == "type":
        name = draw(st.sampled_from(("stride", "kernel_dilation", "input_dilation", "groups",
                                     "padding")))
        kw[name] = draw(st.sampled_from((1.5, 2.0, "2", None)))
        words = (name,)
    elif fault == "padding_form":
        words = ("padding",)
        if nd == 1:  # docs/API.md: a flat (lo, hi) in 1-D is an error
            kw["padding"] = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
        else:
            kw["padding"] = tuple([(0, 0, 0)] * nd)
    return replace(d, x_shape=x_shape, w_shape=w_shape, b_shape=b_shape, kwargs=kw,
                   fault=fault, words=words, base=d)


# ------------------------------------------------------------------------ the reference
def _jax_padding(padding, nd: int):
    """docs/API.md's padding forms as JAX's (lo, hi) pairs; None when the form is illegal."""
    def is_int(v):
        return isinstance(v, Integral) and not isinstance(v, bool)

    if is_int(padding):
        return [(int(padding), int(padding))] * nd
    if not isinstance(padding, tuple | list) or len(padding) != nd:
        return None
    out = []
    for p in padding:
        if is_int(p):
            out.append((int(p), int(p)))
        elif isinstance(p, tuple | list) and len(p) == 2 and all(is_int(v) for v in p):
            out.append((int(p[0]), int(p[1])))
        else:
            return None
    return out


def _per_dim_tuple(v, nd: int):
    return tuple(v) if isinstance(v, tuple | list) else (v,) * nd


def _jax_program(d: Draw):
    """(the call JAX validates, the program whose values are compared)."""
    kw, nd = d.kwargs, d.nd
    flip_axes = tuple(range(2, 2 + nd))
    stride = _per_dim_tuple(kw["stride"], nd)
    padding = _jax_padding(kw["padding"], nd)
    idil = _per_dim_tuple(kw["input_dilation"], nd)
    kdil = _per_dim_tuple(kw["kernel_dilation"], nd)

    def conv(x, w):
        if kw["flip"]:
            w = jax.numpy.flip(w, axis=flip_axes)
        return lax.conv_general_dilated(
            x, w, window_strides=stride, padding=padding, lhs_dilation=idil,
            rhs_dilation=kdil, feature_group_count=kw["groups"],
            precision=lax.Precision.HIGHEST)

    def conv_values(x, w):
        # XLA:CPU's float32 convolution reads garbage with a negative padding (a crop):
        # dilate, pad and crop with lax.pad instead, the same map by JAX's definition
        if kw["flip"]:
            w = jax.numpy.flip(w, axis=flip_axes)
        xp = lax.pad(x, jax.numpy.zeros((), x.dtype),
                     [(0, 0, 0), (0, 0, 0)] + [(lo, hi, di - 1)
                                               for (lo, hi), di in zip(padding, idil)])
        return lax.conv_general_dilated(
            xp, w, window_strides=stride, padding=[(0, 0)] * nd, rhs_dilation=kdil,
            feature_group_count=kw["groups"], precision=lax.Precision.HIGHEST)

    def program(x, w, b, gy):
        def f(x, w, b):
            y = conv_values(x, w)
            return y if b is None else y + b.reshape((1, -1) + (1,) * nd)

        y, vjp = jax.vjp(f, x, w, b)
        return (y, *vjp(gy))

    return conv, program


def _arrays(d: Draw):
    rng = np.random.default_rng(d.seed)
    x = rng.standard_normal(d.x_shape).astype(d.dtype)
    w = rng.standard_normal(d.w_shape).astype(d.dtype)
    b = None if d.b_shape is None else rng.standard_normal(d.b_shape).astype(d.dtype)
    return rng, x, w, b


def _api_rule_broken(d: Draw) -> str | None:
    nd, kw = d.nd, d.kwargs
    if not isinstance(kw["flip"], bool):
        return "flip must be a bool"
    if _jax_padding(kw["padding"], nd) is None:
        return "padding form"
    if len(d.x_shape) not in (nd + 1, nd + 2):  # JAX would read (C, ...) as a batch
        return "input ndim"
    if 0 in d.x_shape[-nd:]:
        return "empty input spatial dim"
    if d.b_shape is not None and d.b_shape != (d.w_shape[0],):
        return "bias shape"
    return None


def reference(d: Draw, x, w, b):
    """((y, gx, gw, gb) from JAX, None) if the draw is valid, else (None, why)."""
    why = _api_rule_broken(d)
    if why is not None:
        return None, why
    unbatched = x.ndim == d.nd + 1
    xb = x[None] if unbatched else x
    conv, program = _jax_program(d)
    try:  # tracing runs JAX's shape rule, lowering the verifier (stride 0 gets that far)
        y_shape = jax.jit(conv).lower(xb, w).out_info.shape
    except Exception as e:  # JAX rejects the configuration
        return None, e
    if 0 in y_shape[2:]:
        return None, "an empty output spatial dim"
    return (y_shape, program, unbatched), None


def _run_reference(ref, rng, x, w, b, dtype):
    y_shape, program, unbatched = ref
    gy = rng.standard_normal(y_shape).astype(dtype)
    xb = x[None] if unbatched else x
    lowered = jax.jit(program).lower(xb, w, b, gy)
    compiled = lowered.compile(compiler_options=FAST_COMPILE)
    y, gx, gw, gb = (None if a is None else np.asarray(a) for a in compiled(xb, w, b, gy))
    if unbatched:
        y, gx, gy = y[0], gx[0], gy[0]
    return gy, y, gx, gw, gb



def check(d: Draw) -> str:
    rng, x, w, b = _arrays(d)
    ref, why = reference(d, x, w, b)
    with time_limit(SECONDS_PER_DRAW):
        cx, cw = cg.tensor(x, requires_grad=True), cg.tensor(w, requires_grad=True)
        cb = None if b is None else cg.tensor(b, requires_grad=True)
        try:
            cy = F.conv_general(cx, cw, cb, **d.kwargs)
            error = None
        except Exception as e:
            error = e
        if ref is None:
            assert error is not None, (
                f"the reference rejects ({why!r}) but convgrad returned shape {cy.shape}")
            _check_error(d, error)
            return f"rejected ({d.fault or 'natural'})"
        if error is not None:
            raise AssertionError(f"JAX accepts, convgrad raised {error!r}") from error
        gy, y, gx, gw, gb = _run_reference(ref, rng, x, w, b, d.dtype)
        assert cy.shape == y.shape, f"shape {cy.shape} != JAX {y.shape}"
        assert cy.dtype == np.dtype(d.dtype)
        assert_close(cy.data, y, d.dtype, "forward")
        cy.backward(gy)
        assert_close(cx.grad.data, gx, d.dtype, "input gradient")
        assert_close(cw.grad.data, gw, d.dtype, "weight gradient")
        if b is not None:
            assert_close(cb.grad.data, gb, d.dtype, "bias gradient")
        return "accepted" + (" (empty)" if cy.data.size == 0 else "")


def _check_error(d: Draw, err: Exception) -> None:
    assert isinstance(err, ValueError | TypeError), f"wrong exception type {err!r}"
    msg = str(err)
    assert msg.startswith("conv_general:"), f"message does not start with 'conv_general:': {msg}"
    if d.base is not None and reference(d.base, *_arrays(d.base)[1:])[0] is not None:
        assert any(w in msg for w in d.words), f"fault {d.fault}: {d.words} not in {msg!r}"
        if d.fault in ("stride", "kernel_dilation", "input_dilation", "groups_nonpos", "flip"):
            name = "groups" if d.fault == "groups_nonpos" else d.fault
            assert f"{name}=" in msg, f"the value of {name} is not quoted: {msg}"
    else:
        assert any(w in msg for w in ARG_WORDS), f"no argument named in {msg!r}"


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # JAX's shape rule, stride 0
@settings(max_examples=EXAMPLES)
@given(draws())
def test_conv_general_agrees_with_jax(d):
    event(check(d))


FIXED = [
    # negative padding, input and kernel dilation, flip, groups, unbatched
    Draw(2, "float64", (4, 5, 6), (6, 2, 3, 2), (6,), dict(
        stride=(2, 1), padding=((-1, 2), 1), kernel_dilation=(1, 2), input_dilation=(2, 3),
        groups=2, flip=True), 1),
    # zero batch and zero output channels, both legal in JAX
    Draw(1, "float32", (0, 3, 7), (0, 3, 2), None, dict(
        stride=1, padding=0, kernel_dilation=1, input_dilation=1, groups=1, flip=False), 2),
    # zero input channels: the output is the bias
    Draw(3, "float64", (2, 0, 3, 2, 2), (4, 0, 2, 1, 2), (4,), dict(
        stride=1, padding=((1, 0), (0, 0), (0, 1)), kernel_dilation=1, input_dilation=2,
        groups=1, flip=True), 3),
    # a crop (negative padding) in float32, which XLA:CPU's convolution gets wrong
    Draw(1, "float32", (2, 2, 5), (1, 2, 4), None, dict(
        stride=1, padding=((-1, 1),), kernel_dilation=1, input_dilation=1, groups=1,
        flip=False), 0),
    # a crop beyond the input, padded back: every tap reads padding
    Draw(1, "float64", (1, 1, 4), (1, 1, 2), (1,), dict(
        stride=1, padding=((-5, 6),), kernel_dilation=1, input_dilation=1, groups=1,
        flip=False), 5),
    # a 4-d convolution
    Draw(4, "float64", (1, 2, 3, 3, 2, 3), (2, 1, 2, 1, 2, 2), None, dict(
        stride=(1, 2, 1, 1), padding=1, kernel_dilation=(1, 1, 1, 2), input_dilation=(2, 1, 1, 1),
        groups=2, flip=False), 4),
]


@pytest.mark.parametrize("d", FIXED, ids=[f"fixed{i}" for i in range(len(FIXED))])
def test_fixed_draws(d):
    check(d)
