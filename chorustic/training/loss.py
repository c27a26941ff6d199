"""The pretraining objective: query cross-entropy under the episode's label bijection (paper Eq. in
Sec. 3.3): ``-1/N_q sum_j log p(sigma(y_j^q) | X_j^q, C~)``, averaged over episodes."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

__all__ = ["query_cross_entropy", "mask_unused_classes"]


def mask_unused_classes(logits: Tensor, n_classes: Tensor) -> Tensor:
    """Set the logits of labels ``>= K_b`` to -inf for each episode b (``logits (B, q, K_max)``).

    At inference the official model keeps only the first K decoder outputs; masking the same outputs
    during pretraining makes the training softmax the one used at deployment.
    """
    k_max = logits.shape[-1]
    unused = torch.arange(k_max, device=logits.device)[None, :] >= n_classes.to(logits.device)[:, None]
    return logits.masked_fill(unused[:, None, :], float("-inf"))


def query_cross_entropy(logits: Tensor, y_query: Tensor, n_classes: Tensor | None = None,
                        mask_unused: bool = True) -> tuple[Tensor, Tensor]:
    """Per-episode mean query cross-entropy ``(B,)`` and per-episode number of correct queries ``(B,)``.

    ``logits`` (B, q, K_max) float, ``y_query`` (B, q) int64 in 0..K_b-1, ``n_classes`` (B,) = K_b.
    """
    if logits.ndim != 3 or y_query.shape != logits.shape[:2]:
        raise ValueError(f"logits {tuple(logits.shape)} and y_query {tuple(y_query.shape)} do not match")
    logits = logits.float()
    if mask_unused and n_classes is not None:
        logits = mask_unused_classes(logits, n_classes)
    b, q, k = logits.shape
    ce = F.cross_entropy(logits.reshape(b * q, k), y_query.reshape(b * q), reduction="none").view(b, q)
    correct = (logits.argmax(dim=-1) == y_query).sum(dim=1)
    return ce.mean(dim=1), correct
