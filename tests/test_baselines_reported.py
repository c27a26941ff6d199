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
