"""End to end: `chorustic report` on a synthetic accuracies.csv writes every table, figure and the
reproduction check, atomically and reproducibly; bad input gives a clear error."""

from __future__ import annotations

import filecmp
import json

import pandas as pd
import pytest

from chorustic.cli import main
from chorustic.reports.build import MANIFEST_NAME, ReportConfig, build_report
from chorustic.testing.accuracies import SyntheticMethod, write_synthetic_accuracies

pytestmark = pytest.mark.slow  # ~30 s on 2 CPU cores: three builds with figures

METHODS = (
    SyntheticMethod("chorustic", "ChorusTIC", "Time-series ICL", False, 0.05),
    SyntheticMethod("tabicl", "TabICL", "Generic ICL", False, -0.02),
    SyntheticMethod("mantisv2_lr", "MantisV2+LR", "Frozen TSFM", True, 0.02),
    SyntheticMethod("minirocket", "MiniRocket", "Classical", True, 0.03),
    SyntheticMethod(
        "tict", "TiCT", "Time-series ICL", False, 0.0, reported=True, archives=("UCR",), protocols=("full",)
    ),
    SyntheticMethod(
        "chorustic_no_calibration",
        "ChorusTIC (no calibration)",
        "Time-series ICL",
        False,
        0.0,
        archives=("UEA",),
        protocols=("full",),
    ),
)
UEA = ("BasicMotions", "Epilepsy", "JapaneseVowels", "Libras", "RacketSports")
UCR = ("ArrowHead", "Coffee", "GunPoint", "ItalyPowerDemand", "OSULeaf")

TABLES = [
    "table1_uea_main",
    "table2_ucr_main",
    "table3_fixed_shot_uea",
    "table3_fixed_shot_ucr",
    "table_scaling_uea",
    "table_scaling_ucr",
    "table4_ablation_uea",
    "tableD_uea_per_dataset",
    "tableD_ucr_per_dataset",
    "table_stats_uea",
    "table_stats_ucr",
    "table_cost_uea",
    "table_cost_ucr",
]
FIGURES = [
    "scaling_uea",
    "scaling_ucr",
    "cd_uea",
    "cd_ucr",
    "scatter_uea",
    "scatter_ucr",
    "violin_uea",
    "violin_ucr",
    "mcm_uea",
    "mcm_ucr",
    "cost_uea",
    "cost_ucr",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    results = root / "results"
    write_synthetic_accuracies(
        results,
        methods=METHODS,
        uea=UEA,
        ucr=UCR,
        protocols=("full", "fixed5", "fixed10", "prop20", "prop60"),
        n_seeds=2,
        failures=(("tabicl", "Coffee", "full", 0), ("mantisv2_lr", "Libras", "fixed5", 1)),
        ineligible={"fixed10": ("Coffee",)},
    )
    result = build_report(results, root / "reports", ReportConfig())
    return root, result


def test_every_table_and_figure_is_written(built):
    root, result = built
    out = root / "reports"
    assert result.problems == [], result.problems
    for name in TABLES:
        for ext in ("tex", "md", "csv", "html"):
            assert (out / "tables" / f"{name}.{ext}").stat().st_size > 0, f"{name}.{ext}"
    for name in FIGURES:
        assert (out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    for name in ("summary_all.csv", "stats_all.csv"):
        assert (out / "tables" / name).is_file()
    assert not list(out.rglob("*.tmp")), "no temporary files left behind"
    readme = (out / "README.md").read_text()
    for name in TABLES:
        assert f"tables/{name}.md" in readme
    for name in FIGURES:
        assert f"figures/{name}.png" in readme
    assert "Reference method: **ChorusTIC**" in readme and "TiCT" in readme
    for page in ("overview/coverage.html", "reproduction/reproduction.html"):
        assert (out / page).read_text().startswith("<!DOCTYPE html>")


def test_accuracy_against_cost(built):
    root, _ = built
    cost = pd.read_csv(root / "reports" / "tables" / "table_cost_ucr.csv").set_index("method")
    acc = pd.read_csv(root / "results" / "accuracies.csv")
    summ = pd.read_csv(root / "reports" / "tables" / "summary_all.csv")
    # every timed method, the reported one (TiCT: no timings) and the ablation left out
    assert set(cost.index) == {"chorustic", "tabicl", "mantisv2_lr", "minirocket"}
    full = acc[(acc.archive == "UCR") & (acc.protocol == "full") & (acc.status == "ok")]
    common = sorted(set.intersection(*(set(full[full.method == m].dataset) for m in cost.index)))
    assert cost["n_datasets"].eq(len(common)).all() and len(common) == 4  # Coffee failed for tabicl
    for m in cost.index:
        runs = full[(full.method == m) & full.dataset.isin(common)]
        assert cost.loc[m, "total_time_s"] == pytest.approx((runs.fit_time_s + runs.predict_time_s).sum())
        assert cost.loc[m, "device"] == runs.device.iloc[0]
    ucr_full = summ[(summ.archive == "UCR") & (summ.protocol == "full")].set_index("method")
    assert cost.loc["chorustic", "avg_acc"] == pytest.approx(ucr_full.loc["chorustic", "avg_acc"])
    md = (root / "reports" / "tables" / "table_cost_ucr.md").read_text()
    assert "Not shown (reported, not reproduced: no timings): TiCT" in md


def test_aeon_result_files(built):
    root, _ = built
    aeon = root / "reports" / "aeon"
    files = sorted(p.relative_to(aeon).as_posix() for p in aeon.rglob("*.csv"))
    assert "full/classification/accuracy/MiniROCKET_accuracy.csv" in files
    assert "fixed5/classification/accuracy/chorustic_accuracy.csv" in files
    assert not any("tict" in f.lower() for f in files)  # reported methods are not results of this run
    fixed5 = pd.read_csv(aeon / "fixed5/classification/accuracy/mantisv2_lr_accuracy.csv", index_col=0)
    assert list(fixed5.columns) == ["0", "1"] and "Libras" not in fixed5.index  # seed 1 failed there
    assert "## Results for aeon and tsml-eval" in (root / "reports" / "README.md").read_text()


def test_missing_runs_and_ineligible_datasets_are_listed(built):
    root, _ = built
    miss = pd.read_csv(root / "reports" / "missing_runs.csv")
    assert sorted(map(tuple, miss[["method", "dataset", "protocol"]].values)) == [
        ("mantisv2_lr", "Libras", "fixed5"),
        ("tabicl", "Coffee", "full"),
    ]
    assert miss["error"].str.contains("synthetic failure").all()
    inel = pd.read_csv(root / "reports" / "ineligible_datasets.csv")
    assert set(inel["dataset"]) == {"Coffee"} and set(inel["protocol"]) == {"fixed10"}
    t2 = (root / "reports" / "tables" / "table2_ucr_main.md").read_text()
    assert "4 datasets on which all 5 methods have a result (of 5 datasets eligible)" in t2
    assert "TiCT†" in t2 and "reported, not reproduced" in t2


def test_tables_hold_the_statistics(built):
    root, _ = built
    summ = pd.read_csv(root / "reports" / "tables" / "summary_all.csv")
    s = summ[(summ["archive"] == "UEA") & (summ["protocol"] == "full")].set_index("method")
    assert "chorustic_no_calibration" not in s.index  # ablations only in Table 4
    assert s["avg_rank"].sum() == pytest.approx(len(s) * (len(s) + 1) / 2)  # ranks of 4 methods average 2.5
    acc = pd.read_csv(root / "results" / "accuracies.csv")
    full = acc[(acc["archive"] == "UEA") & (acc["protocol"] == "full") & (acc["method"] == "chorustic")]
    assert s.loc["chorustic", "avg_acc"] == pytest.approx(full["accuracy"].mean())
    stats = pd.read_csv(root / "reports" / "tables" / "stats_all.csv")
    fam = stats[(stats["archive"] == "UCR") & (stats["protocol"] == "full")]
    assert (
        set(fam["method"]) == {"tabicl", "mantisv2_lr", "minirocket", "tict"}
        and (fam["family_size"] == 4).all()
    )
    abl = pd.read_csv(root / "reports" / "tables" / "table4_ablation_uea.csv").set_index("method")
    assert abl.loc["chorustic", "delta_acc_pp"] == 0
    assert abl.loc["chorustic_no_calibration", "delta_acc_pp"] == pytest.approx(
        100 * (abl.loc["chorustic_no_calibration", "avg_acc"] - abl.loc["chorustic", "avg_acc"])
    )


def test_reproduction_check_is_part_of_the_report(built):
    root, result = built
    rep = root / "reports" / "reproduction"
    assert result.paper_check_passed is True
    md = (rep / "reproduction.md").read_text()
    assert "## 1. The paper's own per-dataset tables" in md and "## 2. These results against the paper" in md
    per = pd.read_csv(rep / "per_dataset.csv")
    c = per[(per["archive"] == "UEA") & (per["method"] == "chorustic")].set_index("dataset")
    assert set(c.index) == set(UEA)
    assert c.loc["BasicMotions", "paper"] == 1.0  # the paper's ChorusTIC value
    assert c.loc["BasicMotions", "diff_pp"] == pytest.approx(100 * (c.loc["BasicMotions", "ours"] - 1.0))
    pm = pd.read_csv(rep / "per_method.csv").set_index(["archive", "method"])
    assert pm.loc[("UEA", "chorustic"), "mean_abs_diff_pp"] == pytest.approx(c["diff_pp"].abs().mean())
    assert pm.loc[("UEA", "chorustic"), "n_off"] == (c["diff_pp"].abs() > 2).sum()
    head = pd.read_csv(rep / "headline.csv")
    row = head[(head["table"] == "main") & (head["archive"] == "UEA") & (head["method"] == "chorustic")].iloc[
        0
    ]
    assert row["paper_printed_pct"] == 72.27 and row["ours_n_datasets"] == 5
    assert row["paper_same_datasets_pct"] == pytest.approx(100 * c["paper"].mean())
    assert set(head["protocol"]) >= {"full", "fixed5", "fixed10", "prop20", "prop60"}


def test_cli_is_reproducible_and_prunes_stale_files(built, tmp_path, capsys):
    root, _ = built
    out = tmp_path / "again"
    assert main(["report", "--results-dir", str(root / "results"), "--reports-dir", str(out)]) == 0
    assert "paper-table reproduction check: passed" in capsys.readouterr().out
    first = root / "reports"
    for rel in json.loads((first / MANIFEST_NAME).read_text())["files"]:
        assert filecmp.cmp(first / rel, out / rel, shallow=False), f"{rel} differs between two builds"
    # a narrower report in the same folder removes what it no longer writes, and nothing else
    (out / "notes.txt").write_text("mine")
    assert (
        main(
            [
                "report",
                "--results",
                str(root / "results"),
                "--out",
                str(out),
                "--methods",
                "tabicl",
                "--reference",
                "ChorusTIC",
                "--formats",
                "png",
                "--reference-results",
                str(root / "results"),
            ]
        )
        == 0
    )
    # against reference results (here the same table, without prediction files: compared by accuracy)
    assert "**0 differ** (0 test cases)" in (out / "README.md").read_text()
    assert "**0 differ**" in (out / "reproduction" / "reference_results.md").read_text()
    assert not (out / "tables" / "table4_ablation_uea.md").exists()
    assert not (out / "figures" / "scatter_uea.pdf").exists()  # --formats png
    assert (out / "figures" / "scatter_uea.png").exists() and (out / "notes.txt").read_text() == "mine"
    assert not (out / "figures" / "cd_uea.png").exists()  # 2 methods: no CD diagram (a note says why)
    assert "critical-difference diagram (UEA) not drawn" in (out / "README.md").read_text()
    t1 = (out / "tables" / "table1_uea_main.md").read_text()
    assert "TabICL" in t1 and "MantisV2+LR" not in t1


def test_cli_errors_are_clear(tmp_path, capsys):
    assert main(["report", "--results-dir", str(tmp_path), "--reports-dir", str(tmp_path / "r")]) == 2
    assert "accuracies.csv not found" in capsys.readouterr().err
    (tmp_path / "accuracies.csv").write_text("method,accuracy\nx,0.5\n")
    assert main(["report", "--results-dir", str(tmp_path), "--reports-dir", str(tmp_path / "r")]) == 2
    assert "missing column" in capsys.readouterr().err


def test_cli_paper_check_needs_no_results(tmp_path, capsys):
    """... and writes exactly the committed paper check (reports/paper_check/), file for file."""
    from chorustic.paths import REPO_ROOT
    from chorustic.reports.paper import default_reference_dir

    assert main(["report", "--paper-check", "--results-dir", str(tmp_path), "--reports-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert out.count("[ok]") == 5
    committed = REPO_ROOT / "reports" / "paper_check" / "reproduction"
    for f in sorted(committed.iterdir()):
        got = (tmp_path / "r" / "reproduction" / f.name).read_text()
        assert got.replace(str(default_reference_dir()), "results/reference") == f.read_text(), f.name


def test_unknown_reference_is_reported_not_fatal(built, tmp_path):
    root, _ = built
    result = build_report(
        root / "results", tmp_path / "r", ReportConfig(reference="nonexistent", figure_formats=())
    )
    assert any("reference method 'nonexistent'" in p for p in result.problems)
    t1 = (tmp_path / "r" / "tables" / "table1_uea_main.md").read_text()
    assert "W/T/L" not in t1.split("\n")[2] and "No W/T/L" in t1


def test_a_partial_archive_gets_a_quick_look_prediction_marked_as_such(built):
    """Five datasets of each archive ran, three of them in the quick-look selection: every method run here
    (not TiCT, reported; not the ablation) gets its measured mean on those and the archive mean it predicts,
    in tables/quick_look.csv and the index, marked as a prediction."""
    from chorustic.reports import quick_look as ql

    root, _ = built
    quick = pd.read_csv(root / "reports" / "tables" / "quick_look.csv")
    assert set(quick["method"]) == {"chorustic", "tabicl", "mantisv2_lr", "minirocket"}
    acc = pd.read_csv(root / "results" / "accuracies.csv")
    full = acc[(acc["protocol"] == "full") & (acc["status"] == "ok")]
    for r in quick.itertuples(index=False):
        mine = full[(full["method"] == r.method) & (full["archive"] == r.archive)].set_index("dataset")["accuracy"]
        expected = ql.predict_archive_mean(mine.to_dict(), r.archive)
        assert r.predicted_archive_mean == pytest.approx(expected.mean) and r.text == expected.text
        assert r.n_datasets == len(set(mine.index) & set(ql.read_selection()[r.archive]))
    assert quick.set_index(["method", "archive"]).loc[("tabicl", "UCR"), "n_datasets"] == 2  # its Coffee failed
    readme = (root / "reports" / "README.md").read_text()
    assert "## Quick look: predicted archive means" in readme and "A **prediction**, not a measurement" in readme


def test_companion_tables_give_intervals_and_seed_spread_beside_the_paper_tables(built):
    root, result = built
    tables = root / "reports" / "tables"
    for name in ("table_intervals_uea_full", "table_intervals_ucr_fixed_shot", "table_intervals_ucr_proportional"):
        assert (tables / f"{name}.md").is_file()
    iv = pd.read_csv(tables / "intervals_all.csv")
    summ = pd.read_csv(tables / "summary_all.csv")
    both = iv.merge(summ, on=["archive", "protocol", "method"])
    assert len(both) == len(summ)
    pd.testing.assert_series_equal(both["mean"], both["avg_acc"], check_names=False)  # the paper tables' means
    ok = both[both["mean"].notna()]
    assert (ok["ci_low"] <= ok["mean"]).all() and (ok["mean"] <= ok["ci_high"]).all()
    two_seeds = ok[(ok["protocol"] == "fixed5") & ~ok["reported_x"]]
    assert two_seeds["seed_sd"].notna().all()
    spread = pd.read_csv(tables / "seed_spread.csv")
    assert set(spread["n_context_sets"]) <= {1, 2} and spread.loc[spread["protocol"] == "fixed5", "sd"].notna().all()
    md = (tables / "table_intervals_ucr_fixed_shot.md").read_text()
    assert "5-shot" in md and "10-shot" in md and "s.d. over seeds" in md
    assert "table_intervals_uea_full.md" in (root / "reports" / "README.md").read_text()


def test_too_few_datasets_for_significance_is_said_in_the_table_and_the_cd_caption(built):
    root, _ = built
    md = (root / "reports" / "tables" / "table_stats_ucr.md").read_text()
    # 4 common datasets, a Holm family of 4: the smallest attainable p is 4 * 2**-3 = 0.5
    assert "too few for any comparison to be significant" in md and "smallest attainable p is 0.5" in md
    stats = pd.read_csv(root / "reports" / "tables" / "stats_all.csv")
    assert (stats["smallest_attainable_p_holm"] > 0.05).all()
    readme = (root / "reports" / "README.md").read_text()
    assert "critical-difference diagram (UCR): Not enough datasets for significance" in readme
    assert "Table 4 (ablations, UCR) not made" in readme and "Table 4 (ablations, UEA) not made" not in readme


def test_other_measures_get_tables_ranks_and_cd_diagrams(built, tmp_path):
    import shutil

    from chorustic.evaluation.metrics import METRIC_COLUMNS

    root, _ = built
    results = tmp_path / "results"
    shutil.copytree(root / "results", results)
    acc = pd.read_csv(results / "accuracies.csv")
    ok = acc[acc["status"].isin(["ok", "reported"])]
    rows = []
    for name, f in {"accuracy": lambda a: a, "balacc": lambda a: 0.9 * a, "logloss": lambda a: 2.0 - 1.5 * a}.items():
        part = ok[(ok["status"] == "ok") | (name == "accuracy")].assign(metric=name, value=lambda d: f(d["accuracy"]))
        rows.append(part[METRIC_COLUMNS])
    pd.concat(rows).to_csv(results / "metrics.csv", index=False)
    out = tmp_path / "reports"
    res = build_report(results, out, ReportConfig(metrics=("accuracy", "balacc", "logloss"), figure_formats=("png",)))
    assert res.problems == [], res.problems
    for name in ("table_balacc_ucr_full", "table_logloss_uea_full", "table_metrics_ucr"):
        assert (out / "tables" / f"{name}.md").is_file(), name
    for name in ("cd_balacc_ucr", "cd_logloss_uea"):
        assert (out / "figures" / f"{name}.png").is_file(), name
    allm = pd.read_csv(out / "tables" / "metrics_all.csv")
    ucr = allm[(allm["archive"] == "UCR")].pivot_table(index="method", columns="metric", values="avg_rank")
    # balanced accuracy an increasing map of accuracy here and log loss a decreasing one: the same ranks
    pd.testing.assert_series_equal(ucr["balacc"], ucr["logloss"], check_names=False)
    other = allm[allm["metric"] != "accuracy"]
    assert other.loc[other["method"] == "tict", "mean"].isna().all()  # reported: accuracy only
    md = (out / "tables" / "table_metrics_ucr.md").read_text()
    assert "Balanced accuracy (%)" in md and "Log loss" in md
    assert (out / "aeon" / "full" / "classification" / "balacc" / "MiniROCKET_balacc.csv").is_file()
    # asking for measures without metrics.csv: one problem naming the file and the fix, the rest is written
    (results / "metrics.csv").unlink()
    res = build_report(results, tmp_path / "r2", ReportConfig(metrics=("accuracy", "f1"), figure_formats=("png",)))
    assert len(res.problems) == 1 and "metrics.csv does not exist" in res.problems[0]
    assert "chorustic aggregate" in res.problems[0] and (tmp_path / "r2" / "tables" / "table2_ucr_main.md").is_file()
