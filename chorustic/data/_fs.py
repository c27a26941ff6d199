"""Small filesystem helpers: atomic replacement of whole folders."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["replace_dir", "make_temp_dir"]


def make_temp_dir(dest: Path, prefix: str = ".tmp-") -> Path:
    """A fresh temporary folder next to ``dest`` (same filesystem, so a rename is atomic)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{dest.name}-", dir=dest.parent))


def replace_dir(tmp: Path, dest: Path) -> None:
    """Move the finished folder ``tmp`` to ``dest``, replacing an old ``dest``.

    A reader sees either the old folder or the new one, never a half-written one: the old folder
    is first renamed aside, then ``tmp`` is renamed into place, then the old one is removed.
    """
    old = None
    if dest.exists() or dest.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f".old-{dest.name}-", dir=dest.parent))
        os.replace(dest, old / dest.name)
    os.replace(tmp, dest)
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)
