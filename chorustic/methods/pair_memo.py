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
contexts long.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from chorustic.methods.cost import PAIR_MEMO_MB

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

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self._tables.values())

    def clear(self) -> None:
        self._tables.clear()

    def take_counts(self) -> dict[str, int]:
        """The pairs computed and reused since the last call (what a context reports in its run record)."""
        out = {"distances_computed": int(self.computed), "distances_reused": int(self.reused)}
        self.computed = self.reused = 0
        return out

    def distances(self, key: Hashable, queries: Sequence[bytes], context: Sequence[bytes],
                  compute: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """The (len(queries), len(context)) distances of the series with these digests.

        ``compute(qi, ci)`` returns the float distances of queries ``qi`` (positions in ``queries``) to context
        series ``ci`` (positions in ``context``), a ``(len(qi), len(ci))`` matrix."""
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
            block = np.asarray(compute(qi, ci), dtype=np.float64)
            if block.shape != (qi.size, ci.size):
                raise ValueError(f"PairMemo: compute returned {block.shape}, expected {(qi.size, ci.size)}")
            out[np.ix_(qi, ci)] = block
            self.computed += int(block.size)
            self._keep(table, [queries[i] for i in qi], [context[j] for j in ci], block)
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


#: The evaluation worker's memo (one job per worker process).
PAIR_MEMO = PairMemo()
