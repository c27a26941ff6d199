"""Bootstrap confidence intervals over datasets (issue 73): how far an archive mean, or the difference of
two methods' archive means, would move on another draw of datasets from the same population.

The resampling unit is the dataset (the paper's unit of comparison): ``n_resamples`` draws of the common
datasets with replacement, the same draws for every method of one table (one seeded generator), and the
percentile interval of the resampled means (:func:`scipy.stats.bootstrap`, ``method="percentile"``). A
difference is resampled in pairs (one draw moves both methods' values of a dataset together).
"""

from __future__ import annotations

import numpy as np
import scipy.stats

__all__ = ["BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "CONFIDENCE", "bootstrap_mean_ci"]

#: Resamples of every interval the report prints (its captions say so).
BOOTSTRAP_RESAMPLES = 10_000
#: Seed of the generator: the same results give the same intervals.
BOOTSTRAP_SEED = 0
#: Level of every interval.
CONFIDENCE = 0.95


def bootstrap_mean_ci(
    values, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, level: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of the column means of ``values`` (datasets x columns, no missing values),
    resampling whole rows: ``(low, high)``, one value per column; NaN with fewer than two datasets (nothing
    to resample) or where every dataset has the same value (the interval is that value)."""
    x = np.asarray(values, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or np.isnan(x).any():
        raise ValueError("bootstrap_mean_ci needs a datasets x columns matrix without missing values")
    n, k = x.shape
    if n < 2 or k == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    constant = np.all(x == x[0], axis=0)
    low, high = x[0].copy(), x[0].copy()
    if (~constant).any():
        res = scipy.stats.bootstrap(
            (x[:, ~constant],), np.mean, axis=0, vectorized=True, n_resamples=n_resamples,
            confidence_level=level, method="percentile", rng=np.random.default_rng(seed),
        )
        low[~constant], high[~constant] = res.confidence_interval.low, res.confidence_interval.high
    return low, high
