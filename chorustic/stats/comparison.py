"""The statistical comparison of a reference method against every other method of one family (paper
App. C.5 and the appendix statistics): W/T/L, n_eff, W = min(W+, W-), raw exact Wilcoxon p, Holm-adjusted
p within the family, significance at alpha, plus both average accuracies and the relative gain."""

from __future__ import annotations

import pandas as pd

from chorustic.stats._common import check_matrix
from chorustic.stats.accuracy import average_accuracy
from chorustic.stats.holm import holm_correction
from chorustic.stats.relative_gain import relative_gain
from chorustic.stats.wilcoxon import wilcoxon_signed_rank
from chorustic.stats.win_tie_loss import win_tie_loss

__all__ = ["compare_with_reference", "COMPARISON_COLUMNS"]

COMPARISON_COLUMNS = [
    "method",
    "n_datasets",
    "wins",
    "ties",
    "losses",
    "n_eff",
    "w_plus",
    "w_minus",
    "W",
    "p_raw",
    "p_raw_is_bound",
    "p_holm",
    "p_holm_is_bound",
    "significant",
    "avg_acc_reference",
    "avg_acc_method",
    "relative_gain_pct",
    "has_rank_ties",
    "note",
]


def compare_with_reference(
    matrix: pd.DataFrame, reference: str, alpha: float = 0.05, methods: list[str] | None = None
) -> pd.DataFrame:
    """One row per method (every column but ``reference``, or ``methods``): the family is Holm-corrected
    together. ``matrix`` must be complete (restrict to the common datasets first). W/T/L and the sign of
    the differences are from the reference's perspective (a win = the reference is more accurate);
    ``relative_gain_pct`` is (A_reference - A_method) / A_method x 100."""
    values = check_matrix(matrix)
    if reference not in values.columns:
        raise KeyError(f"reference method {reference!r} is not among the methods {list(values.columns)}")
    others = [m for m in (methods if methods is not None else values.columns) if m != reference]
    if len(values) == 0 or not others:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    averages = average_accuracy(values)
    rows = []
    for m in others:
        wtl = win_tie_loss(values[reference], values[m])
        w = wilcoxon_signed_rank(values[reference].to_numpy(), values[m].to_numpy())
        rows.append(
            {
                "method": m,
                "n_datasets": len(values),
                "wins": wtl.wins,
                "ties": wtl.ties,
                "losses": wtl.losses,
                "n_eff": w.n_eff,
                "w_plus": w.w_plus,
                "w_minus": w.w_minus,
                "W": w.statistic,
                "p_raw": w.p_value,
                "p_raw_is_bound": w.p_is_bound,
                "avg_acc_reference": float(averages[reference]),
                "avg_acc_method": float(averages[m]),
                "relative_gain_pct": 100.0 * relative_gain(averages[reference], averages[m])
                if averages[m] > 0
                else float("nan"),
                "has_rank_ties": w.has_rank_ties,
                "note": w.note,
            }
        )
    out = pd.DataFrame(rows)
    holm = holm_correction(out["p_raw"].to_numpy(), alpha=alpha, is_bound=out["p_raw_is_bound"].to_numpy())
    out["p_holm"] = holm.adjusted
    out["p_holm_is_bound"] = holm.is_bound
    out["significant"] = holm.reject
    return out[COMPARISON_COLUMNS]
