"""Robust channel-wise normalization and clipping of backgrounds."""

from __future__ import annotations

import numpy as np

__all__ = ["robust_normalize"]

_IQR_TO_STD = 1.0 / 1.349  # IQR of a standard normal


def robust_normalize(x: np.ndarray, clip: float = 5.0, eps: float = 1e-8) -> np.ndarray:
    """Center each series (last axis) on its median, scale by IQR/1.349 (falling back to the standard
    deviation, then 1, for near-constant series) and clip to ``[-clip, clip]``.

    Non-finite values are replaced by 0 first so a degenerate draw can never poison an episode.
    """
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    q25, med, q75 = np.percentile(x, [25.0, 50.0, 75.0], axis=-1, keepdims=True)
    scale = (q75 - q25) * _IQR_TO_STD
    std = x.std(axis=-1, keepdims=True)
    scale = np.where(scale > eps * 10, scale, std)
    scale = np.where(scale > eps, scale, 1.0)
    out = (x - med) / scale
    if clip is not None and clip > 0:
        np.clip(out, -clip, clip, out=out)
    return out
