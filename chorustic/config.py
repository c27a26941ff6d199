"""Workflow configuration: loading, validation and the derived lists the DAG and the CLI share.

The Snakefile loads ``config/config.yaml`` (the paper profile) and Snakemake deep-merges a profile's
config file over it (``config/demo.yaml``); :func:`load_config` does the same for the CLI. Lists are
replaced, dictionaries merged; so a profile selects methods with the ``evaluate`` list and adds
entries to the ``methods`` catalog.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

import yaml

from chorustic.errors import UserError, did_you_mean
from chorustic.paths import REPO_ROOT, repo_path

__all__ = [
    "REPO_ROOT",
    "SCHEMA_PATH",
    "DEFAULT_CONFIG",
    "ConfigError",
    "deep_merge",
    "load_config",
    "validate_config",
    "dataset_names",
    "dataset_archive",
    "evaluated_methods",
    "method_entry",
    "method_datasets",
    "run_protocols",
    "pretrain_run_of",
    "checkpoint_path",
    "checkpoint_inputs",
    "resolved_entry",
    "read_config_record",
    "write_config_record",
    "check_methods",
    "allow_modified_data",
    "lock_file",
    "reference_results",
]

SCHEMA_PATH = REPO_ROOT / "workflow" / "schema" / "config.schema.yaml"
DEFAULT_CONFIG = REPO_ROOT / "config" / "config.yaml"
PRETRAIN_PREFIX = "pretrain:"


class ConfigError(UserError, ValueError):
    """The configuration is invalid or inconsistent; the message names the key and the fix."""


def deep_merge(base: dict, override: dict) -> dict:
    """Snakemake's merge semantics: nested dicts merge, everything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key written twice in one mapping (plain YAML keeps the last value
    without a word: ``include:`` twice would plan only the second list)."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            first = seen[key].start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {key!r} is written twice in one mapping (first at line {first.line + 1}); "
                "YAML would keep only the last one: write it once", key_node.start_mark)
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def read_yaml(path: str | os.PathLike) -> Any:
    """One configuration file: its settings, or a :class:`ConfigError` naming the file, the line and column
    of what is wrong (not YAML, a key written twice) and what to do."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        return yaml.load(text, Loader=_StrictLoader) or {}  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"cannot read config file {path}: not valid YAML ({problem}{where})") from None


def check_config_files(paths: Iterable[str | os.PathLike]) -> None:
    """Read each configuration file as :func:`load_config` does (Snakemake reads them with plain YAML: a key
    written twice, which it accepts, is refused here, naming the file and the line)."""
    for p in paths:
        read_yaml(p)


def load_config(paths: Iterable[str | os.PathLike] | None = None, overrides: dict | None = None) -> dict:
    """Load ``config/config.yaml`` then each of ``paths`` over it, then ``overrides``; validate.

    A workflow's configuration record (:func:`write_config_record`, the only path) is read as it is: it
    was validated once, when the workflow started."""
    paths = list(paths or [])
    if len(paths) == 1 and not overrides:
        record = read_config_record(paths[0])
        if record is not None:
            return record
    files = [DEFAULT_CONFIG] + [Path(p) for p in (paths or []) if Path(p).resolve() != DEFAULT_CONFIG.resolve()]
    cfg: dict[str, Any] = {}
    for f in files:
        data = read_yaml(f)
        if not isinstance(data, dict):
            raise ConfigError(f"config file {f} must hold a mapping of settings, not {type(data).__name__}")
        cfg = deep_merge(cfg, data)
    if overrides:
        cfg = deep_merge(cfg, overrides)
    validate_config(cfg)
    return cfg


def _key_hint(exc) -> str:
    """For a key the schema does not allow (a typo: ``inclde``), "Did you mean 'include'?" from the keys it
    allows at that place."""
    from chorustic.errors import did_you_mean

    if exc.validator != "additionalProperties" or not isinstance(exc.instance, dict):
        return ""
    allowed = list((exc.schema.get("properties") or {}))
    unknown = [k for k in exc.instance if k not in allowed]
    return "".join(did_you_mean(k, allowed) for k in unknown[:1])


def _complete_runs(cfg: dict) -> None:
    """Complete the method runs in place (idempotent, so a configuration record validated again is unchanged):

    * the runs of ``evaluate_extra`` are appended to ``evaluate`` (those not in it yet), so a config file
      or ``--config evaluate_extra=[...]`` adds runs to a profile's list without repeating it (a second
      ``evaluate:`` replaces the whole list, as every YAML list is replaced);
    * a run in ``evaluate`` that ``methods`` lacks is the plugin of that name with its default parameters
      (``methods: {flat_logreg: {plugin: flat_logreg}}``, written for it); :func:`check_methods` says when
      no plugin has that name.
    """
    extra = [m for m in cfg.get("evaluate_extra") or [] if m not in cfg["evaluate"]]
    cfg["evaluate"] = list(cfg["evaluate"]) + extra
    for run in cfg["evaluate"]:
        if run not in cfg["methods"]:
            cfg["methods"][run] = {"plugin": run}


def validate_config(cfg: dict) -> None:
    """JSON-schema validation plus the cross-references a schema cannot express.

    Completes the method runs in place first (:func:`_complete_runs`: ``evaluate_extra``, and runs named
    by their plugin only)."""
    import jsonschema

    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    try:
        jsonschema.validate(cfg, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ConfigError(f"invalid configuration at {where}: {exc.message}{_key_hint(exc)}") from None
    dup = _duplicates(cfg["evaluate"])
    if dup:
        raise ConfigError(f"`evaluate` lists {', '.join(map(repr, dup))} more than once; list each method run once")
    dup = _duplicates(cfg.get("evaluate_extra") or [])
    if dup:
        raise ConfigError(f"`evaluate_extra` lists {', '.join(map(repr, dup))} more than once; list each method "
                          "run once")
    _complete_runs(cfg)
    if not cfg["evaluate"]:
        raise ConfigError("`evaluate` lists no method run; list the runs to evaluate (keys of `methods`, or plugin "
                          "names)")
    produced = _protocol_ids(cfg)
    if not produced:
        raise ConfigError("the `protocols` settings select no context (full is false and no shots or percents are "
                          "listed); enable at least one protocol")
    for m in (cfg.get("data") or {}).get("mirrors") or []:
        from chorustic.data.download import Mirror

        try:
            Mirror.parse(m)
        except ValueError as exc:
            raise ConfigError(f"data.mirrors: {exc}") from None
    for name in cfg["evaluate"]:
        _check_protocol_ids(
            cfg["methods"][name].get("protocols") or [], produced, f"methods.{name}.protocols",
            "the `protocols` settings do not produce (they produce: {known})",
            "fix the ids or the `protocols` settings",
        )
    for name in cfg["evaluate"]:
        _check_job_memory(cfg, name)
    for name, entry in cfg["methods"].items():
        run = pretrain_run_of(entry)
        if run is not None and run not in (cfg.get("pretrain") or {}):
            raise ConfigError(f"method {name!r} uses checkpoint 'pretrain:{run}' but `pretrain` has no run {run!r}")
    datasets = dataset_names(cfg)
    empty = [m for m in cfg["evaluate"] if not method_datasets(cfg, m, datasets)]
    if empty:
        raise ConfigError(
            "method run(s) " + ", ".join(f"{m!r} (archives {cfg['methods'][m].get('archives')})" for m in empty)
            + " would have no dataset among the selected ones, so they would be missing from every table; remove "
            "them from `evaluate` or select a dataset of their archives"
        )
    ref = (cfg.get("reports") or {}).get("reference_method")
    if ref is not None and ref not in cfg["evaluate"]:
        raise ConfigError(f"reports.reference_method {ref!r} is not one of the evaluated methods {cfg['evaluate']}; "
                          "set it to one of them, or add runs with `evaluate_extra:` instead of replacing `evaluate`")
    _check_reference_results(cfg)
    _check_paths(cfg)


def _check_paths(cfg: dict) -> None:
    """Each ``paths.*`` folder is a folder or can be made one: no part of it is an existing file (Snakemake
    would stop with a ``NotADirectoryError`` stack when it makes the first log or output there)."""
    for key, value in (cfg.get("paths") or {}).items():
        if not isinstance(value, str):
            continue
        for part in [Path(value), *Path(value).parents]:
            if part.exists():
                if not part.is_dir():
                    raise ConfigError(f"paths.{key} {value!r}: {part} is a file, not a folder; point paths.{key} "
                                      "at a folder (it is made when missing)")
                break


def _check_reference_results(cfg: dict) -> None:
    """``reports.reference_results`` names a results folder holding ``accuracies.csv`` (or such a file)."""
    value = (cfg.get("reports") or {}).get("reference_results")
    if not value:
        return
    from chorustic.results_layout import accuracies_file

    path = repo_path(value)
    table = accuracies_file(path)
    if table.is_file():
        return
    what = "does not exist" if not path.exists() else f"holds no {table.name}"
    raise ConfigError(
        f"reports.reference_results: {value!r} {what} ({path}; a relative path is read from the repository "
        f"root); set it to a results folder holding accuracies.csv, such as examples/demo/results, or to null"
    )


def _check_job_memory(cfg: dict, run: str) -> None:
    """An evaluation job given less memory than it needs to run at all is refused (naming the minimum)."""
    from chorustic.methods.cost import job_memory_problem

    mem = (cfg["methods"][run].get("resources") or {}).get("mem_mb")
    problem = job_memory_problem(mem, f"methods.{run}.resources.mem_mb") if mem is not None else None
    cap = (cfg.get("cluster") or {}).get("max_mem_mb")
    if problem is None and cap is not None:
        problem = job_memory_problem(cap, "cluster.max_mem_mb (the most memory any job may ask for)")
    if problem:
        raise ConfigError(problem)


def _duplicates(items: Iterable[Any]) -> list[Any]:
    seen: set = set()
    return sorted({x for x in items if x in seen or seen.add(x)}, key=str)


def _protocol_ids(cfg: dict) -> list[str]:
    from chorustic.protocols.contexts import protocol_ids

    try:
        return protocol_ids(cfg["protocols"])
    except ValueError as exc:
        raise ConfigError(f"protocols: {exc}; list each shot level, percentage and seed once") from None


def _check_protocol_ids(wanted: Iterable[str], known: list[str], where: str, what: str, fix: str) -> None:
    """A protocol id outside ``known`` is a ConfigError naming it, the closest known ids and ``fix``."""
    unknown = [p for p in wanted if p not in known]
    if unknown:
        hints = "".join(did_you_mean(p, known) for p in unknown)
        raise ConfigError(
            f"{where} lists {', '.join(map(repr, unknown))}, which {what.format(known=', '.join(known) or 'nothing')}."
            f"{hints} {fix[0].upper()}{fix[1:]}."
        )


def run_protocols(
    cfg: dict, run: str, requested: Iterable[str] | None = None, *, where: str = "--protocols"
) -> list[str]:
    """The protocol ids method run ``run`` evaluates, in protocol order: the ids the `protocols` settings
    produce (:func:`chorustic.protocols.protocol_ids`, the one home of protocol ids), restricted to
    ``methods.<run>.protocols``, then to ``requested`` (e.g. ``chorustic evaluate --protocols``).

    A requested id the run does not evaluate (``fixed7``, ``ful``), or a request that names none, is a
    :class:`ConfigError` naming the known ids and the closest ones."""
    produced = _protocol_ids(cfg)
    own = method_entry(cfg, run)["protocols"]
    known = [p for p in produced if not own or p in own]
    if requested is None:
        return known
    requested = list(dict.fromkeys(requested))
    if not requested:
        raise ConfigError(f"{where} names no protocol; name one or more of: {', '.join(known)}")
    limited = f" (methods.{run}.protocols)" if own else ""
    _check_protocol_ids(
        requested, known, where, f"method run {run!r} does not evaluate under this configuration{limited} "
        "(it evaluates: {known})", "name protocols it evaluates, or change the `protocols` settings",
    )
    return [p for p in known if p in requested]


def dataset_names(cfg: dict) -> list[str]:
    """Datasets of the profile, in registry order (UCR first, then UEA).

    Every name in ``include`` and ``exclude`` must be a registry dataset (a misspelling is an error
    with the closest names, never silently ignored), listed once, and of one of ``archives``.
    """
    from chorustic.data.registry import get_info, list_datasets

    archives = cfg["datasets"]["archives"]
    include = cfg["datasets"]["include"]
    exclude_list = list(cfg["datasets"].get("exclude") or [])
    for key, names in (("include", [] if include == "all" else include), ("exclude", exclude_list)):
        dup = _duplicates(names)
        if dup:
            raise ConfigError(f"datasets.{key} lists {', '.join(map(repr, dup))} more than once; list each dataset once")
        for n in names:
            try:
                get_info(n)
            except UserError as exc:
                raise ConfigError(f"datasets.{key}: {exc}") from None
    exclude = set(exclude_list)
    if include == "all":
        names = [n for a in archives for n in list_datasets(a)]
    else:
        names = []
        for n in include:
            info = get_info(n)
            if info.archive not in archives:
                raise ConfigError(
                    f"datasets.include lists {n!r}, a {info.archive} dataset, but datasets.archives is {archives}; "
                    f"add {info.archive} to datasets.archives or remove {n!r}"
                )
            names.append(info.name)
    out = [n for n in names if n not in exclude]
    if not out:
        raise ConfigError("the datasets settings select no dataset (every included dataset is excluded)")
    return out


def dataset_archive(name: str) -> str:
    from chorustic.data.registry import get_info

    return get_info(name).archive


def evaluated_methods(cfg: dict) -> list[str]:
    return list(cfg["evaluate"])


def method_entry(cfg: dict, run: str) -> dict[str, Any]:
    try:
        entry = cfg["methods"][run]
    except KeyError:
        raise ConfigError(f"no method run {run!r} in the configuration.{did_you_mean(run, cfg['methods'])} "
                          f"Known: {', '.join(sorted(cfg['methods']))}") from None
    return {"plugin": entry["plugin"], "display_name": entry.get("display_name"),
            "params": dict(entry.get("params") or {}), "archives": entry.get("archives"),
            "protocols": entry.get("protocols"), "resources": dict(entry.get("resources") or {})}


def method_datasets(cfg: dict, run: str, datasets: list[str] | None = None) -> list[str]:
    entry = method_entry(cfg, run)
    from chorustic.data.registry import in_archives

    return in_archives(dataset_names(cfg) if datasets is None else datasets, entry["archives"])


def pretrain_run_of(entry: dict) -> str | None:
    ckpt = (entry.get("params") or {}).get("checkpoint")
    if isinstance(ckpt, str) and ckpt.startswith(PRETRAIN_PREFIX):
        return ckpt[len(PRETRAIN_PREFIX):]
    return None


def checkpoint_path(cfg: dict, pretrain_run: str) -> str:
    """Where the pretrain rule writes the checkpoint of ``pretrain_run``."""
    return str(Path(cfg["paths"]["models_dir"]) / pretrain_run / "model.safetensors")


def resolved_entry(cfg: dict, run: str) -> dict[str, Any]:
    """:func:`method_entry` with its parameters resolved (``pretrain:<run>`` checkpoint references replaced by
    paths), ``pretrain_run``, the pretraining run it evaluates (or None), and ``checkpoint_inputs``
    (:func:`checkpoint_inputs`): the entry the run plan holds."""
    entry = method_entry(cfg, run)
    prun = pretrain_run_of(entry)
    if prun is not None:
        entry["params"]["checkpoint"] = checkpoint_path(cfg, prun)
    entry["pretrain_run"] = prun
    entry["checkpoint_inputs"] = checkpoint_inputs(entry)
    return entry


def resolved_params(cfg: dict, run: str) -> dict[str, Any]:
    """The run's parameters with ``pretrain:<run>`` checkpoint references replaced by paths."""
    return resolved_entry(cfg, run)["params"]


def checkpoint_inputs(entry: dict) -> list[str]:
    """The checkpoint file the evaluations of a method run (``entry``: its :func:`resolved_entry`) depend on (a
    workflow input, so a changed checkpoint re-runs them): the one its pretrain run writes, or an existing
    local file. A missing local file is not an input: the job runs and records the method as failed with the
    reason, instead of the whole workflow refusing to start."""
    if entry["pretrain_run"] is not None:
        return [entry["params"]["checkpoint"]]
    ckpt = entry["params"].get("checkpoint")
    if isinstance(ckpt, str) and ckpt and "://" not in ckpt and Path(ckpt).is_file():
        return [ckpt]
    return []


#: The name of a configuration record: ``config-<the first 12 hex digits of its SHA-256>.json``.
_RECORD = re.compile(r"config-([0-9a-f]{12})\.json")


def _record_text(cfg: dict) -> str:
    return json.dumps(cfg, sort_keys=True, indent=1, default=str) + "\n"


def write_config_record(cfg: dict, folder: str | os.PathLike) -> str:
    """Write the configuration of a workflow run, validated and checked against the plugins, to
    ``<folder>/config-<digest>.json`` (named by its content, written once) and return its path. The
    workflow's rules pass it to the ``chorustic`` commands (``--config``): every job reads exactly the
    configuration Snakemake merged (the profile's files, ``--configfile``, ``--config``), and reads it as
    it is (:func:`read_config_record`), without validating and checking it again."""
    from chorustic.io import atomic_write_text

    text = _record_text(cfg)
    path = Path(folder) / f"config-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    if not path.is_file() or path.read_text() != text:
        atomic_write_text(path, text)
    return str(path)


def read_config_record(path: str | os.PathLike) -> dict | None:
    """The configuration in a record :func:`write_config_record` wrote, or None for any other file (a
    record edited since, its content no longer matching its name, is any other file)."""
    path = Path(path)
    m = _RECORD.fullmatch(path.name)
    if m is None or not path.is_file():
        return None
    text = path.read_text()
    if hashlib.sha256(text.encode()).hexdigest()[:12] != m.group(1):
        return None
    return json.loads(text)


def lock_file(cfg: dict) -> str | None:
    """``data.lock_file``: the data lock file (None: ``<data_dir>/chorustic-data.lock.json``)."""
    return (cfg.get("data") or {}).get("lock_file") or None


def reference_results(cfg: dict) -> str | None:
    """``reports.reference_results``: the results folder (or its ``accuracies.csv``) the report compares this
    run with (``chorustic report --reference-results``), or None. A relative path is read from the repository
    root, like the other reference files of a configuration (:mod:`chorustic.paths`): it is returned as
    written when the working directory is the repository root (the demo's ``examples/demo/results``, named
    so in the report), else as an absolute path."""
    value = (cfg.get("reports") or {}).get("reference_results")
    if not value:
        return None
    path = repo_path(value)
    if not Path(value).expanduser().is_absolute() and Path.cwd().resolve() == REPO_ROOT:
        return str(value)
    return str(path)


def allow_modified_data(cfg: dict, dataset: str | None = None) -> bool:
    """``data.allow_modified_data``: True (every dataset), False, or a list of dataset names whose files
    may differ from the archive's published sizes (a user's own variant; recorded in the results)."""
    value = (cfg.get("data") or {}).get("allow_modified_data", False)
    if isinstance(value, list):
        return dataset in value if dataset is not None else bool(value)
    return bool(value)


def check_methods(cfg: dict, discovery=None) -> dict[str, str]:
    """Check every evaluated method run against its plugin; return ``{run: reason}`` for runs whose
    plugin file fails to import (they are scheduled and fail with that reason, listed as failed runs).

    Raises :class:`ConfigError` for a plugin name no plugin file provides (with the closest names) and
    for parameters the plugin does not accept (with its known parameters).
    """
    from chorustic.methods import discover

    disc = discovery if discovery is not None else discover()
    broken_stems = {Path(f).stem: f for f in disc.broken}
    broken_runs: dict[str, str] = {}
    for run in evaluated_methods(cfg):
        entry = method_entry(cfg, run)
        plugin = entry["plugin"]
        method = disc.methods.get(plugin)
        if method is None:
            if plugin in broken_stems:
                broken_runs[run] = f"plugin file baselines/{plugin}.py failed to import: {disc.problem(broken_stems[plugin])}"
                continue
            extra = ""
            if disc.broken:
                extra = f" (plugin files that failed to import: {', '.join(sorted(disc.broken))}; see `chorustic methods`)"
            if cfg["methods"].get(run) == {"plugin": run}:  # named in `evaluate` only (or as such in `methods`)
                known = sorted(set(cfg["methods"]) - {run} | set(disc.methods))
                raise ConfigError(
                    f"`evaluate` lists {run!r}, which is neither a method run of `methods` nor a plugin."
                    f"{did_you_mean(run, known)} Method runs: {', '.join(sorted(set(cfg['methods']) - {run}))}; "
                    f"plugins: {', '.join(sorted(disc.methods))}{extra}"
                )
            raise ConfigError(
                f"methods.{run}.plugin: no plugin named {plugin!r}.{did_you_mean(plugin, disc.methods)} "
                f"Available: {', '.join(sorted(disc.methods))}{extra}"
            )
        try:
            method.params(entry["params"])
        except ValueError as exc:
            unknown = [k for k in entry["params"] if k not in method.default_params]
            hints = "".join(did_you_mean(k, method.default_params) for k in unknown)
            raise ConfigError(f"methods.{run}.params: {exc}.{hints}") from None
    names: dict[str, str] = {}
    for run in evaluated_methods(cfg):
        entry = method_entry(cfg, run)
        method = disc.methods.get(entry["plugin"])
        name = entry["display_name"] or (method.info.display_name if method is not None else run)
        if name in names:
            raise ConfigError(
                f"method runs {names[name]!r} and {run!r} would both be shown as {name!r} in every table; give one "
                f"of them its own display_name in `methods`"
            )
        names[name] = run
    return broken_runs
