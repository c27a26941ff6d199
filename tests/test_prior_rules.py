"""Each rule family yields separable classes; cross-channel families need the channel relation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from chorustic.prior import ALL_RULES, CROSS_CHANNEL_RULES, TEMPORAL_RULES, EpisodePrior, PriorConfig
from chorustic.prior.rules import DEVIATION_TYPES, correlation_patterns, get_rule


def region_features(ep, channels=None) -> np.ndarray:
    """Simple features of the rule's region: the series minus the episode's shared background (the mean
    over instances), downsampled raw values, per-channel energy and pairwise lagged cross-covariances."""
    ch = list(ep.channels if channels is None else channels)
    a, b = ep.region
    x = ep.X[:, ch, a:b].astype(np.float64)
    x = x - x.mean(axis=0, keepdims=True)
    x = x - x.mean(axis=-1, keepdims=True)
    n = x.shape[-1]
    idx = np.linspace(0, n - 1, min(n, 32)).round().astype(int)
    feats = [x[:, :, idx].reshape(len(x), -1), (x**2).mean(-1)]
    q = max(1, n // 4)
    for i in range(len(ch)):
        for j in range(i + 1, len(ch)):
            for lag in range(-q, q + 1, max(1, q // 16)):
                u = x[:, i, max(0, lag): n + min(0, lag)]
                v = x[:, j, max(0, -lag): n - max(0, lag)]
                feats.append((u * v).mean(-1, keepdims=True))
    return np.concatenate(feats, axis=1)


def cv_accuracy(ep, channels=None) -> float:
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000, C=0.5))
    return float(cross_val_score(clf, region_features(ep, channels), ep.y, cv=4).mean())


def easy_episode(rule: str, seed: int, n_classes: int = 3, length: int = 128, rows: int = 200):
    kind = get_rule(rule).kind
    prior = EpisodePrior(PriorConfig(dirichlet_alpha=1e4), seed=seed)  # near-balanced classes
    omega = prior.sample_omega(rows, rows - 40, length, rule=rule, n_classes=n_classes,
                               n_channels=1 if kind == "temporal" else 3, difficulty=0.0, background="smooth")
    return prior.generate(omega, keep_prototypes=True)


@pytest.mark.parametrize("rule", list(ALL_RULES))
def test_each_rule_family_yields_separable_classes_on_easy_episodes(rule):
    ep = easy_episode(rule, seed=11)
    majority = np.bincount(ep.y).max() / len(ep.y)
    acc = cv_accuracy(ep)
    assert acc >= max(0.75, majority + 0.25), f"{rule}: accuracy {acc:.2f} vs majority {majority:.2f}"


def test_separability_check_is_not_vacuous_shuffled_labels_are_at_chance():
    ep = easy_episode("motif_shape", seed=11)
    ep.y = np.random.default_rng(0).permutation(ep.y)
    majority = np.bincount(ep.y).max() / len(ep.y)
    assert cv_accuracy(ep) <= majority + 0.12


@pytest.mark.parametrize("rule", ["phase", "correlation"])
def test_relation_rules_are_invisible_in_any_single_channel(rule):
    ep = easy_episode(rule, seed=5)
    majority = np.bincount(ep.y).max() / len(ep.y)
    both = cv_accuracy(ep)
    singles = [cv_accuracy(ep, channels=[c]) for c in ep.channels]
    assert both >= majority + 0.3, (both, majority)
    assert max(singles) <= majority + 0.15, (singles, majority)


def test_prototypes_differ_only_inside_the_region_and_informative_channels():
    for rule in ("motif_shape", "polarity", "order", "channel_selection", "channel_motifs"):
        ep = easy_episode(rule, seed=3)
        P = ep.prototypes
        diff = np.abs(P - P[:1]).max(axis=0)  # (C, L)
        a, b = ep.region
        outside_time = np.ones(P.shape[-1], bool)
        outside_time[a:b] = False
        assert diff[:, outside_time].max() < 1e-9, rule
        other = [c for c in range(P.shape[1]) if c not in ep.channels]
        if other:
            assert diff[other].max() < 1e-9, rule
        assert diff[list(ep.channels)][:, a:b].max() > 0.5, rule


def test_rule_capacities_bound_the_number_of_classes():
    prior = EpisodePrior(PriorConfig(), seed=0)
    for rule in CROSS_CHANNEL_RULES:
        cap = get_rule(rule).capacity(2, 128)
        assert cap >= 2
        with pytest.raises(ValueError, match="at most"):
            prior.sample_omega(100, 60, 128, rule=rule, n_channels=2, n_classes=min(cap, 10) + 1
                               if cap < 10 else 11)
    assert len(correlation_patterns(2)) == 3  # independent, positive, negative
    assert get_rule("channel_selection").capacity(2, 128) == 3


def test_temporal_rules_cover_the_paper_families_and_all_deviation_kinds_are_distinct():
    assert set(TEMPORAL_RULES) == {"motif_shape", "polarity", "position", "order", "local_deviation"}
    assert set(CROSS_CHANNEL_RULES) == {"channel_selection", "channel_motifs", "relative_delay", "phase",
                                        "correlation"}
    assert len(set(DEVIATION_TYPES)) == len(DEVIATION_TYPES) >= 10
    # ten classes are possible for every family at a typical multivariate shape
    for name, rule in ALL_RULES.items():
        assert rule.capacity(1 if name in TEMPORAL_RULES else 4, 256) >= 10, name


def test_the_gallery_draws_a_rule_family_with_a_row_per_class(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from PIL import Image

    from chorustic.prior.gallery import plot_rule_family

    path = plot_rule_family("motif_shape", tmp_path / "motif.png", n_classes=2, n_instances=1, length=64)
    with Image.open(path) as im:
        width, height = im.size
    assert path.exists() and width > height > 0  # two rows of two panels, wider than tall
