"""Average rank (paper App. C.5): methods are ranked within each dataset, rank 1 = highest accuracy,
tied methods receive the average of the ranks they span; the average rank is the arithmetic mean of the
per-dataset ranks. Computed from full-precision accuracies (ties decided at
:data:`~chorustic.stats.TIE_DECIMALS` decimals).

:func:`average_rank_range` answers a different question, needed to check a *published* table: when the
accuracies are only known rounded to ``decimals`` places, values that print equal may differ in full
precision, so a method's true average rank can lie anywhere between "it won every such tie" and "it lost
every such tie". Distinct rounded values keep their order (rounding is monotone).
"""

from __future__ import annotations

import pandas as pd

from chorustic.stats._common import check_matrix, tie_round

__all__ = ["per_dataset_ranks", "average_rank", "average_rank_range"]


def per_dataset_ranks(matrix: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Rank of every method on every dataset (1 = best, ties averaged). ``higher_is_better=False``: a
    loss (log loss, any finite value), rank 1 = the lowest."""
    values = check_matrix(matrix, unit_interval=higher_is_better)
    return tie_round(values).rank(axis=1, ascending=not higher_is_better, method="average")


def average_rank(matrix: pd.DataFrame, higher_is_better: bool = True) -> pd.Series:
    """Mean over datasets of :func:`per_dataset_ranks`, per method."""
    ranks = per_dataset_ranks(matrix, higher_is_better)
    if len(ranks) == 0:
        raise ValueError("average rank over an empty set of datasets is undefined")
    return ranks.mean(axis=0)


def average_rank_range(matrix: pd.DataFrame, decimals: int = 4) -> pd.DataFrame:
    """Lowest and highest average rank each method can have when ``matrix`` holds values rounded to
    ``decimals`` places (columns ``low``, ``high``, and ``at_rounded`` = the rank of the rounded values).

    Per dataset, a method with ``a`` methods strictly above it and ``t`` methods (itself included) equal to
    it after rounding has a full-precision rank between ``a + 1`` and ``a + t``. The bounds are per method
    (a necessary condition: they ignore that the methods' tie resolutions are linked).
    """
    values = check_matrix(matrix).round(decimals).to_numpy()
    if values.shape[0] == 0:
        raise ValueError("average rank over an empty set of datasets is undefined")
    above = (values[:, None, :] > values[:, :, None]).sum(axis=2)  # [d, m] = #methods strictly better than m
    equal = (values[:, None, :] == values[:, :, None]).sum(axis=2)  # includes m itself
    low = (above + 1).mean(axis=0)
    high = (above + equal).mean(axis=0)
    at_rounded = (above + (equal + 1) / 2.0).mean(axis=0)
    return pd.DataFrame({"low": low, "high": high, "at_rounded": at_rounded}, index=matrix.columns)
