"""``get_rng_state`` / ``set_rng_state``: the library-wide generator's state as a uint8
Tensor, as torch's (a checkpoint saves it; setting it back replays the same stream); and
``Generator``, torch's class for a stream of one's own.

The bytes are NumPy's PCG64 state (the 128-bit state and increment, then the buffered
32-bit half-word and its flag, little-endian), not torch's Mersenne Twister state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .devices import check_device
from .random import checked_seed, default_generator, fresh_seed
from .tensor import Tensor

__all__ = ["Generator", "get_rng_state", "set_rng_state"]

_SIZE = 48  # state (16 bytes), inc (16), has_uint32 (8), uinteger (8)


def get_rng_state() -> Tensor:
    """The library-wide generator's state: a new 1-D uint8 Tensor of 48 bytes."""
    return _state_of(default_generator())


def set_rng_state(new_state: Any) -> None:
    """Restore a state from :func:`get_rng_state` (a uint8 Tensor, or the uint8 array a
    saved one loads as): the draws that follow repeat those that followed it."""
    _restore(default_generator(), new_state, "set_rng_state")


class Generator:
    """torch's ``Generator``: a random stream of its own for the ``generator=`` arguments
    (creation and sampling functions, ``nn.init``, ``DataLoader``, samplers,
    ``random_split``), NumPy's PCG64 underneath (so its numbers are not torch's).  Starts
    from a fresh seed from OS entropy, as torch's."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = check_device("Generator", device)
        self._initial = fresh_seed()
        self.numpy_generator = np.random.default_rng(self._initial)

    def manual_seed(self, seed: Any) -> Generator:
        """Reseed this stream with ``seed`` (an int >= 0); returns the generator."""
        seed = checked_seed(seed, "Generator.manual_seed")
        bit = self.numpy_generator.bit_generator
        bit.state = type(bit)(seed).state
        self._initial = seed
        return self

    def seed(self) -> int:
        """Reseed from OS entropy; returns the seed."""
        s = fresh_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this stream last started from."""
        return self._initial

    def get_state(self) -> Tensor:
        """Its state: a new 1-D uint8 Tensor of 48 bytes (as :func:`get_rng_state`)."""
        return _state_of(self.numpy_generator)

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state from :meth:`get_state`; returns the generator."""
        _restore(self.numpy_generator, new_state, "Generator.set_state")
        return self


def _state_of(gen: np.random.Generator) -> Tensor:
    st = gen.bit_generator.state
    words = (st["state"]["state"].to_bytes(16, "little") + st["state"]["inc"].to_bytes(
        16, "little") + int(st["has_uint32"]).to_bytes(8, "little")
        + int(st["uinteger"]).to_bytes(8, "little"))
    return Tensor._wrap(np.frombuffer(words, np.uint8).copy())


def _restore(gen: np.random.Generator, new_state: Any, fn: str) -> None:
    data = new_state.data if isinstance(new_state, Tensor) else new_state
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8:
        raise TypeError(f"{fn}: new_state must be a uint8 Tensor (from get_rng_state), got "
                        f"{type(new_state).__name__}"
                        f"{' of dtype ' + str(data.dtype) if hasattr(data, 'dtype') else ''}")
    if data.shape != (_SIZE,):
        raise ValueError(f"{fn}: new_state has shape {data.shape}, expected ({_SIZE},) "
                         "(a state from get_rng_state)")
    raw = data.tobytes()
    state, inc = int.from_bytes(raw[:16], "little"), int.from_bytes(raw[16:32], "little")
    has, word = int.from_bytes(raw[32:40], "little"), int.from_bytes(raw[40:], "little")
    if inc % 2 == 0 or has > 1 or word >= 2 ** 32:
        raise ValueError(f"{fn}: new_state is not a generator state from get_rng_state "
                         f"(increment {inc} must be odd, flag {has} 0 or 1, word {word} "
                         "below 2**32)")
    bit = gen.bit_generator
    bit.state = {"bit_generator": bit.state["bit_generator"],
                 "state": {"state": state, "inc": inc}, "has_uint32": has, "uinteger": word}
