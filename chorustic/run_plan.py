"""The run plan: a configuration turned, once, into every job it asks for.

One :class:`RunPlan` holds the facts every consumer of a configuration needs, derived in one place:
the datasets, every evaluated method run with its plugin's metadata and fingerprint (parameters and
method code), and every evaluation job with its dataset's shape, the contexts it runs, its cost-model
estimate and its Snakemake resources; plus the resources of the data and pretraining rules. The
Snakefile (``workflow/rules/common.smk``), the aggregation (:func:`chorustic.evaluation.aggregate.
collect_configured`), ``chorustic plan-run`` (:mod:`chorustic.bill`) and the reports read it, so the
jobs that run, the jobs that are collected and the jobs that are billed are the same by construction.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Mapping

from chorustic import config as cc
from chorustic import resources as cr
from chorustic.methods.cost import JobSize
from chorustic.results_layout import contexts_path, manifest_path

__all__ = ["ExpectedJob", "PlannedJob", "RunPlan", "UNKNOWN_GROUP", "method_metadata"]

#: The table group of a method whose plugin file failed to import (its metadata is unknown).
UNKNOWN_GROUP = "Unknown (plugin failed to import)"
#: The rules whose jobs are one per dataset.
DATASET_RULES = ("download", "preprocess", "contexts")


@dataclasses.dataclass(frozen=True)
class ExpectedJob:
    """One evaluation job as the aggregation collects it: the contexts it ran (or should have)."""

    method: str
    dataset: str
    archive: str
    contexts: tuple[dict[str, Any], ...]
    """The contexts it runs: dicts with protocol, family, budget, seed."""
    pretrain_run: str | None = None
    """The pretraining run whose checkpoint it evaluates (:attr:`PlannedJob.pretrain_run`)."""


@dataclasses.dataclass(frozen=True)
class PlannedJob:
    """One evaluation job: a method run on a dataset, under every context of its protocols. It is the one
    resolved description of the job: the Snakefile's rules, ``chorustic evaluate`` (through
    :meth:`chorustic.evaluation.job.JobSpec.from_plan`), ``plan-run`` and the aggregation read it; nothing else resolves a method run's
    entry."""

    method: str
    """The run name (a key of ``methods`` in the config)."""
    dataset: str
    archive: str
    plugin: str
    display_name: str | None
    """The run's own display name (``methods.<run>.display_name``), None for its plugin's."""
    params: dict[str, Any]
    """The run's resolved parameters (``pretrain:<run>`` checkpoints as paths)."""
    run_protocols: tuple[str, ...] | None
    """The protocol ids the run is limited to (``methods.<run>.protocols``), None for all."""
    run_resources: dict[str, Any]
    """The run's own resource settings (``methods.<run>.resources``), which the worker limits name."""
    fingerprint: str | None
    """The run's fingerprint (parameters and method code), a ``params:`` of the evaluate rule."""
    contexts: tuple[dict[str, Any], ...]
    """The contexts the configuration's protocols give it (protocol, family, budget, seed); the dataset's
    context file may mark some ineligible."""
    size: JobSize | None
    """The input it sees (registry shape; 512 for resampled methods); None for a reported method or one
    whose plugin failed to import."""
    estimate_mb: float
    """The cost model's peak memory (MB), before the safety margin of the request."""
    estimate_s: float
    """The cost model's time on one CPU thread (s), before the safety margin of the request."""
    cost: Any
    """The run's :class:`~chorustic.methods.cost.CostModel` (``Method.cost_model`` of its parameters: a small
    checkpoint has its own), which the estimates come from; None for a reported method or a plugin that failed
    to import."""
    threads: int
    gpus: int
    resources: dict[str, Any]
    """Its Snakemake resources (:func:`chorustic.resources.evaluate_resources`)."""
    pretrain_run: str | None
    """The pretraining run whose checkpoint it evaluates, if any."""
    checkpoint_inputs: tuple[str, ...]
    """The checkpoint files it depends on (:func:`chorustic.config.checkpoint_inputs`), inputs of its rule."""
    manifest: str
    """Its manifest, relative to the results folder (:func:`chorustic.results_layout.manifest_path`)."""
    contexts_file: str
    """Its dataset's context file, relative to the results folder (:func:`chorustic.results_layout.contexts_path`)."""

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.dataset


@dataclasses.dataclass
class RunPlan:
    """Every job of a configuration (see the module docstring); make it with :meth:`from_config`."""

    cfg: dict
    datasets: list[str]
    methods: list[str]
    """The evaluated method runs, in the configuration's order."""
    metadata: dict[str, dict[str, Any]]
    """Display name, group, target fit and reported flag of every configured run."""
    fingerprints: dict[str, str]
    """Every planned run's fingerprint (its plugin's :func:`chorustic.methods.fingerprint.method_fingerprint` of
    its resolved parameters, as one canonical JSON string: a ``params:`` value of the evaluate rule)."""
    broken_runs: dict[str, str]
    """Runs whose plugin file fails to import, with the reason (they are scheduled and fail with it)."""
    jobs: list[PlannedJob]
    dataset_resources: dict[str, dict[str, dict[str, Any]]]
    """``{rule: {dataset: resources}}`` of the download, preprocess and contexts rules."""
    pretrain_resources: dict[str, dict[str, Any]]
    discovery: Any = dataclasses.field(default=None, repr=False)

    @classmethod
    def from_config(cls, cfg: dict, discovery=None, *, methods: list[str] | None = None,
                    datasets: list[str] | None = None) -> "RunPlan":
        """The plan of a validated configuration (``discovery``: the plugins, default: discovered).

        ``methods`` and ``datasets`` plan a slice: those method runs (any configured run, evaluated or not) on
        exactly those datasets (any known dataset: a run's ``archives`` and a reported method's covered datasets
        do not filter what is asked for by name), as ``chorustic evaluate`` runs them by hand; the whole
        configuration's plan is the slice of its ``evaluate`` list and ``datasets``."""
        from chorustic.data.registry import get_info, in_archives
        from chorustic.methods import discover
        from chorustic.methods.base import Method, ReportedMethod
        from chorustic.protocols.contexts import context_specs

        disc = discovery if discovery is not None else discover()
        runs = list(cfg["evaluate"]) if methods is None else list(methods)
        checked = cfg if methods is None else {**cfg, "evaluate": runs}
        broken = cc.check_methods(checked, disc)
        named = datasets is not None
        datasets = cc.dataset_names(cfg) if datasets is None else list(datasets)
        # every configured run's resolved entry, once (the metadata names every run; the jobs, the evaluated ones)
        entries = {run: cc.resolved_entry(cfg, run) for run in dict.fromkeys([*cfg["methods"], *runs])}
        metadata = method_metadata(cfg, disc, runs=None if methods is None else runs, entries=entries)
        specs = [{"protocol": s.protocol, "family": s.family, "budget": s.budget, "seed": s.seed}
                 for s in context_specs(cfg["protocols"])]
        archives = {d: get_info(d).archive for d in datasets}
        fingerprints = {run: _fingerprint(entries[run], disc) for run in runs}
        jobs = []
        for method in runs:
            entry = entries[method]
            plugin = disc.methods.get(entry["plugin"])
            wanted = entry["protocols"]
            contexts = tuple(c for c in specs if wanted is None or c["protocol"] in wanted)
            params = entry["params"] if plugin is not None else {}
            # a reported method computes nothing: no cost model
            cost = plugin.cost_model(**params) if isinstance(plugin, Method) else None
            # a reported method whose datasets are known gets jobs on those only (chorustic.methods.base)
            covered = plugin.covered_datasets(**params) if isinstance(plugin, ReportedMethod) else None
            # the run's datasets: those of its archives (``methods.<run>.archives``), unless named
            for dataset in (datasets if named else in_archives(datasets, entry["archives"])):
                if covered is not None and dataset not in covered and not named:
                    continue
                size, mem, seconds = cr.evaluate_estimate(cfg, entry, dataset, plugin, params=params)
                res = cr.evaluate_resources(cfg, entry, dataset, plugin, estimate=(size, mem, seconds))
                jobs.append(PlannedJob(
                    method=method, dataset=dataset, archive=archives[dataset], plugin=entry["plugin"],
                    display_name=entry["display_name"], params=params,
                    run_protocols=tuple(wanted) if wanted is not None else None,
                    run_resources=dict(entry["resources"]), fingerprint=fingerprints.get(method),
                    contexts=contexts, size=size, estimate_mb=mem, estimate_s=seconds, cost=cost,
                    threads=int(res["threads"]), gpus=int(res.get("local_gpus", 0)), resources=res,
                    pretrain_run=entry["pretrain_run"], checkpoint_inputs=tuple(entry["checkpoint_inputs"]),
                    manifest=manifest_path(".", method, dataset).as_posix(),
                    contexts_file=contexts_path(".", dataset).as_posix(),
                ))
        return cls(
            cfg=cfg, datasets=datasets, methods=runs, metadata=metadata,
            fingerprints=fingerprints, broken_runs=broken, jobs=jobs,
            dataset_resources={rule: {d: cr.rule_resources(cfg, rule, d) for d in datasets}
                               for rule in DATASET_RULES},
            pretrain_resources={run: cr.pretrain_resources(cfg, run) for run in cfg.get("pretrain") or {}},
            discovery=disc,
        )

    # ------------------------------------------------------------------------------ lookups
    @property
    def evaluation_jobs(self) -> list[tuple[str, str]]:
        """Every (method run, dataset), in table order."""
        return [j.key for j in self.jobs]

    def job(self, method: str, dataset: str) -> PlannedJob:
        return self._index[(method, dataset)]

    @property
    def _index(self) -> dict[tuple[str, str], PlannedJob]:
        index = self.__dict__.get("_index_cache")
        if index is None:
            index = self.__dict__["_index_cache"] = {j.key: j for j in self.jobs}
        return index

    def pretrain_runs(self) -> list[str]:
        """The pretraining runs whose checkpoints evaluated runs use."""
        return sorted({j.pretrain_run for j in self.jobs if j.pretrain_run})

    def expected_jobs(self, results_dir: str | Path | None = None):
        """The jobs as :class:`~chorustic.evaluation.aggregate.ExpectedJob` for collecting their results, with
        the contexts of the dataset's context file where it exists (it is what the job ran)."""
        results = Path(results_dir if results_dir is not None else self.cfg["paths"]["results_dir"])
        files: dict[str, list[dict[str, Any]] | None] = {}
        out = []
        for j in self.jobs:
            if j.dataset not in files:
                try:
                    doc = json.loads(contexts_path(results, j.dataset).read_text())
                    files[j.dataset] = [{k: c[k] for k in ("protocol", "family", "budget", "seed")}
                                        for c in doc["contexts"]]
                except (OSError, ValueError, KeyError, TypeError):
                    files[j.dataset] = None
            wanted = {c["protocol"] for c in j.contexts}
            contexts = files[j.dataset]
            contexts = j.contexts if contexts is None else tuple(c for c in contexts if c["protocol"] in wanted)
            out.append(ExpectedJob(j.method, j.dataset, j.archive, tuple(contexts), j.pretrain_run))
        return out


def method_metadata(cfg: Mapping[str, Any], discovery=None, *, runs: list[str] | None = None,
                    entries: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Display name, group, target fit, reported flag and whether the pretraining data includes UCR/UEA series
    (``MethodInfo.benchmark_in_pretraining``) of every configured run (``runs``: of those only), from the
    plugins (``entries``: the runs' resolved entries where the caller has them)."""
    from chorustic.methods import discover

    disc = discovery if discovery is not None else discover()
    meta = {}
    for run in (cfg["methods"] if runs is None else runs):
        entry = entries[run] if entries is not None else cc.method_entry(cfg, run)
        m = disc.methods.get(entry["plugin"])
        if m is None:  # its plugin file failed to import: its runs are listed as failed, under its run name
            meta[run] = {"display_name": entry["display_name"] or run, "group": UNKNOWN_GROUP,
                         "fits_on_target": False, "reported": False, "benchmark_in_pretraining": "unknown"}
        else:
            meta[run] = {"display_name": entry["display_name"] or m.info.display_name, "group": m.info.group,
                         "fits_on_target": m.info.fits_on_target, "reported": m.info.reported,
                         "benchmark_in_pretraining": m.info.benchmark_in_pretraining}
    return meta


def _fingerprint(entry: Mapping[str, Any], disc) -> str:
    """The fingerprint of a method run from its resolved entry (:func:`chorustic.config.resolved_entry`)."""
    from chorustic.methods import default_plugin_dir
    from chorustic.methods.fingerprint import method_fingerprint

    method = disc.methods.get(entry["plugin"])
    source = disc.sources.get(entry["plugin"]) if method is not None else f"{entry['plugin']}.py"
    return method_fingerprint(entry["plugin"], method, entry["params"],
                              default_plugin_dir() / source if source else None)

