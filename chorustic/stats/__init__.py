"""Statistics of the paper (Sec. 4.1 "Metrics and statistical analysis", App. C.5).

One module per statistic, all working on an *accuracy matrix*: a ``pandas.DataFrame`` with one row per
dataset, one column per method, accuracies in [0, 1] (full precision, never the rounded table values):

* :mod:`~chorustic.stats.accuracy`      unweighted mean accuracy over datasets, the common dataset set
* :mod:`~chorustic.stats.ranks`         average rank (rank 1 = highest accuracy, ties averaged)
* :mod:`~chorustic.stats.win_tie_loss`  win/tie/loss counts from a reference method's perspective
* :mod:`~chorustic.stats.relative_gain` (A_ours - A_ref) / A_ref from unrounded averages
* :mod:`~chorustic.stats.wilcoxon`      two-sided Wilcoxon signed-rank test, exact null, zeros dropped
* :mod:`~chorustic.stats.holm`          Holm correction within a family of comparisons
* :mod:`~chorustic.stats.comparison`    the statistical comparison table composing the above
* :mod:`~chorustic.stats.bootstrap`     percentile bootstrap intervals of means over datasets

Equality of two accuracies (a tie in rank, W/T/L, or a zero Wilcoxon difference) is decided after rounding
to :data:`TIE_DECIMALS` decimals, so that floating-point noise of averaged accuracies (1e-16) never turns
an exact tie into a win.
"""

from chorustic.stats._common import TIE_DECIMALS, check_matrix
from chorustic.stats.bootstrap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, bootstrap_mean_ci
from chorustic.stats.accuracy import average_accuracy, common_datasets
from chorustic.stats.comparison import compare_with_reference
from chorustic.stats.holm import HolmResult, holm_correction
from chorustic.stats.ranks import average_rank, average_rank_range, per_dataset_ranks
from chorustic.stats.relative_gain import relative_gain
from chorustic.stats.wilcoxon import (
    WilcoxonResult,
    significance_note,
    smallest_attainable_p,
    wilcoxon_signed_rank,
)
from chorustic.stats.win_tie_loss import WinTieLoss, win_tie_loss, win_tie_loss_range

__all__ = [
    "TIE_DECIMALS",
    "check_matrix",
    "average_accuracy",
    "common_datasets",
    "average_rank",
    "average_rank_range",
    "per_dataset_ranks",
    "WinTieLoss",
    "win_tie_loss",
    "win_tie_loss_range",
    "relative_gain",
    "WilcoxonResult",
    "wilcoxon_signed_rank",
    "HolmResult",
    "holm_correction",
    "compare_with_reference",
    "smallest_attainable_p",
    "significance_note",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "bootstrap_mean_ci",
]
