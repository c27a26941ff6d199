"""Collect run manifests into the tidy ``results/accuracies.csv`` (one row per run).

Columns: :data:`COLUMNS`. ``status`` is one of :data:`~chorustic.evaluation.job.RUN_STATUSES`
(``ok`` | ``failed`` | ``ineligible`` | ``reported``); ``device`` is where the job ran (``cpu``,
``cuda``); ``portable_numerics`` whether its predictions are the same on every x86-64 CPU with AVX2
(the manifest's ``numerics``, :mod:`chorustic.evaluation.numerics`; empty for manifests made before it
was recorded); ``accuracy`` is empty unless ``ok`` or
``reported``. Failed runs stay in the table with their reason: reports show them as missing, never
drop or impute them.

What is verified before a row is written (:func:`collect_runs`):

* every ``ok`` run's prediction file against the SHA-256 its manifest recorded: a missing or changed
  file makes the row ``failed`` with the reason, and a changed file is moved aside to
  ``<file>.corrupt`` so the workflow re-makes it;
* a manifest made on a stand-in (random data of a dataset's shape, :mod:`chorustic.data.standin`):
  its rows are ``failed``, never a result;
* with ``fingerprints`` (the current parameters and method code of each run), a manifest made with
  other parameters or code: its rows become ``failed`` ("stale"), never reported as results;
* with ``jobs`` (every job the configuration expects), a job without a finished manifest: its
  failure record's rows (``<dataset>.failed.json``), or one ``failed`` row per context saying why it
  did not run; a manifest made with another protocol selection (``chorustic evaluate --protocols``)
  contributes the runs the configuration selects, and a selected context it lacks is a ``failed``
  row; ``why_not_run(job)`` can say that a job's inputs are missing or were re-made after its
  manifest (then its manifest does not count either). One failing method or dataset never keeps the
  others out of the table.

The table is written atomically together with ``accuracies.csv.sha256`` (``sha256sum`` format), which
``chorustic report`` checks, so a truncated or edited table is an error naming the file.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from chorustic.evaluation.integrity import checksum_path, made_with_other_fingerprint, results_dir_of, set_aside
from chorustic.evaluation.results import resolve_result_file, stored_result_file
from chorustic import config as cc
from chorustic.errors import UserError
from chorustic.io import atomic_write_texts, sha256_bytes
from chorustic.protocols.base import protocol_sort_key
from chorustic.run_plan import UNKNOWN_GROUP, ExpectedJob, method_metadata  # noqa: F401 - the plan is their home

__all__ = [
    "COLUMNS",
    "REQUIRED_COLUMNS",
    "OPTIONAL_COLUMNS",
    "ManifestError",
    "ExpectedJob",
    "Collected",
    "read_manifest",
    "aggregate_manifests",
    "collect_configured",
    "collect_runs",
    "method_metadata",
    "write_accuracies",
]

#: Columns every reader needs (``chorustic report`` checks them), then the optional ones.
REQUIRED_COLUMNS = [
    "method",
    "display_name",
    "group",
    "fits_on_target",
    "reported",
    "archive",
    "dataset",
    "protocol",
    "family",
    "budget",
    "seed",
    "status",
    "accuracy",
]
OPTIONAL_COLUMNS = [
    "n_context",
    "n_test",
    "n_classes",
    "fit_time_s",
    "predict_time_s",
    "peak_memory_mb",
    "device",
    "portable_numerics",
    "benchmark_in_pretraining",
    "error",
    "result_file",
]
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS

class ManifestError(ValueError):
    """A run manifest cannot be read; the message names the file and what to do."""


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    from chorustic.evaluation.job import MANIFEST_FORMAT

    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ManifestError(
            f"the run manifest {path} is unreadable ({type(exc).__name__}: {exc}); it was truncated or edited. "
            "Delete it and run `snakemake` (or `chorustic evaluate`) again to re-make it."
        ) from None
    if (
        not isinstance(doc, dict)
        or doc.get("format") != MANIFEST_FORMAT
        or not isinstance(doc.get("runs"), list)
    ):
        raise ManifestError(
            f"{path} is not a chorustic run manifest (format {MANIFEST_FORMAT}); delete it and re-run"
        )
    return doc


def _rows(doc: dict[str, Any], metadata: dict[str, dict], base: Path | None) -> list[dict[str, Any]]:
    """The table's rows of one manifest; ``result_file`` relative to the results folder ``base``."""
    meta = {
        **metadata.get(doc["method"], {}),
        **{
            k: doc[k]
            for k in ("display_name", "group", "fits_on_target", "reported", "benchmark_in_pretraining")
            if doc.get(k) is not None
        },
    }
    numerics = doc.get("numerics")
    portable = numerics.get("portable") if isinstance(numerics, dict) else None
    rows = []
    for run in doc["runs"]:
        result_file = run.get("result_file")
        if result_file and base is not None:  # also a path an older harness recorded, read in this folder
            result_file = stored_result_file(resolve_result_file(result_file, base), base)
        rows.append(
            {
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
                "portable_numerics": portable if run.get("status") == "ok" else None,
                "benchmark_in_pretraining": meta.get("benchmark_in_pretraining"),
                "error": run.get("error"),
                "result_file": result_file,
            }
        )
    return rows


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=COLUMNS)
    if len(df):
        df["_p"] = df["protocol"].map(protocol_sort_key)
        df = df.sort_values(["archive", "dataset", "method", "_p", "seed"], kind="mergesort").drop(
            columns="_p"
        )
        df = df.reset_index(drop=True)
    for col in ("budget", "seed", "n_context", "n_test", "n_classes"):
        df[col] = df[col].astype("Int64")
    df["portable_numerics"] = df["portable_numerics"].astype("boolean")
    return df


def aggregate_manifests(
    paths: Iterable[str | os.PathLike],
    metadata: dict[str, dict] | None = None,
) -> pd.DataFrame:
    """Rows of every run in the given manifests, as recorded (no verification, see :func:`collect_runs`;
    but a stand-in's runs are ``failed``).

    ``metadata`` (method run name -> dict with display_name, group, fits_on_target, reported) fills
    fields a manifest lacks (a manifest the supervisor finished after its worker died early).
    """
    metadata = metadata or {}
    rows = []
    for path in paths:
        doc = read_manifest(path)
        _standin(doc, [])  # a stand-in's runs are never results, verified or not
        rows += _rows(doc, metadata, results_dir_of(path))
    return _frame(rows)


@dataclasses.dataclass
class Collected:
    table: pd.DataFrame
    problems: list[str]
    """One line per job that did not finish cleanly (failed runs, not run, stale, damaged files)."""
    unlisted: list[str] = dataclasses.field(default_factory=list)
    """``method/dataset`` of the manifests in the results folder that the configuration lists no job for
    (another run's results copied in, another dataset selection): not in the table."""


#: How a reason begins when the evaluation job itself did not finish (failed, or stopped with no error):
#: the finished contexts its progress record keeps are then said to be kept, not failed.
EVALUATION_FAILED = "the evaluation job failed"
EVALUATION_STOPPED = "the evaluation job was stopped"


def _kept_contexts(results_dir: str | os.PathLike, method: str, dataset: str) -> set[tuple[str, int]]:
    """``(protocol, seed)`` of the runs an unfinished job's progress record holds as finished (the next attempt
    keeps them when its inputs are unchanged)."""
    from chorustic.evaluation.job import progress_path

    try:
        doc = json.loads(progress_path(results_dir, method, dataset).read_text())
        return {(str(r["protocol"]), int(r["seed"])) for r in doc.get("runs", []) if r.get("status") == "ok"}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()


def _unfinished_runs(results_dir, job, reason: str) -> tuple[list[dict[str, Any]], str]:
    """The failed runs of a job that left no manifest, and its problem line: when the evaluation itself did
    not finish, the contexts it had finished are said to be kept for the next run, not to have failed."""
    kept = set()
    if reason.startswith((EVALUATION_FAILED, EVALUATION_STOPPED)):
        kept = _kept_contexts(results_dir, job.method, job.dataset) & {(c["protocol"], int(c["seed"]))
                                                                       for c in job.contexts}
    runs = []
    for c in job.contexts:
        if (c["protocol"], int(c["seed"])) in kept:
            runs.append(_failed_run(c, f"finished, kept for the next run, not counted: {reason}"))
        else:
            runs.append(_failed_run(c, reason))
    line = reason if not kept else (f"{reason}; {len(kept)} of its {len(job.contexts)} runs finished and are "
                                    "kept: the next run does only the others")
    return runs, line


class MixedResultsError(UserError):
    """The manifests of one method run in a results folder were made with different settings (parameters or
    plugin code): averaging them in one table would mix two methods."""


def refuse_mixed_settings(manifests: Iterable[Path]) -> None:
    """Raise :class:`MixedResultsError` when one method run's manifests record more than one fingerprint
    (parameters and plugin code), e.g. the results of two runs copied into one folder: a method's rows in a
    table come from one resolved run."""
    from chorustic.evaluation.integrity import fingerprint_text

    by_method: dict[str, dict[str, list[str]]] = {}
    seeds: dict[str, dict[tuple[int, ...], list[str]]] = {}  # protocol -> seed set -> jobs
    for path in manifests:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            recorded = doc.get("fingerprint")
        except (OSError, ValueError, AttributeError):
            continue  # an unreadable manifest is reported as such by the collection
        dataset = path.name.removesuffix(".json").removesuffix(".failed")
        if not doc.get("reported") and isinstance(doc.get("runs"), list):
            per: dict[str, set[int]] = {}
            for r in doc["runs"]:
                if isinstance(r, dict) and r.get("family") != "full" and r.get("protocol") is not None:
                    per.setdefault(str(r["protocol"]), set()).add(int(r.get("seed", 0)))
            for protocol, got in per.items():
                seeds.setdefault(protocol, {}).setdefault(tuple(sorted(got)), []).append(f"{path.parent.name}/{dataset}")
        if recorded is None:
            continue
        by_method.setdefault(path.parent.name, {}).setdefault(fingerprint_text(recorded), []).append(dataset)
    for protocol, sets in sorted(seeds.items()):
        if len(sets) < 2:
            continue
        parts = [f"seeds {list(s)} ({', '.join(sorted(jobs)[:3])}{f' and {len(jobs) - 3} more' if len(jobs) > 3 else ''})"
                 for s, jobs in sorted(sets.items())]
        raise MixedResultsError(
            f"results/runs/ holds {protocol} results of {len(sets)} different context sets: " + "; ".join(parts)
            + ". Every method of a table is averaged over the same context sets: aggregate with --config of the run "
            "whose results count, or keep one run's files in this folder")
    for method, settings in sorted(by_method.items()):
        if len(settings) < 2:
            continue
        parts = []
        for text, datasets in settings.items():
            fp = json.loads(text)
            params = ", ".join(f"{k}={v!r}" for k, v in sorted((fp.get("params") or {}).items())) or "no parameters"
            code = str(fp.get("code_sha256", ""))[:12]
            shown = ", ".join(sorted(datasets)[:3]) + (f" and {len(datasets) - 3} more" if len(datasets) > 3 else "")
            parts.append(f"{params}, code {code} ({shown})")
        raise MixedResultsError(
            f"results/runs/{method}/ holds results made with {len(settings)} different settings: "
            + "; ".join(parts) + ". One table row per method comes from one run: aggregate with --config of the "
            "run whose results count (the others are then stale rows), or keep one setting's files in this folder")


def _failed_run(ctx: dict[str, Any], error: str) -> dict[str, Any]:
    from chorustic.evaluation.job import run_record

    return run_record(ctx, status="failed", error=error)


def _quarantine(path: Path) -> Path | None:
    """Move a prediction file that no longer matches its manifest aside (it is the harness's own file)."""
    try:
        return set_aside(path, ".corrupt")  # an earlier .corrupt copy is kept (.2.corrupt, ...)
    except OSError:
        return None


def _verify(doc: dict[str, Any], problems: list[str], base: Path) -> None:
    from chorustic.evaluation.integrity import verify_result_file

    for run in doc["runs"]:
        if run.get("status") != "ok":
            continue
        problem = verify_result_file(run, full=True, base=base)
        if problem is None:
            continue
        if "SHA-256" in problem or "bytes" in problem:
            moved = _quarantine(resolve_result_file(run["result_file"], base))
            if moved is not None:
                problem += f"; moved aside to {moved.name}"
        run.update(
            status="failed",
            accuracy=None,
            result_file=None,
            error=f"{problem}; the next `snakemake` re-makes it",
        )
        problems.append(f"{doc['method']}/{doc['dataset']} {run['protocol']} seed {run['seed']}: {problem}")


def _match_contexts(doc: dict[str, Any], job: ExpectedJob, path: Path, problems: list[str]) -> None:
    """Keep the runs of the contexts the configuration selects for ``job``; a selected context the manifest
    lacks (it was made with another protocol selection) is a failed run. Reported methods copy published
    numbers: the runs of the protocols the configuration selects are kept (a protocol they do not report is
    not a failure)."""
    if doc.get("reported"):
        wanted = {c["protocol"] for c in job.contexts}
        doc["runs"] = [r for r in doc["runs"] if r.get("protocol") in wanted or r.get("status") == "failed"]
        return
    selected = [(c["protocol"], c["seed"]) for c in job.contexts]
    doc["runs"] = [r for r in doc["runs"] if (r.get("protocol"), r.get("seed")) in selected]
    have = {(r["protocol"], r["seed"]) for r in doc["runs"]}
    lacking = [c for c in job.contexts if (c["protocol"], c["seed"]) not in have]
    if lacking:
        why = (f"not run: {path} has no run of this context (the job ran another protocol selection, e.g. "
               "`chorustic evaluate --protocols`); the next `snakemake` re-makes the job")
        doc["runs"] += [_failed_run(c, why) for c in lacking]
        problems.append(f"{doc['method']}/{doc['dataset']}: {len(lacking)} selected context(s) not run ({why})")


def _stale(doc: dict[str, Any], fingerprint: str | None, problems: list[str]) -> None:
    if not made_with_other_fingerprint(doc, fingerprint):
        return
    why = (
        "stale: made with other parameters or method code than the configuration's; "
        "not re-made in this run (the next `snakemake` re-makes it)"
    )
    for run in doc["runs"]:
        if run.get("status") in ("ok", "reported"):
            run.update(status="failed", accuracy=None, result_file=None, error=why)
    problems.append(f"{doc['method']}/{doc['dataset']}: {why}")


def _standin(doc: dict[str, Any], problems: list[str]) -> None:
    """A job run on stand-in data (:mod:`chorustic.data.standin`) is never a result."""
    if not doc.get("standin"):
        return
    why = ("made on a stand-in (random data with the dataset's shape, for measuring cost): not a result; "
           "run the job on the real dataset")
    for run in doc["runs"]:
        if run.get("status") in ("ok", "reported"):
            run.update(status="failed", accuracy=None, error=why)
    problems.append(f"{doc['method']}/{doc['dataset']}: {why}")


def collect_runs(
    results_dir: str | os.PathLike,
    jobs: list[ExpectedJob] | None = None,
    *,
    metadata: dict[str, dict] | None = None,
    fingerprints: dict[str, str] | None = None,
    why_not_run: Callable[[ExpectedJob], str | None] | None = None,
) -> Collected:
    """Every run of ``jobs`` (default: every manifest and failure record under ``results_dir/runs``),
    verified as described in the module docstring. Never raises for a damaged or missing result."""
    from chorustic.evaluation.job import failure_record_path, manifest_path

    metadata = metadata or {}
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    if jobs is None:
        found = sorted(p for p in Path(results_dir).glob("runs/*/*.json") if not p.name.startswith("."))
        refuse_mixed_settings(found)
        pairs = {(p.parent.name, p.name.removesuffix(".json").removesuffix(".failed")) for p in found}
        targets = [(m, d, None) for m, d in sorted(pairs)]
    else:
        targets = [(j.method, j.dataset, j) for j in jobs]
    for method, dataset, job in targets:
        upstream = why_not_run(job) if (job is not None and why_not_run is not None) else None
        if upstream is not None:  # the dataset's files or contexts are being re-made: no result of it counts
            runs, line = _unfinished_runs(results_dir, job, upstream)
            problems.append(f"{method}/{dataset}: {line}")
            stub = {"method": method, "dataset": dataset, "archive": job.archive, "runs": runs}
            rows += _rows(stub, metadata, None)
            continue
        good = manifest_path(results_dir, method, dataset)
        bad = failure_record_path(results_dir, method, dataset)
        path = good if good.exists() else bad if bad.exists() else None
        doc = None
        reason = None
        if path is not None:
            try:
                doc = read_manifest(path)
            except ManifestError as exc:
                reason = str(exc)
        if doc is not None:
            if job is not None:
                _match_contexts(doc, job, path, problems)
            _verify(doc, problems, Path(results_dir))
            _stale(doc, (fingerprints or {}).get(method), problems)
            _standin(doc, problems)
            if path == bad:
                failed = [r for r in doc["runs"] if r.get("status") == "failed"]
                first = failed[0].get("error") if failed else "failed"
                problems.append(
                    f"{method}/{dataset}: {len(failed)} of {len(doc['runs'])} runs failed (e.g. {first})"
                )
            rows += _rows(doc, metadata, Path(results_dir))
            continue
        if job is None:  # no expected job list: an unreadable file is all we know about it
            problems.append(reason or f"{method}/{dataset}: no manifest")
            continue
        if reason is None:
            reason = "not run: the evaluation job did not finish"
        problems.append(f"{method}/{dataset}: {reason}")
        stub = {
            "method": method,
            "dataset": dataset,
            "archive": job.archive,
            "runs": [_failed_run(c, reason) for c in job.contexts],
        }
        rows += _rows(stub, metadata, None)
    return Collected(_frame(rows), problems)


def write_accuracies(df: pd.DataFrame, path: str | os.PathLike,
                     results_dir: str | os.PathLike | None = None) -> list[str]:
    """Write the table (accuracies keep full precision) and its checksum file together, all or none: a
    failure (a full disk) leaves both as they were, never a table without its checksum. With
    ``results_dir`` (the folder its ``result_file`` paths are relative to), ``metrics.csv`` beside it in the
    same step (:func:`chorustic.evaluation.metrics.metrics_frame`: every measure of every ``ok`` run, from its
    prediction file), and ``audit/duplicates.csv`` from the audit records of the table's datasets
    (:mod:`chorustic.data.duplicates`) where there are any; returns one line per run whose prediction file
    gave no measures but accuracy."""
    from chorustic.evaluation.metrics import metrics_frame
    from chorustic.evaluation.results import metrics_file

    path = Path(path)
    text = df.to_csv(index=False, float_format=None)
    digest = sha256_bytes(text.encode("utf-8"))
    files = {path: text, checksum_path(path): f"{digest}  {path.name}\n"}
    unreadable: list[str] = []
    if results_dir is not None:
        from chorustic.data.duplicates import duplicates_file, duplicates_table

        measures, unreadable = metrics_frame(df, results_dir)
        files[metrics_file(path)] = measures.to_csv(index=False, float_format=None)
        audit = duplicates_table(results_dir, set(df["dataset"]) if len(df) else None)
        if audit is not None:
            files[duplicates_file(results_dir)] = audit.to_csv(index=False)
    atomic_write_texts(files)
    return unreadable


# --------------------------------------------------------------------------------------------------
# the jobs of a configuration


def collect_configured(
    cfg: dict,
    results_dir: str | os.PathLike | None = None,
    *,
    discovery=None,
    plan=None,
    why_not_run: Callable[[ExpectedJob], str | None] | None = None,
) -> Collected:
    """:func:`collect_runs` for every job of the configuration's run plan (:class:`chorustic.run_plan.RunPlan`,
    made here unless given), with its method metadata and the current fingerprints (results made with
    other parameters or method code are stale)."""
    from chorustic.run_plan import RunPlan

    plan = plan if plan is not None else RunPlan.from_config(cfg, discovery)
    results = results_dir if results_dir is not None else cfg["paths"]["results_dir"]
    expected = plan.expected_jobs(results)
    got = collect_runs(
        results,
        expected,
        metadata=plan.metadata,
        fingerprints=plan.fingerprints,
        why_not_run=why_not_run,
    )
    listed = {(j.method, j.dataset) for j in expected}
    on_disk = {(p.parent.name, p.name.removesuffix(".json").removesuffix(".failed"))
               for p in Path(results).glob("runs/*/*.json") if not p.name.startswith(".")}
    got.unlisted = [f"{m}/{d}" for m, d in sorted(on_disk - listed)]
    return got
