"""The performance measures of a run, computed from its prediction file (no re-run): one home for their
names, definitions and direction.

The names are aeon's (``aeon.benchmarking.results_loaders.VALID_RESULT_MEASURES["classification"]``), so
``results/metrics.csv``, ``reports.metrics`` and the aeon result trees of the report speak one language:

=============  =======================================================================  ===============
name           definition (scikit-learn, on the encoded labels 0..K-1 and probabilities)  better
=============  =======================================================================  ===============
``accuracy``   fraction of test cases whose arg-max class is the true class (the paper's)  higher
``balacc``     balanced accuracy: mean recall over the classes present in the test split  higher
``f1``         macro F1 over the classes that occur as true or predicted labels            higher
``auroc``      one-vs-rest AUROC, macro mean over the classes present in the test split    higher
               (binary: the AUROC of class 1's probability)
``logloss``    cross-entropy of the true class under the probabilities (K classes)        lower
=============  =======================================================================  ===============

tsml-eval's ``ClassifierResults`` computes accuracy, balanced accuracy and log loss the same way; its F1
and AUROC are *weighted* by class frequency (binary F1: of the minority class), where these are macro
means, which weigh every class alike and so do not flatter a majority-class guesser on an imbalanced
dataset. AUROC leaves out a class without a test case (its one-vs-rest AUROC is undefined); a test split
with a single class has none (``nan``).

``results/metrics.csv`` (:data:`METRIC_COLUMNS`, written by the aggregate step with ``accuracies.csv``,
:func:`metrics_frame`) is long: one row per run and measure, for every ``ok`` run (all measures, from its
prediction file) and every reported run (the measures it reports: accuracy).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

__all__ = ["Metric", "METRICS", "DEFAULT_METRICS", "METRIC_COLUMNS", "compute_metrics", "metrics_frame",
           "metric_values", "read_metrics", "unknown_metrics"]


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    label: str
    """the name tables print"""
    higher_is_better: bool
    percent: bool
    """printed as a percentage (a fraction of test cases or of classes); log loss is printed as is"""
    compute: Callable[[np.ndarray, np.ndarray, int], float]
    """``(y_true, proba, n_classes) -> value``"""


# Each measure in numpy: scikit-learn's functions give the same values (tests/test_evaluation_metrics.py checks
# them against sklearn.metrics) but spend ~3 ms each on input validation, 17 ms a prediction file for the five,
# which on the paper profile's 37,560 files would be 10 minutes of the aggregate step.


def _accuracy(y, p, k):
    return float(np.mean(p.argmax(axis=1) == y)) if len(y) else float("nan")


def _confusion(y, pred, k):
    return np.bincount(y * k + pred, minlength=k * k).reshape(k, k)


def _balacc(y, p, k):
    """sklearn.metrics.balanced_accuracy_score: mean recall over the classes present in the test split."""
    if not len(y):
        return float("nan")
    cm = _confusion(y, p.argmax(axis=1), k)
    support = cm.sum(axis=1)
    present = support > 0
    return float(np.mean(np.diag(cm)[present] / support[present]))


def _f1(y, p, k):
    """sklearn.metrics.f1_score(average="macro", zero_division=0) over the labels that occur in y or the
    predictions."""
    if not len(y):
        return float("nan")
    cm = _confusion(y, p.argmax(axis=1), k)
    tp, true_n, pred_n = np.diag(cm), cm.sum(axis=1), cm.sum(axis=0)
    labels = (true_n + pred_n) > 0
    return float(np.mean(2 * tp[labels] / (true_n[labels] + pred_n[labels])))


def _auroc(y, p, k):
    """One-vs-rest AUROC (sklearn.metrics.roc_auc_score per class, ties counted half: the Mann-Whitney U),
    macro mean over the classes present in the test split; binary: class 1's."""
    import scipy.stats

    present = np.unique(y)
    if len(present) < 2:
        return float("nan")
    classes = [1] if k == 2 else list(present)
    ranks = scipy.stats.rankdata(p[:, classes], axis=0)
    aucs = []
    for j, c in enumerate(classes):
        pos = y == c
        n_pos, n_neg = int(pos.sum()), int((~pos).sum())
        aucs.append((ranks[pos, j].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    return float(np.mean(aucs))


def _logloss(y, p, k):
    """sklearn.metrics.log_loss(labels=range(K)): probabilities clipped to [eps, 1 - eps] (float64 eps)."""
    if not len(y):
        return float("nan")
    eps = np.finfo(np.float64).eps
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], eps, 1 - eps))))


#: Every measure, in the order tables show them.
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("accuracy", "Accuracy", True, True, _accuracy),
        Metric("balacc", "Balanced accuracy", True, True, _balacc),
        Metric("f1", "Macro F1", True, True, _f1),
        Metric("auroc", "AUROC (one-vs-rest, macro)", True, True, _auroc),
        Metric("logloss", "Log loss", False, False, _logloss),
    )
}

#: ``reports.metrics`` when not set: the paper's measure.
DEFAULT_METRICS = ("accuracy",)

#: Columns of ``results/metrics.csv``.
METRIC_COLUMNS = ["method", "archive", "dataset", "protocol", "family", "budget", "seed", "reported", "metric",
                  "value"]


def unknown_metrics(names) -> list[str]:
    return [n for n in names if n not in METRICS]


def compute_metrics(y_true: np.ndarray, proba: np.ndarray, n_classes: int | None = None) -> dict[str, float]:
    """Every measure of one prediction file's labels and probabilities."""
    y = np.asarray(y_true, dtype=np.int64)
    p = np.asarray(proba, dtype=np.float64)
    k = int(n_classes if n_classes is not None else p.shape[1])
    return {name: m.compute(y, p, k) for name, m in METRICS.items()}


def metrics_frame(runs: pd.DataFrame, results_dir: str | os.PathLike) -> tuple[pd.DataFrame, list[str]]:
    """The long table of :data:`METRIC_COLUMNS` for the rows of ``accuracies.csv`` (``runs``), reading each
    ``ok`` run's prediction file under ``results_dir``; and one line per run whose file cannot be read (its
    accuracy row stays; it has no other measure)."""
    from chorustic.evaluation.results import ResultFileError, read_result_file, resolve_result_file

    keys = [c for c in METRIC_COLUMNS if c not in ("metric", "value")]
    out, problems = [], []
    for row in runs.itertuples(index=False):
        base = {k: getattr(row, k) for k in keys}
        if row.status == "reported":
            out.append({**base, "metric": "accuracy", "value": float(row.accuracy)})
            continue
        if row.status != "ok":
            continue
        values = None
        stored = getattr(row, "result_file", None)
        if isinstance(stored, str) and stored:
            try:
                rf = read_result_file(resolve_result_file(stored, results_dir))
                values = compute_metrics(rf.y_true, rf.proba, rf.n_classes)
            except (ResultFileError, ValueError) as exc:
                problems.append(f"{row.method}/{row.dataset} {row.protocol} seed {row.seed}: no measures but "
                                f"accuracy ({exc})")
        if values is None:
            values = {"accuracy": float(row.accuracy)}
        out += [{**base, "metric": name, "value": v} for name, v in values.items()]
    frame = pd.DataFrame(out, columns=METRIC_COLUMNS)
    return frame, problems


def metric_values(runs: pd.DataFrame, metrics: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``runs`` (the rows of ``accuracies.csv``) with the ``accuracy`` column holding ``metric`` instead, so
    that :func:`chorustic.reports.accuracies.build_matrices` makes its matrices. Reported methods report
    accuracy only and are left out of every other measure; a run whose prediction file could not be read
    becomes ``absent`` (a missing cell, never imputed)."""
    if metric == "accuracy":
        return runs
    key = ["method", "archive", "dataset", "protocol", "seed"]
    m = metrics[metrics["metric"] == metric][key + ["value"]]
    merged = runs[~runs["reported"].astype(bool)].merge(m, on=key, how="left")
    has = merged["value"].notna()
    measured = merged["status"].isin(["ok", "reported"])
    merged = merged[has | ~measured].copy()
    merged["accuracy"] = merged["value"]
    return merged.drop(columns="value")


def read_metrics(path: str | os.PathLike) -> pd.DataFrame:
    df = pd.read_csv(Path(path), dtype={"seed": int})
    missing = [c for c in METRIC_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; re-make it with `chorustic aggregate`")
    df["reported"] = df["reported"].astype(str).str.lower().isin(["true", "1"])
    return df
