"""Spread, intervals and honest statistics (issue 73): the bootstrap intervals over datasets, the spread
over context sets, the smallest attainable Holm p and the note it gives, and the companion tables built
from them (chorustic/stats/bootstrap.py, chorustic/stats/wilcoxon.py, chorustic/reports/intervals.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from chorustic.evaluation.metrics import METRICS
from chorustic.reports.accuracies import build_matrices, method_metadata, validate_accuracies
from chorustic.reports.intervals import interval_frame, interval_table, seed_spread_frame
from chorustic.stats import bootstrap_mean_ci, significance_note, smallest_attainable_p
from chorustic.testing.accuracies import SyntheticMethod, synthetic_accuracies

METHODS = (
    SyntheticMethod("chorustic", "ChorusTIC", "Time-series ICL", False, 0.05),
    SyntheticMethod("minirocket", "MiniRocket", "Classical", True, 0.03),
    SyntheticMethod("tabicl", "TabICL", "Generic ICL", False, -0.02),
    SyntheticMethod("tict", "TiCT", "Time-series ICL", False, 0.0, reported=True, archives=("UCR",),
                    protocols=("full",)),
)
UCR = tuple(f"D{i:02d}" for i in range(12))


@pytest.fixture(scope="module")
def results():
    df = validate_accuracies(synthetic_accuracies(methods=METHODS, uea=("BasicMotions", "Epilepsy"), ucr=UCR,
                                                  protocols=("full", "fixed5"), n_seeds=3))
    return df, method_metadata(df), build_matrices(df)


def test_smallest_attainable_p_is_the_exact_tests_smallest_times_the_family():
    for n in range(1, 12):
        one_sided_all = scipy.stats.wilcoxon(np.arange(1, n + 1) / 10, method="exact").pvalue
        assert smallest_attainable_p(n) == pytest.approx(min(1.0, one_sided_all))
    assert smallest_attainable_p(6, 3) == pytest.approx(3 / 32)
    assert smallest_attainable_p(2, 10) == 1.0


def test_the_note_appears_exactly_when_no_comparison_can_be_significant():
    assert significance_note(128, 10, 0.05) is None
    assert significance_note(8, 3, 0.05) is None  # 3 * 2**-7 = 0.023: attainable
    note = significance_note(8, 10, 0.05)  # 10 * 2**-7 = 0.078
    assert note and "8 datasets" in note and "0.0781" in note and "at least 9 datasets" in note
    assert significance_note(4, 1, 0.05).startswith("Not enough datasets")


def test_bootstrap_intervals_are_seeded_paired_and_cover_the_mean():
    rng = np.random.default_rng(0)
    x = rng.random((30, 3))
    low, high = bootstrap_mean_ci(x)
    assert np.all(low < x.mean(0)) and np.all(x.mean(0) < high)
    again = bootstrap_mean_ci(x)
    np.testing.assert_array_equal(low, again[0])
    # the interval of a mean over 30 datasets is about +- 2 standard errors wide
    se = x.std(0, ddof=1) / np.sqrt(30)
    np.testing.assert_allclose(high - low, 2 * 1.96 * se, rtol=0.2)
    # a constant column is its own interval, one dataset has none
    lo, hi = bootstrap_mean_ci(np.c_[x[:, 0], np.full(30, 0.5)])
    assert lo[1] == hi[1] == 0.5
    assert np.isnan(bootstrap_mean_ci(x[:1])[0]).all()
    with pytest.raises(ValueError, match="without missing values"):
        bootstrap_mean_ci(np.array([[0.1], [np.nan]]))


def test_interval_frame_holds_the_tables_numbers(results):
    df, meta, mats = results
    mx = mats[("UCR", "full")]
    fr = interval_frame(mx, meta, "chorustic", ["chorustic", "minirocket", "tabicl", "tict"]).set_index("method")
    comp = mx.complete()
    assert (fr["n_common"] == len(comp)).all()
    np.testing.assert_allclose(fr.loc[comp.columns, "mean"], comp.mean(), rtol=0, atol=1e-15)
    d = comp["chorustic"] - comp["minirocket"]
    assert fr.loc["minirocket", "diff_vs_reference"] == pytest.approx(d.mean())
    assert fr.loc["minirocket", "diff_ci_low"] < d.mean() < fr.loc["minirocket", "diff_ci_high"]
    assert fr.loc["chorustic", "diff_vs_reference"] == 0 and pd.isna(fr.loc["chorustic", "diff_ci_low"])
    assert pd.isna(fr.loc["tict", "seed_sd"])  # reported: no context sets
    assert fr.loc["chorustic", "wins"] is pd.NA or pd.isna(fr.loc["chorustic", "wins"])


def test_seed_spread_is_the_spread_of_the_per_seed_archive_means(results):
    df, meta, mats = results
    mx = mats[("UCR", "fixed5")]
    fr = interval_frame(mx, meta, "chorustic", ["chorustic", "minirocket", "tabicl"]).set_index("method")
    ok = df[(df["protocol"] == "fixed5") & (df["archive"] == "UCR") & (df["method"] == "tabicl")]
    common = mx.common(["chorustic", "minirocket", "tabicl"])
    per_seed = ok[ok["dataset"].isin(common)].groupby("seed")["accuracy"].mean()
    assert len(per_seed) == 3
    assert fr.loc["tabicl", "seed_sd"] == pytest.approx(per_seed.std(ddof=1))
    assert fr.loc["tabicl", "mean"] == pytest.approx(per_seed.mean())
    cells = seed_spread_frame(mx, meta)
    one = ok[ok["dataset"] == "D03"]["accuracy"]
    row = cells[(cells["method"] == "tabicl") & (cells["dataset"] == "D03")].iloc[0]
    assert row["n_context_sets"] == 3 and row["sd"] == pytest.approx(one.std(ddof=1))


def test_lower_is_better_measures_rank_and_count_the_other_way(results):
    _, meta, mats = results
    mx = mats[("UCR", "full")]
    loss = build_matrices(results[0].assign(accuracy=1 - results[0]["accuracy"]))[("UCR", "full")]
    acc = interval_frame(mx, meta, "chorustic", ["chorustic", "minirocket", "tabicl"]).set_index("method")
    ll = interval_frame(loss, meta, "chorustic", ["chorustic", "minirocket", "tabicl"],
                        METRICS["logloss"]).set_index("method")
    np.testing.assert_allclose(acc["avg_rank"], ll["avg_rank"])  # 1 - accuracy as a loss: the same ranks
    assert list(acc["wins"].dropna()) == list(ll["wins"].dropna())


def test_the_companion_table_shows_intervals_spread_and_delta(results):
    from chorustic.reports.render import to_markdown

    df, meta, mats = results
    mxs = [mats[("UCR", "fixed5")]]
    methods = ["chorustic", "minirocket", "tabicl"]
    frames = [interval_frame(mx, meta, "chorustic", methods) for mx in mxs]
    t = interval_table(frames, mxs, meta, "chorustic", "table_intervals_ucr_fixed_shot", "low_label")
    md = to_markdown(t)
    assert "95% CI" in md and "s.d. over seeds (pp)" in md and "\u0394 vs ChorusTIC (pp)" in md
    assert "10,000 resamples, seed 0" in md
    r = frames[0].set_index("method").loc["minirocket"]
    assert f"[{100 * r['ci_low']:.2f}, {100 * r['ci_high']:.2f}]" in md


@pytest.mark.parametrize("n,m", list(itertools.product([5, 7], [2, 4])))
def test_the_note_agrees_with_the_tests_that_can_be_run(n, m):
    """With n datasets all favouring the reference by distinct amounts, the Holm p of the best comparison is
    exactly the smallest attainable one, and it is significant exactly when no note is given."""
    from chorustic.stats import compare_with_reference

    base = np.linspace(0.5, 0.9, n)
    cols = {"ref": base + 0.05}
    for j in range(m):
        cols[f"m{j}"] = base - np.arange(1, n + 1) * 1e-3 * (j + 1)
    out = compare_with_reference(pd.DataFrame(cols), "ref", alpha=0.05)
    assert out["p_holm"].min() == pytest.approx(smallest_attainable_p(n, m))
    assert bool(out["significant"].any()) == (significance_note(n, m, 0.05) is None)
