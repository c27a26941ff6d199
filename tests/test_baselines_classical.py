"""The classical methods (aeon) on the datasets shipped inside the aeon wheel give sensible accuracies,
and their documented input rules hold (minimum length, variable length)."""

from __future__ import annotations

from pathlib import Path

import aeon
import numpy as np
import pytest

from chorustic.methods import discover

DATA = Path(aeon.__file__).parent / "datasets" / "data"


def load(name: str):
    from aeon.datasets import load_from_ts_file

    X_tr, y_tr = load_from_ts_file(str(DATA / name / f"{name}_TRAIN.ts"))
    X_te, y_te = load_from_ts_file(str(DATA / name / f"{name}_TEST.ts"))
    classes = np.unique(y_tr)
    conv = (
        (lambda X: [np.asarray(x, dtype=np.float32) for x in X])
        if isinstance(X_tr, list)
        else (lambda X: np.asarray(X, dtype=np.float32))
    )
    return (
        conv(X_tr),
        np.searchsorted(classes, y_tr),
        conv(X_te),
        np.searchsorted(classes, y_te),
        len(classes),
    )


@pytest.fixture(scope="module")
def discovery():
    return discover()


# (dataset, chance level): every classical method must be far above chance on these two
@pytest.mark.slow
@pytest.mark.parametrize("method", ["minirocket", "multirocket_hydra", "quant", "dtw_1nn"])
def test_classical_methods_are_accurate_on_gunpoint_and_basicmotions(method, discovery):
    m = discovery.get(method)
    for dataset, floor in (("GunPoint", 0.85), ("BasicMotions", 0.9)):
        X_tr, y_tr, X_te, y_te, k = load(dataset)
        est = m.build(seed=0, n_jobs=2, **m.params())
        acc = float((est.fit(X_tr, y_tr).predict(X_te) == y_te).mean())
        assert acc >= floor, f"{method} on {dataset}: accuracy {acc:.3f} (chance {1 / k:.2f})"


@pytest.mark.slow(reason="every classical plugin fitted on 4 short-series datasets (~40 s)")
def test_short_series_are_zero_padded_to_the_minimum_length(discovery):
    """PenDigits has 8 points; MiniRocket needs 9 (aeon: 'zero pad shorter series')."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2, 8)).astype(np.float32)
    y = np.arange(30) % 3
    X[y == 1, :, :4] += 3.0
    for name, min_len in (("minirocket", 9), ("multirocket_hydra", 10), ("quant", None)):  # QUANT runs on 8
        m = discovery.get(name)
        est = m.build(seed=0, **m.params({"n_kernels": 840} if name == "minirocket" else {})).fit(X, y)
        assert est.run_info_["zero_padded_to"] == min_len
        assert est.predict_proba(X[:5]).shape == (5, 3)
    est = (
        discovery.get("quant")
        .build(seed=0)
        .fit(rng.normal(size=(10, 1, 2)).astype(np.float32), np.arange(10) % 2)
    )
    assert est.run_info_["zero_padded_to"] == 4


def test_variable_length_japanese_vowels(discovery):
    """Variable length (7-29 points, 12 channels): resampled to the longest context series for the
    equal-length methods, compared as is by DTW."""
    X_tr, y_tr, X_te, y_te, _ = load("JapaneseVowels")
    assert isinstance(X_tr, list)
    m = discovery.get("minirocket")
    est = m.build(seed=0, n_jobs=2, **m.params({"n_kernels": 2016})).fit(X_tr, y_tr)
    assert est.run_info_["variable_length_resampled_to"] == max(x.shape[1] for x in X_tr)
    acc = float((est.predict(X_te) == y_te).mean())
    assert acc >= 0.85, acc  # 9 classes, chance 0.11
    d = discovery.get("dtw_1nn").build(seed=0, n_jobs=2).fit(X_tr[:60], y_tr[:60])
    assert d.predict_proba(X_te[:10]).shape[0] == 10


def test_dtw_predicts_what_aeons_classifier_predicts_on_any_threads(discovery):
    """The plugin asks aeon's ``kneighbors`` for every query of a chunk at once (its threads share out the
    queries) where aeon's ``predict_proba`` measures one query at a time: the same probabilities, ties
    between neighbours of other classes included, on one thread or two, equal or variable length."""
    from aeon.classification.distance_based import KNeighborsTimeSeriesClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3, 30))
    y = rng.integers(0, 4, 40)
    X[20:30], y[20:30] = X[:10], (y[:10] + 1) % 4  # the same series under another class: a tie at distance 0
    queries = np.concatenate([rng.normal(size=(25, 3, 30)), X[:10]])
    Xv = [rng.normal(size=(2, int(n))) for n in rng.integers(12, 30, 30)]
    yv = rng.integers(0, 3, 30)
    Qv = [rng.normal(size=(2, int(n))) for n in rng.integers(12, 30, 12)]
    for train, labels, test in ((X, y, queries), (Xv, yv, Qv)):
        aeon = KNeighborsTimeSeriesClassifier(distance="dtw", n_neighbors=1).fit(train, labels).predict_proba(test)
        for n_jobs in (1, 2):
            ours = discovery.get("dtw_1nn").build(seed=0, n_jobs=n_jobs).fit(train, labels).predict_proba(test)
            np.testing.assert_array_equal(ours, aeon)


def test_dtw_reads_multivariate_series_with_their_channels_side_by_side_for_aeons_own_distances(discovery):
    """Multivariate series go to aeon's DTW with each time point's channels side by side in memory (the strided
    read of the collection's layout cost 6x per cell): the distances are aeon's on the series as given, to the
    rounding of a channel sum, and the predictions aeon's classifier's, at 6 and at 24 channels, equal or
    variable length; univariate series go as they are."""
    from aeon.classification.distance_based import KNeighborsTimeSeriesClassifier
    from aeon.distances import pairwise_distance

    from chorustic.methods import import_plugin_module, default_plugin_dir

    plugin = import_plugin_module("dtw_1nn", default_plugin_dir() / "dtw_1nn.py")
    rng = np.random.default_rng(2)
    uni = rng.normal(size=(5, 1, 40))
    uni_list = [rng.normal(size=(1, n)) for n in (30, 40)]
    assert plugin.channels_side_by_side(uni) is uni and plugin.channels_side_by_side(uni_list) is uni_list
    # a series of one time point is C and Fortran ordered at once, and one list takes one layout: left as it is
    one_point = [rng.normal(size=(3, 20)), rng.normal(size=(3, 1))]
    assert plugin.channels_side_by_side(one_point) is one_point
    est = discovery.get("dtw_1nn").build(seed=0).fit(one_point + [rng.normal(size=(3, 9))], np.array([0, 1, 0]))
    assert est.predict_proba([rng.normal(size=(3, 5)), rng.normal(size=(3, 1))]).shape == (2, 2)
    for channels in (6, 24):
        X = rng.normal(size=(30, channels, 40))
        y = rng.integers(0, 3, 30)
        Q = rng.normal(size=(12, channels, 40))
        Xv = [rng.normal(size=(channels, int(n))) for n in rng.integers(20, 40, 20)]
        Qv = [rng.normal(size=(channels, int(n))) for n in rng.integers(20, 40, 8)]
        for train, labels, test in ((X, y, Q), (Xv, y[:20], Qv)):
            side = plugin.channels_side_by_side(train)
            assert all(s.flags.f_contiguous and np.array_equal(s, t) for s, t in zip(side, train))
            np.testing.assert_allclose(pairwise_distance(plugin.channels_side_by_side(test), side, method="dtw"),
                                       pairwise_distance(test, train, method="dtw"), rtol=1e-12)
            aeon = KNeighborsTimeSeriesClassifier(distance="dtw", n_neighbors=1).fit(train, labels).predict_proba(test)
            est = discovery.get("dtw_1nn").build(seed=0, n_jobs=2).fit(train, labels)
            assert all(s.flags.f_contiguous for s in est.context_)  # what the distances read
            np.testing.assert_array_equal(est.predict_proba(test), aeon)


def test_dtw_contexts_of_one_job_share_their_distances_and_predict_what_aeon_predicts(discovery):
    """The contexts of a job draw from one training split and predict one test split: the plugin computes each
    (query, training series) pair once and the later contexts read it from the job's memo, in chunks of any
    size. Every context predicts what aeon's classifier fitted on that context alone predicts, ties
    included, with or without a window."""
    from aeon.classification.distance_based import KNeighborsTimeSeriesClassifier

    from chorustic.methods.pair_memo import PAIR_MEMO

    rng = np.random.default_rng(1)
    X = rng.normal(size=(36, 2, 25))
    y = rng.integers(0, 3, 36)
    X[30:], y[30:] = X[:6], (y[:6] + 1) % 3  # the same series under another class: ties at distance 0
    test = np.concatenate([rng.normal(size=(20, 2, 25)), X[:6]])
    contexts = [rng.permutation(36)[:12], np.arange(36), rng.permutation(36)[:24], np.r_[30:36, 0:6]]
    for window in (None, 0.2):
        PAIR_MEMO.clear()
        computed = []
        for ctx in contexts:
            params = {} if window is None else {"distance_params": {"window": window}}
            aeon = KNeighborsTimeSeriesClassifier(distance="dtw", n_neighbors=1, **params).fit(X[ctx], y[ctx])
            ours = discovery.get("dtw_1nn").build(seed=0, window=window).fit(X[ctx], y[ctx])
            got = np.concatenate([ours.predict_proba(test[i:i + 7]) for i in range(0, len(test), 7)])
            np.testing.assert_array_equal(got, aeon.predict_proba(test))
            computed.append(ours.run_info_["distances_computed"])
            assert computed[-1] + ours.run_info_["distances_reused"] == len(ctx) * len(test)
        # the first context's series, then the full context's others (a repeated series is known by its
        # values); the later contexts compute nothing
        first = {X[i].tobytes() for i in contexts[0]}
        assert computed == [12 * 26, sum(X[i].tobytes() not in first for i in range(36)) * 26, 0, 0]
    PAIR_MEMO.clear()


def test_dtw_window_parameter_is_validated(discovery):
    with pytest.raises(ValueError, match="window must be a fraction"):
        discovery.get("dtw_1nn").build(seed=0, window=5)


@pytest.mark.slow(reason="MultiRocket-Hydra's transform twice, batched and whole (~9 s)")
def test_multirocket_hydra_convolves_in_batches_with_the_same_features(discovery):
    """aeon's Hydra transform convolves every series of a call at once (~3.9 KB per time point each); the
    plugin runs it in batches of HYDRA_BATCH with aeon's own batch method: the same features and the same
    predictions as aeon's classifier, with the batches' memory at any context size."""
    from aeon.classification.convolution_based import MultiRocketHydraClassifier

    from chorustic.methods import import_plugin_module
    from chorustic.paths import REPO_ROOT

    plugin = import_plugin_module("multirocket_hydra", REPO_ROOT / "baselines" / "multirocket_hydra.py")
    # at most HYDRA_BATCH series, fewer when they are long (HYDRA_POINTS time points in all)
    assert plugin.hydra_batch(24) == plugin.HYDRA_BATCH == 256
    assert plugin.hydra_batch(17_984) == plugin.HYDRA_POINTS // 17_984 == 29 and plugin.hydra_batch(10**9) == 1
    rng = np.random.default_rng(0)
    n = plugin.HYDRA_BATCH + 44  # more than one batch: the second one is short
    X, y, Xq = rng.normal(size=(n, 2, 24)), np.arange(n) % 3, rng.normal(size=(n, 2, 24))
    calls = []
    batched = plugin._batched_hydra_classifier(n_kernels=8, n_groups=64, random_state=0, n_jobs=1)
    aeons = MultiRocketHydraClassifier(n_kernels=8, n_groups=64, random_state=0, n_jobs=1)
    batched.fit(X, y)
    aeons.fit(X, y)
    forward = batched._transform_hydra._hydra.forward
    batched._transform_hydra._hydra.forward = lambda Z: calls.append(len(Z)) or forward(Z)
    np.testing.assert_array_equal(batched._transform_hydra.transform(Xq), aeons._transform_hydra.transform(Xq))
    assert calls == [plugin.HYDRA_BATCH, 44]
    np.testing.assert_array_equal(batched.predict(Xq), aeons.predict(Xq))
    calls.clear()
    points = plugin.HYDRA_POINTS
    try:
        plugin.HYDRA_POINTS = 24 * 128  # 128 series of 24 points at once
        np.testing.assert_array_equal(batched._transform_hydra.transform(Xq), aeons._transform_hydra.transform(Xq))
    finally:
        plugin.HYDRA_POINTS = points
    assert calls == [128, 128, 44]
    # aeon's own class is left in place for anyone else in the process
    from aeon.classification.convolution_based import _mr_hydra
    from aeon.transformations.collection.convolution_based import HydraTransformer

    assert _mr_hydra.HydraTransformer is HydraTransformer
