"""The harness's top-level error kinds, defined once.

* :class:`UserError`: something the user asked for cannot be done as written: an invalid or
  inconsistent configuration (:class:`chorustic.config.ConfigError`), an unknown dataset
  (:class:`chorustic.data.errors.UnknownDatasetError`) or method (:class:`UnknownMethodError`).
  The message says what is wrong, where, and what to write instead; the CLI prints it as one line
  and exits with status 2, without a traceback.

Data problems (:class:`chorustic.data.errors.DataError`: a missing, damaged or modified file) are
printed the same way with exit status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
from typing import Iterable

__all__ = ["UserError", "UnknownMethodError", "did_you_mean"]


class UserError(Exception):
    """A mistake in the request (configuration, names, arguments); the message names the fix."""


class UnknownMethodError(UserError, KeyError):
    """A method or plugin name that no plugin registers."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest candidates (case-insensitive), or an empty string."""
    cands = list(candidates)
    by_lower = {c.lower(): c for c in cands}
    found = [by_lower[name.lower()]] if name.lower() in by_lower else []
    for m in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6):
        if by_lower[m] not in found:
            found.append(by_lower[m])
    return f" Did you mean {', '.join(repr(s) for s in found)}?" if found else ""
