"""Relative gain (paper Sec. 4.1 and App. C.5, Eq. "RelGain"): (A_ours - A_ref) / A_ref, computed from
unrounded macro-average accuracies. Returned as a fraction; multiply by 100 for percent."""

from __future__ import annotations

import math

__all__ = ["relative_gain"]


def relative_gain(a_ours: float, a_ref: float) -> float:
    """(a_ours - a_ref) / a_ref; NaN if either is NaN. ``a_ref`` must be positive."""
    a_ours, a_ref = float(a_ours), float(a_ref)
    if math.isnan(a_ours) or math.isnan(a_ref):
        return math.nan
    if a_ref <= 0:
        raise ValueError(f"relative gain needs a positive reference accuracy, got {a_ref}")
    return (a_ours - a_ref) / a_ref
