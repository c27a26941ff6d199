"""Companion tables that let a reviewer weigh the numbers (issue 73): the spread over context sets (seeds),
bootstrap intervals of every archive mean and of every difference from the reference method, and the
same for every measure of :mod:`chorustic.evaluation.metrics`. The paper-format tables stay as the paper
prints them; these sit beside them.

* :func:`interval_frame`: per method of one (archive, protocol) on the common datasets, the mean of a
  measure with its bootstrap interval (:mod:`chorustic.stats.bootstrap`, over datasets), the standard
  deviation over context sets of the per-seed archive mean, the average rank (rank 1 = best in the
  measure's direction), W/T/L, and the difference from the reference with its paired interval.
* :func:`interval_table`: one table per (archive, protocol family) and measure, a block per budget.
* :func:`seed_spread_frame`: per dataset and method, mean and standard deviation over context sets.
* :func:`metrics_overview_table`: every chosen measure of every method side by side (full protocol).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from chorustic.evaluation.metrics import METRICS, Metric
from chorustic.protocols.base import protocol_label
from chorustic.reports.accuracies import AccuracyMatrix
from chorustic.reports.layout import archive_title, leakage_note, method_label, ordered_methods
from chorustic.reports.render import DAGGER_NOTE, Cell, Table, fmt, mark_best
from chorustic.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    average_rank,
    bootstrap_mean_ci,
    win_tie_loss,
)

__all__ = ["INTERVAL_COLUMNS", "interval_frame", "interval_table", "seed_spread_frame", "metrics_overview_table",
           "interval_caption"]

INTERVAL_COLUMNS = [
    "archive", "protocol", "family", "budget", "metric", "method", "display_name", "reported", "n_common",
    "n_context_sets", "mean", "ci_low", "ci_high", "seed_sd", "avg_rank", "wins", "ties", "losses",
    "diff_vs_reference", "diff_ci_low", "diff_ci_high",
]


def _seed_sd(matrix: AccuracyMatrix, method: str, common: list[str]) -> float:
    """Standard deviation (ddof 1) over context sets of the method's mean over ``common``; NaN with one set."""
    rows = matrix.by_seed[(matrix.by_seed["method"] == method) & matrix.by_seed["dataset"].isin(common)]
    if rows.empty:
        return float("nan")
    wide = rows.pivot_table(index="dataset", columns="seed", values="accuracy", aggfunc="first")
    wide = wide.reindex(common).dropna(axis=1)
    if wide.shape[1] < 2:
        return float("nan")
    return float(wide.mean(axis=0).std(ddof=1))


def interval_frame(
    matrix: AccuracyMatrix,
    meta: pd.DataFrame,
    reference: str | None,
    methods: list[str],
    metric: Metric = METRICS["accuracy"],
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> pd.DataFrame:
    """One row per method of ``methods`` (:data:`INTERVAL_COLUMNS`); every statistic on the datasets where
    all of them with a result have one. ``diff_vs_reference`` is the reference's mean minus the method's
    (positive: the reference is better, in the measure's own units; for log loss positive means the
    reference has the larger loss)."""
    have = [m for m in methods if m in matrix.methods_with_results]
    common = matrix.common(have)
    comp = matrix.values.loc[common, have]
    rank = average_rank(comp, metric.higher_is_better) if len(common) else pd.Series(np.nan, index=have)
    low, high = bootstrap_mean_ci(comp.to_numpy(), n_resamples, seed) if have else ([], [])
    ci = {m: (lo, hi) for m, lo, hi in zip(have, low, high)}
    ref_ok = reference in have and len(common) > 0
    dci = {}
    if ref_ok:
        others = [m for m in have if m != reference]
        diffs = comp[[reference]].to_numpy() - comp[others].to_numpy()
        dlow, dhigh = bootstrap_mean_ci(diffs, n_resamples, seed) if others else ([], [])
        dci = {m: (lo, hi) for m, lo, hi in zip(others, dlow, dhigh)}
    rows = []
    for m in methods:
        row = {
            "archive": matrix.archive, "protocol": matrix.protocol, "family": matrix.family,
            "budget": matrix.budget, "metric": metric.name, "method": m,
            "display_name": meta.loc[m, "display_name"], "reported": bool(meta.loc[m, "reported"]),
            "n_common": len(common), "n_context_sets": len(matrix.seeds),
            "mean": float(comp[m].mean()) if m in have and len(common) else np.nan,
            "ci_low": ci.get(m, (np.nan,))[0], "ci_high": ci.get(m, (np.nan, np.nan))[1],
            "seed_sd": np.nan if bool(meta.loc[m, "reported"]) or m not in have else _seed_sd(matrix, m, common),
            "avg_rank": float(rank.get(m, np.nan)),
            "wins": np.nan, "ties": np.nan, "losses": np.nan,
            "diff_vs_reference": np.nan, "diff_ci_low": np.nan, "diff_ci_high": np.nan,
        }
        if ref_ok and m in dci:
            wtl = win_tie_loss(comp[reference], comp[m], metric.higher_is_better)
            row.update(wins=wtl.wins, ties=wtl.ties, losses=wtl.losses,
                       diff_vs_reference=float(comp[reference].mean() - comp[m].mean()),
                       diff_ci_low=dci[m][0], diff_ci_high=dci[m][1])
        elif m == reference and ref_ok:
            row.update(diff_vs_reference=0.0)
        rows.append(row)
    out = pd.DataFrame(rows, columns=INTERVAL_COLUMNS)
    for c in ("wins", "ties", "losses"):
        out[c] = out[c].astype("Int64")
    return out


def _interval(lo, hi, digits: int, scale: float) -> str:
    if pd.isna(lo) or pd.isna(hi):
        return "-"
    return f"[{fmt(lo, digits, scale)}, {fmt(hi, digits, scale)}]"


def interval_caption(n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> str:
    return (f"{CONFIDENCE:.0%} intervals: percentile bootstrap over the common datasets ({n_resamples:,} resamples, "
            f"seed {seed}; the same resamples for every method, differences resampled in pairs).")


def interval_table(
    frames: list[pd.DataFrame],
    matrices: list[AccuracyMatrix],
    meta: pd.DataFrame,
    reference: str | None,
    name: str,
    layout: str,
    metric: Metric = METRICS["accuracy"],
) -> Table:
    """The companion table of one (archive, family) and measure: a block of rows per budget (protocol),
    each method's mean, interval, spread over seeds, rank, W/T/L and difference from the reference."""
    digits, scale = (2, 100.0) if metric.percent else (3, 1.0)
    unit = " (%)" if metric.percent else ""
    dunit = " (pp)" if metric.percent else ""
    ref_name = str(meta.loc[reference, "display_name"]) if reference in meta.index else None
    several = len(matrices) > 1
    multi_seed = any(len(mx.seeds) > 1 for mx in matrices)
    header = (["Protocol"] if several else []) + ["Method", f"Mean {metric.label}{unit}", f"{CONFIDENCE:.0%} CI"]
    if multi_seed:
        header.append(f"s.d. over seeds{dunit}")
    header += ["Avg. Rank", "W/T/L", f"\u0394 vs {ref_name}{dunit}" if ref_name else "\u0394", f"{CONFIDENCE:.0%} CI of \u0394"]
    body, breaks = [], set()
    for mx, fr in zip(matrices, frames):
        breaks.add(len(body))
        fr = fr.set_index("method")
        have = [m for m in fr.index if pd.notna(fr.loc[m, "mean"])]
        marks = dict(zip(have, mark_best(fr.loc[have, "mean"], metric.higher_is_better))) if have else {}
        for j, m in enumerate(fr.index):
            r = fr.loc[m]
            row = ([Cell(protocol_label(mx.family, mx.budget) if j == 0 else "")] if several else []) + [
                Cell(method_label(m, meta), dagger=bool(r["reported"])),
                Cell(fmt(r["mean"], digits, scale), bold=marks.get(m) == "best", underline=marks.get(m) == "second"),
                Cell(_interval(r["ci_low"], r["ci_high"], digits, scale)),
            ]
            if multi_seed:
                row.append(Cell(fmt(r["seed_sd"], digits, scale)))
            wtl = "\u2014" if m == reference else ("-" if pd.isna(r["wins"]) else f"{r['wins']}/{r['ties']}/{r['losses']}")
            row += [
                Cell(fmt(r["avg_rank"], 2)),
                Cell(wtl),
                Cell("\u2014" if m == reference else fmt(r["diff_vs_reference"], digits, scale, signed=True)),
                Cell("\u2014" if m == reference else _interval(r["diff_ci_low"], r["diff_ci_high"], digits, scale)),
            ]
            body.append(row)
    mx0 = matrices[0]
    what = protocol_label(mx0.family, mx0.budget) if not several else {"fixed_shot": "fixed-shot",
                                                                       "proportional": "proportional"}.get(
        mx0.family, mx0.family)
    caption = (f"{metric.label} with {CONFIDENCE:.0%} intervals on {archive_title(mx0.archive, len(mx0.values))} "
               f"({what} protocol{'s' if several else ''})")
    sizes = sorted({int(f["n_common"].iloc[0]) for f in frames if len(f)})
    notes = [
        f"Every statistic over the datasets where all methods of the block have a result ({', '.join(map(str, sizes))} "
        f"dataset{'s' if sizes != [1] else ''}); rank 1 = best ({'highest' if metric.higher_is_better else 'lowest'} "
        f"{metric.label.lower()}).",
        interval_caption(),
    ]
    if multi_seed:
        notes.append("s.d. over seeds: the standard deviation over the protocol's context sets of the mean over "
                     "the datasets (one archive mean per context set); the table's mean is their average.")
    if ref_name:
        notes.append(f"\u0394 = {ref_name} minus the method"
                     + (" (positive: {ref} better)".format(ref=ref_name) if metric.higher_is_better
                        else f" (negative: {ref_name} better)")
                     + f"; W/T/L from the perspective of {ref_name}. An interval of \u0394 that contains 0 does "
                       "not rule out that the two methods are equally good on this archive.")
    if any(bool(meta.loc[m, "reported"]) for f in frames for m in f["method"]):
        notes.append(f"\u2020 {DAGGER_NOTE}: no context sets of their own, so no spread over seeds.")
    seen = leakage_note(list(dict.fromkeys(m for f in frames for m in f["method"])), meta)
    if seen:
        notes.append(seen)
    return Table(name=name, caption=caption, header=header, align="l" * (2 if several else 1) + "r" * (len(header) - (2 if several else 1)),
                 body=body, data=pd.concat(frames, ignore_index=True), midrules_before=breaks, notes=notes)


def seed_spread_frame(matrix: AccuracyMatrix, meta: pd.DataFrame) -> pd.DataFrame:
    """Per complete cell of a run method: mean, standard deviation (ddof 1) and number of context sets."""
    cols = ["archive", "protocol", "family", "budget", "method", "display_name", "dataset", "n_context_sets",
            "mean", "sd"]
    if matrix.by_seed.empty:
        return pd.DataFrame(columns=cols)
    g = matrix.by_seed.groupby(["method", "dataset"])["accuracy"]
    out = pd.DataFrame({"n_context_sets": g.size(), "mean": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    out.insert(0, "archive", matrix.archive)
    out.insert(1, "protocol", matrix.protocol)
    out.insert(2, "family", matrix.family)
    out.insert(3, "budget", matrix.budget)
    out.insert(5, "display_name", out["method"].map(meta["display_name"]))
    return out[cols]


def metrics_overview_table(
    by_metric: dict[str, pd.DataFrame], meta: pd.DataFrame, archive: str, n_eligible: int, name: str, layout: str
) -> Table:
    """Every chosen measure of every method (full protocol), each its mean and average rank on the datasets
    where all methods have that measure; ``by_metric``: measure name -> :func:`interval_frame`."""
    names = [n for n in METRICS if n in by_metric]
    methods = ordered_methods(list(dict.fromkeys(m for n in names for m in by_metric[n]["method"])), meta, layout)
    header = ["Method"] + [METRICS[n].label + (" (%)" if METRICS[n].percent else "") for n in names]
    body = []
    frames = {n: by_metric[n].set_index("method") for n in names}
    marks = {}
    for n in names:
        f = frames[n]
        have = [m for m in f.index if pd.notna(f.loc[m, "mean"])]
        marks[n] = dict(zip(have, mark_best(f.loc[have, "mean"], METRICS[n].higher_is_better))) if have else {}
    for m in methods:
        row = [Cell(method_label(m, meta), dagger=bool(meta.loc[m, "reported"]))]
        for n in names:
            f, mt = frames[n], METRICS[n]
            if m not in f.index or pd.isna(f.loc[m, "mean"]):
                row.append(Cell("-"))
                continue
            digits, scale = (2, 100.0) if mt.percent else (3, 1.0)
            row.append(Cell(f"{fmt(f.loc[m, 'mean'], digits, scale)} ({fmt(f.loc[m, 'avg_rank'], 2)})",
                            bold=marks[n].get(m) == "best", underline=marks[n].get(m) == "second"))
        body.append(row)
    sizes = ", ".join(f"{METRICS[n].label}: {int(frames[n]['n_common'].iloc[0])}" for n in names if len(frames[n]))
    notes = [
        "Each cell: the mean over the datasets where all methods have that measure, and the average rank in "
        f"parentheses (rank 1 = best; lowest log loss is best). Datasets per measure: {sizes}.",
        "Computed from the prediction files (results/metrics.csv): balanced accuracy = mean recall over the test "
        "split's classes; macro F1 and AUROC (one-vs-rest) weigh every class alike, so a majority-class guesser "
        "scores low on an imbalanced dataset where its accuracy looks high.",
    ]
    if any(bool(meta.loc[m, "reported"]) for m in methods):
        notes.append(f"\u2020 {DAGGER_NOTE}: published accuracy only.")
    seen = leakage_note(methods, meta)
    if seen:
        notes.append(seen)
    data = pd.concat([by_metric[n] for n in names], ignore_index=True)
    return Table(name=name, caption=f"Every measure on {archive_title(archive, n_eligible)} (full protocol)",
                 header=header, align="l" + "r" * len(names), body=body, data=data, notes=notes)
