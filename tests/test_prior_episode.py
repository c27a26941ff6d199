"""Invariants of the episodic prior: shapes, dtypes, labels, split, bijection, seeding, batching."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from chorustic.prior import (BACKGROUND_FAMILIES, CROSS_CHANNEL_RULES, TEMPORAL_RULES, EpisodePrior,
                             PriorConfig, apply_nuisance, collate, label_counts)
from chorustic.resampling import resample_linear
from chorustic.prior.backgrounds import sample_process

SMALL = PriorConfig(min_rows=24, max_rows=64, min_length=32, max_length=160)


@pytest.fixture(scope="module")
def batches():
    prior = EpisodePrior(SMALL, seed=123)
    return [prior.sample_batch(8) for _ in range(6)]


def test_batch_shapes_dtypes_and_channel_mask(batches):
    for b in batches:
        B, T, C, L = b.X.shape
        assert (B, L) == (8, 512) and b.X.dtype == np.float32 and np.isfinite(b.X).all()
        assert b.y.shape == (B, T) and b.y.dtype == np.int64
        assert b.channel_mask.shape == (B, C) and b.channel_mask.dtype == bool
        assert b.n_classes.shape == (B,) and b.n_classes.dtype == np.int64
        assert 2 <= b.n_context < T
        for i, om in enumerate(b.omegas):
            assert b.channel_mask[i].sum() == om.n_channels and b.channel_mask[i, : om.n_channels].all()
            assert np.all(b.X[i][:, ~b.channel_mask[i]] == 0.0)  # padding channels are zeros
            assert om.n_context == b.n_context and om.n_context + om.n_query == T
            assert 2 <= om.n_classes <= 10 and om.n_classes == b.n_classes[i]
        assert C == max(om.n_channels for om in b.omegas)


def test_labels_every_class_in_context_and_every_query_class_in_context(batches):
    for b in batches:
        for i in range(b.batch_size):
            K = b.n_classes[i]
            ctx, qry = b.y_context[i], b.y_query[i]
            assert ctx.min() >= 0 and ctx.max() < K and qry.min() >= 0 and qry.max() < K
            assert set(ctx.tolist()) == set(range(K))
            assert set(qry.tolist()) <= set(ctx.tolist())


def test_label_map_is_a_bijection_and_varies_across_episodes():
    prior = EpisodePrior(SMALL, seed=7)
    maps = []
    for _ in range(30):
        ep = prior.sample_episode(rule="motif_shape", n_classes=5)
        assert sorted(ep.label_map.tolist()) == list(range(5))
        maps.append(tuple(ep.label_map))
    assert len(set(maps)) > 20  # random, not a fixed association
    assert sum(m == tuple(range(5)) for m in maps) <= 3


def test_observed_labels_follow_the_bijection_instances_match_their_labels_prototype():
    prior = EpisodePrior(dataclasses.replace(SMALL, dirichlet_alpha=1e3), seed=5)
    om = prior.sample_omega(120, 80, 128, rule="motif_shape", n_classes=6, n_channels=1, difficulty=0.0,
                            background="smooth")
    ep = prior.generate(om, keep_prototypes=True)
    a, b = ep.region
    d = ((ep.X[:, None, :, a:b] - ep.prototypes[None, :, :, a:b]) ** 2).sum(axis=(2, 3))  # (T, K)
    assert (d.argmin(axis=1) == ep.y).mean() > 0.9


def test_same_seed_same_episode_and_state_restore():
    a = EpisodePrior(SMALL, seed=99).sample_batch(4)
    b = EpisodePrior(SMALL, seed=99).sample_batch(4)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and a.omegas == b.omegas
    c = EpisodePrior(SMALL, seed=100).sample_batch(4)
    assert not (c.X.shape == a.X.shape and np.array_equal(c.X, a.X))

    p = EpisodePrior(SMALL, seed=1)
    p.sample_batch(2)
    state = p.get_state()
    nxt = p.sample_batch(3)
    p.sample_batch(2)
    p.set_state(state)
    again = p.sample_batch(3)
    assert np.array_equal(nxt.X, again.X) and np.array_equal(nxt.y, again.y)


def test_task_type_mix_and_rule_families_follow_the_paper():
    prior = EpisodePrior(PriorConfig(), seed=0)
    oms = [prior.sample_omega(100, 60, 128) for _ in range(600)]
    uni = [o for o in oms if o.task_type == "uni"]
    assert 0.15 < len(uni) / len(oms) < 0.25  # p_univariate = 0.2
    assert all(o.n_channels == 1 and o.rule in TEMPORAL_RULES for o in uni)
    multi = [o for o in oms if o.task_type == "multi"]
    assert all(2 <= o.n_channels <= 10 and o.rule in CROSS_CHANNEL_RULES for o in multi)
    assert {o.rule for o in multi} == set(CROSS_CHANNEL_RULES)
    assert {o.background for o in oms} == set(BACKGROUND_FAMILIES)
    assert {o.n_classes for o in oms} == set(range(2, 11))


def test_no_cross_channel_rules_ablation_uses_channelwise_temporal_rules():
    cfg = dataclasses.replace(PriorConfig(), cross_channel_rules=False)
    prior = EpisodePrior(cfg, seed=0)
    oms = [prior.sample_omega(100, 60, 128) for _ in range(300)]
    multi = [o for o in oms if o.task_type == "multi"]
    assert len(multi) > 200
    assert all(o.rule in TEMPORAL_RULES for o in oms)
    assert all(o.informative_channels and max(o.informative_channels) < o.n_channels for o in multi)
    # channel-wise: each informative channel alone carries the class (same mapping on every channel)
    om = next(o for o in multi if len(o.informative_channels) >= 2)
    om = dataclasses.replace(om, difficulty=0.0, rule="motif_shape", n_classes=3)
    ep = EpisodePrior(cfg, seed=1).generate(om, keep_prototypes=True)
    for c in ep.channels:
        p = ep.prototypes[:, c]
        assert np.abs(p - p[:1]).max() > 1.0  # classes differ on every informative channel


def test_label_counts_dirichlet_every_class_in_context():
    rng = np.random.default_rng(0)
    for _ in range(200):
        K = int(rng.integers(2, 11))
        n_ctx = int(rng.integers(K, 60))
        rho, ctx, q = label_counts(rng, K, n_ctx, 30, alpha=0.5)
        assert np.isclose(rho.sum(), 1) and ctx.min() >= 1 and ctx.sum() == n_ctx and q.sum() == 30
    with pytest.raises(ValueError, match="cannot hold"):
        label_counts(rng, 5, 4, 10, 1.0)


@pytest.mark.parametrize("family", list(BACKGROUND_FAMILIES))
def test_background_families_are_finite_robustly_normalized_and_clipped(family):
    rng = np.random.default_rng(0)
    for C, L in ((1, 16), (4, 100), (10, 300)):
        W = sample_process(rng, family, C, L).realize(rng, 3, clip=5.0)
        assert W.shape == (3, C, L) and np.isfinite(W).all()
        assert np.abs(W).max() <= 5.0
        assert np.abs(np.median(W, axis=-1)).max() < 0.5
        assert W.std(axis=-1).min() > 0.05  # never a dead channel


def test_difficulty_increases_nuisance_distance_to_the_prototype():
    np.random.default_rng(0)
    proto = np.sin(np.linspace(0, 6 * np.pi, 128))[None, None].repeat(200, 0)
    dist = []
    for sev in (0.0, 0.5, 1.0):
        X = apply_nuisance(np.random.default_rng(1), proto, sev, (0,), 2.0)
        dist.append(float(np.mean((X - proto) ** 2)))
    assert dist[0] < dist[1] < dist[2]
    assert dist[0] < 0.1


def test_collate_resamples_like_torch_interpolate_and_rejects_mixed_shapes():
    import torch

    x = np.random.default_rng(0).standard_normal((3, 2, 77))
    ref = torch.nn.functional.interpolate(torch.from_numpy(x), size=512, mode="linear", align_corners=False)
    assert np.allclose(resample_linear(x, 512), ref.numpy(), atol=1e-12)
    prior = EpisodePrior(SMALL, seed=0)
    e1 = prior.sample_episode(n_rows=30, n_context=20, length=64)
    e2 = prior.sample_episode(n_rows=31, n_context=20, length=64)
    with pytest.raises(ValueError, match="share"):
        collate([e1, e2])
    nat = collate([e1], output_length=None)
    assert nat.X.shape[-1] == 64


def test_invalid_config_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown temporal rule"):
        PriorConfig(temporal_rules=("nope",))
    with pytest.raises(ValueError, match="min_classes"):
        PriorConfig(min_classes=1)
    cfg = PriorConfig.from_dict(PriorConfig().to_dict())
    assert cfg == PriorConfig()
