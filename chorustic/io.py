"""Atomic file writing and hashing.

Every finished artifact of the harness (result files, context files, caches, checkpoints, tables)
is written to a temporary file in the destination directory and renamed into place, so a reader
never sees a half-written file and a killed job never leaves one behind under the final name.
A process killed with ``kill -9`` in the middle of a write leaves its temporary file
(``.<name>.<8 random characters>.tmp``); :func:`remove_unfinished_writes` finds and removes those,
and only those, for the names a caller owns.
A full disk (or quota) is a :class:`chorustic.errors.NoSpaceError` naming the file and the space it needs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

__all__ = [
    "atomic_open",
    "atomic_write_text",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_texts",
    "sha256_file",
    "sha256_bytes",
    "unfinished_writes",
    "remove_unfinished_writes",
]

#: the temporary file of ``atomic_open(dir / name)``: ``.{name}.{tempfile's 8 random characters}.tmp``
_TEMP_PREFIX, _TEMP_SUFFIX = ".{name}.", ".tmp"
_TEMP_RANDOM = r"[a-z0-9_]{8}"  # tempfile's name sequence: 8 of "abcdefghijklmnopqrstuvwxyz0123456789_"


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, size: int | None = None, **kwargs: Any) -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success fsync and rename it to ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched. A full disk or quota
    raises :class:`~chorustic.errors.NoSpaceError` naming ``path`` and ``size`` (the bytes to write, when
    the caller knows them).
    """
    with _atomic(path, mode, size, kwargs) as (fh, _tmp):
        yield fh


@contextlib.contextmanager
def _atomic(path: str | os.PathLike, mode: str, size: int | None, kwargs: dict, *, rename: bool = True):
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open supports modes 'w' and 'wb', not {mode!r}")
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX.format(name=path.name), suffix=_TEMP_SUFFIX, dir=path.parent)
        # mkstemp creates 0600 files; give the result the permissions a plain open() would.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh, tmp
            fh.flush()
            os.fsync(fh.fileno())
        if rename:
            os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        _raise_no_space(exc, path, size)
        raise


def _raise_no_space(exc: BaseException, path: Path, size: int | None) -> None:
    from chorustic.errors import NO_SPACE_ERRNOS, NoSpaceError

    if isinstance(exc, OSError) and not isinstance(exc, NoSpaceError) and exc.errno in NO_SPACE_ERRNOS:
        raise NoSpaceError(path, size, exc.errno) from None


def atomic_write_texts(files: dict[str | os.PathLike, str], encoding: str = "utf-8") -> None:
    """Write several files that belong together (a table and its checksum) all or none: every one to a
    temporary file first, then each renamed into place; a failure (a full disk) leaves all as they were."""
    written: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            data = text.encode(encoding)
            with _atomic(path, "wb", len(data), {}, rename=False) as (fh, tmp):
                fh.write(data)
            written.append((tmp, Path(path)))
        for tmp, path in written:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in written:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


def unfinished_writes(directory: str | os.PathLike, names: str) -> list[Path]:
    """The temporary files in ``directory`` that :func:`atomic_open` calls for a final name matching the
    regular expression ``names`` left behind (their process was killed before the rename); sorted.
    Nothing else matches: not the final files, not a file of another name or of another pattern."""
    prefix, suffix = (re.escape(x) for x in _TEMP_PREFIX.split("{name}"))
    pattern = re.compile(f"{prefix}(?:{names}){suffix}{_TEMP_RANDOM}{re.escape(_TEMP_SUFFIX)}")
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if pattern.fullmatch(p.name) and p.is_file() and not p.is_symlink())


def remove_unfinished_writes(directory: str | os.PathLike, names: str) -> list[Path]:
    """Remove :func:`unfinished_writes` ``(directory, names)``; returns what was removed. Only for files the
    caller's own process would write: a temporary file of a writer that is still running would go too."""
    removed = []
    for p in unfinished_writes(directory, names):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
            removed.append(p)
    return removed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    data = text.encode(encoding)
    with atomic_open(path, "wb", size=len(data)) as fh:
        fh.write(data)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_open(path, "wb", size=len(data)) as fh:
        fh.write(data)


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int = 2) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent, sort_keys=False, default=_json_default) + "\n")


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
