"""Prediction files in the tsml-eval format, one per (protocol, method, dataset, seed).

Path: ``results/<protocol>/<method>/Predictions/<dataset>/testResample<seed>.csv``.

Layout (the format of tsml-eval's ``write_classification_results``, readable by its loaders)::

    line 1  <dataset>,<method>,TEST,<seed>,MILLISECONDS,<description>
    line 2  parameter info: one JSON object (method parameters, class labels, context, provenance)
    line 3  <accuracy>,<fit_time>,<predict_time>,<benchmark_time>,<memory_bytes>,<n_classes>,,-1,-1
    line 4+ <true>,<predicted>,,<p_0>,<p_1>,...,<p_{K-1}>

Labels are the encoded class indices ``0..K-1``; ``class_labels`` in line 2 maps them back to the
archive's labels. Times are integer milliseconds; memory is the peak resident set size of the
evaluating process in bytes. Files are written atomically.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from chorustic.io import atomic_write_text
# the results folder's layout has its own home; re-exported here, where readers of prediction files look
from chorustic.results_layout import (  # noqa: F401
    accuracies_file,
    metrics_file,
    resolve_result_file,
    result_path,
    stored_result_file,
)

__all__ = ["accuracies_file", "metrics_file", "result_path", "stored_result_file", "resolve_result_file", "write_result_file",
           "read_result_file", "ResultFile", "ResultFileError"]


class ResultFileError(ValueError):
    """A prediction file is malformed (the message names the file and the problem)."""


@dataclasses.dataclass
class ResultFile:
    dataset: str
    method: str
    seed: int
    description: str
    info: dict[str, Any]
    accuracy: float
    fit_time_ms: int
    predict_time_ms: int
    memory_bytes: int
    n_classes: int
    y_true: np.ndarray
    y_pred: np.ndarray
    proba: np.ndarray


def write_result_file(
    path: str | os.PathLike,
    *,
    dataset: str,
    method: str,
    seed: int,
    y_true: np.ndarray,
    proba: np.ndarray,
    fit_time_s: float,
    predict_time_s: float,
    memory_bytes: int,
    info: dict[str, Any],
    description: str = "",
) -> float:
    """Write one prediction file atomically; return the accuracy it records.

    ``proba`` is ``(n_test, K)`` over the dataset's K classes; predictions are its row-wise argmax
    (first maximum on ties, as ``numpy.argmax``).
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[0] != y_true.shape[0]:
        raise ValueError(f"{dataset}/{method}: probabilities of shape {proba.shape} for {len(y_true)} test labels")
    if not np.all(np.isfinite(proba)):
        raise ValueError(f"{dataset}/{method}: non-finite class probabilities")
    y_pred = proba.argmax(axis=1)
    accuracy = float(np.mean(y_pred == y_true)) if len(y_true) else float("nan")
    if "," in description or "\n" in description:
        raise ValueError("description must not contain commas or newlines")
    lines = [
        f"{dataset},{method},TEST,{int(seed)},MILLISECONDS,{description}",
        json.dumps(info, sort_keys=True, separators=(",", ":"), default=_default),
        f"{accuracy!r},{int(round(fit_time_s * 1000))},{int(round(predict_time_s * 1000))},-1,"
        f"{int(memory_bytes)},{proba.shape[1]},,-1,-1",
    ]
    lines += [f"{t},{p},," + ",".join(repr(float(v)) for v in row) for t, p, row in zip(y_true, y_pred, proba)]
    atomic_write_text(path, "\n".join(lines) + "\n")  # its size known: a full disk names the space it needs
    return accuracy


def _default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return repr(o)


def read_result_file(path: str | os.PathLike) -> ResultFile:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ResultFileError(f"cannot read result file {path}: {exc}") from exc
    if len(lines) < 3:
        raise ResultFileError(f"result file {path} has {len(lines)} lines; a tsml file has at least 3 header lines")
    head = lines[0].split(",", 5)
    if len(head) < 5 or head[2] != "TEST":
        raise ResultFileError(f"result file {path}: line 1 is not a tsml header: {lines[0][:120]!r}")
    try:
        info = json.loads(lines[1])
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"result file {path}: line 2 is not JSON parameter info ({exc})") from exc
    third = lines[2].split(",")
    try:
        accuracy, fit_ms, pred_ms, mem, n_classes = (float(third[0]), int(third[1]), int(third[2]),
                                                      int(third[4]), int(third[5]))
        y_true, y_pred, proba = _prediction_lines([ln for ln in lines[3:] if ln], n_classes)
    except (ValueError, IndexError) as exc:
        raise ResultFileError(f"result file {path}: malformed accuracy or prediction lines ({exc})") from exc
    return ResultFile(
        dataset=head[0], method=head[1], seed=int(head[3]), description=head[5] if len(head) > 5 else "",
        info=info, accuracy=accuracy, fit_time_ms=fit_ms, predict_time_ms=pred_ms, memory_bytes=mem,
        n_classes=n_classes, y_true=y_true, y_pred=y_pred, proba=proba,
    )


def _prediction_lines(body: list[str], n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``<true>,<predicted>,,<p_0>,...,<p_{K-1}>`` lines: two whole-number labels and ``K`` probabilities each.

    numpy's C reader parses them: the values Python's ``float`` gives, at 1.5x the speed of splitting them in
    Python (47 against 31 MB/s on the paper profile's files; the reference-results check reads both prediction
    files of every run). It takes the columns it is asked for, so a line with more is caught by its count of
    commas, and a label must be a whole number."""
    width = n_classes + 3
    for i, line in enumerate(body):
        if line.count(",") != width - 1:
            raise ValueError(f"prediction line {i + 1} has {line.count(',') + 1} fields, not {width}")
    if not body:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty((0, n_classes))
    values = np.loadtxt(body, delimiter=",", usecols=[0, 1, *range(3, width)], ndmin=2, comments=None)
    labels = values[:, :2]
    if not np.all(np.abs(labels) < 2**53) or np.any(labels != np.trunc(labels)):
        raise ValueError("a label is not a whole number")
    return labels[:, 0].astype(np.int64), labels[:, 1].astype(np.int64), np.ascontiguousarray(values[:, 2:])
