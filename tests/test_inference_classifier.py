"""ChorusTICClassifier: sklearn contract, determinism, leakage protection, schedules, equivariance, OOM."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone

from chorustic.inference import ChorusTICClassifier, label_shift_offsets
from chorustic.inference import schedules as schedules_module  # the classifier imports it when it predicts
from chorustic.model import ChorusTICConfig
from chorustic.testing.checkpoints import randomized_chorustic

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def model():
    return randomized_chorustic(ChorusTICConfig.tiny(), scale=0.2).eval()


def _data(n_ctx=12, n_query=7, channels=3, k=3, seed=0, length=64):
    rng = np.random.default_rng(seed)
    y = np.arange(n_ctx) % k
    X = rng.normal(size=(n_ctx, channels, length)).astype(np.float32)
    X += y[:, None, None] * np.linspace(0, 1, length, dtype=np.float32)
    Xq = rng.normal(size=(n_query, channels, length)).astype(np.float32)
    return X, y, Xq


def _clf(model, **kw):
    return ChorusTICClassifier(model=model, **kw)


def test_sklearn_contract(model):
    X, y, Xq = _data()
    labels = np.array(["walk", "run", "sit"])[y]
    clf = _clf(model).fit(X, labels)
    assert list(clf.classes_) == ["run", "sit", "walk"]
    proba = clf.predict_proba(Xq)
    assert proba.shape == (7, 3) and proba.dtype == np.float64
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(Xq)) <= set(clf.classes_)
    assert clf.get_params()["n_label_shifts"] == 8 and clf.get_params()["n_rssc_draws"] == 4
    assert clf.set_params(temperature=0.5).temperature == 0.5
    assert clone(clf).get_params()["temperature"] == 0.5
    info = clf.run_info_
    assert info["effective_batch_sizes"] == {
        "signal_rows": 128,
        "task_rows": 512,
        "icl_tables": 8,
        "group_chunk": 256,
    }
    assert clf.rssc_assignments_.shape == (4, 4, 4) and len(clf.offsets_) == 8


def test_seeded_and_independent_of_global_rng(model):
    X, y, Xq = _data()
    kw = {"n_label_shifts": 3, "n_rssc_draws": 2}
    torch.manual_seed(123)
    a = _clf(model, seed=5, **kw).fit(X, y)
    pa = a.predict_proba(Xq)
    state = torch.get_rng_state()
    pb = _clf(model, seed=5, **kw).fit(X, y).predict_proba(Xq)
    assert torch.equal(state, torch.get_rng_state())  # the global torch RNG is not touched
    assert np.array_equal(pa, pb)
    c = _clf(model, seed=6, **kw).fit(X, y)
    c.predict_proba(Xq)
    assert not np.array_equal(c.rssc_assignments_, a.rssc_assignments_)


def test_any_split_of_the_queries_gives_the_same_predictions(model):
    X, y, Xq = _data(n_query=7)
    clf = _clf(model, task_batch_size=3, n_label_shifts=2, n_rssc_draws=2).fit(X, y)
    full = clf.predict_proba(Xq)
    parts = np.concatenate([clf.predict_proba(Xq[:1]), clf.predict_proba(Xq[1:4]), clf.predict_proba(Xq[4:])])
    assert np.allclose(full, parts, atol=1e-6)
    shuffled = clf.predict_proba(Xq[::-1])[::-1]
    assert np.allclose(full, shuffled, atol=1e-6)


@pytest.mark.parametrize("channels,k,draws", [(1, 3, 2), (3, 4, 2), (2, 12, 1)])
def test_shared_schedule_equals_naive_schedule(model, channels, k, draws):
    X, y, Xq = _data(n_ctx=k + 2, n_query=3, channels=channels, k=k)
    shared = _clf(model, n_label_shifts=2, n_rssc_draws=draws, task_batch_size=2).fit(X, y)
    naive = _clf(model, n_label_shifts=2, n_rssc_draws=draws, schedule="naive").fit(X, y)
    a, b = shared.decision_function(Xq), naive.decision_function(Xq)
    assert a.shape == (3, k)
    assert np.abs(a - b).max() < 1e-4


@pytest.mark.parametrize("k,shifts,rule", [(4, 8, "official"), (11, 11, "paper")])
def test_label_shift_equivariance(model, k, shifts, rule):
    """With offsets covering every cyclic shift equally often, relabeling the classes cyclically
    permutes the ensemble's probabilities accordingly (also through the hierarchical extension)."""
    X, y, Xq = _data(n_ctx=2 * k, n_query=4, channels=2, k=k)
    offs = label_shift_offsets(k, shifts, rule=rule, seed=0)
    assert sorted(np.bincount(offs, minlength=k)) == [shifts // k] * k
    base = (
        _clf(model, n_label_shifts=shifts, n_rssc_draws=1, label_shift_rule=rule).fit(X, y).predict_proba(Xq)
    )
    for s in (1, 3):
        moved = _clf(model, n_label_shifts=shifts, n_rssc_draws=1, label_shift_rule=rule).fit(X, (y + s) % k)
        p = moved.predict_proba(Xq)
        assert np.allclose(p[:, (np.arange(k) + s) % k], base, atol=1e-5)


def test_single_class_context(model):
    X, _, Xq = _data()
    clf = _clf(model).fit(X, np.full(len(X), 7))
    assert np.array_equal(clf.predict_proba(Xq), np.ones((7, 1)))
    assert (clf.predict(Xq) == 7).all()


def test_bad_inputs_have_clear_errors(model):
    X, y, Xq = _data()
    clf = _clf(model).fit(X, y)
    with pytest.raises(ValueError, match="context was"):
        clf.predict_proba(Xq[:, :2])
    bad = Xq.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.predict_proba(bad)
    with pytest.raises(ValueError, match="equal-length"):
        _clf(model).fit([x for x in X], y)
    with pytest.raises(ValueError, match="schedule"):
        _clf(model, schedule="fast").fit(X, y)


def test_out_of_memory_halves_the_batch_sizes_and_retries(model, monkeypatch):
    X, y, Xq = _data()
    real = schedules_module.shared_member_logits
    calls = []

    def flaky(*args, batch, **kw):
        calls.append(batch.task_rows)
        if batch.task_rows > 100:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args, batch=batch, **kw)

    monkeypatch.setattr(schedules_module, "shared_member_logits", flaky)
    clf = _clf(model, task_batch_size=512).fit(X, y)
    p = clf.predict_proba(Xq)
    assert calls == [512, 256, 128, 64]
    assert clf.effective_batch_sizes_["task_rows"] == 64 and clf.oom_retries_ == 3
    monkeypatch.setattr(schedules_module, "shared_member_logits", real)
    assert np.allclose(p, _clf(model).fit(X, y).predict_proba(Xq), atol=1e-6)

    def broken(*args, **kw):
        raise RuntimeError("some other failure")

    monkeypatch.setattr(schedules_module, "shared_member_logits", broken)
    with pytest.raises(RuntimeError, match="some other failure"):
        _clf(model).fit(X, y).predict_proba(Xq)
