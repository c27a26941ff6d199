"""Collect run manifests into the tidy ``results/accuracies.csv`` (one row per run).

Columns: ``method, display_name, group, fits_on_target, reported, archive, dataset, protocol, family,
budget, seed, status, accuracy, n_context, n_test, n_classes, fit_time_s, predict_time_s,
peak_memory_mb, device, error, result_file``. ``device`` is where the job ran (``cpu``, ``cuda``). ``status`` is ``ok`` | ``failed`` | ``ineligible`` |
``reported``; ``accuracy`` is empty unless ``ok`` or ``reported``. Failed runs stay in the table
with their reason: reports show them as missing, never drop or impute them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

import pandas as pd

from chorustic.io import atomic_open

__all__ = ["COLUMNS", "aggregate_manifests", "write_accuracies", "PROTOCOL_ORDER"]

COLUMNS = [
    "method", "display_name", "group", "fits_on_target", "reported", "archive", "dataset", "protocol",
    "family", "budget", "seed", "status", "accuracy", "n_context", "n_test", "n_classes", "fit_time_s",
    "predict_time_s", "peak_memory_mb", "device", "error", "result_file",
]

PROTOCOL_ORDER = ["full", "fixed5", "fixed10", "prop20", "prop30", "prop40", "prop50", "prop60"]


def _protocol_key(p: str) -> tuple[int, str]:
    return (PROTOCOL_ORDER.index(p), p) if p in PROTOCOL_ORDER else (len(PROTOCOL_ORDER), p)


def aggregate_manifests(paths: Iterable[str | os.PathLike], metadata: dict[str, dict] | None = None,
                        relative_to: str | os.PathLike | None = None) -> pd.DataFrame:
    """Rows of every run in the given manifests.

    ``metadata`` (method run name -> dict with display_name, group, fits_on_target, reported) fills
    fields a manifest lacks (a manifest the supervisor finished after its worker died early).
    """
    metadata = metadata or {}
    rows = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        meta = {**metadata.get(doc["method"], {}), **{k: doc[k] for k in
                ("display_name", "group", "fits_on_target", "reported") if doc.get(k) is not None}}
        for run in doc["runs"]:
            result_file = run.get("result_file")
            if result_file and relative_to is not None:
                try:
                    result_file = os.path.relpath(result_file, relative_to)
                except ValueError:
                    pass
            rows.append({
                "method": doc["method"],
                "display_name": meta.get("display_name", doc["method"]),
                "group": meta.get("group"),
                "fits_on_target": meta.get("fits_on_target"),
                "reported": bool(meta.get("reported", False)),
                "archive": doc["archive"],
                "dataset": doc["dataset"],
                "protocol": run["protocol"],
                "family": run["family"],
                "budget": run.get("budget"),
                "seed": run["seed"],
                "status": run["status"],
                "accuracy": run.get("accuracy"),
                "n_context": run.get("n_context"),
                "n_test": run.get("n_test"),
                "n_classes": run.get("n_classes"),
                "fit_time_s": run.get("fit_time_s"),
                "predict_time_s": run.get("predict_time_s"),
                "peak_memory_mb": run.get("peak_memory_mb"),
                "device": doc.get("device") if run.get("status") == "ok" else None,
                "error": run.get("error"),
                "result_file": result_file,
            })
    df = pd.DataFrame(rows, columns=COLUMNS)
    if len(df):
        df["_p"] = df["protocol"].map(_protocol_key)
        df = df.sort_values(["archive", "dataset", "method", "_p", "seed"], kind="mergesort").drop(columns="_p")
        df = df.reset_index(drop=True)
    for col in ("budget", "seed", "n_context", "n_test", "n_classes"):
        df[col] = df[col].astype("Int64")
    return df


def write_accuracies(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write the table atomically; accuracies keep full precision."""
    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        df.to_csv(fh, index=False, float_format=None)
