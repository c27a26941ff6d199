"""Two-sided Wilcoxon signed-rank test on paired per-dataset accuracies (paper App. C.5).

* Differences are ``x - y`` (reference minus baseline), rounded to
  :data:`~chorustic.stats.TIE_DECIMALS` decimals; exact zeros are dropped (Wilcoxon's zero convention,
  ``zero_method="wilcox"``) and the number of nonzero differences is ``n_eff``.
* ``W+`` / ``W-`` are the sums of the ranks of |d| (ties averaged) of the positive / negative differences;
  the reported statistic is ``W = min(W+, W-)``.
* The p-value comes from :func:`scipy.stats.wilcoxon` with ``method="exact"``: the exact null distribution
  of the signed-rank statistic, as the paper did. When |d| has ties the statistic can be non-integral;
  scipy then rounds it conservatively (``has_rank_ties`` flags this case).

Numerical note. scipy evaluates the upper tail of the exact distribution as ``1 - cdf``, which cancels to
0 when the p-value is below ~1e-16 and the positive side holds the large rank sum (e.g. UCR-128,
ChorusTIC vs NuTime+RF, p ~ 5e-31). The test is symmetric, so we always pass the differences oriented such
that ``W+`` is the smaller rank sum: the tail is then summed directly and stays accurate down to the
smallest double. If it still underflows (n_eff above ~1000), the result says so (``p_is_bound``) and
``p_value`` is the bound ``p < 2.2e-308``, never 0.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import scipy.stats

from chorustic.stats._common import tie_round

__all__ = ["WilcoxonResult", "wilcoxon_signed_rank", "P_UNDERFLOW_BOUND", "smallest_attainable_p",
           "significance_note"]

#: Reported upper bound of a p-value whose exact value underflows double precision.
P_UNDERFLOW_BOUND = float(np.finfo(float).tiny)


@dataclasses.dataclass(frozen=True)
class WilcoxonResult:
    n: int
    """number of paired datasets"""
    n_zero: int
    """datasets with an exact zero difference (dropped)"""
    n_eff: int
    """nonzero differences used by the test"""
    w_plus: float
    """rank sum of the positive differences (x better than y)"""
    w_minus: float
    """rank sum of the negative differences"""
    statistic: float
    """W = min(W+, W-)"""
    p_value: float
    """two-sided p-value of the exact null distribution (an upper bound when ``p_is_bound``)"""
    p_is_bound: bool = False
    has_rank_ties: bool = False
    method: str = "exact"
    note: str = ""

    def format_p(self, digits: int = 3) -> str:
        return format_p(self.p_value, self.p_is_bound, digits)


def format_p(p: float, is_bound: bool = False, digits: int = 3) -> str:
    """``4.70e-06``, ``< 2.23e-308`` for a bound, ``1`` for exactly one, ``-`` for NaN."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "-"
    text = f"{p:.{digits - 1}e}" if p < 1 else "1"
    return f"< {text}" if is_bound else text


def wilcoxon_signed_rank(x, y) -> WilcoxonResult:
    """Exact two-sided Wilcoxon signed-rank test of paired samples ``x`` and ``y`` (no missing values).

    With no nonzero difference (``n_eff == 0``) there is no evidence against the null hypothesis: the
    p-value is reported as 1 (and ``note`` says why), which keeps a Holm family conservative.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(
            f"wilcoxon_signed_rank needs two 1-d samples of equal length, got {x.shape} and {y.shape}"
        )
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError(
            "wilcoxon_signed_rank: missing values; pair the methods on their common datasets first"
        )
    d = tie_round(x - y)
    n = int(d.size)
    nonzero = d[d != 0]
    n_eff = int(nonzero.size)
    if n_eff == 0:
        return WilcoxonResult(
            n=n,
            n_zero=n,
            n_eff=0,
            w_plus=0.0,
            w_minus=0.0,
            statistic=0.0,
            p_value=1.0,
            note="no nonzero difference: p reported as 1",
        )
    ranks = scipy.stats.rankdata(np.abs(nonzero), method="average")
    w_plus = float(ranks[nonzero > 0].sum())
    w_minus = float(ranks[nonzero < 0].sum())
    has_rank_ties = bool(np.unique(np.abs(nonzero)).size < n_eff)
    oriented = nonzero if w_plus <= w_minus else -nonzero  # W+ := the smaller rank sum (see module note)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns that 'exact' is conservative with ties: flagged above
        res = scipy.stats.wilcoxon(oriented, zero_method="wilcox", alternative="two-sided", method="exact")
    statistic = min(w_plus, w_minus)
    if not math.isclose(float(res.statistic), statistic, rel_tol=0, abs_tol=1e-9):  # pragma: no cover
        raise RuntimeError(
            f"scipy's Wilcoxon statistic {res.statistic} differs from min(W+, W-) = {statistic}"
        )
    p = float(res.pvalue)
    p_is_bound = False
    note = ""
    if p <= 0.0:
        p, p_is_bound = P_UNDERFLOW_BOUND, True
        note = f"exact p underflows double precision (n_eff={n_eff}); reported as the bound p < {P_UNDERFLOW_BOUND:.2e}"
    elif has_rank_ties:
        note = "ties in |d|: exact null with scipy's conservative rounding of W"
    return WilcoxonResult(
        n=n,
        n_zero=n - n_eff,
        n_eff=n_eff,
        w_plus=w_plus,
        w_minus=w_minus,
        statistic=statistic,
        p_value=min(p, 1.0),
        p_is_bound=p_is_bound,
        has_rank_ties=has_rank_ties,
        note=note,
    )


def smallest_attainable_p(n: int, family_size: int = 1) -> float:
    """The smallest Holm-adjusted p-value any comparison of a family of ``family_size`` can reach with ``n``
    paired datasets: the exact two-sided test's smallest p is ``2 / 2**n`` (all n differences nonzero, of one
    sign), and Holm multiplies the smallest raw p of the family by ``family_size``."""
    if n < 1:
        return 1.0
    return min(1.0, max(1, int(family_size)) * 2.0 ** (1 - int(n)))


def significance_note(n: int, family_size: int, alpha: float) -> str | None:
    """One sentence when no comparison can be significant: with ``n`` datasets and a Holm family of
    ``family_size``, the smallest attainable p exceeds ``alpha`` (None when significance is attainable)."""
    p = smallest_attainable_p(n, family_size)
    if p <= alpha:
        return None
    need = next(k for k in range(1, 64) if smallest_attainable_p(k, family_size) <= alpha)
    return (f"Not enough datasets for significance: with {n} dataset{'s' if n != 1 else ''} and a Holm family of "
            f"{family_size} comparison{'s' if family_size != 1 else ''}, the smallest attainable p is {p:.3g} > "
            f"\u03b1 = {alpha:g}, so no difference here can be significant whatever the accuracies "
            f"(it takes at least {need} datasets).")
