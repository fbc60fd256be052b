"""Oracle: the contract in docs/API.md (messages name the argument)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from convgrad.ops import (
    ConvSpec,
    conv_bias_grad,
    conv_forward,
    conv_input_grad,
    conv_weight_grad,
)

ERRORS = (ValueError, TypeError)


def spec2(**kw):
    args = dict(stride=(1, 1), padding=((0, 0), (0, 0)), kernel_dilation=(1, 1),
                input_dilation=(1, 1), groups=1, flip=False)
    args.update(kw)
    return ConvSpec(**args)


def word(name: str) -> str:
    """A regex for ``name`` as a whole identifier (so "x" does not match "x_shape")."""
    return rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])"


# --------------------------------------------------------------------------- ConvSpec

SPEC_ERRORS = [
    ("stride-zero", dict(stride=(0, 1)), ValueError, "stride"),
    ("stride-negative", dict(stride=(1, -2)), ValueError, "stride"),
    ("stride-int", dict(stride=1), TypeError, "stride"),
    ("stride-float", dict(stride=(1.0, 1)), TypeError, "stride"),
    ("stride-empty", dict(stride=(), padding=(), kernel_dilation=(), input_dilation=()),
     ValueError, "stride"),
    ("kernel-dilation-zero", dict(kernel_dilation=(1, 0)), ValueError, "kernel_dilation"),
    ("kernel-dilation-str", dict(kernel_dilation="11"), TypeError, "kernel_dilation"),
    ("input-dilation-zero", dict(input_dilation=(0, 1)), ValueError, "input_dilation"),
    ("input-dilation-negative", dict(input_dilation=(2, -1)), ValueError, "input_dilation"),
    ("input-dilation-bool", dict(input_dilation=(True, 1)), TypeError, "input_dilation"),
    ("padding-flat", dict(padding=(1, 1)), TypeError, "padding"),
    ("padding-triples", dict(padding=((0, 0, 0), (0, 0, 0))), TypeError, "padding"),
    ("padding-single", dict(padding=((1,), (1,))), TypeError, "padding"),
    ("padding-float", dict(padding=((0.5, 0), (0, 0))), TypeError, "padding"),
    ("padding-int", dict(padding=1), TypeError, "padding"),
    ("padding-short", dict(padding=((0, 0),)), ValueError, "padding"),
    ("kernel-dilation-long", dict(kernel_dilation=(1, 1, 1)), ValueError, "kernel_dilation"),
    ("input-dilation-short", dict(input_dilation=(1,)), ValueError, "input_dilation"),
    ("groups-zero", dict(groups=0), ValueError, "groups"),
    ("groups-negative", dict(groups=-2), ValueError, "groups"),
    ("groups-float", dict(groups=2.0), ERRORS, "groups"),
    ("groups-bool", dict(groups=True), ERRORS, "groups"),
    ("flip-int", dict(flip=1), TypeError, "flip"),
    ("flip-str", dict(flip="yes"), TypeError, "flip"),
]


@pytest.mark.parametrize("name,kw,exc,arg", SPEC_ERRORS, ids=[c[0] for c in SPEC_ERRORS])
def test_convspec_rejects(name, kw, exc, arg):
    with pytest.raises(exc, match=word(arg)):
        spec2(**kw)


def test_convspec_accepts_numpy_ints_and_lists():
    s = ConvSpec(stride=[np.int64(2), 1], padding=[[-1, np.int32(2)], (0, 0)],
                 kernel_dilation=(1, 1), input_dilation=(1, 3), groups=np.int64(1),
                 flip=np.bool_(True))
    assert s.stride == (2, 1) and s.padding == ((-1, 2), (0, 0)) and s.flip is True


# ------------------------------------------------------------------------ shape errors

X = np.zeros((2, 4, 6, 6))
W = np.zeros((6, 2, 3, 3))
G2 = spec2(groups=2)
GY = np.zeros(G2.output_shape(X.shape, W.shape))


def _all_kernels(x, w, spec, gy=None):
    """Call the three shape-checking kernels on the same (x, w, spec)."""
    if gy is None:
        gy = np.zeros((1, 1, 1, 1))
    return [
        ("conv_forward", lambda: conv_forward(x, w, spec)),
        ("conv_input_grad", lambda: conv_input_grad(gy, w, x.shape, spec)),
        ("conv_weight_grad", lambda: conv_weight_grad(x, gy, w.shape, spec)),
    ]


# the weight is `w` / `weight` in conv_forward and conv_input_grad, `w_shape` in
# conv_weight_grad; the input is `x` ("input" in prose) or `x_shape` in conv_input_grad
WEIGHT = "|".join(word(n) for n in ("weight", "w", "w_shape"))
INPUT = "|".join(word(n) for n in ("input", "x", "x_shape"))

SHAPE_ERRORS = [
    # (name, x shape, w shape, spec, regex that must appear)
    ("groups-not-dividing-c-in", (2, 5, 6, 6), (6, 2, 3, 3), spec2(groups=2),
     r"groups=2 must divide C_in=5"),
    ("groups-not-dividing-c-out", (2, 4, 6, 6), (5, 2, 3, 3), spec2(groups=2),
     r"groups=2 must divide C_out=5"),
    ("groups-too-many", (2, 4, 6, 6), (6, 1, 3, 3), spec2(groups=3), r"groups=3"),
    ("weight-rank-low", (2, 4, 6, 6), (6, 4, 3), spec2(), WEIGHT),
    ("weight-rank-high", (2, 4, 6, 6), (6, 4, 3, 3, 1), spec2(), WEIGHT),
    ("input-rank", (2, 4, 6), (6, 4, 3, 3), spec2(), INPUT),
    ("channel-mismatch", (2, 4, 6, 6), (6, 3, 3, 3), spec2(), r"weight\.shape\[1\]=3"),
    ("channel-mismatch-grouped", (2, 4, 6, 6), (6, 4, 3, 3), spec2(groups=2),
     r"weight\.shape\[1\]=4"),
    ("output-length-zero", (2, 4, 2, 6), (6, 4, 3, 3), spec2(), r"output length"),
    ("output-length-negpad", (2, 4, 6, 6), (6, 4, 3, 3),
     spec2(padding=((-2, -2), (0, 0))), r"output length"),
    ("output-length-stride-no-help", (2, 4, 6, 6), (6, 4, 3, 7), spec2(stride=(1, 5)),
     r"output length"),
    ("kernel-size-zero", (2, 4, 6, 6), (6, 4, 0, 3), spec2(), r"kernel size"),
]


@pytest.mark.parametrize("name,xs,ws,spec,msg", SHAPE_ERRORS, ids=[c[0] for c in SHAPE_ERRORS])
def test_shape_errors_in_every_kernel(name, xs, ws, spec, msg):
    with pytest.raises(ValueError, match=msg):
        spec.output_shape(xs, ws)
    for fn, call in _all_kernels(np.zeros(xs), np.zeros(ws), spec):
        with pytest.raises(ValueError, match=msg) as info:
            call()
        assert fn in str(info.value), (fn, str(info.value))


@pytest.mark.parametrize("bad_gy_shape", [(2, 6, 4, 3), (2, 6, 4), (1, 6, 4, 4), (2, 5, 4, 4)])
def test_gy_of_the_wrong_shape(bad_gy_shape):
    gy = np.zeros(bad_gy_shape)
    with pytest.raises(ValueError, match=word("gy")):
        conv_input_grad(gy, W, X.shape, G2)
    with pytest.raises(ValueError, match=word("gy")):
        conv_weight_grad(X, gy, W.shape, G2)


@pytest.mark.parametrize("bad", [(2, 4, 6), (2, 4, 6, 6, 1), (2, -4, 6, 6), 7, None,
                                 "2466", (2.5, 4, 6, 6)],
                         ids=["rank-low", "rank-high", "negative", "int", "none", "str", "float"])
def test_bad_x_shape(bad):
    with pytest.raises(ERRORS, match=word("x_shape")):
        conv_input_grad(GY, W, bad, G2)


@pytest.mark.parametrize("bad", [(6, 2, 3), (6, 2, 3, 3, 1), (6, 2, -3, 3), None, "6233",
                                 (6, 2, 3, 3.5)],
                         ids=["rank-low", "rank-high", "negative", "none", "str", "float"])
def test_bad_w_shape(bad):
    with pytest.raises(ERRORS, match=word("w_shape")):
        conv_weight_grad(X, GY, bad, G2)


@pytest.mark.parametrize("gy_shape", [(6,), (2, 6)])
def test_bias_grad_needs_spatial_dims(gy_shape):
    with pytest.raises(ValueError, match=word("gy")):
        conv_bias_grad(np.zeros(gy_shape))


# ----------------------------------------------------------------------- type errors

BAD_DTYPES = [np.int32, np.int64, np.bool_, np.float16, np.complex128]


def _kernel_calls(arg: str, value):
    """Every kernel call taking an array argument named ``arg``, with ``value`` put there."""
    x, w, gy = X, W, GY
    if arg == "x":
        return [lambda: conv_forward(value, w, G2),
                lambda: conv_weight_grad(value, gy, w.shape, G2)]
    if arg == "weight":
        return [lambda: conv_forward(x, value, G2),
                lambda: conv_input_grad(gy, value, x.shape, G2)]
    return [lambda: conv_input_grad(value, w, x.shape, G2),
            lambda: conv_weight_grad(x, value, w.shape, G2), lambda: conv_bias_grad(value)]


ARRAYS = {"x": X, "weight": W, "gy": GY}


@pytest.mark.parametrize("arg", list(ARRAYS))
@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=lambda d: np.dtype(d).name)
def test_non_float_dtype_is_a_type_error(arg, dtype):
    bad = ARRAYS[arg].astype(dtype)
    for call in _kernel_calls(arg, bad):
        with pytest.raises(TypeError, match="dtype") as info:
            call()
        assert re.search(word(arg), str(info.value)), str(info.value)
        assert np.dtype(dtype).name in str(info.value)


@pytest.mark.parametrize("arg", list(ARRAYS))
@pytest.mark.parametrize("kind", ["list", "tuple", "float", "none", "matrix-like"])
def test_non_ndarray_is_a_type_error(arg, kind):
    a = ARRAYS[arg]
    bad = {"list": a.tolist(), "tuple": tuple(a.tolist()), "float": 1.0, "none": None,
           "matrix-like": memoryview(a)}[kind]
    for call in _kernel_calls(arg, bad):
        with pytest.raises(TypeError, match=word(arg)):
            call()


@pytest.mark.parametrize("bad_spec", [None, {"stride": (1, 1)}, (1, 1), "spec"],
                         ids=["none", "dict", "tuple", "str"])
def test_non_convspec_spec(bad_spec):
    calls = [lambda: conv_forward(X, W, bad_spec),
             lambda: conv_input_grad(GY, W, X.shape, bad_spec),
             lambda: conv_weight_grad(X, GY, W.shape, bad_spec)]
    for call in calls:
        with pytest.raises(TypeError, match=word("spec")):
            call()


def test_spec_of_the_wrong_rank():
    spec1 = ConvSpec(stride=(1,), padding=((0, 0),), kernel_dilation=(1,), input_dilation=(1,),
                     groups=2)
    for _, call in _all_kernels(X, W, spec1, GY):
        with pytest.raises(ValueError, match=r"input|weight|x_shape|w_shape"):
            call()


def test_errors_do_not_leave_partial_state():
    """After a failed call, a valid call gives the right answer (nothing cached wrongly)."""
    with pytest.raises(ValueError):
        conv_forward(np.zeros((2, 5, 6, 6)), W, G2)
    x = np.arange(X.size, dtype=np.float64).reshape(X.shape)
    w = np.ones(W.shape)
    y = conv_forward(x, w, G2)
    assert y.shape == GY.shape
    ref = sum(x[:, c, i:i + 4, j:j + 4] for c in range(2) for i in range(3) for j in range(3))
    np.testing.assert_allclose(y[:, 0], ref)
