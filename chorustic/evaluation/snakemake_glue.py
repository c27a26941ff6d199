"""The functions the workflow's scripts call (``workflow/scripts/*.py``): Snakemake objects in, package calls out."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from chorustic import config as cc
from chorustic.evaluation.aggregate import aggregate_manifests, write_accuracies
from chorustic.evaluation.job import JobSpec, run_job
from chorustic.evaluation.supervisor import run_supervised
from chorustic.resources import worker_limits

__all__ = ["job_spec", "evaluate_from_snakemake", "aggregate_from_snakemake", "method_metadata"]


def job_spec(cfg: dict, method: str, dataset: str, *, contexts_file: str, n_jobs: int = 1) -> JobSpec:
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
    )


def evaluate_from_snakemake(smk: Any) -> None:
    cfg = smk.config
    spec = job_spec(cfg, smk.wildcards.method, smk.wildcards.dataset, contexts_file=smk.input.contexts,
                    n_jobs=smk.threads)
    ev = cfg["evaluation"]
    if ev.get("isolate", True):
        enforce = ev.get("enforce_limits", True)
        # the worker's share of the job's memory and time (chorustic.resources.worker_limits)
        mem_mb, runtime_min = worker_limits(float(smk.resources.mem_mb), float(smk.resources.runtime))
        run_supervised(
            spec,
            mem_mb=mem_mb if enforce else None,
            runtime_min=runtime_min if enforce else None,
            threads=int(smk.threads),
            log_file=sys.stdout,
        )
    else:
        run_job(spec)
    out = Path(smk.output[0])
    if not out.exists():
        raise RuntimeError(f"evaluation of {spec.method} on {spec.dataset} finished without writing {out}")


def method_metadata(cfg: dict) -> dict[str, dict]:
    """Display name, group, target fit and reported flag of every configured run (from the plugins)."""
    from chorustic.methods import discover

    disc = discover()
    meta = {}
    for run in cfg["methods"]:
        entry = cc.method_entry(cfg, run)
        m = disc.methods.get(entry["plugin"])
        if m is None:
            continue
        meta[run] = {"display_name": entry["display_name"] or m.info.display_name, "group": m.info.group,
                     "fits_on_target": m.info.fits_on_target, "reported": m.info.reported}
    return meta


def aggregate_from_snakemake(smk: Any) -> None:
    df = aggregate_manifests(list(smk.input), metadata=method_metadata(smk.config))
    write_accuracies(df, smk.output[0])
    counts = df.groupby(["method", "status"]).size().unstack(fill_value=0) if len(df) else df
    print(f"{len(df)} runs from {len(smk.input)} manifests\n{counts}")
    failed = df[df["status"] == "failed"]
    for row in failed.itertuples(index=False):
        print(f"FAILED {row.method} {row.dataset} {row.protocol} seed {row.seed}: {row.error}")
