"""On-disk cache of preprocessed datasets (``.npz``, written atomically).

A cache file is ``<cache_dir>/<Name>/<Name>-L<length>-<key16>.npz`` where the key is the SHA-256
of a canonical JSON of: the cache format version, the dataset name, the SHA-256 of the source
``.ts`` files, and the preprocessing settings (model length, missing-value fill, interpolation
rule, label order, dtype, the aeon reader's version). Any change to a source file or a setting
gives a new key, so a stale array is never reused; an unreadable cache file is ignored (and
replaced). Arrays are stored without pickling; variable-length native series are stored
concatenated along time with their lengths.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from chorustic.io import atomic_open

__all__ = [
    "CACHE_FORMAT_VERSION",
    "cache_key",
    "cache_path",
    "save_arrays",
    "load_arrays",
    "pack_ragged",
    "unpack_ragged",
]

log = logging.getLogger("chorustic.data")

#: Bump when the cached content or its layout changes.
CACHE_FORMAT_VERSION = 2  # 2: labels kept as written (case), header checks stored


def cache_key(name: str, source_sha256: Mapping[str, str], settings: Mapping[str, Any]) -> str:
    payload = {
        "format": CACHE_FORMAT_VERSION,
        "dataset": name,
        "source_sha256": dict(sorted(source_sha256.items())),
        "settings": dict(sorted(settings.items())),
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_path(cache_dir: str | os.PathLike, name: str, key: str, length: int) -> Path:
    return Path(cache_dir) / name / f"{name}-L{length}-{key[:16]}.npz"


def save_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> Path:
    """Write ``arrays`` to ``path`` (uncompressed npz, atomic)."""
    path = Path(path)
    for k, v in arrays.items():
        if np.asarray(v).dtype == object:
            raise TypeError(f"cache array {k!r} has dtype object; only plain arrays are cached")
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def load_arrays(
    path: str | os.PathLike, required: Sequence[str] = (), skip: Sequence[str] = ()
) -> dict[str, np.ndarray] | None:
    """The arrays of ``path`` except those named in ``skip`` (never read), or None if it is missing,
    unreadable or lacks a ``required`` key."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            if any(k not in z.files for k in required):
                log.warning("ignoring incomplete cache file %s; it will be rebuilt", path)
                return None
            return {k: z[k] for k in z.files if k not in skip}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        log.warning("ignoring unreadable cache file %s (%s); it will be rebuilt", path, exc)
        return None


def pack_ragged(series: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A list of ``(C, L_i)`` arrays -> ``(C, sum L_i)`` and the lengths ``L_i``."""
    lengths = np.asarray([np.shape(s)[-1] for s in series], dtype=np.int64)
    if not len(series):
        return np.zeros((0, 0), dtype=np.float32), lengths
    return np.concatenate([np.asarray(s) for s in series], axis=-1), lengths


def unpack_ragged(flat: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [flat[:, bounds[i] : bounds[i + 1]] for i in range(len(lengths))]
