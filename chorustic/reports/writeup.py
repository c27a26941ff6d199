"""The reproduction report (Markdown + CSV) from the frames of :mod:`chorustic.reports.reproduction`."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from chorustic.io import atomic_write_text
from chorustic.reports.paper import PaperReference
from chorustic.stats.wilcoxon import format_p

__all__ = ["reproduction_markdown", "write_reproduction", "reference_markdown", "write_reference_comparison"]


def _f(v, digits=2, signed=False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "-"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def _p(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format_p(float(v))


def _table(headers: list[str], rows: list[list[str]]) -> str:
    out = "| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
    return out + "".join("| " + " | ".join(str(c) for c in r) + " |\n" for r in rows)


def reproduction_markdown(
    check: dict[str, pd.DataFrame],
    comparison: dict[str, pd.DataFrame],
    ref: PaperReference,
    threshold_pp: float,
) -> str:
    """``reproduction.md``: the paper-table self-check (section 1) and these results against the paper
    (section 2), one function per part."""
    L = _header(ref)
    for part in (_verdict, _averages, _ranks, _wtl, _wilcoxon, _significance, _gains):
        L += part(check)
    L += ["## 2. These results against the paper", ""]
    L += _headline(comparison)
    L += _per_method(comparison, threshold_pp)
    return "\n".join(L)


def _header(ref: PaperReference) -> list[str]:
    L = [
        "# Reproduction check against the paper",
        "",
        f"Reference numbers: `{ref.directory}` (the paper's per-dataset tables, printed averages, ranks, W/T/L, "
        "Wilcoxon values, significance statements and relative gains).",
        "",
    ]
    if ref.missing_files:
        L += [f"Missing reference files (their checks are skipped): {', '.join(ref.missing_files)}.", ""]
    return L + [
        "## 1. The paper's own per-dataset tables through this harness's statistics",
        "",
        "The per-dataset tables are printed with four decimals, so accuracies that differ in full precision can "
        "print equal. Such rounding ties can make a printed rank or W/T/L unreachable from the table; the check "
        "then shows both values and verifies that the printed one lies in the range that resolving the ties "
        "allows (otherwise the paper would be inconsistent).",
        "",
    ]


def _verdict(check: dict[str, pd.DataFrame]) -> list[str]:
    v = check.get("verdict", pd.DataFrame())
    if not len(v):
        return []
    return [
        _table(
            ["Check", "Passed", "Detail"],
            [[r.check, "yes" if r.passed else "**NO**", r.detail] for r in v.itertuples()],
        )
    ]


def _averages(check: dict[str, pd.DataFrame]) -> list[str]:
    av = check.get("averages", pd.DataFrame())
    if not len(av):
        return []
    rows = [
        [r.archive, r.method, _f(r.computed_pct, 4), _f(r.printed_pct), _f(r.diff_pp, 4, True), r.status]
        for r in av.itertuples()
    ]
    return [
        "### Average accuracy (%)",
        "",
        _table(["Archive", "Method", "Computed", "Printed", "Diff (pp)", "Status"], rows),
    ]


def _ranks(check: dict[str, pd.DataFrame]) -> list[str]:
    rk = check.get("ranks", pd.DataFrame())
    if not len(rk):
        return []
    rows = [
        [
            r.archive,
            r.method,
            _f(r.computed, 3),
            _f(r.printed),
            f"[{r.reachable_low:.3f}, {r.reachable_high:.3f}]",
            r.status,
        ]
        for r in rk.itertuples()
    ]
    headers = ["Archive", "Method", "Computed", "Printed", "Reachable range", "Status"]
    return ["### Average rank", "", _table(headers, rows)]


def _wtl(check: dict[str, pd.DataFrame]) -> list[str]:
    wt = check.get("wtl", pd.DataFrame())
    if not len(wt):
        return []
    rows = [[r.archive, r.method, r.computed, r.printed or "-", r.status] for r in wt.itertuples()]
    return [
        "### W/T/L (ChorusTIC's perspective)",
        "",
        _table(["Archive", "Method", "Computed", "Printed", "Status"], rows),
    ]


def _wilcoxon(check: dict[str, pd.DataFrame]) -> list[str]:
    wl = check.get("wilcoxon", pd.DataFrame())
    if not len(wl):
        return []
    headers = [
        "Archive",
        "Method",
        "W/T/L",
        "n_eff",
        "W",
        "raw p",
        "Holm p",
        "raw p (printed W/T/L imposed)",
        "Holm p (printed W/T/L imposed)",
        "printed raw p",
        "printed Holm p",
        "Status",
    ]
    rows = [
        [
            r.archive,
            r.method,
            r.computed_wtl
            + (f" (printed {r.printed_wtl})" if r.printed_wtl and r.printed_wtl != r.computed_wtl else ""),
            r.n_eff,
            f"{r.W:g}",
            _p(r.p_raw),
            _p(r.p_holm),
            _p(r.p_raw_printed_wtl),
            _p(r.p_holm_printed_wtl),
            _p(r.printed_p_raw),
            _p(r.printed_p_holm),
            r.status,
        ]
        for r in wl.itertuples()
    ]
    return [
        "### Wilcoxon signed-rank (exact, two-sided) and Holm",
        "",
        '"printed W/T/L imposed": the test recomputed with the table\'s rounding ties resolved into the wins '
        "and losses the paper prints (the resolved differences get the smallest magnitudes).",
        "",
        _table(headers, rows),
    ]


def _significance(check: dict[str, pd.DataFrame]) -> list[str]:
    sg = check.get("significance", pd.DataFrame())
    if not len(sg):
        return []
    rows = [
        [
            r.archive,
            r.method,
            "yes" if r.computed_significant else "no",
            "yes" if r.printed_significant else "no",
            _p(r.p_holm),
            r.status,
        ]
        for r in sg.itertuples()
    ]
    headers = ["Archive", "Method", "Computed", "Paper", "Holm p", "Status"]
    return ["### Significant after Holm (alpha = 0.05)", "", _table(headers, rows)]


def _gains(check: dict[str, pd.DataFrame]) -> list[str]:
    gn = check.get("gains", pd.DataFrame())
    if not len(gn):
        return []
    headers = [
        "Archive",
        "Protocol",
        "Method",
        "Baseline",
        "From unrounded averages",
        "From printed averages",
        "Printed",
        "Status",
    ]
    rows = [
        [
            r.archive,
            r.protocol,
            r.method,
            r.baseline,
            _f(r.from_unrounded_pct),
            _f(r.from_printed_averages_pct),
            _f(r.printed_pct),
            r.status,
        ]
        for r in gn.itertuples()
    ]
    return [
        "### Relative gains quoted in the text (%)",
        "",
        "The paper defines the gain from unrounded averages; where only the printed averages give the "
        "quoted value, the status says so.",
        "",
        _table(headers, rows),
    ]


def _headline(comparison: dict[str, pd.DataFrame]) -> list[str]:
    hd = comparison.get("headline", pd.DataFrame())
    if not len(hd):
        return ["No method of these results matches a headline number of the paper.", ""]
    headers = [
        "Table",
        "Archive",
        "Protocol",
        "Method",
        "Ours",
        "Our datasets",
        "Paper, same datasets",
        "Diff (pp)",
        "Paper, printed",
        "Paper datasets",
    ]
    rows = [
        [
            r.table,
            r.archive,
            r.protocol,
            r.display_name + (" \u2020" if r.reported else ""),
            _f(r.ours_pct),
            r.ours_n_datasets,
            _f(r.paper_same_datasets_pct),
            _f(r.diff_same_datasets_pp, 2, True),
            _f(r.paper_printed_pct),
            "-" if pd.isna(r.paper_n_datasets) else int(r.paper_n_datasets),
        ]
        for r in hd.itertuples()
    ]
    return [
        "### Headline averages side by side (%)",
        "",
        '"Paper, same datasets": the paper\'s per-dataset values averaged over exactly the datasets behind our '
        'average (full protocol only); "Paper, printed": the published archive-level number, over the '
        "paper's datasets (its count in the last column); comparable only when the counts agree.",
        "",
        _table(headers, rows),
    ]


def _per_method(comparison: dict[str, pd.DataFrame], threshold_pp: float) -> list[str]:
    pm = comparison.get("per_method", pd.DataFrame())
    if not len(pm):
        return ["No method of these results has a per-dataset column in the paper's tables.", ""]
    headers = [
        "Archive",
        "Method",
        "Datasets compared",
        "Mean abs. diff (pp)",
        "Mean diff (pp)",
        "Max abs. diff (pp)",
        "Off",
        "Datasets off (ours - paper, pp)",
        "Missing in ours",
    ]
    rows = [
        [
            r.archive,
            r.display_name + (" \u2020 (paper values, identical by construction)" if r.reported else ""),
            r.n_compared,
            _f(r.mean_abs_diff_pp),
            _f(r.mean_diff_pp, 2, True),
            _f(r.max_abs_diff_pp),
            r.n_off,
            r.datasets_off or "-",
            r.n_missing_ours,
        ]
        for r in pm.itertuples()
    ]
    return [
        f"### Per-dataset agreement (full protocol; off = more than {threshold_pp:g} points apart)",
        "",
        _table(headers, rows),
        "Every dataset: [per_dataset.csv](per_dataset.csv) (ours, paper, difference in points).",
        "",
    ]


def write_reproduction(
    directory: str | Path,
    check: dict[str, pd.DataFrame],
    comparison: dict[str, pd.DataFrame],
    ref: PaperReference,
    threshold_pp: float,
) -> list[Path]:
    directory = Path(directory)
    paths = []

    def csv(name: str, df: pd.DataFrame) -> None:
        p = directory / name
        atomic_write_text(p, df.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
        paths.append(p)

    for k, df in check.items():
        csv(f"paper_check_{k}.csv", df)
    for k in ("per_dataset", "per_method", "headline"):
        csv(f"{k}.csv", comparison.get(k, pd.DataFrame()))
    p = directory / "reproduction.md"
    atomic_write_text(p, reproduction_markdown(check, comparison, ref, threshold_pp))
    paths.append(p)
    return paths


def reference_markdown(diff: pd.DataFrame, source: str) -> str:
    """``reference_results.md``: which runs differ from a reference results folder and in how many test
    cases (the frame of :func:`chorustic.reports.reproduction.differences_from_reference`)."""
    L = ["# These results against reference results", "", f"Reference: `{source}`.", ""]
    if not len(diff):
        return "\n".join(L + ["No run has an outcome in both.", ""])
    differ = diff[diff["status"] == "differs"]
    by_pred = diff[diff["basis"] == "predictions"]
    L += [
        f"{len(diff)} runs in both; **{len(differ)} differ** "
        f"({int(differ['n_cases_differ'].sum())} test cases in all). {len(by_pred)} runs compared prediction by "
        f"prediction (the reference has their prediction files; "
        f"{int((by_pred['status'] == 'identical').sum())} bit-identical, probabilities included), "
        f"{len(diff) - len(by_pred)} by accuracy only (test cases: the fewest the two accuracies allow).",
        "",
    ]
    loose = diff[diff["portable_numerics"].eq(False)]
    if len(loose):
        names = ", ".join(sorted(set(loose["display_name"])))
        L += [
            f"Not covered by portable numerics (bit-identity across machines not guaranteed: GPU, pins off or "
            f"overridden; see the run manifests' `numerics`): {len(loose)} runs of {names}; marked * below.",
            "",
        ]
    if len(differ):
        rows = [
            [
                r.archive,
                r.dataset,
                r.display_name + (" *" if r.portable_numerics is False else ""),
                r.protocol,
                r.seed,
                _f(r.accuracy, 4),
                _f(r.reference_accuracy, 4),
                f"{r.n_cases_differ} of {r.n_test}" if r.basis == "predictions" else f">= {r.n_cases_differ} of {r.n_test}",
            ]
            for r in differ.itertuples()
        ]
        L += [
            "## Runs that differ",
            "",
            _table(["Archive", "Dataset", "Method", "Protocol", "Seed", "Accuracy", "Reference", "Test cases"], rows),
        ]
    same_pred = diff[diff["status"] == "same predictions, other probabilities"]
    if len(same_pred):
        L += [f"{len(same_pred)} runs predict the same classes with probabilities that differ in the last bits.", ""]
    L += ["Every run: [reference_results.csv](reference_results.csv).", ""]
    return "\n".join(L)


def write_reference_comparison(directory: str | Path, diff: pd.DataFrame, source: str) -> list[Path]:
    directory = Path(directory)
    csv = directory / "reference_results.csv"
    atomic_write_text(csv, diff.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    md = directory / "reference_results.md"
    atomic_write_text(md, reference_markdown(diff, source))
    return [csv, md]
