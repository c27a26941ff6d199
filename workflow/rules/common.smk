# Shared lists and helpers; all logic lives in the chorustic package (chorustic.config).
import json
from pathlib import Path

from chorustic import config as cc
from chorustic import resources as cr
from chorustic.methods import discover

cc.validate_config(config)

PATHS = config["paths"]
DATA_DIR = PATHS["data_dir"]
CACHE_DIR = PATHS["cache_dir"]
RESULTS = PATHS["results_dir"]
REPORTS = PATHS["reports_dir"]
LOGS = PATHS["logs_dir"]
MODELS = PATHS["models_dir"]

DATASETS = cc.dataset_names(config)

_DISCOVERY = discover()
for _file, _tb in sorted(_DISCOVERY.broken.items()):
    logger.warning(f"chorustic: plugin file baselines/{_file} failed to load and is skipped:\n{_tb}")

METHODS = []
for _m in cc.evaluated_methods(config):
    _plugin = cc.method_entry(config, _m)["plugin"]
    if _plugin in _DISCOVERY.methods:
        METHODS.append(_m)
    else:
        logger.warning(f"chorustic: method run {_m!r} skipped: plugin {_plugin!r} is not available "
                       f"(see `chorustic methods`)")

EVAL_JOBS = [(m, d) for m in METHODS for d in cc.method_datasets(config, m, DATASETS)]
MANIFESTS = [f"{RESULTS}/runs/{m}/{d}.json" for m, d in EVAL_JOBS]
ACCURACIES = f"{RESULTS}/accuracies.csv"
REPORT_INDEX = f"{REPORTS}/README.md"


wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_\-]*",
    method=r"[a-z0-9_]+",
    run=r"[a-z0-9_]+",


# Job resources (chorustic.resources): memory and time limits on every rule, evaluate jobs sized by
# their dataset, GPUs and the site's SLURM settings from the config. Computed once per job here; a rule
# takes them with `resources: **per_job(...)`.
EVALUATE_RESOURCES = {
    (m, d): cr.evaluate_resources(config, m, d, _DISCOVERY.methods.get(cc.method_entry(config, m)["plugin"]))
    for m, d in EVAL_JOBS
}
DATASET_RESOURCES = {
    name: {d: cr.rule_resources(config, name, d) for d in DATASETS} for name in ("download", "preprocess", "contexts")
}
PRETRAIN_RESOURCES = {run: cr.pretrain_resources(config, run) for run in config.get("pretrain") or {}}


def per_job(table, key):
    """Snakemake resources from a table of per-job resource dicts: one function per resource name,
    looking the job up by `key(wildcards)`. A name a job does not have evaluates to None (unset)."""
    names = sorted({n for res in table.values() for n in res} - {"threads"})
    return {n: (lambda w, n=n: table[key(w)].get(n)) for n in names}


def method_checkpoint_inputs(wildcards):
    """The checkpoint of a method run as an input: produced by a pretrain run, or an existing local file
    (so a changed checkpoint re-runs the evaluation). A missing local file is not an input: the job runs
    and records the method as failed with the reason, instead of the whole DAG refusing to start."""
    entry = cc.method_entry(config, wildcards.method)
    if cc.pretrain_run_of(entry) is not None:
        return [cc.resolved_params(config, wildcards.method)["checkpoint"]]
    ckpt = entry["params"].get("checkpoint")
    if isinstance(ckpt, str) and ckpt and "://" not in ckpt and Path(ckpt).is_file():
        return [ckpt]
    return []


def method_conda_env(method):
    """workflow/envs/<plugin>.yaml when the plugin has its own environment, else the workflow's."""
    plugin = cc.method_entry(config, method)["plugin"]
    own = Path(workflow.basedir) / "workflow" / "envs" / f"{plugin}.yaml"
    return f"../envs/{plugin}.yaml" if own.exists() else "../envs/chorustic.yaml"
