"""The run's last two rules at paper scale: `chorustic aggregate` and `chorustic report` on a whole profile's results.

Every evaluate job of the configured profile (the paper's: 2,588 jobs, 37,560 contexts) gets a run manifest and
one prediction file per context, written by the harness's own writers (``write_result_file``, ``file_record``,
``write_finished``) with the exact shape of its dataset (test series x classes, from the registry) and random
class probabilities (~19 digits each, as a model's print; a nearest neighbour's 0/1 print shorter, a tiny
probability in exponent notation a few bytes longer). Every manifest and every file carries a stand-in mark, so ``aggregate`` turns
each run into a ``failed`` row, as it must; it still verifies every file's SHA-256 first, which is its cost.

Then, each in a fresh process whose CPU time and peak resident memory are measured (``getrusage`` of its
only child), against the fixed resources the workflow asks for (:func:`chorustic.resources.rule_resources`):

1. ``chorustic aggregate --config`` as the aggregate rule runs it (every job of the plan, every file hashed);
2. ``chorustic report`` as the report rule runs it, on a **load-test table**: the aggregated table with the
   stand-ins' runs set back to ``ok`` with the accuracies their files record, so that the statistics, tables
   and figures run over every dataset and method (never a result: random probabilities; it stands in the
   benchmark's ``accuracies.csv`` only while the two reports run, then the aggregated table is put back);
3. the same with ``--reference-results`` at the same folder: the reproduction check that reads every pair of
   prediction files (a reviewer comparing a run with another).

It also prints the disk the prediction files and manifests take. The workdir is deleted at the end unless
``--keep`` or a step failed (its logs are there).

    python benchmarks/results_scale.py [--workdir /tmp/results-scale] [--datasets N] [--keep]

``--datasets N`` keeps the first N datasets of each archive (a quick rehearsal); the default is all of them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: The child runs in a fresh interpreter whose only child is the measured command: its rusage is the command's.
_MEASURE = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter(); rc = subprocess.run(sys.argv[1:], stdout=sys.stderr).returncode\n"
    "wall = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'rc': rc, 'wall_s': wall, 'cpu_s': r.ru_utime + r.ru_stime, 'peak_mb': r.ru_maxrss / 1024}))\n"
)


def measured(args: list[str], log: Path) -> dict:
    """``python -m chorustic <args>`` in a fresh process: its exit status, wall and CPU seconds, peak MB."""
    with open(log, "w") as fh:
        out = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "chorustic", *args],
                             stdout=subprocess.PIPE, stderr=fh, text=True)
    lines = out.stdout.strip().splitlines()
    if out.returncode or not lines:
        raise RuntimeError(f"could not measure `chorustic {' '.join(args)}` (see {log})")
    return json.loads(lines[-1])


def write_tree(plan, results: Path, rng: np.random.Generator, mark: dict) -> tuple[int, int, dict]:
    """A finished manifest and its prediction files for every job of ``plan``; (files, bytes, the accuracy of
    every run by method, dataset, protocol and seed)."""
    from chorustic.evaluation.integrity import file_record
    from chorustic.evaluation.job import MANIFEST_FORMAT, run_record, write_finished
    from chorustic.evaluation.results import result_path, write_result_file
    from chorustic.protocols import ContextSpec, parse_protocol_id

    files = size = 0
    accuracy = {}
    for n, job in enumerate(plan.jobs):
        meta = plan.metadata[job.method]
        manifest = {"format": MANIFEST_FORMAT, "method": job.method, "plugin": job.plugin,
                    "display_name": meta["display_name"], "group": meta["group"],
                    "fits_on_target": meta["fits_on_target"], "reported": meta["reported"],
                    "dataset": job.dataset, "archive": job.archive, "params": job.params,
                    "fingerprint": json.loads(job.fingerprint) if job.fingerprint else None,
                    "device": "cpu", "standin": mark, "runs": []}
        if meta["reported"]:  # published numbers, as the job copies them: no prediction files
            table = plan.discovery.methods[job.plugin].reported_accuracies(**job.params)
            for r in table[table["dataset"] == job.dataset].itertuples(index=False):
                ctx = ContextSpec(r.protocol, *parse_protocol_id(r.protocol), int(r.seed))
                manifest["runs"].append(run_record(ctx, status="reported", accuracy=float(r.accuracy)))
                accuracy[(job.method, job.dataset, ctx.protocol, ctx.seed)] = float(r.accuracy)
            write_finished(results, manifest)
            continue
        k, n_test = job.size.n_classes, job.size.n_test
        y_true = np.arange(n_test) % k  # balanced, as a stand-in's classes
        for ctx in job.contexts:
            out = result_path(results, ctx["protocol"], job.method, job.dataset, ctx["seed"])
            proba = rng.random((n_test, k))
            proba /= proba.sum(axis=1, keepdims=True)
            acc = write_result_file(out, dataset=job.dataset, method=job.method, seed=ctx["seed"], y_true=y_true,
                                    proba=proba, fit_time_s=0.0, predict_time_s=0.0, memory_bytes=0,
                                    info={**ctx, "method": job.method, "standin": mark},
                                    description=f"protocol={ctx['protocol']}")
            rec = file_record(out)
            manifest["runs"].append(run_record(ctx, status="ok", accuracy=acc, n_context=1, n_test=n_test,
                                               n_classes=k, result_file=str(out), result=rec))
            files, size = files + 1, size + rec["bytes"]
            accuracy[(job.method, job.dataset, ctx["protocol"], ctx["seed"])] = acc
        size += write_finished(results, manifest).stat().st_size
        if (n + 1) % 200 == 0:
            print(f"  {n + 1}/{len(plan.jobs)} jobs written ({files} files, {size / 1e9:.2f} GB)", flush=True)
    return files, size, accuracy


def load_test_table(results: Path, accuracy: dict) -> int:
    """The aggregated table with the stand-ins' runs back to ``ok`` (see the module docstring) in its place; its
    rows. ``accuracy``: :func:`write_tree`'s."""
    from chorustic.evaluation.aggregate import write_accuracies
    from chorustic.reports.accuracies import load_accuracies

    table = load_accuracies(results / "accuracies.csv")
    keys = zip(table["method"], table["dataset"], table["protocol"], table["seed"].astype(int))
    table["accuracy"] = [accuracy[key] for key in keys]
    table["status"] = np.where(table["reported"], "reported", "ok")
    table["error"] = None
    write_accuracies(table, results / "accuracies.csv")
    return len(table)


def main(argv=None) -> None:
    from chorustic import config as cc
    from chorustic import resources as cr
    from chorustic.io import atomic_write_texts
    from chorustic.run_plan import RunPlan

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/results-scale"))
    ap.add_argument("--config", action="append", default=[], metavar="YAML",
                    help="merged over config/config.yaml (default: the paper profile)")
    ap.add_argument("--datasets", type=int, default=None, help="only the first N datasets of each archive")
    ap.add_argument("--keep", action="store_true", help="keep the workdir (default: deleted at the end)")
    args = ap.parse_args(argv)

    work = args.workdir.resolve()
    if work.exists():
        sys.exit(f"{work} exists; give another --workdir (this benchmark only deletes a folder it made)")
    results, reports = work / "results", work / "reports"
    overrides = {"paths": {"results_dir": str(results), "reports_dir": str(reports)}}
    cfg = cc.load_config(args.config, overrides=overrides)
    if args.datasets is not None:
        names = cc.dataset_names(cfg)
        first = [d for a in ("UCR", "UEA") for d in [n for n in names if cc.dataset_archive(n) == a][: args.datasets]]
        cfg = cc.load_config(args.config, overrides={**overrides, "datasets": {"include": first}})
    work.mkdir(parents=True)
    (work / "config.yaml").write_text(json.dumps(cfg))  # JSON is YAML: the config the commands get
    keep = args.keep
    try:
        t0 = time.perf_counter()
        plan = RunPlan.from_config(cfg)
        print(f"{len(plan.datasets)} datasets, {len(plan.jobs)} jobs, "
              f"{sum(len(j.contexts) for j in plan.jobs)} contexts")
        mark = {"benchmark": "benchmarks/results_scale.py", "data": "random class probabilities"}
        files, size, accuracy = write_tree(plan, results, np.random.default_rng(0), mark)
        print(f"written in {time.perf_counter() - t0:.0f} s: {files} prediction files and {len(plan.jobs)} "
              f"manifests, {size / 1e9:.2f} GB")
        rows = []
        agg = measured(["aggregate", "--config", str(work / "config.yaml"), "--results-dir", str(results)],
                       work / "aggregate.log")
        rows.append(("aggregate (every file hashed)", agg, cr.rule_resources(cfg, "aggregate")))
        table = results / "accuracies.csv"
        aggregated = {p: p.read_bytes() for p in (table, table.with_name(table.name + ".sha256"))}
        try:
            n = load_test_table(results, accuracy)
            report = ["report", "--results", str(results), "--reference", cfg["reports"]["reference_method"]]
            rows.append((f"report ({n} rows)", measured(report + ["--out", str(reports)], work / "report.log"),
                         cr.rule_resources(cfg, "report")))
            shutil.rmtree(reports, ignore_errors=True)
            rows.append(("report --reference-results (every file read twice)",
                         measured(report + ["--out", str(reports), "--reference-results", str(results)],
                                  work / "report_reference.log"), cr.rule_resources(cfg, "report")))
        finally:  # the stand-ins' table as aggregated: every run failed
            atomic_write_texts({p: blob.decode() for p, blob in aggregated.items()})
        if any(m["rc"] for name, m, _ in rows[1:]):  # aggregate exits 1 on stand-ins; a report must not
            keep = True
            print(f"a report failed; {work} is kept with its logs", file=sys.stderr)
        print("\n| step | exit | wall s | CPU s | peak MB | request: MB, min |\n|---|---|---|---|---|---|")
        for name, m, res in rows:
            print(f"| {name} | {m['rc']} | {m['wall_s']:.0f} | {m['cpu_s']:.0f} | {m['peak_mb']:.0f} | "
                  f"{res['mem_mb']}, {res['runtime']} |")
        print(f"\ndisk: {size / 1e9:.2f} GB of prediction files and manifests for {files} contexts "
              f"({size / max(files, 1) / 1e3:.0f} kB each)")
    except BaseException:
        keep = True
        print(f"stopped; {work} is kept with its logs", file=sys.stderr)
        raise
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
