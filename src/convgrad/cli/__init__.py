"""The ``convgrad`` command line: ``demo``, ``msssim``, ``bench``, ``gradcheck``."""

from __future__ import annotations

from .main import build_parser, main

__all__ = ["build_parser", "main"]
