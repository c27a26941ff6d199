"""Fault table, workflow side: a real ``snakemake`` run on tiny data, one row per step.

The workdir starts as a user's would: ``GunPoint`` with its TRAIN file but not its TEST file (the
user's own copy), ``ItalyPowerDemand`` not there yet (it ships inside aeon), three method runs from
tests/fault_plugins.py (``centroid``; ``flaky``, failing its 5-shot contexts while a file exists;
``broken``, a plugin file that does not import), protocols full + 5-shot seed 0. The working, data,
results, reports and log folders have spaces, quotes and non-ASCII letters in their names (every path
in every rule's command is quoted). Each row injects a fault or a fix, runs ``snakemake`` (the same
command every time) and checks what the user gets: the exit status, exactly which jobs ran, the tables,
the user's files and the messages.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest
import yaml
from fault_plugins import write_plugins

from chorustic.data.download import aeon_data_dir
from chorustic.evaluation.integrity import verify_result_file
from chorustic.io import sha256_file
from chorustic.testing.workflow import SNAKEFILE, command_env, run_snakemake

REPO = Path(__file__).resolve().parents[1]
AEON = aeon_data_dir()
# folder names a user may well have: spaces, a quote, non-ASCII letters
WORKDIR = "my work é 'ü' 数据"
DATA = "my data é 数据/raw"
RESULTS = "results 'r' ü"
REPORTS = "reports ü x"
LOGS = "logs é x"
GP = f"{DATA}/GunPoint"

CONFIG = {
    "paths": {"data_dir": DATA, "cache_dir": "my data é 数据/cache", "results_dir": RESULTS,
              "reports_dir": REPORTS, "logs_dir": LOGS},
    "datasets": {"archives": ["UCR"], "include": ["GunPoint", "ItalyPowerDemand"], "exclude": []},
    "protocols": {
        "full": True,
        "fixed_shot": {"shots": [5], "seeds": [0]},
        "proportional": {"percents": [], "seeds": [0]},
    },
    "evaluate": ["centroid", "flaky", "broken"],
    "methods": {
        "centroid": {"plugin": "centroid"},
        "flaky": {"plugin": "flaky"},
        "broken": {"plugin": "broken"},
    },
    "reports": {"reference_method": "centroid"},
}


def snakemake(wd: Path, *extra: str) -> subprocess.CompletedProcess:
    args = ["-s", str(SNAKEFILE), "-d", str(wd), "--cores", "2", "--keep-going",
            "--configfile", str(REPO / "config" / "demo.yaml"), str(wd / "override.yaml"), *extra]
    return run_snakemake(*args, cwd=wd, timeout=600, CHORUSTIC_BASELINES=str(wd / "plugins"),
                         FLAKY_FAIL=str(wd / "down"))


def jobs_scheduled(output: str) -> dict[str, int]:
    if "Job stats:" not in output:
        return {}
    stats = output[output.index("Job stats:") :]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", stats, re.M)}
    counts.pop("total", None)
    counts.pop("all", None)
    return counts


def table(wd: Path) -> pd.DataFrame:
    return pd.read_csv(wd / RESULTS / "accuracies.csv")


def rows(wd: Path, method: str, dataset: str) -> pd.DataFrame:
    df = table(wd)
    return df[(df.method == method) & (df.dataset == dataset)].set_index("protocol")


def set_config(wd: Path, **changes) -> None:
    cfg = json.loads(json.dumps(CONFIG))
    cfg.update(changes)
    (wd / "override.yaml").write_text(yaml.safe_dump(cfg))


@dataclasses.dataclass
class Step:
    id: str
    what: str
    inject: Callable[[Path], None]
    exit_ok: bool
    jobs: dict[str, int]
    """Exactly the jobs this run schedules (rule -> count; Snakemake's "Job stats"). Downstream of a
    failing job they are scheduled but do not run."""
    check: Callable[[Path, str], None]
    """Assertions on the workdir and on snakemake's output (stdout + stderr)."""
    dry_run: bool = False


# -- steps --------------------------------------------------------------------------------------------
def start(wd: Path) -> None:
    write_plugins(wd / "plugins")
    (wd / GP).mkdir(parents=True)
    shutil.copyfile(AEON / "GunPoint" / "GunPoint_TRAIN.ts", wd / GP / "GunPoint_TRAIN.ts")
    (wd / "train.sha256").write_text(sha256_file(wd / GP / "GunPoint_TRAIN.ts"))
    (wd / "down").write_text("")  # flaky's service is down
    set_config(wd)


def check_start(wd: Path, out: str) -> None:
    # case 1: the user's TRAIN file is untouched, nothing was put next to it
    assert sha256_file(wd / GP / "GunPoint_TRAIN.ts") == (wd / "train.sha256").read_text()
    assert sorted(p.name for p in (wd / GP).iterdir()) == ["GunPoint_TRAIN.ts"]
    # case 5: the tables of everything that worked are written, failures listed with their reasons
    assert (rows(wd, "centroid", "ItalyPowerDemand").status == "ok").all()
    flaky = rows(wd, "flaky", "ItalyPowerDemand")
    assert flaky.loc["full", "status"] == "ok" and flaky.loc["fixed5", "status"] == "failed"
    assert "service this method needs is down" in flaky.loc["fixed5", "error"]
    gp = table(wd)[table(wd).dataset == "GunPoint"]
    assert len(gp) == 6 and (gp.status == "failed").all()
    assert gp.error.str.contains("GunPoint_TEST.ts").all() and gp.error.str.contains("download").all()
    broken = rows(wd, "broken", "ItalyPowerDemand")
    assert (
        len(broken) == 2
        and broken.error.str.contains("plugin file broken.py of method .broken. failed to import").all()
    )
    assert broken.error.str.contains("No module named 'a_module_that_does_not_exist'").all()
    assert (wd / REPORTS / "README.md").is_file() and (wd / REPORTS / "missing_runs.csv").is_file()
    # one message saying what failed and what to do; each failing job's reason in its own log
    assert "something failed" in out and "run the same command again" in out
    log = (wd / LOGS / "evaluate" / "flaky" / "ItalyPowerDemand.log").read_text()
    assert "FAILED: flaky/ItalyPowerDemand: 1 of 2 runs failed" in log
    assert "GunPoint_TEST.ts" in (wd / LOGS / "download" / "GunPoint.log").read_text()
    broken_log = (wd / LOGS / "evaluate" / "broken" / "ItalyPowerDemand.log").read_text()
    assert "Traceback" in broken_log and "PluginLoadError" in broken_log  # the failing worker's traceback
    assert not (wd / RESULTS / "runs" / "flaky" / "ItalyPowerDemand.json").exists()


def fix_everything(wd: Path) -> None:
    shutil.copyfile(AEON / "GunPoint" / "GunPoint_TEST.ts", wd / GP / "GunPoint_TEST.ts")
    (wd / "down").unlink()
    set_config(wd, evaluate=["centroid", "flaky"])


def check_fixed(wd: Path, out: str) -> None:
    assert (table(wd).status == "ok").all() and len(table(wd)) == 8
    # the demo profile's reports.reference_results reaches the report from a workdir elsewhere: this run is
    # compared with the committed demo run (no run in common here)
    index = (wd / REPORTS / "README.md").read_text()
    assert f"Against `{REPO / 'examples' / 'demo' / 'results'}`: 0 runs in both" in index, index[-2000:]
    assert (wd / REPORTS / "reproduction" / "reference_results.md").is_file()
    assert sha256_file(wd / GP / "GunPoint_TRAIN.ts") == (wd / "train.sha256").read_text()
    (wd / "table_before.csv").write_bytes((wd / RESULTS / "accuracies.csv").read_bytes())


def no_change(wd: Path) -> None:
    pass


def check_nothing(wd: Path, out: str) -> None:
    assert "Nothing to be done" in out


def change_params(wd: Path) -> None:
    set_config(
        wd,
        evaluate=["centroid", "flaky"],
        methods={**CONFIG["methods"], "centroid": {"plugin": "centroid", "params": {"shrink": 0.9}}},
    )


def check_params(wd: Path, out: str) -> None:
    for d in ("GunPoint", "ItalyPowerDemand"):
        m = json.loads((wd / RESULTS / "runs" / "centroid" / f"{d}.json").read_text())
        assert m["params"] == {"shrink": 0.9} and m["fingerprint"]["params"] == {"shrink": 0.9}
    before = pd.read_csv(wd / "table_before.csv")
    after = table(wd)
    assert not after[after.method == "centroid"].accuracy.equals(before[before.method == "centroid"].accuracy)


def edit_plugin_code(wd: Path) -> None:
    p = wd / "plugins" / "flaky.py"
    p.write_text(p.read_text() + "\n_REVISION = 2  # a change to the method's code\n")


def forget_records_and_edit_code(wd: Path) -> None:
    """Snakemake's records of each job's parameters and code gone (a fresh clone, another working
    directory), then a method's code changed."""
    shutil.rmtree(wd / ".snakemake")
    p = wd / "plugins" / "centroid.py"
    p.write_text(p.read_text() + "\n_REVISION = 2  # a change to the method's code, with no records of the old one\n")


def check_stale_set_aside(wd: Path, out: str) -> None:
    # flaky builds on centroid's estimator: its code changed too; GunPoint's jobs wait for its data (W7)
    for m in ("centroid", "flaky"):
        runs = wd / RESULTS / "runs" / m
        assert (runs / "GunPoint.json.stale").is_file() and not (runs / "GunPoint.json").exists()
        assert json.loads((runs / "ItalyPowerDemand.json").read_text())["fingerprint"] != \
            json.loads((runs / "ItalyPowerDemand.json.stale").read_text())["fingerprint"]
    italy = rows(wd, "centroid", "ItalyPowerDemand")
    assert set(italy.index) == {"full", "fixed5"} and (italy.status == "ok").all()
    assert "made with other parameters or method code than the configuration's" in out and "is re-made" in out


def damage_results(wd: Path) -> None:
    (wd / RESULTS / "fixed5" / "centroid" / "Predictions" / "GunPoint" / "testResample0.csv").unlink()
    p = wd / RESULTS / "full" / "flaky" / "Predictions" / "ItalyPowerDemand" / "testResample0.csv"
    p.write_text("".join(p.read_text().splitlines(keepends=True)[:100]))  # truncated at a line boundary
    m = wd / RESULTS / "runs" / "centroid" / "ItalyPowerDemand.json"
    m.write_text(m.read_text()[:200])  # a truncated manifest
    t = wd / RESULTS / "accuracies.csv"
    t.write_text(
        "".join(t.read_text().splitlines(keepends=True)[:3])
    )  # the table truncated at a line boundary
    c = wd / RESULTS / "contexts" / "ItalyPowerDemand.json"
    c.write_text(c.read_text()[:50])  # a context file damaged: set aside, re-made when a job needs it


def check_remade(wd: Path, out: str) -> None:
    assert (wd / RESULTS / "accuracies.csv.damaged").is_file() and "is re-made" in out
    json.loads((wd / RESULTS / "contexts" / "ItalyPowerDemand.json").read_text())
    assert (
        wd / RESULTS / "fixed5" / "centroid" / "Predictions" / "GunPoint" / "testResample0.csv"
    ).is_file()
    assert (table(wd).status == "ok").all() and len(table(wd)) == 8
    json.loads((wd / RESULTS / "runs" / "centroid" / "ItalyPowerDemand.json").read_text())


W4_METHODS = {**CONFIG["methods"], "centroid": {"plugin": "centroid", "params": {"shrink": 0.9}}}
FULL_ONLY = {"full": True, "fixed_shot": {"shots": [], "seeds": [0]}, "proportional": {"percents": [], "seeds": [0]}}


def _fixed5_files(wd: Path) -> dict[Path, str]:
    return {p: sha256_file(p) for p in sorted((wd / RESULTS / "fixed5").rglob("testResample*.csv"))}


def full_only(wd: Path) -> None:
    (wd / "fixed5.json").write_text(json.dumps({str(p): h for p, h in _fixed5_files(wd).items()}))
    set_config(wd, evaluate=["centroid", "flaky"], methods=W4_METHODS, protocols=FULL_ONLY)


def check_full_only(wd: Path, out: str) -> None:
    # the earlier selection's finished 5-shot results are still there, as they were
    before = json.loads((wd / "fixed5.json").read_text())
    assert len(before) == 4 and {str(p): h for p, h in _fixed5_files(wd).items()} == before
    # each job's manifest lists (and verifies) what it made: the full context only
    for m in ("centroid", "flaky"):
        for d in ("GunPoint", "ItalyPowerDemand"):
            runs = json.loads((wd / RESULTS / "runs" / m / f"{d}.json").read_text())["runs"]
            assert [r["protocol"] for r in runs] == ["full"]
            assert verify_result_file(runs[0], full=True, base=wd / RESULTS) is None
    assert (table(wd).protocol == "full").all() and (table(wd).status == "ok").all() and len(table(wd)) == 4


def edit_user_data(wd: Path) -> None:
    set_config(wd, evaluate=["centroid", "flaky"], methods=W4_METHODS)  # back to full + 5-shot
    p = wd / GP / "GunPoint_TEST.ts"
    p.write_text(p.read_text().replace("@problemName", "# my note\n@problemName", 1))
    (wd / "test.sha256").write_text(sha256_file(p))


def check_edited(wd: Path, out: str) -> None:
    assert sha256_file(wd / GP / "GunPoint_TEST.ts") == (wd / "test.sha256").read_text()  # untouched
    gp = table(wd)[table(wd).dataset == "GunPoint"]
    assert (gp.status == "failed").all() and gp.error.str.contains("checksum mismatch").all()
    assert gp.error.str.contains("--update-lock").all()
    # back to full + 5-shot: the table is right for this selection too
    italy = rows(wd, "centroid", "ItalyPowerDemand")
    assert set(italy.index) == {"full", "fixed5"} and (italy.status == "ok").all()


def typo_in_config(wd: Path) -> None:
    set_config(
        wd,
        evaluate=["centroid", "flaky"],
        methods={**CONFIG["methods"], "centroid": {"plugin": "centroid", "params": {"shrinc": 0.5}}},
    )


def check_typo(wd: Path, out: str) -> None:
    assert "methods.centroid.params" in out and "Did you mean 'shrink'" in out


def missing_reference_results(wd: Path) -> None:
    set_config(wd, evaluate=["centroid", "flaky"],
               reports={"reference_method": "centroid", "reference_results": "no such results"})


def check_missing_reference_results(wd: Path, out: str) -> None:
    assert "reports.reference_results: 'no such results' does not exist" in out, out[-3000:]


#: reference results in a folder whose name needs quoting (W9)
REFERENCE = "reference 'r' ü"


def data_settings(wd: Path) -> None:
    (wd / REFERENCE).mkdir(exist_ok=True)
    shutil.copyfile(wd / RESULTS / "accuracies.csv", wd / REFERENCE / "accuracies.csv")
    set_config(
        wd,
        evaluate=["centroid", "flaky"],
        data={"offline": True, "lock_file": "locks/data.lock.json", "allow_modified_data": ["GunPoint"]},
        reports={"reference_method": "centroid", "reference_results": str(wd / REFERENCE)},
    )


def check_data_settings(wd: Path, out: str) -> None:
    pre = [ln for ln in out.splitlines() if "chorustic preprocess" in ln]
    assert any(
        "GunPoint" in ln and "--allow-modified-data" in ln and "--lock-file locks/data.lock.json" in ln
        for ln in pre
    ), pre
    assert all("--allow-modified-data" not in ln for ln in pre if "ItalyPowerDemand" in ln), pre
    report = [ln for ln in out.splitlines() if "chorustic report" in ln]
    assert report and all(f"--reference-results {shlex.quote(str(wd / REFERENCE))} " in ln for ln in report), report
    # moving the lock file re-runs nothing (the data did not change); GunPoint's download is still pending from W7
    assert (
        "chorustic download ItalyPowerDemand" not in out
        and "chorustic preprocess ItalyPowerDemand" not in out
    )


STEPS = [
    Step(
        "W1",
        "TEST file missing (user's TRAIN only), a method failing on some contexts, a broken plugin file",
        start,
        False,
        {"download": 2, "preprocess": 2, "audit": 2, "contexts": 2, "evaluate": 6, "aggregate": 1, "report": 1},
        check_start,
    ),
    Step(
        "W2",
        "the user adds the TEST file, the service is back, the broken method is dropped",
        fix_everything,
        True,
        {"download": 1, "preprocess": 1, "audit": 1, "contexts": 1, "evaluate": 3, "aggregate": 1, "report": 1},
        check_fixed,
    ),
    Step("W3", "nothing changed", no_change, True, {}, check_nothing),
    Step(
        "W4",
        "a method's parameters changed",
        change_params,
        True,
        {"evaluate": 2, "aggregate": 1, "report": 1},
        check_params,
    ),
    Step(
        "W5",
        "a method's code changed",
        edit_plugin_code,
        True,
        {"evaluate": 2, "aggregate": 1, "report": 1},
        lambda wd, out: None,
    ),
    Step(
        "W6",
        "a prediction file deleted, another truncated, a manifest, the table and a context file truncated",
        damage_results,
        True,
        {"contexts": 1, "evaluate": 3, "aggregate": 1, "report": 1},
        check_remade,
    ),
    Step(
        "W6b",
        "the same directory with another protocol selection (full only): the 5-shot results stay",
        full_only,
        True,
        {"contexts": 2, "evaluate": 4, "aggregate": 1, "report": 1},
        check_full_only,
    ),
    Step(
        "W7",
        "back to full + 5-shot, and the user edits a data file after its checksum was pinned",
        edit_user_data,
        False,
        {"download": 1, "preprocess": 1, "audit": 1, "contexts": 2, "evaluate": 4, "aggregate": 1, "report": 1},
        check_edited,
    ),
    Step(
        "W7b",
        "Snakemake's records gone (a fresh clone), then a method's code changed: its results (and those of the "
        "method built on it) are still re-made (GunPoint's still wait for the user's edited file)",
        forget_records_and_edit_code,
        False,
        {"download": 1, "preprocess": 1, "audit": 1, "contexts": 1, "evaluate": 4, "aggregate": 1, "report": 1},
        check_stale_set_aside,
    ),
    Step(
        "W8",
        "a misspelled method parameter in the config",
        typo_in_config,
        False,
        {},
        check_typo,
        dry_run=True,
    ),
    Step(
        "W8b",
        "reports.reference_results names a folder that does not exist",
        missing_reference_results,
        False,
        {},
        check_missing_reference_results,
        dry_run=True,
    ),
    Step(
        "W9",
        "the data lock file moved (for a read-only data folder), GunPoint allowed to differ, reference results in a "
        "folder whose name needs quoting (dry run)",
        data_settings,
        True,
        {},
        check_data_settings,
        dry_run=True,
    ),
]


@pytest.mark.slow(reason="12 Snakemake runs of the fault scenarios on GunPoint and ItalyPowerDemand (~220 s)")
def test_workflow_faults(tmp_path):
    wd = tmp_path / WORKDIR
    wd.mkdir()
    for step in STEPS:
        step.inject(wd)
        proc = snakemake(wd, *(["-n", "-p"] if step.dry_run else []))
        out = proc.stdout + proc.stderr
        where = f"{step.id} ({step.what})"
        assert (proc.returncode == 0) == step.exit_ok, f"{where}: exit {proc.returncode}\n{out[-5000:]}"
        if not step.dry_run:
            ran = jobs_scheduled(out)
            assert ran == step.jobs, f"{where}: scheduled {ran}, expected exactly {step.jobs}\n{out[-3000:]}"
        step.check(wd, out)


def test_a_failing_command_leaves_its_traceback_in_its_log(tmp_path):
    """Every rule runs one `chorustic` command with its output in the rule's log (`> {log} 2>&1`): a command
    that fails with an unexpected error leaves the traceback there and exits non-zero (so the onerror
    handler can name the reason)."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "not-a-folder").write_text("")
    log = tmp_path / "aggregate.log"
    cmd = f"chorustic aggregate --results-dir {tmp_path} --out {tmp_path}/not-a-folder/accuracies.csv > {log} 2>&1"
    proc = subprocess.run(cmd, shell=True, env=command_env(), timeout=300)
    assert proc.returncode == 1
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "FileExistsError" in text, text[-2000:]
