"""``convgrad.nn.utils``: gradient clipping, flattening parameters to one vector, packed
sequences (:mod:`.rnn`), parametrizations (:mod:`.parametrize`, :mod:`.parametrizations`),
pruning (:mod:`.prune`), the hook-style ``weight_norm``/``spectral_norm``, batch-norm
folding (:mod:`.fusion`) and ``functional_call`` (:mod:`.stateless`)."""

from __future__ import annotations

from . import fusion, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .hook_spectral_norm import remove_spectral_norm, spectral_norm
from .hook_weight_norm import remove_weight_norm, weight_norm
from .misc import (
    clip_grad_norm,
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
    skip_init,
)

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "fusion", "get_total_norm", "parameters_to_vector",
           "parametrizations", "parametrize", "prune", "remove_spectral_norm",
           "remove_weight_norm", "rnn", "skip_init", "spectral_norm", "stateless",
           "vector_to_parameters", "weight_norm"]
