"""The reproduction report's comparison with reference results (another machine's run, the committed
demo): which runs differ and in how many test cases, prediction by prediction where the reference has the
prediction files, else from the accuracies; runs without portable numerics are marked."""

from __future__ import annotations

import numpy as np
import pandas as pd

from chorustic.evaluation.results import result_path, write_result_file
from chorustic.reports.reproduction import differences_from_reference
from chorustic.reports.writeup import reference_markdown

Y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
P = np.array([[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.7, 0.3], [0.45, 0.55], [0.6, 0.4], [0.8, 0.2], [0.3, 0.7]])


def _results(folder, runs):
    """runs: (method, protocol, seed, proba or None (accuracy only), accuracy, portable)."""
    rows = []
    for method, protocol, seed, proba, acc, portable in runs:
        if proba is not None:
            path = result_path(folder, protocol, method, "GunPoint", seed)
            acc = write_result_file(path, dataset="GunPoint", method=method, seed=seed, y_true=Y, proba=proba,
                                    fit_time_s=0, predict_time_s=0, memory_bytes=0, info={})
        rows.append(dict(archive="UCR", method=method, display_name=method.upper(), dataset="GunPoint",
                         protocol=protocol, seed=seed, status="ok", accuracy=acc, n_test=len(Y),
                         portable_numerics=portable))
    return pd.DataFrame(rows)


def test_differing_runs_and_test_cases_are_listed(tmp_path):
    flipped = P.copy()
    flipped[[2, 4]] = flipped[[2, 4], ::-1]  # two test cases change class
    nudged = P + np.array([1e-16, -1e-16])  # the last bits only
    nudged[0] = [0.9000000000000001, 0.1]
    ours = _results(tmp_path / "ours", [
        ("quant", "full", 0, P, None, True),
        ("quant", "fixed5", 0, flipped, None, True),
        ("quant", "fixed5", 1, nudged, None, True),
        ("gpu", "full", 0, P, None, False),
    ])
    ref = _results(tmp_path / "ref", [
        ("quant", "full", 0, P, None, None),
        ("quant", "fixed5", 0, P, None, None),
        ("quant", "fixed5", 1, P, None, None),
        ("gpu", "full", 0, None, 0.5, None),  # the reference has no prediction file: accuracy only
    ])
    d = differences_from_reference(ours, tmp_path / "ours", ref, tmp_path / "ref").set_index(["method", "protocol", "seed"])
    assert d.loc[("quant", "full", 0), "status"] == "identical"
    assert d.loc[("quant", "fixed5", 0), ["status", "n_cases_differ", "basis"]].tolist() == ["differs", 2, "predictions"]
    assert d.loc[("quant", "fixed5", 1), "status"] == "same predictions, other probabilities"
    # 8 of 8 correct against 4 of 8: at least 4 test cases differ
    assert d.loc[("gpu", "full", 0), ["status", "n_cases_differ", "basis"]].tolist() == ["differs", 4, "accuracy"]
    md = reference_markdown(d.reset_index(), "ref/accuracies.csv")
    assert "**2 differ** (6 test cases in all)" in md
    assert "| GunPoint | QUANT | fixed5 | 0 | 0.7500 | 1.0000 | 2 of 8 |" in md
    assert "| GunPoint | GPU * | full | 0 | 1.0000 | 0.5000 | >= 4 of 8 |" in md
    assert "Not covered by portable numerics" in md and "1 runs of GPU" in md
