"""``chorustic methods`` and ``chorustic fetch-weights``: what methods exist, whether they can run here,
and fetching what they need.

``chorustic methods [--format table|csv] [--config YAML]... [--plugin-dir DIR]`` lists every
discovered plugin with its metadata, resources (threads, GPUs, and the memory and time ceilings of its
jobs: a job asks for what its dataset needs, see :mod:`chorustic.resources`) and readiness (``ready``, ``reported`` or
``not ready: <what is missing and how to fix it>``), then the plugin files that failed to load. With
``--config`` the method runs of the configuration (with their parameters) are listed instead.
Exit status 0 even when methods are not ready (listing is not a failure), 1 if a plugin file is broken.

``chorustic fetch-weights [METHOD...] [--config YAML]...`` calls each method's ``fetch_weights``:
Hugging Face files are downloaded into the hub cache and verified against the hub's digests,
authors' checkouts are cloned; without arguments, every method run the configuration evaluates
(the paper profile by default). Exit status 1 if any method could not be fetched.

``chorustic check-method NAME|FILE [--config YAML]... [--param KEY=VALUE]...`` runs the full method
contract (plugin metadata, parameters, readiness, and every estimator clause on generated data) and
prints one PASS/FAIL line per clause. NAME is a plugin name or a method run of the configuration
(then with that run's parameters); FILE is the path of a plugin file (``baselines/my_method.py``,
or a file anywhere else), and every method it registers is checked. Exit status 0 when every clause
passes, 1 otherwise, 2 when NAME is unknown or FILE does not exist.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path
from typing import Any

from chorustic.commands._vocabulary import add_config, add_list
from chorustic.errors import did_you_mean

COLUMNS = [
    "name",
    "plugin",
    "display_name",
    "group",
    "fits_on_target",
    "input_kind",
    "needs_gpu",
    "reported",
    "threads",
    "mem_mb",
    "runtime",
    "gpu",
    "status",
    "detail",
    "source",
]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "methods",
        help="list the methods (plugins in baselines/), their metadata and readiness",
        description="List every method plugin with its metadata, the resources of its jobs (threads, GPUs, memory "
        "and time ceilings: a job asks for what its dataset needs) and its readiness: ready, reported (the paper's "
        "numbers, not re-run), or not ready with what is missing and how to fix it; then the plugin files that "
        "failed to load. With --config: the method runs of that configuration, with their parameters.\n\n"
        "Exit status 0 even when methods are not ready, 1 if a plugin file is broken.",
    )
    p.add_argument("--format", choices=["table", "csv"], default="table", help="output format (default: table)")
    add_config(p, help="list the method runs of this configuration instead (merged over config/config.yaml; "
                       "repeatable)")
    p.add_argument(
        "--plugin-dir", default=None, help="plugin folder (default: $CHORUSTIC_BASELINES or baselines/)"
    )
    p.add_argument("--no-check", action="store_true", help="skip readiness checks (no weights are loaded)")
    p.set_defaults(func=_methods)

    p = sub.add_parser(
        "fetch-weights",
        help="download and verify the weights/code methods need (needs internet)",
        description="Download into the Hugging Face cache and verify the files each method needs; "
        "clone authors' checkouts. Without METHOD: every method the configuration evaluates.",
    )
    add_list(p, "--methods", positional="METHOD",
             help="method run names of the configuration, or plugin names (default: every method run the "
                  "configuration evaluates)")
    add_config(p)
    p.add_argument(
        "--plugin-dir", default=None, help="plugin folder (default: $CHORUSTIC_BASELINES or baselines/)"
    )
    p.set_defaults(func=_fetch)

    p = sub.add_parser(
        "check-method",
        help="run the full method contract on generated data: one PASS/FAIL line per clause",
        description="Check a method plugin against the contract the harness relies on: metadata, "
        "resources, parameters, readiness, and on generated data (multivariate, univariate and, for "
        "native-input methods, variable-length series) the estimator API: fit returns self, classes_ "
        "from the context, predict_proba of shape (n_query, n_classes) with rows summing to 1, "
        "predict = argmax, same seed -> same output, query order irrelevant, a context missing a class. "
        "NAME is a plugin or method run name, or the path of a plugin file (e.g. baselines/my_method.py). "
        "Exit status 0 when every clause passes, 1 otherwise.",
    )
    add_list(p, "--methods", required=True, positional="NAME|FILE",
             help="plugin names (baselines/<NAME>.py), method run names of the configuration, or paths of plugin "
                  "files (every method a file registers is checked)")
    add_config(p, help="configuration whose method runs (with their parameters) are checked (merged over "
                       "config/config.yaml; repeatable)")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one build parameter (VALUE is read as YAML: 3, 0.5, true, null, text; repeatable)",
    )
    p.add_argument(
        "--plugin-dir", default=None, help="plugin folder (default: $CHORUSTIC_BASELINES or baselines/)"
    )
    p.add_argument("--device", default="cpu", help="device passed to build() (default: cpu)")
    p.set_defaults(func=_check_method)


def _config_runs(config_files: list[str]) -> list[dict[str, Any]]:
    """The method runs a configuration evaluates (config/config.yaml, the paper profile, merged with
    ``config_files``), with their plugin, parameters and resource overrides."""
    from chorustic import config as cc

    cfg = cc.load_config(config_files)
    out = []
    for run in cc.evaluated_methods(cfg):
        entry = cc.method_entry(cfg, run)
        out.append(
            {
                "name": run,
                "plugin": entry["plugin"],
                "display_name": entry["display_name"],
                "params": entry["params"],
                "resources": entry["resources"],
            }
        )
    return out


def _plugin_runs(discovery) -> list[dict[str, Any]]:
    return [
        {"name": n, "plugin": n, "display_name": None, "params": {}, "resources": {}}
        for n in sorted(discovery.methods)
    ]


def _row(run: dict[str, Any], discovery, check: bool) -> dict[str, Any]:
    from chorustic.methods import MethodNotReady, ReportedMethod

    method = discovery.methods.get(run["plugin"])
    if method is None:
        return {
            "name": run["name"],
            "plugin": run["plugin"],
            "status": "missing plugin",
            "detail": f"no plugin {run['plugin']!r} in the plugin folder",
        }
    info = method.info
    res = dict(getattr(method, "resources", {}) or {})
    res.update(run["resources"])
    row = {
        "name": run["name"],
        "plugin": info.name,
        "display_name": run["display_name"] or info.display_name,
        "group": info.group,
        "fits_on_target": info.fits_on_target,
        "input_kind": info.input_kind,
        "needs_gpu": info.needs_gpu,
        "reported": info.reported,
        "threads": res.get("threads", ""),
        "mem_mb": res.get("mem_mb", ""),
        "runtime": res.get("runtime", ""),
        "gpu": res.get("gpu", ""),
        "source": discovery.sources.get(info.name, ""),
    }
    if not check:
        row.update(status="unchecked", detail="")
        return row
    try:
        params = method.params(run["params"])
        if isinstance(method, ReportedMethod):
            method.check_ready(**params)  # offline: a published file not downloaded yet says so, fast
            n = len(method.reported_accuracies(**params))
            row.update(status="reported", detail=f"reported, not reproduced: {n} dataset accuracies")
        else:
            method.check_ready(**params)
            row.update(status="ready", detail="")
    except MethodNotReady as exc:
        row.update(status="not ready", detail=str(exc))
    except Exception as exc:  # noqa: BLE001 - a plugin bug must not hide the other methods
        row.update(status="error", detail=f"{type(exc).__name__}: {exc}")
    return row


def _methods(args: argparse.Namespace) -> int:
    from chorustic.methods import discover

    discovery = discover(args.plugin_dir)
    runs = _config_runs(args.config) if args.config else _plugin_runs(discovery)
    rows = [_row(r, discovery, not args.no_check) for r in runs]
    if args.format == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS + ["error"], extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)
        for f in sorted(discovery.broken):
            w.writerow(
                {
                    "name": "",
                    "source": f,
                    "status": "broken plugin",
                    "error": discovery.problem(f),
                }
            )
        sys.stdout.write(buf.getvalue())
    else:
        _print_table(rows)
        if discovery.broken:
            print("\nPlugin files that failed to load (skipped):")
            for f in sorted(discovery.broken):
                print(f"  {discovery.problem(f)}")
        not_ready = [r for r in rows if r.get("status") not in ("ready", "reported", "unchecked")]
        if not_ready:
            print("\nWhat is missing:")
            for r in not_ready:
                print(f"  {r['name']}: {r.get('detail', '')}")
    return 1 if discovery.broken else 0


def _print_table(rows: list[dict[str, Any]]) -> None:
    cols = [
        "name",
        "display_name",
        "group",
        "fits_on_target",
        "input_kind",
        "needs_gpu",
        "threads",
        "mem_mb",
        "runtime",
        "gpu",
        "status",
    ]
    heads = {
        "fits_on_target": "target_fit",
        "input_kind": "input",
        "needs_gpu": "gpu_needed",
        "mem_mb": "max_mem_mb",
        "runtime": "max_runtime_min",
    }
    table = [[heads.get(c, c) for c in cols]]
    for r in rows:
        table.append(
            [("yes" if r.get(c) is True else "no" if r.get(c) is False else str(r.get(c, ""))) for c in cols]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(cols))]
    for i, row in enumerate(table):
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def _fetch(args: argparse.Namespace) -> int:
    from chorustic.methods import MethodNotReady, ReportedMethod, discover

    discovery = discover(args.plugin_dir)
    if args.methods:
        runs = []
        cfg_runs = {}
        try:
            from chorustic import config as cc

            cfg = cc.load_config(args.config)
            cfg_runs = {n: cc.method_entry(cfg, n) for n in cfg["methods"]}
        except Exception:  # noqa: BLE001 - plugin names work without a valid config
            cfg_runs = {}
        for name in args.methods:
            if name in cfg_runs:
                e = cfg_runs[name]
                runs.append({"name": name, "plugin": e["plugin"], "params": e["params"]})
            elif name in discovery.methods:
                runs.append({"name": name, "plugin": name, "params": {}})
            else:
                known = sorted({*discovery.methods, *cfg_runs})
                print(
                    f"chorustic fetch-weights: unknown method {name!r}.{did_you_mean(name, known)} Known: "
                    f"{', '.join(known)}",
                    file=sys.stderr,
                )
                return 2
    else:
        runs = _config_runs(args.config)
    failed = 0
    for run in runs:
        method = discovery.methods.get(run["plugin"])
        if method is None:
            print(f"{run['name']}: plugin {run['plugin']!r} not available; skipped", file=sys.stderr)
            failed += 1
            continue
        if isinstance(method, ReportedMethod):
            print(f"{run['name']}: reported method, nothing to fetch")
            continue
        try:
            paths = method.fetch_weights(**method.params(run["params"]))
        except MethodNotReady as exc:
            print(f"{run['name']}: FAILED: {exc}", file=sys.stderr)
            failed += 1
            continue
        except Exception as exc:  # noqa: BLE001 - one failing method never stops the others
            print(f"{run['name']}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed += 1
            continue
        if paths:
            print(f"{run['name']}: ok: " + ", ".join(str(p) for p in paths))
        else:
            print(f"{run['name']}: nothing to fetch")
    return 1 if failed else 0


def _is_plugin_path(name: str) -> bool:
    """A method name is lowercase letters, digits and underscores: anything with a ``.py`` or a path
    separator is a file."""
    return name.endswith(".py") or "/" in name or "\\" in name


def _overrides(items: list[str]) -> dict[str, Any] | None:
    """``--param KEY=VALUE`` items as a dict (VALUE read as YAML); None, after a message, if one is malformed."""
    import yaml

    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            print(f"chorustic check-method: --param expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return None
        params[key.strip()] = yaml.safe_load(value)
    return params


#: The summary line of a check that stopped at its first clause (the plugin file did not load).
NOT_LOADED_SUMMARY = "0 passed, 1 failed, 0 skipped (the other clauses need the plugin to load)"


def _run_check(method: Any, source: str, params: dict[str, Any], what: str, args: argparse.Namespace) -> bool:
    """Check one method and print its clauses; True when every clause passes."""
    from chorustic.methods.check import check_method

    print(f"checking {method.info.name} ({source}), parameters: {what}"
          + (f" + {len(args.param)} override(s)" if args.param else ""))
    run = check_method(method, params, device=args.device)
    print(run.report())
    n_fail = len(run.failed)
    n_pass = sum(c.passed for c in run.clauses)
    print(f"{n_pass} passed, {n_fail} failed, {len(run.clauses) - n_pass - n_fail} skipped")
    return run.ok


def _check_file(args: argparse.Namespace) -> int:
    """``check-method FILE``: every method the plugin file registers, with its defaults and ``--param``."""
    from chorustic.methods import default_plugin_dir
    from chorustic.methods.registry import discover_file

    path = Path(args.name)
    if not path.is_file() and not path.suffix and path.with_suffix(".py").is_file():
        path = path.with_suffix(".py")
    if args.config:
        print(
            "chorustic check-method: --config selects a method run by its name; a plugin file is checked with "
            "its default parameters and --param KEY=VALUE",
            file=sys.stderr,
        )
        return 2
    if not path.is_file():
        print(f"chorustic check-method: no plugin file {path} (a plugin file is a .py file; "
              "or give a plugin name, see `chorustic methods`)", file=sys.stderr)
        return 2
    params = _overrides(args.param)
    if params is None:
        return 2
    discovery = discover_file(path)
    for file in discovery.broken:
        print(f"FAIL  plugin file loads: {discovery.problem(file)}")
        print(NOT_LOADED_SUMMARY)
        return 1
    if not discovery.methods:
        print(
            f"FAIL  plugin file registers a method: {path} registers none; decorate the plugin class with "
            "@register (from chorustic.methods import Method, MethodInfo, register)"
        )
        print(NOT_LOADED_SUMMARY)
        return 1
    plugin_dir = Path(args.plugin_dir) if args.plugin_dir else default_plugin_dir()
    if path.resolve().parent != plugin_dir.resolve():
        print(
            f"note: {path} is not in the plugin folder {plugin_dir}: the workflow and `chorustic methods` only "
            "discover plugins there (move the file there, or point $CHORUSTIC_BASELINES at its folder)"
        )
    elif path.name.startswith("_"):
        print(f"note: discovery skips files whose name starts with '_': rename {path.name} for the workflow")
    names = list(discovery.methods)
    if len(names) > 1:
        print(f"{path} registers {len(names)} methods: {', '.join(names)}; checking each")
    ok = {}
    for name in names:
        ok[name] = _run_check(discovery.methods[name], str(path), dict(params), "plugin defaults", args)
    if len(names) > 1:
        print("; ".join(f"{n}: {'ok' if v else 'FAILED'}" for n, v in ok.items()))
    return 0 if all(ok.values()) else 1


def _check_method(args: argparse.Namespace) -> int:
    """Every NAME|FILE of ``--methods`` in turn; the exit status is the worst of theirs."""
    codes = [_check_one(argparse.Namespace(**{**vars(args), "name": name})) for name in args.methods]
    if len(codes) > 1:
        print("; ".join(f"{n}: {'ok' if c == 0 else 'FAILED'}" for n, c in zip(args.methods, codes)))
    return max(codes)


def _check_one(args: argparse.Namespace) -> int:
    from chorustic.methods import discover

    if _is_plugin_path(args.name):
        return _check_file(args)
    discovery = discover(args.plugin_dir)
    params: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    plugin = args.name
    source = "plugin defaults"
    if args.config or args.name not in discovery.methods:
        from chorustic import config as cc

        try:
            cfg = cc.load_config(args.config)
            runs = cfg.get("methods") or {}
        except Exception as exc:  # noqa: BLE001 - a plugin name works without a valid config
            cfg, runs = None, {}
            if args.config:
                print(f"chorustic check-method: cannot read the config: {exc}", file=sys.stderr)
                return 2
        if args.name in runs:
            plugin = cc.method_entry(cfg, args.name)["plugin"]
            params = dict(cc.resolved_params(cfg, args.name))
            source = f"method run {args.name!r} of the config"
    method = discovery.methods.get(plugin)
    if method is None:
        broken = [f for f in discovery.broken if f == f"{plugin}.py" or f.startswith(plugin)]
        if broken:
            print(f"FAIL  plugin file loads: {discovery.problem(broken[0])}")
            print(NOT_LOADED_SUMMARY)
            return 1
        known = sorted({*discovery.methods, *runs})
        print(
            f"chorustic check-method: unknown method {args.name!r}.{did_you_mean(args.name, known)} Plugins: "
            f"{', '.join(sorted(discovery.methods))} (or give the path of a plugin file)",
            file=sys.stderr,
        )
        return 2
    overrides = _overrides(args.param)
    if overrides is None:
        return 2
    params.update(overrides)
    ok = _run_check(method, discovery.sources.get(method.info.name, "?"), params, source, args)
    return 0 if ok else 1
