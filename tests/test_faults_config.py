"""Fault table, configuration side: mistakes in a config file or on the command line, through the real CLI.

Each row: the mistake, the config override (merged over the demo profile) or arguments that inject it,
and what the user gets: exit status 2, one message naming the key and the fix (the closest names where
there are some), no traceback, and nothing run. The workflow stops on the same checks when it builds
its DAG (tests/test_faults_workflow.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml

from chorustic import config as cc
from chorustic.cli import main

REPO = Path(__file__).resolve().parents[1]
DEMO = str(REPO / "config" / "demo.yaml")


@dataclasses.dataclass
class ConfigFault:
    id: str
    fault: str
    override: dict | str | None
    """Merged over config/demo.yaml (a str: the raw text of the override file)."""
    says: tuple[str, ...]
    method: str = "minirocket"
    dataset: str = "GunPoint"
    exit: int = 2
    args: tuple[str, ...] = ()
    """More `chorustic evaluate` arguments."""


FAULTS = [
    ConfigFault(
        "C01",
        "a misspelled plugin name",
        {"methods": {"minirocket": {"plugin": "minirockt"}}},
        ("methods.minirocket.plugin", "'minirockt'", "Did you mean 'minirocket'"),
    ),
    ConfigFault(
        "C02",
        "a misspelled method parameter",
        {"methods": {"minirocket": {"plugin": "minirocket", "params": {"n_kernel": 500}}}},
        ("methods.minirocket.params", "'n_kernel'", "known parameters", "Did you mean 'n_kernels'"),
    ),
    ConfigFault(
        "C03",
        "a misspelled dataset in exclude",
        {"datasets": {"exclude": ["GunPont"]}},
        ("datasets.exclude", "'GunPont'", "Did you mean 'GunPoint'"),
    ),
    ConfigFault(
        "C04",
        "a dataset listed twice in include",
        {"datasets": {"include": ["GunPoint", "GunPoint", "ArrowHead"]}},
        ("datasets.include", "'GunPoint' more than once"),
    ),
    ConfigFault(
        "C05",
        "a method run listed twice in evaluate",
        {"evaluate": ["minirocket", "quant", "minirocket"]},
        ("`evaluate`", "'minirocket' more than once"),
    ),
    ConfigFault(
        "C06", "an unknown top-level key (typo)", {"evalute": ["minirocket"]},
        ("'evalute' was unexpected", "Did you mean 'evaluate'"),
    ),
    ConfigFault(
        "C06b", "an unknown nested key (typo)", {"datasets": {"inclde": ["GunPoint"]}},
        ("datasets", "'inclde' was unexpected", "Did you mean 'include'"),
    ),
    ConfigFault(
        "C07", "a value of the wrong type", {"data": {"offline": "yes"}}, ("data/offline", "boolean")
    ),
    ConfigFault(
        "C08",
        "an included dataset outside the selected archives",
        {"datasets": {"archives": ["UCR"], "include": ["GunPoint", "BasicMotions"]}},
        ("'BasicMotions', a UEA dataset", "datasets.archives"),
    ),
    ConfigFault(
        "C09",
        "a method restricted to a protocol the settings do not produce",
        {"methods": {"minirocket": {"plugin": "minirocket", "protocols": ["fixed3"]}}},
        ("methods.minirocket.protocols", "fixed3", "they produce"),
    ),
    ConfigFault(
        "C10",
        "an unknown method run on the command line",
        None,
        ("'minirockt'", "Did you mean 'minirocket'"),
        method="minirockt",
    ),
    ConfigFault(
        "C11", "a config file that is not YAML", "evaluate: [minirocket\n  - :", ("cannot read config file",)
    ),
    ConfigFault(
        "C12",
        "a method run in evaluate that is neither a run of `methods` nor a plugin",
        {"evaluate_extra": ["quantt"]},
        ("`evaluate` lists 'quantt'", "Did you mean 'quant'"),
    ),
    ConfigFault(
        "C13",
        "a reference method that is not evaluated",
        {"reports": {"reference_method": "tabicl"}},
        ("reports.reference_method", "'tabicl'", "evaluate_extra"),
    ),
    ConfigFault(
        "C14",
        "every included dataset excluded",
        {"datasets": {"include": ["GunPoint"], "exclude": ["GunPoint"]}},
        ("select no dataset",),
    ),
    ConfigFault(
        "C15",
        "allow_modified_data of the wrong type",
        {"data": {"allow_modified_data": "GunPoint"}},
        ("data/allow_modified_data",),
    ),
    ConfigFault(
        "C16",
        "an unknown dataset in include",
        {"datasets": {"include": ["GunPoint", "Gunpoint2"]}},
        ("datasets.include", "'Gunpoint2'"),
    ),
    ConfigFault(
        "C18",
        "no method run to evaluate",
        {"evaluate": [], "reports": {}},
        ("`evaluate` lists no method run",),
    ),
    ConfigFault(
        "C19",
        "every protocol switched off",
        {
            "protocols": {
                "full": False,
                "fixed_shot": {"shots": [], "seeds": [0]},
                "proportional": {"percents": [], "seeds": [0]},
            }
        },
        ("select no context",),
    ),
    ConfigFault(
        "C20",
        "a mirror that is not a URL",
        {"data": {"mirrors": ["ftp.example.org/ucr"]}},
        ("data.mirrors", "not an http(s) URL"),
    ),
    ConfigFault(
        "C21",
        "two evaluated runs with the same display name",
        {"methods": {"minirocket": {"plugin": "minirocket", "display_name": "QUANT"}}},
        ("'minirocket' and 'quant'", "display_name"),
    ),
    ConfigFault(
        "C22",
        "a protocol seed listed twice",
        {
            "protocols": {
                "full": True,
                "fixed_shot": {"shots": [5], "seeds": [0, 0]},
                "proportional": {"percents": [], "seeds": [0]},
            }
        },
        ("protocols", "once"),
    ),
    ConfigFault(
        "C23",
        "a method restricted to archives none of the selected datasets is in",
        {
            "datasets": {"archives": ["UCR"], "include": ["GunPoint"]},
            "methods": {"quant": {"plugin": "quant", "archives": ["UEA"]}},
        },
        ("'quant' (archives ['UEA'])", "no dataset", "remove them from `evaluate`"),
    ),
    ConfigFault(
        "C24",
        "a method run's memory below what a job needs to run at all",
        {"methods": {"minirocket": {"plugin": "minirocket", "resources": {"mem_mb": 400}}}},
        ("methods.minirocket.resources.mem_mb: 400 MB", "at least 900 MB", "set it to 900 or more"),
    ),
    ConfigFault(
        "C25",
        "a site memory cap below what a job needs to run at all",
        {"cluster": {"max_mem_mb": 512}},
        ("cluster.max_mem_mb", "512 MB", "at least 900 MB"),
    ),
    ConfigFault(
        "C26",
        "--mem-mb below what a job needs to run at all",
        None,
        ("--mem-mb: 500 MB", "at least 900 MB"),
        args=("--mem-mb", "500"),
    ),
    ConfigFault(
        "C27",
        "reference results (reports.reference_results) that do not exist",
        {"reports": {"reference_method": "minirocket", "reference_results": "no such/results"}},
        ("reports.reference_results", "'no such/results' does not exist", "read from the repository root",
         "examples/demo/results"),
    ),
    ConfigFault(
        "C17",
        "an unknown dataset on the command line",
        None,
        ("'BasicMotion'", "Did you mean 'BasicMotions'"),
        dataset="BasicMotion",
    ),
]


@pytest.mark.parametrize("f", FAULTS, ids=[f.id for f in FAULTS])
def test_config_fault(f: ConfigFault, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    configs = ["--config", DEMO]
    if f.override is not None:
        path = tmp_path / "override.yaml"
        path.write_text(f.override if isinstance(f.override, str) else yaml.safe_dump(f.override))
        configs += ["--config", str(path)]
    rc = main(["evaluate", "--methods", f.method, "--datasets", f.dataset, *configs, *f.args])
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc == f.exit, f"{f.id} {f.fault}: exit {rc}\n{text}"
    for fragment in f.says:
        assert fragment in text, f"{f.id} {f.fault}: the message lacks {fragment!r}:\n{text}"
    assert "Traceback" not in text and len(out.err.strip().splitlines()) == 1, text
    assert not (tmp_path / "results").exists(), f"{f.id}: something ran despite the mistake"


def test_a_results_folder_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    """paths.results_dir under a file: one line naming the setting and the file, exit 2 (a configuration
    mistake)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("not a folder\n")
    override = tmp_path / "override.yaml"
    override.write_text(yaml.safe_dump({"paths": {"results_dir": str(tmp_path / "a_file" / "results")}}))
    rc = main(["evaluate", "--methods", "minirocket", "--datasets", "GunPoint", "--config", DEMO,
               "--config", str(override)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(tmp_path / "a_file") in err and "paths.results_dir" in err and "is a file, not a folder" in err


def test_a_missing_config_file_is_named(tmp_path, capsys):
    rc = main(["methods", "--config", str(tmp_path / "nope.yaml"), "--no-check"])
    err = capsys.readouterr().err
    assert rc == 2 and "nope.yaml" in err and "Traceback" not in err


def test_the_workflow_hands_its_checked_configuration_to_the_commands(tmp_path):
    """The configuration is validated once, when the workflow starts; its record (named by its content)
    is what every job reads as it is. A record edited since is an ordinary config file: validated again."""
    cfg = cc.load_config([cc.REPO_ROOT / "config" / "demo.yaml"])
    path = Path(cc.write_config_record(cfg, tmp_path))
    assert cc.write_config_record(cfg, tmp_path) == str(path)  # written once, same name for the same content
    assert cc.read_config_record(path) == json.loads(json.dumps(cfg, default=str))
    assert cc.load_config([path]) == cc.read_config_record(path)
    edited = json.loads(path.read_text())
    edited["evaluate"] = ["no_such_run"]
    path.write_text(json.dumps(edited))
    assert cc.read_config_record(path) is None
    with pytest.raises(cc.ConfigError, match="no_such_run"):
        cc.load_config([path])


# --- fault list, third round (issue 72) -------------------------------------------------------------------


@pytest.mark.parametrize("text, key", [
    ("datasets:\n  include: [ItalyPowerDemand]\n  include: [GunPoint]\n", "include"),
    ("evaluate: [minirocket]\nprofile: x\nevaluate: [dtw_1nn]\n", "evaluate"),
])
def test_a_key_written_twice_is_refused_with_its_line(text, key, tmp_path, capsys):
    """Plain YAML keeps the last of two equal keys without a word (only GunPoint would be planned): the CLI and
    the workflow (cc.check_config_files, called by common.smk on Snakemake's config files) refuse it."""
    path = tmp_path / "twice.yaml"
    path.write_text(text)
    with pytest.raises(cc.ConfigError, match=rf"{path}.*the key '{key}' is written twice.*first at line \d+.*line 3"):
        cc.check_config_files([path])
    assert main(["plan-run", "--config", str(path), "--cores", "2", "--gpus", "0", "--mem-gb", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "written twice" in err and str(path) in err


def test_a_plugin_without_a_cost_model_is_said_in_the_bill(tmp_path, monkeypatch):
    """`plan-run` bills a plugin that declares no cost model by CostModel()'s defaults: the bill says so."""
    from chorustic.bill import Machine, make_bill
    from chorustic.methods import discover
    from chorustic.run_plan import RunPlan

    from fault_plugins import write_plugins

    plugins = write_plugins(tmp_path / "baselines", ["centroid"])
    source = plugins / "centroid.py"  # the same plugin without its `cost = CostModel(...)` line
    lines = source.read_text().splitlines(keepends=True)
    source.write_text("".join(ln for ln in lines if not ln.lstrip().startswith("cost = CostModel(")))
    assert "cost =" not in source.read_text()
    monkeypatch.setenv("CHORUSTIC_BASELINES", str(plugins))
    cfg = cc.load_config([DEMO], overrides={"methods": {"nocost": {"plugin": "centroid"}}, "evaluate": ["nocost"],
                                         "reports": {"reference_method": "nocost"}})
    plan = RunPlan.from_config(cfg, discover(plugins))
    bill = make_bill(plan, Machine(cores=2, mem_mb=8192))
    assert any("nocost: plugin 'centroid' has no cost model of its own" in w for w in bill["warnings"]), bill["warnings"]


@pytest.mark.parametrize("text, says", [
    ("datasets:\n  inclde: [GunPoint]\n", "Did you mean 'include'"),
    ("datasets:\n  include: [GunPont]\n", "Did you mean 'GunPoint'"),
    ("evaluate: [minirocket]\nevaluate: [dtw_1nn]\n", "written twice"),
    ("paths:\n  reports_dir: a_file/reports\n", "paths.reports_dir 'a_file/reports': a_file is a file, not a folder"),
])
def test_a_configuration_mistake_under_snakemake_is_one_line_and_exit_2(text, says, tmp_path):
    """Under `snakemake` as from `chorustic` (issue 72, case 7): one line naming the key and the fix, exit
    status 2, no traceback lines of common.smk."""
    from chorustic.testing.workflow import run_snakemake

    (tmp_path / "mine.yaml").write_text(text)
    (tmp_path / "a_file").write_text("not a folder\n")
    proc = run_snakemake("-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "-n", "--cores", "1",
                         "--configfile", DEMO, str(tmp_path / "mine.yaml"), cwd=tmp_path, timeout=300)
    err = proc.stderr.strip()
    assert proc.returncode == 2, proc.stdout[-2000:] + err[-2000:]
    assert says in err and "Traceback" not in err and "common.smk" not in err, err
    assert len([ln for ln in err.splitlines() if ln.startswith("chorustic:")]) == 1, err


# --- adding a run to a profile (issue 69) ------------------------------------------------------------------


def test_a_plugin_listed_by_its_name_needs_no_methods_entry_and_extra_runs_keep_the_profile():
    """`evaluate_extra: [paper_moment_svm]` (a plugin no `methods:` entry names) adds the run after the demo's
    five, as that plugin with its defaults; the demo's reference method stays valid; validating again (a
    configuration record) changes nothing; the run plan has its jobs."""
    from chorustic.run_plan import RunPlan

    demo = cc.load_config([DEMO])
    cfg = cc.load_config([DEMO], overrides={"evaluate_extra": ["paper_moment_svm", "quant"]})
    assert cfg["evaluate"] == demo["evaluate"] + ["paper_moment_svm"]  # quant is listed already
    assert cfg["methods"]["paper_moment_svm"] == {"plugin": "paper_moment_svm"}
    assert cfg["reports"]["reference_method"] == "chorustic_small"
    again = json.loads(json.dumps(cfg))
    cc.validate_config(again)
    assert again == json.loads(json.dumps(cfg))
    plan = RunPlan.from_config(cfg)
    assert {j.dataset for j in plan.jobs if j.method == "paper_moment_svm"} == set(cc.dataset_names(demo))
    assert "paper_moment_svm" not in demo["methods"] and "paper_moment_svm" not in demo["evaluate"]


def test_evaluate_extra_from_the_snakemake_command_line_adds_the_run(tmp_path):
    """`snakemake --config 'evaluate_extra=[...]'` (Snakemake parses the value as YAML) adds the run to the
    demo profile's DAG, with its jobs on every dataset, and keeps the demo's."""
    from chorustic.testing.workflow import SNAKEFILE, run_snakemake

    proc = run_snakemake("-s", str(SNAKEFILE), "-d", str(tmp_path), "-n", "--cores", "1",
                         "--workflow-profile", str(cc.REPO_ROOT / "workflow" / "profiles" / "demo"),
                         "--config", "evaluate_extra=[paper_moment_svm]", cwd=cc.REPO_ROOT)  # the profile's
    # configfile is relative to the directory snakemake starts in; -d puts everything it writes in tmp_path
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    jobs = set(re.findall(r"output: results/runs/(\w+)/([\w-]+)\.json", proc.stdout))
    assert {d for m, d in jobs if m == "paper_moment_svm"} == {d for m, d in jobs if m == "minirocket"}
    assert len({m for m, _ in jobs}) == 6
