"""The help format of every ``convgrad`` command (a leaf: the commands import it, it
imports none of them)."""

from __future__ import annotations

import argparse

__all__ = ["DefaultsHelpFormatter"]


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: ...)" to every option's help, unless the help says it in words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if "(default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)
