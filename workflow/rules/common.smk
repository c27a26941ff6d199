# Shared lists and helpers; all logic lives in the chorustic package (chorustic.config).
import json
from pathlib import Path

from chorustic import config as cc
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


def method_resources(method):
    plugin = cc.method_entry(config, method)["plugin"]
    defaults = getattr(_DISCOVERY.methods.get(plugin), "resources", {}) or {}
    return cc.method_resources(config, method, defaults)


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
