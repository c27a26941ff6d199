"""The official files of an archive dataset, and how a copy differs from them in content.

The sizes of every archive dataset are checked against the registry
(:func:`chorustic.data.loading.registry_differences`); an edit that keeps the sizes (values changed,
``@missing true`` with ``?`` values) shows only in the content. Content is compared wherever the official
file's SHA-256 is known:

* the copy inside the aeon wheel (:data:`~chorustic.data.registry.AEON_SHIPPED`), hashed on the spot;
* every file the lock file records as copied from aeon or downloaded (``source: aeon | download``); when a
  changed local file is accepted with ``--update-lock``, the lock keeps that official record under
  ``official`` (:meth:`chorustic.data.lock.DataLock.record_dataset`), so accepting a file never makes it
  official.

A file that matches any known official version is official (a newer aeon may ship other bytes than the
one that made the copy). Line endings are not content: the SHA-256 is also compared with CRLF read as LF
(:func:`content_sha256`). Where the official file itself is at hand (aeon's copy), a file whose bytes differ
is compared by what it says (:func:`_ts_content`): official copies of one release differ in their comments,
the order and presence of header fields and the digits of their numbers (the archive's ArrowHead and
JapaneseVowels are not byte-identical to aeon's), and none of that is a modification; a changed value,
label or declared field is. A dataset with no known official file (a user's own dataset, a local copy
never pinned from an official source) has no content check, only the size check.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from chorustic.data.lock import OFFICIAL_SOURCES
from chorustic.data.tsfile import ts_lines
from chorustic.io import sha256_file

__all__ = ["OfficialFile", "content_differences", "content_sha256", "official_files"]


@dataclass(frozen=True)
class OfficialFile:
    """One known official version of a split file."""

    sha256: str
    content_sha256: str | None
    """SHA-256 with CRLF read as LF; ``None`` where only the raw checksum was recorded (older lock files)."""
    origin: str
    """Where it is from, for a message: ``the aeon 1.3.0 wheel``, ``https://... (recorded 2026-...)``."""
    path: Path | None = None
    """The official file itself where it is at hand (aeon's copy): the difference can then be described."""


def content_sha256(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """SHA-256 of the file with every CRLF read as LF (the same lines, whatever the line endings)."""
    h = hashlib.sha256()
    carry = b""
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(chunk_size), b""):
            chunk = carry + chunk
            carry = b"\r" if chunk.endswith(b"\r") else b""  # a CRLF split across two chunks
            h.update(chunk[: len(chunk) - len(carry)].replace(b"\r\n", b"\n"))
    h.update(carry)
    return h.hexdigest()


@functools.lru_cache(maxsize=64)
def _hashed(path: str, size: int, mtime_ns: int) -> tuple[str, str]:
    return sha256_file(path), content_sha256(path)


def _aeon_files(paths: tuple[Path, ...], version: str) -> dict[str, OfficialFile]:
    out = {}
    for p in paths:
        st = p.stat()
        raw, content = _hashed(str(p), st.st_size, st.st_mtime_ns)
        out[p.name] = OfficialFile(raw, content, f"the aeon {version} wheel", p)
    return out


def _lock_files(entry: Mapping[str, Any] | None) -> dict[str, OfficialFile]:
    if not entry:
        return {}
    record = entry if entry.get("source") in OFFICIAL_SOURCES else entry.get("official")
    if not record or record.get("source") not in OFFICIAL_SOURCES:
        return {}
    where = record.get("url") or record["source"]
    origin = f"{where} (pinned in the lock file {record.get('recorded', '')})".replace(" )", ")")
    content = record.get("content", {})
    return {f: OfficialFile(sha, content.get(f), origin) for f, sha in record.get("files", {}).items()}


def official_files(
    lock_entry: Mapping[str, Any] | None, aeon_paths: tuple[Path, ...] = (), aeon_version: str = "?"
) -> dict[str, list[OfficialFile]]:
    """Every known official version of each split file (file name -> versions): the lock entry's official
    record, and the aeon wheel's copies at ``aeon_paths`` (found by :mod:`chorustic.data.download`)."""
    out: dict[str, list[OfficialFile]] = {}
    for source in (_lock_files(lock_entry), _aeon_files(aeon_paths, aeon_version)):
        for fname, off in source.items():
            out.setdefault(fname, []).append(off)
    return out


def _token(text: str) -> float | str:
    """A data value as a number where it is one (``1.0`` and ``1.000`` are the same value; ``?`` and NaN the
    same missing value), else the text (a class label)."""
    try:
        v = float(text)
    except ValueError:
        return text
    return "?" if math.isnan(v) else v


def _ts_content(path: Path) -> tuple[dict[str, str], list[tuple]]:
    """What a .ts file says, without its layout: the header's fields (comments, order, white space and the
    case of keywords and flags dropped; class labels kept as written) and each series' values and label."""
    header: dict[str, str] = {}
    data: list[tuple] = []
    for in_data, text in ts_lines(path):
        if in_data:
            data.append(tuple(_token(t.strip()) for t in re.split(r"[,:]", text)))
            continue
        key, _, value = text.partition(" ")
        key, value = key.lower(), " ".join(value.split())
        header[key] = value if key == "@classlabel" else value.lower()
    return header, data


def _describe(path: Path, official: Path) -> str:
    """What differs between the content of two .ts files ("" when nothing): the header fields both declare,
    and how many series differ in their values or label."""
    (head, data), (head0, data0) = _ts_content(path), _ts_content(official)
    # a field only one of them declares is not a difference: official copies of one release differ in that
    # (the archive's ArrowHead declares @seriesLength, aeon's does not); what the data say is compared below
    parts = [f"header {k} {head[k]!r} where the official file has {head0[k]!r}"
             for k in sorted(set(head) & set(head0)) if head[k] != head0[k]]
    changed = sum(a != b for a, b in zip(data0, data))
    if changed:
        parts.append(f"{changed} of {len(data0)} series differ in their values or label")
    if len(data) != len(data0):
        parts.append(f"{len(data)} series, the official file {len(data0)}")
    return "; ".join(parts)


def content_differences(
    name: str, folder: Path, shas: Mapping[str, str], official: Mapping[str, list[OfficialFile]]
) -> list[str]:
    """How the split files in ``folder`` differ in content from every known official version (one line
    each; empty when each matches one of them, or when no official version is known)."""
    diffs = []
    for fname, found in sorted(shas.items()):
        versions = official.get(fname, [])
        if not versions or any(v.sha256 == found for v in versions):
            continue
        path = Path(folder) / fname
        found_content = content_sha256(path)
        if any(v.content_sha256 == found_content for v in versions):
            continue  # the same lines with other line endings
        ref = next((v for v in versions if v.path is not None), versions[0])
        what = _describe(path, ref.path) if ref.path is not None else ""
        if ref.path is not None and not what:
            continue  # the same header fields and values in another layout (another copy of the release)
        diffs.append(
            f"{fname} differs in content from the official file ({what + '; ' if what else ''}sha256 "
            f"{found[:12]}..., the official {ref.sha256[:12]}... from {ref.origin})"
        )
    return diffs
