"""``chorustic contexts | audit | evaluate | aggregate``: the protocol contexts, the leakage audit of a dataset's
splits, one evaluation job, the tidy table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from chorustic.commands._vocabulary import add_config, add_list, add_out, add_path, path_of
from chorustic.results_layout import contexts_path


def _add_dataset_reading(p: argparse.ArgumentParser) -> None:
    """The options of a command that reads datasets the download step provided (contexts, audit)."""
    p.add_argument("--lock-file", default=None, metavar="FILE",
                   help="data lock file (default: the config's data.lock_file, else <data-dir>/chorustic-data.lock.json)")
    p.add_argument("--allow-modified-data", action="store_true",
                   help="accept files that differ from the archive's published sizes (recorded; default: the "
                        "config's data.allow_modified)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("contexts", help="write every protocol's context indices for datasets",
                       description="Write <results-dir>/contexts/<dataset>.json: the context (training) indices of "
                                   "every protocol and seed the configuration's `protocols` settings produce "
                                   "(paper Sec. 4.1; default: the paper's: full, 5/10 shots x seeds 0-4, 20-60 %).")
    add_list(p, "--datasets", required=True, positional="DATASET")
    add_config(p)
    add_path(p, "--data-dir", config=True)
    add_path(p, "--cache-dir", config=True)
    add_path(p, "--results-dir", config=True)
    add_out(p, "write this file instead of <results-dir>/contexts/<dataset>.json (one dataset)")
    p.add_argument("--protocols", default=None, help=argparse.SUPPRESS)  # deprecated: settings as JSON
    p.add_argument("--offline", action="store_true", default=True,
                   help="never download (always on: contexts read the datasets `chorustic download` provided)")
    _add_dataset_reading(p)
    p.set_defaults(func=_contexts)

    p = sub.add_parser("audit", help="list test series identical to a training series, per dataset",
                       description="Write <results-dir>/audit/<dataset>.json: how many test series equal a training "
                                   "series of the same dataset exactly, as every method receives them (after "
                                   "preprocessing), with the same or another label; the aggregate step collects them "
                                   "into <results-dir>/audit/duplicates.csv and the report says how many datasets are "
                                   "affected.")
    add_list(p, "--datasets", required=True)
    add_config(p)
    add_path(p, "--data-dir", config=True)
    add_path(p, "--cache-dir", config=True)
    add_path(p, "--results-dir", config=True)
    add_out(p, "write this file instead of <results-dir>/audit/<dataset>.json (one dataset)")
    _add_dataset_reading(p)
    p.set_defaults(func=_audit)

    p = sub.add_parser("evaluate", help="evaluate one method run on datasets under every protocol context",
                       description="Run a method run of the configuration on datasets (what the workflow's "
                                   "evaluate rule runs); writes tsml prediction files and "
                                   "results/runs/<method>/<dataset>.json. Exit status 1 if a run failed.")
    add_list(p, "--methods", required=True, legacy=("--method",),
             help="method run names (keys of `methods` in the configuration)")
    add_list(p, "--datasets", required=True, legacy=("--dataset",))
    add_config(p)
    p.add_argument("--contexts", default=None, metavar="FILE",
                   help="the dataset's context file (default: <results-dir>/contexts/<dataset>.json, written "
                        "when missing; one dataset only)")
    add_list(p, "--protocols")
    p.add_argument("--threads", type=int, default=1, help="CPU threads of the job (default: 1)")
    p.add_argument("--no-isolation", action="store_true",
                   help="run in this process (no worker, no limits), as `evaluation.isolate: false` does")
    p.add_argument("--mem-mb", type=float, default=None,
                   help="memory of the job (MB; at least 900; default: the method run's `resources.mem_mb` when "
                        "set, else no limit); the worker gets it minus what the job's other processes need")
    p.add_argument("--runtime", type=float, default=None,
                   help="stop a context's worker after this many minutes (default: the method run's "
                        "`resources.runtime` when set, else no time limit: a local run is never stopped because "
                        "the machine is slower than the cost model assumed)")
    p.add_argument("--cluster-runtime", type=float, default=None, metavar="MIN",
                   help="the time limit the job asked its cluster scheduler for (the workflow passes the job's "
                        "`runtime`): under a scheduler (SLURM) the worker stops a minute before the scheduler "
                        "ends the job, so the context is recorded as failed; ignored on a local run")
    p.set_defaults(func=_evaluate)

    p = sub.add_parser("aggregate", help="collect run manifests into results/accuracies.csv",
                       description="Collect every run manifest (and the failure record of every job with a failed "
                                   "run) into one table, after checking each prediction file against its recorded "
                                   "SHA-256; with --config, runs made with other parameters or method code are "
                                   "marked stale. Exit status 1 if any run failed or was damaged.")
    add_path(p, "--results-dir", config=True)
    add_out(p, "the table to write (default: <results-dir>/accuracies.csv)")
    add_config(p, help="the configuration whose jobs to collect (merged over config/config.yaml; repeatable); "
                       "without it every run found is collected")
    p.set_defaults(func=_aggregate)


def _contexts(args: argparse.Namespace) -> int:
    from chorustic import config as cc
    from chorustic.data import load_dataset
    from chorustic.protocols.contexts import build_contexts, write_contexts

    cfg = cc.load_config(args.config)
    protocols = cfg["protocols"]
    if args.protocols is not None:  # the old spelling: the settings as JSON
        print("chorustic contexts: note: --protocols JSON is deprecated: write the settings under `protocols:` "
              "in a configuration file and pass --config FILE", file=sys.stderr)
        protocols = json.loads(args.protocols)
    if args.out and len(args.datasets) != 1:
        print("chorustic contexts: --out needs exactly one dataset", file=sys.stderr)
        return 2
    data_dir, cache_dir = path_of(args, "data_dir", cfg), path_of(args, "cache_dir", cfg)
    for name in args.datasets:
        ds = load_dataset(name, data_dir, cache_dir=cache_dir, offline=args.offline,
                          lock=args.lock_file or cc.lock_file(cfg) or True,
                          allow_modified=args.allow_modified_data or cc.allow_modified_data(cfg, name))
        doc = build_contexts(ds.y_train, dataset=ds.name, archive=ds.archive, protocols=protocols,
                             class_labels=ds.classes)
        out = Path(args.out) if args.out else contexts_path(path_of(args, "results_dir", cfg), ds.name)
        write_contexts(out, doc)
        status = {}
        for c in doc["contexts"]:
            status[c["status"]] = status.get(c["status"], 0) + 1
        print(f"{ds.name}: {len(doc['contexts'])} contexts {status} -> {out}")
    return 0


def _audit(args: argparse.Namespace) -> int:
    from chorustic import config as cc
    from chorustic.data import load_dataset
    from chorustic.data.duplicates import audit_dataset, audit_path, write_audit

    cfg = cc.load_config(args.config)
    if args.out and len(args.datasets) != 1:
        print("chorustic audit: --out needs exactly one dataset", file=sys.stderr)
        return 2
    data_dir, cache_dir = path_of(args, "data_dir", cfg), path_of(args, "cache_dir", cfg)
    for name in args.datasets:
        ds = load_dataset(name, data_dir, cache_dir=cache_dir, offline=True, series="resampled",
                          lock=args.lock_file or cc.lock_file(cfg) or True,
                          allow_modified=args.allow_modified_data or cc.allow_modified_data(cfg, name))
        record = audit_dataset(ds)
        out = Path(args.out) if args.out else audit_path(path_of(args, "results_dir", cfg), ds.name)
        write_audit(record, out)
        print(f"{ds.name}: {record['n_test_duplicated']} of {record['n_test']} test series equal a training series "
              f"({record['n_same_label']} with the same label, {record['n_other_label']} with another) -> {out}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from chorustic import config as cc
    from chorustic.methods import discover
    from chorustic.resources import job_memory_problem

    cfg = cc.load_config(args.config)
    for method in args.methods:
        cc.method_entry(cfg, method)  # an unknown run name: ConfigError with the closest names
    for dataset in args.datasets:
        cc.dataset_archive(dataset)  # an unknown dataset: UnknownDatasetError with the closest names
    if args.contexts and len(args.datasets) != 1:
        print("chorustic evaluate: --contexts needs exactly one dataset", file=sys.stderr)
        return 2
    # an id a run does not evaluate (fixed7, ful) is an error naming the known ones, before anything is written
    protocols = {m: cc.run_protocols(cfg, m, args.protocols) for m in args.methods}
    if args.mem_mb is not None and job_memory_problem(args.mem_mb, "--mem-mb"):
        raise cc.ConfigError(job_memory_problem(args.mem_mb, "--mem-mb"))
    if len(args.config) != 1 or cc.read_config_record(args.config[0]) is None:
        # by hand: the profile's method runs (plugin names, parameters, display names), as the workflow
        # checks them when it starts (a workflow job reads the record of that check: no second one)
        cc.check_methods(cfg, discover())
    failures = 0
    for method in args.methods:
        code = _evaluate_method(args, cfg, method, protocols[method])
        if code == 130:
            return code
        failures += code
    return 1 if failures else 0


def _evaluate_method(args: argparse.Namespace, cfg: dict, method: str, protocols: list[str]) -> int:
    """One method run on every dataset of ``args``: 0, 1 when a job or a run failed, 130 when stopped."""
    from chorustic.evaluation.job import JobFailed, JobSpec, failed_runs_message
    from chorustic.evaluation.supervisor import JobInterrupted, run_evaluation
    from chorustic.methods import discover
    from chorustic.resources import evaluation_limits
    from chorustic.run_plan import RunPlan

    plugin = cfg["methods"][method]["plugin"]
    # the slice of the run plan with this run's jobs: the one resolved description of each (parameters,
    # fingerprint, the run's own settings), as the workflow's plan holds them; its plugin and parameters checked
    plan = RunPlan.from_config(cfg, discover(only=plugin), methods=[method], datasets=list(args.datasets))
    own = plan.jobs[0].run_resources if plan.jobs else {}
    # by hand (no --mem-mb) the run's own setting still holds; the workflow passes the job's mem_mb
    mem_mb = args.mem_mb if args.mem_mb is not None else own.get("mem_mb")
    limits = evaluation_limits(cfg, method, own, job_mem_mb=mem_mb, time_limit_min=args.runtime,
                               cluster_runtime_min=args.cluster_runtime)
    evaluation = {**cfg["evaluation"], **({"isolate": False} if args.no_isolation else {})}
    failures = 0
    for job in plan.jobs:
        dataset = job.dataset
        ctx_file = Path(args.contexts or contexts_path(cfg["paths"]["results_dir"], dataset))
        if not ctx_file.exists():
            _write_contexts(cfg, dataset, ctx_file)
        _check_contexts_cover(cfg, protocols, ctx_file)
        spec = JobSpec.from_plan(plan, job, contexts_file=ctx_file, n_jobs=args.threads, protocols=protocols)
        try:
            manifest = run_evaluation(spec, evaluation, limits=limits, threads=args.threads)
        except JobFailed as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            failures += 1
            continue
        except JobInterrupted as exc:  # stopped from outside: one line, and the run stops here
            print(f"STOPPED: {exc}", file=sys.stderr)
            return 130
        for run in manifest["runs"]:
            acc = f"{run['accuracy']:.4f}" if run.get("accuracy") is not None else "-"
            print(f"{method}\t{dataset}\t{run['protocol']}\tseed {run['seed']}\t{run['status']}\t{acc}"
                  + (f"\t{run['error']}" if run.get("error") else ""), flush=True)
        message = failed_runs_message(manifest, spec.results_dir)
        if message:
            failures += 1
            print(f"FAILED: {message}", file=sys.stderr)
    if plan.broken_runs:
        print(f"chorustic evaluate: {plan.broken_runs[method]}", file=sys.stderr)
    return 1 if failures else 0


def _check_contexts_cover(cfg: dict, protocols: list[str], path: Path) -> None:
    """A context file without a context the configuration selects (written for other `protocols` settings) is
    an error naming the file and the fix, before anything is run or written (a job never silently runs a
    part of its contexts)."""
    from chorustic import config as cc
    from chorustic.protocols.contexts import context_specs

    try:
        have = {(c["protocol"], int(c["seed"])) for c in json.loads(path.read_text(encoding="utf-8"))["contexts"]}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return  # unreadable: the job records that reason (and the workflow re-makes the file)
    lacking = [s.key for s in context_specs(cfg["protocols"]) if s.protocol in protocols
               and (s.protocol, s.seed) not in have]
    if lacking:
        raise cc.ConfigError(
            f"the context file {path} has no context {', '.join(lacking[:5])}{' ...' if len(lacking) > 5 else ''} "
            "(protocol/seed) that the configuration selects: it was written for other `protocols` settings. "
            "Delete it (it is written again from the configuration) or pass --contexts with a matching file."
        )


def _write_contexts(cfg: dict, dataset: str, path: Path) -> None:
    """The dataset's context file under the configuration's protocols (what the contexts rule writes)."""
    from chorustic import config as cc
    from chorustic.data import load_dataset
    from chorustic.protocols.contexts import build_contexts, write_contexts

    ds = load_dataset(dataset, cfg["paths"]["data_dir"], cache_dir=cfg["paths"]["cache_dir"],
                      offline=cfg["data"]["offline"], lock=cc.lock_file(cfg) or True,
                      allow_modified=cc.allow_modified_data(cfg, dataset))
    write_contexts(path, build_contexts(ds.y_train, dataset=ds.name, archive=ds.archive,
                                        protocols=cfg["protocols"], class_labels=ds.classes))


def _aggregate(args: argparse.Namespace) -> int:
    from chorustic import config as cc
    from chorustic.evaluation.aggregate import (
        collect_configured,
        collect_runs,
        method_metadata,
        write_accuracies,
    )
    from chorustic.evaluation.results import metrics_file
    from chorustic.methods import discover

    cfg = cc.load_config(args.config)
    results_dir = path_of(args, "results_dir", cfg)
    disc = discover()
    # With --config: every job that configuration expects (a missing or unreadable one is listed as failed)
    # and the current fingerprints (results made with other parameters or code are stale); without: every
    # manifest found.
    if args.config:
        got = collect_configured(cfg, results_dir, discovery=disc)
    else:
        got = collect_runs(results_dir, None, metadata=method_metadata(cfg, disc))
    out = args.out or str(Path(results_dir) / "accuracies.csv")
    unreadable = write_accuracies(got.table, out, results_dir)
    n_jobs = len({(r.method, r.dataset) for r in got.table.itertuples()})
    print(f"{len(got.table)} runs of {n_jobs} jobs -> {out} (and every run's measures -> {metrics_file(out)})")
    for line in unreadable:
        print(f"note: {line}", file=sys.stderr)
    if got.unlisted:
        shown = ", ".join(got.unlisted[:5]) + (f" and {len(got.unlisted) - 5} more" if len(got.unlisted) > 5 else "")
        print(f"note: {len(got.unlisted)} job(s) in {results_dir}/runs are not jobs of this configuration and are not "
              f"in the table: {shown} (aggregate without --config to see every job there)", file=sys.stderr)
    for p in got.problems:
        print(f"problem: {p}", file=sys.stderr)
    if got.problems:
        print(f"chorustic aggregate: {len(got.problems)} job(s) did not finish cleanly; their runs are `failed` rows "
              f"with the reason in {out}", file=sys.stderr)
    return 1 if got.problems else 0
