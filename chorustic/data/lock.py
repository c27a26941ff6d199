"""The data lock file: SHA-256 of every downloaded archive and every dataset file, pinned on first
use and verified on every later run.

``<data_dir>/chorustic-data.lock.json``::

    {
      "format": 1,
      "datasets": {
        "GunPoint": {"source": "download", "url": "https://.../GunPoint.zip",
                     "files": {"GunPoint_TRAIN.ts": "<sha256>", "GunPoint_TEST.ts": "<sha256>"},
                     "recorded": "2026-01-01T00:00:00+00:00"}
      },
      "archives": {
        "https://.../GunPoint.zip": {"sha256": "<sha256>", "size": 123456, "recorded": "..."}
      }
    }

Dataset entries pin what the harness reads (whatever the source: a download, a local copy, the
aeon wheel, a derived subset); archive entries pin what a URL served. A mismatch raises
:class:`~chorustic.data.errors.ChecksumMismatchError` saying which file, expected vs found, and
how to fix it (delete and re-download, or accept the new files with ``--update-lock``).
Updates are read-modify-write under an exclusive ``flock`` and written atomically, so parallel
download jobs of the DAG never lose each other's entries. A lock file that cannot be written (a
read-only local copy) only disables recording, with a warning; verification still runs.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from chorustic.data.errors import ChecksumMismatchError, DataError
from chorustic.io import atomic_write_json

#: Sources whose files are the official ones, as copied from the aeon wheel or downloaded (never edited).
OFFICIAL_SOURCES = ("aeon", "download")

__all__ = ["LOCK_NAME", "LOCK_FORMAT", "OFFICIAL_SOURCES", "DataLock", "open_lock"]

log = logging.getLogger("chorustic.data")

LOCK_NAME = "chorustic-data.lock.json"
LOCK_FORMAT = 1

try:  # POSIX
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: no inter-process lock, still atomic writes
    _fcntl = None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


@contextlib.contextmanager
def file_mutex(path: Path) -> Iterator[bool]:
    """Exclusive inter-process lock on ``path`` (created if needed). Yields False if impossible
    (read-only directory, no ``fcntl``); callers then proceed without mutual exclusion."""
    if _fcntl is None:
        yield False
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")
    except OSError:
        yield False
        return
    try:
        _fcntl.flock(fh.fileno(), _fcntl.LOCK_EX)
        yield True
    finally:
        with contextlib.suppress(OSError):
            _fcntl.flock(fh.fileno(), _fcntl.LOCK_UN)
        fh.close()


class DataLock:
    """Verify and record dataset files and archives in one lock file.

    ``update=True`` accepts what is found and overwrites the recorded checksums
    (``chorustic download --update-lock``).
    """

    def __init__(self, path: str | os.PathLike, *, update: bool = False):
        self.path = Path(path)
        self.update = update
        self._warned = False

    # -- reading -------------------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"format": LOCK_FORMAT, "datasets": {}, "archives": {}}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"the data lock file {self.path} is not valid JSON ({exc}). It is written atomically, so it "
                "was edited by hand or damaged: fix it, or delete it to record fresh checksums on the next run."
            ) from exc
        if not isinstance(data, dict) or data.get("format") != LOCK_FORMAT:
            raise DataError(
                f"the data lock file {self.path} has an unknown format ({data.get('format') if isinstance(data, dict) else type(data).__name__}); "
                f"this chorustic writes format {LOCK_FORMAT}. Delete it to record fresh checksums."
            )
        data.setdefault("datasets", {})
        data.setdefault("archives", {})
        return data

    def dataset_entry(self, name: str) -> dict[str, Any] | None:
        return self.read()["datasets"].get(name)

    def archive_entry(self, url: str) -> dict[str, Any] | None:
        return self.read()["archives"].get(url)

    # -- verification --------------------------------------------------------------------------
    def verify_dataset(
        self, name: str, files: Mapping[str, str], folder: Path, *, url: str | None = None
    ) -> None:
        """Raise :class:`ChecksumMismatchError` when ``files`` (name -> sha256) differ from the lock."""
        if self.update:
            return
        entry = self.dataset_entry(name)
        if not entry:
            return
        recorded: Mapping[str, str] = entry.get("files", {})
        for fname, found in files.items():
            expected = recorded.get(fname)
            if expected is not None and expected != found:
                where = f"{folder}/{fname}" if url is None else f"{fname} downloaded from {url}"
                fix = (
                    f"restore the recorded version of {fname}, or move {folder} away and run "
                    f"`chorustic download {name}` to fetch it again"
                    if url is None
                    else "the server now serves different data than when the lock was written; use another "
                    "mirror (--mirror) that serves the recorded version"
                )
                raise ChecksumMismatchError(
                    f"checksum mismatch for dataset {name!r}: {where} has sha256 {found}, but the lock file "
                    f"{self.path} expects {expected} (recorded {entry.get('recorded', '?')} from "
                    f"{entry.get('source', '?')}{' ' + entry['url'] if entry.get('url') else ''}). To fix: {fix}, "
                    f"or, if you changed the file on purpose, run `chorustic download {name} --data-dir "
                    f"{Path(folder).parent} --lock-file {self.path} --update-lock` to accept the files as they are now.",
                    dataset=name,
                    url=url,
                    file=str(Path(folder) / fname),
                    expected=expected,
                    found=found,
                )

    def verify_archive(
        self, url: str, sha256: str, *, dataset: str | None = None, path: Path | None = None
    ) -> None:
        if self.update:
            return
        entry = self.archive_entry(url)
        if entry and entry.get("sha256") != sha256:
            raise ChecksumMismatchError(
                f"checksum mismatch for the archive {url}{' (dataset ' + repr(dataset) + ')' if dataset else ''}: "
                f"the download has sha256 {sha256}, but the lock file {self.path} expects {entry.get('sha256')} "
                f"(recorded {entry.get('recorded', '?')}). The download was corrupted or the server changed the "
                "file. To fix: run the download again (the bad copy was deleted), use another mirror (--mirror), "
                "or pass --update-lock to accept the new archive.",
                dataset=dataset,
                url=url,
                file=str(path) if path else url,
                expected=entry.get("sha256"),
                found=sha256,
            )

    # -- recording -----------------------------------------------------------------------------
    def _modify(self, fn) -> None:
        mutex = self.path.with_name(self.path.name + ".lck")
        try:
            with file_mutex(mutex):
                data = self.read()
                if fn(data):
                    atomic_write_json(self.path, data)
        except OSError as exc:
            if not self._warned:
                log.warning(
                    "cannot write the data lock file %s (%s); checksums are verified but not recorded",
                    self.path,
                    exc,
                )
                self._warned = True

    def record_dataset(
        self,
        name: str,
        files: Mapping[str, str],
        *,
        source: str,
        url: str | None = None,
        extra: Mapping[str, Any] | None = None,
        content: Mapping[str, str] | None = None,
    ) -> None:
        """Pin ``files`` (name -> sha256) of dataset ``name``; ``content`` (name -> sha256 with CRLF read as
        LF) is recorded for official sources. A local file accepted with ``update`` over an official record
        keeps that record under ``official``: accepting a changed file never makes it official
        (:mod:`chorustic.data.official` compares content with it)."""

        def fn(data: dict) -> bool:
            old = data["datasets"].get(name)
            if old and not self.update and all(old.get("files", {}).get(k) == v for k, v in files.items()):
                return False  # already pinned, nothing new
            entry: dict[str, Any] = {"source": source}
            if url:
                entry["url"] = url
            entry["files"] = dict(sorted(files.items()))
            if content:
                entry["content"] = dict(sorted(content.items()))
            if extra:
                entry.update(extra)
            if old and source not in OFFICIAL_SOURCES:
                kept = old if old.get("source") in OFFICIAL_SOURCES else old.get("official")
                if kept:
                    entry["official"] = {k: v for k, v in kept.items() if k != "official"}
            entry["recorded"] = _now()
            data["datasets"][name] = entry
            data["datasets"] = dict(sorted(data["datasets"].items()))
            return True

        self._modify(fn)

    def record_archive(self, url: str, sha256: str, size: int, *, datasets: list[str] | None = None) -> None:
        def fn(data: dict) -> bool:
            old = data["archives"].get(url)
            if old and old.get("sha256") == sha256:
                return False
            entry: dict[str, Any] = {"sha256": sha256, "size": int(size)}
            if datasets:
                entry["datasets"] = list(datasets)
            entry["recorded"] = _now()
            data["archives"][url] = entry
            data["archives"] = dict(sorted(data["archives"].items()))
            return True

        self._modify(fn)


class _NoLock(DataLock):
    """``lock=False``: verify nothing, record nothing."""

    def __init__(self) -> None:
        super().__init__(os.devnull)

    def read(self) -> dict[str, Any]:
        return {"format": LOCK_FORMAT, "datasets": {}, "archives": {}}

    def _modify(self, fn) -> None:
        return None


def open_lock(lock: bool | str | os.PathLike | DataLock, data_dir: Path, *, update: bool = False) -> DataLock:
    """``True`` -> ``<data_dir>/chorustic-data.lock.json``; a path -> that file; ``False`` -> no lock."""
    if isinstance(lock, DataLock):
        return lock
    if lock is False or lock is None:
        return _NoLock()
    if lock is True:
        return DataLock(Path(data_dir) / LOCK_NAME, update=update)
    return DataLock(Path(lock), update=update)
