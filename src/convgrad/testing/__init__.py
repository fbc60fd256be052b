"""Tools for checking gradients: central finite differences against the engine."""

from __future__ import annotations

from .gradcheck import CheckResult, check, gradcheck, gradgradcheck

__all__ = ["CheckResult", "check", "gradcheck", "gradgradcheck"]
