"""Workflow configuration: loading, validation and the derived lists the DAG and the CLI share.

The Snakefile loads ``config/config.yaml`` (the paper profile) and Snakemake deep-merges a profile's
config file over it (``config/demo.yaml``); :func:`load_config` does the same for the CLI. Lists are
replaced, dictionaries merged; so a profile selects methods with the ``evaluate`` list and adds
entries to the ``methods`` catalog.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Iterable

import yaml

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
    "pretrain_run_of",
    "checkpoint_path",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schema" / "config.schema.yaml"
DEFAULT_CONFIG = REPO_ROOT / "config" / "config.yaml"
PRETRAIN_PREFIX = "pretrain:"


class ConfigError(ValueError):
    pass


def deep_merge(base: dict, override: dict) -> dict:
    """Snakemake's merge semantics: nested dicts merge, everything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(paths: Iterable[str | os.PathLike] | None = None, overrides: dict | None = None) -> dict:
    """Load ``config/config.yaml`` then each of ``paths`` over it, then ``overrides``; validate."""
    files = [DEFAULT_CONFIG] + [Path(p) for p in (paths or []) if Path(p).resolve() != DEFAULT_CONFIG.resolve()]
    cfg: dict[str, Any] = {}
    for f in files:
        try:
            data = yaml.safe_load(Path(f).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read config file {f}: {exc}") from exc
        cfg = deep_merge(cfg, data)
    if overrides:
        cfg = deep_merge(cfg, overrides)
    validate_config(cfg)
    return cfg


def validate_config(cfg: dict) -> None:
    """JSON-schema validation plus the cross-references a schema cannot express."""
    import jsonschema

    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    try:
        jsonschema.validate(cfg, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ConfigError(f"invalid configuration at {where}: {exc.message}") from None
    missing = [m for m in cfg["evaluate"] if m not in cfg["methods"]]
    if missing:
        raise ConfigError(f"`evaluate` lists method runs that are not in `methods`: {missing}")
    for name, entry in cfg["methods"].items():
        run = pretrain_run_of(entry)
        if run is not None and run not in (cfg.get("pretrain") or {}):
            raise ConfigError(f"method {name!r} uses checkpoint 'pretrain:{run}' but `pretrain` has no run {run!r}")
    ref = (cfg.get("reports") or {}).get("reference_method")
    if ref is not None and ref not in cfg["evaluate"]:
        raise ConfigError(f"reports.reference_method {ref!r} is not one of the evaluated methods {cfg['evaluate']}")


def dataset_names(cfg: dict) -> list[str]:
    """Datasets of the profile, in registry order (UCR first, then UEA)."""
    from chorustic.data.registry import get_info, list_datasets

    archives = cfg["datasets"]["archives"]
    include = cfg["datasets"]["include"]
    exclude = set(cfg["datasets"].get("exclude") or [])
    if include == "all":
        names = [n for a in archives for n in list_datasets(a)]
    else:
        names = []
        for n in include:
            info = get_info(n)  # raises a clear error for unknown names
            if info.archive in archives:
                names.append(info.name)
    return [n for n in names if n not in exclude]


def dataset_archive(name: str) -> str:
    from chorustic.data.registry import get_info

    return get_info(name).archive


def evaluated_methods(cfg: dict) -> list[str]:
    return list(cfg["evaluate"])


def method_entry(cfg: dict, run: str) -> dict[str, Any]:
    try:
        entry = cfg["methods"][run]
    except KeyError:
        raise ConfigError(f"no method run {run!r} in the configuration; known: {sorted(cfg['methods'])}") from None
    return {"plugin": entry["plugin"], "display_name": entry.get("display_name"),
            "params": dict(entry.get("params") or {}), "archives": entry.get("archives"),
            "protocols": entry.get("protocols"), "resources": dict(entry.get("resources") or {})}


def method_datasets(cfg: dict, run: str, datasets: list[str] | None = None) -> list[str]:
    entry = method_entry(cfg, run)
    datasets = dataset_names(cfg) if datasets is None else datasets
    if entry["archives"]:
        datasets = [d for d in datasets if dataset_archive(d) in entry["archives"]]
    return datasets


def pretrain_run_of(entry: dict) -> str | None:
    ckpt = (entry.get("params") or {}).get("checkpoint")
    if isinstance(ckpt, str) and ckpt.startswith(PRETRAIN_PREFIX):
        return ckpt[len(PRETRAIN_PREFIX):]
    return None


def checkpoint_path(cfg: dict, pretrain_run: str) -> str:
    """Where the pretrain rule writes the checkpoint of ``pretrain_run``."""
    return str(Path(cfg["paths"]["models_dir"]) / pretrain_run / "model.safetensors")


def resolved_params(cfg: dict, run: str) -> dict[str, Any]:
    """The run's parameters with ``pretrain:<run>`` checkpoint references replaced by paths."""
    entry = method_entry(cfg, run)
    params = entry["params"]
    prun = pretrain_run_of({"params": params})
    if prun is not None:
        params["checkpoint"] = checkpoint_path(cfg, prun)
    return params
