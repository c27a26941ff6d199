"""Reported ("reported, not reproduced") methods: TiCT from the paper's published column, and the
generic CSV mechanism for any method a user cannot run."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

from chorustic.methods import MethodNotReady, ReportedMethod, discover, register
from chorustic.methods.reported import CSVReportedMethod, reported_method
from chorustic.paths import REPO_ROOT


def test_tict_reads_the_papers_ucr_column():
    m = discover().get("tict")
    assert isinstance(m, ReportedMethod) and m.info.reported and m.info.display_name == "TiCT"
    table = m.reported_accuracies(**m.params())
    assert list(table.columns) == ["dataset", "protocol", "seed", "accuracy"]
    paper = pd.read_csv(REPO_ROOT / "results/reference/paper_ucr128_per_dataset.csv")
    assert len(table) == paper["TiCT"].notna().sum() == 128  # UCR only: the UEA table has no TiCT column
    merged = table.merge(paper[["dataset", "TiCT"]], on="dataset")
    assert np.allclose(merged["accuracy"], merged["TiCT"])
    assert set(table["protocol"]) == {"full"} and set(table["seed"]) == {0}
    assert table["accuracy"].between(0, 1).all()


def write_plugin_dir(tmp_path, csv_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "mymethod.py").write_text(
        textwrap.dedent(f"""
        from chorustic.methods import register
        from chorustic.methods.reported import reported_method

        register(reported_method(name="mymethod", display_name="MyMethod", group="Frozen TSFM",
                                 fits_on_target=True, csv={str(csv_path)!r}))
    """)
    )
    return plugins


def test_a_user_adds_a_reported_method_with_a_five_line_plugin(tmp_path):
    csv = tmp_path / "mine.csv"
    pd.DataFrame(
        {"dataset": ["GunPoint", "Coffee", "Adiac"], "MyMethod": [0.91, None, 0.5], "Other": [0.1, 0.2, 0.3]}
    ).to_csv(csv, index=False)
    d = discover(write_plugin_dir(tmp_path, csv))
    assert not d.broken
    m = d.get("mymethod")
    assert m.info.reported and m.info.fits_on_target
    table = m.reported_accuracies(**m.params())
    assert table["dataset"].tolist() == ["GunPoint", "Adiac"]  # an empty cell means "not reported"
    assert table["accuracy"].tolist() == [0.91, 0.5]
    other = m.reported_accuracies(**m.params({"column": "Other", "protocol": "fixed5", "seed": 3}))
    assert other["accuracy"].tolist() == [0.1, 0.2, 0.3] and set(other["protocol"]) == {"fixed5"}


def test_bad_reported_files_give_clear_errors(tmp_path):
    csv = tmp_path / "pct.csv"
    pd.DataFrame({"dataset": ["A", "B"], "MyMethod": [91.0, 80.0]}).to_csv(csv, index=False)
    cls = reported_method(name="pct", display_name="MyMethod", group="Classical", csv=str(csv))
    with pytest.raises(ValueError, match="outside \\[0, 1\\].*not percentages"):
        cls().reported_accuracies()
    with pytest.raises(MethodNotReady, match="does not exist"):
        cls().reported_accuracies(csv=str(tmp_path / "missing.csv"))
    with pytest.raises(MethodNotReady, match="has a column 'Nope'"):
        cls().reported_accuracies(column="Nope")
    with pytest.raises(MethodNotReady, match="no `csv` parameter"):
        cls().reported_accuracies(csv=[])
    dup = tmp_path / "dup.csv"
    pd.DataFrame({"dataset": ["A"], "MyMethod": [0.5]}).to_csv(dup, index=False)
    ok = tmp_path / "ok.csv"
    pd.DataFrame({"dataset": ["A"], "MyMethod": [0.6]}).to_csv(ok, index=False)
    with pytest.raises(ValueError, match="reported twice"):
        cls().reported_accuracies(csv=[str(dup), str(ok)])


def test_reported_method_classes_register_like_plugins():
    cls = reported_method(name="tmp_reported", display_name="Tmp", group="Generic ICL", csv="x.csv")
    assert issubclass(cls, CSVReportedMethod) and register(cls) is cls


def test_the_papers_methods_are_reported_with_the_metadata_of_the_plugins_that_reproduce_them():
    """baselines/paper.py: one reported method per column of the paper's per-dataset tables (all eleven
    with TiCT), each with the paper's numbers on every dataset of its archives and the group and "Target
    fit" of the plugin that reproduces it."""
    disc = discover()
    columns = set()
    for table in (pd.read_csv(REPO_ROOT / f) for f in ("results/reference/paper_ucr128_per_dataset.csv",
                                                       "results/reference/paper_uea30_per_dataset.csv")):
        columns |= set(table.columns) - {"dataset"}
    reported = {m.info.display_name: m for n, m in disc.methods.items() if n.startswith("paper_") or n == "tict"}
    assert set(reported) == columns and len(columns) == 11
    for column, method in reported.items():
        assert isinstance(method, ReportedMethod) and method.info.reported
        if method.info.name == "tict":
            continue
        twin = disc.get(method.info.name.removeprefix("paper_"))
        assert twin.info.display_name == column
        assert (twin.info.group, twin.info.fits_on_target) == (method.info.group, method.info.fits_on_target)
        assert twin.info.benchmark_in_pretraining == method.info.benchmark_in_pretraining, column  # the audit
        table = method.reported_accuracies(**method.params())
        assert len(table) == 128 + (0 if column == "TIC-FM" else 30), column  # TIC-FM: UCR only
        assert set(table["protocol"]) == {"full"} and table["accuracy"].between(0, 1).all()
    gunpoint = reported["MOMENT+SVM"].reported_accuracies(**reported["MOMENT+SVM"].params())
    paper = pd.read_csv(REPO_ROOT / "results/reference/paper_ucr128_per_dataset.csv").set_index("dataset")
    assert gunpoint.set_index("dataset").loc["GunPoint", "accuracy"] == paper.loc["GunPoint", "MOMENT+SVM"]


def test_the_committed_demo_run_enters_as_reported_rows_on_the_datasets_and_protocols_it_has(tmp_path):
    """baselines/demo_results.py: each run of examples/demo/results is a reported method; the plan gives it
    jobs on the datasets that table has only, and the aggregate step keeps the protocols the configuration
    selects."""
    from chorustic import config as cc
    from chorustic.evaluation.aggregate import collect_configured
    from chorustic.evaluation.job import JobSpec, run_job
    from chorustic.run_plan import RunPlan

    disc = discover()
    demo = pd.read_csv(REPO_ROOT / "examples/demo/results/accuracies.csv")
    m = disc.get("demo_quant")
    table = m.reported_accuracies(**m.params())
    ok = demo[(demo["method"] == "quant") & (demo["status"] == "ok")]
    assert len(table) == len(ok) and set(table["protocol"]) == set(ok["protocol"])
    assert m.covered_datasets(**m.params()) == set(ok["dataset"])
    cfg = cc.load_config([REPO_ROOT / "config" / "compare.yaml"], overrides={
        "datasets": {"archives": ["UCR"], "include": ["GunPoint", "Coffee"], "exclude": []},
        "evaluate_extra": ["demo_quant"], "data": {"offline": True},
        "paths": {"results_dir": str(tmp_path / "results")}})
    plan = RunPlan.from_config(cfg, disc)
    assert [j.dataset for j in plan.jobs if j.method == "demo_quant"] == ["GunPoint"]  # Coffee: not in the demo
    assert {j.dataset for j in plan.jobs if j.method == "paper_chorustic"} == {"GunPoint", "Coffee"}
    job = plan.job("demo_quant", "GunPoint")
    manifest = run_job(JobSpec(method="demo_quant", plugin="demo_quant", dataset="GunPoint", archive="UCR",
                               results_dir=str(tmp_path / "results"), contexts_file="", data_dir="", cache_dir="",
                               params=job.params))
    assert {r["protocol"] for r in manifest["runs"]} > {"full"}  # the manifest holds every protocol it reports
    got = collect_configured(cfg, tmp_path / "results", discovery=disc, plan=plan).table
    rows = got[got["method"] == "demo_quant"]
    assert list(rows["protocol"]) == ["full"] and list(rows["status"]) == ["reported"]  # compare: full only
    want = ok[(ok["dataset"] == "GunPoint") & (ok["protocol"] == "full")]["accuracy"].iloc[0]
    assert rows["accuracy"].iloc[0] == pytest.approx(want)


def test_a_run_reported_method_without_its_table_says_where_it_looked(tmp_path):
    from chorustic.methods.reported import run_reported_method

    cls = run_reported_method(name="elsewhere", display_name="Elsewhere", group="Classical", fits_on_target=True,
                              results=str(tmp_path / "nothing"), method="x")
    with pytest.raises(MethodNotReady, match="no run table at .*nothing/accuracies.csv"):
        cls().check_ready()
    assert cls().covered_datasets() is None
    f = tmp_path / "r" / "accuracies.csv"
    f.parent.mkdir()
    pd.DataFrame({"method": ["y"], "dataset": ["GunPoint"], "protocol": ["full"], "seed": [0], "status": ["ok"],
                  "accuracy": [0.9]}).to_csv(f, index=False)
    other = run_reported_method(name="other", display_name="Other", group="Classical", fits_on_target=True,
                                results=str(f.parent), method="x")
    with pytest.raises(MethodNotReady, match=r"has no `ok` run of 'x' \(its methods: \['y'\]\)"):
        other().reported_accuracies()
