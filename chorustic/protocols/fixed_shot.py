"""Fixed-shot protocol: k labeled examples per class (paper: k in {5, 10}, seeds 0-4).

A dataset is excluded at level k when any class has fewer than k training examples (paper Sec. 4.1:
"A dataset is excluded at shot level k if any class has fewer than k training examples"). Every method
reads the same context files, so all methods use identical support sets.
"""

from __future__ import annotations

import numpy as np

from chorustic.protocols.base import Ineligible, class_counts

__all__ = ["fixed_shot_context", "is_eligible"]


def is_eligible(y_train: np.ndarray, k: int) -> bool:
    return min(class_counts(y_train).values()) >= k


def fixed_shot_context(y_train: np.ndarray, k: int, seed: int, class_labels=None) -> np.ndarray:
    """Sample ``k`` training indices per class without replacement; sorted ascending.

    Sampling uses ``numpy.random.default_rng(seed)`` and draws the classes in ascending label order,
    so the context depends only on (labels, k, seed). ``class_labels[c]`` (the dataset's own label of
    encoded class ``c``) names the classes in the ineligibility reason.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    y_train = np.asarray(y_train)
    counts = class_counts(y_train)
    short = {c: n for c, n in counts.items() if n < k}
    if short:
        def name(c):
            return repr(str(class_labels[c])) if class_labels is not None else str(c)

        detail = ", ".join(f"class {name(c)}: {n}" for c, n in sorted(short.items()))
        raise Ineligible(f"fewer than {k} training examples in {len(short)} class(es) ({detail})")
    rng = np.random.default_rng(seed)
    chosen = [rng.choice(np.flatnonzero(y_train == c), size=k, replace=False) for c in sorted(counts)]
    return np.sort(np.concatenate(chosen)).astype(np.int64)
