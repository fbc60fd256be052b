"""Argument normalisation at the edge: user arguments -> one :class:`ConvSpec`.

Everything a user may write (an int or a tuple per dim, ``"same"``/``"valid"``,
padding modes, transposed-convolution arguments) is checked and turned into a
general-convolution spec here, once; kernels receive only specs.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from ..ops.spec import ConvSpec

__all__ = ["per_dim", "general_padding", "conv_spec", "general_spec", "transpose_spec",
           "PADDING_MODES"]

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
INT64_MAX = 2**63 - 1  # as torch and NumPy: every size and offset is a 64-bit integer


def _is_int(v: object) -> bool:
    return isinstance(v, Integral) and not isinstance(v, bool)


def per_dim(name: str, value: Any, nd: int, fn: str, minimum: int | None = 1) -> tuple[int, ...]:
    """An int (same for every dim) or a sequence of ``nd`` ints -> tuple of ``nd`` ints."""
    if _is_int(value):
        out = (int(value),) * nd
    elif isinstance(value, tuple | list) and all(_is_int(v) for v in value):
        if len(value) != nd:
            raise ValueError(
                f"{fn}: {name}={tuple(value)} must have {nd} entries (one per spatial dim) "
                "or be a single int"
            )
        out = tuple(int(v) for v in value)
    else:
        raise TypeError(f"{fn}: {name}={value!r} must be an int or a sequence of {nd} ints")
    if minimum is not None and any(v < minimum for v in out):
        raise ValueError(f"{fn}: {name}={value!r} must be >= {minimum} in every dim")
    _check_int64(name, value, out, fn)
    return out


def _check_int64(name: str, value: Any, ints: tuple, fn: str) -> None:
    if any(abs(v) > INT64_MAX for v in ints):
        raise ValueError(f"{fn}: {name}={value!r} does not fit in a 64-bit integer; "
                         f"expected values of magnitude <= {INT64_MAX}")


def general_padding(padding: Any, nd: int, fn: str) -> tuple[tuple[int, int], ...]:
    """int | one int per dim | one (lo, hi) pair per dim -> ((lo, hi), ...); negative crops."""
    if _is_int(padding):
        _check_int64("padding", padding, (int(padding),), fn)
        return ((int(padding), int(padding)),) * nd
    if isinstance(padding, tuple | list) and len(padding) == nd:
        pairs = []
        for p in padding:
            if _is_int(p):
                pairs.append((int(p), int(p)))
            elif isinstance(p, tuple | list) and len(p) == 2 and all(_is_int(v) for v in p):
                pairs.append((int(p[0]), int(p[1])))
            else:
                break
        else:
            _check_int64("padding", padding, sum(pairs, ()), fn)
            return tuple(pairs)
    raise (TypeError if not isinstance(padding, tuple | list) else ValueError)(
        f"{fn}: padding={padding!r} must be an int, {nd} ints (one per spatial dim) or "
        f"{nd} (lo, hi) pairs, e.g. {((1, 1),) * nd}"
    )


def general_spec(nd: int, stride: Any = 1, padding: Any = 0, kernel_dilation: Any = 1,
                 input_dilation: Any = 1, groups: Any = 1, flip: Any = False,
                 fn: str = "conv_general") -> ConvSpec:
    """The spec of ``conv_general``'s keyword arguments."""
    if not _is_int(groups):
        raise TypeError(f"{fn}: groups={groups!r} must be an int")
    if groups < 1:
        raise ValueError(f"{fn}: groups={groups} must be >= 1")
    _check_int64("groups", groups, (int(groups),), fn)
    if not isinstance(flip, bool):
        raise TypeError(f"{fn}: flip={flip!r} must be a bool")
    return ConvSpec(
        stride=per_dim("stride", stride, nd, fn),
        padding=general_padding(padding, nd, fn),
        kernel_dilation=per_dim("kernel_dilation", kernel_dilation, nd, fn),
        input_dilation=per_dim("input_dilation", input_dilation, nd, fn),
        groups=int(groups),
        flip=flip,
    )


def conv_spec(nd: int, w_shape: tuple, stride: Any, padding: Any, dilation: Any, groups: Any,
              padding_mode: str, fn: str) -> tuple[ConvSpec, tuple[tuple[int, int], ...] | None]:
    """Spec of ``conv1d/2d/3d``; returns (spec, mode_pads).

    ``mode_pads`` is ``None`` for ``padding_mode="zeros"`` (the padding is in the spec);
    otherwise the spec has no padding and the input must first be padded by
    ``mode_pads`` with that mode (as ``torch.nn.Conv2d`` does).
    """
    if not isinstance(padding_mode, str) or padding_mode not in PADDING_MODES:
        raise ValueError(f"{fn}: padding_mode={padding_mode!r} must be one of {PADDING_MODES}")
    stride_t = per_dim("stride", stride, nd, fn)
    dil = per_dim("dilation", dilation, nd, fn)
    if not _is_int(groups):
        raise TypeError(f"{fn}: groups={groups!r} must be an int")
    if groups < 1:
        raise ValueError(f"{fn}: groups={groups} must be >= 1")
    _check_int64("groups", groups, (int(groups),), fn)
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride_t):
                raise ValueError(
                    f"{fn}: padding='same' is not supported for stride={stride!r}; "
                    "it needs stride 1"
                )
            total = [dil[d] * (w_shape[2 + d] - 1) for d in range(nd)]
            pads = tuple((t // 2, t - t // 2) for t in total)
        else:
            raise ValueError(
                f"{fn}: padding={padding!r} must be 'same', 'valid', an int or {nd} ints"
            )
    else:
        pads = general_padding(padding, nd, fn)
        if any(lo < 0 or hi < 0 for lo, hi in pads):
            raise ValueError(f"{fn}: padding={padding!r} must be non-negative")
    zero = ((0, 0),) * nd
    mode_pads = None if padding_mode == "zeros" else pads
    spec = ConvSpec(stride=stride_t, padding=pads if mode_pads is None else zero,
                    kernel_dilation=dil, input_dilation=(1,) * nd, groups=int(groups))
    return spec, mode_pads


def transpose_spec(nd: int, w_shape: tuple, stride: Any, padding: Any, output_padding: Any,
                   groups: Any, dilation: Any, fn: str) -> ConvSpec:
    """Spec of ``conv_transpose{1,2,3}d`` as a general convolution of the rearranged weight.

    A transposed convolution is the input gradient of a convolution: input dilation =
    stride, the kernel flipped, padding ``d*(K-1) - p`` before and that plus
    ``output_padding`` after (negative when ``p > d*(K-1)``: a crop).
    """
    stride_t = per_dim("stride", stride, nd, fn)
    dil = per_dim("dilation", dilation, nd, fn)
    pad = per_dim("padding", padding, nd, fn, minimum=0)
    opad = per_dim("output_padding", output_padding, nd, fn, minimum=0)
    if not _is_int(groups):
        raise TypeError(f"{fn}: groups={groups!r} must be an int")
    if groups < 1:
        raise ValueError(f"{fn}: groups={groups} must be >= 1")
    _check_int64("groups", groups, (int(groups),), fn)
    for d in range(nd):
        if opad[d] >= max(stride_t[d], dil[d]):
            raise ValueError(
                f"{fn}: output_padding={output_padding!r} must be smaller than "
                f"max(stride, dilation)={max(stride_t[d], dil[d])} in dim {d}"
            )
    ext = [dil[d] * (w_shape[2 + d] - 1) for d in range(nd)]
    return ConvSpec(
        stride=(1,) * nd,
        padding=tuple((ext[d] - pad[d], ext[d] - pad[d] + opad[d]) for d in range(nd)),
        kernel_dilation=dil,
        input_dilation=stride_t,
        groups=int(groups),
        flip=True,
    )
