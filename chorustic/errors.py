"""The harness's top-level error kinds, defined once.

* :class:`UserError`: something the user asked for cannot be done as written: an invalid or
  inconsistent configuration (:class:`chorustic.config.ConfigError`), an unknown dataset
  (:class:`chorustic.data.errors.UnknownDatasetError`) or method (:class:`UnknownMethodError`).
  The message says what is wrong, where, and what to write instead; the CLI prints it as one line
  and exits with status 2, without a traceback.

Data problems (:class:`chorustic.data.errors.DataError`: a missing, damaged or modified file) and a
full disk (:class:`NoSpaceError`: the file being written and the space it needs) are printed the same
way with exit status 1; anything else is a bug and keeps its traceback.

Long messages are cut in the middle (:func:`shorten`), never at the end, where the advice is.
"""

from __future__ import annotations

import difflib
import errno
import os
import shutil
from pathlib import Path
from typing import Iterable

__all__ = ["UserError", "UnknownMethodError", "NoSpaceError", "did_you_mean", "shorten", "human_bytes"]


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


def known_keywords(cls):
    """Class decorator for a dataclass a plugin author writes by hand (``MethodInfo``, ``CostModel``): a
    misspelled keyword is a ``TypeError`` naming the class, the keyword, the closest field ("Did you mean
    'fits_on_target'?") and the fields, instead of Python's bare "unexpected keyword argument"."""
    import dataclasses
    import functools

    fields = [f.name for f in dataclasses.fields(cls) if f.init]
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        unknown = [k for k in kwargs if k not in fields]
        if unknown:
            hint = did_you_mean(unknown[0], fields)
            listed = f" Its fields: {', '.join(fields)}" if not hint or len(fields) <= 12 else (
                f" Its fields: help({cls.__module__}.{cls.__name__})")
            raise TypeError(f"{cls.__name__} has no field {unknown[0]!r}.{hint}{listed}")
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


def human_bytes(n: float) -> str:
    """``1536 -> '1.5 KB'`` (powers of 1024, as ``df -h``)."""
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class NoSpaceError(OSError):
    """The disk (or the quota) a file is written to is full: names the file, the space it needs and what
    is free there. Raised by :mod:`chorustic.io` in place of the bare ``[Errno 28] No space left on device``;
    nothing half-written is left under the file's name."""

    def __init__(self, path: str | os.PathLike, needed: int | None, code: int = errno.ENOSPC):
        self.path = Path(path)
        self.needed = needed
        try:
            free = human_bytes(shutil.disk_usage(self.path.parent).free)
        except OSError:
            free = "unknown"
        what = "disk quota exceeded" if code == errno.EDQUOT else "no space left on the device"
        need = f"writing it needs {human_bytes(needed)}" if needed is not None else "writing it needs more"
        super().__init__(
            code,
            f"{what} for {self.path}: {need} ({free} free there); nothing half-written was kept. Free space on that "
            "disk (or point `paths` in the config to another one) and run the same command again",
        )
        self.filename = str(self.path)

    def __str__(self) -> str:
        return str(self.strerror)


#: ``errno`` values that mean the disk or the quota is full.
NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def shorten(text: str, limit: int = 2000) -> str:
    """``text`` in at most ``limit`` characters: its head (where a message says what is wrong and what to do)
    and its tail, with the middle cut and the cut marked; unchanged when it fits."""
    if len(text) <= limit:
        return text
    marker = " [... {} characters cut ...] "
    room = limit - len(marker.format(len(text)))
    head = (room * 2) // 3
    tail = room - head
    return text[:head] + marker.format(len(text) - head - tail) + text[len(text) - tail:]
