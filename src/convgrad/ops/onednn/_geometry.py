"""Translating one convgrad convolution pass into oneDNN's terms (pure Python).

A convgrad spec is general: padding may be negative (a crop) or larger than the
kernel, the kernel may be flipped, the input may be dilated.  oneDNN's convolution
takes left padding >= 0 and right padding >= -(stride - 1), and its fast kernels want
padding below the dilated kernel extent ``Kd``.  Per spatial dim, the input is
therefore described as

    crop [a, b) of x, then ``extra`` zeros on each side, then oneDNN's own padding,

where the crop drops what the convolution never reads (``lo < 0``, or ``hi`` below
what oneDNN accepts) and the extra zeros carry any padding >= ``Kd`` (the plan copies
the crop into a zeroed buffer).  The input gradient of a crop is zero outside it.

Input dilation ``i`` with unit stride is a deconvolution (the input gradient of a
convolution with stride ``i``): ``y[p] = sum_k x[(p + k*kd - lo) / i] w[k]`` is
oneDNN's ``dst[p] = sum src[q] W[k']`` over ``p = q*i + k'*kd - pl`` with
``k' = K - 1 - k`` (the kernel reversed), ``pl = (K - 1)*kd - lo`` and
``pr = (K - 1)*kd - hi``, which oneDNN takes for ``pl >= 0`` and ``pr > -i``; a crop
(``lo < 0`` or ``hi < 0``) drops the inputs that reach no output, as above.  Input
dilation together with a stride > 1 is not a deconvolution, and padding beyond those
bounds is not offered: both are left to NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..spec import ConvSpec, Pass

__all__ = ["PASSES", "Geometry", "Unsupported", "geometry"]

# pass name -> the (lhs, rhs, out) roles among the forward's x, w, y
PASSES = {Pass.FORWARD: ("x", "w", "y"), Pass.INPUT_GRAD: ("y", "w", "x"),
          Pass.WEIGHT_GRAD: ("x", "y", "w")}
MAX_SPATIAL_DIMS = 3


class Unsupported(Exception):
    """This pass cannot run on oneDNN; the message says why."""


@dataclass(frozen=True)
class Geometry:
    """One pass in oneDNN's terms; shapes are logical (N, C, *spatial) / (G, O, I, *K)."""

    pass_name: str
    family: str                      # "convolution" or "deconvolution"
    x_shape: tuple[int, ...]
    w_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    crop: tuple[tuple[int, int], ...]    # [a, b) of x read per spatial dim
    extra: tuple[tuple[int, int], ...]   # explicit zeros around the crop
    src_dims: tuple[int, ...]            # oneDNN's src: the crop plus the extra zeros
    weight_dims: tuple[int, ...]         # (G, O/G, I/G, *K), or (O, I, *K) if G == 1
    strides: tuple[int, ...]
    dilates: tuple[int, ...]             # oneDNN counts dilation - 1
    pad_l: tuple[int, ...]
    pad_r: tuple[int, ...]
    flip_weights: bool                   # oneDNN's weights are convgrad's reversed in space

    @property
    def cropped(self) -> bool:
        return any(a != 0 or b != n for (a, b), n in zip(self.crop, self.x_shape[2:]))

    @property
    def padded(self) -> bool:
        return any(lo or hi for lo, hi in self.extra)

    @property
    def roles(self) -> tuple[str, str, str]:
        return PASSES[self.pass_name]


def _kd(k: int, d: int) -> int:
    return (k - 1) * d + 1


def geometry(pass_name: str, lhs_shape: tuple, rhs_shape: tuple, out_shape: tuple,
             spec: ConvSpec, fn: str = "onednn.plan", checked: bool = True) -> Geometry:
    """The oneDNN description of ``pass_name``; raises :class:`Unsupported` or, for
    shapes inconsistent with ``spec``, ValueError (``checked=False``: the caller has
    applied the shape rule already)."""
    if pass_name not in PASSES:
        raise ValueError(f"{fn}: pass_name={pass_name!r}; expected one of {sorted(PASSES)}")
    if not isinstance(spec, ConvSpec):
        raise TypeError(f"{fn}: spec must be a ConvSpec, got {type(spec).__name__}")
    shapes = dict(zip(PASSES[pass_name], (tuple(lhs_shape), tuple(rhs_shape),
                                          tuple(out_shape))))
    x_shape, w_shape, y_shape = shapes["x"], shapes["w"], shapes["y"]
    expected = spec.output_shape(x_shape, w_shape, fn) if checked else y_shape
    if expected != y_shape:
        raise ValueError(f"{fn}: {pass_name} shapes disagree with the spec: x {x_shape} and "
                         f"weight {w_shape} give output {expected}, got {y_shape}")
    nd = spec.ndim
    if nd > MAX_SPATIAL_DIMS:
        raise Unsupported(f"{nd} spatial dims (oneDNN convolves 1 to {MAX_SPATIAL_DIMS})")
    if any(s == 0 for s in (*x_shape, *y_shape)):
        raise Unsupported(f"empty tensor (x {x_shape}, y {y_shape})")
    G = spec.groups
    C_out, Cg, *K = w_shape
    weight_dims = (G, C_out // G, Cg, *K) if G > 1 else tuple(w_shape)
    L, P = x_shape[2:], y_shape[2:]
    kdil = spec.kernel_dilation
    if any(i > 1 for i in spec.input_dilation):
        if any(s > 1 for s in spec.stride):
            raise Unsupported(f"input_dilation={spec.input_dilation} with stride={spec.stride}")
        crop, pad_l, pad_r = [], [], []
        for d, (lo, hi) in enumerate(spec.padding):
            i, span = spec.input_dilation[d], (K[d] - 1) * kdil[d]
            pl, pr = span - lo, span - hi
            # oneDNN's deconvolution takes pl >= 0 and pr >= -(stride - 1)
            if pl < 0 or pr < -(i - 1):
                raise Unsupported(f"input dilation with padding {spec.padding} beyond the "
                                  "kernel extent")
            a, b = 0, L[d]
            if pl > span:   # a crop (lo < 0): leading inputs that reach no output dropped
                a = (pl - span) // i
            if pr > span:   # hi < 0: the inputs after the last one reaching an output
                b = min(L[d], (P[d] - 1 + pl) // i + 1)
            if b - a < 1:
                raise Unsupported(f"the convolution reads only padding in dim {d} "
                                  f"(padding {(lo, hi)}, input length {L[d]})")
            pl -= a * i
            crop.append((a, b))
            pad_l.append(pl)
            pad_r.append((b - a - 1) * i + span + 1 - pl - P[d])
        return Geometry(
            pass_name, "deconvolution", x_shape, w_shape, y_shape, crop=tuple(crop),
            extra=((0, 0),) * nd, src_dims=(*x_shape[:2], *(b - a for a, b in crop)),
            weight_dims=weight_dims, strides=spec.input_dilation,
            dilates=tuple(d - 1 for d in kdil), pad_l=tuple(pad_l), pad_r=tuple(pad_r),
            flip_weights=not spec.flip)
    crop, extra, pad_l, pad_r = [], [], [], []
    for d in range(nd):
        lo, hi = spec.padding[d]
        s, ext = spec.stride[d], _kd(K[d], kdil[d])
        end = -lo + (P[d] - 1) * s + ext      # one past the last input index read
        a, pl = (-lo, 0) if lo < 0 else (0, lo)
        if hi < -(s - 1):                     # crop the tail oneDNN would not accept
            b, pr = end, 0
        elif hi >= 0:
            b, pr = L[d], end - L[d]          # the exact right padding, >= -(s - 1)
        else:
            b, pr = L[d], hi
        if b - a < 1:
            raise Unsupported(f"the convolution reads only padding in dim {d} "
                              f"(padding {(lo, hi)}, input length {L[d]})")
        el, er = max(0, pl - (ext - 1)), max(0, pr - (ext - 1))
        crop.append((a, b))
        extra.append((el, er))
        pad_l.append(pl - el)
        pad_r.append(pr - er)
    src_dims = (*x_shape[:2], *((b - a) + el + er for (a, b), (el, er) in zip(crop, extra)))
    return Geometry(pass_name, "convolution", x_shape, w_shape, y_shape,
                    crop=tuple(crop), extra=tuple(extra), src_dims=src_dims,
                    weight_dims=weight_dims, strides=spec.stride,
                    dilates=tuple(d - 1 for d in kdil), pad_l=tuple(pad_l),
                    pad_r=tuple(pad_r), flip_weights=spec.flip)
