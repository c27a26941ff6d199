"""The balanced class tree of the hierarchical extension (paper App. B, "Hierarchical Extension"): its shape.

For ``K > K_max`` classes a node splits its sorted classes into ``min(ceil(k / K_max), K_max)`` groups of
consecutive classes, larger groups first (25 -> [9, 8, 8]; 101 -> [11, 10 x 9], the 11-class child ->
[6, 5]); a node with at most ``K_max`` classes is a leaf. The in-context classifier runs once per node,
every query in each pass (:mod:`chorustic.model.hierarchical`). This module holds the shape alone, without
torch, so that a cost model (:mod:`chorustic.methods.cost`) counts the passes of a job it plans.
"""

from __future__ import annotations

import math

__all__ = ["K_MAX", "balanced_partition", "class_tree_passes"]

#: The classes one in-context pass decodes natively (the paper's and the released model's ``K_max``): the
#: default of :attr:`chorustic.model.config.ChorusTICConfig.max_classes` and the tree of ChorusTIC's cost models.
K_MAX = 10


def balanced_partition(num_classes: int, max_classes: int) -> list[int]:
    """Group id of each of ``num_classes`` consecutive classes (larger groups first)."""
    if num_classes <= max_classes:
        return [0] * num_classes
    n_groups = min(math.ceil(num_classes / max_classes), max_classes)
    out: list[int] = []
    remaining, remaining_groups = num_classes, n_groups
    for gid in range(n_groups):
        size = math.ceil(remaining / remaining_groups)
        out.extend([gid] * size)
        remaining -= size
        remaining_groups -= 1
    return out


def class_tree_passes(num_classes: int, max_classes: int) -> int:
    """The in-context passes a prediction over ``num_classes`` classes makes: the nodes of the tree (1 for
    ``num_classes <= max_classes``; 60 classes at ``K_max`` 10: the root and 6 leaves, 7)."""
    if num_classes <= max_classes:
        return 1
    groups = balanced_partition(num_classes, max_classes)
    return 1 + sum(class_tree_passes(groups.count(g), max_classes) for g in range(max(groups) + 1))
