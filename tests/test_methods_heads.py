"""The classifier heads of the frozen-encoder baselines (chorustic.methods.heads)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.slow(reason="MOMENT's SVM grid search in a worker (~12 s)")
def test_moments_svm_grid_search_runs_in_the_jobs_own_process():
    """momentfm's fit_svm asks joblib for 10 worker processes; the head runs the same grid search in the
    process (sequentially for a one-thread job) and gets the same SVC as momentfm's own call."""
    pytest.importorskip("momentfm")
    import psutil
    from momentfm.models.statistical_classifiers import fit_svm

    from chorustic.methods.heads import make_head

    rng = np.random.default_rng(0)
    y = np.arange(60) % 2
    Z = rng.standard_normal((60, 8)) + y[:, None]  # 60 cases, 30 per class: the grid search
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    head = make_head("svm", seed=0, n_jobs=1).fit(Z, y)
    assert {c.pid for c in psutil.Process().children(recursive=True)} <= before
    assert head.svm_.C != 1e5  # C was searched (a tiny context's SVC has C=1e5)
    Q = rng.standard_normal((10, 8))
    assert np.array_equal(head.svm_.decision_function(Q), fit_svm(Z, y).decision_function(Q))
