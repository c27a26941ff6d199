"""Results in the formats the field's tools read.

* **aeon** (``aeon.benchmarking.results_loaders``, 1.6): ``get_estimator_results(estimators,
  datasets, num_resamples, path=P)`` reads ``P/classification/accuracy/<EST>_accuracy.csv``: a header
  row ``Resamples:,0,1,...``, then one row per dataset with one accuracy per resample. It looks the
  estimator name up in ``NAME_ALIASES`` and rejects names it does not know. This module writes one
  such tree per protocol, ``<reports>/aeon/<protocol>/classification/accuracy/``, with the context sets
  (seeds) as resamples; ``<EST>`` is aeon's standard name when the method's display name is one aeon
  knows (MiniRocket -> ``MiniROCKET``, MultiRocket-Hydra -> ``MR-Hydra``, QUANT, 1NN-DTW), else the
  run name (``chorustic``, ``mantis_rf``), which aeon's public loader refuses: read those files with
  pandas (``pd.read_csv(f, index_col=0)``). The other measures of ``results/metrics.csv`` go in the
  sibling folders aeon reads with ``measure=``: ``balacc``, ``f1``, ``auroc``, ``logloss`` (macro F1 and
  macro AUROC, where the published tsml-eval files weigh by class frequency:
  :mod:`chorustic.evaluation.metrics`). A row is written only for a dataset where every context
  set of the protocol has a result (aeon raises on missing resamples); reported methods ("reported,
  not reproduced") are not written.
* **tsml-eval** reads the prediction files themselves (``results/<protocol>/<method>/Predictions/
  <dataset>/testResample<seed>.csv``): ``load_classifier_results(file)`` for one file, or
  ``evaluate_classifiers_by_problem(results/<protocol>, methods, datasets, seeds, ...)`` for a set.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chorustic.io import atomic_write_text

__all__ = ["AEON_SUBDIR", "aeon_estimator_names", "aeon_accuracy_tables", "write_aeon_results"]

#: ``<path>`` below which aeon's loader finds ``classification/accuracy/<EST>_accuracy.csv``, per protocol.
AEON_SUBDIR = "aeon"


def _aeon_alias(name: str) -> str | None:
    from aeon.benchmarking.results_loaders import estimator_alias

    try:
        return estimator_alias(name)
    except ValueError:
        return None


def aeon_estimator_names(meta: pd.DataFrame) -> dict[str, str]:
    """Run name -> file name ``<EST>``: aeon's standard name for a display name aeon knows, else the run
    name (also when two runs would share one aeon name)."""
    alias = {m: _aeon_alias(str(meta.loc[m, "display_name"])) for m in meta.index}
    counts = pd.Series([a for a in alias.values() if a]).value_counts()
    return {m: a if a and counts[a] == 1 else m for m, a in alias.items()}


def aeon_accuracy_tables(df: pd.DataFrame, meta: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """(protocol, run name) -> datasets x seeds accuracies of the complete cells (all of the protocol's
    context sets of that archive have an ``ok`` run); reported methods are left out."""
    out = {}
    ok = df[(df["status"] == "ok") & ~df["reported"].astype(bool)]
    run_rows = df[~df["reported"].astype(bool) & (df["status"] != "ineligible")]
    for (protocol, method), g in ok.groupby(["protocol", "method"], sort=True):
        wide = g.pivot_table(index="dataset", columns="seed", values="accuracy", aggfunc="first")
        keep = []
        for dataset, row in wide.iterrows():
            archive = g.loc[g["dataset"] == dataset, "archive"].iloc[0]
            expected = set(
                run_rows.loc[(run_rows["archive"] == archive) & (run_rows["protocol"] == protocol), "seed"]
            )
            have = set(row.dropna().index)
            if expected and expected <= have:
                keep.append(dataset)
        table = wide.loc[sorted(keep)]
        table = table.loc[:, table.notna().any(axis=0)]
        if len(table):
            out[(protocol, method)] = table
    return out


def write_aeon_results(
    df: pd.DataFrame, meta: pd.DataFrame, out_dir: str | Path, measures: pd.DataFrame | None = None
) -> list[Path]:
    """Write ``<out_dir>/<protocol>/classification/<measure>/<EST>_<measure>.csv`` for every protocol and
    method: accuracy from ``df``, and with ``measures`` (``results/metrics.csv``) every other measure of
    :mod:`chorustic.evaluation.metrics` (their names are aeon's: ``get_estimator_results(..., measure=
    "balacc")`` reads them); the same complete cells as accuracy. Return the paths."""
    from chorustic.evaluation.metrics import METRICS, metric_values

    names = aeon_estimator_names(meta)
    written = []
    present = set(measures["metric"]) if measures is not None and len(measures) else set()
    for measure in [m for m in METRICS if m == "accuracy" or m in present]:
        rows = df if measure == "accuracy" else metric_values(df, measures, measure)
        for (protocol, method), table in aeon_accuracy_tables(rows, meta).items():
            path = Path(out_dir) / protocol / "classification" / measure / f"{names[method]}_{measure}.csv"
            seeds = [int(s) for s in table.columns]
            lines = ["Resamples:," + ",".join(str(s) for s in seeds)]
            for dataset, row in table.iterrows():
                lines.append(f"{dataset}," + ",".join("" if pd.isna(v) else repr(float(v)) for v in row))
            atomic_write_text(path, "\n".join(lines) + "\n")
            written.append(path)
    return written
