"""The Snakemake workflow: the paper profile's DAG covers all 158 datasets; a small real run goes
download -> preprocess -> contexts -> evaluate -> aggregate -> report, records a method that cannot
run as failed without keeping the others out of the tables (and exits non-zero), and a re-run after
losing a job's output redoes only that job (and the failed ones) and gives the same tables. The small
run uses protocol levels the paper does not (1 shot, 10 %): any level of the config works end to end."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from chorustic.testing.workflow import SNAKEFILE, run_snakemake

REPO = Path(__file__).resolve().parents[1]
def _snakemake(workdir: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return run_snakemake("-s", str(SNAKEFILE), "-d", str(workdir), *args, cwd=workdir, timeout=timeout)


def _job_counts(output: str) -> dict[str, int]:
    stats = output[output.index("Job stats:"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", stats, re.M)}


@pytest.mark.slow
def test_paper_profile_dry_run_lists_every_dataset_and_method(tmp_path):
    proc = _snakemake(tmp_path, "-n", "--cores", "4")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    counts = _job_counts(proc.stdout)
    assert counts["download"] == counts["preprocess"] == counts["contexts"] == 158
    assert counts["pretrain"] == 4  # ChorusTIC + the three pretrained ablations of Table 4
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    jobs = set(re.findall(r"output: results/runs/(\w+)/([\w-]+)\.json", proc.stdout))
    methods = {m for m, _ in jobs}
    assert methods == set(cfg["evaluate"])
    assert {d for m, d in jobs if m == "minirocket"} >= {"Adiac", "InsectWingbeatSubset", "PEMS-SF", "EigenWorms"}
    assert len({d for m, d in jobs if m == "minirocket"}) == 158
    assert len({d for m, d in jobs if m == "tict"}) == 128  # UCR only, as in the paper


@pytest.mark.slow(reason="two Snakemake runs of a small DAG with a failing method (~55 s)")
def test_small_run_end_to_end_records_failures_and_resumes(tmp_path):
    override = {
        "datasets": {"archives": ["UCR", "UEA"], "include": ["GunPoint", "BasicMotions"], "exclude": []},
        "protocols": {"full": True, "fixed_shot": {"shots": [1], "seeds": [0, 1]},
                      "proportional": {"percents": [10], "seeds": [0]}},
        "evaluate": ["minirocket", "chorustic_missing"],
        "methods": {"chorustic_missing": {"plugin": "chorustic", "display_name": "ChorusTIC (no weights)",
                                          "params": {"checkpoint": "models/does-not-exist.safetensors"}}},
        "reports": {"reference_method": "minirocket"},
    }
    (tmp_path / "override.yaml").write_text(yaml.safe_dump(override))
    # --keep-going as in the workflow profiles: one failing job never stops the others
    args = ["--cores", "2", "--keep-going", "--configfile", str(REPO / "config" / "demo.yaml"),
            str(tmp_path / "override.yaml")]
    proc = _snakemake(tmp_path, *args)
    # something failed: non-zero exit, but the tables are written with the failures as missing runs
    assert proc.returncode != 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "chorustic_missing/GunPoint" in proc.stderr and "only what failed runs again" in proc.stderr

    acc = pd.read_csv(tmp_path / "results" / "accuracies.csv")
    ok = acc[acc.method == "minirocket"]
    assert len(ok) == 2 * 4 and (ok.status == "ok").all()
    assert ok.set_index(["dataset", "protocol", "seed"]).loc[("GunPoint", "full", 0), "accuracy"] > 0.9
    failed = acc[acc.method == "chorustic_missing"]
    assert len(failed) == 8 and (failed.status == "failed").all()
    assert failed.error.str.contains("does-not-exist").all()
    assert not list((tmp_path / "results").glob("*/chorustic_missing/Predictions/*/*.csv"))
    for f in ok.result_file:
        assert (tmp_path / "results" / f).is_file()  # relative to the results folder
    assert (tmp_path / "results" / "contexts" / "GunPoint.json").is_file()
    # the levels of the config, in report order, in the table and in the paper's tables
    assert list(dict.fromkeys(acc[acc.dataset == "GunPoint"].protocol)) == ["full", "fixed1", "prop10"]
    assert (acc.loc[acc.protocol == "fixed1", "n_context"] == acc.loc[acc.protocol == "fixed1", "n_classes"]).all()
    tables = tmp_path / "reports" / "tables"
    for archive in ("ucr", "uea"):
        assert set(pd.read_csv(tables / f"table3_fixed_shot_{archive}.csv").protocol) == {"fixed1"}
        assert set(pd.read_csv(tables / f"table_scaling_{archive}.csv").protocol) == {"prop10"}
        assert "| 1-shot |" in (tables / f"table3_fixed_shot_{archive}.md").read_text()
        assert "| 10% |" in (tables / f"table_scaling_{archive}.md").read_text()
    index = (tmp_path / "reports" / "README.md").read_text()
    assert "MiniRocket" in index
    tables_before = {p.name: p.read_bytes() for p in (tmp_path / "reports" / "tables").glob("*.csv")}
    assert tables_before

    # State of a run killed while one evaluation was still going: its manifest and everything downstream
    # missing, a half-written temporary file and a prediction file of that attempt left behind. Only that
    # job, the aggregate and the report run again, and the unfinished attempt's files are not reused.
    (tmp_path / "results" / "runs" / "minirocket" / "BasicMotions.json").unlink()
    (tmp_path / "results" / "accuracies.csv").unlink()
    shutil.rmtree(tmp_path / "reports")
    pred = next((tmp_path / "results" / "fixed1" / "minirocket" / "Predictions" / "BasicMotions").glob("*.csv"))
    pred.write_text("partial garbage of a killed attempt\n")
    (tmp_path / "results" / "runs" / "minirocket" / ".BasicMotions.progress.json").write_text("{")
    proc = _snakemake(tmp_path, *args)
    assert proc.returncode != 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    counts = _job_counts(proc.stdout + proc.stderr)
    # the lost job, and the two failed ones (a failed run never counts as finished)
    assert counts.get("evaluate") == 3 and counts.get("download") is None and counts.get("contexts") is None
    acc2 = pd.read_csv(tmp_path / "results" / "accuracies.csv")
    assert pred.read_text().startswith("BasicMotions,minirocket,TEST")
    assert not (tmp_path / "results" / "runs" / "minirocket" / ".BasicMotions.progress.json").exists()
    pd.testing.assert_frame_equal(acc.drop(columns=["fit_time_s", "predict_time_s", "peak_memory_mb"]),
                                  acc2.drop(columns=["fit_time_s", "predict_time_s", "peak_memory_mb"]))
