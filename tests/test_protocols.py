"""Protocols (paper Sec. 4.1, App. C.1): full, fixed-shot with eligibility, proportional; context files."""

import numpy as np
import pytest

from chorustic.protocols import (
    DEFAULT_PROTOCOLS,
    Ineligible,
    build_contexts,
    context_specs,
    fixed_shot_context,
    full_context,
    parse_protocol_id,
    parse_protocol_label,
    proportional_context,
    protocol_id,
    protocol_label,
    protocol_sort_key,
    read_contexts,
    write_contexts,
)
from chorustic.protocols.proportional import per_class_budget


@pytest.fixture
def y_imbalanced():
    # class 0: 40 examples, class 1: 12, class 2: 7 (ineligible at k=10), class 3: 1
    y = np.repeat([0, 1, 2, 3], [40, 12, 7, 1])
    return np.random.default_rng(0).permutation(y)


def test_full_context_is_whole_training_split_in_order(y_imbalanced):
    assert full_context(y_imbalanced).tolist() == list(range(len(y_imbalanced)))


def test_fixed_shot_takes_k_per_class_without_replacement():
    y = np.repeat([0, 1, 2], [30, 11, 10])
    idx = fixed_shot_context(y, 10, seed=3)
    assert len(idx) == 30 and len(set(idx.tolist())) == 30
    assert np.bincount(y[idx]).tolist() == [10, 10, 10]
    assert np.all(np.diff(idx) > 0)


def test_fixed_shot_is_excluded_when_any_class_has_fewer_than_k(y_imbalanced):
    with pytest.raises(Ineligible, match=r"fewer than 5 .*class 3: 1"):
        fixed_shot_context(y_imbalanced, 5, seed=0)


def test_fixed_shot_seeds_give_different_but_reproducible_sets():
    y = np.repeat([0, 1], [50, 50])
    a0, a0_again, a1 = fixed_shot_context(y, 5, 0), fixed_shot_context(y, 5, 0), fixed_shot_context(y, 5, 1)
    assert a0.tolist() == a0_again.tolist()
    assert a0.tolist() != a1.tolist()


def test_proportional_is_stratified_and_keeps_every_class(y_imbalanced):
    for pct in (20, 30, 40, 50, 60):
        idx = proportional_context(y_imbalanced, pct, seed=0)
        counts = np.bincount(y_imbalanced[idx], minlength=4)
        assert counts.tolist() == [per_class_budget(n, pct) for n in (40, 12, 7, 1)]
        assert counts.min() >= 1
        assert abs(len(idx) - pct / 100 * len(y_imbalanced)) <= 4  # within one example per class


def test_proportional_budget_rounds_half_up_and_keeps_one():
    assert per_class_budget(1, 20) == 1
    assert per_class_budget(5, 30) == 2  # 1.5 -> 2
    assert per_class_budget(10, 25) == 3  # 2.5 -> 3
    assert per_class_budget(40, 20) == 8


def test_protocol_ids_round_trip():
    for family, budget in (("full", None), ("fixed_shot", 5), ("fixed_shot", 10), ("proportional", 60)):
        assert parse_protocol_id(protocol_id(family, budget)) == (family, budget)
    with pytest.raises(ValueError):
        parse_protocol_id("fixedfive")


def test_default_protocols_are_the_papers():
    keys = [s.key for s in context_specs(DEFAULT_PROTOCOLS)]
    assert keys[0] == "full/0"
    assert [k for k in keys if k.startswith("fixed5/")] == [f"fixed5/{s}" for s in range(5)]
    assert [k for k in keys if k.startswith("fixed10/")] == [f"fixed10/{s}" for s in range(5)]
    assert [k for k in keys if k.startswith("prop")] == [f"prop{p}/0" for p in (20, 30, 40, 50, 60)]
    assert len(keys) == 16


def test_context_file_round_trip_and_ineligible_entries(tmp_path, y_imbalanced):
    doc = build_contexts(y_imbalanced, dataset="Toy", archive="UCR")
    path = tmp_path / "contexts" / "Toy.json"
    write_contexts(path, doc)
    back = read_contexts(path, y_imbalanced)
    by_key = {(c["protocol"], c["seed"]): c for c in back["contexts"]}
    assert by_key[("full", 0)]["n_context"] == len(y_imbalanced)
    assert by_key[("fixed5", 2)]["status"] == "ineligible" and by_key[("fixed5", 2)]["indices"] is None
    assert by_key[("prop20", 0)]["status"] == "ok"
    # the same labels always give the same file content
    assert build_contexts(y_imbalanced, dataset="Toy", archive="UCR") == doc


def test_context_file_rejects_other_labels(tmp_path, y_imbalanced):
    path = tmp_path / "Toy.json"
    write_contexts(path, build_contexts(y_imbalanced, dataset="Toy", archive="UCR"))
    with pytest.raises(ValueError, match="different training labels"):
        read_contexts(path, y_imbalanced[::-1])


def test_any_level_has_one_id_one_order_and_one_label():
    """Ids, their report order and their labels come from chorustic.protocols for any k or percentage."""
    ids = ["prop10", "fixed10", "full", "fixed1", "prop60", "not-a-protocol", "fixed5"]
    assert sorted(ids, key=protocol_sort_key) == [
        "full", "fixed1", "fixed5", "fixed10", "prop10", "prop60", "not-a-protocol"
    ]
    for p, label in (("full", "full"), ("fixed1", "1-shot"), ("fixed10", "10-shot"), ("prop10", "10%")):
        assert protocol_label(*parse_protocol_id(p)) == label and parse_protocol_label(label) == p


def test_a_new_level_flows_through_config_aggregation_and_reports(tmp_path):
    """`shots: [1]` and `percents: [10]` in the config: valid for a method run's `protocols`, ordered in
    the aggregated table, one matrix and one table column each in the reports (the workflow run of
    tests/test_workflow_dag.py does the same through snakemake)."""
    from chorustic import config as cc
    from chorustic.evaluation.aggregate import aggregate_manifests
    from chorustic.evaluation.job import MANIFEST_FORMAT, run_record
    from chorustic.reports.accuracies import build_matrices, validate_accuracies
    from chorustic.testing.accuracies import synthetic_accuracies

    protocols = {"full": True, "fixed_shot": {"shots": [1, 5], "seeds": [0]},
                 "proportional": {"percents": [10], "seeds": [0]}}
    cfg = cc.load_config(overrides={"protocols": protocols, "evaluate": ["minirocket"],
                                    "methods": {"minirocket": {"plugin": "minirocket",
                                                               "protocols": ["fixed1", "prop10"]}},
                                    "reports": {"reference_method": "minirocket"}})
    assert [s.protocol for s in context_specs(cfg["protocols"])] == ["full", "fixed1", "fixed5", "prop10"]
    with pytest.raises(cc.ConfigError, match="fixed2"):
        cc.validate_config({**cfg, "methods": {"minirocket": {"plugin": "minirocket", "protocols": ["fixed2"]}}})

    manifest = {"format": MANIFEST_FORMAT, "method": "m", "dataset": "GunPoint", "archive": "UCR",
                "runs": [run_record(s, status="ok", accuracy=0.5) for s in reversed(context_specs(protocols))]}
    (tmp_path / "m.json").write_text(__import__("json").dumps(manifest))
    assert list(aggregate_manifests([tmp_path / "m.json"]).protocol) == ["full", "fixed1", "fixed5", "prop10"]

    df = validate_accuracies(synthetic_accuracies(protocols=("full", "fixed1", "prop10", "prop60"), n_seeds=2))
    assert [p for a, p in build_matrices(df) if a == "UCR"] == ["full", "fixed1", "prop10", "prop60"]
