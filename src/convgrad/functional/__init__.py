"""``convgrad.functional``: the user-facing vocabulary (PyTorch's names and semantics)."""

from __future__ import annotations

from .activation import leaky_relu, log_softmax, relu, sigmoid, softmax, softmin, tanh
from .adaptive_pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
)
from .aliases import (
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d_with_indices,
    celu_,
    elu_,
    hardtanh_,
    leaky_relu_,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d_with_indices,
    relu_,
    rrelu_,
    selu_,
    threshold_,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from .attention import scaled_dot_product_attention
from .binary_loss import binary_cross_entropy, binary_cross_entropy_with_logits
from .conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_general,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from .ctc_loss import ctc_loss
from .distance import cosine_similarity, normalize, pairwise_distance
from .dropout import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from .embedding import embedding
from .embedding_bag import embedding_bag
from .fractional_pooling import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from .grid_sample import affine_grid, grid_sample
from .gumbel_softmax import gumbel_softmax
from .interpolate import interpolate
from .linear import bilinear, linear
from .local_response_norm import local_response_norm
from .loss import (
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .margin_loss import (
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, rms_norm
from .one_hot import one_hot
from .padding import pad
from .pdist import pdist
from .piecewise_activation import (
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    mish,
    prelu,
    relu6,
    rrelu,
    softshrink,
    threshold,
)
from .pixel_shuffle import channel_shuffle, pixel_shuffle, pixel_unshuffle
from .pooling import avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d
from .smooth_activation import (
    celu,
    elu,
    gelu,
    glu,
    logsigmoid,
    selu,
    silu,
    softplus,
    softsign,
    tanhshrink,
)
from .triplet_distance_loss import triplet_margin_with_distance_loss
from .unfold import fold, unfold
from .unpooling import (
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)

__all__ = [
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "celu_", "elu_", "hardtanh_", "leaky_relu_",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "relu_", "rrelu_", "selu_", "threshold_", "upsample", "upsample_bilinear",
    "upsample_nearest",
    "conv_general", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "relu", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
    "gelu", "silu", "elu", "softplus", "logsigmoid",
    "pad", "interpolate", "pixel_shuffle", "pixel_unshuffle",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "batch_norm", "instance_norm", "group_norm", "layer_norm",
    "dropout", "dropout1d", "dropout2d", "dropout3d",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "one_hot",
    "hardswish", "hardtanh", "mish", "prelu", "relu6", "unfold", "fold", "affine_grid",
    "grid_sample", "softmin", "selu", "celu", "softsign", "tanhshrink", "glu", "hardsigmoid",
    "threshold", "hardshrink", "softshrink", "embedding", "cosine_similarity",
    "pairwise_distance", "kl_div", "channel_shuffle", "local_response_norm", "rms_norm",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "multilabel_soft_margin_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d",
    "lp_pool2d", "lp_pool3d", "ctc_loss", "linear",
    "scaled_dot_product_attention", "embedding_bag", "normalize",
    "alpha_dropout", "feature_alpha_dropout", "multi_margin_loss", "multilabel_margin_loss",
    "bilinear", "rrelu",
    "gumbel_softmax", "pdist", "triplet_margin_with_distance_loss",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]
