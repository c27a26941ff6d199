"""Proportional protocol: class-stratified subsets of 20, 30, 40, 50 and 60 % of the training split.

Each class keeps ``max(1, round(fraction * n_c))`` examples (half-up rounding), so every class is
present in the context, and the subset size is within one example per class of
``fraction * n_train``. Sampling uses ``numpy.random.default_rng(seed)`` with classes drawn in
ascending label order; the paper's single shared subset per fraction corresponds to seed 0 (the
seed list is configurable).
"""

from __future__ import annotations

import math

import numpy as np

from chorustic.protocols.base import class_counts

__all__ = ["proportional_context", "per_class_budget"]


def per_class_budget(n_c: int, percent: int) -> int:
    return max(1, min(n_c, math.floor(n_c * percent / 100 + 0.5)))


def proportional_context(y_train: np.ndarray, percent: int, seed: int) -> np.ndarray:
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], got {percent}")
    y_train = np.asarray(y_train)
    rng = np.random.default_rng(seed)
    chosen = []
    for c, n_c in sorted(class_counts(y_train).items()):
        members = np.flatnonzero(y_train == c)
        chosen.append(rng.choice(members, size=per_class_budget(n_c, percent), replace=False))
    return np.sort(np.concatenate(chosen)).astype(np.int64)
