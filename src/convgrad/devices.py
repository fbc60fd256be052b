"""``device``: where a Tensor lives.  convgrad runs on the CPU only.

A PyTorch script names its device (``torch.device("cpu")``, ``.to(device)``,
``device=`` on creation functions): ``"cpu"`` is accepted everywhere and changes
nothing; any other device (``"cuda"``, ``"mps"``, ...) is a ValueError, so a script
never believes it runs elsewhere.  ``convgrad.cuda.is_available()`` and
``convgrad.accelerator.is_available()`` are False.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEVICE_TYPES", "check_device", "device", "is_device"]

# torch's device type names: a string among these is a device, not a dtype
DEVICE_TYPES = frozenset(("cpu", "cuda", "mps", "xpu", "xla", "meta", "hip", "ipu", "hpu",
                          "mtia", "privateuseone", "vulkan", "mkldnn", "opengl", "opencl",
                          "ideep", "ve", "fpga", "maia", "lazy"))


class device:  # noqa: N801 (torch's name)
    """A device: ``device("cpu")``, ``device("cpu", 0)`` or ``device("cpu:0")``.

    Only the CPU can be made; any other type is a ValueError.
    """

    __slots__ = ("type", "index")

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device: type={type!r} must be a str such as 'cpu'")
        name, _, idx = type.partition(":")
        if idx:
            if index is not None or not idx.isdigit():
                raise ValueError(f"device: invalid device string {type!r}; expected 'cpu' "
                                 "or 'cpu:0'")
            index = int(idx)
        if name != "cpu":
            raise ValueError(_not_cpu("device", type))
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)
                                  or index < 0):
            raise ValueError(f"device: index={index!r} must be an int >= 0")
        self.type, self.index = "cpu", index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (TypeError, ValueError):
                return False
        return isinstance(other, device) and (self.type, self.index) == (other.type,
                                                                          other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"


CPU = device("cpu")


def _not_cpu(fn: str, value: Any) -> str:
    return (f"{fn}: device={str(value)!r} is not available; convgrad runs on the CPU only "
            "(expected 'cpu' or convgrad.device('cpu'))")


def is_device(value: Any) -> bool:
    """Whether ``value`` names a device (a ``device``, or a str like ``'cuda:0'``);
    torch's device objects count too."""
    if isinstance(value, device):
        return True
    if isinstance(value, str):
        return value.partition(":")[0] in DEVICE_TYPES
    return type(value).__module__ == "torch" and type(value).__name__ == "device"


def check_device(fn: str, value: Any) -> device:
    """``value`` (None, ``'cpu'``, a device, an int) as the CPU device, or a ValueError."""
    if value is None or value is CPU:
        return CPU
    if isinstance(value, int) and not isinstance(value, bool):  # torch: an int is a CUDA index
        raise ValueError(_not_cpu(fn, f"cuda:{value}"))
    text = str(value) if is_device(value) else None
    if text is None:
        raise TypeError(f"{fn}: device={value!r} must be a str such as 'cpu' or a "
                        "convgrad.device")
    if text.partition(":")[0] != "cpu":
        raise ValueError(_not_cpu(fn, text))
    return device(text)
