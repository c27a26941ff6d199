"""The paper's tables built from accuracy matrices (paper Tables 1-4, the appendix per-dataset tables and
the statistical comparison), for whatever methods are present in the results.

Conventions (paper App. C.5): average accuracy and rank are computed on the datasets where every method
of the table has a result (the *common set*, its size is stated); rank 1 = highest accuracy, ties
averaged; W/T/L from the reference method's perspective; best in bold and second best underlined, from
full-precision values, except the per-dataset tables which mark the displayed four-decimal values as the
paper does. Methods whose numbers are reported rather than reproduced carry a dagger.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from chorustic.protocols.base import protocol_label
from chorustic.reports.accuracies import AccuracyMatrix
from chorustic.reports.layout import archive_title, group_blocks, leakage_note, method_label, ordered_methods
from chorustic.reports.render import DAGGER_NOTE, Cell, Table, fmt, mark_best
from chorustic.stats import (
    average_accuracy,
    average_rank,
    compare_with_reference,
    win_tie_loss,
)
from chorustic.stats.wilcoxon import format_p, significance_note, smallest_attainable_p

__all__ = [
    "summary_frame",
    "main_table",
    "budget_table",
    "ablation_table",
    "per_dataset_table",
    "stats_table",
    "cost_frame",
    "cost_table",
    "format_seconds",
]


def _marked(text: str, mark: str | None, dagger: bool = False) -> Cell:
    return Cell(text, bold=mark == "best", underline=mark == "second", dagger=dagger)


def _method_cell(m: str, meta: pd.DataFrame, label: str | None = None) -> Cell:
    return Cell(label or method_label(m, meta), dagger=bool(meta.loc[m, "reported"]))


def _missing_note(matrix: AccuracyMatrix, methods: list[str]) -> str | None:
    miss = matrix.missing[matrix.missing["method"].isin(methods)]
    if miss.empty:
        return None
    per = miss.groupby("method").size()
    parts = ", ".join(f"{m}: {n}" for m, n in per.items())
    return (
        f"Missing runs (failed or absent; listed in missing_runs.csv, never imputed): {len(miss)} ({parts}); "
        "a dataset with a missing run is left out of the averages of every method."
    )


def _dagger_note(methods: list[str], meta: pd.DataFrame) -> str | None:
    """The footnotes of the marks after method names: \u2020 reported, \u2021 pretrained on the archives."""
    rep = [str(meta.loc[m, "display_name"]) for m in methods if bool(meta.loc[m, "reported"])]
    notes = [f"\u2020 {DAGGER_NOTE}: accuracies of {', '.join(rep)} are taken from published results (or a committed run of another results folder), not computed by this run."] if rep else []
    seen = leakage_note(methods, meta)
    return " ".join(notes + ([seen] if seen else [])) or None


def summary_frame(
    matrix: AccuracyMatrix, meta: pd.DataFrame, reference: str | None, methods: list[str] | None = None
) -> pd.DataFrame:
    """Per method: the common-set size, average accuracy, average rank, W/T/L against ``reference`` and the
    number of missing runs (one row per method, in the order given)."""
    methods = list(matrix.methods if methods is None else [m for m in methods if m in matrix.methods])
    with_results = [m for m in methods if m in matrix.methods_with_results]
    common = matrix.common(with_results)
    comp = matrix.values.loc[common, with_results]
    avg = average_accuracy(comp) if len(common) else pd.Series(np.nan, index=with_results)
    rank = average_rank(comp) if len(common) else pd.Series(np.nan, index=with_results)
    ref_ok = reference in with_results and len(common) > 0
    rows = []
    for m in methods:
        row = {
            "archive": matrix.archive,
            "protocol": matrix.protocol,
            "family": matrix.family,
            "budget": matrix.budget,
            "method": m,
            "display_name": meta.loc[m, "display_name"],
            "group": meta.loc[m, "group"],
            "fits_on_target": bool(meta.loc[m, "fits_on_target"]),
            "reported": bool(meta.loc[m, "reported"]),
            "n_eligible": len(matrix.values),
            "n_common": len(common),
            "n_with_result": int(matrix.values[m].notna().sum()),
            "n_missing_runs": matrix.n_missing(m),
            "n_context_sets": len(matrix.seeds),
            "avg_acc": float(avg.get(m, np.nan)),
            "avg_rank": float(rank.get(m, np.nan)),
            "wins": np.nan,
            "ties": np.nan,
            "losses": np.nan,
        }
        if ref_ok and m in with_results and m != reference:
            wtl = win_tie_loss(comp[reference], comp[m])
            row.update(wins=wtl.wins, ties=wtl.ties, losses=wtl.losses)
        rows.append(row)
    out = pd.DataFrame(rows)
    for c in ("wins", "ties", "losses"):
        out[c] = out[c].astype("Int64")
    return out


def _common_note(matrix: AccuracyMatrix, have: list[str], what: str = "Average accuracy and rank") -> str:
    """The size of the common set of the methods ``have`` (those of the table with a result)."""
    n_methods = len(have)
    if n_methods == 0:
        return "No method has a result here (every run failed or is missing): no averages."
    n_common, n_elig = len(matrix.common(have)), len(matrix.values)

    def ds(n: int) -> str:
        return f"{n} dataset{'s' if n != 1 else ''}"

    extra = "" if n_common == n_elig else f" (of {ds(n_elig)} eligible)"
    ctx = f", each averaged over {len(matrix.seeds)} context sets" if len(matrix.seeds) > 1 else ""
    who = "the method has" if n_methods == 1 else f"all {n_methods} methods have"
    return f"{what} over the {ds(n_common)} on which {who} a result{extra}{ctx}."


def main_table(
    matrix: AccuracyMatrix,
    meta: pd.DataFrame,
    reference: str | None,
    name: str,
    layout: str,
    exclude: list[str] = (),
) -> Table:
    """Table 1 / Table 2: protocol group, method, target fit, average accuracy, average rank, W/T/L."""
    methods = ordered_methods([m for m in matrix.methods if m not in exclude], meta, layout)
    summ = summary_frame(matrix, meta, reference, methods).set_index("method")
    have = [m for m in methods if m in matrix.methods_with_results]
    acc_mark = dict(zip(have, mark_best(summ.loc[have, "avg_acc"], True))) if have else {}
    rank_mark = dict(zip(have, mark_best(summ.loc[have, "avg_rank"], False))) if have else {}
    show_missing = any(summ["n_missing_runs"] > 0)
    ref_ok = reference in have and summ["n_common"].iloc[0] > 0
    header = ["Protocol", "Method", "Target fit", "Avg. Acc. (%)", "Avg. Rank"]
    align = "llcrr"
    if ref_ok:
        header.append("W/T/L")
        align += "c"
    if show_missing:
        header.append("Missing runs")
        align += "r"
    body, breaks = [], set()
    for g, block in group_blocks(methods, meta):
        breaks.add(len(body))
        for j, m in enumerate(block):
            s = summ.loc[m]
            row = [
                Cell(g if j == 0 else ""),
                _method_cell(m, meta),
                Cell("Yes" if s["fits_on_target"] else "No"),
                _marked(fmt(s["avg_acc"], 2, 100), acc_mark.get(m)),
                _marked(fmt(s["avg_rank"], 2), rank_mark.get(m)),
            ]
            if ref_ok:
                row.append(
                    Cell(
                        "\u2014"
                        if m == reference
                        else ("-" if pd.isna(s["wins"]) else f"{s['wins']}/{s['ties']}/{s['losses']}")
                    )
                )
            if show_missing:
                row.append(Cell(str(int(s["n_missing_runs"]))))
            body.append(row)
    n_elig = len(matrix.values)
    title = (
        f"Classification results on {archive_title(matrix.archive, n_elig)} "
        f"({protocol_label(matrix.family, matrix.budget)} protocol)"
    )
    notes = [
        _common_note(matrix, have),
        '"Target fit": a dataset-specific classifier is fitted on the target training split. '
        "Best and second-best values in bold and underlined (full-precision accuracies).",
    ]
    if ref_ok:
        notes.append(f"W/T/L from the perspective of {meta.loc[reference, 'display_name']}.")
    else:
        notes.append(
            "No W/T/L: the reference method"
            + (f" {meta.loc[reference, 'display_name']!r}" if reference in meta.index else "")
            + " has no result here."
        )
    nothing = [str(meta.loc[m, "display_name"]) for m in matrix.methods_without_results if m in methods]
    if nothing:
        notes.append(f"No result at all: {', '.join(nothing)}.")
    for n in (_missing_note(matrix, methods), _dagger_note(methods, meta)):
        if n:
            notes.append(n)
    return Table(
        name=name,
        caption=title,
        header=header,
        align=align,
        body=body,
        data=summ.reset_index(),
        midrules_before=breaks,
        notes=notes,
    )


def budget_table(
    matrices: list[AccuracyMatrix],
    meta: pd.DataFrame,
    name: str,
    exclude: list[str] = (),
    reference: str | None = None,
) -> Table:
    """Table 3 (fixed-shot: one column per k) or the context-scaling table (one column per fraction):
    average accuracy per budget, each over the datasets eligible at that budget where every method has a
    result."""
    if not matrices:
        raise ValueError("budget_table needs at least one matrix")
    archive, family = matrices[0].archive, matrices[0].family
    all_methods = sorted({m for mx in matrices for m in mx.methods if m not in exclude})
    methods = ordered_methods(all_methods, meta, "low_label")
    summaries = {
        mx.protocol: summary_frame(mx, meta, reference, methods).set_index("method") for mx in matrices
    }
    header = ["Method", "Target fit"] + [protocol_label(mx.family, mx.budget) for mx in matrices]
    align = "lc" + "r" * len(matrices)
    marks = {}
    for mx in matrices:
        s = summaries[mx.protocol]
        have = [m for m in s.index if m in mx.methods_with_results]
        marks[mx.protocol] = dict(zip(have, mark_best(s.loc[have, "avg_acc"], True)))
    body, breaks = [], set()
    for _, block in group_blocks(methods, meta):
        breaks.add(len(body))
        for m in block:
            row = [_method_cell(m, meta), Cell("Yes" if meta.loc[m, "fits_on_target"] else "No")]
            for mx in matrices:
                s = summaries[mx.protocol]
                v = s.loc[m, "avg_acc"] if m in s.index else np.nan
                row.append(_marked(fmt(v, 2, 100), marks[mx.protocol].get(m)))
            body.append(row)
    what = "Fixed-shot" if family == "fixed_shot" else "Context-scaling (proportional)"
    title = f"{what} classification accuracy (%) on {archive}"
    notes = []
    for mx in matrices:
        have = [m for m in methods if m in mx.methods_with_results]
        inel = (
            f"; {len(mx.ineligible)} ineligible ({', '.join(mx.ineligible['dataset'])})"
            if len(mx.ineligible)
            else ""
        )
        sets = f"{len(mx.seeds)} context set{'s' if len(mx.seeds) != 1 else ''}"
        notes.append(
            f"{protocol_label(mx.family, mx.budget)}: averaged over {sets} and over the "
            f"{len(mx.common(have))} datasets where all {len(have)} methods have a result "
            f"({len(mx.values)} eligible{inel})."
        )
        miss = _missing_note(mx, methods)
        if miss:
            notes.append(f"{protocol_label(mx.family, mx.budget)}: {miss}")
    notes.append(
        "Within each budget all methods use the same datasets and the same context sets. "
        "Best and second-best in bold and underlined."
    )
    dn = _dagger_note(methods, meta)
    if dn:
        notes.append(dn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # all-NA W/T/L columns
        data = pd.concat(list(summaries.values()), names=["method"]).reset_index()
    data = data[data["method"].isin(methods)]
    return Table(
        name=name,
        caption=title,
        header=header,
        align=align,
        body=body,
        data=data,
        midrules_before=breaks,
        notes=notes,
    )


def ablation_table(
    matrix: AccuracyMatrix,
    meta: pd.DataFrame,
    reference: str,
    ablations: dict[str, tuple[str, str]],
    name: str,
) -> Table:
    """Table 4: the complete model and its ablation variants, average accuracy and its change in
    percentage points, on the datasets where all of them have a result."""
    variants = [m for m in ablations if m in matrix.methods]
    methods = ([reference] if reference in matrix.methods else []) + variants
    summ = summary_frame(matrix, meta, reference, methods).set_index("method")
    have = [m for m in methods if m in matrix.methods_with_results]
    marks = dict(zip(have, mark_best(summ.loc[have, "avg_acc"], True))) if have else {}
    ref_acc = summ.loc[reference, "avg_acc"] if reference in summ.index else np.nan
    body, breaks = [], set()
    if reference in summ.index:
        breaks.add(0)
        body.append(
            [
                Cell("Complete model"),
                _method_cell(reference, meta),
                _marked(fmt(ref_acc, 2, 100), marks.get(reference)),
                Cell(fmt(0.0, 2)),
            ]
        )
    last_factor = None
    for m in variants:
        factor, label = ablations[m]
        if factor != last_factor:
            breaks.add(len(body))
        acc = summ.loc[m, "avg_acc"]
        delta = (acc - ref_acc) * 100 if not (math.isnan(acc) or math.isnan(ref_acc)) else np.nan
        body.append(
            [
                Cell(factor if factor != last_factor else ""),
                Cell(label),
                _marked(fmt(acc, 2, 100), marks.get(m)),
                Cell(fmt(delta, 2, signed=True)),
            ]
        )
        last_factor = factor
    data = summ.reset_index()
    data["factor"] = data["method"].map(lambda m: ablations.get(m, ("Complete model", ""))[0])
    data["variant"] = data["method"].map(
        lambda m: ablations.get(m, ("", str(meta.loc[m, "display_name"])))[1]
    )
    data["delta_acc_pp"] = (data["avg_acc"] - ref_acc) * 100
    notes = [
        _common_note(matrix, have, "Average accuracy"),
        f"\u0394 Acc. in percentage points relative to the complete model ({meta.loc[reference, 'display_name']})."
        if reference in meta.index
        else "The complete model has no result: no \u0394 Acc.",
    ]
    miss = _missing_note(matrix, methods)
    if miss:
        notes.append(miss)
    return Table(
        name=name,
        caption=f"Ablation results on {archive_title(matrix.archive, len(matrix.values))}",
        header=["Factor", "Variant", "Avg. Acc. (%)", "\u0394 Acc. (pp)"],
        align="llrr",
        body=body,
        data=data,
        midrules_before=breaks,
        notes=notes,
    )


def per_dataset_table(
    matrix: AccuracyMatrix, meta: pd.DataFrame, name: str, layout: str, exclude: list[str] = ()
) -> Table:
    """Appendix per-dataset accuracies (4 decimals, best/second per row on the displayed values), with the
    average accuracy and rank of the common set as footer rows."""
    methods = ordered_methods([m for m in matrix.methods if m not in exclude], meta, layout)
    vals = matrix.values[methods]
    header = ["Dataset"] + [
        method_label(m, meta) + ("\u2020" if meta.loc[m, "reported"] else "") for m in methods
    ]
    body = []
    for d, row in vals.iterrows():
        marks = mark_best(row.to_numpy(), True, decimals=4)
        body.append([Cell(str(d))] + [_marked(fmt(v, 4), mk) for v, mk in zip(row.to_numpy(), marks)])
    summ = summary_frame(matrix, meta, None, methods).set_index("method")
    have = [m for m in methods if m in matrix.methods_with_results]
    footer_start = len(body)
    acc_marks = dict(zip(have, mark_best(summ.loc[have, "avg_acc"], True))) if have else {}
    rank_marks = dict(zip(have, mark_best(summ.loc[have, "avg_rank"], False))) if have else {}
    body.append(
        [Cell("Avg. Acc. (%)", bold=True)]
        + [_marked(fmt(summ.loc[m, "avg_acc"], 2, 100), acc_marks.get(m)) for m in methods]
    )
    body.append(
        [Cell("Avg. Rank", bold=True)]
        + [_marked(fmt(summ.loc[m, "avg_rank"], 2), rank_marks.get(m)) for m in methods]
    )
    n = len(matrix.values)
    notes = [
        "Best and second-best per dataset in bold and underlined, based on the displayed four-decimal accuracies; "
        '"-" marks a missing result.',
        _common_note(
            matrix, have, "Avg. Acc. and Avg. Rank (full precision, ranked among the methods shown)"
        ),
    ]
    for extra in (_missing_note(matrix, methods), _dagger_note(methods, meta)):
        if extra:
            notes.append(extra)
    data = vals.reset_index()
    return Table(
        name=name,
        caption=f"Per-dataset accuracy on {archive_title(matrix.archive, n)} "
        f"({protocol_label(matrix.family, matrix.budget)} protocol)",
        header=header,
        align="l" + "r" * len(methods),
        body=body,
        data=data,
        midrules_before={footer_start},
        notes=notes,
        long=n > 40,
        wide=n <= 40 and len(methods) > 6,
    )


def comparison_frame(
    matrix: AccuracyMatrix,
    meta: pd.DataFrame,
    reference: str,
    alpha: float,
    layout: str,
    exclude: list[str] = (),
) -> pd.DataFrame:
    """:func:`chorustic.stats.compare_with_reference` on the common set of the matrix's methods (one Holm
    family), with archive/protocol/display-name columns; empty if the reference has no result."""
    methods = ordered_methods([m for m in matrix.methods_with_results if m not in exclude], meta, layout)
    if reference not in methods or len(methods) < 2:
        return pd.DataFrame()
    comp = matrix.complete(methods)
    if comp.empty:
        return pd.DataFrame()
    out = compare_with_reference(comp, reference, alpha=alpha, methods=methods)
    out.insert(0, "archive", matrix.archive)
    out.insert(1, "protocol", matrix.protocol)
    out.insert(2, "reference", reference)
    out.insert(4, "display_name", out["method"].map(meta["display_name"]))
    out["family_size"] = len(out)
    out["alpha"] = alpha
    out["smallest_attainable_p_holm"] = smallest_attainable_p(len(comp), len(out))
    return out


def stats_table(
    comparison: pd.DataFrame,
    matrix: AccuracyMatrix,
    meta: pd.DataFrame,
    reference: str,
    alpha: float,
    name: str,
) -> Table:
    """The statistical comparison table: W/T/L, n_eff, W, raw p, Holm p, significance, averages, gain."""
    header = [
        "Method",
        "W/T/L",
        "n_eff",
        "W",
        "p (raw)",
        "p (Holm)",
        f"Sig. (\u03b1={alpha:g})",
        "Avg. Acc. (%)",
        "Rel. gain (%)",
    ]
    body = []
    for _, r in comparison.iterrows():
        body.append(
            [
                _method_cell(r["method"], meta),
                Cell(f"{r['wins']}/{r['ties']}/{r['losses']}"),
                Cell(str(r["n_eff"])),
                Cell(f"{r['W']:g}"),
                Cell(format_p(r["p_raw"], bool(r["p_raw_is_bound"]))),
                Cell(format_p(r["p_holm"], bool(r["p_holm_is_bound"])), bold=bool(r["significant"])),
                Cell("yes" if r["significant"] else "no"),
                Cell(fmt(r["avg_acc_method"], 2, 100)),
                Cell(fmt(r["relative_gain_pct"], 2, signed=True)),
            ]
        )
    ref_name = meta.loc[reference, "display_name"]
    n = int(comparison["n_datasets"].iloc[0]) if len(comparison) else 0
    notes = [
        f"{ref_name} against each method on the {n} datasets where all methods have a result "
        f"({ref_name}: {fmt(comparison['avg_acc_reference'].iloc[0] if len(comparison) else np.nan, 2, 100)}% average accuracy).",
        "Two-sided Wilcoxon signed-rank test on paired per-dataset accuracies, exact null distribution; zero differences "
        "dropped (n_eff = number of nonzero differences); W = min(W+, W-).",
        f"Holm correction within this family of {len(comparison)} comparisons; significant when the Holm p <= {alpha:g} (bold).",
        f"W/T/L from the perspective of {ref_name}; Rel. gain = (A_{{{ref_name}}} - A_method) / A_method from unrounded averages.",
    ]
    small = significance_note(n, len(comparison), alpha)
    if small:
        notes.insert(0, small)
    if comparison["has_rank_ties"].any():
        notes.append("Where |differences| tie, scipy's exact test rounds W conservatively.")
    if comparison["p_raw_is_bound"].any():
        notes.append('"< x": the exact p-value underflows double precision; x is an upper bound.')
    dn = _dagger_note(list(comparison["method"]), meta)
    if dn:
        notes.append(dn)
    title = (
        f"Statistical comparison on {archive_title(matrix.archive, len(matrix.values))} "
        f"({protocol_label(matrix.family, matrix.budget)} protocol), reference {ref_name}"
    )
    if small:
        title += f" (n = {n} datasets: too few for any comparison to be significant)"
    return Table(
        name=name, caption=title, header=header, align="lcrrrrcrr", body=body, data=comparison, notes=notes
    )


def format_seconds(seconds: float) -> str:
    """``12.3 s``, ``4.5 min`` or ``2.1 h``; ``-`` for NaN."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    s = float(seconds)
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def cost_frame(runs: pd.DataFrame, matrix: AccuracyMatrix, meta: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """Accuracy and cost of each method of ``matrix`` (one archive and protocol) that ran here.

    ``runs`` are the rows of ``accuracies.csv``. Methods with results and timings (reported methods have
    neither) are compared on their common datasets: ``avg_acc`` is the mean accuracy there,
    ``total_time_s`` the fit + predict wall time of every run (all context sets) on those datasets, as
    recorded in the result files, ``device`` where the jobs ran and ``peak_memory_mb`` the largest peak
    resident memory of a job.
    """
    timed = [
        m
        for m in methods
        if m in matrix.methods_with_results and not bool(meta.loc[m, "reported"])
    ]
    common = matrix.common(timed)
    sub = runs[
        (runs["archive"] == matrix.archive)
        & (runs["protocol"] == matrix.protocol)
        & (runs["status"] == "ok")
        & runs["dataset"].isin(common)
    ]
    rows = []
    for m in timed:
        r = sub[sub["method"] == m]
        fit = pd.to_numeric(r["fit_time_s"], errors="coerce")
        pred = pd.to_numeric(r["predict_time_s"], errors="coerce")
        devices = sorted({str(d) for d in r.get("device", pd.Series(dtype=object)).dropna() if str(d) not in ("", "nan")})
        rows.append(
            {
                "archive": matrix.archive,
                "protocol": matrix.protocol,
                "method": m,
                "display_name": meta.loc[m, "display_name"],
                "group": meta.loc[m, "group"],
                "device": "/".join(devices) if devices else "unknown",
                "n_datasets": len(common),
                "n_runs": len(r),
                "avg_acc": float(matrix.values.loc[common, m].mean()) if common else np.nan,
                "fit_time_s": float(fit.sum()) if fit.notna().any() else np.nan,
                "predict_time_s": float(pred.sum()) if pred.notna().any() else np.nan,
                "total_time_s": float((fit + pred).sum()) if (fit + pred).notna().any() else np.nan,
                "time_per_dataset_s": float((fit + pred).sum()) / len(common)
                if common and (fit + pred).notna().any()
                else np.nan,
                "peak_memory_mb": float(pd.to_numeric(r["peak_memory_mb"], errors="coerce").max())
                if len(r)
                else np.nan,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "archive", "protocol", "method", "display_name", "group", "device", "n_datasets", "n_runs",
            "avg_acc", "fit_time_s", "predict_time_s", "total_time_s", "time_per_dataset_s", "peak_memory_mb",
        ],
    )


def cost_table(cost: pd.DataFrame, matrix: AccuracyMatrix, meta: pd.DataFrame, name: str, layout: str) -> Table:
    """Accuracy against cost: group, method, device, average accuracy, total / fit / predict wall time,
    time per dataset and peak memory, on the datasets where every timed method has a result."""
    cost = cost.set_index("method")
    methods = ordered_methods(list(cost.index), meta, layout)
    acc_mark = dict(zip(methods, mark_best(cost.loc[methods, "avg_acc"], True)))
    time_mark = dict(zip(methods, mark_best(cost.loc[methods, "total_time_s"], False)))
    header = ["Group", "Method", "Device", "Avg. Acc. (%)", "Total time", "Fit", "Predict", "Per dataset",
              "Peak mem. (MB)"]
    body, breaks = [], set()
    for g, block in group_blocks(methods, meta):
        breaks.add(len(body))
        for j, m in enumerate(block):
            c = cost.loc[m]
            body.append(
                [
                    Cell(g if j == 0 else ""),
                    _method_cell(m, meta),
                    Cell(str(c["device"])),
                    _marked(fmt(c["avg_acc"], 2, 100), acc_mark.get(m)),
                    _marked(format_seconds(c["total_time_s"]), time_mark.get(m)),
                    Cell(format_seconds(c["fit_time_s"])),
                    Cell(format_seconds(c["predict_time_s"])),
                    Cell(format_seconds(c["time_per_dataset_s"])),
                    Cell(fmt(c["peak_memory_mb"], 0)),
                ]
            )
    n = int(cost["n_datasets"].max()) if len(cost) else 0
    seeds = len(matrix.seeds)
    notes = [
        f"Wall time of fit + predict of every run on the {n} dataset{'s' if n != 1 else ''} where all "
        f"{len(methods)} methods have a result"
        + (f" ({seeds} context sets each)" if seeds > 1 else "")
        + ", as recorded in the result files, on the device the jobs ran on (model loading and data "
        "reading are not included). Timings from different machines or devices are not comparable.",
        "Best accuracy and lowest total time in bold, second best underlined. Peak memory: the largest "
        "resident memory of one evaluation job (the process, not the GPU).",
    ]
    rep = [str(meta.loc[m, "display_name"]) for m in matrix.methods if bool(meta.loc[m, "reported"])]
    if rep:
        notes.append(f"Not shown (reported, not reproduced: no timings): {', '.join(rep)}.")
    return Table(
        name=name,
        caption=f"Accuracy and cost on {archive_title(matrix.archive, len(matrix.values))} "
        f"({protocol_label(matrix.family, matrix.budget)} protocol)",
        header=header,
        align="lllrrrrrr",
        body=body,
        data=cost.reset_index(),
        midrules_before=breaks,
        notes=notes,
    )
