"""The field's own tools read this harness's results: aeon 1.6's results loaders read the summary files the
report writes (`<reports>/aeon/<protocol>/classification/accuracy/<EST>_accuracy.csv`), tsml-eval reads and
evaluates the prediction files themselves. One real MiniRocket job on GunPoint (inside the aeon wheel).
The snippets of docs/results.md that show these calls run as printed in tests/test_docs.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from chorustic.reports.interop import aeon_estimator_names


@pytest.fixture(scope="module")
def run(minirocket_gunpoint_run):
    """One real MiniRocket job on GunPoint (tests/conftest.py), shared with docs/results.md's snippets."""
    return minirocket_gunpoint_run


def test_aeon_results_loader_reads_the_summary_files(run):
    from aeon.benchmarking.results_loaders import get_estimator_results, get_estimator_results_as_array

    root, df, _, written = run
    assert {p.relative_to(root / "reports" / "aeon").as_posix() for p in written} == {
        "full/classification/accuracy/MiniROCKET_accuracy.csv",
        "fixed5/classification/accuracy/MiniROCKET_accuracy.csv",
    }
    ok = df.set_index(["protocol", "seed"])["accuracy"]
    # aeon's public loader, by the display name as a user would type it (aeon maps it to MiniROCKET)
    five = get_estimator_results(
        ["MiniRocket"], datasets=["GunPoint"], num_resamples=5, path=str(root / "reports" / "aeon" / "fixed5")
    )
    np.testing.assert_allclose(
        five["MiniRocket"]["GunPoint"], [ok[("fixed5", s)] for s in range(5)], rtol=1e-12
    )
    full, names = get_estimator_results_as_array(["MiniRocket"], path=str(root / "reports" / "aeon" / "full"))
    assert names == ["GunPoint"] and full[0, 0] == pytest.approx(ok[("full", 0)], rel=1e-12)


def test_methods_aeon_does_not_know_keep_their_run_name():
    meta = pd.DataFrame(
        {"display_name": ["ChorusTIC", "MultiRocket-Hydra", "QUANT", "1NN-DTW (10% window)"]},
        index=["chorustic", "multirocket_hydra", "quant", "dtw_1nn"],
    )
    assert aeon_estimator_names(meta) == {
        "chorustic": "chorustic",
        "multirocket_hydra": "MR-Hydra",
        "quant": "QUANT",
        "dtw_1nn": "dtw_1nn",
    }


@pytest.mark.filterwarnings(
    "ignore:Error during figure creation:UserWarning"
)  # one method: nothing to compare
def test_tsml_eval_reads_and_evaluates_the_prediction_files(run, tmp_path):
    tsml_eval = pytest.importorskip(
        "tsml_eval", reason="install with `pip install --no-deps tsml-eval==0.6.0`"
    )
    from tsml_eval.evaluation.multiple_estimator_evaluation import evaluate_classifiers_by_problem
    from tsml_eval.evaluation.storage import load_classifier_results

    root, df, ds, _ = run
    row = df[(df["protocol"] == "fixed5") & (df["seed"] == 3)].iloc[0]
    cr = load_classifier_results(str(root / "results" / row["result_file"]))  # verifies the file's accuracy against its predictions
    assert cr.accuracy == pytest.approx(row["accuracy"]) and cr.n_classes == ds.n_classes
    assert cr.n_cases == len(ds.y_test) and cr.classifier_name == "minirocket" and cr.resample_id == 3
    # labels are the encoded class indices 0..K-1; line 2's JSON maps them back to the archive's labels
    np.testing.assert_array_equal(cr.class_labels, ds.y_test)
    assert json.loads(cr.parameter_info)["class_labels"] == [str(c) for c in ds.classes]
    evaluate_classifiers_by_problem(
        str(root / "results" / "fixed5"),
        ["minirocket"],
        ["GunPoint"],
        str(tmp_path),
        resamples=5,
        eval_name="ev",
    )
    acc = pd.read_csv(tmp_path / "ev" / "Accuracy" / "all_resamples" / "minirocket_accuracy.csv", index_col=0)
    np.testing.assert_allclose(
        acc.loc["GunPoint"].to_numpy(float),
        df[df["protocol"] == "fixed5"].sort_values("seed")["accuracy"].to_numpy(float),
    )
    assert tsml_eval.__version__ == "0.6.0"
