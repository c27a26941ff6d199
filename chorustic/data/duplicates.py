"""The leakage audit of a dataset's own splits: test series identical to a training series.

Some archive datasets hold series that occur in both their training and their test split; a method that
memorises the context then scores them for free. The audit compares the series as every method receives
them (after the harness's preprocessing: resampled to 512 with linear interpolation, missing values filled
with 0, float32), bit for bit (``-0.0`` counted equal to ``0.0``), through a hash of each series' bytes.

One record per dataset, ``results/audit/<dataset>.json`` (:func:`audit_dataset`, written by ``chorustic
audit``, the workflow's ``audit`` rule); the aggregate step collects every record of the results folder
into ``results/audit/duplicates.csv`` (:func:`duplicates_table`, :data:`DUPLICATE_COLUMNS`), and the
report says how many datasets are affected.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["AUDIT_FORMAT", "DUPLICATE_COLUMNS", "audit_path", "train_test_duplicates", "audit_dataset",
           "write_audit", "duplicates_table", "duplicates_file"]

AUDIT_FORMAT = 1
#: Columns of ``results/audit/duplicates.csv``: one row per dataset audited.
DUPLICATE_COLUMNS = ["archive", "dataset", "n_train", "n_test", "n_test_duplicated", "n_same_label",
                     "n_other_label", "fraction_duplicated", "examples"]
#: How many (test, train) index pairs a record lists.
EXAMPLES = 10


def audit_path(results_dir: str | os.PathLike, dataset: str) -> Path:
    return Path(results_dir) / "audit" / f"{dataset}.json"


def duplicates_file(results_dir: str | os.PathLike) -> Path:
    return Path(results_dir) / "audit" / "duplicates.csv"


def _digests(X: np.ndarray) -> list[bytes]:
    flat = np.ascontiguousarray(np.asarray(X, dtype=np.float32).reshape(len(X), -1)) + np.float32(0.0)  # -0 -> +0
    return [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in flat]


def train_test_duplicates(X_train, y_train, X_test, y_test) -> dict[str, Any]:
    """Test series whose values equal a training series' exactly: how many, how many of them with the same
    label and with another one, and the first (test index, train index) pairs."""
    train: dict[bytes, int] = {}
    for i, d in enumerate(_digests(X_train)):
        train.setdefault(d, i)
    pairs = [(j, train[d]) for j, d in enumerate(_digests(X_test)) if d in train]
    same = sum(int(y_test[j] == y_train[i]) for j, i in pairs)
    return {
        "n_train": int(len(X_train)),
        "n_test": int(len(X_test)),
        "n_test_duplicated": len(pairs),
        "n_same_label": same,
        "n_other_label": len(pairs) - same,
        "examples": [[int(j), int(i)] for j, i in pairs[:EXAMPLES]],
    }


def audit_dataset(ds) -> dict[str, Any]:
    """The audit record of a loaded :class:`~chorustic.data.loading.TimeSeriesDataset`."""
    return {"format": AUDIT_FORMAT, "dataset": ds.name, "archive": ds.archive,
            "representation": "resampled", "settings": ds.settings,
            **train_test_duplicates(ds.X_train, ds.y_train, ds.X_test, ds.y_test)}


def write_audit(record: dict[str, Any], path: str | os.PathLike) -> None:
    from chorustic.io import atomic_write_json

    atomic_write_json(Path(path), record)


def duplicates_table(results_dir: str | os.PathLike, datasets=None) -> pd.DataFrame | None:
    """Every audit record under ``results_dir/audit`` (only ``datasets`` when given) as one table; None when
    there is none. A record that cannot be read is left out (its dataset is then not audited)."""
    folder = Path(results_dir) / "audit"
    if not folder.is_dir():
        return None
    rows = []
    for f in sorted(folder.glob("*.json")):
        if datasets is not None and f.stem not in datasets:
            continue
        try:
            r = json.loads(f.read_text(encoding="utf-8"))
            rows.append({**{k: r[k] for k in DUPLICATE_COLUMNS if k not in ("fraction_duplicated", "examples")},
                         "fraction_duplicated": r["n_test_duplicated"] / r["n_test"] if r["n_test"] else 0.0,
                         "examples": " ".join(f"{j}:{i}" for j, i in r["examples"])})
        except (OSError, ValueError, KeyError, TypeError):
            continue
    if not rows:
        return None
    return pd.DataFrame(rows, columns=DUPLICATE_COLUMNS)
