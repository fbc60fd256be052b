"""Packed sequences, as ``torch.nn.utils.rnn``: a batch of sequences of different lengths
as one ``PackedSequence``, which ``RNN``, ``LSTM`` and ``GRU`` take in place of a padded
input (each sequence then stops at its own length, and ``h_n`` is its last state).

A ``PackedSequence`` holds ``data``, the sequences' steps time-major (step 0 of every
sequence, then step 1 of those that have one, ...; within a step the longest sequence
first), ``batch_sizes`` (an int64 Tensor: how many sequences have each step),
``sorted_indices`` (the batch's order, longest first; None when the input was sorted
already) and ``unsorted_indices`` (its inverse).  Packing and padding are gathers of the
data, so gradients flow through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ...tensor import Tensor, cat, stack

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "padded_positions", "padded_rows",
           "sorted_lengths", "unpack_sequence", "unpad_sequence"]


def _int64(values: Any) -> Tensor:
    return Tensor._wrap(np.asarray(values, dtype=np.int64))


class PackedSequence(NamedTuple):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)``; see the module."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data.to(...)`` (a dtype or the CPU device); the indices stay int64."""
        return self._replace(data=self.data.to(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        return self

    def float(self) -> PackedSequence:  # noqa: A003 (torch's name)
        return self._replace(data=self.data.float())

    def double(self) -> PackedSequence:
        return self._replace(data=self.data.double())

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (None for None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation.data if isinstance(permutation, Tensor) else permutation)
    inverse = np.empty_like(p, dtype=np.int64)
    inverse[p] = np.arange(p.size)
    return _int64(inverse)


def _lengths(fn: str, lengths: Any, batch: int) -> np.ndarray:
    """``lengths`` (a list, an ndarray or a 1-d Tensor) as int64, checked."""
    raw = lengths.data if isinstance(lengths, Tensor) else lengths
    arr = np.asarray(raw)
    if arr.ndim != 1 or arr.size != batch:
        raise ValueError(f"{fn}: lengths must be 1-d with one entry per sequence ({batch}), "
                         f"got shape {arr.shape}")
    if arr.size and not np.all(np.equal(np.mod(arr, 1), 0)):
        raise TypeError(f"{fn}: lengths={arr.tolist()} must be integers")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() <= 0:
        raise ValueError(f"{fn}: every length must be at least 1, got {arr.tolist()}")
    return arr


def _tensor(fn: str, name: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}: {name} must be a convgrad.Tensor, got {type(value).__name__}")
    return value


def pack_padded_sequence(input: Any, lengths: Any, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose
    sequence ``b`` has ``lengths[b]`` valid steps.  ``enforce_sorted``: the lengths must
    be in decreasing order (else they are sorted, and the order kept in the result)."""
    fn = "pack_padded_sequence"
    x = _tensor(fn, "input", input)
    if x.ndim < 2:
        raise ValueError(f"{fn}: input of shape {tuple(x.shape)} must have a time and a "
                         "batch dim")
    if batch_first:
        x = x.transpose(0, 1)
    steps, batch = x.shape[:2]
    lens = _lengths(fn, lengths, batch)
    if lens.size and lens.max() > steps:
        raise ValueError(f"{fn}: lengths={lens.tolist()} exceed the input's {steps} steps")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise ValueError(f"{fn}: lengths={lens.tolist()} must be sorted in decreasing "
                             "order when enforce_sorted is True; pass enforce_sorted=False "
                             "to pack unsorted sequences")
        order = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
    top = int(lens[0]) if lens.size else 0
    sizes = (lens[None, :] > np.arange(top)[:, None]).sum(1)
    t_idx, j_idx = padded_positions(sizes)  # row k of data: step t of sorted sequence j
    b_idx = j_idx if order is None else order[j_idx]
    data = x[t_idx, b_idx]
    sorted_indices = None if order is None else _int64(order)
    return PackedSequence(data, _int64(sizes), sorted_indices,
                          invert_permutation(sorted_indices))


def _check_packed(fn: str, sequence: Any) -> PackedSequence:
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{fn}: sequence must be a PackedSequence, got "
                        f"{type(sequence).__name__}")
    return sequence


def padded_positions(batch_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of a packed ``data``: its step and its (sorted) sequence."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    t_idx = np.repeat(np.arange(sizes.size), sizes)
    j_idx = np.concatenate([np.arange(s) for s in sizes]) if sizes.size else sizes
    return t_idx, j_idx


def padded_rows(batch_sizes: np.ndarray, steps: int | None = None) -> np.ndarray:
    """The (steps, batch) row of a packed ``data`` at each padded position, in sorted
    order; ``len(data)`` (one past the end: an appended padding row) where a sequence has
    no such step."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    t_idx, j_idx = padded_positions(sizes)
    rows = np.full((sizes.size if steps is None else steps, int(sizes[0])), t_idx.size,
                   np.int64)
    rows[t_idx, j_idx] = np.arange(t_idx.size)
    return rows


def sorted_lengths(batch_sizes: np.ndarray) -> np.ndarray:
    """Each (sorted) sequence's length from the steps' batch sizes."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    batch = int(sizes[0]) if sizes.size else 0
    return (sizes[None, :] > np.arange(batch)[:, None]).sum(1)


def pad_packed_sequence(sequence: Any, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) in the original
    order, and the lengths (int64); ``total_length`` pads to that many steps."""
    fn = "pad_packed_sequence"
    seq = _check_packed(fn, sequence)
    sizes = np.asarray(seq.batch_sizes.data, dtype=np.int64)
    steps = sizes.size
    if total_length is not None:
        if isinstance(total_length, bool) or not isinstance(total_length, int | np.integer):
            raise TypeError(f"{fn}: total_length={total_length!r} must be an int")
        if total_length < steps:
            raise ValueError(f"{fn}: total_length={total_length} is less than the longest "
                             f"sequence's length {steps}")
        steps = int(total_length)
    data = seq.data
    rows = padded_rows(sizes, steps)  # the padding reads an appended row of the value
    if seq.unsorted_indices is not None:
        rows = rows[:, np.asarray(seq.unsorted_indices.data, dtype=np.int64)]
    fill = data.new_full((1, *data.shape[1:]), float(padding_value))
    padded = cat([data, fill], 0)[rows]
    lengths = sorted_lengths(sizes)
    if seq.unsorted_indices is not None:
        lengths = lengths[np.asarray(seq.unsorted_indices.data, dtype=np.int64)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _int64(lengths)


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack Tensors ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``),
    T the longest L_i, padded with ``padding_value`` on ``padding_side``."""
    fn = "pad_sequence"
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if not isinstance(sequences, Sequence) or not sequences:
        raise ValueError(f"{fn}: sequences must be a non-empty list of Tensors")
    seqs = [_tensor(fn, f"sequences[{i}]", s) for i, s in enumerate(sequences)]
    if padding_side not in ("right", "left"):
        raise ValueError(f"{fn}: padding_side={padding_side!r} must be 'right' or 'left'")
    tail = tuple(seqs[0].shape[1:])
    for i, s in enumerate(seqs):
        if s.ndim < 1 or tuple(s.shape[1:]) != tail:
            raise ValueError(f"{fn}: sequences[{i}] of shape {tuple(s.shape)} must be "
                             f"(length, *{tail}) like sequences[0]")
    steps = max(s.shape[0] for s in seqs)
    out = []
    for s in seqs:
        missing = steps - s.shape[0]
        if missing:
            pad = s.new_full((missing, *tail), float(padding_value))
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        out.append(s)
    return stack(out, 0 if batch_first else 1)


def pack_sequence(sequences: Any, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of Tensors ``(L_i, *)`` (longest first when ``enforce_sorted``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Any, lengths: Any, batch_first: bool = False
                   ) -> list[Tensor]:
    """The list of sequences ``(L_i, *)`` of a padded batch."""
    fn = "unpad_sequence"
    x = _tensor(fn, "padded_sequences", padded_sequences)
    if not batch_first:
        x = x.transpose(0, 1)
    lens = _lengths(fn, lengths, x.shape[0])
    return [x[i, :int(n)] for i, n in enumerate(lens)]


def unpack_sequence(packed_sequences: Any) -> list[Tensor]:
    """The list of sequences ``(L_i, *)`` of a ``PackedSequence``, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
