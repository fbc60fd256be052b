"""``convgrad.nn``: modules, parameters and layers with PyTorch's names and defaults."""

from __future__ import annotations

from . import functional, init, modules, parallel, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU6,
    RReLU,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from .adaptive_softmax import AdaptiveLogSoftmaxWithLoss
from .attention import MultiheadAttention, NonDynamicallyQuantizableLinear
from .buffer import Buffer
from .containers import ModuleDict, ModuleList
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import (
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from .embedding import CosineSimilarity, Embedding, EmbeddingBag, PairwiseDistance
from .fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d
from .layers import (
    Bilinear,
    Flatten,
    Fold,
    Identity,
    LeakyReLU,
    Linear,
    ReLU,
    Sigmoid,
    Tanh,
    Unflatten,
    Unfold,
)
from .lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
    UninitializedBuffer,
    UninitializedParameter,
)
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .margin_loss import (
    CosineEmbeddingLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from .module import Module, Parameter, Sequential
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
    SyncBatchNorm,
)
from .padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .parallel import DataParallel
from .parameter_containers import ParameterDict, ParameterList
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .resampling import (
    ChannelShuffle,
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .state import IncompatibleKeys
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .triplet_distance_loss import TripletMarginWithDistanceLoss

__all__ = [
    "functional", "init", "modules", "parallel", "Module", "Parameter", "Sequential",
    "IncompatibleKeys",
    "utils", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Linear", "Identity", "ReLU", "LeakyReLU", "Sigmoid", "Tanh", "Flatten",
    "GELU", "SiLU", "ELU", "Softplus", "Softmax", "Softmin", "LogSoftmax", "Softmax2d",
    "SELU", "CELU", "Softsign", "Tanhshrink", "LogSigmoid", "GLU", "Hardsigmoid",
    "Threshold", "Hardshrink", "Softshrink",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "GroupNorm", "LayerNorm",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
    "PixelUnshuffle", "Unflatten", "Embedding", "CosineSimilarity", "PairwiseDistance",
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss",
    "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
    "Hardswish", "Hardtanh", "Mish", "PReLU", "ReLU6",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Unfold", "Fold", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "ChannelShuffle", "LocalResponseNorm",
    "RMSNorm", "MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
    "CosineEmbeddingLoss", "TripletMarginLoss", "MultiLabelSoftMarginLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
    "GRUCell", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "LPPool1d", "LPPool2d",
    "LPPool3d", "CTCLoss", "MultiheadAttention", "NonDynamicallyQuantizableLinear",
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "EmbeddingBag", "AlphaDropout", "MultiMarginLoss",
    "MultiLabelMarginLoss", "Bilinear",
    "RReLU", "FeatureAlphaDropout", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d",
    "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "UninitializedParameter", "UninitializedBuffer", "SyncBatchNorm",
    "DataParallel",
    "Buffer", "TripletMarginWithDistanceLoss",
    "FractionalMaxPool2d", "FractionalMaxPool3d", "AdaptiveLogSoftmaxWithLoss",
]
