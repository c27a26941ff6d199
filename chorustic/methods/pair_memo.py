"""Distances between series, kept across the protocol contexts of one evaluation job.

Every context of a job draws its series from the dataset's training split, and every context predicts the
same test split. A nearest-neighbour method therefore meets the same (query, context series) pairs again and
again: the 16 contexts of the paper's protocols (the full context, fixed-shot and proportional draws with
their seeds) hold 3-10 times the training split between them. :class:`PairMemo` keeps each distance the
first time it is computed and hands it out again, so a job computes each pair of the test split with the
training series once, whatever its number of contexts.

Series are known by their contents (:func:`chorustic.methods.inputs.series_digests`: a digest of their
values, dtype and shape), never by a position, so a distance the memo returns is the one computing it again gives, bit for bit:
the distance of a pair does not depend on the other series of the call that computed it. The memo holds
float64 distances in one row per query series and is bounded (:data:`chorustic.methods.cost.PAIR_MEMO_MB`,
a constant like the query chunks, so a job's cost does not depend on the machine): a pair beyond the bound is
computed each time it is needed, as without a memo. It lives in the evaluation worker's process, one job's
contexts long, and is written to the job's memo file as it grows (:meth:`PairMemo.write`,
:class:`chorustic.evaluation.checkpoints.KeptMemo`), block by block of queries inside a chunk
(:data:`chorustic.methods.cost.PAIR_BLOCK_S`), so a job stopped and started again computes again only the
pairs its earlier attempt computed after the file's last write.
"""

from __future__ import annotations

import ast
import functools
import time
import zipfile
from collections.abc import Callable, Hashable, Sequence
from typing import IO, Any

import numpy as np

from chorustic.methods.cost import PAIR_BLOCK_S, PAIR_MEMO_MB

__all__ = ["PAIR_MEMO", "PairMemo"]


class _Table:
    """One distance's kept pairs: a column number per context series, a float64 row per query (NaN: not kept)."""

    def __init__(self):
        self.cols: dict[bytes, int] = {}
        self.rows: dict[bytes, np.ndarray] = {}

    @property
    def nbytes(self) -> int:
        """What the table holds once every row has every column (a row made before a column grows on use)."""
        return len(self.rows) * len(self.cols) * 8


class PairMemo:
    """(query, context series) distances kept across contexts, per distance (``key``: its name and parameters).

    :meth:`distances` returns the whole (queries x context) matrix of one call, computing only what it does not
    hold: the queries with any unknown pair against the context series with any. ``computed`` and ``reused``
    count pairs since the last :meth:`take_counts`.
    """

    def __init__(self, max_mb: float = PAIR_MEMO_MB):
        self.max_bytes = int(max_mb * 2**20)
        self._tables: dict[Hashable, _Table] = {}
        self.computed = 0
        self.reused = 0
        self.changes = 0
        """How many times pairs were kept (grows with every kept block; a written memo records the count)."""
        #: Called after each block of queries :meth:`distances` computed, its pairs kept (the evaluation job
        #: writes the memo file from it); None: nothing, and a call's unknown pairs are computed at once.
        self.after_block: Callable[[], Any] | None = None

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self._tables.values())

    @property
    def n_pairs(self) -> int:
        """The pairs held (NaN cells of a table, pairs never computed, are not counted)."""
        return sum(int(np.isfinite(r).sum()) for t in self._tables.values() for r in t.rows.values())

    def clear(self) -> None:
        self._tables.clear()
        self.changes = 0

    def write(self, fh: IO[bytes], **strings: str) -> None:
        """Write the memo to ``fh`` as an uncompressed ``.npz`` (with ``strings``: members holding text), one
        row at a time: writing costs no memory beyond a row. Per table ``i``: ``key{i}`` (the key's
        ``repr``), ``cols{i}`` and ``rows{i}`` (the series digests, uint8 ``(n, digest bytes)``) and
        ``d{i}`` (float64 ``(rows, cols)``, NaN where not kept). A table whose key does not read back from
        its ``repr`` (:func:`ast.literal_eval`), or whose digests differ in length, is not written."""
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            member = functools.partial(_write_member, zf)
            for name, text in strings.items():
                member(name, np.array(text))
            i = 0
            for key, table in self._tables.items():
                cols, rows = list(table.cols), list(table.rows)
                if not rows or not cols or _readable_key(key) is None or len({len(d) for d in cols + rows}) != 1:
                    continue
                member(f"key{i}", np.array(repr(key)))
                member(f"cols{i}", _digest_array(cols))
                member(f"rows{i}", _digest_array(rows))
                nc = len(cols)
                with zf.open(f"d{i}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array_header_2_0(
                        f, {"descr": np.lib.format.dtype_to_descr(np.dtype("<f8")), "fortran_order": False,
                            "shape": (len(rows), nc)})
                    for row in table.rows.values():
                        out = np.full(nc, np.nan, dtype="<f8")
                        out[:row.size] = row
                        f.write(out.tobytes())
                i += 1
            member("n_tables", np.array(i))

    def read(self, zf: zipfile.ZipFile) -> int:
        """Take the tables of a memo :meth:`write` wrote (``zf``: the file, open) in place of those held; return
        the pairs taken. Every member's header is checked before its data is read (its shape within this
        memo's bound) and each row is read on its own, so reading holds the memo once, as computing it does.
        Raises ValueError (held tables unchanged) when the file is not such a memo or holds more than the
        bound."""
        tables: dict[Hashable, _Table] = {}
        total = 0
        for i in range(int(_read_member(zf, "n_tables", 0, np.dtype(np.int64), self.max_bytes))):
            key = _readable_key(str(_read_member(zf, f"key{i}", 0, None, self.max_bytes)), parsed=True)
            if key is None or key in tables:
                raise ValueError(f"table {i}'s key is not a pair memo's")
            cols = _read_member(zf, f"cols{i}", 2, np.dtype(np.uint8), self.max_bytes)
            rows = _read_member(zf, f"rows{i}", 2, np.dtype(np.uint8), self.max_bytes)
            if cols.shape[1] != rows.shape[1]:
                raise ValueError(f"table {i}'s digests differ in length")
            table = _Table()
            table.cols = {bytes(c): j for j, c in enumerate(cols)}
            names = [bytes(r) for r in rows]
            if len(table.cols) != len(cols) or len(set(names)) != len(names):
                raise ValueError(f"table {i} names a series twice")
            total += len(rows) * len(cols) * 8
            if total > self.max_bytes:
                raise ValueError(f"holds more than the memo's bound ({self.max_bytes / 2**20:.0f} MB)")
            with zf.open(f"d{i}.npy") as f:
                shape, dtype = _read_header(f)
                if shape != (len(rows), len(cols)) or dtype != np.dtype("<f8"):
                    raise ValueError(f"table {i}'s distances are {dtype} {shape}, not float64 {(len(rows), len(cols))}")
                width = len(cols) * 8
                for name in names:
                    buf = f.read(width)
                    if len(buf) != width:
                        raise ValueError(f"table {i}'s distances end early")
                    table.rows[name] = np.frombuffer(buf, dtype="<f8").copy()
            tables[key] = table
        self._tables = tables
        self.changes = 0
        return self.n_pairs

    def take_counts(self) -> dict[str, int]:
        """The pairs computed and reused since the last call (what a context reports in its run record)."""
        out = {"distances_computed": int(self.computed), "distances_reused": int(self.reused)}
        self.computed = self.reused = 0
        return out

    def distances(self, key: Hashable, queries: Sequence[bytes], context: Sequence[bytes],
                  compute: Callable[[np.ndarray, np.ndarray], np.ndarray], *, lanes: int = 1) -> np.ndarray:
        """The (len(queries), len(context)) distances of the series with these digests.

        ``compute(qi, ci)`` returns the float distances of queries ``qi`` (positions in ``queries``) to context
        series ``ci`` (positions in ``context``), a ``(len(qi), len(ci))`` matrix. With :attr:`after_block`
        set, the queries with unknown pairs are computed in blocks, each kept before the next: ``lanes``
        queries first (those ``compute`` works on at once: the job's threads), then a multiple of ``lanes``
        that takes about :data:`~chorustic.methods.cost.PAIR_BLOCK_S` at the pace measured so far; the hook
        is called once blocks of at least that long are kept since its last call."""
        table = self._tables.setdefault(key, _Table())
        nq, nc = len(queries), len(context)
        col = np.fromiter((table.cols.get(d, -1) for d in context), dtype=np.int64, count=nc)
        out = np.full((nq, nc), np.nan)
        kept = np.flatnonzero(col >= 0)
        if kept.size:
            c = col[kept]
            for i, d in enumerate(queries):
                row = table.rows.get(d)
                if row is not None:
                    inside = c < row.size
                    out[i, kept[inside]] = row[c[inside]]
        unknown = np.isnan(out)
        self.reused += int(out.size - unknown.sum())
        if unknown.any():
            qi = np.flatnonzero(unknown.any(axis=1))
            ci = np.flatnonzero(unknown.any(axis=0))
            hook, lanes = self.after_block, max(1, int(lanes))
            start, step = 0, (lanes if hook is not None else qi.size)
            spent = since_hook = 0.0
            while start < qi.size:
                part = qi[start:start + step]
                began = time.perf_counter()
                block = np.asarray(compute(part, ci), dtype=np.float64)
                took = time.perf_counter() - began
                spent, since_hook = spent + took, since_hook + took
                if block.shape != (part.size, ci.size):
                    raise ValueError(f"PairMemo: compute returned {block.shape}, "
                                     f"expected {(part.size, ci.size)}")
                out[np.ix_(part, ci)] = block
                self.computed += int(block.size)
                self._keep(table, [queries[i] for i in part], [context[j] for j in ci], block)
                start += part.size
                if hook is not None:
                    if since_hook >= PAIR_BLOCK_S:  # blocks of a call that takes less go to the caller's save
                        hook()
                        since_hook = 0.0
                    step = _next_block(lanes, start, spent)
        return out

    def _keep(self, table: _Table, queries: list[bytes], context: list[bytes], block: np.ndarray) -> None:
        """Keep a computed block: new series get a column or row only while the whole memo stays in its bound."""
        new_cols = list(dict.fromkeys(d for d in context if d not in table.cols))
        new_rows = [d for d in dict.fromkeys(queries) if d not in table.rows]
        n_cols = len(table.cols) + len(new_cols)
        grown = (len(table.rows) + len(new_rows)) * n_cols * 8 - table.nbytes
        if self.nbytes + grown <= self.max_bytes:
            for d in new_cols:
                table.cols[d] = len(table.cols)
            for d in new_rows:
                table.rows[d] = np.full(n_cols, np.nan)
        n_cols = len(table.cols)
        col = np.fromiter((table.cols.get(d, -1) for d in context), dtype=np.int64, count=len(context))
        known = np.flatnonzero(col >= 0)
        if not known.size:
            return
        for i, d in enumerate(queries):
            row = table.rows.get(d)
            if row is None:
                continue
            if row.size < n_cols:  # columns came after this row was made
                row = table.rows[d] = np.concatenate([row, np.full(n_cols - row.size, np.nan)])
            row[col[known]] = block[i, known]
        self.changes += 1


def _next_block(lanes: int, done: int, spent: float) -> int:
    """The queries of the next block: as many rounds of ``lanes`` queries (computed at once) as fit in
    :data:`~chorustic.methods.cost.PAIR_BLOCK_S` at the pace measured (``done`` queries in ``spent`` s)."""
    round_s = spent / done * lanes
    return lanes * max(1, int(PAIR_BLOCK_S / max(round_s, 1e-9)))


def _write_member(zf: zipfile.ZipFile, name: str, arr: np.ndarray) -> None:
    """Write ``arr`` as member ``name.npy`` of the memo file open for writing in ``zf``."""
    with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array(f, arr, allow_pickle=False)


def _readable_key(key, *, parsed: bool = False):
    """``key`` (or, ``parsed``: the key its text gives) when its ``repr`` reads back as the same key; else None."""
    try:
        value = ast.literal_eval(key) if parsed else key
        return value if ast.literal_eval(repr(value)) == value and hash(value) is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _read_header(f) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype of the ``.npy`` member open in ``f`` (C order only), read up to its data."""
    version = np.lib.format.read_magic(f)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise ValueError(f".npy format {version}")
    shape, fortran, dtype = readers[version](f)
    if fortran:
        raise ValueError("a Fortran-ordered array")
    return tuple(int(n) for n in shape), dtype


def _read_member(zf: zipfile.ZipFile, name: str, ndim: int, dtype: np.dtype | None, max_bytes: int) -> np.ndarray:
    """Member ``name`` of ``zf``, checked by its header before its data is read: ``ndim`` dimensions (0: a
    scalar), ``dtype`` (None: text) and at most ``max_bytes``."""
    with zf.open(f"{name}.npy") as f:
        shape, found = _read_header(f)
        if len(shape) != ndim or (dtype is not None and found != dtype) or (dtype is None and found.kind != "U"):
            raise ValueError(f"{name} is {found} {shape}, not a pair memo's")
        if int(np.prod(shape, dtype=np.float64)) * found.itemsize > max_bytes:
            raise ValueError(f"{name} holds more than the memo's bound")
        f.seek(0)
        return np.lib.format.read_array(f, allow_pickle=False)


def _digest_array(digests: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(len(digests), -1)


#: The evaluation worker's memo (one job per worker process).
PAIR_MEMO = PairMemo()
