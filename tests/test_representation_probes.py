"""benchmarks/representation_probes.py: its per-episode probes measure what they say they measure."""

from __future__ import annotations

import numpy as np
import pytest

from chorustic.inference import ChorusTICClassifier
from chorustic.model import ChorusTICConfig
from chorustic.testing.checkpoints import randomized_chorustic

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def probes(benchmark_script):
    return benchmark_script("representation_probes")


@pytest.fixture(scope="module")
def model():
    return randomized_chorustic(ChorusTICConfig.tiny(), scale=0.2).eval()


def _episode(k=3, n_ctx=12, n_query=9, channels=2, length=64, seed=0):
    """Classes that differ by a large per-class offset: any 1-NN on the raw series separates them."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(n_ctx) % k, rng.integers(0, k, n_query)])
    X = rng.normal(size=(len(y), channels, length)).astype(np.float32) * 0.1 + 5.0 * y[:, None, None]
    return X, y[:n_ctx], y[n_ctx:]


def test_probes_of_a_separable_episode(probes, model):
    X, y_ctx, y_q = _episode()
    out = probes.probe_episode(model, X, y_ctx, y_q)
    assert set(out) == {"member", "offset_min", "offset_max", *probes.PROBES, *probes.RANKS}
    assert out["raw_1nn"] == 1.0  # the probes score the queries against the context labels
    assert 0.0 <= out["offset_min"] <= out["member"] <= out["offset_max"] <= 1.0
    for name in probes.PROBES:
        assert 0.0 <= out[name] <= 1.0


def test_member_is_the_classifiers_single_member(probes, model):
    """``member`` (label offset 0, RSSC draw of seed 0) is what the classifier predicts with one member."""
    X, y_ctx, y_q = _episode(k=4, n_ctx=16, n_query=11, channels=3, seed=1)
    out = probes.probe_episode(model, X, y_ctx, y_q)
    n = len(y_ctx)
    clf = ChorusTICClassifier(model=model, n_label_shifts=1, n_rssc_draws=1, seed=0).fit(X[:n], y_ctx)
    assert out["member"] == pytest.approx(float(np.mean(clf.predict(X[n:]) == y_q)))


def test_offsets_are_skipped_beyond_the_native_classes(probes, model):
    k = model.config.max_classes + 2
    X, y_ctx, y_q = _episode(k=k, n_ctx=2 * k, n_query=5, channels=1, seed=2)
    out = probes.probe_episode(model, X, y_ctx, y_q)
    assert np.isnan(out["offset_min"]) and np.isnan(out["offset_max"])
    assert 0.0 <= out["member"] <= 1.0


def test_effective_rank_counts_the_directions_rows_vary_in(probes):
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 20)) + 7.0  # 3 directions around an offset
    assert probes.effective_rank(rows) == 3
    assert probes.effective_rank(np.ones((5, 4))) == 0


def test_univariate_h_varies_in_fewer_directions_than_multichannel_h(probes, model):
    """Every RSSC slot of a univariate series holds the same channel, so its slots differ only through their
    embeddings; distinct channels in the slots make H vary in more directions."""
    uni, y_ctx, y_q = _episode(k=4, n_ctx=24, n_query=4, channels=1, seed=3)
    multi, _, _ = _episode(k=4, n_ctx=24, n_query=4, channels=model.config.num_slots, seed=3)
    rng = np.random.default_rng(3)
    uni = uni + rng.normal(size=uni.shape).astype(np.float32)  # rows that differ in many directions
    multi = multi + rng.normal(size=multi.shape).astype(np.float32)
    uni_rank = probes.probe_episode(model, uni, y_ctx, y_q)["H_rank"]
    multi_rank = probes.probe_episode(model, multi, y_ctx, y_q)["H_rank"]
    assert 1 <= uni_rank < multi_rank <= len(y_ctx) - 1
