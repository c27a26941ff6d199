"""Small filesystem helpers: installing finished folders without ever replacing a user's files.

A dataset folder is written into a temporary folder next to its destination and then moved into
place. :func:`install_dir` never deletes or overwrites anything that already exists at the
destination: a missing folder is renamed into place (atomic), an existing one only receives files
it does not have yet. :func:`replace_dir` (replacing a whole folder) is only for folders the harness
wrote itself (a derived subset with its chorustic manifest).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["replace_dir", "make_temp_dir", "install_dir", "umask"]


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_temp_dir(dest: Path, prefix: str = ".tmp-") -> Path:
    """A fresh temporary folder next to ``dest`` (same filesystem, so a rename is atomic), with the
    permissions a plain ``mkdir`` would give (``mkdtemp`` makes 0700 folders)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{prefix}{dest.name}-", dir=dest.parent))
    os.chmod(tmp, 0o777 & ~umask())
    return tmp


def _file_mode(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, 0o666 & ~umask())


def install_dir(tmp: Path, dest: Path) -> None:
    """Move the files of the finished folder ``tmp`` to ``dest`` without replacing anything.

    ``dest`` missing: ``tmp`` is renamed to it (atomic). ``dest`` present: each file of ``tmp`` is
    linked into it only if ``dest`` has no file of that name (``FileExistsError`` otherwise, before
    anything is moved); ``tmp`` is removed afterwards.
    """
    for f in tmp.iterdir():
        _file_mode(f)
    if not dest.exists() and not dest.is_symlink():
        try:
            os.rename(tmp, dest)
            return
        except OSError:  # created meanwhile by another process: fall through to the file-wise install
            if not dest.is_dir():
                raise
    clash = [f.name for f in tmp.iterdir() if (dest / f.name).exists() or (dest / f.name).is_symlink()]
    if clash:
        raise FileExistsError(f"{dest} already has {', '.join(clash)}; not replaced")
    for f in sorted(tmp.iterdir()):
        try:
            os.link(f, dest / f.name)  # fails instead of overwriting a file created meanwhile
        except FileExistsError:
            raise
        except OSError:  # no hard links on this filesystem
            if (dest / f.name).exists():
                raise FileExistsError(f"{dest / f.name} already exists; not replaced") from None
            os.rename(f, dest / f.name)
    shutil.rmtree(tmp, ignore_errors=True)


def replace_dir(tmp: Path, dest: Path) -> None:
    """Move the finished folder ``tmp`` to ``dest``, replacing an old ``dest`` the harness wrote itself.

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
