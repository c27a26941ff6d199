"""Fault table, results side: damaged result files, failing methods and stale results, through the real CLI
(``chorustic evaluate | aggregate | report | contexts | checkpoint-info``).

Each row: a fault, how it is injected into a finished small evaluation (GunPoint, a nearest-centroid
plugin from tests/fault_plugins.py, 2 contexts), the command, and what the user gets: the exit status,
the message, and what the table says (a damaged or failed result is a ``failed`` row naming the reason,
never an ``ok`` row; a damaged result is detected for the workflow to re-make it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest
import yaml

from chorustic.cli import main
from chorustic.evaluation.integrity import manifest_problem
from chorustic.evaluation.job import ERROR_CHARS, failure_record_path, manifest_path
from chorustic.io import sha256_file
from fault_plugins import FULL_DISK_ENV, FULL_DISK_SITE, full_disk, write_plugins

REPO = Path(__file__).resolve().parents[1]
OVERRIDE = {
    "datasets": {"archives": ["UCR"], "include": ["GunPoint"], "exclude": []},
    "protocols": {
        "full": True,
        "fixed_shot": {"shots": [5], "seeds": [0]},
        "proportional": {"percents": [], "seeds": [0]},
    },
    "evaluate": ["centroid"],
    "methods": {
        "centroid": {"plugin": "centroid"},
        "flaky": {"plugin": "flaky"},
        "hog": {"plugin": "hog"},
        "sleepy": {"plugin": "sleepy"},
    },
    "reports": {"reference_method": "centroid"},
}


def _config(root: Path, **changes) -> list[str]:
    cfg = json.loads(json.dumps(OVERRIDE))
    for key, value in changes.items():
        cfg[key] = value
    (root / "override.yaml").write_text(yaml.safe_dump(cfg))
    return ["--config", str(REPO / "config" / "demo.yaml"), "--config", str(root / "override.yaml")]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished evaluation of centroid on GunPoint (the state every row starts from)."""
    root = tmp_path_factory.mktemp("finished")
    write_plugins(root / "plugins")
    old = Path.cwd()
    env = os.environ.get("CHORUSTIC_BASELINES")
    os.environ["CHORUSTIC_BASELINES"] = str(root / "plugins")
    os.chdir(root)
    try:
        assert (
            main(
                [
                    "evaluate",
                    "--method",
                    "centroid",
                    "--dataset",
                    "GunPoint",
                    "--no-isolation",
                    *_config(root),
                ]
            )
            == 0
        )
        assert main(["aggregate", *_config(root)]) == 0
    finally:
        os.chdir(old)
        if env is None:
            os.environ.pop("CHORUSTIC_BASELINES")
        else:
            os.environ["CHORUSTIC_BASELINES"] = env
    return root


def pred(root: Path, protocol: str = "fixed5") -> Path:
    return root / "results" / protocol / "centroid" / "Predictions" / "GunPoint" / "testResample0.csv"


def manifest(root: Path, method: str = "centroid") -> Path:
    return manifest_path(root / "results", method, "GunPoint")


@dataclasses.dataclass
class ResultFault:
    id: str
    fault: str
    inject: Callable[[Path], None]
    argv: Callable[[Path], list[str]]
    exit: int
    says: tuple[str, ...]
    check: Callable[[Path], None] | None = None
    no_traceback: bool = False
    """The message is one line (a full disk fails every file alike: no traceback per file)."""


def aggregate(root: Path) -> list[str]:
    return ["aggregate", *_config(root)]


def report(root: Path) -> list[str]:
    return [
        "report",
        "--results",
        "results",
        "--out",
        "reports",
        "--reference",
        "centroid",
        "--formats",
        "png",
    ]


def evaluate(method: str, *extra: str, **changes):
    def argv(root: Path) -> list[str]:
        return ["evaluate", "--methods", method, "--datasets", "GunPoint", *extra, *_config(root, **changes)]

    return argv


# -- injections -----------------------------------------------------------------------------------------
def delete_prediction(root: Path) -> None:
    pred(root).unlink()


def truncate_prediction(root: Path) -> None:
    lines = pred(root).read_text().splitlines(keepends=True)
    pred(root).write_text("".join(lines[:40]))


def edit_prediction_same_size(root: Path) -> None:
    text = pred(root).read_text()
    lines = text.splitlines(keepends=True)
    flip = {"0": "1", "1": "0"}
    i = 10
    lines[i] = lines[i][0] + "," + flip[lines[i][2]] + lines[i][3:]  # the predicted class of one query
    pred(root).write_text("".join(lines))
    assert len(pred(root).read_text()) == len(text)


def truncate_manifest(root: Path) -> None:
    text = manifest(root).read_text()
    manifest(root).write_text(text[: len(text) // 2])


def truncate_table_at_line(root: Path) -> None:
    p = root / "results" / "accuracies.csv"
    p.write_text("".join(p.read_text().splitlines(keepends=True)[:2]))


def flaky_down(root: Path) -> None:
    (root / "down").write_text("")


def corrupt_contexts(root: Path) -> None:
    p = root / "results" / "contexts" / "GunPoint.json"
    p.write_text(p.read_text()[:100])


def random_bytes_checkpoint(root: Path) -> None:
    shutil.copy(REPO / "baselines" / "chorustic.py", root / "plugins")
    (root / "models").mkdir(exist_ok=True)
    (root / "models" / "model.safetensors").write_bytes(os.urandom(4000))


def truncated_checkpoint(root: Path) -> None:
    shutil.copy(REPO / "baselines" / "chorustic.py", root / "plugins")
    (root / "models").mkdir(exist_ok=True)
    src = (REPO / "models" / "chorustic-small" / "model.safetensors").read_bytes()
    (root / "models" / "model.safetensors").write_bytes(src[: len(src) // 3])


def imbalanced_dataset(root: Path) -> None:
    from test_faults_data import _write_generated

    _write_generated(root / "mine" / "MyFew", "MyFew", ["1"] * 6 + ["2"] * 6 + ["3"] * 2, ["1", "2", "3"])


def noop(root: Path) -> None:
    pass


def mismatched_checkpoint(root: Path) -> None:
    """A released-format checkpoint (a plain safetensors file) whose tensors are another architecture's."""
    from safetensors.torch import load_file, save_file

    shutil.copy(REPO / "baselines" / "chorustic.py", root / "plugins")
    (root / "models").mkdir(exist_ok=True)
    weights = load_file(REPO / "models" / "chorustic-small" / "model.safetensors")
    save_file(weights, root / "models" / "model.safetensors")


def disk_full_for(*patterns: str):
    """A full disk for the files matching ``patterns`` (relative to the workdir), in this process and in
    every worker it starts (tests/fault_plugins.py, ``full_disk``)."""

    def inject(root: Path) -> None:
        os.environ[FULL_DISK_ENV] = os.pathsep.join(str(root / p) for p in patterns)
        os.environ["PYTHONPATH"] = os.pathsep.join([str(FULL_DISK_SITE), os.environ.get("PYTHONPATH", "")])
        os.fsync = full_disk(os.fsync)

    return inject


# -- checks -------------------------------------------------------------------------------------------
def table(root: Path) -> pd.DataFrame:
    return pd.read_csv(root / "results" / "accuracies.csv")


def row(root: Path, method: str = "centroid", protocol: str = "fixed5") -> pd.Series:
    df = table(root)
    return df[(df.method == method) & (df.protocol == protocol)].iloc[0]


def failed_row_and_remake(fragment: str, corrupt: bool):
    def check(root: Path) -> None:
        r = row(root)
        assert r.status == "failed" and fragment in r.error and "re-makes" in r.error
        assert row(root, protocol="full").status == "ok"  # the other run of the job is still reported
        assert (pred(root).with_name(pred(root).name + ".corrupt").exists()) == corrupt
        assert manifest_problem(manifest(root)) is not None  # the workflow sets it aside and re-makes the job

    return check


def manifest_failed_rows(root: Path) -> None:
    df = table(root)
    assert len(df[df.method == "centroid"]) == 2 and (df[df.method == "centroid"].status == "failed").all()
    assert df[df.method == "centroid"].error.str.contains("unreadable").all()
    assert manifest_problem(manifest(root)) is not None


def failed_run_not_finished(root: Path) -> None:
    assert not manifest(root, "flaky").exists(), "a job with a failed run was recorded as finished"
    doc = json.loads(failure_record_path(root / "results", "flaky", "GunPoint").read_text())
    runs = {r["protocol"]: r for r in doc["runs"]}
    assert runs["full"]["status"] == "ok" and runs["fixed5"]["status"] == "failed"
    assert "the service this method needs is down" in runs["fixed5"]["error"]


def stale_rows(root: Path) -> None:
    df = table(root)
    assert len(df[df.method == "centroid"]) == 2 and (df[df.method == "centroid"].status == "failed").all()
    assert df[df.method == "centroid"].error.str.contains("stale").all()


def nothing_finished(method: str):
    def check(root: Path) -> None:
        assert not manifest(root, method).exists()

    return check


def reason_names_label(root: Path) -> None:
    doc = json.loads((root / "ctx.json").read_text())
    reasons = [c["reason"] for c in doc["contexts"] if c["status"] == "ineligible"]
    assert reasons and all("class '3': 2" in r for r in reasons), reasons


def finished_record_untouched(root: Path) -> None:
    """The finished job's manifest and prediction files are exactly as they were (nothing was written)."""
    before = Path(os.environ["FINISHED"])
    for rel in ("results/runs/centroid/GunPoint.json", *(str(pred(Path("."), p)) for p in ("full", "fixed5"))):
        assert sha256_file(root / rel) == sha256_file(before / rel), f"{rel} was rewritten"
    assert manifest_problem(manifest(root)) is None


def subset_run_keeps_the_rest(root: Path) -> None:
    """`--protocols fixed5` re-makes fixed5 only: full's prediction file stays; the manifest lists fixed5, so
    the configuration's table shows full as not run (and the workflow re-makes the job), never a lost row."""
    before = Path(os.environ["FINISHED"])
    assert sha256_file(pred(root, "full")) == sha256_file(pred(before, "full"))
    runs = json.loads(manifest(root).read_text())["runs"]
    assert [r["protocol"] for r in runs] == ["fixed5"] and manifest_problem(manifest(root)) is None
    assert manifest_problem(manifest(root), expected={("full", 0), ("fixed5", 0)}) is not None
    assert main(aggregate(root)) == 1
    assert row(root, protocol="fixed5").status == "ok"
    full = row(root, protocol="full")
    assert full.status == "failed" and "another protocol selection" in full.error


def nothing_half_written(root: Path) -> None:
    """A full disk leaves no temporary file, and nothing counts as finished."""
    assert not list(root.rglob("*.tmp")), list(root.rglob("*.tmp"))
    assert not manifest(root).exists()


def job_failed_on_full_disk(root: Path) -> None:
    nothing_half_written(root)
    runs = json.loads(failure_record_path(root / "results", "centroid", "GunPoint").read_text())["runs"]
    assert {r["status"] for r in runs} == {"failed"}
    assert all("no space left on the device for" in r["error"] and "testResample0.csv" in r["error"] for r in runs)


def table_and_checksum_as_before(root: Path) -> None:
    before = Path(os.environ["FINISHED"])
    for name in ("accuracies.csv", "accuracies.csv.sha256"):
        assert (root / "results" / name).read_bytes() == (before / "results" / name).read_bytes(), name
    assert not list(root.rglob("*.tmp"))


def advice_first_middle_cut(root: Path) -> None:
    """An error longer than the error column keeps its head (what, and what to do in config words) and its
    tail; the middle is cut and says so."""
    runs = json.loads(failure_record_path(root / "results", "chk", "GunPoint").read_text())["runs"]
    err = runs[0]["error"]
    assert len(err) <= ERROR_CHARS, len(err)
    assert err.index("params: {hparams_json: <file>}") < err.index("characters cut")
    assert err.endswith("more)"), err[-200:]  # the tail of the key list survives


def mem_limit_named(root: Path) -> None:
    doc = json.loads(failure_record_path(root / "results", "hog", "GunPoint").read_text())
    runs = {r["protocol"]: r for r in doc["runs"]}
    assert runs["fixed5"]["status"] == "ok"  # the worker was replaced and went on
    err = runs["full"]["error"]
    assert err.startswith("exceeded the job's memory limit of 1000 MB") and "raise methods.hog.resources.mem_mb" in err


CHORUSTIC_RUN = {"chk": {"plugin": "chorustic", "params": {"checkpoint": "models/model.safetensors"}}}

FAULTS = [
    ResultFault(
        "R01",
        "a prediction file deleted",
        delete_prediction,
        aggregate,
        1,
        ("testResample0.csv is missing",),
        failed_row_and_remake("is missing", corrupt=False),
    ),
    ResultFault(
        "R02",
        "a prediction file truncated at a line boundary",
        truncate_prediction,
        aggregate,
        1,
        ("truncated or changed",),
        failed_row_and_remake("bytes", corrupt=True),
    ),
    ResultFault(
        "R03",
        "a prediction file edited in place (same size)",
        edit_prediction_same_size,
        aggregate,
        1,
        ("does not match the SHA-256",),
        failed_row_and_remake("SHA-256", corrupt=True),
    ),
    ResultFault(
        "R04",
        "a run manifest truncated",
        truncate_manifest,
        aggregate,
        1,
        ("GunPoint.json is unreadable",),
        manifest_failed_rows,
    ),
    ResultFault(
        "R05",
        "accuracies.csv truncated at a line boundary",
        truncate_table_at_line,
        report,
        2,
        ("accuracies.csv does not match the checksum", "truncated or edited", "run `snakemake` again"),
    ),
    ResultFault(
        "R06",
        "a method that fails on some contexts",
        flaky_down,
        evaluate("flaky", "--no-isolation"),
        1,
        ("1 of 2 runs failed", "GunPoint.failed.json", "retries"),
        failed_run_not_finished,
    ),
    ResultFault(
        "R07",
        "results made with other parameters, not re-made yet",
        noop,
        lambda root: [
            "aggregate",
            *_config(
                root,
                methods={
                    **OVERRIDE["methods"],
                    "centroid": {"plugin": "centroid", "params": {"shrink": 0.5}},
                },
            ),
        ],
        1,
        ("stale",),
        stale_rows,
    ),
    ResultFault(
        "R09",
        "a context file damaged after it was written",
        corrupt_contexts,
        evaluate("centroid"),
        1,
        ("cannot read context file", "delete it and run `snakemake` again"),
        nothing_finished("centroid"),
    ),
    ResultFault(
        "R10",
        "a model.safetensors of random bytes",
        random_bytes_checkpoint,
        evaluate(
            "chk",
            "--no-isolation",
            "--protocols",
            "fixed5",
            methods=CHORUSTIC_RUN,
            evaluate=["chk"],
            reports={"reference_method": "chk"},
        ),
        1,
        ("models/model.safetensors", "not a readable safetensors file", "Replace it"),
    ),
    ResultFault(
        "R11",
        "a truncated model.safetensors",
        truncated_checkpoint,
        evaluate(
            "chk",
            "--no-isolation",
            "--protocols",
            "fixed5",
            methods=CHORUSTIC_RUN,
            evaluate=["chk"],
            reports={"reference_method": "chk"},
        ),
        1,
        ("models/model.safetensors", "damaged or truncated"),
    ),
    ResultFault(
        "R13",
        "an unknown protocol id (--protocols fixed7)",
        noop,
        evaluate("centroid", "--protocols", "fixed7"),
        2,
        ("--protocols lists 'fixed7'", "it evaluates: full, fixed5", "Did you mean 'fixed5'"),
        finished_record_untouched,
    ),
    ResultFault(
        "R14",
        "a misspelled protocol id (--protocols ful)",
        noop,
        evaluate("centroid", "--protocols", "ful"),
        2,
        ("'ful'", "Did you mean 'full'"),
        finished_record_untouched,
    ),
    ResultFault(
        "R15",
        "a known and an unknown protocol id (--protocols full,fixed7)",
        noop,
        evaluate("centroid", "--protocols", "full,fixed7"),
        2,
        ("'fixed7'",),
        finished_record_untouched,
    ),
    ResultFault(
        "R16",
        "an empty protocol list (--protocols ,)",
        noop,
        evaluate("centroid", "--protocols", ","),
        2,
        ("names no protocol", "full, fixed5"),
        finished_record_untouched,
    ),
    ResultFault(
        "R17",
        "a protocol the method run is restricted away from (methods.<run>.protocols: [full])",
        noop,
        evaluate("centroid", "--protocols", "fixed5",
                 methods={**OVERRIDE["methods"], "centroid": {"plugin": "centroid", "protocols": ["full"]}}),
        2,
        ("'fixed5'", "(methods.centroid.protocols)", "it evaluates: full"),
        finished_record_untouched,
    ),
    ResultFault(
        "R18",
        "a context file written for other protocol settings (10-shot added to the config)",
        noop,
        evaluate("centroid", protocols={**OVERRIDE["protocols"], "fixed_shot": {"shots": [5, 10], "seeds": [0]}}),
        2,
        ("GunPoint.json has no context fixed10/0", "Delete it"),
        finished_record_untouched,
    ),
    ResultFault(
        "R19",
        "a subset of a finished job's protocols (--protocols fixed5)",
        noop,
        evaluate("centroid", "--protocols", "fixed5"),
        0,
        ("fixed5\tseed 0\tok",),
        subset_run_keeps_the_rest,
    ),
    ResultFault(
        "R20",
        "the disk is full when the worker writes a prediction file",
        disk_full_for("results/*/centroid/Predictions/GunPoint/testResample0.csv"),
        evaluate("centroid"),
        1,
        ("no space left on the device for results/", "testResample0.csv: writing it needs", "run the same command"),
        job_failed_on_full_disk,
        no_traceback=True,
    ),
    ResultFault(
        "R21",
        "the disk is full when the run manifest is written (by the worker, then by its supervisor)",
        disk_full_for("results/runs/centroid/*"),
        evaluate("centroid"),
        1,
        ("chorustic evaluate: no space left on the device for results/runs/centroid/",),
        nothing_half_written,
        no_traceback=True,
    ),
    ResultFault(
        "R22",
        "the disk is full when the table's checksum is written",
        disk_full_for("results/accuracies.csv.sha256"),
        aggregate,
        1,
        ("chorustic aggregate: no space left on the device for", "accuracies.csv.sha256: writing it needs"),
        table_and_checksum_as_before,
        no_traceback=True,
    ),
    ResultFault(
        "R23",
        "the disk is full when a report is written",
        disk_full_for("reports/*"),
        report,
        1,
        ("chorustic report: no space left on the device for", "reports/"),
        no_traceback=True,
    ),
    ResultFault(
        "R24",
        "a checkpoint whose architecture does not match (an error longer than the error column)",
        mismatched_checkpoint,
        evaluate("chk", "--no-isolation", "--protocols", "fixed5", methods=CHORUSTIC_RUN, evaluate=["chk"],
                 reports={"reference_method": "chk"}),
        1,
        ("does not match the ChorusTIC architecture", "params: {hparams_json: <file>}", "characters cut"),
        advice_first_middle_cut,
    ),
    ResultFault(
        "R25",
        "a method run over its memory (methods.<run>.resources.mem_mb: 1000)",
        noop,
        evaluate("hog", methods={**OVERRIDE["methods"], "hog": {"plugin": "hog", "resources": {"mem_mb": 1000}}}),
        1,
        ("exceeded the job's memory limit of 1000 MB", "raise methods.hog.resources.mem_mb"),
        mem_limit_named,
    ),
    ResultFault(
        "R12",
        "k-shot ineligibility names the class by its label",
        imbalanced_dataset,
        lambda root: ["contexts", "MyFew", "--data-dir", "mine", "--cache-dir", "cache", "--out", "ctx.json"],
        0,
        (),
        reason_names_label,
    ),
]


#: The faults whose scenario waits on a real limit (a worker growing to its memory limit): slow (~6 s).
SLOW_FAULTS = {"R25"}


@pytest.mark.parametrize("f", [pytest.param(f, marks=pytest.mark.slow(reason="a worker grows to its memory limit (~6 s)"))
                               if f.id in SLOW_FAULTS else f for f in FAULTS], ids=[f.id for f in FAULTS])
def test_result_fault(f: ResultFault, finished, tmp_path, capsys, monkeypatch):
    root = _workdir(finished, tmp_path, monkeypatch)
    monkeypatch.setenv("FINISHED", str(finished))
    # what an injection may change, restored after the test (a full disk: os.fsync and the workers' environment)
    monkeypatch.setattr(os, "fsync", os.fsync)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv(FULL_DISK_ENV, "")
    f.inject(root)
    rc = main(f.argv(root))
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc == f.exit, f"{f.id} {f.fault}: exit {rc}, expected {f.exit}\n{text}"
    for fragment in f.says:
        assert fragment in text, f"{f.id} {f.fault}: the message lacks {fragment!r}:\n{text}"
    if f.exit == 2 or f.no_traceback:  # a user error: one message (a failing method's traceback is its log)
        assert "Traceback" not in out.err, text
    if f.check is not None:
        f.check(root)


def _workdir(finished: Path, tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "w"
    shutil.copytree(finished, root, symlinks=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("CHORUSTIC_BASELINES", str(root / "plugins"))
    monkeypatch.setenv("FLAKY_FAIL", str(root / "down"))
    return root


def test_the_workers_reason_reaches_the_error_column(finished, tmp_path, monkeypatch):
    """A job-level error inside the worker (here a parameter the plugin rejects, which the configuration
    check would have caught first) is recorded with its own reason, not "worker process exited with code 1"."""
    from chorustic.evaluation.job import JobSpec
    from chorustic.evaluation.supervisor import run_supervised

    _workdir(finished, tmp_path, monkeypatch)
    spec = JobSpec(
        method="centroid",
        plugin="centroid",
        dataset="GunPoint",
        archive="UCR",
        results_dir="results",
        contexts_file="results/contexts/GunPoint.json",
        data_dir="data/raw",
        cache_dir="data/cache",
        params={"n_kernel": 3},
        protocols=["full", "fixed5"],
    )
    m = run_supervised(spec)
    errors = {r["error"] for r in m["runs"]}
    assert len(errors) == 1
    assert "no parameter 'n_kernel'" in next(iter(errors)) and "known parameters: ['shrink']" in next(
        iter(errors)
    )
    assert failure_record_path("results", "centroid", "GunPoint").exists()


def test_a_full_disk_when_the_tables_are_written_after_a_failure(finished, tmp_path, monkeypatch):
    """The Snakefile's onerror handler on a full disk: one line naming the file and the space it needs, then
    the run's usual summary of what failed; the table and its checksum stay as they were (never a table
    without its checksum)."""
    import io

    from chorustic import config as cc
    from chorustic.evaluation.snakemake_glue import tables_after_failure

    root = _workdir(finished, tmp_path, monkeypatch)
    cfg = cc.load_config(_config(root, evaluate=["centroid", "flaky"])[1::2])  # flaky never ran
    monkeypatch.setenv(FULL_DISK_ENV, str(root / "results" / "accuracies.csv"))
    monkeypatch.setattr(os, "fsync", full_disk(os.fsync))
    out = io.StringIO()
    tables_after_failure(cfg, steps=[], evaluate_log=str(root / "logs" / "evaluate" / "{method}" / "{dataset}.log"),
                         report_log=str(root / "logs" / "report.log"), out=out)
    text = out.getvalue()
    assert "Traceback" not in text, text
    assert "chorustic: something failed. 1 evaluation job(s) did not finish" in text and "flaky/GunPoint" in text
    assert "The tables could not be written: no space left on the device for results/accuracies.csv: writing it " \
           "needs" in text, text
    assert "run the same command again" in text
    for name in ("accuracies.csv", "accuracies.csv.sha256"):
        assert (root / "results" / name).read_bytes() == (finished / "results" / name).read_bytes()
    assert not list(root.rglob("*.tmp"))


@pytest.mark.slow(reason="evaluation jobs that wait for their time limits (~12 s)")
def test_time_limits_belong_to_the_cluster(finished, tmp_path, monkeypatch, capsys):
    """A local run never stops a job that is making progress because the machine is slower than the cost
    model assumed (the workflow passes the job's `runtime` as --cluster-runtime); a limit the user set holds
    and is named; under a cluster scheduler (SLURM_JOB_ID) the worker stops a minute before the scheduler
    ends the job (its time left from squeue), so the failure is recorded, naming the setting to raise."""
    root = _workdir(finished, tmp_path, monkeypatch)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("SLEEPY_S", "2")  # the full context's fit (and the worker's start) take longer than 0.6 s

    def runs(*extra: str) -> tuple[int, dict[str, dict]]:
        rc = main(evaluate("sleepy", *extra)(root))
        path = manifest_path(root / "results", "sleepy", "GunPoint")
        path = path if path.exists() else failure_record_path(root / "results", "sleepy", "GunPoint")
        return rc, {r["protocol"]: r for r in json.loads(path.read_text())["runs"]}

    rc, got = runs("--cluster-runtime", "0.01")  # the job asked for 0.6 s: not a limit on a local run
    assert rc == 0 and {r["status"] for r in got.values()} == {"ok"}, got

    rc, got = runs("--runtime", "0.02")  # a limit the user set: 1.2 s
    assert rc == 1 and got["full"]["status"] == "failed"
    assert got["full"]["error"].startswith("exceeded the time limit of 0.02 min set by --runtime"), got["full"]

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"  # SLURM's answer for this job: 65 s left
    squeue.write_text('#!/bin/sh\n[ "$*" = "-h -j 4242 -o %L" ] && echo "   1:05" || exit 1\n')
    squeue.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLEEPY_S", "60")
    rc, got = runs("--cluster-runtime", "9")
    err = got["full"]["error"]
    assert rc == 1 and got["full"]["status"] == "failed" and got["fixed5"]["status"] == "failed"
    assert "1 min before SLURM ends the job at its time limit" in err and "raise methods.sleepy.resources.runtime" \
        in err, err
    assert "estimated by the method's cost model" in err


_PLUGIN = '''"""A method.
# a docstring line that starts like a comment
"""
from typing import ClassVar

from chorustic.methods import CostModel, Method

# a comment
SMALL_COST = CostModel(time_job_s=1.0,
                       mem_base_mb=100)


class M(Method):
    resources: ClassVar[dict] = {"threads": 1}
    #: fitted on ...
    cost: ClassVar[CostModel] = CostModel(time_job_s=2.0,
                                          mem_base_mb=200)

    def shrink(self, x):
        return 0.5 * x  # trailing comment

    def cost_band(self, size, **params):
        return None
'''


@pytest.mark.parametrize("edit, changes", [
    (lambda s: s.replace("# a comment", "# another comment"), False),
    (lambda s: s.replace("#: fitted on ...", "#: refitted on 99 jobs"), False),
    (lambda s: s.replace("time_job_s=2.0", "time_job_s=3.5"), False),  # a refit of the class's cost model
    (lambda s: s.replace("mem_base_mb=100", "mem_base_mb=150"), False),  # a module-level cost model
    (lambda s: s.replace("return None", "return size.length / 2"), False),  # a costing hook
    (lambda s: s.replace("0.5 * x", "0.6 * x"), True),  # the method's code
    (lambda s: s.replace("# trailing comment", "# other"), True),  # on a code line: counted, to be safe
    (lambda s: s.replace("starts like a comment", "starts like a remark"), True),  # a string, not a comment
    (lambda s: s.replace('{"threads": 1}', '{"threads": 4}'), True),  # resources may change the numerics
])
def test_a_methods_code_fingerprint_ignores_comments_and_cost_models_only(tmp_path, edit, changes):
    """Refitting a cost model (benchmarks/archive_scale.py --fit) re-makes no result; any other edit does."""
    from chorustic.evaluation.integrity import code_text

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(_PLUGIN)
    b.write_text(edit(_PLUGIN))
    assert a.read_text() != b.read_text()
    assert (code_text(a) != code_text(b)) is changes


def test_a_code_files_digest_follows_its_content_within_one_process(tmp_path):
    """The digests of code files are kept per process (one parse of a file the runs share), by the file's
    bytes: an edit of the same size at the same modification time still changes the fingerprint."""
    import os

    from chorustic.evaluation.integrity import _code_sha256

    f = tmp_path / "m.py"
    f.write_text(_PLUGIN)
    first = _code_sha256([f])
    stamp = os.stat(f).st_mtime_ns
    f.write_text(_PLUGIN.replace("0.5 * x", "0.6 * x"))
    os.utime(f, ns=(stamp, stamp))
    assert _code_sha256([f]) != first
    f.write_text(_PLUGIN.replace("# a comment", "# a remark"))  # a comment: the method's code is unchanged
    assert _code_sha256([f]) == first


def test_the_cost_model_module_is_not_part_of_any_methods_code():
    from chorustic.evaluation.integrity import method_code_files
    from chorustic.methods import default_plugin_dir, discover

    disc = discover()
    for name in ("minirocket", "quant", "chorustic", "tabicl_v2"):
        files = method_code_files(disc.methods[name], default_plugin_dir() / disc.sources[name])
        assert default_plugin_dir() / disc.sources[name] in files
        assert not any(f.name == "cost.py" for f in files), name


def test_chorustics_code_holds_the_resampler_its_episode_and_model_use():
    """ChorusTIC resamples every series to its model's length (the classifier's episode, the model's length fix):
    an edit of the resampler re-makes its results, as an edit of its model or inference code does."""
    from chorustic.evaluation.integrity import method_code_files
    from chorustic.methods import default_plugin_dir, discover
    from chorustic.paths import REPO_ROOT

    disc = discover()
    files = {f.relative_to(REPO_ROOT).as_posix() for f in
             method_code_files(disc.methods["chorustic"], default_plugin_dir() / disc.sources["chorustic"])}
    assert {"chorustic/resampling.py", "chorustic/inference/classifier.py", "chorustic/model/chorustic.py"} <= files


def test_a_file_set_aside_twice_keeps_both(tmp_path):
    """A damaged prediction file moved aside a second time never replaces the first one (issue 72, case 11):
    the second goes to <name>.2.corrupt, and every set-aside suffix (.damaged, .stale) is numbered the same way."""
    from chorustic.evaluation.integrity import set_aside

    f = tmp_path / "testResample0.csv"
    kept = []
    for text in ("first edit", "second edit", "third edit"):
        f.write_text(text)
        kept.append(set_aside(f, ".corrupt"))
    assert [p.name for p in kept] == ["testResample0.csv.corrupt", "testResample0.csv.2.corrupt",
                                      "testResample0.csv.3.corrupt"]
    assert [p.read_text() for p in kept] == ["first edit", "second edit", "third edit"] and not f.exists()
    m = tmp_path / "GunPoint.json"
    m.write_text("{}")
    assert set_aside(m).name == "GunPoint.json.damaged"
    m.write_text("{}")
    assert set_aside(m).name == "GunPoint.json.2.damaged"


def test_a_copied_results_folder_reads_its_own_files(finished, tmp_path, monkeypatch, capsys):
    """Results are relocatable (issue 72, case 3): a manifest records its prediction files relative to its
    results folder, so a copy (cp -a, rsync from a cluster, a reviewer's download) is checked and read in
    the copy: an edit in the copy is a failed row there, and the copy stays whole once the original is gone.
    A manifest of an older harness, with absolute paths into the original, is read in the copy too."""
    base = _workdir(finished, tmp_path, monkeypatch)
    results = base / "abs-results"
    argv = _config(base, paths={"results_dir": str(results)})
    assert main(["evaluate", "--methods", "centroid", "--datasets", "GunPoint", "--no-isolation", *argv]) == 0
    runs = json.loads(manifest_path(results, "centroid", "GunPoint").read_text())["runs"]
    assert [r["result_file"] for r in runs] == [f"{p}/centroid/Predictions/GunPoint/testResample0.csv"
                                                for p in ("full", "fixed5")]
    copy = tmp_path / "copy"
    shutil.copytree(base, copy, symlinks=True)
    mine = copy / "abs-results" / "fixed5" / "centroid" / "Predictions" / "GunPoint" / "testResample0.csv"
    original = mine.read_bytes()
    mine.write_text(mine.read_text().replace("\n0,", "\n1,", 1))  # an edit in the copy only
    capsys.readouterr()
    assert main(["aggregate", "--results-dir", str(copy / "abs-results"), *_config(copy)]) == 1
    acc = pd.read_csv(copy / "abs-results" / "accuracies.csv")
    bad = acc[acc.protocol == "fixed5"].iloc[0]
    assert bad.status == "failed" and str(copy / "abs-results") in bad.error, bad.error
    assert (acc[acc.protocol == "full"].status == "ok").all()
    assert not list((results / "fixed5").rglob("*.corrupt")), "the original's file was moved aside"
    mine.write_bytes(original)  # the edit undone (the edited file stays aside as .corrupt)
    # a manifest written by an older harness: absolute paths into the original folder
    m = manifest_path(copy / "abs-results", "centroid", "GunPoint")
    doc = json.loads(m.read_text())
    for r in doc["runs"]:
        r["result_file"] = str(results / r["result_file"])
    m.write_text(json.dumps(doc))
    shutil.move(str(base), tmp_path / "gone")  # the original is moved away
    monkeypatch.setenv("CHORUSTIC_BASELINES", str(copy / "plugins"))
    monkeypatch.chdir(copy)
    assert main(["aggregate", "--results-dir", str(copy / "abs-results"), *_config(copy)]) == 0
    acc = pd.read_csv(copy / "abs-results" / "accuracies.csv")
    assert (acc.status == "ok").all() and len(acc) == 2
    assert set(acc.result_file) == {f"{p}/centroid/Predictions/GunPoint/testResample0.csv" for p in ("full", "fixed5")}


@pytest.mark.slow(reason="two evaluation jobs stopped and crashed (~5 s each)")
@pytest.mark.parametrize("log_tail, says", [
    ("[centroid/GunPoint/full/seed0] accuracy 0.9602 (fit 8.0s, predict 0.1s)\n",
     "the evaluation job was stopped before it finished, with no error in its log"),
    ("[centroid/GunPoint/full/seed0] accuracy 0.9602 (fit 8.0s, predict 0.1s)\nRuntimeError: boom\n",
     "the evaluation job failed: RuntimeError: boom"),
], ids=["stopped", "crashed"])
def test_the_summary_after_a_stop_keeps_finished_runs_and_never_quotes_a_success_line(
        finished, tmp_path, monkeypatch, log_tail, says):
    """72.6: a job stopped after 1 of its 2 contexts (its progress record holds the finished one, its log ends
    with that context's success line): the summary says it was stopped (or quotes the error its log names),
    never the success line as the reason; the finished run is `failed` as "finished, kept for the next run",
    the other with the reason."""
    import io

    from chorustic import config as cc
    from chorustic.evaluation.job import progress_path
    from chorustic.evaluation.snakemake_glue import tables_after_failure

    root = _workdir(finished, tmp_path, monkeypatch)
    cfg = cc.load_config(_config(root)[1::2])
    done = json.loads(manifest(root).read_text())
    done["runs"] = [r for r in done["runs"] if r["protocol"] == "full"]
    progress_path(root / "results", "centroid", "GunPoint").write_text(json.dumps(done))
    manifest(root).unlink()
    (root / "logs" / "evaluate" / "centroid").mkdir(parents=True, exist_ok=True)
    (root / "logs" / "evaluate" / "centroid" / "GunPoint.log").write_text("starting\n" + log_tail)
    out = io.StringIO()
    tables_after_failure(cfg, steps=[], evaluate_log=str(root / "logs" / "evaluate" / "{method}" / "{dataset}.log"),
                         report_log=str(root / "logs" / "report.log"), out=out)
    text = out.getvalue()
    assert "1 evaluation job(s) did not finish" in text and says in text, text
    assert "1 of its 2 runs finished and are kept: the next run does only the others" in text, text
    assert "accuracy 0.9602" not in text, text
    table = pd.read_csv(root / "results" / "accuracies.csv").set_index("protocol")
    assert (table["status"] == "failed").all()
    assert table.loc["full", "error"].startswith("finished, kept for the next run, not counted: ")
    assert table.loc["fixed5", "error"].startswith(says)


def test_the_summary_when_every_evaluation_finished(finished, tmp_path, monkeypatch):
    """72.6: a workflow stopped (or failed) after its evaluations: no "0 evaluation job(s) did not finish"."""
    import io

    from chorustic import config as cc
    from chorustic.evaluation.snakemake_glue import tables_after_failure

    root = _workdir(finished, tmp_path, monkeypatch)
    cfg = cc.load_config(_config(root)[1::2])
    out = io.StringIO()
    tables_after_failure(cfg, steps=[], evaluate_log=str(root / "logs" / "evaluate" / "{method}" / "{dataset}.log"),
                         report_log=str(root / "logs" / "report.log"), out=out)
    text = out.getvalue()
    assert "0 evaluation job" not in text and "every evaluation job finished" in text and "holds all 2 runs" in text


def test_results_of_two_settings_in_one_folder_are_refused_not_averaged(finished, tmp_path, monkeypatch, capsys):
    """72.12: one method's manifests made with two settings (here a copy of the GunPoint job as if run on
    another dataset with shrink=0.5) are never averaged into one table row: `aggregate` refuses in one line
    naming both settings and their datasets, and the fix; the table is not written."""
    root = _workdir(finished, tmp_path, monkeypatch)
    doc = json.loads(manifest(root).read_text())
    doc["dataset"] = "Coffee"
    doc["fingerprint"]["params"] = {**doc["fingerprint"].get("params", {}), "shrink": 0.5}
    (root / "results" / "runs" / "centroid" / "Coffee.json").write_text(json.dumps(doc))
    table = root / "results" / "accuracies.csv"
    before = table.read_bytes()
    rc = main(["aggregate", "--results-dir", str(root / "results")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "results/runs/centroid/ holds results made with 2 different settings" in err, err
    assert "shrink=0.5" in err and "(Coffee)" in err and "(GunPoint)" in err and "--config" in err, err
    assert table.read_bytes() == before


def test_aggregate_with_a_config_names_the_jobs_it_leaves_out(finished, tmp_path, monkeypatch, capsys):
    """72.12: `aggregate --config` of a run whose folder also holds another dataset's job says so (a note
    naming it), instead of leaving it out without a word."""
    root = _workdir(finished, tmp_path, monkeypatch)
    doc = json.loads(manifest(root).read_text())
    doc["dataset"] = "Coffee"
    (root / "results" / "runs" / "centroid" / "Coffee.json").write_text(json.dumps(doc))
    assert main(["aggregate", *_config(root)]) == 0
    err = capsys.readouterr().err
    assert "note: 1 job(s) in results/runs are not jobs of this configuration and are not in the table: " \
           "centroid/Coffee" in err, err


def test_results_of_two_context_selections_in_one_folder_are_a_clash_not_absent_runs(finished, tmp_path, monkeypatch,
                                                                                     capsys):
    """72.12: two runs' folders copied into one, one with fixed-shot seed 0, the other with seed 1: `aggregate`
    refuses in one line naming the protocol, both seed sets and their jobs, instead of listing each job's other
    seed as an absent run."""
    root = _workdir(finished, tmp_path, monkeypatch)
    doc = json.loads(manifest(root).read_text())
    doc["dataset"] = "Coffee"
    for r in doc["runs"]:
        if r.get("family") != "full":
            r["seed"] = int(r["seed"]) + 1
    (root / "results" / "runs" / "centroid" / "Coffee.json").write_text(json.dumps(doc))
    rc = main(["aggregate", "--results-dir", str(root / "results")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "results of 2 different context sets: seeds [0] (centroid/GunPoint); seeds [1] (centroid/Coffee)" in err, err
    assert "--config" in err
