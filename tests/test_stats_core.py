"""Hand-checked cases of the statistics of paper App. C.5 (chorustic.stats)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from chorustic.stats import (
    average_accuracy,
    average_rank,
    average_rank_range,
    common_datasets,
    compare_with_reference,
    holm_correction,
    per_dataset_ranks,
    relative_gain,
    wilcoxon_signed_rank,
    win_tie_loss,
    win_tie_loss_range,
)
from chorustic.stats import wilcoxon as wilcoxon_module
from chorustic.stats.win_tie_loss import WinTieLoss


def frame(rows: dict[str, list[float]], methods: list[str]) -> pd.DataFrame:
    return pd.DataFrame.from_dict(rows, orient="index", columns=methods)


# ---------------------------------------------------------------- average accuracy / common set
def test_average_is_unweighted_mean_over_datasets():
    m = frame({"d1": [0.5, 1.0], "d2": [1.0, 0.0], "d3": [0.6, 0.5]}, ["A", "B"])
    avg = average_accuracy(m)
    assert avg["A"] == pytest.approx((0.5 + 1.0 + 0.6) / 3)
    assert avg["B"] == pytest.approx(0.5)


def test_missing_result_is_refused_not_dropped():
    m = frame({"d1": [0.5, 0.7], "d2": [np.nan, 0.4], "d3": [0.6, 0.5]}, ["A", "B"])
    with pytest.raises(ValueError, match="missing value.*d2:A"):
        average_accuracy(m)
    with pytest.raises(ValueError, match="missing"):
        average_rank(m)
    assert list(common_datasets(m)) == ["d1", "d3"]
    assert average_accuracy(m.loc[common_datasets(m)])["B"] == pytest.approx(0.6)


def test_accuracies_must_be_fractions():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        average_accuracy(frame({"d1": [72.3, 65.0]}, ["A", "B"]))


# ---------------------------------------------------------------- ranks
def test_ranks_ties_get_their_average_rank():
    m = frame({"d1": [0.9, 0.9, 0.8], "d2": [0.7, 0.8, 0.9], "d3": [0.5, 0.5, 0.5]}, ["A", "B", "C"])
    r = per_dataset_ranks(m)
    assert r.loc["d1"].tolist() == [1.5, 1.5, 3.0]
    assert r.loc["d2"].tolist() == [3.0, 2.0, 1.0]
    assert r.loc["d3"].tolist() == [2.0, 2.0, 2.0]  # all equal: everyone gets (1+2+3)/3
    assert average_rank(m).tolist() == pytest.approx([6.5 / 3, 5.5 / 3, 2.0])
    # rank sums are preserved: mean rank over methods is (M+1)/2
    assert average_rank(m).mean() == pytest.approx(2.0)


def test_floating_point_noise_does_not_break_a_tie():
    a = np.mean([0.1, 0.2, 0.3])  # 0.20000000000000004 vs 0.2
    m = frame({"d1": [a, 0.2]}, ["A", "B"])
    assert a != 0.2
    assert per_dataset_ranks(m).loc["d1"].tolist() == [1.5, 1.5]
    assert win_tie_loss([a], [0.2]) == WinTieLoss(0, 1, 0)


def test_one_dataset():
    m = frame({"d1": [0.8, 0.6, 0.7]}, ["A", "B", "C"])
    assert average_rank(m).tolist() == [1.0, 3.0, 2.0]
    assert average_accuracy(m).tolist() == pytest.approx([0.8, 0.6, 0.7])


def test_rank_range_of_a_rounded_table():
    # A and B print equal; in full precision either may be ahead
    m = frame({"d1": [0.98, 0.98, 0.97], "d2": [0.5, 0.6, 0.7]}, ["A", "B", "C"])
    rr = average_rank_range(m, decimals=2)
    assert rr.loc["A"].tolist() == pytest.approx([(1 + 3) / 2, (2 + 3) / 2, (1.5 + 3) / 2])
    assert rr.loc["C"].tolist() == pytest.approx([2.0, 2.0, 2.0])


# ---------------------------------------------------------------- win / tie / loss
def test_win_tie_loss_from_the_reference_perspective():
    ref = [0.9, 0.8, 0.7, 0.7]
    other = [0.8, 0.8, 0.9, 0.6]
    assert win_tie_loss(ref, other) == WinTieLoss(2, 1, 1)
    assert str(win_tie_loss(ref, other)) == "2/1/1"


def test_win_tie_loss_all_equal_columns():
    assert win_tie_loss([0.5] * 4, [0.5] * 4) == WinTieLoss(0, 4, 0)


def test_win_tie_loss_range_and_reachability():
    rounded, extreme = win_tie_loss_range([0.98001, 0.5], [0.97996, 0.6], decimals=4)
    assert rounded == WinTieLoss(0, 1, 1) and extreme == WinTieLoss(1, 0, 1)
    assert WinTieLoss(1, 0, 1).reachable_from(rounded)
    assert not WinTieLoss(0, 2, 0).reachable_from(rounded)  # a visible loss cannot become a tie


# ---------------------------------------------------------------- relative gain
def test_relative_gain_uses_unrounded_averages():
    assert relative_gain(0.7226667, 0.7050367) == pytest.approx((0.7226667 - 0.7050367) / 0.7050367)
    assert math.isnan(relative_gain(float("nan"), 0.5))
    with pytest.raises(ValueError):
        relative_gain(0.5, 0.0)


# ---------------------------------------------------------------- Wilcoxon
def test_wilcoxon_drops_zero_differences_hand_checked():
    # d = x - y = [0.1, 0.2, -0.3, 0.4, 0]: zero dropped, n_eff = 4, ranks of |d| = 1, 2, 3, 4
    x = np.array([0.6, 0.7, 0.2, 0.9, 0.5])
    y = np.array([0.5, 0.5, 0.5, 0.5, 0.5])
    r = wilcoxon_signed_rank(x, y)
    assert (r.n, r.n_zero, r.n_eff) == (5, 1, 4)
    assert (r.w_plus, r.w_minus, r.statistic) == (7.0, 3.0, 3.0)
    # exact null of W+ for n = 4 (16 sign patterns): P(W+ <= 3) = #{0, 1, 2, 3, 3 (=1+2)} / 16 = 5/16
    assert r.p_value == pytest.approx(2 * 5 / 16)
    assert r.method == "exact" and not r.p_is_bound
    ref = scipy.stats.wilcoxon(x, y, zero_method="wilcox", method="exact")
    assert r.p_value == pytest.approx(ref.pvalue)


def test_wilcoxon_is_symmetric_in_its_arguments():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=15), rng.uniform(size=15)
    a, b = wilcoxon_signed_rank(x, y), wilcoxon_signed_rank(y, x)
    assert a.p_value == pytest.approx(b.p_value)
    assert (a.w_plus, a.w_minus) == (b.w_minus, b.w_plus)


def test_wilcoxon_all_equal_columns_has_no_evidence():
    r = wilcoxon_signed_rank([0.5, 0.7, 0.9], [0.5, 0.7, 0.9])
    assert r.n_eff == 0 and r.p_value == 1.0 and "no nonzero difference" in r.note


def test_wilcoxon_one_dataset():
    r = wilcoxon_signed_rank([0.9], [0.8])
    assert r.n_eff == 1 and r.statistic == 0.0 and r.p_value == 1.0  # 2 * P(W+ <= 0) = 2 * 1/2


def test_wilcoxon_tiny_p_is_not_lost_to_cancellation():
    # 127 nonzero differences, W = 125 (the paper's UCR-128 ChorusTIC vs NuTime+RF situation): scipy evaluates
    # the upper tail as 1 - cdf and returns 0 when the large rank sum is positive; we orient the differences
    d = np.arange(1, 128) / 1000.0
    d[[0, 1, 2, 3, 4, 110]] *= -1  # ranks 1..5 and 111 negative: W- = 15 + 111 = 126
    r = wilcoxon_signed_rank(d, np.zeros_like(d))
    assert r.statistic == 126.0
    assert 0 < r.p_value < 1e-29 and not r.p_is_bound
    assert scipy.stats.wilcoxon(d, method="exact").pvalue == 0.0  # the failure mode being avoided
    assert r.p_value == pytest.approx(scipy.stats.wilcoxon(-d, method="exact").pvalue)


def test_wilcoxon_underflow_is_reported_as_a_bound(monkeypatch):
    class Res:
        statistic = 0.0
        pvalue = 0.0

    monkeypatch.setattr(wilcoxon_module.scipy.stats, "wilcoxon", lambda *a, **k: Res())
    r = wilcoxon_signed_rank([0.9, 0.8, 0.7], [0.1, 0.1, 0.1])
    assert r.p_is_bound and r.p_value == wilcoxon_module.P_UNDERFLOW_BOUND > 0
    assert r.format_p().startswith("< ") and "underflow" in r.note


def test_wilcoxon_refuses_missing_values():
    with pytest.raises(ValueError, match="missing"):
        wilcoxon_signed_rank([0.5, np.nan], [0.4, 0.3])


# ---------------------------------------------------------------- Holm
def test_holm_hand_checked():
    h = holm_correction([0.01, 0.04, 0.03], alpha=0.05)
    # sorted: 0.01*3 = 0.03; 0.03*2 = 0.06; max(0.06, 0.04*1) = 0.06
    assert h.adjusted.tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert h.reject.tolist() == [True, False, False]


def test_holm_leaves_the_garbage_collector_as_it_found_it():
    """The objects frozen while statsmodels collects garbage are unfrozen afterwards, on an error too."""
    import gc

    holm_correction([0.01, 0.04])
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    with pytest.raises(ValueError):
        holm_correction([0.5, float("nan")])
    assert gc.get_freeze_count() == 0


def test_holm_propagates_bounds():
    h = holm_correction([1e-300, 0.2, 0.5], is_bound=[True, False, False])
    assert h.is_bound.tolist() == [True, True, True]
    h = holm_correction([0.3, 0.2, 1e-300], is_bound=[False, False, True])
    assert h.is_bound.tolist() == [True, True, True]
    h = holm_correction([0.01, 0.2], is_bound=[False, False])
    assert not h.is_bound.any()


# ---------------------------------------------------------------- the comparison table
def test_compare_with_reference_family():
    m = frame({f"d{i}": [0.9, 0.5, 0.9 - 0.01 * i] for i in range(8)}, ["ref", "weak", "close"])
    m.loc["d0", "close"] = 0.9  # one tie with the reference
    c = compare_with_reference(m, "ref").set_index("method")
    assert (c.loc["weak", ["wins", "ties", "losses", "n_eff"]].tolist()) == [8, 0, 0, 8]
    assert (c.loc["close", ["wins", "ties", "losses", "n_eff"]].tolist()) == [7, 1, 0, 7]
    assert c.loc["weak", "p_raw"] == pytest.approx(2 / 2**8)
    assert c.loc["weak", "p_holm"] == pytest.approx(min(1, 2 * c[["p_raw"]].min().iloc[0]))  # smallest p x 2
    assert c.loc["weak", "relative_gain_pct"] == pytest.approx(100 * (0.9 - 0.5) / 0.5)
    assert bool(c.loc["weak", "significant"])


def test_compare_with_reference_all_equal():
    m = frame({f"d{i}": [0.7, 0.7] for i in range(5)}, ["ref", "same"])
    c = compare_with_reference(m, "ref").iloc[0]
    assert (c["wins"], c["ties"], c["losses"], c["n_eff"], c["p_raw"], c["p_holm"]) == (0, 5, 0, 0, 1.0, 1.0)
    assert not c["significant"]


def test_compare_with_reference_unknown_reference():
    with pytest.raises(KeyError, match="reference method"):
        compare_with_reference(frame({"d1": [0.5, 0.6]}, ["A", "B"]), "C")
