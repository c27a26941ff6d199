"""Shared helpers of the statistics modules."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Accuracies (and their differences) are compared after rounding to this many decimals: averaged
#: accuracies carry floating-point noise (~1e-16) that must not break an exact tie.
TIE_DECIMALS = 12


def check_matrix(
    matrix: pd.DataFrame, *, allow_missing: bool = False, what: str = "accuracy matrix", unit_interval: bool = True
) -> pd.DataFrame:
    """Validate an accuracy matrix (rows = datasets, columns = methods, values in [0, 1]; any finite value
    without ``unit_interval``, for a measure such as log loss).

    Returns it as float. Missing values (NaN) are an error unless ``allow_missing``: the statistics are
    computed on a common set of datasets, never on silently different ones.
    """
    if not isinstance(matrix, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame (rows = datasets, columns = methods)")
    if matrix.columns.duplicated().any():
        dup = sorted(set(matrix.columns[matrix.columns.duplicated()]))
        raise ValueError(f"{what}: duplicated method columns {dup}")
    if matrix.index.duplicated().any():
        dup = sorted(set(map(str, matrix.index[matrix.index.duplicated()])))
        raise ValueError(f"{what}: duplicated datasets {dup}")
    values = matrix.astype(float)
    if not allow_missing and values.isna().any().any():
        names = [
            f"{values.index[i]}:{values.columns[j]}" for i, j in zip(*np.where(values.isna().to_numpy()))
        ]
        raise ValueError(
            f"{what} has {len(names)} missing value(s) ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''}); "
            "restrict it to the common datasets first (chorustic.stats.common_datasets)"
        )
    finite = values.to_numpy()[~np.isnan(values.to_numpy())]
    if unit_interval and finite.size and (finite.min() < 0 or finite.max() > 1):
        raise ValueError(
            f"{what}: accuracies must lie in [0, 1], found [{finite.min():.6g}, {finite.max():.6g}]"
        )
    return values


def tie_round(values):
    """Round to :data:`TIE_DECIMALS` decimals (works on scalars, arrays, Series and DataFrames)."""
    if isinstance(values, (pd.Series, pd.DataFrame)):
        return values.round(TIE_DECIMALS)
    return np.round(values, TIE_DECIMALS)
