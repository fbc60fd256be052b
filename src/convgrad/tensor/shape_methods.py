"""torch's remaining size, split and cast methods of a Tensor, composed of the library's
differentiable operations: ``ravel``, ``hsplit`` / ``vsplit`` / ``dsplit``,
``split_with_sizes``, ``unsafe_split`` / ``unsafe_chunk`` (``split`` / ``chunk``: a
copy-free split is safe here), ``rsub``; the sizes ``ndimension``,
``nelement``, ``nbytes``, ``itemsize``; and ``byte`` / ``short`` / ``char``, which raise
a TypeError (convgrad has no uint8, int16 or int8 Tensors)."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

Tensor = Any  # annotations: the tensor layer's Tensor

__all__ = ["ShapeMethodsMixin", "split_dim"]


def split_dim(fn: str, t: Tensor, sections: Any, dim: int, least: int) -> tuple:
    """``t.tensor_split(sections, dim)`` as torch's ``hsplit`` / ``vsplit`` / ``dsplit``:
    ``t`` needs ``least`` dims, an int ``sections`` must divide the dim's size."""
    if t.ndim < least:
        raise ValueError(f"{fn}: needs a Tensor of at least {least} dims, got shape "
                         f"{tuple(t.shape)}")
    if isinstance(sections, Integral) and not isinstance(sections, bool):
        n = t.shape[dim]
        if sections <= 0 or n % sections:
            raise ValueError(f"{fn}: sections={sections} must divide the size {n} of dim "
                             f"{dim} (shape {tuple(t.shape)})")
    elif not isinstance(sections, Sequence) or not all(
            isinstance(i, Integral) and not isinstance(i, bool) for i in sections):
        raise TypeError(f"{fn}: indices_or_sections={sections!r} must be an int or a "
                        "sequence of ints")
    return t.tensor_split(sections, dim)


class ShapeMethodsMixin:
    """The methods listed in the module's docstring."""

    __slots__ = ()

    def ravel(self) -> Tensor:
        """The elements as a 1-d Tensor (row-major order)."""
        return self.reshape(-1)

    def hsplit(self, indices_or_sections: Any) -> tuple:
        """``tensor_split`` along dim 1 (dim 0 of a 1-d Tensor)."""
        return split_dim("hsplit", self, indices_or_sections, 1 if self.ndim > 1 else 0, 1)

    def vsplit(self, indices_or_sections: Any) -> tuple:
        """``tensor_split`` along dim 0 of a Tensor of at least 2 dims."""
        return split_dim("vsplit", self, indices_or_sections, 0, 2)

    def dsplit(self, indices_or_sections: Any) -> tuple:
        """``tensor_split`` along dim 2 of a Tensor of at least 3 dims."""
        return split_dim("dsplit", self, indices_or_sections, 2, 3)

    def split_with_sizes(self, split_sizes: Any, dim: int = 0) -> tuple:
        """Pieces of the given sizes (summing to the dim's size) along ``dim``."""
        if isinstance(split_sizes, Integral):
            raise TypeError(f"split_with_sizes: split_sizes={split_sizes!r} must be a "
                            "sequence of ints")
        return self.split(list(split_sizes), dim)

    def unsafe_split(self, split_size: Any, dim: int = 0) -> tuple:
        """``split`` (torch's unsafe form shares memory without view tracking; here the
        pieces are the ordinary ones)."""
        return self.split(split_size, dim)

    def unsafe_chunk(self, chunks: int, dim: int = 0) -> tuple:
        """``chunk`` (see :meth:`unsafe_split`)."""
        return self.chunk(chunks, dim)

    def rsub(self, other: Any, *, alpha: Any = 1) -> Tensor:
        """``other - alpha * self``."""
        scaled = self if isinstance(alpha, Integral) and alpha == 1 else self * alpha
        return other - scaled

    def ndimension(self) -> int:
        """The number of dims (``dim()``)."""
        return self.ndim

    def nelement(self) -> int:
        """The number of elements (``numel()``)."""
        return self.numel()

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return int(self.data.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (``numel() * itemsize``)."""
        return int(self.data.size * self.data.dtype.itemsize)

    def byte(self) -> Tensor:
        raise TypeError("byte: uint8 Tensors are not supported (float32, float64, int32, "
                        "int64 and bool are); use long() or int()")

    def short(self) -> Tensor:
        raise TypeError("short: int16 Tensors are not supported (float32, float64, int32, "
                        "int64 and bool are); use int()")

    def char(self) -> Tensor:
        raise TypeError("char: int8 Tensors are not supported (float32, float64, int32, "
                        "int64 and bool are); use int()")
