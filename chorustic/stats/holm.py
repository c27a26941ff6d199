"""Holm's step-down correction within one family of comparisons (paper App. C.5: one family per archive,
significance at alpha = 0.05 on the corrected p-values), via
:func:`statsmodels.stats.multitest.multipletests` (``method="holm"``).

Raw p-values that are only upper bounds (an exact p that underflowed) give adjusted values that are upper
bounds too: every Holm-adjusted p is a non-decreasing function of each raw p. Such adjusted values are
flagged in ``is_bound``.
"""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
from statsmodels.stats.multitest import multipletests

__all__ = ["HolmResult", "holm_correction"]


@dataclasses.dataclass(frozen=True)
class HolmResult:
    adjusted: np.ndarray
    reject: np.ndarray
    is_bound: np.ndarray
    alpha: float


def holm_correction(pvalues, alpha: float = 0.05, is_bound=None) -> HolmResult:
    """Holm-adjusted p-values and reject decisions (``adjusted <= alpha``) of one family."""
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError("holm_correction expects a 1-d sequence of p-values")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    bound = np.zeros(p.shape, bool) if is_bound is None else np.asarray(is_bound, bool)
    if p.size == 0:
        return HolmResult(np.empty(0), np.empty(0, bool), np.empty(0, bool), alpha)
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"p-values must lie in [0, 1] without NaN, got {p.tolist()}")
    # statsmodels' Holm branch runs a full gc.collect() on every call: 0.2 s with a report's libraries loaded,
    # a sixth of a small report's time. The objects alive before the call are frozen (not scanned) meanwhile.
    gc.freeze()
    try:
        reject, adjusted, _, _ = multipletests(p, alpha=alpha, method="holm")
    finally:
        gc.unfreeze()
    # an adjusted value depends on every raw p not larger than its own: bound if any of those is a bound
    adj_bound = np.array([bool((bound & (p <= pi)).any()) for pi in p])
    return HolmResult(np.asarray(adjusted, float), np.asarray(reject, bool), adj_bound, alpha)
