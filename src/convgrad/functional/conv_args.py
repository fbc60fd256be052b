"""The edge: user arguments of every convolution flavour -> one :class:`ConvArgs`, once.

Everything a user may write (an int or a tuple per dim, ``"same"``/``"valid"``, padding
modes, transposed-convolution arguments) is checked here and turned into a general
convolution spec; :func:`output_shape` then applies the shape rule once per call, with
the input's shape.  The nn layers build their ``ConvArgs`` once, at construction.
Nothing downstream validates again: kernels receive only specs and shapes.

A transposed convolution is the input gradient of the convolution it transposes, whose
spec is: stride ``s``, padding ``(p, p - output_padding)``, dilation ``d``; its output
is the smallest input of that convolution whose output has the transposed
convolution's input shape (:meth:`ConvSpec.transposed_shape`).  The high padding
``p - output_padding`` makes that smallest input exactly torch's output size, also
when ``stride <= output_padding < dilation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from ..ops.spec import ConvSpec, is_int

__all__ = ["PADDING_MODES", "ConvArgs", "conv_args", "general_args", "output_shape", "per_dim",
           "transpose_args"]

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
INT64_MAX = 2**63 - 1  # as torch and NumPy: every size and offset is a 64-bit integer


@dataclass(frozen=True)
class ConvArgs:
    """One convolution's arguments, normalised: everything but the input's shape.

    ``spec`` is the general convolution (for a transposed convolution: the one it
    transposes).  With ``padding_mode`` other than zeros the input is first padded by
    ``mode_pads`` (one ``(lo, hi)`` pair per dim) in that mode, as ``torch.nn.Conv2d``
    does, and ``spec`` has no padding.
    """

    spec: ConvSpec
    transposed: bool = False
    padding_mode: str = "zeros"
    mode_pads: tuple[tuple[int, int], ...] | None = None
    padding: Any = 0  # as the user wrote it, for messages


def per_dim(name: str, value: Any, nd: int, fn: str, minimum: int | None = 1) -> tuple[int, ...]:
    """An int (same for every dim) or a sequence of ``nd`` ints -> tuple of ``nd`` ints."""
    if is_int(value):
        out = (int(value),) * nd
    elif isinstance(value, tuple | list) and all(is_int(v) for v in value):
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


def _groups(groups: Any, fn: str) -> int:
    if not is_int(groups):
        raise TypeError(f"{fn}: groups={groups!r} must be an int")
    if groups < 1:
        raise ValueError(f"{fn}: groups={groups} must be >= 1")
    _check_int64("groups", groups, (int(groups),), fn)
    return int(groups)


def _padding_pairs(padding: Any, nd: int, fn: str) -> tuple[tuple[int, int], ...]:
    """int | one int per dim | one (lo, hi) pair per dim -> ((lo, hi), ...); negative crops."""
    if is_int(padding):
        _check_int64("padding", padding, (int(padding),), fn)
        return ((int(padding), int(padding)),) * nd
    if isinstance(padding, tuple | list) and len(padding) == nd:
        pairs = []
        for p in padding:
            if is_int(p):
                pairs.append((int(p), int(p)))
            elif isinstance(p, tuple | list) and len(p) == 2 and all(is_int(v) for v in p):
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


def general_args(nd: int, stride: Any = 1, padding: Any = 0, kernel_dilation: Any = 1,
                 input_dilation: Any = 1, groups: Any = 1, flip: Any = False,
                 fn: str = "conv_general") -> ConvArgs:
    """``conv_general``'s keyword arguments."""
    groups = _groups(groups, fn)
    if not isinstance(flip, bool):
        raise TypeError(f"{fn}: flip={flip!r} must be a bool")
    spec = ConvSpec(stride=per_dim("stride", stride, nd, fn),
                    padding=_padding_pairs(padding, nd, fn),
                    kernel_dilation=per_dim("kernel_dilation", kernel_dilation, nd, fn),
                    input_dilation=per_dim("input_dilation", input_dilation, nd, fn),
                    groups=groups, flip=flip)
    return ConvArgs(spec, padding=padding)


def conv_args(nd: int, kernel: tuple[int, ...], stride: Any = 1, padding: Any = 0,
              dilation: Any = 1, groups: Any = 1, padding_mode: str = "zeros",
              fn: str = "conv") -> ConvArgs:
    """``conv1d/2d/3d``'s (and ``ConvNd``'s) arguments; ``kernel`` is the kernel's size
    (``'same'`` needs it)."""
    if not isinstance(padding_mode, str) or padding_mode not in PADDING_MODES:
        raise ValueError(f"{fn}: padding_mode={padding_mode!r} must be one of {PADDING_MODES}")
    stride_t = per_dim("stride", stride, nd, fn)
    dil = per_dim("dilation", dilation, nd, fn)
    groups = _groups(groups, fn)
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride_t):
                raise ValueError(f"{fn}: padding='same' is not supported for stride={stride!r}; "
                                 "it needs stride 1")
            total = [dil[d] * (kernel[d] - 1) for d in range(nd)]
            pads = tuple((t // 2, t - t // 2) for t in total)
        else:
            raise ValueError(
                f"{fn}: padding={padding!r} must be 'same', 'valid', an int or {nd} ints")
    else:
        pads = _padding_pairs(padding, nd, fn)
        if any(lo < 0 or hi < 0 for lo, hi in pads):
            raise ValueError(f"{fn}: padding={padding!r} must be non-negative")
    mode_pads = None
    if padding_mode != "zeros" and any(lo or hi for lo, hi in pads):
        mode_pads, pads = pads, ((0, 0),) * nd
    spec = ConvSpec(stride=stride_t, padding=pads, kernel_dilation=dil,
                    input_dilation=(1,) * nd, groups=groups)
    return ConvArgs(spec, padding_mode=padding_mode, mode_pads=mode_pads, padding=padding)


def transpose_args(nd: int, stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                   groups: Any = 1, dilation: Any = 1, fn: str = "conv_transpose") -> ConvArgs:
    """``conv_transpose1d/2d/3d``'s arguments: the spec of the convolution transposed."""
    stride_t = per_dim("stride", stride, nd, fn)
    dil = per_dim("dilation", dilation, nd, fn)
    pad = per_dim("padding", padding, nd, fn, minimum=0)
    opad = per_dim("output_padding", output_padding, nd, fn, minimum=0)
    groups = _groups(groups, fn)
    for d in range(nd):
        if opad[d] >= max(stride_t[d], dil[d]):
            raise ValueError(
                f"{fn}: output_padding={output_padding!r} must be smaller than "
                f"max(stride, dilation)={max(stride_t[d], dil[d])} in dim {d}")
    spec = ConvSpec(stride=stride_t, padding=tuple((pad[d], pad[d] - opad[d]) for d in range(nd)),
                    kernel_dilation=dil, input_dilation=(1,) * nd, groups=groups)
    return ConvArgs(spec, transposed=True, padding=padding)


def _check_mode_pads(args: ConvArgs, x_shape: tuple, fn: str) -> tuple:
    """torch's limits (reflect pads < the input size, circular pads <= it); the padded
    input's shape."""
    mode = args.padding_mode
    for d, (lo, hi) in enumerate(args.mode_pads):
        n = x_shape[2 + d]
        if mode != "replicate" and max(lo, hi) > (n - 1 if mode == "reflect" else n):
            rel = "<" if mode == "reflect" else "<="
            raise ValueError(
                f"{fn}: padding={args.padding!r} (pads {(lo, hi)} in spatial dim {d}) with "
                f"padding_mode={mode!r} must be {rel} the input size {n} there "
                f"(input shape {tuple(x_shape)})")
    return (*x_shape[:2], *(n + lo + hi for n, (lo, hi) in zip(x_shape[2:], args.mode_pads)))


_MAX_BYTES = int(np.iinfo(np.intp).max)  # the largest array (asking per call took 2 us)


def output_shape(args: ConvArgs, x_shape: tuple, w_shape: tuple, dtype: np.dtype,
                 fn: str) -> tuple[int, ...]:
    """The output shape for an input of ``x_shape`` (N, C, *L): the shape rule, once."""
    if args.transposed:
        c_in, c_per_group = w_shape[:2]
        if c_in == 0 or c_per_group == 0:  # as torch (conv_general allows it)
            raise ValueError(f"{fn}: weight of shape {tuple(w_shape)} (C_in, C_out/groups, "
                             "*kernel) has no channels; expected C_in >= 1 and C_out/groups >= 1")
        if x_shape[1] != c_in:
            raise ValueError(f"{fn}: weight.shape[0]={c_in} must equal C_in={x_shape[1]} "
                             f"(input shape {tuple(x_shape)})")
        if c_in % args.spec.groups:
            raise ValueError(f"{fn}: groups={args.spec.groups} must divide C_in={c_in}")
        y_shape = args.spec.transposed_shape(x_shape, w_shape, fn)
    else:
        if args.mode_pads is not None:
            x_shape = _check_mode_pads(args, x_shape, fn)
        y_shape = args.spec.output_shape(x_shape, w_shape, fn)
    nbytes = prod(y_shape) * dtype.itemsize
    if nbytes > _MAX_BYTES:
        raise ValueError(f"{fn}: the output of shape {y_shape} would need {nbytes} bytes, "
                         "more than any array can hold")
    return y_shape
