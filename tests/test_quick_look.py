"""chorustic.reports.quick_look and benchmarks/quick_look.py: the quick-look selection predicts archive means."""

from __future__ import annotations

import pytest

from chorustic.reports import quick_look as ql


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("quick_look")


@pytest.fixture(scope="module")
def selection():
    return ql.read_selection()


@pytest.mark.parametrize("archive", ql.ARCHIVES)
def test_a_held_out_paper_method_is_predicted_within_the_stated_error(archive, selection):
    """Each paper method, left out of the reference methods, predicted from its own accuracies on the
    selection: within 3 e of its true archive mean every time, within e (an RMS: about two thirds of the
    time) for at least half of them."""
    table = ql.reference_table(archive)
    truth = table.mean(axis=0)
    within = 0
    for method in table.columns:
        others = [m for m in table.columns if m != method]
        acc = table.loc[list(selection[archive]), method].to_dict()
        p = ql.predict_archive_mean(acc, archive, reference_methods=others)
        assert p.n_datasets == p.n_selection == len(selection[archive])
        assert p.error_on_datasets == pytest.approx(ql.lomo_rms(archive, selection[archive], others))
        # the stated error is the honest one: at least the nested validation's RMS
        assert p.error == max(p.error_on_datasets, p.nested_error) == pytest.approx(ql.nested_rms(archive))
        assert abs(p.mean - truth[method]) <= 3 * p.error, method
        within += abs(p.mean - truth[method]) <= p.error
    assert within >= len(table.columns) / 2


def test_the_whole_table_of_a_method_uses_only_the_selection_and_says_so(selection):
    table = ql.reference_table("UCR")
    p = ql.predict_archive_mean(table["ChorusTIC"].to_dict(), "UCR-128")
    assert p.datasets == selection["UCR"] and not p.missing
    assert p.mean == pytest.approx(p.subset_mean + p.offset)
    assert p.text == (f"predicted UCR-128 mean {100 * p.mean:.1f} % ± {100 * p.error:.1f} pp "
                      f"(from {len(selection['UCR'])} datasets)")
    assert str(p) == p.text


def test_a_partial_selection_gives_a_prediction_on_fewer_datasets_with_its_own_error(selection):
    table = ql.reference_table("UEA")
    part = selection["UEA"][:3]
    acc = {n: float(table.loc[n, "ChorusTIC"]) for n in part}
    acc["NotADatasetOfTheSelection"] = 0.5  # ignored
    p = ql.predict_archive_mean(acc, "UEA")
    full = ql.predict_archive_mean(table["ChorusTIC"].to_dict(), "UEA")
    assert p.n_datasets == 3 < full.n_datasets == p.n_selection
    assert p.datasets == part and p.missing == selection["UEA"][3:]
    assert p.error_on_datasets == pytest.approx(ql.lomo_rms("UEA", part))
    assert p.error_on_datasets != pytest.approx(full.error_on_datasets)
    assert p.error == max(p.error_on_datasets, ql.nested_rms("UEA"))
    assert f"(from 3 of {p.n_selection} datasets)" in p.text


def test_no_dataset_of_the_selection_is_a_clear_error():
    ucr_only = {n: 0.9 for n in ql.reference_table("UCR").index}
    with pytest.raises(ValueError, match=r"none of the .* UEA-30 datasets .*config/quick_look\.yaml"):
        ql.predict_archive_mean(ucr_only, "UEA")
    with pytest.raises(ValueError, match="config/quick_look.yaml"):
        ql.predict_archive_mean({}, "UCR")


def test_accuracies_must_be_fractions(selection):
    name = selection["UCR"][0]
    with pytest.raises(ValueError, match=r"fractions in \[0, 1\].*" + name):
        ql.predict_archive_mean({name: 81.2}, "UCR")
    with pytest.raises(ValueError, match="unknown archive"):
        ql.predict_archive_mean({name: 0.8}, "UCR2018x")


def test_the_yaml_is_the_scripts_deterministic_choice(bench, selection):
    """config/quick_look.yaml holds what the script's search chooses (in its order), within its cost budget."""
    for archive in ql.ARCHIVES:
        chosen = bench.choose(archive)
        assert chosen == selection[archive] == bench.choose(archive)
        assert len(chosen) == bench.SIZES[archive]
        assert bench.cost_fraction(archive, chosen) <= bench.MAX_COST_FRACTION


def test_the_selection_file_loads_as_a_config_overlay(selection):
    from chorustic import config as cc

    cfg = cc.load_config([ql.SELECTION_FILE])
    assert sorted(cc.dataset_names(cfg)) == sorted(selection["UCR"] + selection["UEA"])


def test_a_small_search_respects_its_budget_and_breaks_ties_the_same_way():
    small = ql.choose_selection("UCR", 3, max_cost_fraction=0.01, tolerance=0.001)
    assert len(set(small)) == 3
    cost = ql.dataset_costs(ql.reference_table("UCR").index)
    assert cost[list(small)].sum() <= 0.01 * cost.sum()
    assert ql.choose_selection("UCR", 3, max_cost_fraction=0.01, tolerance=0.001) == small
    with pytest.raises(ValueError, match="fit within"):
        ql.choose_selection("UEA", 8, max_cost_fraction=1e-6)


def test_the_nested_validation_never_lets_the_held_out_method_choose():
    nested = ql.nested_lomo("UEA", 4, max_cost_fraction=0.1, tolerance=0.001)
    table = ql.reference_table("UEA")
    assert list(nested.index) == list(table.columns)
    others = [m for m in table.columns if m != "ChorusTIC"]
    assert nested.loc["ChorusTIC", "selection"] == ql.choose_selection(
        "UEA", 4, methods=others, max_cost_fraction=0.1, tolerance=0.001)
    assert nested["error"].to_numpy() == pytest.approx((nested["predicted"] - nested["true"]).to_numpy())


def test_archive_means_are_the_plain_column_means():
    means = ql.archive_means("UCR")
    assert len(ql.reference_table("UCR")) == 128 and len(ql.reference_table("UEA")) == 30
    assert round(means["ChorusTIC"] * 100, 2) == 81.16
