"""Where a results folder keeps what: the one home of its layout (prediction files, run manifests, the run and
measure tables), read by the workflow's rules (``workflow/rules/common.smk``), the evaluation jobs, the aggregate
step and the reports alike. Paths only: no reading or writing here.

    <results>/<protocol>/<method>/Predictions/<dataset>/testResample<seed>.csv   a prediction file
    <results>/runs/<method>/<dataset>.json                                      a finished job's manifest
    <results>/runs/<method>/<dataset>.failed.json                               a job with failed runs
    <results>/runs/<method>/.<dataset>.progress.json                            a job's finished contexts so far
    <results>/contexts/<dataset>.json                                           every protocol's context indices
    <results>/accuracies.csv, <results>/metrics.csv                            the run and measure tables
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["result_path", "stored_result_file", "resolve_result_file", "accuracies_file", "metrics_file",
           "manifest_path", "progress_path", "failure_record_path", "contexts_path"]


def result_path(results_dir: str | os.PathLike, protocol: str, method: str, dataset: str, seed: int) -> Path:
    return Path(results_dir) / protocol / method / "Predictions" / dataset / f"testResample{int(seed)}.csv"


def stored_result_file(path: str | os.PathLike, results_dir: str | os.PathLike) -> str:
    """How manifests and ``accuracies.csv`` record a prediction file (and a prediction file its context
    file): its path relative to the results folder (``full/<method>/Predictions/<dataset>/testResample0.csv``,
    ``contexts/<dataset>.json``), so that a results folder moved, copied or rsynced from a cluster reads its
    own files, never the original's."""
    path, results_dir = Path(path), Path(results_dir)
    try:
        return path.relative_to(results_dir).as_posix()
    except ValueError:
        try:
            return Path(os.path.relpath(path.resolve(), results_dir.resolve())).as_posix()
        except ValueError:  # another drive (Windows): only an absolute path can say where it is
            return str(path)


def resolve_result_file(stored: str | os.PathLike, results_dir: str | os.PathLike) -> Path:
    """The prediction file a manifest's ``result_file`` names, in the results folder ``results_dir``
    (the one holding the manifest). A path recorded by an older harness (absolute, or relative to the
    working directory) is read in ``results_dir`` by its place in the layout
    (``<protocol>/<method>/Predictions/<dataset>/<file>``), never in the folder it was copied from."""
    p = Path(stored)
    parts = p.parts
    if len(parts) > 5 and parts[-3] == "Predictions":
        return Path(results_dir).joinpath(*parts[-5:])
    return p if p.is_absolute() else Path(results_dir) / p


def accuracies_file(results: str | os.PathLike) -> Path:
    """The run table (``accuracies.csv``) of a results folder, or ``results`` itself when it names a ``.csv``."""
    results = Path(results)
    return results if results.suffix == ".csv" else results / "accuracies.csv"


def metrics_file(accuracies: str | os.PathLike) -> Path:
    """The measures table written beside a run table: ``metrics.csv`` beside ``accuracies.csv``
    (``<name>.metrics.csv`` beside a table of another name); :mod:`chorustic.evaluation.metrics`."""
    table = accuracies_file(accuracies)
    return table.with_name("metrics.csv" if table.name == "accuracies.csv" else f"{table.stem}.metrics.csv")


def manifest_path(results_dir: str | os.PathLike, method: str, dataset: str) -> Path:
    return Path(results_dir) / "runs" / method / f"{dataset}.json"


def progress_path(results_dir: str | os.PathLike, method: str, dataset: str) -> Path:
    return Path(results_dir) / "runs" / method / f".{dataset}.progress.json"


def failure_record_path(results_dir: str | os.PathLike, method: str, dataset: str) -> Path:
    """Where a job with failed runs leaves its manifest (never under the finished name)."""
    return Path(results_dir) / "runs" / method / f"{dataset}.failed.json"


def contexts_path(results_dir: str | os.PathLike, dataset: str) -> Path:
    """The context file of a dataset, shared by every method (:mod:`chorustic.protocols.contexts`)."""
    return Path(results_dir) / "contexts" / f"{dataset}.json"
