"""Oracle: the same Tensor computation on NumPy arrays (the in-memory engine).

Tensors holding dask arrays must stay lazy through the forward and the backward pass
(no dask compute before ``cg.compute``, counted with a dask callback), give the NumPy
values and gradients (float64: max-norm relative 1e-12), and refuse the operations that
cannot stay lazy with a TypeError.
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from dask.callbacks import Callback  # noqa: E402

import convgrad as cg  # noqa: E402
import convgrad.functional as F  # noqa: E402

TOL = 1e-12


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


class Computes(Callback):
    """Counts the graphs dask evaluates."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def _start(self, dsk) -> None:
        self.count += 1


def _close(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-30)
    err = float(np.abs(actual - expected).max(initial=0.0)) / scale
    assert err <= TOL, f"{what}: max relative error {err:.2e}"


def _chunked(a: np.ndarray, rng: np.random.Generator) -> da.Array:
    """``a`` as a dask array with uneven chunks along every dim but the channel dim."""
    chunks = []
    for d, n in enumerate(a.shape):
        if d == 1 or n < 3:
            chunks.append(n)
        else:
            cut = int(rng.integers(1, n))
            chunks.append((cut, n - cut))
    return da.from_array(a, chunks=tuple(chunks))


def check_lazy_equals_numpy(fn, lazy_args: dict, const_args: dict | None = None, seed: int = 0,
                            backward: bool = True) -> None:
    """Run ``fn(**args)`` on NumPy and on dask (``lazy_args`` chunked, the others in
    memory), each argument a leaf requiring grad; compare the output and every gradient,
    and check that nothing is computed before ``cg.compute``."""
    rng = np.random.default_rng(seed)
    const_args = const_args or {}

    def run(lazy: bool):
        leaves = {k: cg.tensor(_chunked(v, rng) if lazy else v, requires_grad=True)
                  for k, v in lazy_args.items()}
        leaves.update({k: cg.tensor(v, requires_grad=True) for k, v in const_args.items()})
        out = fn(**leaves)
        if backward:
            (out if out.ndim == 0 else (out * out).sum()).backward()
        return out, leaves

    with Computes() as computes:
        out, leaves = run(True)
        assert computes.count == 0, "the lazy forward or backward computed something"
        assert isinstance(out.data, da.Array)
        grads = {k: t.grad for k, t in leaves.items() if backward}
        for k, g in grads.items():
            assert g is not None and isinstance(g.data, da.Array), f"d/d{k} is not lazy"
        values = cg.compute(out, *grads.values())
        assert computes.count == 1, "cg.compute should evaluate one graph"
    ref_out, ref_leaves = run(False)
    _close(values[0], ref_out.data, "value")
    for (k, t), v in zip(ref_leaves.items(), values[1:]):
        if backward:
            _close(v, t.grad.data, f"d/d{k}")


# ----------------------------------------------------------------------------- losses
def test_conv_relu_conv_mse_loss_and_gradients():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 14, 13))
    target = rng.standard_normal((3, 4, 7, 7))

    def loss(x, w1, b1, w2, target):
        h = F.conv2d(x, w1, b1, padding=1).relu()
        return F.mse_loss(F.conv2d(h, w2, stride=2, padding=1), target)

    check_lazy_equals_numpy(loss, {"x": x, "target": target},
                            {"w1": rng.standard_normal((5, 2, 3, 3)),
                             "b1": rng.standard_normal(5),
                             "w2": rng.standard_normal((4, 5, 3, 3))})


def test_ssim_and_its_gradient():
    rng = np.random.default_rng(2)
    a, b = rng.random((2, 3, 30, 27)), rng.random((2, 3, 30, 27))
    check_lazy_equals_numpy(lambda a, b: 1 - cg.metrics.ssim(a, b), {"a": a, "b": b})


def test_loss_on_a_3d_volume_with_total_variation():
    rng = np.random.default_rng(3)
    v = rng.random((1, 1, 12, 11, 10))

    def loss(v, psf):
        blurred = F.conv3d(v, psf, padding=2, padding_mode="replicate")
        tv = (v[:, :, 1:] - v[:, :, :-1]).abs().mean() + (v[..., ::2] * 0.5).sum()
        return F.l1_loss(blurred, v) + tv

    check_lazy_equals_numpy(loss, {"v": v}, {"psf": rng.random((1, 1, 5, 5, 5))})


# ----------------------------------------------------------------------------- flavours
CONVS = {
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=3, dilation=2),
               (2, 4, 23), (6, 4, 3)),
    "conv1d_groups_same": (lambda x, w, b: F.conv1d(x, w, b, padding="same", groups=2),
                           (2, 4, 19), (6, 2, 4)),
    "conv2d_reflect": (lambda x, w, b: F.conv2d(x, w, b, padding=2, padding_mode="reflect"),
                       (2, 3, 12, 11), (4, 3, 5, 3)),
    "conv2d_circular": (lambda x, w, b: F.conv2d(x, w, b, padding=(1, 2),
                                                 padding_mode="circular", stride=(1, 2)),
                        (1, 2, 9, 10), (3, 2, 3, 3)),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=1, groups=2),
               (2, 4, 8, 7, 6), (4, 2, 3, 3, 2)),
    "conv_transpose1d": (lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1,
                                                            output_padding=2),
                         (2, 3, 10), (3, 2, 4)),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                            output_padding=1, groups=2),
                         (1, 4, 7, 6), (4, 3, 3, 3)),
    "conv_transpose3d": (lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 2),
                                                            dilation=(1, 2, 1)),
                         (1, 2, 5, 6, 4), (2, 3, 2, 3, 3)),
    "conv_general": (lambda x, w, b: cg.conv_general(
        x, w, b, stride=(1, 2), padding=((2, -1), (0, 3)), kernel_dilation=(2, 1),
        input_dilation=(2, 3), flip=True), (2, 2, 9, 8), (3, 2, 3, 2)),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_every_convolution_flavour(name):
    fn, x_shape, w_shape = CONVS[name]
    rng = np.random.default_rng(sorted(CONVS).index(name))
    transposed = name.startswith("conv_transpose")
    c_out = w_shape[1] * (2 if name == "conv_transpose2d" else 1) if transposed else w_shape[0]
    check_lazy_equals_numpy(fn, {"x": rng.standard_normal(x_shape)},
                            {"w": rng.standard_normal(w_shape), "b": rng.standard_normal(c_out)})


def test_elementwise_reductions_pad_and_pooling():
    rng = np.random.default_rng(4)
    a = rng.random((2, 3, 10, 9)) + 0.5
    b = rng.standard_normal((2, 3, 10, 9))

    def fn(a, b):
        e = (a * b - b / a + a ** 1.5 - (-b).exp() * 0.1 + a.log() + a.sqrt()).tanh()
        e = e + b.sigmoid() + (b - 0.2).relu() + cg.where(b > 0, a, b) + b.clip(-0.5, 0.5)
        p = (F.pad(e, (1, 2, 0, 3), mode="constant", value=0.5)
             + F.pad(e, (1, 2, 0, 3), mode="reflect") + F.pad(e, (1, 2, 0, 3), mode="replicate")
             + F.pad(e, (1, 2, 0, 3), mode="circular"))
        cropped = F.pad(p, (-1, -2, -2, 0))
        pooled = F.avg_pool2d(cropped, 3, stride=2, padding=1)
        return (pooled.mean(dim=(0, 2)).sum() + cropped.sum(dim=1, keepdim=True).mean()
                + F.mse_loss(e, b, reduction="sum") + F.l1_loss(e, a) + e[:, 1:, ::3, 2].sum())

    check_lazy_equals_numpy(fn, {"a": a, "b": b})


def test_second_order_gradient_through_a_convolution():
    """A gradient penalty: d/dw of |d loss/dx|^2, built with create_graph on dask."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 2, 12, 10)), rng.standard_normal((3, 2, 3, 3))

    def run(lazy: bool):
        xt = cg.tensor(_chunked(x, np.random.default_rng(0)) if lazy else x,
                       requires_grad=True)
        wt = cg.tensor(w, requires_grad=True)
        y = F.conv2d(xt, wt, padding=1, stride=(2, 1))
        (gx,) = cg.grad((y * y).sum(), xt, create_graph=True)
        (gx * gx).sum().backward()
        return wt.grad

    with Computes() as computes:
        lazy = run(True)
        assert computes.count == 0 and isinstance(lazy.data, da.Array)
    _close(*cg.compute(lazy), run(False).data, "d penalty / dw")


# ----------------------------------------------------------------------------- the edges
def test_leaves_and_compute():
    arr = da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    t = cg.tensor(arr, requires_grad=True)
    assert isinstance(t.data, da.Array) and t.dtype == np.float64 and t.shape == (3, 4)
    ints = cg.tensor(da.arange(6, chunks=3))
    assert isinstance(ints.data, da.Array) and ints.dtype == np.float32
    assert cg.tensor(arr, dtype=np.float32).dtype == np.float32
    got = cg.compute(t * 2, np.ones(2), cg.tensor([1.0]))
    assert [type(v) for v in got] == [np.ndarray] * 3
    np.testing.assert_array_equal(got[0], np.arange(12.0).reshape(3, 4) * 2)
    with pytest.raises(TypeError, match=r"compute: argument 1 must be a Tensor or an array"):
        cg.compute(t, "x")


NORMS = {
    "group": lambda: cg.nn.GroupNorm(3, 6, dtype=np.float64),
    "group + SiLU": lambda: cg.nn.Sequential(cg.nn.GroupNorm(2, 6, dtype=np.float64),
                                             cg.nn.SiLU()),
    "group + ReLU": lambda: cg.nn.Sequential(cg.nn.GroupNorm(3, 6, dtype=np.float64),
                                             cg.nn.ReLU()),
    "instance": lambda: cg.nn.InstanceNorm2d(6, affine=True, dtype=np.float64),
    "layer": lambda: cg.nn.LayerNorm([6, 5, 7], dtype=np.float64),
}


@pytest.mark.parametrize("kind", list(NORMS))
def test_group_instance_and_layer_norm_stay_lazy(kind):
    """Group (with a fused-pair activation after it), instance and layer normalisation of
    a chunked batch: lazy through forward and backward, the NumPy values and gradients
    (the channels split into groups without merging them with the chunked positions)."""
    layer = NORMS[kind]()
    rng = np.random.default_rng(5)
    for p in layer.parameters():  # weights and biases other than 1 and 0
        p.data[...] = rng.uniform(0.5, 1.5, p.shape)
    # a fixed projection: sum(y^2) of a normalised y hardly depends on x (its gradient is
    # ~0, and the comparison would measure cancellation)
    proj = cg.tensor(rng.standard_normal((3, 6, 5, 7)))
    check_lazy_equals_numpy(lambda x: layer(x) * proj, {"x": rng.standard_normal((3, 6, 5, 7))})


@pytest.mark.parametrize("mode, align, shape", [
    ("nearest", None, (2, 3, 5, 7)), ("bilinear", False, (2, 3, 5, 7)),
    ("bilinear", True, (2, 3, 5, 7)), ("trilinear", False, (2, 2, 4, 3, 5))])
def test_upsampling_stays_lazy(mode, align, shape):
    """Nearest, bilinear and trilinear upsampling (a U-Net's decoder) of a chunked batch:
    each axis's taps gathered along it lazily, the NumPy values and gradients."""
    rng = np.random.default_rng(6)
    proj = cg.tensor(rng.standard_normal((*shape[:2], *(2 * n + 1 for n in shape[2:]))))

    def fn(x):
        kw = {} if align is None else {"align_corners": align}
        y = F.interpolate(x, size=tuple(2 * n + 1 for n in shape[2:]), mode=mode, **kw)
        return y * proj

    check_lazy_equals_numpy(fn, {"x": rng.standard_normal(shape)})


def test_max_pooling_of_a_dask_batch_is_refused_with_a_type_error():
    t = cg.tensor(da.ones((2, 3, 6, 6), chunks=3))
    for op in (lambda: F.max_pool2d(t, 2), lambda: F.adaptive_max_pool2d(t, 3),
               lambda: cg.nn.MaxPool2d(2)(t)):
        with pytest.raises(TypeError, match=r"max_pool.*holds a dask array|MaxPool2d: the"):
            op()


def test_batch_norm_of_a_dask_batch_is_refused_with_a_type_error():
    t = cg.tensor(da.ones((4, 3, 5, 5), chunks=2, dtype=np.float32))
    for layer in (cg.nn.BatchNorm2d(3), cg.nn.Sequential(cg.nn.BatchNorm2d(3), cg.nn.ReLU())):
        with pytest.raises(TypeError, match=r"batch_norm(_relu)?: the tensor holds a dask"):
            layer(t)


def test_operations_that_cannot_stay_lazy_raise_type_errors():
    t = cg.tensor(da.ones((4, 4), chunks=2), requires_grad=True)
    s = t.sum()
    with Computes() as computes:
        assert "dask.array" in repr(s)  # repr never computes
        for op in (s.item, t.numpy, t.tolist, lambda: float(s), lambda: bool(s),
                   lambda: np.asarray(t)):
            with pytest.raises(TypeError, match=r"holds a dask array .* convgrad\.compute"):
                op()
        with pytest.raises(TypeError, match=r"indexing: the index .* cannot stay lazy"):
            t[np.array([0, 1]), np.array([1, 2])]  # two index arrays: dask cannot gather
        picked = t[1:3, np.array([0, 2])]  # dask gathers it, but no lazy scatter back
        with pytest.raises(TypeError, match=r"gradient of the index .* cannot stay lazy"):
            picked.sum().backward()
        assert computes.count == 0
    with pytest.raises(TypeError, match=r"Tensor: data of dtype complex128 is not supported"):
        cg.Tensor(da.ones(3, dtype=complex))
