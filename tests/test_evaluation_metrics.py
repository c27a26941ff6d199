"""The measures of a run from its prediction file (chorustic/evaluation/metrics.py): their definitions,
that they agree with tsml-eval and scikit-learn, that the aggregate step writes them into metrics.csv with
accuracies.csv, and that aeon's results loader reads every measure of the report's aeon tree."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

from chorustic.evaluation.metrics import METRICS, compute_metrics, metric_values, metrics_frame, read_metrics
from chorustic.evaluation.results import metrics_file, write_result_file


def test_a_majority_guesser_is_flattered_by_accuracy_only():
    y = np.array([0] * 18 + [1, 2])  # 90 % of one class
    proba = np.tile([0.8, 0.1, 0.1], (20, 1))  # always class 0
    m = compute_metrics(y, proba, 3)
    assert m["accuracy"] == pytest.approx(0.9)
    assert m["balacc"] == pytest.approx(1 / 3)  # recall 1, 0, 0
    assert m["f1"] == pytest.approx((2 * 0.9 / 1.9) / 3)  # F1 of class 0, zero for the others
    assert m["auroc"] == pytest.approx(0.5)  # the same scores for every case: no ranking at all
    assert m["logloss"] == pytest.approx(-(18 * np.log(0.8) + 2 * np.log(0.1)) / 20)


def test_auroc_leaves_out_classes_absent_from_the_test_split():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 40)  # class 3 of 4 never occurs
    p = rng.dirichlet(np.ones(4), 40)
    expected = np.mean([roc_auc_score(y == c, p[:, c]) for c in range(3)])
    assert compute_metrics(y, p, 4)["auroc"] == pytest.approx(expected)
    assert np.isnan(compute_metrics(np.zeros(5, int), p[:5], 4)["auroc"])  # one class: undefined
    binary = rng.dirichlet(np.ones(2), 40)
    yb = rng.integers(0, 2, 40)
    assert compute_metrics(yb, binary, 2)["auroc"] == pytest.approx(roc_auc_score(yb, binary[:, 1]))
    assert compute_metrics(yb, binary, 2)["logloss"] > 0


def test_names_are_aeons_and_only_log_loss_is_lower_better():
    from aeon.benchmarking.results_loaders import VALID_RESULT_MEASURES

    assert set(METRICS) == set(VALID_RESULT_MEASURES["classification"])
    assert [m.name for m in METRICS.values() if not m.higher_is_better] == ["logloss"]


def test_the_same_values_as_tsml_eval_where_the_definitions_agree(tmp_path):
    pytest.importorskip("tsml_eval", reason="install with `pip install --no-deps tsml-eval==0.6.0`")
    from sklearn.metrics import f1_score
    from tsml_eval.evaluation.storage import load_classifier_results

    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 60)
    proba = rng.dirichlet(np.ones(4) * 0.5, 60)
    f = tmp_path / "testResample0.csv"
    write_result_file(f, dataset="D", method="m", seed=0, y_true=y, proba=proba, fit_time_s=0.1,
                      predict_time_s=0.1, memory_bytes=1, info={})
    cr = load_classifier_results(str(f))
    cr.calculate_statistics()
    ours = compute_metrics(y, proba, 4)
    assert ours["accuracy"] == pytest.approx(cr.accuracy)
    assert ours["balacc"] == pytest.approx(cr.balanced_accuracy)
    assert ours["logloss"] == pytest.approx(cr.log_loss)
    # tsml-eval weighs F1 by class frequency; ours is the macro mean
    assert ours["f1"] == pytest.approx(f1_score(y, proba.argmax(1), average="macro"))


def test_aggregate_writes_every_measure_of_every_run_beside_accuracies(minirocket_gunpoint_run, tmp_path):
    from chorustic.cli import main
    from chorustic.evaluation.results import read_result_file

    root = tmp_path / "run"
    shutil.copytree(minirocket_gunpoint_run[0] / "results", root)
    assert main(["aggregate", "--results-dir", str(root)]) == 0
    acc = pd.read_csv(root / "accuracies.csv")
    measures = read_metrics(metrics_file(root / "accuracies.csv"))
    assert metrics_file(root / "accuracies.csv") == root / "metrics.csv"
    assert len(measures) == 5 * len(acc) and set(measures["metric"]) == set(METRICS)
    merged = measures[measures["metric"] == "accuracy"].merge(acc, on=["protocol", "seed"])
    np.testing.assert_allclose(merged["value"], merged["accuracy"], rtol=0, atol=1e-15)
    row = acc[acc["protocol"] == "fixed5"].iloc[0]
    rf = read_result_file(root / row["result_file"])
    got = measures[(measures["protocol"] == "fixed5") & (measures["seed"] == row["seed"])].set_index("metric")["value"]
    for name, value in compute_metrics(rf.y_true, rf.proba, rf.n_classes).items():
        assert got[name] == pytest.approx(value)


def test_an_unreadable_prediction_file_keeps_its_accuracy_and_is_named(minirocket_gunpoint_run, tmp_path):
    root = tmp_path / "run"
    shutil.copytree(minirocket_gunpoint_run[0] / "results", root)
    acc = minirocket_gunpoint_run[1].copy()
    broken = root / acc["result_file"].iloc[0]
    broken.write_text("not a prediction file\n")
    frame, problems = metrics_frame(acc, root)
    assert len(problems) == 1 and "GunPoint" in problems[0] and "no measures but accuracy" in problems[0]
    assert len(frame) == 5 * len(acc) - 4


def test_other_measures_leave_reported_methods_and_missing_values_out():
    runs = pd.DataFrame({
        "method": ["a", "a", "paper_x"], "archive": "UCR", "dataset": ["D1", "D2", "D1"], "protocol": "full",
        "family": "full", "budget": np.nan, "seed": 0, "reported": [False, False, True],
        "status": ["ok", "ok", "reported"], "accuracy": [0.9, 0.8, 0.7]})
    measures = pd.DataFrame({"method": "a", "archive": "UCR", "dataset": ["D1"], "protocol": "full",
                             "family": "full", "budget": np.nan, "seed": 0, "reported": False,
                             "metric": "balacc", "value": [0.6]})
    got = metric_values(runs, measures, "balacc")
    assert list(got["method"]) == ["a"] and list(got["accuracy"]) == [0.6]  # D2 has no value: absent
    assert metric_values(runs, measures, "accuracy") is runs


def test_aeon_reads_every_measure_of_the_reports_aeon_tree(minirocket_gunpoint_run, tmp_path):
    from aeon.benchmarking.results_loaders import get_estimator_results

    from chorustic.reports.accuracies import method_metadata
    from chorustic.reports.interop import write_aeon_results

    root, df, _, _ = minirocket_gunpoint_run
    measures, _ = metrics_frame(df, root / "results")
    write_aeon_results(df, method_metadata(df), tmp_path, measures)
    for name in METRICS:
        got = get_estimator_results(["MiniRocket"], datasets=["GunPoint"], num_resamples=5,
                                    path=str(tmp_path / "fixed5"), measure=name)
        want = measures[(measures["protocol"] == "fixed5") & (measures["metric"] == name)].sort_values("seed")
        np.testing.assert_allclose(got["MiniRocket"]["GunPoint"], want["value"], rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_the_numpy_measures_are_scikit_learns(seed):
    """Random splits with ties in the probabilities, classes absent from the test split or never predicted,
    and one-hot rows (a nearest neighbour's): the same values as sklearn.metrics."""
    from sklearn import metrics as skm

    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    n = int(rng.integers(5, 80))
    y = rng.integers(0, max(2, k - (seed % 2)), n)  # odd seeds: the last class never occurs
    p = rng.dirichlet(np.ones(k) * 0.3, n)
    p[: n // 4] = np.round(p[: n // 4], 1)  # ties
    p[: n // 4] /= p[: n // 4].sum(axis=1, keepdims=True)
    if seed == 5:
        p = np.eye(k)[rng.integers(0, k, n)]  # hard predictions: log loss at the clipping bound
    pred = p.argmax(axis=1)
    got = compute_metrics(y, p, k)
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, pred))
    with warnings.catch_warnings():  # sklearn warns of a predicted class absent from the test split
        warnings.simplefilter("ignore")
        assert got["balacc"] == pytest.approx(skm.balanced_accuracy_score(y, pred))
        assert got["f1"] == pytest.approx(skm.f1_score(y, pred, average="macro", zero_division=0.0))
        assert got["logloss"] == pytest.approx(skm.log_loss(y, p, labels=list(range(k))))
    present = np.unique(y)
    if len(present) >= 2:
        want = (skm.roc_auc_score(y, p[:, 1]) if k == 2
                else np.mean([skm.roc_auc_score(y == c, p[:, c]) for c in present]))
        assert got["auroc"] == pytest.approx(want)
