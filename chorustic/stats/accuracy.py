"""Average accuracy (paper App. C.5, Eq. "AvgAcc"): the unweighted macro-average over datasets.

Every dataset has equal weight, whatever its test-set size. Averages of several methods are only
comparable on the same datasets, so :func:`average_accuracy` refuses a matrix with holes; use
:func:`common_datasets` to find the datasets where every method has a result and report the others as
missing.
"""

from __future__ import annotations

import pandas as pd

from chorustic.stats._common import check_matrix

__all__ = ["average_accuracy", "common_datasets"]


def common_datasets(matrix: pd.DataFrame, methods: list[str] | None = None) -> pd.Index:
    """Datasets (row labels) on which every method in ``methods`` (default: all columns) has a value."""
    values = check_matrix(matrix if methods is None else matrix[list(methods)], allow_missing=True)
    return values.index[values.notna().all(axis=1)]


def average_accuracy(matrix: pd.DataFrame) -> pd.Series:
    """Unweighted mean accuracy per method (column) over the datasets (rows), in [0, 1].

    Raises ``ValueError`` on missing values or an empty matrix.
    """
    values = check_matrix(matrix)
    if len(values) == 0:
        raise ValueError("average accuracy of an empty set of datasets is undefined")
    return values.mean(axis=0)
