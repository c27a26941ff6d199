"""The Snakefile's ``onerror`` handler: the tables after a failed run (the rules call the ``chorustic`` CLI).

Failure semantics of the workflow (docs/troubleshooting.md):

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
from typing import Callable

from chorustic.errors import NoSpaceError, shorten
from chorustic.evaluation.aggregate import (
    EVALUATION_FAILED,
    EVALUATION_STOPPED,
    Collected,
    ExpectedJob,
    collect_configured,
    write_accuracies,
)

__all__ = ["tables_after_failure"]

#: The longest reason taken from a job's log (cut in the middle: the head says what and what to do).
_REASON_CHARS = 1500


def _reason_line(path: Path, last_line: bool = True) -> str:
    """The line of a job's log that says why it failed: the last ``FAILED:``/error line, else (``last_line``)
    the last line, else ""."""
    try:
        lines = [
            ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()
        ]
    except OSError:
        return ""
    for ln in reversed(lines):
        if "FAILED: " in ln:
            return shorten(ln.split("FAILED: ", 1)[1], _REASON_CHARS)
        if re.match(r"^(chorustic [\w-]+: |\w*(Error|Exception)\b)", ln):
            return shorten(ln, _REASON_CHARS)
    return shorten(lines[-1], _REASON_CHARS) if lines and last_line else ""


def _evaluation_reason(logf: Path) -> str:
    """Why an evaluation job that left no manifest did not finish, from its log: the failure it names, or, when
    it names none (its last line a finished context's), that it was stopped before it finished."""
    failure = _reason_line(logf, last_line=False)
    if failure:
        return f"{EVALUATION_FAILED}: {failure} (log: {logf})"
    return (f"{EVALUATION_STOPPED} before it finished, with no error in its log (a signal such as Ctrl-C, a "
            f"time limit or the machine stopped it; log: {logf})")


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
        run = job.pretrain_run
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
        return _evaluation_reason(logf)

    return why


def tables_after_failure(
    cfg: dict, steps: list[tuple[str, str, str]], evaluate_log: str, report_log: str | None = None, out=None
) -> Collected | None:
    """Snakefile ``onerror``: write ``accuracies.csv`` and the reports from everything that finished,
    with everything else as failed runs and their reasons; print what failed and what to do."""
    out = out or sys.stderr
    results = Path(cfg["paths"]["results_dir"])
    table = results / "accuracies.csv"
    try:
        got = collect_configured(cfg, why_not_run=_why_not_run(cfg, steps, evaluate_log))
    except Exception:  # never hide the original failure behind one of this handler
        print("chorustic: could not collect the results after the failure:\n" + traceback.format_exc(), file=out)
        return None
    try:
        write_accuracies(got.table, table, results)
        table_error = None
    except NoSpaceError as exc:  # a full disk: one line naming the file; the summary still follows
        table_error = str(exc)
    except Exception:  # never hide the original failure behind one of this handler
        print("chorustic: could not write the tables after the failure:\n" + traceback.format_exc(), file=out)
        return None
    reports = cfg["paths"]["reports_dir"]
    ref = (cfg.get("reports") or {}).get("reference_method", "chorustic")
    cmd = ["chorustic", "report", "--results-dir", str(results), "--reports-dir", reports, "--reference-method", ref,
           "--metrics", *(cfg.get("reports") or {}).get("metrics", ["accuracy"])]
    report_ok = table_error is None
    if report_ok:
        try:
            with open(report_log or Path(cfg["paths"]["logs_dir"]) / "report.log", "w") as log:
                report_ok = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode == 0
        except OSError as exc:
            report_ok = False
            print(f"chorustic: could not run {' '.join(cmd)}: {exc}", file=out)
    n_failed = int((got.table["status"] == "failed").sum()) if len(got.table) else 0
    where = f"`failed` rows (with the reason) in {table}" if table_error is None else "listed below"
    if got.problems:
        lines = [
            f"chorustic: something failed. {len(got.problems)} evaluation job(s) did not finish; the "
            f"{n_failed} runs they leave out are {where}"
            + (f" and in {reports}/missing_runs.csv" if report_ok else "")
            + ":"
        ]
    else:  # every evaluation finished: a later step failed, or the workflow was stopped after them
        lines = [f"chorustic: the workflow did not finish (a step after the evaluations failed, or it was stopped: "
                 f"see Snakemake's message above), but every evaluation job finished: {table} holds all "
                 f"{len(got.table)} runs."]
    lines += [f"  - {p}" for p in got.problems[:50]]
    if len(got.problems) > 50:
        lines.append(f"  ... and {len(got.problems) - 50} more (see {table})")
    if table_error is not None:
        lines.append(f"The tables could not be written: {table_error}.")
    else:
        lines.append(
            f"The tables{' and reports' if report_ok else ''} were written from everything that finished"
            + ("" if report_ok else f" (the report step failed too: see {report_log or 'logs/report.log'})")
            + "."
        )
    lines.append("Fix the causes above and run the same command again: only what failed runs again.")
    print("\n".join(lines), file=out)
    return got
