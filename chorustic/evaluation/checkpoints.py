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

A job's **memo files** (:func:`memo_path`, :class:`KeptMemo`) keep its memos the same way: the pair memo
(:class:`chorustic.methods.pair_memo.PairMemo`: the distances a nearest-neighbour method computed, kept
across the job's contexts) and the embedding memo (:class:`chorustic.methods.embedding_memo.EmbeddingMemo`:
the embeddings a frozen encoder computed), each written as it grows (at most every :data:`SAVE_EVERY_S`, and never more
than 1/:data:`MEMO_WRITE_SHARE` of the time apart from its own writing; whole when a job ends with failed
runs) and read at the job's start when it was made from the same inputs as a partial file's but the context.
A distance or an embedding is known by the contents of its series, so the memo's entries are those computing
them again gives: the file changes what a resumed job computes, never what it predicts; a job stopped between
two writes computes again the entries since the last. The memo is a speed-up: a file that cannot be written is
given up (the job goes on without it) and one that cannot be read is removed. It goes when the job has
finished every context.

Both kinds of file are keyed on the computing environment too (the libraries' versions and
:func:`chorustic.evaluation.numerics.numerics_key`), so work kept from an attempt under other libraries or
other numerics is never mixed into a result.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from chorustic.io import atomic_open, remove_unfinished_writes

__all__ = ["KeptMemo", "MEMO_KINDS", "MEMO_WRITE_SHARE", "PartialPredictions", "SAVE_EVERY_S", "context_digest", "memo_path",
           "partial_files", "partial_path"]

_clock = time.monotonic  # the clock the writes are spaced by


#: The least wall time (s) between two writes of a context's partial file: a method predicting in many small
#: chunks (an in-context learner at its memory budget) writes it every minute, not after every chunk.
SAVE_EVERY_S = 60.0


def partial_path(results_dir: str | os.PathLike, method: str, dataset: str, protocol: str, seed: int) -> Path:
    """The partial file of one context of a job (beside the job's progress file)."""
    return Path(results_dir) / "runs" / method / f".{dataset}.{protocol}.seed{int(seed)}.partial.npz"


#: A memo file is written again only after this many times the seconds its last write took (and at least
#: SAVE_EVERY_S): writing a large memo (up to PAIR_MEMO_MB) takes at most 1/20 of a job's time.
MEMO_WRITE_SHARE = 20.0


#: The memos a job keeps in files, by kind, with what each keeps: the pair memo (a nearest-neighbour method's
#: distances) and the embedding memo (a frozen encoder's embeddings).
MEMO_KINDS = {"pair": "distances", "embedding": "embeddings"}


def memo_path(results_dir: str | os.PathLike, method: str, dataset: str, kind: str = "pair") -> Path:
    """The memo file of a job (beside the job's progress file): ``kind`` one of :data:`MEMO_KINDS`."""
    if kind not in MEMO_KINDS:
        raise ValueError(f"memo kind {kind!r}: one of {tuple(MEMO_KINDS)}")
    return Path(results_dir) / "runs" / method / f".{dataset}.{kind}memo.npz"


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
        remove_unfinished_writes(self.path.parent, re.escape(self.path.name))  # of a write that was killed
        if not self.path.is_file():
            return None
        try:
            with np.load(self.path, allow_pickle=False) as doc:
                key, spent, rows = str(doc["key"]), json.loads(str(doc["spent"])), np.array(doc["proba"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:  # truncated, edited: not trusted
            return self._discard(f"unreadable ({type(exc).__name__})")
        if key != self.key:
            return self._discard("made from other inputs (method code or parameters, job parameters, data, context "
                                 "or chunk)")
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


class KeptMemo:
    """A job's memo of ``kind`` (one of :data:`MEMO_KINDS`; ``memo``: a
    :class:`~chorustic.methods.pair_memo.PairMemo` or an :class:`~chorustic.methods.embedding_memo.EmbeddingMemo`)
    kept in its memo file ``path``, made from the inputs ``key`` (a JSON-able dict).

    :meth:`load` fills the memo from the file (the entries taken; 0 and the reason in :attr:`discarded` when
    the file was made from other inputs or cannot be read, and then removed); :meth:`save` writes the memo
    when it holds entries the file does not and the time has come (``force``: now), and gives the file up
    (:attr:`given_up`: why) when it cannot be written; :meth:`remove` drops it. :attr:`write_s` and
    :attr:`write_cpu_s` add up the seconds spent writing."""

    def __init__(self, path: str | os.PathLike, key: dict[str, Any], memo: Any, kind: str = "pair"):
        self.path = Path(path)
        self.kind = kind
        self.name = f"{kind} memo"  # how messages name it
        self.keeps = MEMO_KINDS[kind]  # what it keeps: "distances", "embeddings"
        self.key = json.dumps(key, sort_keys=True, default=str, separators=(",", ":"))
        self.memo = memo
        self.discarded: str | None = None
        self.given_up: str | None = None
        self.write_s = self.write_cpu_s = 0.0
        self._saved_changes = 0
        self._saved_at = -float("inf")
        self._last_write_s = 0.0

    def load(self) -> int:
        remove_unfinished_writes(self.path.parent, re.escape(self.path.name))  # of a write that was killed
        if not self.path.is_file():
            return 0
        try:
            with zipfile.ZipFile(self.path) as zf:
                with zf.open("key.npy") as f:
                    key = str(np.lib.format.read_array(f, allow_pickle=False))
                if key != self.key:
                    return self._discard("made from other inputs (method code or parameters, job parameters, "
                                         "data, libraries, numerics or device)")
                n = self.memo.read(zf)
        except Exception as exc:  # truncated, edited, a damaged member (zlib, CRC, header): a speed-up, not trusted
            return self._discard(f"unreadable ({type(exc).__name__}: {exc})")
        self._saved_changes = self.memo.changes  # what the file holds
        return n

    def _discard(self, why: str) -> int:
        self.discarded = why
        self.remove()
        return 0

    def save(self, *, force: bool = False) -> bool:
        """Write the memo (atomically) when it kept entries since the last write and, unless ``force``, at least
        SAVE_EVERY_S and MEMO_WRITE_SHARE times the last write's seconds have passed; whether it wrote. A write
        that fails (a full disk, a folder that cannot be written) removes the file and ends the writes."""
        if self.given_up or self.memo.changes == self._saved_changes or not self.memo.nbytes:
            return False
        now, cpu = _clock(), time.process_time()
        if not force and now - self._saved_at < max(SAVE_EVERY_S, MEMO_WRITE_SHARE * self._last_write_s):
            return False
        changes = self.memo.changes
        try:
            with atomic_open(self.path, "wb", size=self.memo.nbytes) as fh:
                self.memo.write(fh, key=self.key)
        except OSError as exc:  # NoSpaceError included: the memo is a speed-up, the job goes on without it
            self.given_up = f"{type(exc).__name__}: {exc}"
            self.remove()
            return False
        finally:
            self.write_cpu_s += time.process_time() - cpu
            self._last_write_s = _clock() - now
            self.write_s += self._last_write_s
        self._saved_changes, self._saved_at = changes, _clock()
        return True

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)
