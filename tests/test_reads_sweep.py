"""Every Function's ``reads`` is complete and enforced: an in-place edit of any value a
backward rule reads raises the version error, and an edit of any other value leaves the
gradient unchanged.  Oracle: the same gradient computed without the edit (and, for an
edited output, the out-of-place ``y * 2``).
"""

from __future__ import annotations

import numpy as np
import pytest

import convgrad as cg
import convgrad.functional as F
import convgrad.metrics  # noqa: F401 (registers its Functions, if any)
from convgrad.autograd import OUTPUT, Function
from convgrad.linalg import functions as LF
from convgrad.ops import ConvSpec, jit
from convgrad.tensor import conv as C
from convgrad.tensor import ctc as CTC
from convgrad.tensor import distances as DI
from convgrad.tensor import einsum as EIN
from convgrad.tensor import elementwise as E
from convgrad.tensor import gather as G
from convgrad.tensor import hooks as H
from convgrad.tensor import linear as LIN
from convgrad.tensor import math_methods as MM
from convgrad.tensor import pooling as P
from convgrad.tensor import recurrent as REC
from convgrad.tensor import reduce as R
from convgrad.tensor import resampling as RS
from convgrad.tensor import script_methods as SM
from convgrad.tensor import shape as S
from convgrad.tensor import special_math as SPM
from convgrad.tensor.activation import (
    ELU,
    GELU,
    GELUTanh,
    Hardswish,
    LogSigmoid,
    NormalCDF,
    SiLU,
    Softplus,
)
from convgrad.tensor.axis_matrix import AxisMap
from convgrad.tensor.loss import BinaryCrossEntropy, BinaryCrossEntropyWithLogits, PointwiseLoss
from convgrad.tensor.memory_format import ToMemoryFormat
from convgrad.tensor.normalization import (
    BatchNorm,
    BatchNormEval,
    BatchNormReLU,
    ChannelAffine,
    GroupNorm,
    GroupNormReLU,
    GroupNormSiLU,
    LayerNorm,
    Standardize,
)
from convgrad.tensor.similarity import SSIMTerms

RNG = np.random.default_rng(0)
#: Functions whose callers use them only where their compiled kernels run
NEEDS_NUMBA = {GroupNorm, GroupNormReLU, GroupNormSiLU, LayerNorm, PointwiseLoss}


def arr(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape)


SPEC_1D = ConvSpec(stride=(1,), padding=((0, 0),), kernel_dilation=(1,), input_dilation=(1,))
IDX = np.array([[0, 2, 1], [1, 0, 2]])

# cls -> (apply(*tensors) -> Tensor, the float inputs[, their positions in apply's arguments
# where other arguments come first])
def arr32(*shape):
    return arr(*shape).astype(np.float32)


_WINDOW = ((2, 2), (2, 2), (1, 1), (0, 0), (0, 0))


_POOLED = arr32(1, 2, 4, 4)


def _max_pool_grad(g):
    x = _POOLED
    y = F.max_pool2d(cg.tensor(x, requires_grad=True), 2)
    return P.MaxPoolGrad.apply(g, ws=y.grad_fn.ws, window=_WINDOW, x_shape=x.shape, like=x)


_GAMMA_A = arr(2, 3, low=0.5, high=2.0)  # gammainc's a: a constant

SAMPLES = {
    P.MaxPool: (lambda x: F.max_pool2d(x, 2), [arr32(1, 2, 4, 4)]),
    RS.Resample: (lambda x: RS.Resample.apply(x, y_shape=(1, 2, 4, 4), mode="nearest"),
                  [arr32(1, 2, 2, 2)]),
    RS.ResampleGrad: (lambda g: RS.ResampleGrad.apply(g, x_shape=(1, 2, 2, 2), mode="nearest",
                                                      like=arr32(1, 2, 2, 2)),
                      [arr32(1, 2, 4, 4)]),
    P.MaxPoolGrad: (_max_pool_grad, [arr32(1, 2, 2, 2)]),
    P.AvgPool: (lambda x: F.avg_pool2d(x, 2), [arr32(1, 2, 4, 4)]),
    P.AvgPoolGrad: (lambda g: P.AvgPoolGrad.apply(g, window=_WINDOW, x_shape=(1, 2, 4, 4),
                                                  include_pad=True, like=arr32(1, 2, 4, 4)),
                    [arr32(1, 2, 2, 2)]),
    E.Add: (lambda a, b: E.Add.apply(a, b), [arr(2, 3), arr(2, 3)]),
    E.Sub: (lambda a, b: E.Sub.apply(a, b), [arr(2, 3), arr(2, 3)]),
    E.Mul: (lambda a, b: E.Mul.apply(a, b), [arr(2, 3), arr(2, 3)]),
    E.Div: (lambda a, b: E.Div.apply(a, b), [arr(2, 3), arr(2, 3, low=1, high=2)]),
    E.Neg: (lambda a: E.Neg.apply(a), [arr(2, 3)]),
    E.Pow: (lambda a, b: E.Pow.apply(a, b), [arr(2, 3, low=1, high=2), arr(2, 3)]),
    E.Exp: (lambda a: E.Exp.apply(a), [arr(2, 3)]),
    E.Log: (lambda a: E.Log.apply(a), [arr(2, 3, low=1, high=2)]),
    E.Sqrt: (lambda a: E.Sqrt.apply(a), [arr(2, 3, low=1, high=2)]),
    E.Abs: (lambda a: E.Abs.apply(a), [arr(2, 3)]),
    E.Clip: (lambda a: E.Clip.apply(a, lo=-0.3, hi=0.3), [arr(2, 3)]),
    E.ReLU: (lambda a: E.ReLU.apply(a), [arr(2, 3)]),
    E.LeakyReLU: (lambda a: E.LeakyReLU.apply(a, slope=0.1), [arr(2, 3)]),
    E.Sigmoid: (lambda a: E.Sigmoid.apply(a), [arr(2, 3)]),
    E.Tanh: (lambda a: E.Tanh.apply(a), [arr(2, 3)]),
    E.Where: (lambda a, b: E.Where.apply(np.array([[True, False, True]] * 2), a, b),
              [arr(2, 3), arr(2, 3)], (1, 2)),
    E.Cast: (lambda a: E.Cast.apply(a, dtype=np.dtype(np.float32)), [arr(2, 3)]),
    E.Clone: (lambda a: E.Clone.apply(a), [arr(2, 3)]),
    ToMemoryFormat: (lambda a: ToMemoryFormat.apply(a, channels_last=True), [arr(2, 3, 4, 5)]),
    E.Assign: (lambda a, b: E.Assign.apply(a, b), [arr(2, 3), arr(2, 3)]),
    E.IndexPut: (lambda a, b: E.IndexPut.apply(a, b, index=(slice(0, 1),)), [arr(2, 3), arr(1, 3)]),
    R.Sum: (lambda a: R.Sum.apply(a, dims=(1,), keepdim=False), [arr(2, 3)]),
    R.Extremum: (lambda a: R.Extremum.apply(a, dims=(1,), keepdim=False, largest=True),
                 [arr(2, 3)]),
    R.Softmax: (lambda a: R.Softmax.apply(a, dim=1), [arr(2, 3)]),
    R.LogSoftmax: (lambda a: R.LogSoftmax.apply(a, dim=1), [arr(2, 3)]),
    S.Reshape: (lambda a: S.Reshape.apply(a, shape=(3, 2)), [arr(2, 3)]),
    S.Permute: (lambda a: S.Permute.apply(a, perm=(1, 0)), [arr(2, 3)]),
    S.BroadcastTo: (lambda a: S.BroadcastTo.apply(a, shape=(4, 2, 3)), [arr(2, 3)]),
    S.GetItem: (lambda a: S.GetItem.apply(a, index=(slice(0, 1),)), [arr(2, 3)]),
    S.IndexAdd: (lambda a: S.IndexAdd.apply(a, index=(slice(0, 1),), shape=(2, 3)),
                 [arr(1, 3)]),
    S.Concatenate: (lambda a, b: S.Concatenate.apply(a, b, dim=0), [arr(2, 3), arr(1, 3)]),
    S.MatMul: (lambda a, b: S.MatMul.apply(a, b), [arr(2, 3), arr(3, 4)]),
    MM.LogBase: (lambda a: MM.LogBase.apply(a, base=2), [arr(2, 3, low=0.5, high=2.0)]),
    DI.RowDistances: (lambda a, b: DI.RowDistances.apply(a, b, p=3.0),
                      [arr(1, 3, 2), arr(1, 4, 2)]),
    SM.Remainder: (lambda a, b: SM.Remainder.apply(a, b, python=True),
                   [arr(2, 3), arr(2, 3, low=0.5, high=2.0)]),
    EIN.Einsum: (lambda a, b: EIN.Einsum.apply(a, b, spec="ij,jk->ik"), [arr(2, 3), arr(3, 4)]),
    MM.Triangle: (lambda a: MM.Triangle.apply(a, lower=True, diagonal=0), [arr(3, 3)]),
    LIN.Linear: (lambda x, w, b: LIN.Linear.apply(x, w, b), [arr(2, 3), arr(4, 3), arr(4)]),
    C.Conv: (lambda x, w, b: F.conv1d(x, w, b), [arr(2, 2, 5), arr(3, 2, 2), arr(3)]),
    C.ConvReLU: (lambda x, w, b: C.ConvReLU.apply(x, w, b, spec=SPEC_1D, y_shape=(2, 3, 4),
                                                  slope=0.1),
                 [arr(2, 2, 5), arr(3, 2, 2), arr(3)]),
    C.ConvInputGrad: (lambda g, w: F.conv_transpose1d(g, w), [arr(2, 2, 4), arr(2, 3, 2)]),
    C.ConvWeightGrad: (lambda x, g: C.ConvWeightGrad.apply(x, g, spec=SPEC_1D, w_shape=(3, 2, 2)),
                       [arr(2, 2, 5), arr(2, 3, 4)]),
    C.ConvBiasGrad: (lambda g: C.ConvBiasGrad.apply(g), [arr(2, 3, 4)]),
    C.BiasExpand: (lambda h: C.BiasExpand.apply(h, shape=(2, 3, 4)), [arr(3)]),
    C.AddBias: (lambda y, b: C.AddBias.apply(y, b), [arr(2, 3, 4), arr(3)]),
    AxisMap: (lambda a: F.interpolate(a, scale_factor=2, mode="linear"), [arr(1, 2, 4)]),
    BinaryCrossEntropy: (lambda x, t: BinaryCrossEntropy.apply(x, t),
                         [arr(2, 3, low=0.1, high=0.9), arr(2, 3, low=0, high=1)]),
    BinaryCrossEntropyWithLogits: (lambda x, t: BinaryCrossEntropyWithLogits.apply(x, t),
                                   [arr(2, 3), arr(2, 3)]),
    PointwiseLoss: (lambda x, t: PointwiseLoss.apply(x, t, kind="huber", beta=0.5, mean=True),
                    [arr32(3, 4), arr32(3, 4)]),
    Standardize: (lambda x: _standardize(x), [arr(4, 3)]),
    BatchNorm: (lambda x, w, b: BatchNorm.apply(x, w, b, eps=1e-5), [arr(4, 3), arr(3), arr(3)]),
    ChannelAffine: (lambda x, w, b: ChannelAffine.apply(x, w, b), [arr(4, 3, 5), arr(3), arr(3)]),
    BatchNormEval: (lambda x, w, b: BatchNormEval.apply(x, w, b, mean=np.full(3, 0.1),
                                                        var=np.full(3, 1.5), eps=1e-5),
                    [arr(4, 3, 5), arr(3), arr(3)]),
    LayerNorm: (lambda x, w, b: LayerNorm.apply(x, w, b, k=5, eps=1e-5),
                [arr32(3, 4, 5), arr32(5), arr32(5)]),
    # its kernels are Numba's (float32): without Numba it never runs (NEEDS_NUMBA)
    GroupNorm: (lambda x, w, b: GroupNorm.apply(x, w, b, groups=2, eps=1e-5),
                [arr32(3, 4, 5), arr32(4), arr32(4)]),
    GroupNormReLU: (lambda x, w, b: GroupNormReLU.apply(x, w, b, groups=2, eps=1e-5,
                                                        activation=0.1),
                    [arr32(3, 4, 5), arr32(4), arr32(4)]),
    GroupNormSiLU: (lambda x, w, b: GroupNormSiLU.apply(x, w, b, groups=2, eps=1e-5,
                                                        activation="silu"),
                    [arr32(3, 4, 5), arr32(4), arr32(4)]),
    BatchNormReLU: (lambda x, w, b: BatchNormReLU.apply(x, w, b, eps=1e-5),
                    [arr(4, 3), arr(3), arr(3)]),
    S.PadConstant: (lambda a: S.PadConstant.apply(a, widths=((1, 0), (0, 2)), value=0.0),
                  [arr(2, 3)]),
    MM.Log1p: (lambda a: MM.Log1p.apply(a), [arr(2, 3, low=0.1)]),
    MM.Expm1: (lambda a: MM.Expm1.apply(a), [arr(2, 3)]),
    MM.Sin: (lambda a: MM.Sin.apply(a), [arr(2, 3)]),
    MM.Cos: (lambda a: MM.Cos.apply(a), [arr(2, 3)]),
    MM.Tan: (lambda a: MM.Tan.apply(a), [arr(2, 3)]),
    MM.Atan: (lambda a: MM.Atan.apply(a), [arr(2, 3)]),
    MM.Sinh: (lambda a: MM.Sinh.apply(a), [arr(2, 3)]),
    MM.Cosh: (lambda a: MM.Cosh.apply(a), [arr(2, 3)]),
    MM.Erf: (lambda a: MM.Erf.apply(a), [arr(2, 3)]),
    MM.Stepwise: (lambda a: MM.Stepwise.apply(a, name="floor"), [arr(2, 3)]),
    MM.Extremum: (lambda a, b: MM.Extremum.apply(a, b, larger=True), [arr(2, 3), arr(2, 3)]),
    SPM.Arc: (lambda a: SPM.Arc.apply(a, name="acos"), [arr(2, 3, low=-0.9, high=0.9)]),
    SPM.Atan2: (lambda a, b: SPM.Atan2.apply(a, b), [arr(2, 3), arr(2, 3)]),
    SPM.Hypot: (lambda a, b: SPM.Hypot.apply(a, b), [arr(2, 3), arr(2, 3)]),
    SPM.Exp2: (lambda a: SPM.Exp2.apply(a), [arr(2, 3)]),
    SPM.Copysign: (lambda a, b: SPM.Copysign.apply(a, b), [arr(2, 3), arr(2, 3)]),
    SPM.Nextafter: (lambda a, b: SPM.Nextafter.apply(a, b), [arr(2, 3), arr(2, 3)]),
    SPM.Erfc: (lambda a: SPM.Erfc.apply(a), [arr(2, 3)]),
    SPM.Erfcx: (lambda a: SPM.Erfcx.apply(a), [arr(2, 3)]),
    SPM.Erfinv: (lambda a: SPM.Erfinv.apply(a), [arr(2, 3, low=-0.9, high=0.9)]),
    SPM.Lgamma: (lambda a: SPM.Lgamma.apply(a), [arr(2, 3, low=0.5, high=2.0)]),
    SPM.Polygamma: (lambda a: SPM.Polygamma.apply(a, n=1), [arr(2, 3, low=0.5, high=2.0)]),
    SPM.I0: (lambda a: SPM.I0.apply(a), [arr(2, 3)]),
    SPM.I0e: (lambda a: SPM.I0e.apply(a), [arr(2, 3)]),
    SPM.I1: (lambda a: SPM.I1.apply(a), [arr(2, 3)]),
    SPM.I1e: (lambda a: SPM.I1e.apply(a), [arr(2, 3)]),
    SPM.Ndtri: (lambda a: SPM.Ndtri.apply(a), [arr(2, 3, low=0.1, high=0.9)]),
    SPM.LogNdtr: (lambda a: SPM.LogNdtr.apply(a), [arr(2, 3)]),
    SPM.Entr: (lambda a: SPM.Entr.apply(a), [arr(2, 3, low=0.5, high=2.0)]),
    SPM.Gammainc: (lambda x: SPM.Gammainc.apply(_GAMMA_A, x, upper=False),
                   [arr(2, 3, low=0.5, high=2.0)], (1,)),
    S.PadEdges: (lambda a: S.PadEdges.apply(a, mode="reflect", pads=((1, 2, 1),)),
                 [arr(2, 4)]),
    S.PixelShuffle: (lambda a: S.PixelShuffle.apply(a, r=2, up=True), [arr(1, 8, 2, 3)]),
    S.FoldEdges: (lambda a: S.FoldEdges.apply(a, mode="replicate", pads=((1, 2, 1),),
                                                   shape=(2, 4)),
                  [arr(2, 7)]),
    ELU: (lambda a: ELU.apply(a, alpha=1.3), [arr(2, 3)]),
    NormalCDF: (lambda a: NormalCDF.apply(a), [arr(2, 3)]),
    Softplus: (lambda a: Softplus.apply(a, beta=1.0, threshold=20.0), [arr(2, 3)]),
    LogSigmoid: (lambda a: LogSigmoid.apply(a), [arr(2, 3)]),
    SiLU: (lambda a: SiLU.apply(a), [arr(2, 3)]),
    SSIMTerms: (lambda f: SSIMTerms.apply(f, c1=1e-4, c2=9e-4), [arr(10, 2, 3, 3, low=0.1)]),
    GELU: (lambda a: GELU.apply(a), [arr(2, 3)]),
    GELUTanh: (lambda a: GELUTanh.apply(a), [arr(2, 3)]),
    Hardswish: (lambda a: Hardswish.apply(a), [arr(2, 3)]),
    G.Gather: (lambda a: G.Gather.apply(a, index=IDX, dim=1), [arr(2, 3)]),
    G.ScatterAdd: (lambda a: G.ScatterAdd.apply(a, index=IDX, dim=1, shape=(2, 3)),
                   [arr(2, 3)]),
    G.Cumsum: (lambda a: G.Cumsum.apply(a, dim=1), [arr(2, 3)]),
    G.Unpool: (lambda a: G.Unpool.apply(a, index=IDX[None], length=4), [arr(1, 2, 3)]),
    REC.Recurrence: (lambda gx, h0, c0, w, b: REC.Recurrence.apply(
        gx, h0, c0, w, b, None, mode="LSTM", reverse=False),
        [arr(3, 2, 8), arr(2, 2), arr(2, 2), arr(8, 2), arr(8)]),
    CTC.CTCNegLogLikelihood: (lambda x: CTC.CTCNegLogLikelihood.apply(
        x, ext=np.array([[0, 1, 0, 2, 0]]), skip=np.array([[0, 0, 0, 1, 0]], bool),
        il=np.array([4]), tl=np.array([2])), [arr(4, 1, 3, low=-2.0, high=-0.5)]),
    H.BackwardHookOut: (lambda a: H.BackwardHookOut.apply(a, state=_HookState(), index=0),
                        [arr(2, 3)]),
    H.BackwardHookIn: (lambda a: H.BackwardHookIn.apply(a, state=_HookState(), index=0),
                       [arr(2, 3)]),
    LF.Inv: (lambda a: LF.Inv.apply(a), [arr(3, 3) + 3 * np.eye(3)]),
    LF.Det: (lambda a: LF.Det.apply(a), [arr(2, 3, 3) + 3 * np.eye(3)]),
    LF.LogAbsDet: (lambda a: LF.LogAbsDet.apply(a), [arr(2, 3, 3) + 3 * np.eye(3)]),
    LF.Solve: (lambda a, b: LF.Solve.apply(a, b), [arr(3, 3) + 3 * np.eye(3), arr(3, 2)]),
    LF.Cholesky: (lambda a: LF.Cholesky.apply(a), [arr(3, 3) * 0.1 + np.eye(3)]),
    LF.Eigh: (lambda a: LF.Eigh.apply(a, uplo="L"), [np.diag([1.0, 2.0, 3.0]) + arr(3, 3) * 0.1]),
    LF.Svd: (lambda a: LF.Svd.apply(a, full_matrices=False), [arr(4, 3) + np.eye(4, 3)]),
    LF.QR: (lambda a: LF.QR.apply(a, mode="reduced"), [arr(4, 3) + np.eye(4, 3)]),
    LF.Pinv: (lambda a: LF.Pinv.apply(a, atol=np.zeros(()), rtol=np.full((), 1e-12),
                                      hermitian=False), [arr(4, 3) + np.eye(4, 3)]),
    LF.SolveTriangular: (lambda a, b: LF.SolveTriangular.apply(a, b, upper=True, unit=False),
                         [arr(3, 3) + 3 * np.eye(3), arr(3, 2)]),
    LF.CholeskySolve: (lambda b, low: LF.CholeskySolve.apply(b, low),
                       [arr(3, 2), np.tril(arr(3, 3)) + 3 * np.eye(3)]),
    LF.MatrixExp: (lambda a: LF.MatrixExp.apply(a), [arr(2, 3, 3)]),
    LF.LUFactor: (lambda a: _lu_factor(a), [arr(3, 3) + 3 * np.eye(3)]),
}


def _lu_factor(a):
    from convgrad.linalg import lu_factor_ex

    return lu_factor_ex(a).LU


class _HookState:
    """What a module's backward hooks would be told: here, nothing is changed."""

    def output_grad(self, index, grad):
        pass

    def input_grad(self, index, grad):
        return grad


def _standardize(x):
    from convgrad.tensor.normalization import moments

    mean, var = moments(x.data, (0,))
    return Standardize.apply(x, dims=(0,), eps=1e-5, mean=mean, var=var)


def _all_functions(cls=Function):
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("convgrad."):
            yield sub
        yield from _all_functions(sub)


def test_every_function_has_a_sample():
    missing = sorted(f"{c.__module__}.{c.__name__}" for c in set(_all_functions())
                     if c not in SAMPLES)
    assert not missing, f"add these Functions to SAMPLES: {missing}"


def test_a_function_without_reads_is_refused_when_defined():
    with pytest.raises(TypeError, match="must declare reads"):
        class Undeclared(Function):  # noqa: F841
            @staticmethod
            def forward(ctx, x):
                return x


def test_reading_an_undeclared_output_is_refused():
    class Sneaky(Function):
        reads = ()

        @staticmethod
        def forward(ctx, x):
            return np.exp(x)

        @staticmethod
        def backward(ctx, g):
            return g * ctx.output

    x = cg.tensor(arr(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="does not declare OUTPUT"):
        Sneaky.apply(x).sum().backward()


def _run(cls, edit: int | str | None):
    """Gradients of ``sum(y * v)`` w.r.t. the leaves, after an in-place edit of input
    ``edit`` (a non-leaf copy of the leaf), of the output, or of nothing."""
    fn, arrays = SAMPLES[cls][:2]
    if cls in NEEDS_NUMBA and not jit.enabled():
        pytest.skip(f"{cls.__name__} runs on Numba's kernels only")
    leaves = [cg.tensor(a, requires_grad=True) for a in arrays]
    inputs = [leaf.clone() for leaf in leaves]
    y = fn(*inputs)
    assert _recorded(y, cls), f"the sample for {cls.__name__} does not record it"
    if edit == OUTPUT:
        y.mul_(2.0)
    elif edit is not None:
        inputs[edit].add_(0.5)
    v = cg.tensor(np.linspace(-1.0, 2.0, y.numel()).reshape(y.shape).astype(y.dtype))
    return cg.grad((y * v).sum(), leaves, allow_unused=True)


def _recorded(y, cls) -> bool:
    node = y.grad_fn
    while node is not None:
        if node.op is cls:
            return True
        node = node.edges[0] if node.edges else None
    return False


def _declared(cls) -> tuple[set, bool]:
    """(the sample's inputs that ``reads`` declares, whether it declares the output)."""
    sample = SAMPLES[cls]
    where = sample[2] if len(sample) > 2 else range(len(sample[1]))
    needs = tuple(i in where for i in range(max(where) + 1))
    positions, output = cls.reads_for(needs)
    return {k for k, i in enumerate(where) if i in positions}, output


def _same(a, b) -> bool:
    return all((x is None and y is None) or np.allclose(x.data, y.data, rtol=1e-12, atol=1e-12)
               for x, y in zip(a, b))


VERSION_ERROR = "modified by an inplace operation|modified in place"


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_an_inplace_edit_of_what_backward_reads_raises_never_a_wrong_gradient(cls):
    reference = _run(cls, None)
    positions, reads_output = _declared(cls)
    for i in range(len(SAMPLES[cls][1])):
        if i in positions:
            with pytest.raises(RuntimeError, match=VERSION_ERROR):
                _run(cls, i)
        else:
            try:
                edited = _run(cls, i)
            except RuntimeError as e:  # a view shares its input's memory: its use is refused
                assert cls.view and "shares its memory" in str(e), f"{cls.__name__}: {e}"
                continue
            assert _same(edited, reference), \
                f"{cls.__name__}: editing input {i} (not in reads) changed the gradient"
    if reads_output:
        with pytest.raises(RuntimeError, match=VERSION_ERROR):
            _run(cls, OUTPUT)
    else:
        twice = tuple(None if g is None else g * 2.0 for g in reference)
        try:
            edited = _run(cls, OUTPUT)
        except RuntimeError as e:  # a view's output shares its input's memory: refused
            assert cls.view and "shares its memory" in str(e), f"{cls.__name__}: {e}"
            return
        except ValueError as e:  # a broadcast output is read-only: no in-place edit at all
            assert "read-only" in str(e), f"{cls.__name__}: {e}"
            return
        assert _same(edited, twice), \
            f"{cls.__name__}: y.mul_(2) gave a gradient other than y * 2's"


@pytest.mark.parametrize("norm", ["batch_norm", "group_norm", "instance_norm", "layer_norm",
                                  "elu"])
def test_inplace_edit_of_a_normalised_output_gives_the_out_of_place_gradient(norm):
    """The cases that gave silently wrong gradients: a rule read its output undeclared."""
    fns = {"batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
           "group_norm": lambda x: F.group_norm(x, 2),
           "instance_norm": lambda x: F.instance_norm(x),
           "layer_norm": lambda x: F.layer_norm(x, x.shape[1:]),
           "elu": lambda x: F.elu(x)}
    x0 = arr(3, 4, 5, 5)
    grads = []
    for inplace in (False, True):
        x = cg.tensor(x0, requires_grad=True)
        y = fns[norm](x)
        y = y.mul_(2.0) if inplace else y * 2.0
        (y * cg.tensor(np.cos(x0))).sum().backward()
        grads.append(x.grad.data)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-12)
