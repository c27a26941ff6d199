"""Frozen embeddings, kept per series across the protocol contexts of one evaluation job.

A frozen encoder (MOMENT, Mantis, NuTime, UniShape: :class:`chorustic.methods.estimators.FrozenEmbeddingClassifier`)
embeds every channel of every series on its own. The 16 contexts of the paper's protocols draw their series
from the same training split and all predict the same test split, so a job meets the same series again and
again: the contexts hold 3-10 times the training split between them. :class:`EmbeddingMemo` keeps each
channel's embedding the first time it is computed, so a job embeds each series of the test split and of the
training series its contexts use once, whatever its number of contexts.

Series are known by their contents (:func:`chorustic.methods.inputs.series_digests` of the series as the
encoder receives it), never by a position. An embedding the memo returns is the one computing it again gives,
bit for bit: the encoder always runs on batches of the same number of series (the last batch of a call is
filled up with copies of its last series), and with the same batch shape one series' embedding does not depend
on the others of its batch. With a batch of another size it can differ in the last bits (Mantis' convolutions:
~1e-6), which is why the batch size is part of the memo's key and of the method's parameters.

The memo is bounded (:data:`chorustic.methods.cost.EMBEDDING_MEMO_MB`, a constant like the pair memo's, so a
job's cost does not depend on the machine): an embedding beyond the bound is computed each time it is needed,
as without a memo. It lives in the evaluation worker's process and holds one job's embeddings (the job clears
it when it starts), and is written to the job's memo file as it grows (:meth:`EmbeddingMemo.write`,
:class:`chorustic.evaluation.checkpoints.KeptMemo`, as the pair memo is), so a job stopped and started again
embeds again only the series its earlier attempt embedded after the file's last write.
"""

from __future__ import annotations

import functools
import threading
import zipfile
from collections.abc import Callable, Hashable
from typing import IO, Any

import numpy as np

from chorustic.methods.cost import EMBEDDING_MEMO_MB
from chorustic.methods.inputs import series_digests, take_series
from chorustic.methods.pair_memo import _digest_array, _read_header, _read_member, _readable_key, _write_member

__all__ = ["EMBEDDING_MEMO", "ENTRY_OVERHEAD_BYTES", "EmbeddingMemo"]

#: What the memo holds per embedding beside its values: the array's header (112 B), its digest (49 B) and
#: its dictionary slot (~100 B).
ENTRY_OVERHEAD_BYTES = 256


class EmbeddingMemo:
    """Embeddings per (encoder key, series digest), bounded by ``max_mb``.

    :meth:`embed` returns the embeddings of a call's series, computing only those it does not hold. ``computed``
    counts the distinct series embedded, ``reused`` the series read from the memo, ``padding`` the copies that
    filled a last batch, since the last :meth:`take_counts`.
    """

    def __init__(self, max_mb: float = EMBEDDING_MEMO_MB):
        self.max_bytes = int(max_mb * 2**20)
        self._tables: dict[Hashable, dict[bytes, np.ndarray]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.computed = 0
        self.reused = 0
        self.padding = 0
        self.changes = 0  # embeddings kept since the memo was made or read (what its file may lack)
        #: Called after each batch an :meth:`embed` computed, its embeddings kept (the evaluation job writes
        #: the memo file from it); None: nothing.
        self.after_batch: Callable[[], Any] | None = None

    @property
    def nbytes(self) -> int:
        """What the memo holds: every embedding with its entry."""
        return self._bytes

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()
            self._bytes = 0
            self.changes = 0

    def write(self, fh: IO[bytes], **strings: str) -> None:
        """Write the memo to ``fh`` as an uncompressed ``.npz`` (with ``strings``: members holding text), one
        embedding at a time. Per table ``i``: ``key{i}`` (the key's ``repr``), ``rows{i}`` (the series digests,
        uint8 ``(n, digest bytes)``) and ``e{i}`` (float32 ``(n, D)``). A table whose key does not read back
        from its ``repr``, or whose digests or embeddings differ in length, is not written."""
        with self._lock:
            tables = [(key, list(table.items())) for key, table in self._tables.items()]
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            member = functools.partial(_write_member, zf)
            for name, text in strings.items():
                member(name, np.array(text))
            i = 0
            for key, items in tables:
                if (not items or _readable_key(key) is None or len({len(d) for d, _ in items}) != 1
                        or len({row.shape for _, row in items}) != 1 or items[0][1].ndim != 1):
                    continue
                member(f"key{i}", np.array(repr(key)))
                member(f"rows{i}", _digest_array([d for d, _ in items]))
                with zf.open(f"e{i}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array_header_2_0(
                        f, {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")), "fortran_order": False,
                            "shape": (len(items), items[0][1].size)})
                    for _, row in items:
                        f.write(np.ascontiguousarray(row, dtype="<f4").tobytes())
                i += 1
            member("n_tables", np.array(i))

    def read(self, zf: zipfile.ZipFile) -> int:
        """Take the tables of a memo :meth:`write` wrote (``zf``: the file, open) in place of those held; return
        the embeddings taken. Every member's header is checked before its data is read (within this memo's
        bound) and each embedding is read on its own. Raises ValueError (held tables unchanged) when the file
        is not such a memo or holds more than the bound."""
        tables: dict[Hashable, dict[bytes, np.ndarray]] = {}
        total = 0
        for i in range(int(_read_member(zf, "n_tables", 0, np.dtype(np.int64), self.max_bytes))):
            key = _readable_key(str(_read_member(zf, f"key{i}", 0, None, self.max_bytes)), parsed=True)
            if key is None or key in tables:
                raise ValueError(f"table {i}'s key is not an embedding memo's")
            digests = _read_member(zf, f"rows{i}", 2, np.dtype(np.uint8), self.max_bytes)
            if digests.shape[1] == 0:
                raise ValueError(f"table {i}'s digests are empty")
            names = [bytes(r) for r in digests]
            if len(set(names)) != len(names):
                raise ValueError(f"table {i} names a series twice")
            with zf.open(f"e{i}.npy") as f:
                shape, dtype = _read_header(f)
                if len(shape) != 2 or shape[0] != len(names) or shape[1] == 0 or dtype != np.dtype("<f4"):
                    raise ValueError(f"table {i}'s embeddings are {dtype} {shape}, not float32 ({len(names)}, D)")
                total += len(names) * (shape[1] * 4 + ENTRY_OVERHEAD_BYTES)
                if total > self.max_bytes:
                    raise ValueError(f"holds more than the memo's bound ({self.max_bytes / 2**20:.0f} MB)")
                width = shape[1] * 4
                table = {}
                for name in names:
                    buf = f.read(width)
                    if len(buf) != width:
                        raise ValueError(f"table {i}'s embeddings end early")
                    row = np.frombuffer(buf, dtype="<f4").astype(np.float32)
                    row.setflags(write=False)
                    table[name] = row
            tables[key] = table
        with self._lock:
            self._tables, self._bytes, self.changes = tables, total, 0
        return sum(len(t) for t in tables.values())

    def take_counts(self) -> dict[str, int]:
        """The series computed and reused, and the padding, since the last call (a context's run record)."""
        out = {"embeddings_computed": int(self.computed), "embeddings_reused": int(self.reused),
               "embedding_padding": int(self.padding)}
        self.computed = self.reused = self.padding = 0
        return out

    def embed(self, key: Hashable, series: np.ndarray | list[np.ndarray],
              compute: Callable[[Any], np.ndarray], batch: int,
              progress: Callable[[range], Any] = iter) -> np.ndarray:
        """The ``(len(series), D)`` float32 embeddings of ``series`` (an array ``(m, L)`` or a list of 1-D
        arrays, each one series as the encoder receives it).

        ``compute(part)`` embeds exactly ``batch`` series (the same kind of input as ``series``) and returns
        ``(batch, D)``; it is called on the series the memo does not hold, each once, in their order of first
        appearance, the last batch filled up with copies of its last series. ``progress`` wraps the range of
        batch starts (a progress bar)."""
        batch = max(1, int(batch))
        digests = series_digests(series)
        with self._lock:
            table = self._tables.setdefault(key, {})
            found = [table.get(d) for d in digests]
        first: dict[bytes, int] = {}
        for i, (d, row) in enumerate(zip(digests, found)):
            if row is None and d not in first:
                first[d] = i
        todo = list(first.values())
        made: dict[bytes, np.ndarray] = {}
        padding = 0
        for s in progress(range(0, len(todo), batch)):
            part = todo[s:s + batch]
            filled = part + [part[-1]] * (batch - len(part))
            block = np.asarray(compute(take_series(series, filled)), dtype=np.float32)
            if block.ndim != 2 or block.shape[0] != batch:
                raise ValueError(f"EmbeddingMemo: compute returned {block.shape} for {batch} series")
            fresh = {digests[i]: block[j].copy() for j, i in enumerate(part)}
            made.update(fresh)
            padding += batch - len(part)
            self._keep(table, fresh)
            with self._lock:
                self.computed += len(part)
            if self.after_batch is not None:
                self.after_batch()
        with self._lock:
            self.reused += sum(row is not None for row in found)
            self.padding += padding
        rows = [row if row is not None else made[d] for d, row in zip(digests, found)]
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        out = np.stack(rows)
        out.setflags(write=False)
        return out

    def _keep(self, table: dict[bytes, np.ndarray], made: dict[bytes, np.ndarray]) -> None:
        """Keep new embeddings while the memo stays within its bound (the rest is computed again when needed)."""
        with self._lock:
            for d, row in made.items():
                size = row.nbytes + ENTRY_OVERHEAD_BYTES
                if d in table:
                    continue
                if self._bytes + size > self.max_bytes:
                    break
                row.setflags(write=False)
                table[d] = row
                self._bytes += size
                self.changes += 1


#: The worker process's memo (one job's embeddings: the evaluation job clears it when it starts).
EMBEDDING_MEMO = EmbeddingMemo()
