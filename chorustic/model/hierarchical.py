"""Hierarchical extension for many-class tasks (paper App. B, "Hierarchical Extension").

For K > K_max classes a balanced tree is built over the sorted classes (its shape has its home in
:mod:`chorustic.class_tree`, without torch, for the cost models): a node with more than K_max
classes splits them into ``min(ceil(k / K_max), K_max)`` groups of consecutive classes, group sizes
``ceil(remaining classes / remaining groups)`` (25 -> [9, 8, 8]; 101 -> [11, 10 x 9], the 11-class
child -> [6, 5]); a node with at most K_max classes is a leaf. At every node the in-context
classifier runs on that node's context rows (labels: child-group ids, or leaf-local class ids
0..k-1 in sorted order) plus all query rows, ``p = softmax(logits / T)``; a class's probability is
the product of the probabilities along its path (chain rule). As in the official code the returned
logits are ``T * log(p + 1e-6)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from torch import Tensor

from chorustic.class_tree import balanced_partition

__all__ = ["ClassNode", "balanced_partition", "build_class_tree", "hierarchical_probabilities"]


@dataclasses.dataclass
class ClassNode:
    classes: list[int]
    """Global class ids handled by this node, sorted."""
    rows: Tensor
    """Indices of the context rows whose class belongs to this node."""
    children: list[ClassNode] = dataclasses.field(default_factory=list)
    group_of_class: dict[int, int] = dataclasses.field(default_factory=dict)

    @property
    def is_leaf(self) -> bool:
        return not self.children


def build_class_tree(y: Tensor, max_classes: int, rows: Tensor | None = None) -> ClassNode:
    """The balanced class tree of the context labels ``y (n,)``."""
    y = y.detach().cpu().long()
    if rows is None:
        rows = torch.arange(y.numel())
    classes = sorted(int(c) for c in torch.unique(y[rows]))
    node = ClassNode(classes=classes, rows=rows)
    if len(classes) <= max_classes:
        return node
    groups = balanced_partition(len(classes), max_classes)
    node.group_of_class = {c: g for c, g in zip(classes, groups)}
    for gid in range(max(groups) + 1):
        members = torch.tensor([c for c in classes if node.group_of_class[c] == gid])
        child_rows = rows[torch.isin(y[rows], members)]
        node.children.append(build_class_tree(y, max_classes, child_rows))
    return node


NodePredictor = Callable[[Tensor, Tensor], Tensor]
"""``(context_rows (n_node,), labels (n_node,)) -> raw logits (n_query, >= k)`` for all queries."""


def hierarchical_probabilities(
    predict: NodePredictor, y: Tensor, max_classes: int, temperature: float = 0.9, trace: dict | None = None
) -> Tensor:
    """Class probabilities ``(n_query, K)`` by the chain rule over the class tree of ``y``.

    ``trace`` (optional dict) receives the root's group probabilities (``"group_proba"``), every
    class's probability inside its leaf (``"within_group_proba"``) and the root partition
    (``"class_to_group"``), for inspection and conformance tests.
    """
    y_cpu = y.detach().cpu().long()
    root = build_class_tree(y_cpu, max_classes)
    num_classes = len(root.classes)
    within: dict[int, Tensor] = {}

    def process(node: ClassNode, depth: int) -> Tensor:
        if node.is_leaf:
            local = torch.searchsorted(torch.tensor(node.classes), y_cpu[node.rows])
            logits = predict(node.rows, local)
            p = torch.softmax(logits[:, : len(node.classes)].float() / temperature, dim=-1)
            out = p.new_zeros(p.shape[0], num_classes)
            out[:, node.classes] = p
            for j, c in enumerate(node.classes):
                within[c] = p[:, j]
            return out
        labels = torch.tensor([node.group_of_class[int(c)] for c in y_cpu[node.rows]])
        logits = predict(node.rows, labels)
        gp = torch.softmax(logits[:, : len(node.children)].float() / temperature, dim=-1)
        if trace is not None and depth == 0:
            trace["group_proba"] = gp
            trace["class_to_group"] = torch.tensor([node.group_of_class[c] for c in node.classes])
        total = None
        for gid, child in enumerate(node.children):
            part = process(child, depth + 1) * gp[:, gid : gid + 1]
            total = part if total is None else total + part
        return total

    probs = process(root, 0)
    if trace is not None:
        trace["within_group_proba"] = torch.stack([within[c] for c in root.classes], dim=-1)
    return probs
