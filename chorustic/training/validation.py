"""The fixed synthetic validation set: 64 episodes generated once from a fixed seed, independently of
the training stream (paper App. C.4), and its evaluation."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from chorustic.prior import EpisodeBatch, EpisodePrior, PriorConfig
from chorustic.training.loss import query_cross_entropy

__all__ = ["build_validation_set", "evaluate", "reference_accuracies"]


def build_validation_set(prior: PriorConfig, n_episodes: int = 64, batch_size: int = 8,
                         seed: int = 1_000_003) -> list[EpisodeBatch]:
    """``n_episodes`` episodes in batches of ``batch_size`` (each batch shares (T, N_c, L))."""
    if n_episodes % batch_size:
        raise ValueError("n_episodes must be a multiple of batch_size")
    gen = EpisodePrior(prior, seed=seed)
    return [gen.sample_batch(batch_size) for _ in range(n_episodes // batch_size)]


@torch.no_grad()
def evaluate(model, batches: list[EpisodeBatch], *, device: Any = "cpu", seed: int = 0,
             amp_dtype: torch.dtype | None = None, mask_unused: bool = True) -> dict[str, float]:
    """Mean query loss and accuracy (mean over episodes of the per-episode accuracy), also split by
    task type. RSSC draws use a forked torch RNG seeded with ``seed``: evaluating never perturbs the
    training random streams and always gives the same number for the same weights."""
    was_training = model.training
    model.eval()
    losses, accs, kinds = [], [], []
    device = torch.device(device)
    devices = [device] if device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            for batch in batches:
                t = batch.to_torch(device)
                ctx = (torch.autocast(device.type, dtype=amp_dtype) if amp_dtype is not None
                       else contextlib.nullcontext())
                with ctx:
                    logits = model(t["X"], t["y_context"], channel_mask=t["channel_mask"], return_all_classes=True)
                loss, correct = query_cross_entropy(logits, t["y_query"], t["n_classes"], mask_unused)
                losses.extend(loss.cpu().tolist())
                accs.extend((correct.float() / t["y_query"].shape[1]).cpu().tolist())
                kinds.extend(o.task_type for o in batch.omegas)
    finally:
        model.train(was_training)
    accs_a, kinds_a = np.array(accs), np.array(kinds)
    out = {"val_loss": float(np.mean(losses)), "val_acc": float(np.mean(accs_a))}
    for k in ("uni", "multi"):
        if (kinds_a == k).any():
            out[f"val_acc_{k}"] = float(accs_a[kinds_a == k].mean())
    return out


def reference_accuracies(batches: list[EpisodeBatch]) -> dict[str, float]:
    """Accuracies of two parameter-free predictors on the same episodes, to read the model's numbers
    against: the context-majority class, and 1-nearest-neighbour (Euclidean on per-row z-normalized
    series, valid channels only)."""
    maj, nn = [], []
    for b in batches:
        n = b.n_context
        for i in range(b.batch_size):
            c = int(b.channel_mask[i].sum())
            X = b.X[i][:, :c].reshape(b.X.shape[1], -1).astype(np.float64)
            X = (X - X.mean(axis=1, keepdims=True)) / (X.std(axis=1, keepdims=True) + 1e-8)
            yc, yq = b.y[i, :n], b.y[i, n:]
            maj.append(float(np.mean(yq == np.bincount(yc).argmax())))
            d = ((X[n:, None, :] - X[None, :n, :]) ** 2).sum(-1)
            nn.append(float(np.mean(yc[d.argmin(axis=1)] == yq)))
    return {"context_majority": float(np.mean(maj)), "one_nn": float(np.mean(nn))}
