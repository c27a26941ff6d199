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
from chorustic.evaluation.job import failure_record_path, manifest_path
from fault_plugins import write_plugins

REPO = Path(__file__).resolve().parents[1]
OVERRIDE = {
    "datasets": {"archives": ["UCR"], "include": ["GunPoint"], "exclude": []},
    "protocols": {
        "full": True,
        "fixed_shot": {"shots": [5], "seeds": [0]},
        "proportional": {"percents": [], "seeds": [0]},
    },
    "evaluate": ["centroid"],
    "methods": {"centroid": {"plugin": "centroid"}, "flaky": {"plugin": "flaky"}},
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
        return ["evaluate", "--method", method, "--dataset", "GunPoint", *extra, *_config(root, **changes)]

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
        "R12",
        "k-shot ineligibility names the class by its label",
        imbalanced_dataset,
        lambda root: ["contexts", "MyFew", "--data-dir", "mine", "--cache-dir", "cache", "--out", "ctx.json"],
        0,
        (),
        reason_names_label,
    ),
]


@pytest.mark.parametrize("f", FAULTS, ids=[f.id for f in FAULTS])
def test_result_fault(f: ResultFault, finished, tmp_path, capsys, monkeypatch):
    root = _workdir(finished, tmp_path, monkeypatch)
    f.inject(root)
    rc = main(f.argv(root))
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc == f.exit, f"{f.id} {f.fault}: exit {rc}, expected {f.exit}\n{text}"
    for fragment in f.says:
        assert fragment in text, f"{f.id} {f.fault}: the message lacks {fragment!r}:\n{text}"
    if f.exit == 2:  # a user error: one message (a failing method's traceback is its log, and welcome)
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
