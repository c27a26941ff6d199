"""The paper's tables: layout, best/second marks, missing cells, LaTeX/Markdown/CSV rendering."""

from __future__ import annotations

import pandas as pd
import pytest

from chorustic.reports.accuracies import build_matrices, method_metadata, validate_accuracies
from chorustic.reports.layout import DEFAULT_ABLATIONS, ordered_methods
from chorustic.reports.render import Cell, Table, mark_best, to_latex, to_markdown, write_table
from chorustic.reports.tables import (
    ablation_table,
    budget_table,
    comparison_frame,
    main_table,
    per_dataset_table,
    stats_table,
)

META = [
    ("chorustic", "ChorusTIC", "Time-series ICL", False, False),
    ("tabicl", "TabICL", "Generic ICL", False, False),
    ("mantisv2_lr", "MantisV2+LR", "Frozen TSFM", True, False),
    ("tict", "TiCT", "Time-series ICL", False, True),
    ("chorustic_no_calibration", "ChorusTIC w/o cal.", "Time-series ICL", False, False),
]


def results(acc: dict[str, dict[str, float]], archive="UEA", protocol="full", seeds=(0,)) -> pd.DataFrame:
    """accuracies.csv rows from {method: {dataset: accuracy or None (failed)}}."""
    meta = {m[0]: m for m in META}
    family = {"full": "full", "fixed5": "fixed_shot", "fixed10": "fixed_shot", "prop20": "proportional"}[
        protocol
    ]
    rows = []
    for m, per in acc.items():
        _, disp, group, fits, rep = meta[m]
        for d, a in per.items():
            for s in seeds:
                rows.append(
                    {
                        "method": m,
                        "display_name": disp,
                        "group": group,
                        "fits_on_target": fits,
                        "reported": rep,
                        "archive": archive,
                        "dataset": d,
                        "protocol": protocol,
                        "family": family,
                        "budget": None if family == "full" else int(protocol.strip("fixedprop")),
                        "seed": s,
                        "status": ("reported" if rep else "ok") if a is not None else "failed",
                        "accuracy": a,
                        "error": "" if a is not None else "boom",
                    }
                )
    return validate_accuracies(pd.DataFrame(rows))


@pytest.fixture
def uea():
    df = results(
        {
            "chorustic": {"D1": 0.90, "D2": 0.80, "D3": 0.70},
            "tabicl": {"D1": 0.90, "D2": 0.60, "D3": None},  # a tie on D1, a failed run on D3
            "mantisv2_lr": {"D1": 0.85, "D2": 0.85, "D3": 0.75},
            "chorustic_no_calibration": {"D1": 0.80, "D2": 0.70, "D3": 0.70},
        }
    )
    return build_matrices(df)[("UEA", "full")], method_metadata(df)


def test_mark_best_and_second_with_ties():
    assert mark_best([0.9, 0.9, 0.8, 0.7]) == ["best", "best", "second", None]
    assert mark_best([3.5, 2.0, 2.0, float("nan")], higher_is_better=False) == [
        "second",
        "best",
        "best",
        None,
    ]
    assert mark_best([0.98004, 0.97996, 0.5], decimals=4) == ["best", "best", "second"]
    assert mark_best([0.5, 0.5]) == ["best", "best"]  # all equal: no second


def test_paper_layout_order(uea):
    _, meta = uea
    order = ordered_methods(["mantisv2_lr", "tabicl", "chorustic"], meta, "main_UEA")
    assert order == ["chorustic", "tabicl", "mantisv2_lr"]  # Table 1: TS-ICL, Generic ICL, Frozen TSFM
    assert ordered_methods(["mantisv2_lr", "tabicl", "chorustic"], meta, "main_UCR") == [
        "mantisv2_lr",
        "tabicl",
        "chorustic",
    ]


def test_main_table_on_common_datasets_with_missing_reported(uea):
    mx, meta = uea
    t = main_table(mx, meta, "chorustic", "table1_uea_main", "main_UEA", exclude=list(DEFAULT_ABLATIONS))
    data = t.data.set_index("method")
    assert "chorustic_no_calibration" not in data.index  # ablation variants only in Table 4
    assert (data["n_common"] == 2).all()  # D3 left out for everyone (tabicl failed there)
    assert data.loc["chorustic", "avg_acc"] == pytest.approx(0.85)
    assert data.loc["mantisv2_lr", "avg_acc"] == pytest.approx(0.85)
    assert data.loc["tabicl", "avg_acc"] == pytest.approx(0.75)
    # ranks: D1 chorustic=tabicl 1.5, mantis 3; D2 mantis 1, chorustic 2, tabicl 3
    assert data.loc["chorustic", "avg_rank"] == pytest.approx(1.75)
    assert (data.loc["tabicl", ["wins", "ties", "losses"]].tolist()) == [1, 1, 0]
    assert data.loc["tabicl", "n_missing_runs"] == 1
    body = {r[1].text: r for r in t.body}
    assert body["ChorusTIC"][3].bold and body["MantisV2+LR"][3].bold  # tied best average accuracy
    assert body["ChorusTIC"][4].bold and body["MantisV2+LR"][4].underline
    assert body["ChorusTIC"][5].text == "\u2014" and body["TabICL"][5].text == "1/1/0"
    assert t.header[-1] == "Missing runs" and body["TabICL"][-1].text == "1"
    assert any(
        "2 datasets on which all 3 methods have a result (of 3 datasets eligible)" in n for n in t.notes
    )
    assert any("missing_runs.csv" in n for n in t.notes)


def test_per_dataset_table_shows_missing_as_dash_and_marks_per_row(uea):
    mx, meta = uea
    t = per_dataset_table(mx, meta, "tableD", "main_UEA", exclude=list(DEFAULT_ABLATIONS))
    rows = {r[0].text: r for r in t.body}
    assert [c.text for c in rows["D3"][1:]] == ["0.7000", "-", "0.7500"]
    assert rows["D1"][1].bold and rows["D1"][2].bold and rows["D1"][3].underline
    assert "Avg. Rank" in rows and t.midrules_before == {3}
    tex = to_latex(t)
    assert "& -- &" in tex and r"\textbf{0.9000}" in tex


def test_ablation_table_deltas(uea):
    mx, meta = uea
    t = ablation_table(mx, meta, "chorustic", DEFAULT_ABLATIONS, "table4")
    d = t.data.set_index("method")
    assert d.loc["chorustic_no_calibration", "delta_acc_pp"] == pytest.approx(-100 * (0.8 - 0.7333333333))
    assert [r[1].text for r in t.body] == ["ChorusTIC", "No task-conditioned calibration"]
    assert t.body[1][0].text == "Architecture" and t.body[1][3].text.startswith("-")
    assert "$-" in to_latex(t)


def test_budget_table_each_budget_on_its_own_common_set():
    df = pd.concat(
        [
            results(
                {"chorustic": {"D1": 0.6, "D2": 0.5}, "tabicl": {"D1": 0.5, "D2": 0.4}},
                protocol="fixed5",
                seeds=(0, 1),
            ),
            results(
                {"chorustic": {"D1": 0.7, "D2": 0.6}, "tabicl": {"D1": 0.6, "D2": None}},
                protocol="fixed10",
                seeds=(0, 1),
            ),
        ]
    )
    mats = build_matrices(df)
    meta = method_metadata(df)
    t = budget_table([mats[("UEA", "fixed5")], mats[("UEA", "fixed10")]], meta, "table3")
    assert t.header == ["Method", "Target fit", "5-shot", "10-shot"]
    by = {r[0].text: [c.text for c in r[2:]] for r in t.body}
    assert by == {"TabICL": ["45.00", "60.00"], "ChorusTIC": ["55.00", "70.00"]}
    assert any("10-shot" in n and "1 datasets" in n for n in t.notes)


def test_stats_table_and_reported_dagger():
    df = results(
        {
            "chorustic": {f"D{i}": 0.9 for i in range(6)},
            "tict": {f"D{i}": 0.5 + 0.01 * i for i in range(6)},
            "tabicl": {f"D{i}": 0.9 if i < 2 else 0.8 for i in range(6)},
        },
        archive="UCR",
    )
    mx, meta = build_matrices(df)[("UCR", "full")], method_metadata(df)
    comp = comparison_frame(mx, meta, "chorustic", 0.05, "main_UCR")
    t = stats_table(comp, mx, meta, "chorustic", 0.05, "table_stats_ucr")
    rows = {r[0].text: r for r in t.body}
    assert rows["TiCT"][0].dagger and "$^{\\dagger}$" in to_latex(t) and "TiCT†" in to_markdown(t)
    assert rows["TiCT"][1].text == "6/0/0" and rows["TiCT"][2].text == "6"
    assert rows["TiCT"][4].text == f"{2 / 64:.2e}"  # exact p of 6 wins
    assert rows["TabICL"][1].text == "4/2/0" and rows["TabICL"][2].text == "4"
    assert any("family of 2 comparisons" in n for n in t.notes)
    assert any("reported, not reproduced" in n for n in t.notes)


def test_render_four_formats(tmp_path):
    t = Table(
        name="t",
        caption="A & B: 50% of x_y",
        header=["Method", "Acc. (%)"],
        align="lr",
        body=[
            [Cell("M_1"), Cell("72.27", bold=True)],
            [Cell("M2", dagger=True), Cell("70.50", underline=True)],
        ],
        data=pd.DataFrame({"method": ["M_1", "M2"], "acc": [0.72266666666, 0.705]}),
        midrules_before={1},
        notes=["\u2020 reported"],
    )
    paths = write_table(t, tmp_path)
    assert [p.suffix for p in paths] == [".tex", ".md", ".csv", ".html"]
    tex = paths[0].read_text()
    for needle in (
        r"\toprule",
        r"\midrule",
        r"\bottomrule",
        r"A \& B: 50\% of x\_y",
        r"M\_1",
        r"\textbf{72.27}",
        r"\underline{70.50}",
        r"M2$^{\dagger}$",
        r"$^{\dagger}$ reported",
    ):
        assert needle in tex, needle
    assert tex.count(r"\midrule") == 2
    md = paths[1].read_text()
    assert "| M_1 | **72.27** |" in md and "| M2† | <u>70.50</u> |" in md
    assert "0.7226666667" in paths[2].read_text()  # full precision, not the rounded text
    html = paths[3].read_text()  # what `snakemake --report` shows: caption, table, notes, self-contained
    assert html.startswith("<!DOCTYPE html>") and "<title>A &amp; B: 50% of x_y</title>" in html
    assert "<strong>72.27</strong>" in html and "<u>70.50</u>" in html and "<li>† reported</li>" in html
    with pytest.raises(ValueError, match="columns"):
        Table(name="x", caption="", header=["a"], align="ll", body=[], data=pd.DataFrame())


def test_every_report_file_gets_its_section_and_caption():
    from types import SimpleNamespace

    from chorustic.reports.catalog import OVERVIEW, category, describe, labels, subcategory

    main = describe("tables", "table1_ucr_full")
    assert main["category"] == "UCR" and main["subcategory"] == "1. Full context" and "Tables 1-2" in main["what"]
    w = SimpleNamespace(name="cd_balacc_uea")
    assert (category("figures", w), subcategory("figures", w)) == ("UEA", "6. Spread, intervals, measures")
    assert labels("figures", w) == {"Result": describe("figures", "cd_balacc_uea")["what"]}  # one label
    other = describe("tables", "something_new")
    assert other == {"category": OVERVIEW, "subcategory": "Other", "what": "something_new"}
