"""torch.nn.modules.channelshuffle's names, for scripts that import them from there."""

from __future__ import annotations

from ..resampling import ChannelShuffle

__all__ = ["ChannelShuffle"]
