"""Deployment-time ensembling (paper Sec. 3.5, App. B "Deployment-Time Ensembling").

Members are pairs (cyclic label shift m, RSSC draw a). Member (m, a) sees the context labels
``(y + off_m) mod K`` and the assignment ``I^(a)``; its logits are un-shifted (column ``(c + off_m)
mod K`` belongs to class c), all ``M_pi * M_R`` are averaged, and ``softmax(mean / tau)`` gives the
probabilities.

Offsets: the official code (``classifier_v2``) shuffles ``range(K)`` with ``random.Random(seed)`` and
cycles the result to ``M_pi`` entries (K = 2 gives two distinct offsets, each used four times; K >= 8
gives eight distinct shifts): rule ``"official"``, the default, as the reported numbers were made
with it. Rule ``"paper"`` uses ``off_m = m mod K``, m = 0..M_pi-1, as the paper's formula reads.
"""

from __future__ import annotations

import random

import numpy as np
import torch
from torch import Tensor

__all__ = ["label_shift_offsets", "shift_labels", "softmax_proba", "unshift_logits"]

LABEL_SHIFT_RULES = ("official", "paper")


def label_shift_offsets(
    num_classes: int, n_shifts: int, *, rule: str = "official", seed: int = 0
) -> list[int]:
    """The cyclic label-shift offsets of ``n_shifts`` ensemble members."""
    if n_shifts < 1:
        raise ValueError(f"n_shifts must be >= 1, got {n_shifts}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    if rule == "paper":
        return [m % num_classes for m in range(n_shifts)]
    if rule != "official":
        raise ValueError(f"unknown label-shift rule {rule!r}; expected one of {LABEL_SHIFT_RULES}")
    if n_shifts == 1:
        return [0]
    base = list(range(num_classes))
    random.Random(seed).shuffle(base)
    return [base[m % num_classes] for m in range(n_shifts)]


def shift_labels(y: Tensor, offset: int, num_classes: int) -> Tensor:
    return (y + offset) % num_classes


def unshift_logits(logits: Tensor, offset: int) -> Tensor:
    """Logits in the shifted label space -> original class order (``out[..., c] = in[..., (c+off) % K]``)."""
    k = logits.shape[-1]
    return torch.roll(logits, shifts=-(offset % k), dims=-1) if offset % k else logits


def softmax_proba(logits, temperature: float) -> np.ndarray:
    """``softmax(logits / tau)`` in float64, rows renormalised to sum to 1."""
    z = np.asarray(logits, dtype=np.float64) / float(temperature)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)
