"""``WeightedRandomSampler``: indices drawn with given (unnormalised) probabilities, as
torch's; the draws come from its generator, else the library-wide one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ...random import default_generator
from ...tensor import Tensor
from .sampler import Sampler, _own_generator, _positive

__all__ = ["WeightedRandomSampler"]


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))``, index ``i`` drawn with probability
    ``weights[i] / sum(weights)``; ``replacement=False`` draws each index at most once
    (then ``num_samples`` can be at most the number of non-zero weights).  A new draw at
    each iteration."""

    def __init__(self, weights: Any, num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        fn = "WeightedRandomSampler"
        w = np.asarray(weights.data if isinstance(weights, Tensor) else weights)
        if w.dtype.kind not in "biuf":
            raise TypeError(f"{fn}: weights must be numbers, got dtype {w.dtype}")
        if w.ndim != 1:
            raise ValueError(f"{fn}: weights must be a 1-D sequence, got shape {w.shape}")
        w = w.astype(np.float64)
        if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"{fn}: weights must be finite and >= 0 with a positive sum, "
                             f"got {w.tolist() if w.size <= 8 else 'other values'}")
        self.num_samples = _positive(fn, "num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise TypeError(f"{fn}: replacement={replacement!r} must be a bool")
        if not replacement and self.num_samples > np.count_nonzero(w):
            raise ValueError(f"{fn}: num_samples={num_samples} exceeds the "
                             f"{np.count_nonzero(w)} indices of non-zero weight, which "
                             "replacement=False can draw once each")
        self.weights = w
        self.replacement = replacement
        self.generator = _own_generator(fn, generator)

    def __iter__(self) -> Iterator[int]:
        rng = self.generator if self.generator is not None else default_generator()
        drawn = rng.choice(self.weights.size, size=self.num_samples,
                           replace=self.replacement, p=self.weights / self.weights.sum())
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples
