"""One small adapter per implementation, all with the same interface.

``impl.load()`` imports the library (raising if it is not installed) and returns its
version; ``impl.unsupported(workload, pass_)`` is ``None`` or the reason a pass
cannot run; ``impl.prepare(workload, pass_, inputs)`` builds everything outside the
timed region and returns a :class:`Prepared`: calling it runs the pass once (to
completion: JAX and MLX results are waited for) and returns the implementation's own
result objects; ``prepared.to_numpy(result)`` turns them into a dict of float32
ndarrays in PyTorch's layout with the keys ``y`` (the output, or the loss for MS and
S1), ``x`` (input gradient), ``weight`` and ``bias`` (their gradients) as the pass
computes them; for a network's training step, the keys of
:func:`.networks.result_keys`.

torch runs as three peers: ``torch`` (NCHW), ``torch_cl`` (the same, with the model
and batch in ``torch.channels_last`` memory format; network workloads only) and
``torch_compile`` (the model under ``torch.compile``, inductor, default mode; the real
networks N3-N6 only; an error there is that peer's, reported, not the bench's).

Heavy libraries (torch, jax, mlx) are imported inside the methods only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .workloads import Inputs, Workload

__all__ = ["Impl", "Prepared", "ConvgradImpl", "TorchImpl", "TorchChannelsLastImpl",
           "TorchCompileImpl", "JaxImpl", "MlxImpl", "PEERS", "needs", "result_keys", "make_impl"]


def needs(pass_: str) -> tuple[bool, bool, bool]:
    """(input requires grad, weight and bias require grad, a backward pass runs)."""
    if pass_ == "step":  # a training step: parameters only
        return False, True, True
    if pass_ == "fwd":
        return False, False, False
    if pass_ == "fwd+bwd":
        return True, True, True
    if pass_ == "fwd+bwd_input":
        return True, False, True
    if pass_ == "fwd+bwd_weight":
        return False, True, True
    raise ValueError(f"unknown pass {pass_!r}")


def result_keys(w: Workload, pass_: str) -> tuple[str, ...]:
    """The arrays a pass produces (and that the agreement check compares)."""
    if w.is_network:
        from .networks import result_keys as network_keys

        return network_keys(w)
    need_x, need_w, _ = needs(pass_)
    keys = ["y"]
    if need_x:
        keys.append("x")
    if need_w and w.is_conv:
        keys += ["weight", "bias"]
    return tuple(keys)


class Prepared:
    """A ready-to-time pass: ``prepared()`` runs it once; ``to_numpy`` converts results."""

    def __init__(self, run: Callable[[], Any], to_numpy: Callable[[Any], dict]) -> None:
        self._run, self._to_numpy = run, to_numpy

    def __call__(self) -> Any:
        return self._run()

    def to_numpy(self, result: Any) -> dict[str, np.ndarray]:
        return {k: np.asarray(v, dtype=np.float32) for k, v in self._to_numpy(result).items()}


class Impl:
    """Base adapter."""

    name = "?"

    def load(self) -> str:
        raise NotImplementedError

    def unsupported(self, w: Workload, pass_: str) -> str | None:
        return None

    def prepare(self, w: Workload, pass_: str, inp: Inputs) -> Prepared:
        raise NotImplementedError

    @contextmanager
    def threads(self, n: int) -> Iterator[None]:
        """Limit this implementation to ``n`` threads inside the block (where it can)."""
        yield

    def thread_info(self) -> dict:
        return {}


# ----------------------------------------------------------------------------- convgrad


class ConvgradImpl(Impl):
    name = "convgrad"

    def load(self) -> str:
        import convgrad

        return convgrad.__version__

    def unsupported(self, w: Workload, pass_: str) -> str | None:
        if w.is_metric:
            return _convgrad_metric_missing(w.op)
        return None

    @contextmanager
    def threads(self, n: int) -> Iterator[None]:
        # NumPy's BLAS pool, at run time (OPENBLAS_* / OMP_* env vars are left alone)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl is in the bench extra
            yield
            return
        with threadpool_limits(limits=n, user_api="blas"):
            yield

    def prepare(self, w: Workload, pass_: str, inp: Inputs) -> Prepared:
        import convgrad as cg

        if w.is_network:
            from .networks import convgrad_step

            return Prepared(*convgrad_step(w, inp))
        need_x, need_w, backward = needs(pass_)
        keys = result_keys(w, pass_)
        if w.is_metric:
            from convgrad import metrics

            metric = getattr(metrics, w.op)
            X = cg.tensor(inp.x, requires_grad=need_x)
            Y = cg.tensor(inp.y_target)
            mkw = dict(w.kwargs)

            def run_ms() -> dict:
                X.grad = None
                loss = 1 - metric(X, Y, **mkw)
                if backward:
                    loss.backward()
                return {"y": loss, "x": X.grad}

            return Prepared(run_ms, lambda r: {k: r[k].data for k in keys})

        import convgrad.functional as F

        fn = getattr(F, w.op)
        kw = dict(w.kwargs)
        x = cg.tensor(inp.x, requires_grad=need_x)
        wt = cg.tensor(inp.w, requires_grad=need_w)
        b = cg.tensor(inp.b, requires_grad=need_w)
        gy = inp.gy

        def run() -> dict:
            x.grad = wt.grad = b.grad = None
            y = fn(x, wt, b, **kw)
            if backward:
                y.backward(gy)
            return {"y": y, "x": x.grad, "weight": wt.grad, "bias": b.grad}

        return Prepared(run, lambda r: {k: r[k].data for k in keys})


def _convgrad_metric_missing(op: str) -> str | None:
    import importlib

    try:
        metrics = importlib.import_module("convgrad.metrics")
    except ImportError as e:
        return f"convgrad.metrics is not available yet ({e})"
    if not callable(getattr(metrics, op, None)):
        return f"convgrad.metrics.{op} is not available yet"
    return None


# ----------------------------------------------------------------------------- PyTorch


class TorchImpl(Impl):
    name = "torch"
    channels_last = False  # the memory format of the network workloads' model and batch

    def load(self) -> str:
        import torch

        return torch.__version__

    def unsupported(self, w: Workload, pass_: str) -> str | None:
        if w.is_metric or w.op == "train_autoencoder":
            try:
                import pytorch_msssim  # noqa: F401
            except ImportError as e:
                return f"pytorch_msssim is not installed ({e})"
        return None

    @contextmanager
    def threads(self, n: int) -> Iterator[None]:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def thread_info(self) -> dict:
        import torch

        return {"torch.get_num_threads": torch.get_num_threads(),
                "torch.get_num_interop_threads": torch.get_num_interop_threads()}

    def prepare(self, w: Workload, pass_: str, inp: Inputs) -> Prepared:
        import torch

        if w.is_network:
            from .networks import torch_step

            return Prepared(*torch_step(w, inp, self.channels_last))
        need_x, need_w, backward = needs(pass_)
        keys = result_keys(w, pass_)

        def leaf(a: np.ndarray, grad: bool) -> torch.Tensor:
            return torch.from_numpy(np.array(a, dtype=np.float32)).requires_grad_(grad)

        def to_numpy(r: dict) -> dict:
            return {k: r[k].detach().numpy() for k in keys}

        if w.is_metric:
            import pytorch_msssim

            metric = getattr(pytorch_msssim, w.op)
            X, Y = leaf(inp.x, need_x), leaf(inp.y_target, False)
            mkw = dict(w.kwargs)

            def run_ms() -> dict:
                X.grad = None
                loss = 1 - metric(X, Y, size_average=True, **mkw)
                if backward:
                    loss.backward()
                return {"y": loss, "x": X.grad}

            return Prepared(run_ms, to_numpy)

        fn = getattr(torch.nn.functional, w.op)
        kw = dict(w.kwargs)
        x, wt, b = leaf(inp.x, need_x), leaf(inp.w, need_w), leaf(inp.b, need_w)
        gy = torch.from_numpy(np.array(inp.gy, dtype=np.float32))

        def run() -> dict:
            x.grad = wt.grad = b.grad = None
            y = fn(x, wt, b, **kw)
            if backward:
                y.backward(gy)
            return {"y": y, "x": x.grad, "weight": wt.grad, "bias": b.grad}

        return Prepared(run, to_numpy)


class TorchChannelsLastImpl(TorchImpl):
    """torch eager with the model and batch in ``torch.channels_last`` (N1, N2 only)."""

    name = "torch_cl"
    channels_last = True

    def thread_info(self) -> dict:
        return {}  # the same process and thread pool as the ``torch`` peer

    def unsupported(self, w: Workload, pass_: str) -> str | None:
        if not w.is_network:
            return "the channels_last peer runs the network workloads only"
        return super().unsupported(w, pass_)


class TorchCompileImpl(TorchImpl):
    """torch with every network under ``torch.compile`` (inductor, default mode; N3-N6)."""

    name = "torch_compile"

    def thread_info(self) -> dict:
        return {}  # the same process and thread pool as the ``torch`` peer

    def unsupported(self, w: Workload, pass_: str) -> str | None:
        if not w.is_real_net:
            return "the torch.compile peer runs the real networks (N3-N6) only"
        return None

    def prepare(self, w: Workload, pass_: str, inp: Inputs) -> Prepared:
        from .nets import build_step

        return Prepared(*build_step(w, inp, "torch", compiled=True))


# ----------------------------------------------------------------------------- JAX

#: appended to XLA_FLAGS before jax first initialises its CPU backend
JAX_THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={n}"


class JaxImpl(Impl):
    name = "jax"

    def __init__(self, n_threads: int = 2) -> None:
        self.n_threads = n_threads
        self.xla_flags: str | None = None
        self.thread_note = ""

    def load(self) -> str:
        if "jax" in sys.modules:
            self.thread_note = "jax was imported before the bench: XLA_FLAGS left as they were"
            import jax
        else:
            before = os.environ.get("XLA_FLAGS")
            flags = JAX_THREAD_FLAGS.format(n=self.n_threads)
            os.environ["XLA_FLAGS"] = f"{before} {flags}" if before else flags
            try:
                import jax

                jax.devices("cpu")  # the backend reads XLA_FLAGS now
            finally:
                # restore: nothing else in this process should inherit the bench's flags
                if before is None:
                    os.environ.pop("XLA_FLAGS", None)
                else:
                    os.environ["XLA_FLAGS"] = before
            self.thread_note = f"XLA_FLAGS={flags!r} set before jax initialised"
        self.xla_flags = os.environ.get("XLA_FLAGS")
        return jax.__version__

    def thread_info(self) -> dict:
        return {"jax": self.thread_note}

    def unsupported(self, w: Workload, pass_: str) -> str | None:
        if w.is_metric:
            return "no JAX SSIM/MS-SSIM peer (the metric peer is pytorch-msssim)"
        if w.is_network:
            return "no JAX training-step peer (the network peers are torch and torch_cl)"
        return None

    def prepare(self, w: Workload, pass_: str, inp: Inputs) -> Prepared:
        import jax

        need_x, need_w, backward = needs(pass_)
        keys = result_keys(w, pass_)
        conv = _jax_conv(w)
        cpu = jax.devices("cpu")[0]
        x, wt, b, gy = (jax.device_put(np.asarray(a, np.float32), cpu)
                        for a in (inp.x, inp.w, inp.b, inp.gy))

        if pass_ == "fwd":
            def g(x, wt, b, gy):
                return (conv(x, wt, b),)
        elif pass_ == "fwd+bwd":
            def g(x, wt, b, gy):
                y, vjp = jax.vjp(conv, x, wt, b)
                return (y, *vjp(gy))
        elif pass_ == "fwd+bwd_input":
            def g(x, wt, b, gy):
                y, vjp = jax.vjp(lambda x_: conv(x_, wt, b), x)
                return (y, *vjp(gy))
        else:
            def g(x, wt, b, gy):
                y, vjp = jax.vjp(lambda w_, b_: conv(x, w_, b_), wt, b)
                return (y, *vjp(gy))

        f = jax.jit(g)

        def run() -> tuple:
            return jax.block_until_ready(f(x, wt, b, gy))

        return Prepared(run, lambda r: dict(zip(keys, (np.asarray(a) for a in r))))


def _jax_conv(w: Workload) -> Callable:
    """``conv(x, w, b)`` in PyTorch layout and semantics, with ``lax.conv_general_dilated``."""
    import jax.numpy as jnp
    from jax import lax

    nd = w.nd
    sp = "DHW"[3 - nd:] if nd <= 3 else "".join(chr(ord("a") + i) for i in range(nd))
    dn = ("NC" + sp, "OI" + sp, "NC" + sp)
    s, p, d = w.per_dim("stride", 1), w.per_dim("padding", 0), w.per_dim("dilation", 1)
    g = w.kwargs.get("groups", 1)
    bshape = (1, -1) + (1,) * nd
    hi = lax.Precision.HIGHEST

    if not w.is_transpose:
        def conv(x, wt, b):
            y = lax.conv_general_dilated(x, wt, s, [(q, q) for q in p], rhs_dilation=d,
                                         dimension_numbers=dn, feature_group_count=g,
                                         precision=hi)
            return y + b.reshape(bshape)
        return conv

    op = w.per_dim("output_padding", 0)
    k = w.w_shape[2:]
    pads = [(di * (ki - 1) - pi, di * (ki - 1) - pi + oi) for di, ki, pi, oi in zip(d, k, p, op)]

    def conv_t(x, wt, b):
        # (C_in, C_out/G, *K) -> (C_out, C_in/G, *K), flipped: a stride-1 convolution of
        # the input dilated by the stride
        c_in, og = wt.shape[:2]
        w2 = wt.reshape(g, c_in // g, og, *k).swapaxes(1, 2).reshape(g * og, c_in // g, *k)
        w2 = jnp.flip(w2, axis=tuple(range(2, 2 + nd)))
        y = lax.conv_general_dilated(x, w2, (1,) * nd, pads, lhs_dilation=s, rhs_dilation=d,
                                     dimension_numbers=dn, feature_group_count=g, precision=hi)
        return y + b.reshape(bshape)
    return conv_t


# ----------------------------------------------------------------------------- MLX


class MlxImpl(Impl):
    """MLX on the CPU: channels-last, so inputs are transposed outside the timed region."""

    name = "mlx"

    def load(self) -> str:
        import mlx.core as mx

        mx.set_default_device(mx.cpu)
        return str(getattr(mx, "__version__", "?"))

    def thread_info(self) -> dict:
        return {"mlx": "MLX has no thread-count setting: it runs as it decides"}

    def unsupported(self, w: Workload, pass_: str) -> str | None:
        if w.is_metric:
            return "no MLX SSIM/MS-SSIM peer"
        if w.is_network:
            return "no MLX training-step peer"
        if w.is_transpose and w.kwargs.get("groups", 1) != 1:
            return "MLX transposed convolutions support groups=1 only"
        return None

    def prepare(self, w: Workload, pass_: str, inp: Inputs) -> Prepared:
        import mlx.core as mx

        need_x, need_w, backward = needs(pass_)
        keys = result_keys(w, pass_)
        fn = getattr(mx, w.op)
        kw = dict(w.kwargs)
        if w.is_transpose:
            w_mlx = np.moveaxis(inp.w, 0, -1)  # (C_in, C_out, *K) -> (C_out, *K, C_in)
        else:
            w_mlx = np.moveaxis(inp.w, 1, -1)  # (C_out, C_in/G, *K) -> (C_out, *K, C_in/G)
        x, wt, b, gy = (mx.array(np.ascontiguousarray(a, dtype=np.float32)) for a in
                        (np.moveaxis(inp.x, 1, -1), w_mlx, inp.b, np.moveaxis(inp.gy, 1, -1)))

        def conv(x, wt, b):
            return fn(x, wt, **kw) + b

        if pass_ == "fwd":
            def g(x, wt, b, gy):
                return [conv(x, wt, b)]
        elif pass_ == "fwd+bwd":
            def g(x, wt, b, gy):
                ys, grads = mx.vjp(lambda x_, w_, b_: conv(x_, w_, b_), [x, wt, b], [gy])
                return [*ys, *grads]
        elif pass_ == "fwd+bwd_input":
            def g(x, wt, b, gy):
                ys, grads = mx.vjp(lambda x_: conv(x_, wt, b), [x], [gy])
                return [*ys, *grads]
        else:
            def g(x, wt, b, gy):
                ys, grads = mx.vjp(lambda w_, b_: conv(x, w_, b_), [wt, b], [gy])
                return [*ys, *grads]

        f = mx.compile(g)

        def run() -> list:
            out = f(x, wt, b, gy)
            mx.eval(out)
            return out

        def to_numpy(r: list) -> dict:
            res = dict(zip(keys, (np.array(a) for a in r)))
            for k in ("y", "x"):
                if k in res:
                    res[k] = np.moveaxis(res[k], -1, 1)
            if "weight" in res:
                res["weight"] = np.moveaxis(res["weight"], -1, 0 if w.is_transpose else 1)
            return res

        return Prepared(run, to_numpy)


PEERS: dict[str, type[Impl]] = {"torch": TorchImpl, "torch_cl": TorchChannelsLastImpl,
                                "torch_compile": TorchCompileImpl,
                                "jax": JaxImpl, "mlx": MlxImpl}


def make_impl(name: str, n_threads: int = 2) -> Impl:
    if name == "convgrad":
        return ConvgradImpl()
    if name == "jax":
        return JaxImpl(n_threads)
    return PEERS[name]()
