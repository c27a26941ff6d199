# Shared lists and helpers; all logic lives in the chorustic package (chorustic.config). Every rule runs
# one `chorustic` command (shell:), the command a user can also run by hand. Every path in a command is
# quoted (`{x:q}`, or shlex.quote for a value made here), so any folder name works.
import json
import shlex
import sys
from pathlib import Path

from chorustic import config as cc
from chorustic import resources as cr
from chorustic.evaluation.integrity import set_aside_damaged
from chorustic.errors import UserError
from chorustic.data.duplicates import audit_path, duplicates_file
from chorustic.results_layout import accuracies_file, contexts_path, manifest_path, metrics_file
from chorustic.methods import discover
from chorustic.run_plan import RunPlan


def launch_prefix(nproc):
    """The pretrain command's launcher (chorustic.training.distributed), imported when a pretrain job
    needs it: it imports torch, which building the job graph does not need."""
    from chorustic.training.distributed import launch_prefix as prefix

    return prefix(nproc)


# The one validation of the configuration: a mistake stops here with one message naming the key (and a key
# written twice in a config file, which Snakemake's YAML reader accepts, names the file and the line).
def _or_exit(check, *args):
    """A configuration mistake ends the workflow as it ends a `chorustic` command: one line on stderr naming
    the file or key and the fix, exit status 2 (Snakemake would print it under a traceback, exit 1)."""
    try:
        return check(*args)
    except UserError as exc:
        print(f"chorustic: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)


_or_exit(cc.check_config_files, workflow.configfiles)
_or_exit(cc.validate_config, config)

PATHS = config["paths"]
DATA_DIR = PATHS["data_dir"]
CACHE_DIR = PATHS["cache_dir"]
RESULTS = PATHS["results_dir"]
REPORTS = PATHS["reports_dir"]
LOGS = PATHS["logs_dir"]
MODELS = PATHS["models_dir"]

_DISCOVERY = discover()
# The run plan (chorustic.run_plan): every job of the configuration with its method's metadata, fingerprint,
# dataset shape, cost and resources, made once. An unknown plugin name or a parameter the plugin does not
# accept stops here (one message naming the key); the runs of a plugin file that fails to import are
# scheduled and fail with the import error.
PLAN = _or_exit(RunPlan.from_config, config, _DISCOVERY)
for _m, _why in PLAN.broken_runs.items():
    logger.warning(f"chorustic: method run {_m!r}: {_why}; its jobs will fail with this reason")
for _file, _tb in sorted(_DISCOVERY.broken.items()):
    logger.warning(f"chorustic: plugin file baselines/{_file} failed to load:\n{_tb}")

DATASETS = PLAN.datasets
METHODS = PLAN.methods
EVAL_JOBS = PLAN.evaluation_jobs
_LOCK = cc.lock_file(config)
# Where the data lock file is does not change any data: a shell argument, not a params (no re-run).
DATA_LOCK_ARG = f"--lock-file {shlex.quote(_LOCK)}" if _LOCK else ""
# The results the report compares this run with (reports.reference_results; "" without): a params of the
# report rule (another reference re-makes the report), its table an input (an edited one does too).
_REFERENCE_RESULTS = cc.reference_results(config)
REFERENCE_RESULTS_ARG = f"--reference-results {shlex.quote(_REFERENCE_RESULTS)}" if _REFERENCE_RESULTS else ""
REFERENCE_RESULTS_TABLE = [str(accuracies_file(_REFERENCE_RESULTS))] if _REFERENCE_RESULTS else []
MANIFESTS = [str(Path(RESULTS) / j.manifest) for j in PLAN.jobs]  # the evaluate rule's outputs, in table order
AUDITS = [str(audit_path(RESULTS, d)) for d in DATASETS]  # the leakage audit of each dataset's splits
ACCURACIES = str(accuracies_file(RESULTS))
METRICS_TABLE = str(metrics_file(ACCURACIES))  # every run's measures, written with ACCURACIES
DUPLICATES_TABLE = str(duplicates_file(RESULTS))  # the audits of every dataset, written with ACCURACIES
REPORT_INDEX = f"{REPORTS}/README.md"
SOURCE_RECORD = f"{CACHE_DIR}/sources/{{dataset}}.json"  # the download rule's output (never the data files)
SOURCES = [SOURCE_RECORD.format(dataset=d) for d in DATASETS]
# The configuration Snakemake merged, as the `chorustic evaluate` / `aggregate` commands read it (--config):
# a file named by its content, so a shell argument, not a params (only the fingerprints re-run jobs).
RUN_CONFIG = cc.write_config_record(config, LOGS)

# A finished result that is damaged (a prediction file missing, truncated or edited, a manifest
# unreadable, a dataset file edited after it was recorded, accuracies.csv changed after it was written)
# is set aside here, so Snakemake sees it missing and re-makes exactly that job and what depends on it.
# A manifest without a run of a context the configuration selects (made by hand with another protocol
# selection, `chorustic evaluate --protocols`) is re-made the same way, and so is one made with other
# parameters or method code (moved to .stale: Snakemake's own params trigger needs its records in
# .snakemake, which a fresh clone or another working directory does not have).
if workflow.is_main_process:
    _contexts = [str(contexts_path(RESULTS, d)) for d in DATASETS]
    _expected = {manifest: {(c["protocol"], c["seed"]) for c in e.contexts}
                 for manifest, e in zip(MANIFESTS, PLAN.expected_jobs(RESULTS))}
    _fingerprints = {manifest: j.fingerprint for manifest, j in zip(MANIFESTS, PLAN.jobs)}
    for _msg in set_aside_damaged(MANIFESTS, SOURCES, [ACCURACIES], _contexts, _expected, _fingerprints):
        logger.warning(f"chorustic: {_msg}")


wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_\-]*",
    method=r"[a-z0-9_]+",
    run=r"[a-z0-9_]+",


# Job resources (chorustic.resources, through the plan): memory and time limits on every rule, evaluate jobs
# sized by their dataset, GPUs and the site's SLURM settings from the config. A rule takes them with
# `resources: **per_job(...)`.
EVALUATE_RESOURCES = {j.key: j.resources for j in PLAN.jobs}  # per_job's table (PLAN.job(...).resources)
DATASET_RESOURCES = PLAN.dataset_resources
PRETRAIN_RESOURCES = PLAN.pretrain_resources


def per_job(table, key):
    """Snakemake resources from a table of per-job resource dicts: one function per resource name,
    looking the job up by `key(wildcards)`. A name a job does not have evaluates to None (unset)."""
    names = sorted({n for res in table.values() for n in res} - {"threads"})
    return {n: (lambda w, n=n: table[key(w)].get(n)) for n in names}


def method_conda_env(method, dataset):
    """workflow/envs/<plugin>.yaml when the job's plugin has its own environment, else the workflow's."""
    plugin = PLAN.job(method, dataset).plugin
    own = Path(workflow.basedir) / "workflow" / "envs" / f"{plugin}.yaml"
    return f"../envs/{plugin}.yaml" if own.exists() else "../envs/chorustic.yaml"
