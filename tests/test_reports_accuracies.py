"""Reading results/accuracies.csv: validation, seed averaging, missing runs, eligibility, common sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from chorustic.reports.accuracies import ResultsError, build_matrices, load_accuracies, validate_accuracies
from chorustic.testing.accuracies import SyntheticMethod, synthetic_accuracies

A = SyntheticMethod("a", "A", "Time-series ICL", False, 0.05)
B = SyntheticMethod("b", "B", "Classical", True, 0.0)
R = SyntheticMethod("r", "R", "Time-series ICL", False, 0.0, reported=True, protocols=("full",))


def small(**kw) -> pd.DataFrame:
    kw.setdefault("methods", (A, B))
    kw.setdefault("uea", ("U1", "U2", "U3"))
    kw.setdefault("ucr", ())
    kw.setdefault("protocols", ("full", "fixed5"))
    kw.setdefault("n_seeds", 3)
    return synthetic_accuracies(**kw)


def test_fixed_shot_cell_is_the_mean_over_context_sets():
    df = small()
    mx = build_matrices(validate_accuracies(df))[("UEA", "fixed5")]
    assert mx.seeds == [0, 1, 2]
    rows = df[(df["method"] == "a") & (df["dataset"] == "U2") & (df["protocol"] == "fixed5")]
    assert mx.values.loc["U2", "a"] == pytest.approx(rows["accuracy"].mean())
    assert mx.missing.empty


def test_failed_run_is_missing_never_averaged_over_fewer_seeds():
    df = small(failures=(("b", "U2", "fixed5", 1),))
    mx = build_matrices(validate_accuracies(df))[("UEA", "fixed5")]
    assert np.isnan(mx.values.loc["U2", "b"])
    assert not np.isnan(mx.values.loc["U2", "a"])
    miss = mx.missing.iloc[0]
    assert (miss["method"], miss["dataset"], miss["seed"], miss["status"]) == ("b", "U2", 1, "failed")
    assert "synthetic failure" in miss["error"]
    assert mx.common() == ["U1", "U3"]  # compared on the same datasets
    assert list(mx.complete().index) == ["U1", "U3"]


def test_absent_run_is_listed_as_absent():
    df = small()
    df = df[
        ~((df["method"] == "b") & (df["dataset"] == "U3") & (df["protocol"] == "fixed5") & (df["seed"] == 2))
    ]
    mx = build_matrices(validate_accuracies(df))[("UEA", "fixed5")]
    assert mx.missing[["method", "dataset", "seed", "status"]].values.tolist() == [["b", "U3", 2, "absent"]]


def test_ineligible_dataset_is_excluded_for_every_method():
    df = small(ineligible={"fixed5": ("U1",)})
    mx = build_matrices(validate_accuracies(df))[("UEA", "fixed5")]
    assert list(mx.values.index) == ["U2", "U3"]
    assert mx.ineligible["dataset"].tolist() == ["U1"]
    assert "fewer than 5" in mx.ineligible["reason"].iloc[0]
    assert list(build_matrices(validate_accuracies(df))[("UEA", "full")].values.index) == ["U1", "U2", "U3"]


def test_reported_method_uses_its_reported_value():
    df = small(methods=(A, B, R))
    mx = build_matrices(validate_accuracies(df))[("UEA", "full")]
    assert "r" in mx.methods and not np.isnan(mx.values["r"]).any()
    assert ("UEA", "fixed5") in build_matrices(validate_accuracies(df))
    assert "r" not in build_matrices(validate_accuracies(df))[("UEA", "fixed5")].methods


def test_method_without_any_result_does_not_empty_the_common_set():
    df = small(failures=tuple(("b", d, "full", 0) for d in ("U1", "U2", "U3")))
    mx = build_matrices(validate_accuracies(df))[("UEA", "full")]
    assert mx.methods_without_results == ["b"]
    assert mx.common() == ["U1", "U2", "U3"]
    assert mx.n_missing("b") == 3


def test_matrices_come_in_report_order():
    df = synthetic_accuracies(
        methods=(A,), uea=("U1",), ucr=("C1",), protocols=("prop20", "fixed10", "full", "fixed5")
    )
    assert list(build_matrices(validate_accuracies(df))) == [
        ("UEA", "full"),
        ("UEA", "fixed5"),
        ("UEA", "fixed10"),
        ("UEA", "prop20"),
        ("UCR", "full"),
        ("UCR", "fixed5"),
        ("UCR", "fixed10"),
        ("UCR", "prop20"),
    ]


def test_load_roundtrip_through_csv(tmp_path):
    path = tmp_path / "accuracies.csv"
    small(failures=(("a", "U1", "full", 0),)).to_csv(path, index=False)
    df = load_accuracies(path)
    assert df["fits_on_target"].dtype == bool and df["seed"].dtype.kind == "i"
    assert (df.loc[df["status"] == "failed", "error"] != "").all()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.drop(columns=["accuracy"]), "missing column"),
        (lambda d: d.assign(accuracy=d["accuracy"] * 100), "fractions, not percentages"),
        (lambda d: d.assign(status=d["status"].replace({"ok": "done"})), "unknown status"),
        (lambda d: pd.concat([d, d.iloc[:1]]), "duplicated runs"),
        (lambda d: d.assign(archive="UCRX"), "unknown archive"),
        (
            lambda d: d.assign(
                display_name=np.where(d["method"] == "a", "A", np.where(d.index % 2 == 0, "B", "B2"))
            ),
            "inconsistent",
        ),
    ],
)
def test_bad_input_names_the_file_and_the_problem(tmp_path, mutate, message):
    path = tmp_path / "accuracies.csv"
    mutate(small()).to_csv(path, index=False)
    with pytest.raises(ResultsError, match=message) as err:
        load_accuracies(path)
    assert str(path) in str(err.value)


def test_missing_file_says_what_to_run(tmp_path):
    with pytest.raises(ResultsError, match="snakemake"):
        load_accuracies(tmp_path / "accuracies.csv")
