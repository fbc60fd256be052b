"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (stacked layers, both directions,
``batch_first``, dropout between layers, LSTM's projection ``proj_size``) and their
one-step cells ``RNNCell``, ``LSTMCell``, ``GRUCell``; arguments, parameter names and
shapes, initialisation U(+-1/sqrt(hidden_size)), gate order, input and state shapes
(batched or not) as ``torch.nn``.

A layer's input share of the gates is one matrix product over the whole sequence
(``x W_ih^T + b_ih``, (L, N, gates)); each direction then runs as one
:class:`..tensor.recurrent.Recurrence` node over the time steps (its backward is
back-propagation through time; under ``create_graph``, the differentiated composed
steps: gradients of any order).  A cell is one step of the same node (its input share
one ``F.linear``).  A ``PackedSequence`` input (:mod:`.utils.rnn`) runs padded, in
its sorted order, with each step taken only by the sequences that have it; its output
is packed again, ``h_n`` holds each sequence's last state, ``hx`` and ``h_n`` are in the
batch's own order, as torch.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..default_dtype import get_default_dtype
from ..devices import check_device
from ..functional.dropout import dropout as _dropout
from ..functional.layer_input import layer_input
from ..functional.linear import linear as _linear
from ..tensor import Tensor, cat, stack, zeros
from ..tensor.args import check_dtype
from ..tensor.recurrent import STEPS, Recurrence
from . import init
from .conv import _positive_int
from .module import Module, Parameter
from .utils.rnn import PackedSequence, padded_positions, padded_rows, sorted_lengths

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]


def _bool(fn: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{fn}: {name}={value!r} must be a bool")
    return bool(value)


def _nonlinearity(fn: str, value: Any) -> str:
    if value not in ("tanh", "relu"):
        raise ValueError(f"{fn}: nonlinearity={value!r} is unknown; expected 'tanh' or 'relu'")
    return value


def _reset(module: Module, hidden_size: int, rng: Any) -> None:
    """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
    rng = init._generator(rng, type(module).__name__)
    bound = 1.0 / math.sqrt(hidden_size)
    for p in module.parameters():
        init.uniform_(p, -bound, bound, rng)


def _ends_with_input_size(fn: str, x: Tensor, input_size: int) -> None:
    if x.shape[-1] != input_size:
        raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must end with "
                         f"input_size={input_size}")


def _check_pair(fn: str, hx: Any) -> None:
    """An LSTM's given state must be the pair (h_0, c_0)."""
    if hx is not None and not (isinstance(hx, tuple | list) and len(hx) == 2):
        raise TypeError(f"{fn}: hx must be a tuple (h_0, c_0) of two Tensors, got "
                        f"{type(hx).__name__}")


def _state_arg(fn: str, name: str, value: Any, shape: tuple, x: Tensor) -> Tensor:
    """A given initial state checked against ``shape`` (zeros when None)."""
    if value is None:
        return zeros(*shape, dtype=x.dtype)
    t = layer_input(fn, value, x, name)
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{fn}: {name} of shape {tuple(t.shape)} must be {tuple(shape)} "
                         f"for input of shape {tuple(x.shape)}")
    return t


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: ``mode`` (``"RNN_TANH"``, ``"RNN_RELU"``,
    ``"LSTM"``, ``"GRU"``), the stacked layers' parameters and the forward over them."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        fn = type(self).__name__
        check_device(fn, device)
        self.mode = mode
        self.input_size = _positive_int("input_size", input_size, fn)
        self.hidden_size = _positive_int("hidden_size", hidden_size, fn)
        self.num_layers = _positive_int("num_layers", num_layers, fn)
        self.bias = _bool(fn, "bias", bias)
        self.batch_first = _bool(fn, "batch_first", batch_first)
        self.bidirectional = _bool(fn, "bidirectional", bidirectional)
        if (isinstance(dropout, bool) or not isinstance(dropout, Real)
                or not 0 <= dropout <= 1):
            raise ValueError(f"{fn}: dropout={dropout!r} must be a number in [0, 1], the "
                             "probability of an element being zeroed")
        self.dropout = float(dropout)
        if self.dropout > 0 and num_layers == 1:
            warnings.warn(f"{fn}: dropout={dropout} acts after every recurrent layer but the "
                          "last, so a non-zero dropout expects num_layers > 1, got "
                          f"num_layers={num_layers}", stacklevel=2)
        if isinstance(proj_size, bool) or not isinstance(proj_size, Integral):
            raise TypeError(f"{fn}: proj_size={proj_size!r} must be an int")
        if proj_size < 0:
            raise ValueError(f"{fn}: proj_size={proj_size} must be >= 0 (0: no projection)")
        if proj_size and mode != "LSTM":
            raise ValueError(f"{fn}: proj_size={proj_size} is only supported by LSTM")
        if proj_size >= hidden_size:
            raise ValueError(f"{fn}: proj_size={proj_size} must be smaller than "
                             f"hidden_size={hidden_size}")
        self.proj_size = int(proj_size)
        dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
        gates = STEPS[mode][1] * hidden_size
        out = self.proj_size or hidden_size
        for layer in range(num_layers):
            for suffix in self._suffixes(layer):
                width = input_size if layer == 0 else out * self._directions
                shapes = [("weight_ih", (gates, width)), ("weight_hh", (gates, out))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if self.proj_size:
                    shapes.append(("weight_hr", (self.proj_size, hidden_size)))
                for name, shape in shapes:
                    self.register_parameter(name + suffix, Parameter(np.empty(shape, dt)))
        self.reset_parameters(rng)

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer: int) -> list[str]:
        return [f"_l{layer}", f"_l{layer}_reverse"][:self._directions]

    def reset_parameters(self, rng: Any = None) -> None:
        _reset(self, self.hidden_size, rng)

    def flatten_parameters(self) -> None:
        """Nothing to do (torch packs the weights for cuDNN here); kept so scripts run."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """Each layer's and direction's parameters, in torch's order."""
        names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if self.bias else [])
        names += ["weight_hr"] if self.proj_size else []
        return [[getattr(self, n + s) for n in names]
                for layer in range(self.num_layers) for s in self._suffixes(layer)]

    def _weights(self, suffix: str) -> tuple:
        b = self.bias
        return (getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix),
                getattr(self, "bias_ih" + suffix) if b else None,
                getattr(self, "bias_hh" + suffix) if b else None,
                getattr(self, "weight_hr" + suffix) if self.proj_size else None)

    def forward(self, input: Any, hx: Any = None) -> tuple:  # noqa: A002 (torch's name)
        fn = type(self).__name__
        if isinstance(input, PackedSequence):
            return self._forward_packed(fn, input, hx)
        x = layer_input(fn, input, self.weight_ih_l0)
        if x.ndim not in (2, 3):
            raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must be 3-d ((L, N, "
                             "H_in), or (N, L, H_in) with batch_first) or 2-d (L, H_in)")
        _ends_with_input_size(fn, x, self.input_size)
        batched = x.ndim == 3
        if not batched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        if x.shape[0] == 0:
            raise ValueError(f"{fn}: input of shape {tuple(input.shape)} has no time steps")
        lstm = self.mode == "LSTM"
        h0, c0 = self._initial_state(fn, x, hx, batched, lstm)
        x, h_n, c_n = self._layers(x, h0, c0, lstm)
        if not batched:
            x, h_n = x.squeeze(1), h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, ((h_n, c_n) if lstm else h_n)

    def _layers(self, x: Tensor, h0: Tensor, c0: Tensor | None, lstm: bool,
                batch_sizes: np.ndarray | None = None) -> tuple:
        """The stacked layers over x (L, N, H_in): the last layer's outputs (L, N, H_out)
        and the final states h_n (and c_n).  ``batch_sizes``: a packed batch's (its
        sequences longest first), each sequence's final state then its last step's."""
        finals = []
        steps, n = x.shape[:2]
        size = steps * n * h0.shape[-1]
        last_step = None
        if batch_sizes is not None:  # each sequence's last step, for the forward direction
            last_step = (sorted_lengths(batch_sizes) - 1, np.arange(n))
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(self._suffixes(layer)):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(suffix)
                gx = _linear(x, w_ih, b_ih)
                k = layer * self._directions + d
                out = Recurrence.apply(gx, h0[k], c0[k] if lstm else None, w_hh, b_hh, w_hr,
                                       mode=self.mode, reverse=d == 1,
                                       batch_sizes=batch_sizes)
                ys = out[:size].reshape(steps, n, h0.shape[-1])
                outputs.append(ys)
                if d == 1:
                    last = ys[0]  # the reverse direction ends at step 0
                else:
                    last = ys[steps - 1] if last_step is None else ys[last_step]
                finals.append((last, out[size:].reshape(n, self.hidden_size)) if lstm
                              else (last,))
            x = outputs[0] if len(outputs) == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, True)
        h_n = stack([s[0] for s in finals], 0)
        c_n = stack([s[1] for s in finals], 0) if lstm else None
        return x, h_n, c_n

    def _forward_packed(self, fn: str, seq: PackedSequence, hx: Any) -> tuple:
        """The forward of a PackedSequence: padded (sorted) inside, packed out; ``hx``
        and ``h_n`` in the batch's own order."""
        data = layer_input(fn, seq.data, self.weight_ih_l0)
        if data.ndim != 2:
            raise ValueError(f"{fn}: a PackedSequence's data of shape {tuple(data.shape)} "
                             "must be 2-d (steps of all sequences, H_in)")
        _ends_with_input_size(fn, data, self.input_size)
        sizes = np.asarray(getattr(seq.batch_sizes, "data", seq.batch_sizes), np.int64)
        t_idx, j_idx = padded_positions(sizes)
        x = cat([data, data.new_zeros((1, data.shape[1]))], 0)[padded_rows(sizes)]
        lstm = self.mode == "LSTM"
        order = None if seq.sorted_indices is None else np.asarray(
            seq.sorted_indices.data, np.int64)
        if order is not None and hx is not None:  # the states to the packed (sorted) order
            if lstm:
                _check_pair(fn, hx)
                hx = tuple(layer_input(fn, v, data, "hx")[:, order] for v in hx)
            else:
                hx = layer_input(fn, hx, data, "hx")[:, order]
        h0, c0 = self._initial_state(fn, x, hx, True, lstm)
        y, h_n, c_n = self._layers(x, h0, c0, lstm, sizes)
        if seq.unsorted_indices is not None:
            back = np.asarray(seq.unsorted_indices.data, np.int64)
            h_n = h_n[:, back]
            c_n = None if c_n is None else c_n[:, back]
        out = PackedSequence(y[t_idx, j_idx], seq.batch_sizes, seq.sorted_indices,
                             seq.unsorted_indices)
        return out, ((h_n, c_n) if lstm else h_n)

    def _initial_state(self, fn: str, x: Tensor, hx: Any, batched: bool, lstm: bool) -> tuple:
        """h0 (and c0) as (layers * directions, N, size) Tensors (zeros where not given)."""
        n = x.shape[1]
        k = self.num_layers * self._directions
        shape_h = (k, n, self.proj_size or self.hidden_size)
        shape_c = (k, n, self.hidden_size)
        if lstm:
            _check_pair(fn, hx)
        given = (hx if lstm else (hx, None)) if hx is not None else (None, None)
        if not batched:  # the states without their batch dim
            given = tuple(None if v is None else _unbatched_state(fn, v, x) for v in given)
        names = ("h_0", "c_0")
        h0 = _state_arg(fn, names[0], given[0], shape_h, x)
        c0 = _state_arg(fn, names[1], given[1], shape_c, x) if lstm else None
        return h0, c0

    def extra_repr(self) -> str:  # torch's, which leaves an RNN's nonlinearity out
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


def _unbatched_state(fn: str, v: Any, x: Tensor) -> Tensor:
    t = layer_input(fn, v, x, "hx")
    if t.ndim != 2:
        raise ValueError(f"{fn}: for unbatched 2-d input, hx must be 2-d too, got shape "
                         f"{tuple(t.shape)}")
    return t.unsqueeze(1)


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act
    ``nonlinearity`` (``'tanh'`` or ``'relu'``)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None, *, rng: Any = None) -> None:
        mode = "RNN_TANH" if _nonlinearity("RNN", nonlinearity) == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype, rng=rng)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory; ``forward(input, (h_0, c_0))`` returns ``output, (h_n,
    c_n)``.  ``proj_size > 0`` projects each hidden state to that size."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype, rng=rng)


class GRU(RNNBase):
    """Gated recurrent unit; ``forward(input, h_0)`` returns ``output, h_n``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None, *,
                 rng: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype, rng=rng)


class RNNCellBase(Module):
    """One step of a recurrent layer on (N, input_size) or unbatched (input_size,) input."""

    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None, *, rng: Any = None) -> None:
        super().__init__()
        fn = type(self).__name__
        check_device(fn, device)
        self.input_size = _positive_int("input_size", input_size, fn)
        self.hidden_size = _positive_int("hidden_size", hidden_size, fn)
        self.bias = _bool(fn, "bias", bias)
        dt = get_default_dtype() if dtype is None else check_dtype(fn, dtype)
        gates = STEPS[self._mode][1] * hidden_size
        self.weight_ih = Parameter(np.empty((gates, input_size), dt))
        self.weight_hh = Parameter(np.empty((gates, hidden_size), dt))
        if bias:
            self.bias_ih = Parameter(np.empty(gates, dt))
            self.bias_hh = Parameter(np.empty(gates, dt))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters(rng)

    def reset_parameters(self, rng: Any = None) -> None:
        _reset(self, self.hidden_size, rng)

    def _run(self, input: Any, hx: Any, states: int) -> tuple:  # noqa: A002
        fn = type(self).__name__
        x = layer_input(fn, input, self.weight_ih)
        if x.ndim not in (1, 2):
            raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must be (N, "
                             f"input_size) or (input_size,)")
        _ends_with_input_size(fn, x, self.input_size)
        batched = x.ndim == 2
        if not batched:
            x = x.unsqueeze(0)
        if states == 2:
            _check_pair(fn, hx)
        given = (None,) * states if hx is None else (tuple(hx) if states == 2 else (hx,))
        shape = (x.shape[0], self.hidden_size)
        state = []
        for name, v in zip(("h_0", "c_0"), given):
            if v is not None and not batched:
                v = layer_input(fn, v, x, name)
                if v.ndim != 1:
                    raise ValueError(f"{fn}: for unbatched 1-d input, {name} must be 1-d "
                                     f"too, got shape {tuple(v.shape)}")
                v = v.unsqueeze(0)
            state.append(_state_arg(fn, name, v, shape, x))
        # one step of the layers' Recurrence node (its kernels, its backward)
        lstm = self._mode == "LSTM"
        gx = _linear(x, self.weight_ih, self.bias_ih).unsqueeze(0)
        flat = Recurrence.apply(gx, state[0], state[1] if lstm else None, self.weight_hh,
                                self.bias_hh, None, mode=self._mode, reverse=False)
        out = flat.reshape(2, *shape) if lstm else flat.reshape(1, *shape)
        out = (out[0], out[1]) if lstm else (out[0],)
        return out if batched else tuple(v.squeeze(0) for v in out)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"  # torch's form, unquoted
        return s


class RNNCell(RNNCellBase):
    """``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``; returns h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None, *,
                 rng: Any = None) -> None:
        _nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, device, dtype, rng=rng)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"

    def forward(self, input: Any, hx: Any = None) -> Tensor:  # noqa: A002
        return self._run(input, hx, 1)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c))`` returns ``(h', c')``."""

    _mode = "LSTM"

    def forward(self, input: Any, hx: Any = None) -> tuple:  # noqa: A002
        return self._run(input, hx, 2)


class GRUCell(RNNCellBase):
    """One GRU step; returns h'."""

    _mode = "GRU"

    def forward(self, input: Any, hx: Any = None) -> Tensor:  # noqa: A002
        return self._run(input, hx, 1)[0]
