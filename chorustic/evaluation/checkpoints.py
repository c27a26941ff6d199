"""A context's predictions kept on disk chunk by chunk, so that a job stopped mid-context continues there.

The harness predicts a context's test split in chunks (:meth:`chorustic.methods.Method.query_chunk`: a memory
budget, and, for a method whose queries cost the same in any chunk, at most
:data:`chorustic.methods.cost.CHECKPOINT_S` of work each). As it goes, it writes the probabilities predicted
so far to the context's **partial file** (:func:`partial_path`, atomically: after the first chunk, then
at most every :data:`SAVE_EVERY_S`). The next start of the job (a retry after a time limit, the same
command after Ctrl-C or a scheduler's SIGTERM, a worker restarted after a crash) reads them back and
predicts from the first chunk they do not hold, when the file was made from the same inputs: the method's fingerprint (its code) and
parameters, the data's checksums, the context's series, the test split, the chunk and the device. A query's
prediction depends on the context and that query only (the method contract) and the chunks are the same on
every start, so the prediction file is the one an uninterrupted run writes.

A partial file is never a result: the workflow does not know it, the aggregation never reads it, and it is
removed once its context's prediction file is written. One made from other inputs, or unreadable, is removed
when the context starts and the context is predicted from its first query.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from chorustic.io import atomic_open

__all__ = ["PartialPredictions", "SAVE_EVERY_S", "context_digest", "partial_files", "partial_path"]

#: The least wall time (s) between two writes of a context's partial file: a method predicting in many small
#: chunks (an in-context learner at its memory budget) writes it every minute, not after every chunk.
SAVE_EVERY_S = 60.0


def partial_path(results_dir: str | os.PathLike, method: str, dataset: str, protocol: str, seed: int) -> Path:
    """The partial file of one context of a job (beside the job's progress file)."""
    return Path(results_dir) / "runs" / method / f".{dataset}.{protocol}.seed{int(seed)}.partial.npz"


def partial_files(results_dir: str | os.PathLike, method: str, dataset: str) -> list[Path]:
    """The partial files a job's earlier attempts left, of any context."""
    folder = Path(results_dir) / "runs" / method
    return sorted(folder.glob(f".{dataset}.*.seed*.partial.npz")) if folder.is_dir() else []


def context_digest(indices: np.ndarray) -> str:
    """SHA-256 of a context's training-series positions (what a partial file's context is known by)."""
    return hashlib.sha256(np.ascontiguousarray(indices, dtype=np.int64).tobytes()).hexdigest()


class PartialPredictions:
    """The partial file of one context, made from the inputs ``key`` (a JSON-able dict).

    :meth:`load` returns the probability rows an earlier attempt kept (None: none usable, the reason in
    :attr:`discarded`), with what that attempt spent (:attr:`spent`: its prediction's wall seconds and its
    CPU seconds); :meth:`save` keeps the rows predicted so far; :meth:`remove` drops the file."""

    def __init__(self, path: str | os.PathLike, key: dict[str, Any]):
        self.path = Path(path)
        self.key = json.dumps(key, sort_keys=True, default=str, separators=(",", ":"))
        self.spent: dict[str, float] = {"predict_s": 0.0, "cpu_s": 0.0, "peak_memory_mb": 0.0}
        self.discarded: str | None = None

    def load(self, *, n_classes: int, chunk: int) -> np.ndarray | None:
        """The kept rows (a whole number of chunks, ``(k, n_classes)`` float64), or None."""
        if not self.path.is_file():
            return None
        try:
            with np.load(self.path, allow_pickle=False) as doc:
                key, spent, rows = str(doc["key"]), json.loads(str(doc["spent"])), np.array(doc["proba"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:  # truncated, edited: not trusted
            return self._discard(f"unreadable ({type(exc).__name__})")
        if key != self.key:
            return self._discard("made from other inputs (method code or parameters, data, context or chunk)")
        if rows.ndim != 2 or rows.shape[1] != n_classes or len(rows) % max(1, int(chunk)) or not len(rows):
            return self._discard(f"holds {rows.shape} rows, not whole chunks of {chunk} queries")
        self.spent = {k: float(spent.get(k, 0.0)) for k in self.spent}
        return rows

    def _discard(self, why: str) -> None:
        self.discarded = why
        self.remove()
        return None

    def save(self, rows: np.ndarray, spent: dict[str, float]) -> None:
        """Keep ``rows`` (the probabilities of the test split's first ``len(rows)`` queries) and ``spent``
        (this and earlier attempts' totals); the file is replaced only once the new one is complete."""
        with atomic_open(self.path, "wb") as fh:
            np.savez(fh, proba=np.asarray(rows, dtype=np.float64), key=np.array(self.key),
                     spent=np.array(json.dumps(spent)))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
