"""Stage 2 of the released recipe: the task level pretrained on TabICL's synthetic tables.

The released ChorusTIC's task level (column distribution modeling, row interaction, ICL) has TabICL v1's
layout key for key and started from TabICL v1.1 (``shared`` facts §1.4). Where that checkpoint cannot be
downloaded (``chorustic pretrain --init-task-level-from-tabicl`` reads it when it can), this stage makes the
same kind of start: the model's own task level learns in-context classification on tables of TabICL's own
prior (:class:`tabicl.prior.PriorDataset`: structural causal models of MLPs and trees), the objective
TabICL was pretrained with: the cross-entropy of each table's test rows given its training rows.

A table is what the task level sees of an episode: ``T`` rows (context first, then queries) of ``d``
feature columns (at most the model's ``d_h``, the width of the representation RSSC gives it), and labels
``0..K-1`` (``K`` at most the model's ``max_classes``). Tables of one step share their number of rows and
vary in context size and features, so each runs through the task level on its own and the step's loss is
their mean. Every step's tables are a function of (seed, step) (the prior drawn in one process, its torch
and numpy generators seeded with the step), so a stopped run resumes exactly
(:class:`~chorustic.training.stages.StageTrainer`). The export (``task.safetensors``, the whole model with
its task level trained) is read by ``chorustic pretrain --init-from RUN/task.safetensors --init-parts task``.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import torch

from chorustic.training.stages import StageConfig, StageTrainer

__all__ = ["TablePrior", "TaskPretrainConfig", "TaskPretrainer"]


@dataclasses.dataclass(frozen=True)
class TaskPretrainConfig(StageConfig):
    batch_size: int = 16  # tables per step
    lr: float = 1e-4  # TabICL's pretraining learning rate
    min_rows: int = 32  # rows per table, drawn per step
    max_rows: int = 256
    max_features: int | None = None  # None = the model's d_h
    prior_type: str = "mix_scm"  # tabicl's prior: mlp_scm | tree_scm | mix_scm

    def problems(self) -> list[str]:
        out = super().problems()
        if not 8 <= self.min_rows <= self.max_rows:
            out.append(f"rows must satisfy 8 <= min_rows <= max_rows, got {self.min_rows}, {self.max_rows}")
        if self.prior_type not in ("mlp_scm", "tree_scm", "mix_scm"):
            out.append(f"prior_type {self.prior_type!r} must be mlp_scm, tree_scm or mix_scm")
        if self.max_features is not None and self.max_features < 2:
            out.append("max_features must be >= 2 or None")
        return out


class TablePrior(torch.utils.data.Dataset):
    """Step ``s`` -> its tables ``(X (B, T, F), y (B, T), d (B,), n_context (B,))`` from tabicl's prior,
    ``T`` drawn from (seed, s) in ``[min_rows, max_rows]``, ``F = max_features`` (columns past ``d`` are 0)."""

    def __init__(self, cfg: TaskPretrainConfig, max_features: int, max_classes: int) -> None:
        self.cfg, self.max_features, self.max_classes = cfg, max_features, max_classes

    def __len__(self) -> int:
        return self.cfg.steps

    def __getitem__(self, step: int):
        from tabicl.prior import PriorDataset

        cfg = self.cfg
        rows = int(np.random.default_rng([cfg.seed, step, 2]).integers(cfg.min_rows, cfg.max_rows + 1))
        seed = (cfg.seed * 1_000_003 + step) % 2**32
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        prior = PriorDataset(batch_size=cfg.batch_size, batch_size_per_gp=1, min_features=2,
                             max_features=self.max_features, max_classes=self.max_classes, min_seq_len=rows,
                             max_seq_len=rows + 1, prior_type=cfg.prior_type, n_jobs=1)
        X, y, d, _, n_context = prior.get_batch()
        return X.float(), y.long(), d.long(), n_context.long()


class TaskPretrainer(StageTrainer):
    """Stage 2's run (see the module docstring and :class:`~chorustic.training.stages.StageTrainer`)."""

    kind = "task_pretraining"
    command = "pretrain-task"
    parts = ("column_distribution_modeling", "row_interaction", "icl")
    config_class = TaskPretrainConfig
    export_name = "task.safetensors"

    def dataset(self) -> TablePrior:
        mc = self.model_config
        return TablePrior(self.cfg, self.cfg.max_features or mc.d_h, mc.max_classes)

    def loss(self, batch) -> tuple[torch.Tensor, dict[str, float]]:
        from chorustic.training.loss import query_cross_entropy

        X, y, d, n_context = (t.to(self.device) for t in batch)
        for m in self.model.modules():  # tabicl's RoPE keeps the table of the longest rows seen; a slice of it can
            if hasattr(m, "cached_freqs") and hasattr(m, "tmp_store"):  # differ in the last bit from a table made
                m.tmp_store("cached_freqs", None)  # at this length: each step makes its own (exact resume)
        losses, correct, queries = [], 0, 0
        for i in range(X.shape[0]):
            n, f = int(n_context[i]), int(d[i])
            k = int(y[i].max()) + 1
            H = X[i : i + 1, :, :f]
            logits = self.model.task_logits(H, y[i : i + 1, :n], cdm_columns=None, interaction_rows=None)
            ce, ok = query_cross_entropy(logits, y[i : i + 1, n:], torch.tensor([k], device=self.device))
            losses.append(ce)
            correct += int(ok.sum())
            queries += y.shape[1] - n
        return torch.cat(losses).mean(), {"query_accuracy": correct / max(queries, 1), "rows": int(X.shape[1])}

    def provenance(self) -> dict[str, Any]:
        return {"tables": self.step * self.cfg.batch_size,
                "objective": f"query cross-entropy on tables of tabicl's {self.cfg.prior_type} prior "
                             f"({self.cfg.min_rows}-{self.cfg.max_rows} rows)"}
