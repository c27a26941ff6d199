"""The leakage audit (issue 73.5): test series identical to a training series after preprocessing
(chorustic/data/duplicates.py, `chorustic audit`), collected into results/audit/duplicates.csv, and the
marks of methods whose pretraining data includes the archives."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from chorustic.data.duplicates import duplicates_table, train_test_duplicates


def test_exact_copies_are_found_with_their_labels_and_nothing_else():
    rng = np.random.default_rng(0)
    X_train = rng.normal(size=(20, 2, 16)).astype(np.float32)
    y_train = np.arange(20) % 3
    X_test = rng.normal(size=(10, 2, 16)).astype(np.float32)
    y_test = np.zeros(10, int)
    X_test[2], y_test[2] = X_train[5], y_train[5]  # a copy with its own label
    X_test[7], y_test[7] = X_train[9], (y_train[9] + 1) % 3  # a copy relabelled
    X_test[4] = X_train[11] + np.float32(1e-6)  # nearly equal is not equal
    got = train_test_duplicates(X_train, y_train, X_test, y_test)
    assert got["n_test_duplicated"] == 2 and got["n_same_label"] == 1 and got["n_other_label"] == 1
    assert got["examples"] == [[2, 5], [7, 9]]
    zeros = np.zeros((1, 1, 4), np.float32)
    assert train_test_duplicates(zeros, [0], -zeros, [0])["n_test_duplicated"] == 1  # -0.0 == 0.0


def test_the_audit_command_writes_one_record_and_aggregate_collects_them(tmp_path, capsys):
    from chorustic.cli import main

    results = tmp_path / "results"
    assert main(["audit", "--datasets", "GunPoint", "ArrowHead", "--data-dir", str(tmp_path / "data"),
                 "--cache-dir", str(tmp_path / "cache"), "--results-dir", str(results)]) == 0
    out = capsys.readouterr().out
    assert "GunPoint: 0 of 150 test series equal a training series" in out
    rec = json.loads((results / "audit" / "GunPoint.json").read_text())
    assert rec["n_test"] == 150 and rec["representation"] == "resampled" and rec["settings"]["length"] == 512
    table = duplicates_table(results)
    assert list(table["dataset"]) == ["ArrowHead", "GunPoint"] and (table["n_test_duplicated"] == 0).all()
    assert list(duplicates_table(results, {"GunPoint"})["dataset"]) == ["GunPoint"]
    (results / "audit" / "Broken.json").write_text("{")  # an unreadable record is left out, not fatal
    assert len(duplicates_table(results)) == 2
    assert duplicates_table(tmp_path / "nothing") is None


@pytest.mark.slow(reason="builds a report (~6 s)")
def test_the_report_states_the_audit(tmp_path):
    from chorustic.evaluation.aggregate import write_accuracies
    from chorustic.reports.build import ReportConfig, build_report
    from chorustic.testing.accuracies import SyntheticMethod, synthetic_accuracies

    methods = (SyntheticMethod("chorustic", "ChorusTIC", "Time-series ICL", False, 0.05),
               SyntheticMethod("nutime_rf", "NuTime+RF", "Frozen TSFM", True, 0.0),
               SyntheticMethod("mantis_rf", "Mantis+RF", "Frozen TSFM", True, 0.01))
    df = synthetic_accuracies(methods=methods, uea=("Libras", "Epilepsy"), ucr=("GunPoint", "Coffee"),
                              protocols=("full",), n_seeds=1)
    df["benchmark_in_pretraining"] = df["method"].map({"chorustic": "no", "nutime_rf": "yes", "mantis_rf": "unknown"})
    results = tmp_path / "results"
    (results / "audit").mkdir(parents=True)
    for name, n in (("Libras", 19), ("GunPoint", 0), ("Coffee", 0), ("Epilepsy", 0)):
        (results / "audit" / f"{name}.json").write_text(json.dumps({
            "dataset": name, "archive": "UEA" if name in ("Libras", "Epilepsy") else "UCR", "n_train": 180,
            "n_test": 180, "n_test_duplicated": n, "n_same_label": n, "n_other_label": 0, "examples": [[46, 47]]}))
    write_accuracies(df, results / "accuracies.csv", results)
    dup = pd.read_csv(results / "audit" / "duplicates.csv").set_index("dataset")
    assert dup.loc["Libras", "n_test_duplicated"] == 19 and dup.loc["Libras", "fraction_duplicated"] == pytest.approx(19 / 180)
    res = build_report(results, tmp_path / "reports", ReportConfig(figure_formats=("png",)))
    readme = (tmp_path / "reports" / "README.md").read_text()
    assert "**1 of 4 datasets** have test series identical to a training series" in readme
    assert "| UEA | Libras | 19 | 180 | 19 | 0 |" in readme
    assert "\u2021 pretrained on data that includes UCR/UEA series" in readme and "NuTime+RF" in readme
    assert "is not known for: Mantis+RF" in readme
    t1 = (tmp_path / "reports" / "tables" / "table1_uea_main.md").read_text()
    assert "NuTime+RF\u2021" in t1 and "ChorusTIC\u2021" not in t1 and "may have been seen in pretraining" in t1
    tex = (tmp_path / "reports" / "tables" / "table1_uea_main.tex").read_text()
    assert r"NuTime+RF$^{\ddagger}$" in tex
    assert not [p for p in res.problems if "audit" in p.lower()]


def test_every_plugin_says_what_it_was_pretrained_on():
    from chorustic.methods import discover

    disc = discover()
    for name, m in disc.methods.items():
        assert m.info.pretraining_data, f"{name}: MethodInfo.pretraining_data is empty"
    seen = {n for n, m in disc.methods.items() if m.info.benchmark_in_pretraining == "yes" and not m.info.reported}
    assert seen == {"moment_svm", "nutime_rf", "unishape_rf"}
    assert disc.get("chorustic").info.benchmark_in_pretraining == "no"
    assert "synthetic" in disc.get("chorustic").info.pretraining_data


def test_an_unknown_pretraining_flag_is_refused():
    from chorustic.methods.base import MethodInfo

    with pytest.raises(ValueError, match="benchmark_in_pretraining 'maybe' is not one of"):
        MethodInfo(name="x", display_name="X", group="Classical", fits_on_target=True, benchmark_in_pretraining="maybe")
