"""The functions the workflow calls (``workflow/scripts/*.py``, the Snakefile's ``onerror``): Snakemake
objects in, package calls out.

Failure semantics of the workflow (README, "When something goes wrong"):

* a job that cannot do its work fails (non-zero exit, its traceback or one-line reason in its log):
  an evaluation with any failed run leaves its manifest as ``<dataset>.failed.json`` and fails, so it
  never counts as finished and the next ``snakemake`` retries it;
* when any job failed, the Snakefile's ``onerror`` handler (:func:`tables_after_failure`) still writes
  ``accuracies.csv`` and the reports from everything that finished, with every run that did not as a
  ``failed`` row naming the reason (the failed step and the line of its log that says why); Snakemake's
  exit status stays non-zero;
* a finished result that was damaged afterwards is set aside when the DAG is built
  (:func:`chorustic.evaluation.integrity.set_aside_damaged`), so Snakemake re-makes exactly that job.
"""

from __future__ import annotations

import re
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from chorustic import config as cc
from chorustic.evaluation.aggregate import Collected, ExpectedJob, collect_runs, write_accuracies
from chorustic.evaluation.job import FINISHED_STATUSES, JobFailed, JobSpec, failure_record_path, run_job
from chorustic.evaluation.supervisor import run_supervised
from chorustic.resources import worker_limits

__all__ = [
    "JobFailed",
    "job_spec",
    "expected_jobs",
    "evaluate_from_snakemake",
    "aggregate_from_snakemake",
    "tables_after_failure",
    "method_metadata",
    "run_script",
]


#: The table group of a method whose plugin file failed to import (its metadata is unknown).
UNKNOWN_GROUP = "Unknown (plugin failed to import)"


def job_spec(
    cfg: dict,
    method: str,
    dataset: str,
    *,
    contexts_file: str,
    n_jobs: int = 1,
    fingerprint: str | None = None,
) -> JobSpec:
    entry = cc.method_entry(cfg, method)
    return JobSpec(
        method=method,
        plugin=entry["plugin"],
        dataset=dataset,
        archive=cc.dataset_archive(dataset),
        results_dir=cfg["paths"]["results_dir"],
        contexts_file=str(contexts_file),
        data_dir=cfg["paths"]["data_dir"],
        cache_dir=cfg["paths"]["cache_dir"],
        params=cc.resolved_params(cfg, method),
        display_name=entry["display_name"],
        protocols=entry["protocols"],
        device=cfg["evaluation"].get("device", "auto"),
        n_jobs=int(n_jobs),
        fail_fast=bool(cfg["evaluation"].get("fail_fast", False)),
        offline=bool(cfg["data"]["offline"]),
        lock_file=cc.lock_file(cfg),
        allow_modified_data=cc.allow_modified_data(cfg, dataset),
        fingerprint=fingerprint,
        portable_numerics=bool(cfg["evaluation"].get("portable_numerics", True)),
    )


def failed_runs_message(manifest: dict[str, Any], results_dir: str) -> str | None:
    """None when every run of the manifest finished; else one message naming the failures."""
    failed = [r for r in manifest["runs"] if r.get("status") not in FINISHED_STATUSES]
    if not failed:
        return None
    first = failed[0]
    where = failure_record_path(results_dir, manifest["method"], manifest["dataset"])
    return (
        f"{manifest['method']}/{manifest['dataset']}: {len(failed)} of {len(manifest['runs'])} runs failed, "
        f"e.g. {first['protocol']} seed {first['seed']}: {first.get('error')}. Recorded in {where}; the tables "
        "list them as missing runs and the next `snakemake` retries this job."
    )


def evaluate_from_snakemake(smk: Any) -> None:
    cfg = smk.config
    spec = job_spec(
        cfg,
        smk.wildcards.method,
        smk.wildcards.dataset,
        contexts_file=smk.input.contexts,
        n_jobs=smk.threads,
        fingerprint=smk.params.fingerprint,
    )
    ev = cfg["evaluation"]
    if ev.get("isolate", True):
        enforce = ev.get("enforce_limits", True)
        # the worker's share of the job's memory and time (chorustic.resources.worker_limits)
        mem_mb, runtime_min = worker_limits(float(smk.resources.mem_mb), float(smk.resources.runtime))
        manifest = run_supervised(
            spec,
            mem_mb=mem_mb if enforce else None,
            runtime_min=runtime_min if enforce else None,
            threads=int(smk.threads),
            log_file=sys.stdout,
        )
    else:
        manifest = run_job(spec)
    message = failed_runs_message(manifest, spec.results_dir)
    if message:
        raise JobFailed(message)
    out = Path(smk.output[0])
    if not out.exists():
        raise JobFailed(f"evaluation of {spec.method} on {spec.dataset} finished without writing {out}")


def method_metadata(cfg: dict, discovery=None) -> dict[str, dict]:
    """Display name, group, target fit and reported flag of every configured run (from the plugins)."""
    from chorustic.methods import discover

    disc = discovery if discovery is not None else discover()
    meta = {}
    for run in cfg["methods"]:
        entry = cc.method_entry(cfg, run)
        m = disc.methods.get(entry["plugin"])
        if m is None:  # its plugin file failed to import: its runs are listed as failed, under its run name
            meta[run] = {
                "display_name": entry["display_name"] or run,
                "group": UNKNOWN_GROUP,
                "fits_on_target": False,
                "reported": False,
            }
            continue
        meta[run] = {
            "display_name": entry["display_name"] or m.info.display_name,
            "group": m.info.group,
            "fits_on_target": m.info.fits_on_target,
            "reported": m.info.reported,
        }
    return meta


def expected_jobs(cfg: dict, results_dir: str | Path | None = None) -> list[ExpectedJob]:
    """Every evaluation job of the configuration with the contexts it runs (from the dataset's context
    file when it exists, else from the protocol settings)."""
    from chorustic.protocols.contexts import context_specs

    results = Path(results_dir if results_dir is not None else cfg["paths"]["results_dir"])
    specs = [
        {"protocol": s.protocol, "family": s.family, "budget": s.budget, "seed": s.seed}
        for s in context_specs(cfg["protocols"])
    ]
    jobs = []
    for method, dataset in cc.evaluation_jobs(cfg):
        wanted = cc.method_entry(cfg, method)["protocols"]
        contexts = specs
        try:
            import json

            doc = json.loads((results / "contexts" / f"{dataset}.json").read_text())
            contexts = [{k: c[k] for k in ("protocol", "family", "budget", "seed")} for c in doc["contexts"]]
        except (OSError, ValueError, KeyError, TypeError):
            pass
        contexts = [c for c in contexts if wanted is None or c["protocol"] in wanted]
        jobs.append(ExpectedJob(method, dataset, cc.dataset_archive(dataset), tuple(contexts)))
    return jobs


def fingerprints(cfg: dict, discovery=None) -> dict[str, str]:
    from chorustic.evaluation.integrity import run_fingerprint
    from chorustic.methods import discover

    disc = discovery if discovery is not None else discover()
    return {m: run_fingerprint(cfg, m, disc) for m in cc.evaluated_methods(cfg)}


def _collect(cfg: dict, why_not_run: Callable[[ExpectedJob], str] | None = None) -> Collected:
    from chorustic.methods import discover

    disc = discover()
    return collect_runs(
        cfg["paths"]["results_dir"],
        expected_jobs(cfg),
        metadata=method_metadata(cfg, disc),
        fingerprints=fingerprints(cfg, disc),
        why_not_run=why_not_run,
    )


def aggregate_from_snakemake(smk: Any) -> None:
    got = _collect(smk.config)
    if got.problems:  # every job finished, so something changed under the manifests since
        raise JobFailed("results that cannot be aggregated:\n  " + "\n  ".join(got.problems))
    write_accuracies(got.table, smk.output[0])
    df = got.table
    counts = df.groupby(["method", "status"]).size().unstack(fill_value=0) if len(df) else df
    print(f"{len(df)} runs from {len(smk.input)} manifests\n{counts}")


def _reason_line(path: Path) -> str:
    """The line of a job's log that says why it failed (the last ``FAILED:``/error line, else the last line)."""
    try:
        lines = [
            ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()
        ]
    except OSError:
        return ""
    for ln in reversed(lines):
        if "FAILED: " in ln:
            return ln.split("FAILED: ", 1)[1][:1500]
        if re.match(r"^(chorustic [\w-]+: |\w*(Error|Exception)\b)", ln):
            return ln[:1500]
    return lines[-1][:1500] if lines else ""


def _why_not_run(
    cfg: dict, steps: list[tuple[str, str, str]], evaluate_log: str
) -> Callable[[ExpectedJob], str | None]:
    """Why a job's results do not count: the first of ``steps`` (name, output pattern, log pattern, with
    ``{dataset}`` / ``{run}``) whose output is missing or newer than the job's manifest, with the line of
    its log that says why; or, with every input in place, why the evaluation itself left no manifest.
    None when the job's inputs are in place and older than its manifest."""
    from chorustic.evaluation.job import finished_manifest

    def why(job: ExpectedJob) -> str | None:
        fields = {"dataset": job.dataset, "method": job.method}
        run = cc.pretrain_run_of(cc.method_entry(cfg, job.method))
        done = finished_manifest(cfg["paths"]["results_dir"], job.method, job.dataset)
        done_mtime = done.stat().st_mtime if done is not None else None
        for name, out, log in steps:
            if "{run}" in out:
                if run is None:
                    continue
                fields["run"] = run
            target = Path(out.format(**fields))
            subject = run if name == "pretrain" else job.dataset
            if target.exists():
                if done_mtime is not None and target.stat().st_mtime > done_mtime:
                    return (
                        f"not run: the {name} output of {subject} was re-made after this result "
                        "and the evaluation was not re-run"
                    )
                continue
            logf = Path(log.format(**fields))
            if not logf.exists():
                return f"not run: the {name} step of {subject} did not run (an earlier failure or an interrupted run)"
            return f"not run: the {name} step of {subject} failed: {_reason_line(logf) or 'no message'} (log: {logf})"
        if done is not None:
            return None
        logf = Path(evaluate_log.format(**fields))
        if not logf.exists():
            return "not run: the evaluation did not start (an earlier failure or an interrupted run)"
        return f"the evaluation job failed: {_reason_line(logf) or 'no message'} (log: {logf})"

    return why


def tables_after_failure(
    cfg: dict, steps: list[tuple[str, str, str]], evaluate_log: str, report_log: str | None = None, out=None
) -> Collected | None:
    """Snakefile ``onerror``: write ``accuracies.csv`` and the reports from everything that finished,
    with everything else as failed runs and their reasons; print what failed and what to do."""
    out = out or sys.stderr
    results = Path(cfg["paths"]["results_dir"])
    try:
        got = _collect(cfg, _why_not_run(cfg, steps, evaluate_log))
        table = results / "accuracies.csv"
        write_accuracies(got.table, table)
    except Exception:  # never hide the original failure behind one of this handler
        print("chorustic: could not write the tables after the failure:\n" + traceback.format_exc(), file=out)
        return None
    reports = cfg["paths"]["reports_dir"]
    ref = (cfg.get("reports") or {}).get("reference_method", "chorustic")
    cmd = ["chorustic", "report", "--results", str(results), "--out", reports, "--reference", ref]
    report_ok = True
    try:
        with open(report_log or Path(cfg["paths"]["logs_dir"]) / "report.log", "w") as log:
            report_ok = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode == 0
    except OSError as exc:
        report_ok = False
        print(f"chorustic: could not run {' '.join(cmd)}: {exc}", file=out)
    n_failed = int((got.table["status"] == "failed").sum()) if len(got.table) else 0
    lines = [
        f"chorustic: something failed. {len(got.problems)} evaluation job(s) did not finish; the "
        f"{n_failed} runs they leave out are `failed` rows (with the reason) in {table}"
        + (f" and in {reports}/missing_runs.csv" if report_ok else "")
        + ":"
    ]
    lines += [f"  - {p}" for p in got.problems[:50]]
    if len(got.problems) > 50:
        lines.append(f"  ... and {len(got.problems) - 50} more (see {table})")
    lines.append(
        f"The tables{' and reports' if report_ok else ''} were written from everything that finished"
        + ("" if report_ok else f" (the report step failed too: see {report_log or 'logs/report.log'})")
        + ". Fix the causes above and run the same command again: only what failed runs again."
    )
    print("\n".join(lines), file=out)
    return got


def run_script(smk: Any, func: Callable[[Any], None]) -> None:
    """Run a workflow script's function with stdout and stderr in the rule's log; on failure the traceback
    (or the one-line reason of a :class:`JobFailed`) is written to the log before it is closed, one line
    goes to the console, and the job exits with status 1."""
    console = sys.stderr
    code, summary = 0, ""
    with open(smk.log[0], "w") as log:
        sys.stdout = sys.stderr = log
        try:
            func(smk)
        except JobFailed as exc:
            code, summary = 1, str(exc)
            print(f"FAILED: {exc}", file=log)
        except BaseException as exc:  # noqa: BLE001 - the traceback must reach the log, whatever it is
            code = 1
            traceback.print_exc(file=log)
            summary = f"{type(exc).__name__}: {exc}"
        finally:
            log.flush()
            sys.stdout, sys.stderr = sys.__stdout__, console
    if code:
        print(
            f"chorustic ({smk.rule}): {summary.splitlines()[0] if summary else 'failed'} (log: {smk.log[0]})",
            file=console,
        )
        sys.exit(code)
