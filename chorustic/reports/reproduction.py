"""The reproduction check against the paper.

1. :func:`paper_self_check` runs the harness's statistics on the paper's own per-dataset tables (through
   the same code that processes ``results/accuracies.csv``) and compares with what the paper prints:
   every average accuracy to 0.01 points; average ranks, W/T/L, Wilcoxon raw/Holm p-values and the
   relative gains quoted in the text. The published tables have four decimals, so ties appear that do not
   exist in full precision; where that makes a printed rank or W/T/L unreachable from the table, the check
   says so, shows both, and verifies that the printed value lies in the range the rounding allows
   (otherwise the paper is internally inconsistent). For Wilcoxon p-values it also recomputes the test
   with the rounding ties resolved as the printed W/T/L requires.
2. :func:`compare_with_paper` compares the harness's results with the paper, per dataset (difference, mean
   absolute difference, datasets off by more than a threshold) and at the level of the headline averages.
3. :func:`differences_from_reference` compares the harness's results with a reference results folder
   (another machine's run, the committed ``examples/demo/results``): which runs differ and in how many
   test cases, from the prediction files where the reference has them, else from the accuracies.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from chorustic.reports.accuracies import AccuracyMatrix, build_matrices, method_metadata
from chorustic.reports.layout import PAPER_COLUMN_TO_RUN_NAME
from chorustic.reports.paper import PaperReference, paper_results_frame
from chorustic.reports.tables import comparison_frame, summary_frame
from chorustic.stats import average_rank_range, holm_correction, relative_gain, wilcoxon_signed_rank
from chorustic.stats.win_tie_loss import WinTieLoss, win_tie_loss_range

__all__ = [
    "paper_self_check",
    "compare_with_paper",
    "differences_from_reference",
    "same_printed",
    "impose_printed_wtl",
    "TABLE_DECIMALS",
    "REFERENCE_COLUMNS",
]

#: Decimals of the published per-dataset tables.
TABLE_DECIMALS = 4
#: Largest change of an average (in points) the four-decimal rounding of the tables plus the two-decimal
#: rounding of the printed average can cause: 0.005 + 0.005.
AVERAGE_TOLERANCE_PP = 0.01


def same_printed(value: float, printed: float, sig: int = 3) -> bool:
    """Whether ``value`` prints as ``printed`` with ``sig`` significant digits."""
    if value is None or printed is None or math.isnan(value) or math.isnan(printed):
        return False
    return f"{value:.{sig - 1}e}" == f"{printed:.{sig - 1}e}"


def _wtl_from_row(row) -> WinTieLoss | None:
    if any(pd.isna(row.get(c)) for c in ("wins", "ties", "losses")):
        return None
    return WinTieLoss(int(row["wins"]), int(row["ties"]), int(row["losses"]))


def impose_printed_wtl(
    reference: np.ndarray, other: np.ndarray, printed: WinTieLoss, decimals: int = TABLE_DECIMALS
) -> np.ndarray | None:
    """Paired differences of rounded accuracies with some rounding ties (zero differences) turned into the
    wins/losses the printed W/T/L requires. The resolved ties get the smallest magnitudes (1e-7, 2e-7, ...;
    wins first): in full precision they differ by less than any difference visible in the table. ``None``
    if the printed counts are not reachable from the table."""
    ref = np.round(np.asarray(reference, float), decimals)
    oth = np.round(np.asarray(other, float), decimals)
    d = np.round(ref - oth, 12)
    rounded, _ = win_tie_loss_range(ref, oth, decimals)
    if not printed.reachable_from(rounded):
        return None
    k_w, k_l = printed.wins - rounded.wins, printed.losses - rounded.losses
    zeros = np.flatnonzero(d == 0)
    d = d.copy()
    for j, i in enumerate(zeros[:k_w]):
        d[i] = 1e-7 * (j + 1)
    for j, i in enumerate(zeros[k_w : k_w + k_l]):
        d[i] = -1e-7 * (k_w + j + 1)
    return d


def _paper_archive(ref: PaperReference, archive: str):
    df = paper_results_frame(ref.per_dataset[archive], archive)
    meta = method_metadata(df)
    matrix = build_matrices(df)[(archive, "full")]
    return df, meta, matrix


def paper_self_check(
    ref: PaperReference, reference: str = "chorustic", alpha: float = 0.05
) -> dict[str, pd.DataFrame]:
    """Recompute the paper's printed statistics from its per-dataset tables (see the module docstring).

    Returns DataFrames ``averages``, ``ranks``, ``wtl``, ``wilcoxon``, ``significance``, ``gains`` (each
    with a ``status`` column) and ``verdict`` (one row per check kind: passed or not). One function per
    check: :func:`_average_row`, :func:`_rank_row`, :func:`_wtl_row`, :func:`_wilcoxon_rows`,
    :func:`_significance_rows`, :func:`_gain_rows`, :func:`_verdict`.
    """
    out: dict[str, list] = {k: [] for k in ("averages", "ranks", "wtl", "wilcoxon", "significance", "gains")}
    head = ref.headline if ref.headline is not None else pd.DataFrame()
    computed_avgs: dict[tuple[str, str], float] = {}
    for archive in ("UEA", "UCR"):
        if archive not in ref.per_dataset:
            continue
        _, meta, matrix = _paper_archive(ref, archive)
        disp = meta["display_name"]
        summ = summary_frame(matrix, meta, reference).set_index("display_name")
        rank_range = average_rank_range(matrix.complete(), TABLE_DECIMALS).rename(index=disp)
        printed = (
            head[(head.get("table") == "main") & (head.get("archive_name") == archive)] if len(head) else head
        )
        printed = printed.set_index("paper_method") if len(printed) else printed
        for name, s in summ.iterrows():
            computed_avgs[(archive, name)] = s["avg_acc"]
            p = printed.loc[name] if len(printed) and name in printed.index else None
            out["averages"].append(_average_row(archive, name, s, p))
            out["ranks"].append(_rank_row(archive, name, s, p, rank_range))
            if name != disp.get(reference):
                out["wtl"].append(_wtl_row(archive, name, s, p))
        # Wilcoxon + Holm on the whole family (every baseline of the table), as printed and as the table gives
        comp = comparison_frame(matrix, meta, reference, alpha, "main_" + archive)
        if comp.empty:
            continue
        out["wilcoxon"] += _wilcoxon_rows(ref, archive, comp, matrix.complete(), printed, reference, alpha)
        out["significance"] += _significance_rows(ref, archive, comp)
    out["gains"] = _gain_rows(ref, head, computed_avgs)
    frames = {k: pd.DataFrame(v) for k, v in out.items()}
    frames["verdict"] = _verdict(frames)
    return frames


def _average_row(archive: str, name: str, s: pd.Series, p: pd.Series | None) -> dict:
    """The average accuracy of a method against the printed one (within the tables' rounding)."""
    pa = float(p["avg_acc_pct"]) if p is not None else np.nan
    diff = 100 * s["avg_acc"] - pa
    return {
        "archive": archive,
        "method": name,
        "computed_pct": 100 * s["avg_acc"],
        "printed_pct": pa,
        "diff_pp": diff,
        "status": "not printed"
        if np.isnan(pa)
        else ("reproduced" if abs(diff) <= AVERAGE_TOLERANCE_PP + 1e-9 else "MISMATCH"),
    }


def _rank_row(archive: str, name: str, s: pd.Series, p: pd.Series | None, rank_range: pd.DataFrame) -> dict:
    """The average rank against the printed one, or the range the tables' rounding ties allow."""
    pr = float(p["avg_rank"]) if p is not None and not pd.isna(p["avg_rank"]) else np.nan
    lo, hi = rank_range.loc[name, "low"], rank_range.loc[name, "high"]
    if np.isnan(pr):
        st = "not printed"
    elif round(s["avg_rank"], 2) == round(pr, 2):
        st = "reproduced"
    elif lo - 0.005 <= pr <= hi + 0.005:
        st = "unreachable from the 4-decimal table (rounding ties); printed value within the reachable range"
    else:
        st = "INCONSISTENT: outside the range the table's rounding allows"
    return {
        "archive": archive,
        "method": name,
        "computed": s["avg_rank"],
        "printed": pr,
        "reachable_low": lo,
        "reachable_high": hi,
        "status": st,
    }


def _wtl_row(archive: str, name: str, s: pd.Series, p: pd.Series | None) -> dict:
    """The W/T/L against the reference, against the printed one (or reachable under rounding ties)."""
    pw = _wtl_from_row(p) if p is not None else None
    cw = WinTieLoss(int(s["wins"]), int(s["ties"]), int(s["losses"])) if not pd.isna(s["wins"]) else None
    if pw is None or cw is None:
        st = "not printed"
    elif pw == cw:
        st = "reproduced"
    elif pw.reachable_from(cw):
        st = "unreachable from the 4-decimal table (rounding ties); printed value reachable"
    else:
        st = "INCONSISTENT: not reachable from the table"
    return {
        "archive": archive,
        "method": name,
        "computed": str(cw) if cw else "",
        "printed": str(pw) if pw else "",
        "status": st,
    }


def _wilcoxon_rows(
    ref: PaperReference,
    archive: str,
    comp: pd.DataFrame,
    values: pd.DataFrame,
    printed: pd.DataFrame,
    reference: str,
    alpha: float,
) -> list[dict]:
    """Wilcoxon raw and Holm p-values against the printed ones, also with the printed W/T/L imposed on
    the rounding ties (:func:`impose_printed_wtl`), and the significance decision."""
    wil = (
        ref.wilcoxon[ref.wilcoxon["archive_name"] == archive].set_index("baseline")
        if ref.wilcoxon is not None
        else pd.DataFrame()
    )
    imposed_p = []
    for _, r in comp.iterrows():
        name = r["display_name"]
        pw = _wtl_from_row(printed.loc[name]) if len(printed) and name in printed.index else None
        if pw is None and name in wil.index:
            pw = _wtl_from_row(wil.loc[name])
        cw = WinTieLoss(int(r["wins"]), int(r["ties"]), int(r["losses"]))
        d = (
            impose_printed_wtl(values[reference].to_numpy(), values[r["method"]].to_numpy(), pw)
            if pw is not None and pw != cw
            else None
        )
        imposed_p.append(wilcoxon_signed_rank(d, np.zeros_like(d)).p_value if d is not None else r["p_raw"])
    imposed_holm = holm_correction(imposed_p, alpha).adjusted
    rows = []
    for i, (_, r) in enumerate(comp.iterrows()):
        pr = wil.loc[r["display_name"]] if r["display_name"] in wil.index else None
        rows.append(_wilcoxon_row(archive, r, pr, imposed_p[i], imposed_holm[i], alpha))
    return rows


def _wilcoxon_row(
    archive: str, r: pd.Series, pr: pd.Series | None, imp_raw: float, imp_holm: float, alpha: float
) -> dict:
    p_raw_printed = float(pr["raw_p"]) if pr is not None and not pd.isna(pr["raw_p"]) else np.nan
    p_holm_printed = float(pr["holm_p"]) if pr is not None and not pd.isna(pr["holm_p"]) else np.nan
    row = {
        "archive": archive,
        "method": r["display_name"],
        "computed_wtl": f"{r['wins']}/{r['ties']}/{r['losses']}",
        "printed_wtl": "" if pr is None else f"{int(pr['wins'])}/{int(pr['ties'])}/{int(pr['losses'])}",
        "n_eff": r["n_eff"],
        "W": r["W"],
        "p_raw": r["p_raw"],
        "p_holm": r["p_holm"],
        "p_raw_printed_wtl": imp_raw,
        "p_holm_printed_wtl": imp_holm,
        "printed_p_raw": p_raw_printed,
        "printed_p_holm": p_holm_printed,
        "significant": bool(r["significant"]),
        "printed_significant": (p_holm_printed <= alpha) if not np.isnan(p_holm_printed) else None,
    }
    if pr is None:
        row["status"] = "not printed"
        return row
    checks = []
    for kind, comp_v, imp_v, printed_v in (
        ("raw", r["p_raw"], imp_raw, p_raw_printed),
        ("Holm", r["p_holm"], imp_holm, p_holm_printed),
    ):
        if np.isnan(printed_v):
            continue
        if same_printed(comp_v, printed_v):
            checks.append(f"{kind} p reproduced")
        elif same_printed(imp_v, printed_v):
            checks.append(f"{kind} p reproduced once the printed W/T/L is imposed on the rounding ties")
        else:
            rel = abs(imp_v - printed_v) / printed_v
            checks.append(
                f"{kind} p not reproduced to 3 digits (closest {imp_v:.3g} vs {printed_v:.3g}, "
                f"{100 * rel:.1f}% apart)"
            )
    sig_ok = row["printed_significant"] is None or row["printed_significant"] == row["significant"]
    checks.append("same significance decision" if sig_ok else "DIFFERENT significance decision")
    row["status"] = "; ".join(checks)
    return row


def _significance_rows(ref: PaperReference, archive: str, comp: pd.DataFrame) -> list[dict]:
    """The comparisons the text calls significant after Holm, against this harness's decision."""
    if ref.significant is None:
        return []
    sig = ref.significant[ref.significant["archive_name"] == archive].set_index("baseline")["significant"]
    return [
        {
            "archive": archive,
            "method": r["display_name"],
            "computed_significant": bool(r["significant"]),
            "printed_significant": bool(sig[r["display_name"]]),
            "p_holm": r["p_holm"],
            "status": "reproduced" if bool(r["significant"]) == bool(sig[r["display_name"]]) else "MISMATCH",
        }
        for _, r in comp.iterrows()
        if r["display_name"] in sig.index
    ]


def _gain_rows(
    ref: PaperReference, head: pd.DataFrame, computed_avgs: dict[tuple[str, str], float]
) -> list[dict]:
    """The relative gains quoted in the text, from the unrounded and from the printed averages."""
    if ref.gains is None:
        return []
    rows = []
    for _, g in ref.gains.iterrows():
        a, b = g["method"], g["baseline"]
        from_table = np.nan
        if (
            g["run_protocol"] == "full"
            and (g["archive_name"], a) in computed_avgs
            and (g["archive_name"], b) in computed_avgs
        ):
            from_table = 100 * relative_gain(
                computed_avgs[(g["archive_name"], a)], computed_avgs[(g["archive_name"], b)]
            )
        pa = (
            head[
                (head["archive_name"] == g["archive_name"])
                & (head["run_protocol"] == g["run_protocol"])
                & (head["table"] != "ablation")
            ].set_index("paper_method")["avg_acc_pct"]
            if len(head)
            else pd.Series(dtype=float)
        )
        from_printed = 100 * relative_gain(pa[a], pa[b]) if a in pa.index and b in pa.index else np.nan
        printed = float(g["relative_gain_pct"])
        if not np.isnan(from_table) and round(from_table, 2) == printed:
            st = "reproduced from the unrounded averages"
        elif not np.isnan(from_printed) and round(from_printed, 2) == printed:
            st = "reproduced from the printed (rounded) averages" + (
                "" if np.isnan(from_table) else f"; from unrounded averages: {from_table:.2f}"
            )
        else:
            st = "not reproduced"
        rows.append(
            {
                "archive": g["archive_name"],
                "protocol": g["run_protocol"],
                "method": a,
                "baseline": b,
                "from_unrounded_pct": from_table,
                "from_printed_averages_pct": from_printed,
                "printed_pct": printed,
                "status": st,
            }
        )
    return rows


def _verdict(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per check kind: passed or not, with the counts."""
    verdict = []
    av = frames["averages"]
    printed_av = av[av["status"] != "not printed"] if len(av) else av
    verdict.append(
        {
            "check": "every printed average accuracy within 0.01 points",
            "passed": bool(len(printed_av)) and bool((printed_av["status"] == "reproduced").all()),
            "detail": f"{int((printed_av['status'] == 'reproduced').sum()) if len(printed_av) else 0}/{len(printed_av)} reproduced",
        }
    )
    for k in ("ranks", "wtl"):
        f = frames[k]
        f2 = f[f["status"] != "not printed"] if len(f) else f
        ok = bool(len(f2)) and not f2["status"].str.startswith("INCONSISTENT").any()
        verdict.append(
            {
                "check": f"every printed {'average rank' if k == 'ranks' else 'W/T/L'} reproduced or reachable under rounding",
                "passed": ok,
                "detail": f"{int((f2['status'] == 'reproduced').sum()) if len(f2) else 0}/{len(f2)} reproduced exactly, "
                f"{int(f2['status'].str.startswith('unreachable').sum()) if len(f2) else 0} only reachable under rounding",
            }
        )
    w = frames["wilcoxon"]
    w2 = w[w["status"] != "not printed"] if len(w) else w
    verdict.append(
        {
            "check": "same Holm significance decision for every printed Wilcoxon comparison",
            "passed": bool(len(w2)) and not w2["status"].str.contains("DIFFERENT").any(),
            "detail": f"{len(w2)} printed comparisons",
        }
    )
    s = frames["significance"]
    verdict.append(
        {
            "check": "Holm-significant comparisons (alpha = 0.05) are exactly those the paper names",
            "passed": bool(len(s)) and bool((s["status"] == "reproduced").all()),
            "detail": f"{int((s['status'] == 'reproduced').sum()) if len(s) else 0}/{len(s)} agree",
        }
    )
    return pd.DataFrame(verdict)




def _paper_column(method: str, meta: pd.DataFrame, columns) -> str | None:
    disp = str(meta.loc[method, "display_name"])
    if disp in columns:
        return disp
    inverse = {v: k for k, v in PAPER_COLUMN_TO_RUN_NAME.items()}
    return inverse.get(method) if inverse.get(method) in columns else None


def compare_with_paper(
    matrices: dict[tuple[str, str], AccuracyMatrix],
    meta: pd.DataFrame,
    ref: PaperReference,
    summaries: pd.DataFrame,
    threshold_pp: float = 2.0,
    ablation_summaries: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """Per-dataset and headline comparison of the harness's results with the paper.

    ``summaries``: the report's summary frame (every archive/protocol/method: ``avg_acc``, ``n_common``);
    ``ablation_summaries``: the same for the ablation tables (complete model + variants, their own common
    set), used for the paper's ablation rows.
    Returns ``per_dataset`` (method, archive, dataset, ours, paper, diff_pp, off), ``per_method`` (MAD and
    the datasets off by more than ``threshold_pp`` points) and ``headline`` (averages side by side).
    """
    rows = []
    for archive, paper in ref.per_dataset.items():
        mx = matrices.get((archive, "full"))
        if mx is None:
            continue
        for m in mx.methods:
            col = _paper_column(m, meta, paper.columns)
            if col is None:
                continue
            for d in mx.values.index:
                ours = mx.values.loc[d, m]
                theirs = paper[col].get(d, np.nan)
                rows.append(
                    {
                        "archive": archive,
                        "method": m,
                        "display_name": meta.loc[m, "display_name"],
                        "reported": bool(meta.loc[m, "reported"]),
                        "dataset": d,
                        "ours": ours,
                        "paper": theirs,
                        "diff_pp": 100 * (ours - theirs)
                        if not (np.isnan(ours) or np.isnan(theirs))
                        else np.nan,
                        "note": ""
                        if not np.isnan(theirs) and not np.isnan(ours)
                        else (
                            "missing in our results" if np.isnan(ours) else "dataset not in the paper's table"
                        ),
                    }
                )
    per = pd.DataFrame(
        rows,
        columns=[
            "archive",
            "method",
            "display_name",
            "reported",
            "dataset",
            "ours",
            "paper",
            "diff_pp",
            "note",
        ],
    )
    per["off"] = per["diff_pp"].abs() > threshold_pp
    pm = []
    for (archive, m), g in per.groupby(["archive", "method"], sort=False):
        both = g.dropna(subset=["diff_pp"])
        off = both[both["off"]]
        pm.append(
            {
                "archive": archive,
                "method": m,
                "display_name": g["display_name"].iloc[0],
                "reported": bool(g["reported"].iloc[0]),
                "n_compared": len(both),
                "n_missing_ours": int(g["ours"].isna().sum()),
                "n_not_in_paper": int(g["paper"].isna().sum()),
                "mean_abs_diff_pp": both["diff_pp"].abs().mean() if len(both) else np.nan,
                "mean_diff_pp": both["diff_pp"].mean() if len(both) else np.nan,
                "max_abs_diff_pp": both["diff_pp"].abs().max() if len(both) else np.nan,
                "n_off": len(off),
                "datasets_off": ", ".join(f"{d} ({v:+.2f})" for d, v in zip(off["dataset"], off["diff_pp"])),
            }
        )
    per_method = pd.DataFrame(pm)

    head_rows = []
    head = ref.headline
    if head is not None and len(summaries):
        for _, h in head.iterrows():
            pm_name = h["paper_method"]
            cands = [pm_name] + [m for m in meta.index if meta.loc[m, "display_name"] == pm_name]
            if pm_name in PAPER_COLUMN_TO_RUN_NAME:
                cands.append(PAPER_COLUMN_TO_RUN_NAME[pm_name])
            run = next((c for c in cands if c in meta.index), None)
            if run is None:
                continue
            src = (
                ablation_summaries
                if h["table"] == "ablation" and ablation_summaries is not None
                else summaries
            )
            if src is None or src.empty:
                continue
            s = src[
                (src["archive"] == h["archive_name"])
                & (src["protocol"] == h["run_protocol"])
                & (src["method"] == run)
            ]
            if s.empty:
                continue
            s = s.iloc[0]
            same = np.nan
            paper_tab = ref.per_dataset.get(h["archive_name"])
            mx = matrices.get((h["archive_name"], h["run_protocol"]))
            col = _paper_column(run, meta, paper_tab.columns) if paper_tab is not None else None
            if (
                h["run_protocol"] == "full"
                and col is not None
                and mx is not None
                and h["table"] != "ablation"
            ):
                common = [
                    d
                    for d in mx.common([m for m in mx.methods_with_results if m in set(src["method"])])
                    if d in paper_tab.index
                ]
                if common and len(common) == s["n_common"]:
                    same = 100 * paper_tab.loc[common, col].mean()
            ours = 100 * s["avg_acc"]
            head_rows.append(
                {
                    "table": h["table"],
                    "archive": h["archive_name"],
                    "protocol": h["run_protocol"],
                    "method": run,
                    "display_name": meta.loc[run, "display_name"],
                    "reported": bool(meta.loc[run, "reported"]),
                    "ours_pct": ours,
                    "ours_n_datasets": int(s["n_common"]),
                    "paper_same_datasets_pct": same,
                    "diff_same_datasets_pp": ours - same if not np.isnan(same) else np.nan,
                    "paper_printed_pct": float(h["avg_acc_pct"]),
                    "paper_n_datasets": int(h["n_datasets"]) if not pd.isna(h["n_datasets"]) else np.nan,
                    "diff_printed_pp": ours - float(h["avg_acc_pct"]),
                }
            )
    headline = pd.DataFrame(head_rows)
    return {"per_dataset": per, "per_method": per_method, "headline": headline}


#: Columns of :func:`differences_from_reference`.
REFERENCE_COLUMNS = [
    "archive", "method", "display_name", "dataset", "protocol", "seed", "accuracy", "reference_accuracy",
    "n_test", "basis", "n_cases_differ", "probabilities", "portable_numerics", "status",
]


def differences_from_reference(
    results: pd.DataFrame,
    results_dir: str | Path,
    reference: pd.DataFrame,
    reference_dir: str | Path,
) -> pd.DataFrame:
    """Every run with an outcome (``ok``) in both ``results`` and ``reference`` (two ``accuracies.csv``
    tables; ``*_dir``: the folders holding them and their prediction files), one row each
    (:data:`REFERENCE_COLUMNS`), differing runs first.

    ``basis`` ``predictions`` (both prediction files present): ``n_cases_differ`` is the number of test
    cases predicted as another class and ``probabilities`` says whether every probability is
    bit-identical; ``basis`` ``accuracy`` (a reference without the file): ``n_cases_differ`` is the
    smallest number of test cases the two accuracies allow (|difference| x n_test).
    ``status``: ``identical`` | ``same predictions, other probabilities`` | ``same accuracy`` | ``differs``.
    ``portable_numerics`` (from ``results``): False for a run whose bit-identity across machines is not
    guaranteed (GPU, no portable pins; :mod:`chorustic.evaluation.numerics`).
    """
    from chorustic.evaluation.results import read_result_file, result_path

    key = ["method", "dataset", "protocol", "seed"]
    ours = results[results["status"] == "ok"].copy()
    ref = reference[reference["status"] == "ok"][key + ["accuracy"]].rename(
        columns={"accuracy": "reference_accuracy"}
    )
    for df in (ours, ref):
        df["seed"] = df["seed"].astype(int)
    both = ours.merge(ref, on=key, how="inner")
    rows = []
    for r in both.itertuples(index=False):
        mine = result_path(results_dir, r.protocol, r.method, r.dataset, r.seed)
        theirs = result_path(reference_dir, r.protocol, r.method, r.dataset, r.seed)
        portable = getattr(r, "portable_numerics", None)
        row = {
            "archive": r.archive,
            "method": r.method,
            "display_name": r.display_name,
            "dataset": r.dataset,
            "protocol": r.protocol,
            "seed": int(r.seed),
            "accuracy": float(r.accuracy),
            "reference_accuracy": float(r.reference_accuracy),
            "n_test": None if pd.isna(getattr(r, "n_test", None)) else int(r.n_test),
            "portable_numerics": None if portable is None or pd.isna(portable) else bool(portable),
        }
        if mine.is_file() and theirs.is_file():
            a, b = read_result_file(mine), read_result_file(theirs)
            same_shape = a.y_pred.shape == b.y_pred.shape and a.proba.shape == b.proba.shape
            n_diff = int(np.sum(a.y_pred != b.y_pred)) if same_shape else max(len(a.y_pred), len(b.y_pred))
            identical_p = same_shape and bool(np.array_equal(a.proba, b.proba))
            row.update(basis="predictions", n_cases_differ=n_diff,
                       probabilities="identical" if identical_p else "differ")
            row["status"] = ("identical" if identical_p else "same predictions, other probabilities") \
                if n_diff == 0 else "differs"
        else:
            n = row["n_test"] or 0
            n_diff = int(round(abs(row["accuracy"] - row["reference_accuracy"]) * n))
            row.update(basis="accuracy", n_cases_differ=n_diff, probabilities=None,
                       status="same accuracy" if n_diff == 0 else "differs")
        rows.append(row)
    out = pd.DataFrame(rows, columns=REFERENCE_COLUMNS)
    if len(out):
        out["_d"] = out["status"] != "differs"
        out = out.sort_values(["_d", "archive", "dataset", "method"], kind="mergesort").drop(columns="_d")
    return out.reset_index(drop=True)
