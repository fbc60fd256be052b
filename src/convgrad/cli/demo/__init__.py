"""``convgrad demo``: a denoising autoencoder trained on bundled photographs.

:mod:`.training` holds the model, the loss and the training loop; :mod:`.command` the
command's printing, figure and weights file.
"""

from __future__ import annotations

from .command import run_demo, save_figure
from .training import (
    DEFAULT_STEPS,
    DemoResult,
    DenoisingAutoencoder,
    demo_loss,
    evaluate,
    make_batch,
    train,
)

__all__ = ["DEFAULT_STEPS", "DemoResult", "DenoisingAutoencoder", "demo_loss", "evaluate",
           "make_batch", "run_demo", "save_figure", "train"]
